"""The ``inputs`` and ``shapes`` of a suite's model: data sources per input, merged with the
inputs the model declares, and concrete shape sets checked against them (rank, fixed dims)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..models.inputs import DTYPES, INT_DTYPES, InputSpec, numpy_dtype
from .suite_nodes import AnyName, Context, Node, did_you_mean, dims_in_text, error, join_names
from ..files import ArrayFileError, WantedArray, load_arrays

INPUT_KEYS = ("shape", "dtype", "range", "values", "normal", "file")
DATA_KEYS = ("range", "values", "normal", "file")
NORMAL_KEYS = ("mean", "std")
Shapes = Tuple[Tuple[str, Tuple[int, ...]], ...]  # (input name, concrete shape), model order


@dataclass(frozen=True)
class InputEntry:
    """One input as a suite writes it; every field optional until merged with the model's."""

    node: Node
    fields: Mapping[str, Node]


def parse_input_entries(node: Node) -> Dict[str, InputEntry]:
    entries = {}
    for name, child in node.mapping(AnyName(), "inputs").items():
        fields = child.mapping(INPUT_KEYS, f"input {name!r}")
        data = [k for k in DATA_KEYS if k in fields]
        if len(data) > 1:
            raise child.fail(f"input {name!r} has more than one data source",
                             f"at most one of {join_names(DATA_KEYS)}", found=join_names(data),
                             fix=f"keep one of {join_names(data)}")
        entries[name] = InputEntry(child, fields)
    return entries


def merge_entries(low: Optional[InputEntry], high: Optional[InputEntry]) -> Optional[InputEntry]:
    """A model's entry over the suite default's: field by field, the data source as a whole."""
    if low is None or high is None:
        return high or low
    fields = dict(low.fields)
    if any(k in high.fields for k in DATA_KEYS):
        fields = {k: v for k, v in fields.items() if k not in DATA_KEYS}
    fields.update(high.fields)
    return InputEntry(high.node, fields)


def parse_dims(node: Node, what: str, dynamic: bool) -> Tuple[int, ...]:
    example = "[-1, 3, 224, 224]" if dynamic else "[4, 3, 224, 224]"
    dims = []
    for item in node.items(what, example):
        v = item.value
        if dynamic and (v is None or v == -1):
            dims.append(-1)
        elif isinstance(v, int) and not isinstance(v, bool) and v > 0:
            dims.append(v)
        else:
            expected = "a positive whole number, or -1/null for a dynamic dim" if dynamic \
                else "a positive whole number (shape sets are concrete)"
            raise item.fail(f"bad dim in {what}", expected)
    if not dims:
        raise node.fail(f"{what} is empty", f"a list of dims, e.g. {example}")
    return tuple(dims)


def parse_dtype(node: Node) -> str:
    text = node.value
    if not isinstance(text, str) or text not in DTYPES:
        alias = {"float": "float32", "fp32": "float32", "fp16": "float16", "half": "float16",
                 "bf16": "bfloat16", "int": "int64", "double": "float64", "long": "int64"}
        fix = f"did you mean {alias[text]!r}?" if isinstance(text, str) and text in alias else \
            did_you_mean(str(text), DTYPES) or "use one of the listed dtypes"
        raise node.fail("unknown dtype", f"one of {join_names(DTYPES)}", fix)
    return text


def build_input(name: str, entry: Optional[InputEntry], declared: Optional[InputSpec],
                ctx: Context, model: str) -> InputSpec:
    """The model's input ``declared`` (None for builders) with what the suite says about it."""
    fields = entry.fields if entry else {}
    if declared is None:
        if "shape" not in fields:
            node = entry.node if entry else None
            raise node.fail(f"input {name!r} of builder model {model!r} has no shape",
                            "shape: [-1, 3, 224, 224]  (the builder is exported with this input spec)")
        spec = InputSpec(name, parse_dims(fields["shape"], "shape", dynamic=True),
                         parse_dtype(fields["dtype"]) if "dtype" in fields else "float32")
    else:
        spec = declared
        if "shape" in fields:
            shape = parse_dims(fields["shape"], "shape", dynamic=True)
            if shape != tuple(-1 if d is None else d for d in declared.shape):
                raise fields["shape"].fail(
                    f"input {name!r} of {model!r} is declared by the model", f"its shape {list(declared.shape)}",
                    "remove 'shape' (concrete shapes go under 'shapes:'), or use a builder model")
        if "dtype" in fields and parse_dtype(fields["dtype"]) != declared.dtype:
            raise fields["dtype"].fail(f"wrong dtype for input {name!r} of {model!r}",
                                       f"{declared.dtype!r}, the dtype the model declares",
                                       f"write dtype: {declared.dtype} or remove 'dtype'")
        if any(k in fields for k in DATA_KEYS):  # the suite's data source replaces the model's hints
            spec = InputSpec(name, declared.shape, declared.dtype)
    return replace(spec, **data_fields(fields, spec, ctx))


