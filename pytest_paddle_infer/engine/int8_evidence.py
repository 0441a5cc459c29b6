"""onednn_int8 checks something only on a quantized model (on a float program it runs fp32
kernels), and only if int8 kernels ran: the hooks then see ``int8``/``uint8`` tensors."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Dict, Optional

from ..modes.run_modes import INT8, ONEDNN

QUANTIZE_OPS = frozenset({
    "quantize_linear", "dequantize_linear",  # paddle.quantization, PaddleSlim's onnx format
    "fake_quantize_abs_max", "fake_quantize_range_abs_max", "fake_quantize_moving_average_abs_max",
    "fake_channel_wise_quantize_abs_max", "fake_quantize_dequantize_abs_max",
    "fake_quantize_dequantize_moving_average_abs_max", "fake_channel_wise_quantize_dequantize_abs_max",
    "fake_dequantize_max_abs", "fake_channel_wise_dequantize_max_abs"})
INT8_DTYPES = ("int8", "uint8")

_op_types: Dict[str, Dict[str, int]] = {}  # per process, by program file and its mtime


def wants_int8_kernels(run_mode) -> bool:
    """oneDNN int8 (``onednn_int8``), by the mode's traits."""
    return run_mode.engine == ONEDNN and run_mode.precision == INT8


def program_op_types(prog_file: str) -> Dict[str, int]:
    """Op type -> count over every block of a legacy ``.pdmodel`` or PIR ``.json`` program."""
    path = Path(prog_file)
    key = f"{path.resolve()}:{path.stat().st_mtime_ns}"
    if key not in _op_types:
        counts: Counter = Counter()
        if path.suffix == ".json":
            _pir_ops(json.loads(path.read_text()), counts)
        else:
            from paddle.base import core

            desc = core.ProgramDesc(path.read_bytes())
            for b in range(desc.num_blocks()):
                block = desc.block(b)
                counts.update(block.op(i).type() for i in range(block.op_size()))
        _op_types[key] = dict(counts)
    return _op_types[key]


def _pir_ops(node, counts: Counter) -> None:
    if isinstance(node, dict):
        for op in node.get("ops", ()) if isinstance(node.get("ops"), list) else ():
            name = op.get("#") if isinstance(op, dict) else None
            if isinstance(name, str):
                counts[name.split(".", 1)[-1]] += 1  # "1.quantize_linear" -> quantize_linear
        for value in node.values():
            _pir_ops(value, counts)
    elif isinstance(node, list):
        for value in node:
            _pir_ops(value, counts)


def quantize_ops(op_types: Dict[str, int]) -> Dict[str, int]:
    return {t: n for t, n in op_types.items() if t in QUANTIZE_OPS}


def not_quantized_reason(model_name: str, prog_file: str, mode_name: str) -> Optional[str]:
    """Why ``mode_name`` cannot check this model (the skip reason), or None."""
    if quantize_ops(program_op_types(prog_file)):
        return None
    return (f"{model_name} carries no quantize/dequantize ops: {mode_name} needs a quantized "
            f"model (e.g. paddle.quantization PTQ/QAT, PaddleSlim; the zoo's tiny_cnn_int8, "
            f"resnet18_int8)")


class DtypeTally:
    """A hook sink counting the tensor dtypes and op types a run shows, then calling ``then``."""
    def __init__(self, then=None):
        self.then = then
        self.dtypes: Counter = Counter()
        self.ops: Counter = Counter()

    def __call__(self, op_type: str, name: str, tensor) -> None:
        self.dtypes[str(getattr(tensor, "dtype", "")).rsplit(".", 1)[-1].lower()] += 1
        self.ops[op_type.split(":", 1)[0].rsplit(".", 1)[-1]] += 1
        if self.then is not None:
            self.then(op_type, name, tensor)

    @property
    def int8_tensors(self) -> int:
        return sum(self.dtypes[d] for d in INT8_DTYPES)

    def text(self) -> str:
        dtypes = ", ".join(f"{d} x{n}" for d, n in self.dtypes.most_common()) or "no tensor"
        ops = ", ".join(sorted(self.ops)) or "none"
        return f"tensors {dtypes}; ops {ops}"


def no_int8_problem(mode_name: str, tally: DtypeTally, quantized: Dict[str, int]) -> Optional[str]:
    """The failure of a quantized model's case whose candidate ran no int8 kernel, or None."""
    if tally.int8_tensors:
        return None
    carried = ", ".join(f"{t} x{n}" for t, n in sorted(quantized.items()))
    return (f"{mode_name}: no int8 kernel ran: the candidate's output hooks saw no int8/uint8 "
            f"tensor ({tally.text()}), although the program carries {carried}")


def int8_kernels_text(caps) -> str:
    """The int8 kernel family the candidate ran on, with the CPU, for its evidence; "" if unknown."""
    if not caps.int8_kernels:
        return ""
    slower = "" if caps.vnni else "; slower, and larger differences than with VNNI"
    return f"int8 kernels: {caps.int8_kernels} ({caps.cpu or 'CPU model unknown'}{slower})"


def int8_note(tally: DtypeTally, kernels: str = "") -> str:
    return (f"int8 evidence: the candidate's output hooks saw {tally.text()}"
            + (f"; {kernels}" if kernels else ""))
