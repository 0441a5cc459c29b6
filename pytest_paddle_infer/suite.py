"""Suite files: YAML that declares cases per model, shape set and run mode, with tolerances
at the level they belong to (the schema is in docs/suites.md).

``load_suite(path, context)`` reads a file with PyYAML's safe loader, keeping the line of every
key, checks it against the schema and builds one ``Case`` per model x shape set x run mode, in
file order. ``marker_cases`` does the same for a ``paddle_case`` marker's keyword arguments.
Every problem is a ``SuiteError`` that names ``file:line``, the key, what was expected, what
was found and the fix: nothing in a suite is silently ignored.
"""
from __future__ import annotations

import ast
import difflib
import hashlib
import importlib.util
import math
import re
from dataclasses import dataclass, field, replace
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .case import Case
from .errors import OptionError, PaddleInferError, SuiteError
from .inputs import DTYPES, INT_DTYPES, InputSpec, shape_label
from .models import ModelSource, declared_inputs, display_name, find_model_files
from .options import BASELINES, parse_run_mode
from .run_modes import RUN_MODES, RunModeSpec, canonical_mode
from .tolerances import CaseTolerances, Rule
from .zoo import ZOO

__all__ = ["SuiteError", "Context", "SuiteCase", "load_suite", "marker_cases", "marker_rule"]

TOP_KEYS = ("defaults", "models")
SHARED_KEYS = ("inputs", "shapes", "run_modes", "tolerances", "skip", "xfail")
DEFAULTS_KEYS = ("baseline", "seed", "threads") + SHARED_KEYS
MODEL_KEYS = ("source", "kwargs") + SHARED_KEYS
RUN_MODE_KEYS = ("mode", "ir_optim", "memory_optim", "delete_passes", "threads",
                 "tolerances", "skip", "xfail")
RULE_KEYS = ("atol", "rtol", "cosine_min")
TOLERANCE_KEYS = RULE_KEYS + ("outputs", "tensors")
INPUT_KEYS = ("shape", "dtype", "range", "values", "normal", "file")
DATA_KEYS = ("range", "values", "normal", "file")
NORMAL_KEYS = ("mean", "std")
XFAIL_KEYS = ("reason", "strict")
MARKER_KEYS = ("model", "name", "kwargs", "inputs", "shapes", "run_modes", "seed", "baseline",
               "threads", "tolerances") + RULE_KEYS

BUILDER_PATTERN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
DOCS = "docs/suites.md"


# -- reading YAML with line numbers -----------------------------------------------------------


class LineDict(dict):
    """A YAML mapping that remembers the line (1-based) of the mapping and of each key."""

    line = 0

    def __init__(self):
        super().__init__()
        self.key_lines: Dict[Any, int] = {}


class LineList(list):
    """A YAML sequence that remembers the line of the sequence and of each item."""

    line = 0

    def __init__(self):
        super().__init__()
        self.item_lines: List[int] = []


class _YamlProblem(Exception):
    def __init__(self, line: int, problem: str, expected: str, found: str, fix: str):
        super().__init__(problem)
        self.line, self.problem, self.expected, self.found, self.fix = line, problem, expected, found, fix


def _line_loader():
    """A SafeLoader subclass (built on first use, so importing this module does not import yaml)
    that records lines, refuses duplicate keys, and reads ``1e-4`` as a number, as YAML 1.2 does
    (PyYAML's YAML 1.1 rules would make it the string '1e-4')."""
    import yaml

    class LineLoader(yaml.SafeLoader):
        pass

    merge_tag = "tag:yaml.org,2002:merge"

    def construct_mapping(loader, node):
        own = sum(1 for key, _ in node.value if key.tag != merge_tag)
        loader.flatten_mapping(node)  # `<<: *anchor` pairs come first; the mapping's own win
        first_own = len(node.value) - own
        mapping = LineDict()
        mapping.line = node.start_mark.line + 1
        seen = set()
        for i, (key_node, value_node) in enumerate(node.value):
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                hash(key)
            except TypeError:
                raise _YamlProblem(line, "a key that is not a name", "a plain name as key",
                                   describe(key), "write the key as a plain word") from None
            if i >= first_own:
                if key in seen:
                    raise _YamlProblem(
                        line, f"key {key!r} appears twice in one mapping",
                        "each key once", f"{key!r} again, first on line {mapping.key_lines[key]}",
                        "remove or merge one of them (YAML would silently keep only the last)")
                seen.add(key)
            mapping[key] = loader.construct_object(value_node, deep=True)
            mapping.key_lines[key] = line
        return mapping

    def construct_sequence(loader, node):
        items = LineList()
        items.line = node.start_mark.line + 1
        for child in node.value:
            items.append(loader.construct_object(child, deep=True))
            items.item_lines.append(child.start_mark.line + 1)
        return items

    LineLoader.add_constructor("tag:yaml.org,2002:map", construct_mapping)
    LineLoader.add_constructor("tag:yaml.org,2002:seq", construct_sequence)
    LineLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
        list("-+0123456789."))
    return LineLoader


