"""Cut an inference program: the sub-program between fed and fetched tensors, saved as a model.
Legacy: ``save_inference_model`` prunes to the ops between feeds and fetches. PIR: it prunes from
the fetches only, so each cut value is first replaced by a ``pd_op.data`` op in a clone. Only
values that depend on the inputs are cut: constants stay with the ops that read them."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

# ops that move data in and out of a program, not computations
IO_OPS = {"feed", "fetch", "pd_op.data", "pd_op.feed", "pd_op.fetch", "builtin.parameter",
          "builtin.constant", "pd_op.parameter"}


@dataclass
class Op:
    index: int  # position among the computing ops, in execution order
    type: str
    inputs: List[str]  # keys of the data-dependent values it reads
    outputs: List[str]  # keys of the values it writes (data-dependent by construction)


@dataclass
class Program:
    """A loaded program: its computing ops in order, its input and output value keys."""
    path: str
    format: str  # "legacy" | "pir"
    ops: List[Op] = field(default_factory=list)
    inputs: List[str] = field(default_factory=list)  # feed names, in the program's order
    outputs: List[str] = field(default_factory=list)  # keys of the fetched values
    output_names: List[str] = field(default_factory=list)  # the names predictors give them
    producer: Dict[str, int] = field(default_factory=dict)  # value key -> op index
    shapes: Dict[str, Tuple[int, ...]] = field(default_factory=dict)
    dtypes: Dict[str, str] = field(default_factory=dict)
    dense: set = field(default_factory=set)  # values a predictor can take or give: cut points
    _program: object = None
    _exe: object = None
    _values: Dict[str, object] = field(default_factory=dict)  # PIR: key -> Value

    def needed(self, start: int, targets: Sequence[str]) -> List[int]:
        """Indices of the ops at or after ``start`` that the targets depend on."""
        wanted, keep = set(targets), []
        for op in reversed(self.ops[start:]):
            if wanted.intersection(op.outputs):
                keep.append(op.index)
                wanted.update(op.inputs)
        return sorted(keep)

    def segment(self, start: int, targets: Sequence[str]) -> List[int]:
        """The ops a cut at ``start`` runs: those from ``start`` on that the targets depend on,
        and further back the producers of values that cannot be fed (a PIR list)."""
        ops = set(self.needed(start, targets))
        while True:
            made = {k for i in ops for k in self.ops[i].outputs}
            wanting = {self.producer[k] for i in ops for k in self.ops[i].inputs
                       if k not in made and k not in self.dense and k in self.producer}
            if not wanting:
                return sorted(ops)
            for index in wanting:
                ops.update(self.needed(index, self.ops[index].outputs[:1]))

    def crossing(self, start: int, targets: Sequence[str]) -> List[str]:
        """What a cut at ``start`` feeds: the values its ops (or targets) take from before it."""
        ops = self.segment(start, targets)
        made = {k for i in ops for k in self.ops[i].outputs}
        reads = [k for i in ops for k in self.ops[i].inputs] + list(targets)
        return [k for k in dict.fromkeys(reads) if k not in made]

    def cuttable(self, index: int) -> bool:
        """Can op ``index``'s main output be fetched (a tensor, not a list)?"""
        outputs = self.ops[index].outputs
        return bool(outputs) and outputs[0] in self.dense


def load(prog_file: str, device: str = "cpu") -> Program:
    """``device``: where its Executor runs, ``cpu`` or ``gpu:N`` (the static Executor rung)."""
    import paddle

    paddle.enable_static()
    place = paddle.CPUPlace() if device == "cpu" else paddle.CUDAPlace(int(device.split(":")[1]))
    exe = paddle.static.Executor(place)
    prefix, ext = os.path.splitext(os.path.abspath(prog_file))
    program, feed_names, fetch_targets = paddle.static.load_inference_model(
        prefix, exe, model_filename=prefix + ext, params_filename=prefix + ".pdiparams")
    fmt = "legacy" if ext == ".pdmodel" else "pir"
    prog = Program(prog_file, fmt, inputs=list(feed_names), _program=program, _exe=exe)
    (_read_legacy if fmt == "legacy" else _read_pir)(prog, program, fetch_targets)
    # each op's main output first: the one read later or fetched (batch_norm lists Y last)
    read = {k for op in prog.ops for k in op.inputs} | set(prog.outputs)
    for op in prog.ops:
        op.outputs = [k for k in op.outputs if k in read] + [k for k in op.outputs if k not in read]
    return prog


