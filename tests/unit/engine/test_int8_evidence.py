"""execute/int8_evidence.py: onednn_int8 needs a quantized program and must show int8 tensors."""
import json

import pytest

from pytest_paddle_infer.engine.int8_evidence import (DtypeTally, int8_kernels_text, int8_note, no_int8_problem, not_quantized_reason, program_op_types, quantize_ops, wants_int8_kernels)
from pytest_paddle_infer.modes.capabilities import Capabilities
from pytest_paddle_infer.modes.run_modes import RUN_MODES


class FakeTensor:
    def __init__(self, dtype):
        self.dtype = dtype


def pir_program(tmp_path, ops):
    """A PIR .json program in the layout paddle.jit.save writes: ops named "<dialect>.<op>"."""
    body = {"program": {"regions": [{"#": "region_0", "blocks": [
        {"#": "block_0", "args": [], "ops": [{"#": "p", "A": []}] + [{"#": f"1.{op}"} for op in ops]}]}]}}
    path = tmp_path / "inference.json"
    path.write_text(json.dumps({"base_code": {}, **body}))
    return str(path)


def test_only_onednn_int8_wants_int8_kernels():
    assert [m for m, mode in RUN_MODES.items() if wants_int8_kernels(mode)] == ["onednn_int8"]


def test_a_float_program_gives_the_skip_reason(tmp_path):
    prog = pir_program(tmp_path, ["data", "conv2d", "relu", "fetch"])
    assert program_op_types(prog) == {"p": 1, "data": 1, "conv2d": 1, "relu": 1, "fetch": 1}
    assert not_quantized_reason("tiny_cnn", prog, "onednn_int8").startswith(
        "tiny_cnn carries no quantize/dequantize ops: onednn_int8 needs a quantized model")


def test_a_quantized_program_is_not_skipped(tmp_path):
    prog = pir_program(tmp_path, ["data", "quantize_linear", "dequantize_linear",
                                  "dequantize_linear", "conv2d", "fetch"])
    assert quantize_ops(program_op_types(prog)) == {"quantize_linear": 1, "dequantize_linear": 2}
    assert not_quantized_reason("q", prog, "onednn_int8") is None


def test_int8_tensors_are_the_evidence():
    seen = []
    tally = DtypeTally(lambda *call: seen.append(call[:2]))  # passes every call on
    for op, dtype in [("quantize", "paddle.int8"), ("fused_conv2d", "paddle.uint8"),
                      ("onednn_op.fc:3", "paddle.float32")]:
        tally(op, "t", FakeTensor(dtype))
    assert tally.int8_tensors == 2 and len(seen) == 3
    assert no_int8_problem("onednn_int8", tally, {"quantize_linear": 5}) is None


def test_no_int8_tensor_fails_with_what_ran():
    tally = DtypeTally()
    for op in ("conv2d", "quantize_linear", "dequantize_linear"):
        tally(op, "t", FakeTensor("paddle.float32"))
    problem = no_int8_problem("onednn_int8", tally, {"dequantize_linear": 10, "quantize_linear": 5})
    assert problem == (
        "onednn_int8: no int8 kernel ran: the candidate's output hooks saw no int8/uint8 tensor "
        "(tensors float32 x3; ops conv2d, dequantize_linear, quantize_linear), although the "
        "program carries dequantize_linear x10, quantize_linear x5")


def test_the_note_names_the_int8_kernel_family_and_whether_it_has_vnni():
    def caps(cpu, family):
        return Capabilities("paddlepaddle", "3.3.1", "", False, 0, (0,), (0,), True, cpu=cpu,
                            int8_kernels=family)

    tally = DtypeTally()
    tally("quantize", "t", FakeTensor("paddle.int8"))
    without = int8_kernels_text(caps("AMD EPYC", "avx2 without VNNI"))
    assert int8_note(tally, without) == (
        "int8 evidence: the candidate's output hooks saw tensors int8 x1; ops quantize; int8 "
        "kernels: avx2 without VNNI (AMD EPYC; slower, and larger differences than with VNNI)")
    assert int8_kernels_text(caps("Intel Xeon", "avx512 VNNI")) == "int8 kernels: avx512 VNNI (Intel Xeon)"
    assert int8_kernels_text(caps("", None)) == ""  # not known: nothing said