def read_yaml(path: Path, display: str):
    """The document in ``path`` as LineDict/LineList/scalars, or a SuiteError naming the line."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SuiteError(f"{display}: cannot read the suite file: {e}") from None
    loader = _line_loader()(text)
    try:
        return loader.get_single_data()
    except _YamlProblem as p:
        raise _error(Where(display, p.line), "", p.problem, p.expected, p.found, p.fix) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        raise _error(Where(display, line), "", "not valid YAML", "a YAML document",
                     f"{e.problem or e}" + (f" ({e.context})" if e.context else ""),
                     "check the indentation, colons and quotes on and just above that line") from None
    except yaml.YAMLError as e:
        raise SuiteError(f"{display}: not valid YAML: {e}") from None
    finally:
        loader.dispose()


# -- where things are, and messages -----------------------------------------------------------


@dataclass(frozen=True)
class Where:
    file: str
    line: Optional[int] = None

    def at(self, line: Optional[int]) -> "Where":
        return Where(self.file, line) if line else self

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


def describe(value: Any) -> str:
    """What a value is, in the words of a YAML file."""
    if value is None:
        return "an empty value (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, dict):
        keys = ", ".join(str(k) for k in value)
        return f"a mapping with keys {keys}" if keys else "an empty mapping"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}: {_short(value)}"
    return f"a {type(value).__name__} {value!r}"


def _short(value: Any) -> str:
    text = repr(list(value) if isinstance(value, (list, tuple)) else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _error(where: Where, path: str, problem: str, expected: str, found: str, fix: str = "") -> SuiteError:
    lines = [f"{where}: {path + ': ' if path else ''}{problem}",
             f"  expected: {expected}",
             f"  found:    {found}"]
    if fix:
        lines.append(f"  fix:      {fix}")
    return SuiteError("\n".join(lines))


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def _join(names: Sequence[str]) -> str:
    return ", ".join(str(n) for n in names)


class Node:
    """A value read from a suite (or a marker), with where it was written and its key path."""

    def __init__(self, value: Any, where: Where, path: str):
        self.value = value
        self.where = where.at(getattr(value, "line", None)) if isinstance(value, (LineDict, LineList)) \
            and where.line is None else where
        self.path = path

    def fail(self, problem: str, expected: str, fix: str = "", found: Optional[str] = None) -> SuiteError:
        return _error(self.where, self.path, problem, expected,
                      describe(self.value) if found is None else found, fix)

    # structure

    def child(self, key: str) -> "Node":
        line = getattr(self.value, "key_lines", {}).get(key)
        return Node(self.value[key], self.where.at(line), f"{self.path}.{key}" if self.path else str(key))

    def mapping(self, allowed: Sequence[str], what: str, hints: Mapping[str, str] = {}) -> Dict[str, "Node"]:
        """The children of a mapping whose keys must all be in ``allowed``."""
        free = isinstance(allowed, _AnyKey)
        expected = "a mapping from names you choose" if free else f"a mapping with keys among {_join(allowed)}"
        if self.value is None:
            return {}
        if not isinstance(self.value, dict):
            raise self.fail(f"{what} must be a mapping", expected)
        out = {}
        for key in self.value:
            line = getattr(self.value, "key_lines", {}).get(key)
            if free and key not in allowed:
                raise _error(self.where.at(line), self.path, f"a key in {what} that is not a name",
                             "a non-empty name", describe(key), "write the name as text")
            if key not in allowed:
                fix = hints.get(key, "") if isinstance(key, str) else ""
                fix = fix or did_you_mean(key, allowed) or \
                    f"remove it, or see {DOCS} for the keys {what} takes"
                raise _error(self.where.at(line), self.path, f"unknown key {key!r} in {what}",
                             f"one of {_join(allowed)}", repr(key), fix)
            out[key] = self.child(key)
        return out

    def items(self, what: str, example: str) -> List["Node"]:
        if not isinstance(self.value, (list, tuple)):
            fix = f"write it as a list: [{self.value}]" if isinstance(self.value, (str, int, float)) else ""
            raise self.fail(f"{what} must be a list", f"a list, e.g. {example}", fix)
        lines = getattr(self.value, "item_lines", [None] * len(self.value))
        return [Node(v, self.where.at(line), f"{self.path}[{i}]")
                for i, (v, line) in enumerate(zip(self.value, lines))]

    # scalars

    def text(self, what: str, example: str) -> str:
        if not isinstance(self.value, str) or not self.value.strip():
            raise self.fail(f"{what} must be a non-empty string", f"a string, e.g. {example}")
        return self.value.strip()

    def number(self, what: str, low: float = -math.inf, high: float = math.inf) -> float:
        v = self.value
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            fix = "write it as a bare number, e.g. 1e-4 (no quotes)" if isinstance(v, str) else ""
            raise self.fail(f"{what} must be a finite number", _range_text(low, high), fix)
        if not low <= v <= high:
            raise self.fail(f"{what} is out of range", _range_text(low, high))
        return float(v)

    def integer(self, what: str, low: int) -> int:
        v = self.value
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise self.fail(f"{what} must be a whole number >= {low}", f"a whole number >= {low}")
        return int(v)

    def flag(self, what: str) -> bool:
        if not isinstance(self.value, bool):
            raise self.fail(f"{what} must be true or false", "true or false")
        return self.value


def _range_text(low: float, high: float) -> str:
    if math.isinf(low) and math.isinf(high):
        return "a number"
    if math.isinf(high):
        return f"a number >= {low:g}"
    return f"a number between {low:g} and {high:g}"


# -- the parts of a suite ---------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    """What a suite is read against: its directory, the session's settings and cache."""

    file: str  # the name used in messages
    base_dir: Path  # relative paths in the suite are relative to this
    rootdir: Path
    cache_dir: Path
    seed: int = 0  # used where the suite sets none
    baseline: str = "auto"
    threads: Optional[int] = None
    forced: Tuple[Tuple[str, Any], ...] = ()  # seed/baseline/threads given on the command line: they win