def _read_legacy(prog: Program, program, fetch_targets) -> None:
    block = program.global_block()
    dependent = set(prog.inputs)
    for op in block.ops:
        if op.type in IO_OPS:
            continue
        reads = [n for k in op.input_names for n in op.input(k)]
        data_in = [n for n in reads if n in dependent]
        if not data_in:  # a constant: it stays with the ops that read it
            continue
        writes = [n for k in op.output_names for n in op.output(k) if n and not block.var(n).persistable]
        index = len(prog.ops)
        prog.ops.append(Op(index, op.type, list(dict.fromkeys(data_in)), writes))
        for name in writes:
            dependent.add(name)
            prog.producer[name] = index
    for name in dependent:
        var = block.var(name)
        prog.shapes[name] = tuple(var.shape)
        prog.dtypes[name] = str(var.dtype)
        if "ARRAY" not in str(var.type).upper():  # LoDTensorArray and the like cannot be fed
            prog.dense.add(name)
    prog.outputs = [t.name for t in fetch_targets]
    prog.output_names = list(prog.outputs)


def _read_pir(prog: Program, program, fetch_targets) -> None:
    block = program.global_block()
    keys: Dict[int, str] = {}  # Value.id -> key
    dependent = set()
    for position, op in enumerate(block.ops):
        name = op.name()
        results = list(op.results())
        if name in ("pd_op.data", "pd_op.feed"):
            key = op.attrs().get("name")
            keys[results[0].id] = key
            prog._values[key] = results[0]
            dependent.add(key)
            continue
        if name in IO_OPS:
            continue
        sources = [o.source() for o in op.operands()]
        reads = [keys.get(v.id) for v in sources if v is not None and v.initialized()]  # optional: none
        data_in = [k for k in reads if k in dependent]
        if not data_in:
            continue
        index = len(prog.ops)
        writes = []
        for j, value in enumerate(results):
            key = f"op{index}:{name.split('.')[-1]}:{j}"
            keys[value.id] = key
            prog._values[key] = value
            dependent.add(key)
            prog.producer[key] = index
            writes.append(key)
        prog.ops.append(Op(index, name, list(dict.fromkeys(data_in)), writes))
    for key in dependent:
        value = prog._values[key]
        if not value.is_dense_tensor_type():  # a builtin.combine list: no shape, not fed
            continue
        prog.dense.add(key)
        prog.shapes[key] = tuple(int(d) for d in value.shape)
        prog.dtypes[key] = str(value.dtype)
    prog.outputs = [keys[t.id] for t in fetch_targets]
    names = [op.attrs().get("name") for op in block.ops if op.name() == "pd_op.fetch"]
    prog.output_names = names if len(names) == len(fetch_targets) else list(prog.outputs)


def params_file(model_dir: Path) -> str:
    """What a Config takes as the params file of a saved (sub-)program."""
    path = Path(model_dir) / "inference.pdiparams"
    return str(path) if path.is_file() else ""


def feed_name(key: str) -> str:
    """The name a PIR cut value is fed by: ``op3:conv2d:0`` -> ``op3_conv2d_0``."""
    return key.replace(":", "_")


def extract(prog: Program, feeds: Sequence[str], fetches: Sequence[str], dest: Path) -> Tuple[List[str], List[str]]:
    """Write the sub-program from ``feeds`` to ``fetches`` to ``dest``: (input names, output names)."""
    import paddle

    dest = Path(dest)
    if dest.exists():  # a params file left there would be read as this program's
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    prefix = str(dest / "inference")
    if prog.format == "legacy":
        block = prog._program.global_block()
        paddle.static.save_inference_model(prefix, [block.var(n) for n in feeds],
                                           [block.var(n) for n in fetches], prog._exe, program=prog._program)
        # a legacy predictor needs a params file; an empty one loads as no parameters
        (dest / "inference.pdiparams").touch()
        return list(feeds), list(fetches)
    mapping = paddle.pir.IrMapping()
    clone = prog._program.clone(mapping)
    fed, fetched = [], [mapping.look_up(prog._values[k]) for k in fetches]
    with paddle.static.program_guard(clone):
        for key in feeds:
            value = mapping.look_up(prog._values[key])
            source = value.get_defining_op()
            if source.name() in ("pd_op.data", "pd_op.feed"):
                fed.append(value)
                continue
            data = paddle._pir_ops.data(feed_name(key), value.shape, value.dtype, paddle.base.core.Place())
            value.replace_all_uses_with(data)
            data.get_defining_op().move_before(source)
            fetched = [data if f.id == value.id else f for f in fetched]
            fed.append(data)
    paddle.static.save_inference_model(prefix, fed, fetched, prog._exe, program=clone)
    names = [feed_name(k) if k not in prog.inputs else k for k in feeds]
    return names, [f"fetch_name_{i}" for i in range(len(fetches))]
