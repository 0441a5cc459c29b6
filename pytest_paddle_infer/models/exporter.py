"""Runs in a child process (``FLAGS_enable_pir_api`` fixes the format ``paddle.jit.save``
writes at import; no dygraph or static state is left behind): export a layer, or read a model
file's declared inputs. Prints one JSON object on its last line of stdout.

    python -m pytest_paddle_infer.models.exporter export BUILDER KWARGS_JSON INPUTS_JSON OUT_PREFIX [int8-weights]
    python -m pytest_paddle_infer.models.exporter inspect PROG_FILE
    python -m pytest_paddle_infer.models.exporter signature BUILDER KWARGS_JSON
"""
from __future__ import annotations

import hashlib
import importlib
import inspect as pyinspect
import json
import os
import random
import re
import sys

from .quantized import store_int8_weights
from .binding import BindingError, bind, forward_signature
from ..children import hold_to_parent


def _paddle_dtype_name(dtype) -> str:
    text = str(dtype).replace("paddle.", "").replace("VarType.", "").lower()
    aliases = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64"}
    return aliases.get(text, text)


def load_builder(path: str):
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ValueError(f"builder {path!r} is not of the form 'package.module:callable'")
    # the directories the suite's builder was found in go first (models.run_child sets them)
    sys.path[:0] = [p for p in os.environ.get("PADDLE_INFER_BUILDER_PATH", "").split(os.pathsep) if p]
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attr!r}") from None


BUILD_SEED = 2024  # the global generators' seed before a builder runs


def build_layer(builder: str, kwargs: dict):
    """The builder's layer in eval mode, the generators seeded first (the same weights each time)."""
    import numpy as np
    import paddle

    paddle.seed(BUILD_SEED)
    np.random.seed(BUILD_SEED)
    random.seed(BUILD_SEED)
    layer = load_builder(builder)(**kwargs)
    if not isinstance(layer, paddle.nn.Layer):
        raise TypeError(f"builder {builder} returned {type(layer).__name__}, not a paddle.nn.Layer")
    layer.eval()
    return layer


def weights_digest(layer) -> str:
    """A hash of every parameter and buffer: tells whether two builds made the same network."""
    h = hashlib.sha256()
    for name, tensor in sorted(layer.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.numpy().tobytes())
    return h.hexdigest()[:16]


def local_sources() -> dict:
    """Hashes of the source files imported from outside Python and this plugin: an edit makes the
    export stale (relative under the working directory, so a checkout elsewhere still matches)."""
    cwd = os.path.realpath(os.getcwd())
    skip = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    skip.add(os.path.realpath(os.path.dirname(os.path.dirname(__file__))))  # the plugin's own
    sources = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path or not path.endswith(".py"):
            continue
        real = os.path.realpath(path)
        if any(real.startswith(s + os.sep) for s in skip) or "site-packages" in real:
            continue
        with open(real, "rb") as f:
            key = os.path.relpath(real, cwd) if real.startswith(cwd + os.sep) else real
            sources[key] = hashlib.sha256(f.read()).hexdigest()
    return sources


def export(builder: str, kwargs: dict, inputs: list, out_prefix: str, int8_weights: bool = False) -> dict:
    """``paddle.jit.to_static`` with an InputSpec per declared input, then ``paddle.jit.save``
    (as PaddleClas's ``export_model.py``); ``int8_weights``: quantized weights stored as int8."""
    import paddle

    layer = build_layer(builder, kwargs)
    weights = weights_digest(layer)
    spec = input_spec(layer, inputs)  # in forward's order, bound by name
    static_layer = paddle.jit.to_static(layer, input_spec=spec, full_graph=True)
    save_naming_unused_inputs(static_layer, out_prefix, layer, [i["name"] for i in inputs])
    extra = {"int8_weights": store_int8_weights(out_prefix)} if int8_weights else {}
    return {**extra, "files": sorted(os.listdir(os.path.dirname(out_prefix))),
            "paddle": paddle.__version__, "weights": weights, "sources": local_sources()}


