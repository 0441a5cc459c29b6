"""Op-level blame: which op types to keep out of the mode's low precision or engine. A mode's
knob is the toggle that takes op type names; the ladder searches the names it offers."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import List, Optional, Sequence

from ...modes.run_modes import BF16, FP16, GPU, ONEDNN, PADDLE, RunModeSpec

# TensorRT with dynamic shape renames these matrix_multiply before its teller reads the list.
TRT_MATRIX_MULTIPLY = "matrix_multiply"
TRT_RENAMED_TO_MATRIX_MULTIPLY = ("mul", "matmul", "matmul_v2")

# Op types that are no computation of their own: keeping them out changes nothing.
NOT_COMPUTING = {"feed", "fetch", "data", "shadow_output", "parameter", "full", "full_int_array",
                 "assign_value", "builtin.parameter", "builtin.shadow_output"}

# The PIR bf16 placement pass reads no set_bfloat16_op (Paddle 3.3.1).
PIR_BF16_NOTE = ("op types cannot be kept in fp32 on a PIR program: Paddle's PIR bf16 "
                 "placement ignores set_bfloat16_op")


@dataclass(frozen=True)
class OpKnob:
    """How a mode keeps op types out: the toggle's field, and words for the verdict."""
    field: str  # the RunModeSpec field that takes op type names
    kept: str  # "kept in fp32", "kept out of TensorRT"
    call: str  # the Config call the toggle makes, for the rung's text

    def names(self, op_types: Sequence[str], spec: RunModeSpec) -> List[str]:
        """The op types the program runs, as the knob's Config call spells them, in order."""
        dynamic = spec.run_mode.tensorrt and spec.dynamic_shape is not None
        out: List[str] = []
        for op in op_types:
            name = plain_op_type(op)
            if dynamic and name in TRT_RENAMED_TO_MATRIX_MULTIPLY:
                name = TRT_MATRIX_MULTIPLY
            if name and name not in NOT_COMPUTING and name not in out \
                    and name not in getattr(spec, self.field):
                out.append(name)
        return out

    def vary(self, spec: RunModeSpec, names: Sequence[str]) -> RunModeSpec:
        return replace(spec, **{self.field: tuple(getattr(spec, self.field)) + tuple(names)})


def plain_op_type(op_type: str) -> str:
    """``pd_op.conv2d`` / ``onednn_op.fused_conv2d:out`` -> the op type a Config call names."""
    name = op_type.rsplit(":", 1)[0]
    return name.split(".", 1)[1] if name.startswith(("pd_op.", "onednn_op.", "cinn_op.")) else name


def knob_for(spec: RunModeSpec, program_format: str) -> "tuple[Optional[OpKnob], str]":
    """(the knob of this mode, why there is none)."""
    mode = spec.run_mode
    if mode.tensorrt:
        return OpKnob("disable_trt_ops", "kept out of TensorRT", "exp_disable_tensorrt_ops"), ""
    if mode.engine == ONEDNN and mode.precision == BF16:
        if program_format == "pir":
            return None, PIR_BF16_NOTE
        return OpKnob("fp32_ops", "kept in fp32", "set_bfloat16_op (every other op type)"), ""
    if mode.device == GPU and mode.engine == PADDLE and mode.precision == FP16:
        return OpKnob("fp32_ops", "kept in fp32", "exp_disable_mixed_precision_ops"), ""
    return None, f"{spec.mode} has no op-level switch"