@dataclass(frozen=True)
class SuiteCase:
    case: Case
    where: Where  # the model's entry
    skip: Optional[str] = None
    xfail: Optional[str] = None
    xfail_strict: bool = False


@dataclass(frozen=True)
class Layer:
    """What one level (suite defaults, a model, a run mode) says about tolerances."""

    rule: Rule = Rule()
    outputs: Tuple[Tuple[str, Rule], ...] = ()
    tensors: Tuple[Tuple[str, Rule], ...] = ()


@dataclass(frozen=True)
class Reasons:
    skip: Optional[str] = None
    xfail: Optional[str] = None
    strict: bool = False

    def under(self, higher: "Reasons") -> "Reasons":
        """``higher`` (the more specific level) where it says something, else this."""
        if higher.xfail is not None:
            return Reasons(higher.skip or self.skip, higher.xfail, higher.strict)
        return Reasons(higher.skip or self.skip, self.xfail, self.strict)


@dataclass(frozen=True)
class ModeEntry:
    spec: RunModeSpec
    layer: Layer
    reasons: Reasons
    where: Where


@dataclass(frozen=True)
class InputEntry:
    """One input as a suite writes it; every field optional until merged with the model's."""

    node: Node
    fields: Mapping[str, Node]


@dataclass
class Defaults:
    seed: int
    baseline: str
    threads: Optional[int]
    fields: Dict[str, Node] = field(default_factory=dict)  # the shared keys, read per model
    inputs: Dict[str, InputEntry] = field(default_factory=dict)
    used_inputs: set = field(default_factory=set)


def parse_rule(fields: Mapping[str, Node]) -> Rule:
    values = {}
    for key in RULE_KEYS:
        if key in fields:
            low, high = (-1.0, 1.0) if key == "cosine_min" else (0.0, math.inf)
            values[key] = fields[key].number(key, low, high)
    return Rule(**values)


def parse_tolerances(node: Optional[Node]) -> Layer:
    if node is None:
        return Layer()
    fields = node.mapping(TOLERANCE_KEYS, "tolerances")
    named = {}
    for key in ("outputs", "tensors"):
        entries = []
        if key in fields:
            what = "an output name" if key == "outputs" else "a tensor-name glob"
            for name, child in fields[key].mapping(_AnyKey(), f"tolerances.{key}").items():
                rule = parse_rule(child.mapping(RULE_KEYS, f"the tolerance of {name!r}"))
                if rule == Rule():
                    raise child.fail(f"{what} with no tolerance", "at least one of atol, rtol, cosine_min")
                entries.append((name, rule))
        named[key] = tuple(entries)
    return Layer(parse_rule(fields), named["outputs"], named["tensors"])


class _AnyKey(tuple):
    """Allowed keys for mappings whose keys are names the user chooses (outputs, inputs)."""

    def __contains__(self, key) -> bool:
        return isinstance(key, str) and bool(key.strip())


def parse_reasons(fields: Mapping[str, Node]) -> Reasons:
    skip = xfail = None
    strict = False
    if "skip" in fields:
        skip = fields["skip"].text("skip", 'skip: "needs a GPU"  (the reason is required)')
    if "xfail" in fields:
        node = fields["xfail"]
        if isinstance(node.value, dict):
            parts = node.mapping(XFAIL_KEYS, "xfail")
            if "reason" not in parts:
                raise node.fail("xfail needs a reason", 'xfail: {reason: "...", strict: true}')
            xfail = parts["reason"].text("xfail.reason", '"known bf16 drift, issue 12"')
            strict = parts["strict"].flag("xfail.strict") if "strict" in parts else False
        else:
            xfail = node.text("xfail", 'xfail: "known bf16 drift"  (the reason is required)')
    return Reasons(skip, xfail, strict)