def inspect(prog_file: str) -> dict:
    import paddle

    paddle.enable_static()
    prefix, ext = os.path.splitext(prog_file)
    exe = paddle.static.Executor(paddle.CPUPlace())
    program, feed_names, fetch_targets = paddle.static.load_inference_model(
        prefix, exe, model_filename=prog_file, params_filename=prefix + ".pdiparams")
    if ext == ".json":
        data_ops = {op.attrs()["name"]: op for op in program.global_block().ops if op.name() == "pd_op.data"}
        values = [data_ops[name].result(0) for name in feed_names]
    else:
        values = [program.global_block().var(name) for name in feed_names]
    return {"inputs": [{"name": name, "shape": list(v.shape), "dtype": _paddle_dtype_name(v.dtype)}
                       for name, v in zip(feed_names, values)]}


def input_spec(layer, inputs: list) -> list:
    """The ``InputSpec`` list ``to_static`` binds to ``forward``'s parameters by position, from
    the inputs by name (``binding.bind``); a skipped parameter keeps its default."""
    import paddle

    try:
        binding = bind(forward_signature(layer), [i["name"] for i in inputs])
    except BindingError as e:
        raise SystemExit(f"the suite's inputs do not fit forward: {e}") from None
    by_name = {i["name"]: i for i in inputs}
    parameters = pyinspect.signature(layer.forward).parameters
    return [parameters[parameter].default if name is None else paddle.static.InputSpec(
        [None if d < 0 else d for d in by_name[name]["shape"]], by_name[name]["dtype"], name)
        for parameter, name in binding.slots]


def unused_inputs(static_layer, names: list) -> list:
    """The inputs no output of the converted PIR program depends on (jit.save refuses them), or []."""
    try:
        from paddle.autograd.backward_utils import ValueSet, some_in_set
        from paddle.static.pir_io import get_real_op_inputs, get_real_op_outputs

        program = static_layer.forward.concrete_program
        outputs = program.outputs if isinstance(program.outputs, (list, tuple)) else [program.outputs]
        needed = ValueSet(outputs)
        data = {}
        for op in reversed(list(program.main_program.global_block().ops)):
            if op.name() == "pd_op.data":
                data[op.attrs()["name"]] = op.result(0)
            if some_in_set(get_real_op_outputs(op), needed):
                for value in get_real_op_inputs(op):
                    needed.add(value)
        return [n for n in names if n in data and data[n] not in needed]
    except Exception:  # a legacy program, or Paddle's internals moved: the message says less
        return []


def save_naming_unused_inputs(static_layer, out_prefix: str, layer, names: list) -> None:
    """``paddle.jit.save``, naming an input no output depends on (Paddle's error does not)."""
    import paddle

    try:
        paddle.jit.save(static_layer, out_prefix)
    except ValueError as e:
        text = str(e)
        if "not involved in the target_vars" not in text:
            raise
        legacy = re.search(r"'([^']+)' doesn't exist in pruned", text)
        unused = [legacy.group(1)] if legacy else unused_inputs(static_layer, names)
        which = ", ".join(repr(n) for n in unused) or "one of the inputs"
        owner = f"{type(layer).__name__}.forward"
        raise SystemExit(
            f"input {which} is not used by {owner}: no output depends on it, so paddle.jit.save "
            f"cannot keep it in the exported program (the inputs: {', '.join(names)}). Remove it "
            f"from the model's inputs (a defaults input goes to every builder whose forward takes "
            f"that name) and give forward's parameter a default, or use it in forward.") from None


def signature(builder: str, kwargs: dict) -> dict:
    """The built layer's ``forward`` parameters, for the suite's check of its inputs."""
    layer = build_layer(builder, kwargs)
    return {"signature": forward_signature(layer).to_json(), "sources": local_sources()}


def run_command(argv, commands) -> int:
    """The child-process protocol: ``argv[0]`` names a command; its result is stdout's last line, JSON."""
    hold_to_parent()
    command = commands.get(argv[0]) if argv else None
    if command is None:
        raise SystemExit(f"unknown command {argv[:1]!r}; commands: {', '.join(commands)}")
    sys.stdout.write("\n" + json.dumps(command(*argv[1:])) + "\n")
    return 0


def main(argv) -> int:
    return run_command(argv, {
        "export": lambda builder, kwargs, inputs, out, *flags: export(
            builder, json.loads(kwargs), json.loads(inputs), out, "int8-weights" in flags),
        "inspect": inspect,
        "signature": lambda builder, kwargs: signature(builder, json.loads(kwargs)),
    })


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
