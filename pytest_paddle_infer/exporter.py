"""Runs in a child process: export a layer, or read a model file's declared inputs.

A child process because the program format ``paddle.jit.save`` writes is fixed by
``FLAGS_enable_pir_api`` when paddle is imported, and because building a model must not
leave dygraph or static-mode state behind in the pytest process.

    python -m pytest_paddle_infer.exporter export BUILDER KWARGS_JSON INPUTS_JSON OUT_PREFIX
    python -m pytest_paddle_infer.exporter inspect PROG_FILE
Prints one JSON object on its last line of stdout.
"""
from __future__ import annotations

import importlib
import json
import os
import sys


def _paddle_dtype_name(dtype) -> str:
    text = str(dtype).replace("paddle.", "").replace("VarType.", "").lower()
    aliases = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64",
               "bool": "bool", "int32": "int32", "int64": "int64", "float32": "float32"}
    return aliases.get(text, text)


def load_builder(path: str):
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ValueError(f"builder {path!r} is not of the form 'package.module:callable'")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attr!r}") from None


def export(builder: str, kwargs: dict, inputs: list, out_prefix: str) -> dict:
    import paddle

    layer = load_builder(builder)(**kwargs)
    layer.eval()
    spec = [
        paddle.static.InputSpec([None if d < 0 else d for d in i["shape"]], i["dtype"], i["name"])
        for i in inputs
    ]
    paddle.jit.save(layer, out_prefix, input_spec=spec)
    return {"files": sorted(os.listdir(os.path.dirname(out_prefix))),
            "paddle": paddle.__version__}


def inspect(prog_file: str) -> dict:
    import paddle

    paddle.enable_static()
    prefix, ext = os.path.splitext(prog_file)
    exe = paddle.static.Executor(paddle.CPUPlace())
    params = prefix + ".pdiparams"
    program, feed_names, fetch_targets = paddle.static.load_inference_model(
        prefix, exe, model_filename=prog_file, params_filename=params)
    inputs = []
    if ext == ".json":
        data_ops = {op.attrs()["name"]: op for op in program.global_block().ops
                    if op.name() == "pd_op.data"}
        for name in feed_names:
            value = data_ops[name].result(0)
            inputs.append({"name": name, "shape": list(value.shape),
                           "dtype": _paddle_dtype_name(value.dtype)})
    else:
        block = program.global_block()
        for name in feed_names:
            var = block.var(name)
            inputs.append({"name": name, "shape": list(var.shape),
                           "dtype": _paddle_dtype_name(var.dtype)})
    return {"inputs": inputs}


def main(argv) -> int:
    command = argv[0]
    if command == "export":
        result = export(argv[1], json.loads(argv[2]), json.loads(argv[3]), argv[4])
    elif command == "inspect":
        result = inspect(argv[1])
    else:
        raise SystemExit(f"unknown command {command!r}")
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