MODE_EXAMPLE = "[cpu_fp32, onednn_bf16] or [{mode: onednn_fp32, ir_optim: false}]"


def parse_mode_name(node: Node, text: str) -> str:
    try:
        return canonical_mode(text)
    except OptionError:
        raise node.fail("unknown run mode", f"one of {_join(RUN_MODES)}",
                        did_you_mean(text.lower(), list(RUN_MODES)) or
                        "pick a run mode from the list", found=repr(text)) from None


def parse_run_modes(node: Node) -> List[ModeEntry]:
    entries = []
    items = node.items("run_modes", MODE_EXAMPLE)
    if not items:
        raise node.fail("run_modes is empty", f"at least one run mode, e.g. {MODE_EXAMPLE}")
    for item in items:
        if isinstance(item.value, str):
            name, _, _ = item.value.partition("+")
            parse_mode_name(item, name)
            try:
                spec = parse_run_mode(item.value)
            except OptionError as e:
                raise item.fail("bad run-mode toggle", "toggles +ir_optim, +no_ir_optim, +memory_optim, "
                                "+delete_pass=NAME, +threads=N",
                                "or write the run mode as a mapping with ir_optim, memory_optim, "
                                "delete_passes, threads", found=f"{item.value!r} ({e})") from None
            entries.append(ModeEntry(spec, Layer(), Reasons(), item.where))
            continue
        if not isinstance(item.value, dict):
            raise item.fail("a run mode must be a name or a mapping", f"e.g. {MODE_EXAMPLE}")
        if "mode" not in item.value:
            hint = ""
            if len(item.value) == 1 and str(next(iter(item.value))).lower() in RUN_MODES:
                hint = f"write it as '- mode: {next(iter(item.value))}' with its settings beside 'mode'"
            raise item.fail("run mode mapping without 'mode'", "a mapping with 'mode: <run mode>'",
                            hint or "add 'mode: <run mode>'")
        fields = item.mapping(RUN_MODE_KEYS, "a run mode")
        mode = parse_mode_name(fields["mode"], fields["mode"].text("mode", "onednn_fp32"))
        toggles: Dict[str, Any] = {}
        for key in ("ir_optim", "memory_optim"):
            if key in fields:
                toggles[key] = fields[key].flag(key)
        if "delete_passes" in fields:
            passes = fields["delete_passes"].items("delete_passes", "[fc_fuse_pass]")
            toggles["delete_passes"] = tuple(p.text("a pass name", "fc_fuse_pass") for p in passes)
        if "threads" in fields:
            toggles["threads"] = fields["threads"].integer("threads", 1)
        entries.append(ModeEntry(RunModeSpec(mode, **toggles), parse_tolerances(fields.get("tolerances")),
                                 parse_reasons(fields), item.where))
    return entries


# -- inputs -----------------------------------------------------------------------------------


def parse_input_entries(node: Node) -> Dict[str, InputEntry]:
    entries = {}
    for name, child in node.mapping(_AnyKey(), "inputs").items():
        fields = child.mapping(INPUT_KEYS, f"input {name!r}")
        data = [k for k in DATA_KEYS if k in fields]
        if len(data) > 1:
            raise child.fail(f"input {name!r} has more than one data source",
                             f"at most one of {_join(DATA_KEYS)}", found=_join(data),
                             fix=f"keep one of {_join(data)}")
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
        raise node.fail("unknown dtype", f"one of {_join(DTYPES)}", fix)
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
        if "dtype" in fields:
            dtype = parse_dtype(fields["dtype"])
            if dtype != declared.dtype:
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
        mean = parts["mean"].number("mean") if "mean" in parts else 0.0
        std = parts["std"].number("std", 0.0) if "std" in parts else 1.0
        return {"mean": mean, "std": std}
    if "file" in fields:
        return {"file": str(check_input_file(fields["file"], spec, ctx))}
    return {}


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
    """The shape of the array an input file holds for ``spec`` (checked against its dtype)."""
    import numpy as np

    from .inputs import numpy_dtype

    try:
        loaded = np.load(spec.file, mmap_mode="r", allow_pickle=False)
        if hasattr(loaded, "files"):
            with loaded:
                if spec.name not in loaded.files:
                    raise node.fail(f"{Path(spec.file).name} has no array named {spec.name!r}",
                                    f"an array named {spec.name!r}", found=f"arrays {_join(loaded.files)}")
                array = loaded[spec.name]
        else:
            array = loaded
    except (OSError, ValueError) as e:
        raise node.fail("input file cannot be read", "a numpy .npy/.npz file", found=str(e)) from None
    if array.dtype != numpy_dtype(spec.dtype):
        raise node.fail(f"input file holds the wrong dtype for {spec.name!r}", spec.dtype,
                        found=str(array.dtype), fix=f"save the array as {spec.dtype}")
    return tuple(int(d) for d in array.shape)


