"""Which tensors a TensorRT candidate should expose for intermediate comparison.

TensorRT fuses layers, so most intermediate tensors do not exist inside an engine. Paddle
can mark tensors as extra engine outputs (``mark_trt_engine_outputs``), but marking a
tensor stops TensorRT from fusing across it: the engine under test is then not the engine
that ships. Two ways keep the change small: the fused layers' own outputs, read from the
TensorRT inspector's ``engine_info_*.json`` in the optim cache dir, or a ``start``/``end``
range of baseline tensor names.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

from .errors import OptionError
from .run_modes import Call, call

FUSION_WARNING = ("marking intermediate tensors as TensorRT outputs can change what TensorRT "
                  "fuses: the engine compared is not exactly the one that ships. Mark fewer "
                  "tensors (the inspector's fused-layer outputs, or a start/end range) to keep "
                  "the engine close to the real one.")


def engine_info_files(optim_cache_dir: Path) -> List[Path]:
    """The inspector's JSON files; Paddle names them ``engine_info_<key>.json``."""
    return sorted(Path(optim_cache_dir).glob("**/engine_info_*.json"))


def fused_layer_outputs(info_file: Path) -> List[str]:
    """Output tensor names of the engine's layers, in engine order.

    The inspector writes ``{"Layers": [...]}``; with detailed profiling each layer is an
    object whose ``Outputs`` list holds ``{"Name": ...}``; with names-only verbosity a layer
    is a plain string and carries no output names.
    """
    try:
        data = json.loads(Path(info_file).read_text())
    except (OSError, ValueError) as e:
        raise OptionError(f"cannot read TensorRT inspector file {info_file}: {e}") from None
    names: List[str] = []
    for layer in data.get("Layers", []) if isinstance(data, dict) else []:
        if not isinstance(layer, dict):
            continue
        for output in layer.get("Outputs", []):
            name = output.get("Name") if isinstance(output, dict) else None
            if name and name not in names:
                names.append(name)
    return names


def names_in_range(ordered: Sequence[str], start: Optional[str], end: Optional[str]) -> List[str]:
    """Baseline names from ``start`` to ``end`` inclusive, in execution order."""
    def position(name: Optional[str], default: int) -> int:
        if name is None:
            return default
        try:
            return ordered.index(name)
        except ValueError:
            raise OptionError(f"TensorRT marking range: no tensor named {name!r} in the baseline "
                              f"(it has {len(ordered)} tensors, from {ordered[0]!r} to "
                              f"{ordered[-1]!r})" if ordered else
                              f"TensorRT marking range: no tensor named {name!r}: the baseline has none") from None

    first, last = position(start, 0), position(end, len(ordered) - 1)
    if first > last:
        raise OptionError(f"TensorRT marking range: {start!r} comes after {end!r} in execution order")
    return list(ordered[first:last + 1])


def comparable(names: Iterable[str], baseline_names: Sequence[str]) -> List[str]:
    """Only tensors the baseline also has can be compared; keep engine order."""
    known = set(baseline_names)
    return [n for n in names if n in known]


def marking_calls(names: Sequence[str]) -> Tuple[Call, ...]:
    """The Config calls that expose ``names`` and keep the inspector's record of the engine."""
    # a tuple, not a list: recipes are hashable (predictor cache keys); pybind takes either
    return (call("enable_tensorrt_inspector", True), call("mark_trt_engine_outputs", tuple(names)))
