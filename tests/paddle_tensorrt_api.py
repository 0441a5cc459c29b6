"""``paddle.tensorrt.export``'s API per Paddle version, recorded from Paddle's source, and a
check of PIR TensorRT calls (pytest_paddle_infer/engine/pir_tensorrt.py) against it, the way
config_signatures.py checks Config calls against the installed bindings. The CPU wheel has no
``paddle.tensorrt``, so this table is the reference.

Sources:
- "3.0": Paddle Inference 3.0's "Paddle-TensorRT interface" page (Input's parameters, the four
  public names) and the TensorRTConfig parameter list that Paddle-Inference-Demo PR #560 edits
  (inputs .. workspace_size); ``use_cuda_graph`` came with Paddle PR #71982 (2025-03-31, after
  the 3.0 branch). PrecisionMode's members from export.py at commit 02a5e4e.
- "newest": python/paddle/tensorrt/export.py at commit 7357bc7 (the newest stored), which adds
  ``use_cuda_graph`` and ``refit_params_path``. The 3.1, 3.2 and 3.3 tags could not be read
  one by one (the repository snapshot is over the size that can be fetched here); the newest
  source stands for them.
Uncertain: ``refit_params_path`` is in export.py at 02a5e4e (before ``use_cuda_graph``) but not
in the 3.0 docs' list; whether 3.0 has it is not known, and the plan does not use it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

from pytest_paddle_infer.engine.pir_tensorrt import Items, Made, Member, TrtCall


@dataclass(frozen=True)
class TrtApi:
    source: str
    classes: Mapping[str, Tuple[str, ...]]  # constructor parameters, in order
    required: Mapping[str, Tuple[str, ...]]  # constructor parameters without a default
    fields: Mapping[str, Tuple[str, ...]]  # attributes __init__ sets
    functions: Mapping[str, Tuple[str, ...]]
    enums: Mapping[str, Tuple[str, ...]]


INPUT_PARAMS = ("warmup_data", "min_input_shape", "max_input_shape", "optim_input_shape",
                "input_data_type", "input_range", "name")
CONFIG_3_0 = ("inputs", "min_subgraph_size", "save_model_dir", "disable_ops", "precision_mode",
              "ops_run_float", "optimization_level", "disable_passes", "workspace_size")
CONFIG_NEWEST = CONFIG_3_0 + ("use_cuda_graph", "refit_params_path")
PRECISION_MODE = ("FP32", "FP16", "BF16", "INT8")


def _api(source: str, config: Tuple[str, ...]) -> TrtApi:
    return TrtApi(
        source,
        classes={"Input": INPUT_PARAMS, "TensorRTConfig": config},
        required={"Input": (), "TensorRTConfig": ("inputs",)},
        fields={"Input": INPUT_PARAMS, "TensorRTConfig": config},
        functions={"convert": ("model_path", "config")},
        enums={"PrecisionMode": PRECISION_MODE})


API: Dict[str, TrtApi] = {
    "3.0": _api("Paddle Inference 3.0 docs; Paddle-Inference-Demo PR #560", CONFIG_3_0),
    "newest": _api("python/paddle/tensorrt/export.py @ 7357bc7", CONFIG_NEWEST),
}


def check_trt_calls(calls: Sequence[TrtCall], version: str) -> List[str]:
    """What in ``calls`` the recorded API of ``version`` does not have; [] when all fit."""
    api = API[version]
    problems: List[str] = []
    made: Dict[str, int] = {}

    def values(call: TrtCall):
        for v in list(call.args) + [v for _, v in call.kwargs]:
            yield from (v if isinstance(v, Items) else (v,))

    for c in calls:
        for v in values(c):
            if isinstance(v, Member) and v.name not in api.enums.get(v.enum, ()):
                problems.append(f"{c}: {v!r} is not a member of {v.enum} in {version} "
                                f"({', '.join(api.enums.get(v.enum, ())) or 'no such enum'})")
            if isinstance(v, Made) and made.get(v.name, 0) <= v.index:
                problems.append(f"{c}: {v!r} is used before it is made")
        if c.kind == "new":
            params = api.classes.get(c.name)
            if params is None:
                problems.append(f"{c}: no class {c.name} in {version}")
                continue
            names = [k for k, _ in c.kwargs]
            unknown = [k for k in names if k not in params]
            missing = [k for k in api.required[c.name][len(c.args):] if k not in names]
            if unknown or missing or len(c.args) > len(params):
                problems.append(f"{c}: {c.name}({', '.join(params)}) in {version}: unknown "
                                f"{unknown}, missing {missing}")
            made[c.name] = made.get(c.name, 0) + 1
        elif c.kind == "set":
            if not made.get("TensorRTConfig"):
                problems.append(f"{c}: set before a TensorRTConfig is made")
            if c.name not in api.fields["TensorRTConfig"] and not c.optional:
                problems.append(f"{c}: TensorRTConfig has no field {c.name!r} in {version} "
                                f"(fields: {', '.join(api.fields['TensorRTConfig'])})")
        elif c.kind == "call":
            params = api.functions.get(c.name)
            if params is None:
                problems.append(f"{c}: no function {c.name} in {version}")
            elif len(c.args) + len(c.kwargs) != len(params) or \
                    any(k not in params for k, _ in c.kwargs):
                problems.append(f"{c}: {c.name}({', '.join(params)}) in {version}")
        else:
            problems.append(f"{c}: unknown kind {c.kind!r}")
    return problems
