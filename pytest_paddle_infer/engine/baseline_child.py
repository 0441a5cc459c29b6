"""Child process, as ``exporter.py`` is: the dygraph and static-executor baselines. ``INPUTS_NPZ``
holds the inputs by name plus ``__order__``; ``OUT_NPZ`` gets ``o0, o1, ...``; JSON on the last
stdout line. Commands: ``dygraph BUILDER KWARGS_JSON INPUTS_NPZ OUT_NPZ DEVICE [WEIGHTS]``,
``static PROG_FILE INPUTS_NPZ OUT_NPZ DEVICE``."""
from __future__ import annotations

import json
import os
import sys

from .baselines import flatten_named
from ..models.binding import BindingError, bind, forward_signature
from ..models.exporter import build_layer, run_command, weights_digest


def _read_inputs(path: str):
    import numpy as np

    with np.load(path, allow_pickle=False) as data:
        order = [str(n) for n in data["__order__"]]
        return order, {name: data[name] for name in order}


def _write_outputs(path: str, named) -> list:
    import numpy as np

    with open(path, "wb") as f:  # a file object: np.savez would append ".npz" to a name
        np.savez(f, **{f"o{i}": array for i, (_, array) in enumerate(named)})
    return [name for name, _ in named]


def dygraph(builder: str, kwargs: dict, inputs_npz: str, out_npz: str, device: str,
            weights: str = "") -> dict:
    import paddle

    paddle.set_device(device)
    order, inputs = _read_inputs(inputs_npz)
    layer = build_layer(builder, kwargs)
    found = weights_digest(layer)
    if weights and found != weights:
        raise SystemExit(
            f"the builder {builder} gave other weights in this process than when the model was "
            f"exported (weights digest {found}, exported {weights}): the dygraph baseline would "
            f"compare two different networks. Make the builder deterministic (seed it, or load "
            f"trained weights) so every call returns the same layer.")
    try:  # by name, as the exporter binds them: forward's parameter -> the input it takes
        by_parameter = bind(forward_signature(layer), order).by_parameter()
    except BindingError as e:
        raise SystemExit(f"the suite's inputs do not fit forward: {e}") from None
    with paddle.no_grad():
        result = layer(**{p: paddle.to_tensor(inputs[name]) for p, name in by_parameter.items()})
    named = [(name, tensor.numpy()) for name, tensor in flatten_named(result, is_tensor=paddle.is_tensor)]
    if not named:
        raise SystemExit(f"the layer built by {builder} returned no tensor: {type(result).__name__}")
    return {"names": _write_outputs(out_npz, named), "paddle": paddle.__version__}


def static(prog_file: str, inputs_npz: str, out_npz: str, device: str) -> dict:
    import paddle

    paddle.enable_static()
    place = paddle.CPUPlace() if device == "cpu" else paddle.CUDAPlace(int(device.split(":")[1]))
    exe = paddle.static.Executor(place)
    prefix, ext = os.path.splitext(os.path.abspath(prog_file))  # relative names are misread
    program, feed_names, fetch_targets = paddle.static.load_inference_model(
        prefix, exe, model_filename=prefix + ext, params_filename=prefix + ".pdiparams")
    _, inputs = _read_inputs(inputs_npz)
    outputs = exe.run(program, feed={n: inputs[n] for n in feed_names}, fetch_list=fetch_targets)
    if ext == ".pdmodel":  # the names a predictor gives the outputs: the fetched variables'
        names = [t.name for t in fetch_targets]
    else:  # or the PIR fetch ops'
        names = [op.attrs().get("name") for op in program.global_block().ops if op.name() == "pd_op.fetch"]
        if len(names) != len(fetch_targets) or not all(names):
            names = [f"output_{i}" for i in range(len(fetch_targets))]
    return {"names": _write_outputs(out_npz, list(zip(names, outputs))), "paddle": paddle.__version__}


def main(argv) -> int:
    return run_command(argv, {
        "dygraph": lambda builder, kwargs, *rest: dygraph(builder, json.loads(kwargs), *rest),
        "static": static,
    })


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