# -- shapes -----------------------------------------------------------------------------------


def parse_shape_sets(node: Optional[Node], specs: Sequence[InputSpec], input_nodes: Mapping[str, Node],
                     model: str, model_where: Where) -> List[Tuple[Tuple[Tuple[str, Tuple[int, ...]], ...], Where]]:
    """Concrete shapes for every input, one tuple per shape set, in the model's input order."""
    names = [s.name for s in specs]
    file_shapes = {s.name: file_array_shape(s, input_nodes[s.name]) for s in specs if s.file}
    if node is None:
        return [(complete({}, specs, file_shapes, Node(None, model_where, f"models.{model}"), model),
                 model_where)]
    sets = []
    for item in node.items("shapes", "[{x: [1, 3, 224, 224]}, {x: [4, 3, 224, 224]}]"):
        if isinstance(item.value, (list, tuple)):
            if len(specs) != 1:
                raise item.fail(f"model {model!r} has {len(specs)} inputs ({_join(names)})",
                                "a mapping from input name to shape, e.g. "
                                + "{" + ", ".join(f"{n}: [...]" for n in names) + "}")
            given = {names[0]: Node(item.value, item.where, item.path)}
        else:
            given = item.mapping(_AnyKey(), "a shape set")
            for name in given:
                if name not in names:
                    raise _error(given[name].where, item.path, f"model {model!r} has no input {name!r}",
                                 f"one of its inputs: {_join(names)}", repr(name),
                                 did_you_mean(name, names) or "use the model's input names")
            if not given:
                raise item.fail("empty shape set", "input name -> shape")
        sets.append((complete(given, specs, file_shapes, item, model), item.where))
    if not sets:
        raise node.fail("shapes is empty", "at least one shape set, or leave 'shapes' out")
    return sets


def complete(given: Mapping[str, Node], specs: Sequence[InputSpec], file_shapes: Mapping[str, Tuple[int, ...]],
             at: Node, model: str) -> Tuple[Tuple[str, Tuple[int, ...]], ...]:
    """Concrete shapes for every input: those given, checked against the model; the rest from
    their input file, or the declared shape with the dynamic batch dim taken from the set."""
    shapes = {name: parse_dims(n, f"the shape of {name!r}", dynamic=False) for name, n in given.items()}
    batches = sorted({s[0] for s in shapes.values()})
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
    dims = []
    for i, d in enumerate(declared):
        dims.append(d if d >= 0 else (given[i] if i < len(given) else 1))
    return str(dims)


# -- model sources ----------------------------------------------------------------------------


def locate_module(module: str, search: Sequence[str]) -> Optional[Tuple[Optional[str], Optional[str]]]:
    """Where ``module`` would be imported from, without importing it (importing a builder
    module usually imports paddle): (the search directory it was found under, or None when
    an import hook of the environment finds it; its source file, when it has one)."""
    parts = module.split(".")

    def descend(spec):
        for i in range(1, len(parts)):
            locations = spec.submodule_search_locations if spec else None
            if not locations:
                return None
            spec = PathFinder.find_spec(".".join(parts[:i + 1]), list(locations))
        return spec

    for entry in search:
        spec = descend(PathFinder.find_spec(parts[0], [entry]))
        if spec is not None:
            return entry, spec.origin if spec.has_location else None
    try:
        top = importlib.util.find_spec(parts[0])  # editable installs and other meta-path finders
    except (ImportError, ValueError):
        top = None
    spec = descend(top)
    if spec is not None:
        return None, spec.origin if spec.has_location else None
    return None