def data_fields(fields: Mapping[str, Node], spec: InputSpec, ctx: Context) -> Dict[str, Any]:
    integer = spec.dtype in INT_DTYPES
    if "range" in fields:
        node = fields["range"]
        bounds = node.items("range", "[-1.0, 1.0]")
        if len(bounds) != 2:
            raise node.fail("range needs two bounds", "[low, high]")
        low, high = (b.number("a range bound") for b in bounds)
        if integer and not all(float(b.value).is_integer() for b in bounds):
            raise node.fail(f"range of {spec.dtype} input {spec.name!r} has fractional bounds",
                            "whole numbers, e.g. [0, 10]")
        if low > high:
            raise node.fail("range is reversed", "[low, high] with low <= high")
        return {"low": low, "high": high}
    if "values" in fields:
        items = fields["values"].items("values", "[0, 1, 2]")
        if not items:
            raise fields["values"].fail("values is empty", "a non-empty list of numbers")
        values = tuple(i.number("a value") for i in items)
        if integer and not all(float(v).is_integer() for v in values):
            raise fields["values"].fail(f"values of {spec.dtype} input {spec.name!r} are fractional",
                                        "whole numbers")
        return {"values": values}
    if "normal" in fields:
        parts = fields["normal"].mapping(NORMAL_KEYS, "normal")
        return {"mean": parts["mean"].number("mean") if "mean" in parts else 0.0,
                "std": parts["std"].number("std", 0.0) if "std" in parts else 1.0}
    return {"file": str(check_input_file(fields["file"], spec, ctx))} if "file" in fields else {}


def check_input_file(node: Node, spec: InputSpec, ctx: Context) -> Path:
    path = ctx.base_dir / node.text("file", "data/x.npy")
    if path.suffix not in (".npy", ".npz"):
        raise node.fail("input file must be .npy or .npz", "a .npy file, or a .npz holding an array "
                        f"named {spec.name!r}", found=repr(node.value))
    if not path.is_file():
        raise node.fail("input file not found", f"a file relative to the suite's directory {ctx.base_dir}",
                        found=f"{node.value!r} (no such file: {path})")
    return path.resolve()


def file_array_shape(spec: InputSpec, node: Node) -> Tuple[int, ...]:
    """The shape of the array an input file holds for ``spec``, checked (an .npy is mapped, not read)."""
    try:
        arrays = load_arrays(spec.file, [WantedArray(spec.name, str(numpy_dtype(spec.dtype)), spec.shape)],
                             mmap=True)
    except ArrayFileError as e:
        raise node.fail(f"input file {e.path.name} {e.problem}", e.expected, e.fix, found=e.found) from None
    return tuple(int(d) for d in arrays[spec.name].shape)


