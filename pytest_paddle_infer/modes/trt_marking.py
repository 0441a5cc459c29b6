"""How a TensorRT candidate exposes tensors for intermediate comparison.

TensorRT fuses layers, so most intermediate tensors do not exist inside an engine. Paddle
can mark tensors as extra engine outputs (``mark_trt_engine_outputs``), but marking a
tensor stops TensorRT from fusing across it: the engine under test is then not the engine
that ships. Selecting fewer tensors keeps the change small.
"""
from __future__ import annotations

from typing import Sequence, Tuple

from .run_modes import Call, call

FUSION_WARNING = ("marking intermediate tensors as TensorRT outputs can change what TensorRT "
                  "fuses: the engine compared is not exactly the one that ships. Mark fewer "
                  "tensors (narrower --paddle-intermediates globs) to keep the engine close to "
                  "the real one.")


def marking_calls(names: Sequence[str]) -> Tuple[Call, ...]:
    """The Config calls that expose ``names`` (with the TensorRT inspector on, which records
    the engine's layers in its log)."""
    # a tuple, not a list: recipes are hashable (predictor cache keys); pybind takes either
    return (call("enable_tensorrt_inspector", True), call("mark_trt_engine_outputs", tuple(names)))