def top_level_names(source_file: str) -> Optional[set]:
    """Names a module defines at top level, or None when it cannot be told statically."""
    try:
        tree = ast.parse(Path(source_file).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    names: set = set()

    def visit(body):
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(stmt.name)
                if stmt.name == "__getattr__":
                    return False
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for alias in stmt.names:
                    if alias.name == "*":
                        return False
                    names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                for sub in ("body", "orelse", "finalbody", "handlers"):
                    for part in getattr(stmt, sub, []) or []:
                        if visit(part.body if isinstance(part, ast.ExceptHandler) else [part]) is False:
                            return False
        return True

    return names if visit(tree.body) else None


def builder_source(name: str, node: Node, ref: str, kwargs: Tuple[Tuple[str, Any], ...],
                   inputs: Tuple[InputSpec, ...], ctx: Context) -> ModelSource:
    import sys

    module, _, attr = ref.partition(":")
    search = [str(ctx.base_dir), str(ctx.rootdir)] + [p for p in sys.path if p]
    found = locate_module(module, search)
    if found is None:
        raise node.fail(f"builder module {module!r} cannot be imported",
                        f"a module importable from the suite's directory ({ctx.base_dir}), the rootdir "
                        f"({ctx.rootdir}) or the environment", found=repr(ref),
                        fix=f"put {module.replace('.', '/')}.py beside the suite file, fix the module "
                        "name, or install its package")
    entry, origin = found
    fingerprint = ""
    if origin and origin.endswith(".py"):
        names = top_level_names(origin)
        if names is not None and attr not in names:
            public = sorted(n for n in names if not n.startswith("_"))
            raise node.fail(f"builder module {module!r} has no {attr!r}",
                            f"a callable defined in {origin}", found=f"{attr!r}; the module defines "
                            f"{_join(public[:12]) or 'nothing public'}",
                            fix=did_you_mean(attr, public) or "name a function that returns a paddle.nn.Layer")
        # an edited builder must be exported again: its source is part of the cache key
        fingerprint = hashlib.sha256(Path(origin).read_bytes()).hexdigest()[:12]
    return ModelSource(name, "builder", ref, kwargs, inputs,
                       search_path=(entry,) if entry else (), fingerprint=fingerprint)


def parse_kwargs(node: Node) -> Tuple[Tuple[str, Any], ...]:
    def frozen(child: Node):
        v = child.value
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, (list, tuple)):
            return tuple(frozen(c) for c in child.items("a kwargs value", "[1, 2]"))
        raise child.fail("kwargs values must be plain data", "a number, string, boolean, null or a list of these")

    return tuple((k, frozen(c)) for k, c in node.mapping(_AnyKey(), "kwargs").items())


def resolve_source(name: str, fields: Mapping[str, Node], model_node: Node, inputs: Dict[str, InputEntry],
                   defaults: Defaults, ctx: Context) -> ModelSource:
    """The model's source, its inputs merged with what the suite says about them."""
    node = fields.get("source")
    if node is not None:
        ref = node.text("source", "resnet50, models/resnet50/ or my_pkg.nets:build_net")
    elif name in ZOO:
        ref, node = name, model_node
    else:
        raise model_node.fail(f"model {name!r} has no source and is not a zoo entry",
                              f"'source:' with a zoo name ({_join(ZOO)}), a model directory or "
                              "file, or a builder 'package.module:callable'", found="no 'source' key",
                              fix=f"add source: under models.{name}" +
                              (f" ({did_you_mean(name, list(ZOO))})" if did_you_mean(name, list(ZOO)) else ""))
    kind = "builder" if BUILDER_PATTERN.match(ref) else "zoo" if ref in ZOO else "path"
    if "kwargs" in fields and kind != "builder":
        raise fields["kwargs"].fail("kwargs is only for builder sources",
                                    "no kwargs for a zoo or path model", fix="remove 'kwargs'")
    if kind == "builder":
        merged = {n: merge_entries(defaults.inputs.get(n), inputs.get(n))
                  for n in list(defaults.inputs) + [n for n in inputs if n not in defaults.inputs]}
        defaults.used_inputs.update(n for n in defaults.inputs)
        if not merged:
            raise model_node.fail(f"builder model {name!r} declares no inputs",
                                  "inputs: {x: {shape: [-1, 3, 224, 224], dtype: float32}}",
                                  found="no 'inputs'", fix="declare each input the layer's forward takes")
        specs = tuple(build_input(n, e, None, ctx, name) for n, e in merged.items())
        kwargs = parse_kwargs(fields["kwargs"]) if "kwargs" in fields else ()
        return builder_source(name, node, ref, kwargs, specs, ctx)
    if kind == "zoo":
        declared = ZOO[ref].inputs
        source = ModelSource(name, "zoo", ref)
    else:
        source, declared = path_source(name, node, ref, ctx)
    decl_names = [s.name for s in declared]
    for n, entry in inputs.items():
        if n not in decl_names:
            raise entry.node.fail(f"model {name!r} has no input {n!r}", f"one of its inputs: {_join(decl_names)}",
                                  found=repr(n), fix=did_you_mean(n, decl_names) or "use the model's input names")
    specs = []
    for spec in declared:
        entry = merge_entries(defaults.inputs.get(spec.name), inputs.get(spec.name))
        if spec.name in defaults.inputs:
            defaults.used_inputs.add(spec.name)
        specs.append(build_input(spec.name, entry, spec, ctx, name))
    return replace(source, inputs=tuple(specs))


def path_source(name: str, node: Node, ref: str, ctx: Context) -> Tuple[ModelSource, Tuple[InputSpec, ...]]:
    path = (ctx.base_dir / ref).expanduser()
    if not path.exists():
        close = did_you_mean(ref, list(ZOO))
        raise node.fail("unknown model source", f"a zoo name ({_join(ZOO)}), a model directory or "
                        ".pdmodel/.json file relative to the suite, or a builder 'package.module:callable'",
                        found=f"{ref!r}: not a zoo entry, no such path {path}",
                        fix=close or "fix the path or the zoo name")
    try:
        prog, _ = find_model_files(str(path))
        declared = declared_inputs(prog, ctx.cache_dir)
    except PaddleInferError as e:
        raise node.fail("model files cannot be used", "a model directory or .pdmodel/.json file with "
                        "its .pdiparams", found=str(e)) from None
    return ModelSource(name, "path", str(prog.resolve())), declared


