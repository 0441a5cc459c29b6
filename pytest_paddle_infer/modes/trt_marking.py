"""How a TensorRT candidate exposes tensors for intermediate comparison (marked as engine
outputs, which stops TensorRT fusing across them), and what its engines recorded
(``engine_info_*.json``)."""
from __future__ import annotations

import glob
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence, Tuple, Union

from ..errors import OptionError
from .run_modes import Call, call

FUSION_WARNING = ("marking intermediate tensors as TensorRT outputs can change what TensorRT "
                  "fuses: the engine compared is not exactly the one that ships. Mark fewer "
                  "tensors (narrower --paddle-intermediates globs) to keep the engine close to the real one.")


# The TensorRT inspector, serialized: each engine writes engine_info_<key>.json (below)
INSPECTOR = call("enable_tensorrt_inspector", True)


def marking_calls(names: Sequence[str]) -> Tuple[Call, ...]:
    """The Config calls that expose ``names``, with the TensorRT inspector on."""
    # a tuple, not a list: recipes are hashable (predictor cache keys); pybind takes either
    return (INSPECTOR, call("mark_trt_engine_outputs", tuple(names)))


# Paddle's GetEngineInfo writes a JSON array, one element per engine layer: TensorRT's layer
# information (an object with Name, LayerType, Outputs with "Format/Datatype"; or the name
# alone). Engine tensors carry Paddle's ``_subgraph_<node id>`` suffix.
SUBGRAPH_SUFFIX = re.compile(r"_subgraph_\d+$")
PRECISION_WORDS = re.compile(r"\b(FP32|FP16|BF16|FP8|Int8|UInt8|Int32|Int64|Bool)\b", re.I)
PRECISION_NAMES = {w.lower(): w for w in ("FP32", "FP16", "BF16", "FP8", "Int8", "UInt8", "Int32",
                                          "Int64", "Bool")}


def program_name(engine_tensor: str) -> str:
    """``relu_3.tmp_0_subgraph_12`` -> ``relu_3.tmp_0``."""
    return SUBGRAPH_SUFFIX.sub("", engine_tensor)


@dataclass(frozen=True)
class EngineLayer:
    name: str
    type: str = ""
    outputs: Tuple[str, ...] = ()  # program tensor names (suffix stripped)
    precisions: Tuple[str, ...] = ()  # of its outputs: FP32, FP16, Int8, ...


def engine_info_files(directory: Union[str, Path]) -> List[Path]:
    """The engine_info files in an optim cache dir, and beside it (Paddle concatenates the dir's name)."""
    path = Path(directory)
    return sorted(set(path.glob("engine_info_*.json"))
                  | set(path.parent.glob(f"{glob.escape(path.name)}engine_info_*.json")))

def read_engine_info(path: Union[str, Path]) -> List[EngineLayer]:
    """The layers of one engine_info file; OptionError for a file that is not Paddle's array."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise OptionError(f"cannot read TensorRT engine info {path}: {e}") from None
    if not isinstance(data, list):
        raise OptionError(f"TensorRT engine info {path} is not a JSON array of layers "
                          f"(Paddle's GetEngineInfo writes one)")
    layers = []
    for item in data:
        if isinstance(item, str):
            layers.append(EngineLayer(item))
        elif isinstance(item, dict):
            outputs = [o for o in item.get("Outputs", ()) if isinstance(o, dict)]
            words = [w for o in outputs for w in PRECISION_WORDS.findall(str(o.get("Format/Datatype", "")))]
            layers.append(EngineLayer(str(item.get("Name", "")), str(item.get("LayerType", "")),
                                      tuple(program_name(str(o.get("Name", ""))) for o in outputs),
                                      tuple(dict.fromkeys(PRECISION_NAMES[w.lower()] for w in words))))
    return layers
def engine_precisions(layers: Sequence[EngineLayer]) -> Dict[str, int]:
    """Layers per output precision."""
    return dict(Counter(p for layer in layers for p in layer.precisions))
def engine_text(files: Sequence[Path]) -> str:
    """One line for the report: engines, layers and their output precisions."""
    layers = [layer for f in files for layer in read_engine_info(f)]
    precisions = engine_precisions(layers)
    shown = ", ".join(f"{p} x{n}" for p, n in precisions.items()) or "not recorded"
    return (f"TensorRT engine info: {len(files)} engine(s), {len(layers)} layers; "
            f"layer output precisions: {shown}")
def fresh_engine_info(directories: Sequence[Union[str, Path]], since: float) -> List[Path]:
    """engine_info files written at or after ``since`` (a time.time()) in ``directories``."""
    return sorted({p for d in directories for p in engine_info_files(d) if p.stat().st_mtime >= since - 1})
def int8_engine_problem(mode_name: str, files: Sequence[Path]) -> str:
    """An int8 engine without int8 layers; "" when some were built or nothing was recorded."""
    layers = [layer for f in files for layer in read_engine_info(f)]
    precisions = engine_precisions(layers)
    if not layers or not any(layer.precisions for layer in layers) or precisions.get("Int8"):
        return ""
    shown = ", ".join(f"{p} x{n}" for p, n in precisions.items())
    return (f"{mode_name}: no int8 layer in the TensorRT engine ({len(layers)} layers: {shown}): "
            f"the calibration table or the model's quantize scales did not reach TensorRT")