def parse_shape_sets(node: Optional[Node], specs: Sequence[InputSpec], file_nodes: Mapping[str, Node],
                     model: str, model_node: Node) -> List[Shapes]:
    """Concrete shapes per shape set, in input order; without ``shapes``, the declared ones at batch 1."""
    names = [s.name for s in specs]
    file_shapes = {s.name: file_array_shape(s, file_nodes[s.name]) for s in specs if s.file}
    if node is None:
        return [complete({}, specs, file_shapes, model_node, model)]
    sets = []
    if dims_in_text(node.value) and names:  # shapes: "1x3x32x32", as on the command line
        raise node.fail("shapes must be a list of shape sets", "a list, e.g. "
                        "[{x: [1, 3, 224, 224]}, {x: [4, 3, 224, 224]}]",
                        f"write shapes: [{{{names[0]}: {dims_in_text(node.value)}}}]")
    for item in node.items("shapes", "[{x: [1, 3, 224, 224]}, {x: [4, 3, 224, 224]}]"):
        if dims_in_text(item.value) and names:  # shapes: ["1x3x32x32"]
            raise item.fail("a shape set must be a mapping from input name to shape",
                            "input name -> a list of dims",
                            f"write {{{names[0]}: {dims_in_text(item.value)}}}")
        if isinstance(item.value, (list, tuple)):
            if len(specs) != 1:
                raise item.fail(f"model {model!r} has {len(specs)} inputs ({join_names(names)})",
                                "a mapping from input name to shape, e.g. "
                                + "{" + ", ".join(f"{n}: [...]" for n in names) + "}")
            given = {names[0]: Node(item.value, item.where, item.path)}
        else:
            given = item.mapping(AnyName(), "a shape set")
            for name in given:
                if name not in names:
                    raise error(given[name].where, item.path, f"model {model!r} has no input {name!r}",
                                 f"one of its inputs: {join_names(names)}", repr(name),
                                 did_you_mean(name, names) or "use the model's input names")
            if not given:
                raise item.fail("empty shape set", "input name -> shape")
        sets.append(complete(given, specs, file_shapes, item, model))
    if not sets:
        raise node.fail("shapes is empty", "at least one shape set, or leave 'shapes' out")
    return sets


def complete(given: Mapping[str, Node], specs: Sequence[InputSpec], file_shapes: Mapping[str, Tuple[int, ...]],
             at: Node, model: str) -> Shapes:
    """Concrete shapes for every input: given (and checked), from its file, or declared at the set's batch."""
    shapes = {name: parse_dims(n, f"the shape of {name!r}", dynamic=False) for name, n in given.items()}
    known = {**file_shapes, **shapes}  # what fixes the batch of the inputs left out
    batches = sorted({s[0] for s in known.values() if s})
    out = []
    for spec in specs:
        declared = tuple(-1 if d is None else int(d) for d in spec.shape)
        node = given.get(spec.name, at)
        if spec.name in shapes:
            shape = shapes[spec.name]
            check_rank(node, spec.name, declared, shape, model)
        elif spec.name in file_shapes:
            shape = file_shapes[spec.name]
        else:
            dynamic = [i for i, d in enumerate(declared) if d < 0 and i > 0]
            if dynamic:
                raise at.fail(f"input {spec.name!r} of {model!r} has dynamic dim {dynamic[0]} "
                              f"in {list(declared)}", f"a concrete shape for {spec.name!r}",
                              found="no shape for it",
                              fix=f"add it to the shape set, e.g. {spec.name}: {_example(declared, ())}")
            if declared and declared[0] < 0 and len(batches) > 1:
                raise at.fail(f"the shapes given disagree on the batch that input {spec.name!r} takes",
                              f"one batch size, or a shape for {spec.name!r}",
                              found=f"batch sizes {batches}", fix=f"add {spec.name!r} to the shape set")
            batch = batches[0] if batches else 1
            shape = tuple(batch if d < 0 else d for d in declared)
        if spec.name in file_shapes and shape != file_shapes[spec.name]:
            raise node.fail(f"input {spec.name!r} comes from a file of shape {list(file_shapes[spec.name])}",
                            f"the file's shape {list(file_shapes[spec.name])}", found=str(list(shape)),
                            fix="leave the input out of the shape set, or use another file")
        out.append((spec.name, tuple(shape)))
    return tuple(out)


def check_rank(node: Node, name: str, declared: Tuple[int, ...], shape: Tuple[int, ...], model: str) -> None:
    if len(shape) != len(declared):
        raise node.fail(f"shape of input {name!r} has rank {len(shape)}, but {model!r} declares rank "
                        f"{len(declared)}", f"rank {len(declared)}, like the model's {list(declared)} "
                        "(-1: any size)", found=str(list(shape)),
                        fix=f"give {len(declared)} dims, e.g. {_example(declared, shape)}")
    for i, (g, d) in enumerate(zip(shape, declared)):
        if d >= 0 and g != d:
            raise node.fail(f"dim {i} of input {name!r} is fixed by {model!r}",
                            f"{d} at position {i} (the model declares {list(declared)})",
                            found=str(list(shape)), fix=f"use {_example(declared, shape)}, or export "
                            "the model with a dynamic dim there")


def _example(declared: Sequence[int], given: Sequence[int]) -> str:
    return str([d if d >= 0 else (given[i] if i < len(given) else 1) for i, d in enumerate(declared)])