# -- cases ------------------------------------------------------------------------------------


def model_cases(name: str, model_node: Node, fields: Mapping[str, Node], defaults: Defaults,
                ctx: Context, model_layer: Optional[Layer] = None) -> List[SuiteCase]:
    """One case per shape set x run mode of one model, with its tolerance layers resolved."""
    shared = {k: fields.get(k, defaults.fields.get(k)) for k in SHARED_KEYS}
    inputs = parse_input_entries(fields["inputs"]) if "inputs" in fields else {}
    source = resolve_source(name, fields, model_node, inputs, defaults, ctx)
    input_nodes = {s.name: (merge_entries(defaults.inputs.get(s.name), inputs.get(s.name)) or
                            InputEntry(model_node, {})).fields.get("file", model_node) for s in source.inputs}
    shape_sets = parse_shape_sets(shared["shapes"], source.inputs, input_nodes, name, model_node.where)
    if shared["run_modes"] is None:
        raise model_node.fail(f"model {name!r} has no run modes", f"run_modes under the model or under "
                              f"defaults, e.g. run_modes: {MODE_EXAMPLE}", found="no 'run_modes'",
                              fix="add run_modes")
    modes = parse_run_modes(shared["run_modes"])
    suite_layer = parse_tolerances(defaults.fields.get("tolerances"))
    if model_layer is None:
        model_layer = parse_tolerances(fields.get("tolerances"))
    model_reasons = parse_reasons({k: v for k, v in defaults.fields.items() if k in ("skip", "xfail")}) \
        .under(parse_reasons(fields))
    cases = []
    for shapes, _ in shape_sets:
        for mode in modes:
            default = RUN_MODES[mode.spec.mode].tolerance
            base = mode.layer.rule.over(model_layer.rule).over(suite_layer.rule) \
                .over(Rule(default.atol, default.rtol))
            layers = (suite_layer, model_layer, mode.layer)  # later entries win in for_tensor
            tolerances = CaseTolerances(base=base, outputs=sum((l.outputs for l in layers), ()),
                                        tensors=sum((l.tensors for l in layers), ()))
            case = Case(model=source, run_mode=mode.spec, tolerances=tolerances, shapes=shapes,
                        baseline=defaults.baseline, seed=defaults.seed, threads=defaults.threads,
                        origin=str(model_node.where))
            reasons = model_reasons.under(mode.reasons)
            cases.append(SuiteCase(case, model_node.where, reasons.skip, reasons.xfail, reasons.strict))
    return cases


def read_defaults(node: Optional[Node], ctx: Context) -> Defaults:
    fields = node.mapping(DEFAULTS_KEYS, "defaults") if node is not None else {}
    forced = dict(ctx.forced)
    seed = fields["seed"].integer("seed", 0) if "seed" in fields else ctx.seed
    threads = fields["threads"].integer("threads", 1) if "threads" in fields else ctx.threads
    baseline = ctx.baseline
    if "baseline" in fields:
        baseline = fields["baseline"].text("baseline", "auto")
        if baseline not in BASELINES:
            raise fields["baseline"].fail("unknown baseline", f"one of {_join(BASELINES)}",
                                          did_you_mean(baseline, BASELINES))
    defaults = Defaults(forced.get("seed", seed), forced.get("baseline", baseline),
                        forced.get("threads", threads),
                        {k: v for k, v in fields.items() if k in SHARED_KEYS})
    if "inputs" in fields:
        defaults.inputs = parse_input_entries(fields["inputs"])
    return defaults


TOP_HINTS = {k: f"suite-wide {k} go under 'defaults:'" for k in DEFAULTS_KEYS}
MODEL_HINTS = {k: f"{k} is suite-wide: put it under 'defaults:'" for k in ("seed", "baseline")}
MODEL_HINTS.update(model="the key is 'source'", name="the model's name is its key under 'models:'")


def load_suite(path: Path, ctx: Context) -> List[SuiteCase]:
    """Every case a suite file declares, in file order; a SuiteError for anything wrong."""
    top = Node(read_yaml(Path(path), ctx.file), Where(ctx.file, 1), "")
    if not isinstance(top.value, dict):
        raise top.fail("a suite must be a mapping", "a mapping with 'models:' and optionally 'defaults:'",
                       fix=f"see {DOCS} for a full example")
    fields = top.mapping(TOP_KEYS, "a suite", TOP_HINTS)
    if "models" not in fields:
        raise top.fail("the suite declares no models", "a 'models:' mapping", found="no 'models' key",
                       fix="add models: with at least one model")
    defaults = read_defaults(fields.get("defaults"), ctx)
    models = fields["models"]
    if not isinstance(models.value, dict) or not models.value:
        raise models.fail("models must be a non-empty mapping", "model name -> its settings, e.g. "
                          "models: {resnet50: {shapes: [[1, 3, 224, 224]]}}")
    cases: List[SuiteCase] = []
    for name, node in models.mapping(_AnyKey(), "models").items():
        if not re.match(r"^[\w.\-]+$", name):
            raise _error(node.where, "models", "a model name with characters test ids cannot take",
                         "letters, digits, '_', '-' and '.'", repr(name), "rename the model")
        model_fields = node.mapping(MODEL_KEYS, f"model {name!r}", MODEL_HINTS)
        cases.extend(model_cases(name, node, model_fields, defaults, ctx))
    unused = [n for n in defaults.inputs if n not in defaults.used_inputs]
    if unused:
        entry = defaults.inputs[unused[0]]
        raise entry.node.fail(f"defaults input {unused[0]!r} matches no model's input",
                              "the name of an input of at least one model", found=repr(unused[0]),
                              fix="fix the name or remove it")
    check_unique(cases)
    return cases


def check_unique(cases: Sequence[SuiteCase]) -> None:
    seen: Dict[str, SuiteCase] = {}
    for sc in cases:
        if sc.case.id in seen:
            raise _error(sc.where, "", f"two cases have the id {sc.case.id!r}", "one case per model, shape "
                         "set and run mode", f"a repeated shape set or run mode (first at {seen[sc.case.id].where})",
                         "remove the repeat, or give the run modes different toggles")
        seen[sc.case.id] = sc


# -- the paddle_case marker -------------------------------------------------------------------


def marker_cases(args: Sequence[Any], kwargs: Mapping[str, Any], where: Where, ctx: Context) -> List[SuiteCase]:
    """The cases a ``@pytest.mark.paddle_case(model=..., shapes=..., run_modes=..., atol=...)``
    declares; the same schema as a suite's model entry, with tolerances given directly."""
    node = Node(dict(kwargs), where, "paddle_case")
    if args:
        raise node.fail("paddle_case takes keyword arguments only", "paddle_case(model=..., shapes=..., "
                        "run_modes=..., atol=...)", found=f"positional {_short(list(args))}",
                        fix=f"write model={args[0]!r}")
    fields = node.mapping(MARKER_KEYS, "paddle_case")
    if "model" not in fields:
        raise node.fail("paddle_case needs a model", "model='tiny_cnn' (a zoo name, a path or "
                        "'package.module:callable')", found="no model")
    ref = fields["model"].text("model", "'tiny_cnn'")
    if "name" in fields:
        name = fields["name"].text("name", "'my_net'")
    elif BUILDER_PATTERN.match(ref):
        name = ref.partition(":")[2]
    elif ref in ZOO or not (ctx.base_dir / ref).exists():
        name = ref
    else:
        try:
            name = display_name(find_model_files(str(ctx.base_dir / ref))[0])
        except PaddleInferError:
            name = Path(ref).stem
    model_fields = {k: v for k, v in fields.items() if k in MODEL_KEYS}
    model_fields["source"] = fields["model"]
    if "tolerances" in fields and any(k in fields for k in RULE_KEYS):
        given = [k for k in RULE_KEYS if k in fields and k in (fields["tolerances"].value or {})]
        if given:
            raise node.fail(f"{given[0]} given twice", f"{given[0]} either directly or in tolerances",
                            found=f"{given[0]}= and tolerances={{{given[0]!r}: ...}}", fix="keep one")
    layer = parse_tolerances(fields.get("tolerances"))
    layer = replace(layer, rule=parse_rule(fields).over(layer.rule))
    defaults = read_defaults(Node({k: fields[k].value for k in ("seed", "baseline", "threads") if k in fields},
                                  where, "paddle_case"), ctx)
    cases = model_cases(name, node, model_fields, defaults, ctx, model_layer=layer)
    check_unique(cases)
    return cases


def marker_rule(args: Sequence[Any], kwargs: Mapping[str, Any], where: Where) -> Rule:
    """The Rule of a ``paddle_tolerance(atol=, rtol=, cosine_min=)`` marker, checked loudly."""
    node = Node(dict(kwargs), where, "paddle_tolerance")
    if args:
        raise node.fail("paddle_tolerance takes keyword arguments only", "paddle_tolerance(atol=1e-3, rtol=1e-3)",
                        found=f"positional {_short(list(args))}", fix="name them: atol=..., rtol=...")
    rule = parse_rule(node.mapping(RULE_KEYS, "paddle_tolerance"))
    if rule == Rule():
        raise node.fail("paddle_tolerance sets nothing", "at least one of atol, rtol, cosine_min",
                        found="no arguments")
    return rule
