"""verdict/evidence.py: evidence that a run mode really ran, and the rules it is judged by.

The GPU rules are judged on recorded hook streams: (op type, tensor name, dtype, layout) per
hook call, as Paddle's output hook reports them; the CPU ones also for real in
tests/integration/test_evidence.py.
"""
from __future__ import annotations

import json

from pytest_paddle_infer.modes.run_modes import NO_FUSED_OPS, RUN_MODES
from pytest_paddle_infer.verdict.evidence import Evidence, broken_rules, is_fused, tally

F32, F16 = "paddle.float32", "paddle.float16"

# Recorded GPU streams (legacy program, as Paddle-TRT runs them): a TensorRT subgraph op with
# its engine outputs, Paddle's GPU kernels around it.
TRT_STREAM = [
    ("feed", "x", F32, "NCHW"),
    ("tensorrt_engine", "relu_3.tmp_0_subgraph_1", F32, "NCHW"),
    ("pool2d", "pool2d_0.tmp_0", F32, "NCHW"),
    ("flatten_contiguous_range", "flatten_0.tmp_0", F32, "NCHW"),
    ("fc", "linear_0.tmp_1", F32, "NCHW"),
]
NO_TRT_STREAM = [  # enable_tensorrt_engine on a PIR program: plain GPU kernels, no engine
    ("pd_op.fused_conv2d_add_act:0", "0x1_inner_var_3", F32, "NCHW"),
    ("pd_op.fused_conv2d_add_act:1", "0x1_inner_var_4", F32, "NCHW"),
    ("pd_op.pool2d:2", "0x1_inner_var_5", F32, "NCHW"),
    ("pd_op.fc:3", "0x1_inner_var_6", F32, "NCHW"),
]
FP16_STREAM = [  # gpu_fp16: auto mixed precision casts in and out
    ("pd_op.cast:0", "0x1_inner_var_1", F16, "NCHW"),
    ("pd_op.fused_conv2d_add_act:1", "0x1_inner_var_2", F16, "NCHW"),
    ("pd_op.cast:2", "0x1_inner_var_3", F32, "NCHW"),
]


def candidate(mode: str, *runs) -> Evidence:
    return tally(mode, "/m/inference.pdmodel", "legacy", *runs, requires=RUN_MODES[mode].shows)


def test_trt_fp16_stream_without_engine_fails_with_the_evidence():
    ev = candidate("trt_fp16", NO_TRT_STREAM)
    [message] = broken_rules("trt_fp16", ev)
    assert message.startswith("trt_fp16: no tensorrt_engine op ran: TensorRT took no part in this model")
    assert "pd_op.fused_conv2d_add_act x2" in message


def test_trt_stream_with_an_engine_passes():
    for mode in ("trt_fp32", "trt_fp16", "trt_int8"):
        ev = candidate(mode, TRT_STREAM)
        assert ev.engines == 1 and broken_rules(mode, ev) == []


def test_gpu_fp16_needs_float16_tensors():
    assert broken_rules("gpu_fp16", candidate("gpu_fp16", FP16_STREAM)) == []
    [message] = broken_rules("gpu_fp16", candidate("gpu_fp16", NO_TRT_STREAM))
    assert message == ("gpu_fp16: no float16 tensor ran: the model computed in full precision "
                       "(tensors float32 x4 only)")


def test_onednn_modes_need_their_dtypes():
    bf16 = [("onednn_op.fused_conv2d:0", "a", "paddle.bfloat16", "ONEDNN")]
    int8 = [("onednn_op.fused_conv2d:0", "a", "paddle.uint8", "ONEDNN")]
    fp32 = [("onednn_op.fused_conv2d:0", "a", F32, "ONEDNN")]
    assert broken_rules("onednn_bf16", candidate("onednn_bf16", bf16)) == []
    assert broken_rules("onednn_int8", candidate("onednn_int8", int8)) == []
    assert "no bfloat16 tensor ran" in broken_rules("onednn_bf16", candidate("onednn_bf16", fp32))[0]
    assert "no int8 kernel ran" in broken_rules("onednn_int8", candidate("onednn_int8", fp32))[0]
    assert candidate("onednn_bf16", bf16).onednn_tensors == 1


def test_an_empty_stream_shows_nothing():
    """3.x GPU: a predictor's first run calls no hook; a second run that also calls none
    cannot show that TensorRT ran."""
    ev = candidate("trt_fp16", [], [])
    assert not ev.seen and ev.runs == 2
    assert broken_rules("trt_fp16", ev) == [
        "trt_fp16: the output hooks saw no op in 2 run(s): nothing shows a tensorrt_engine op"]
    assert broken_rules("cpu_fp32", candidate("cpu_fp32", [])) == []  # nothing required


def test_ops_are_counted_per_op():
    pir = tally("c", "p.json", "pir", [("pd_op.batch_norm_:1", n, F32, "NCHW") for n in "abc"]
                + [("pd_op.batch_norm_:4", "d", F32, "NCHW"), ("pd_op.relu_:5", "e", F32, "NCHW")])
    assert pir.ops == {"pd_op.batch_norm_": 2, "pd_op.relu_": 1} and pir.tensors == 5
    legacy = tally("c", "p.pdmodel", "legacy", [("batch_norm", n, F32, "NCHW") for n in "abcde"]
                   + [("relu", "r", F32, "NCHW"), ("conv2d", "c", F32, "NCHW")])
    assert legacy.ops == {"batch_norm": 1, "relu": 1, "conv2d": 1}


def test_fused_ops():
    assert all(map(is_fused, ["onednn_op.fused_conv2d:3", "pd_op.fc", "fc", "conv2d_fusion",
                              "pd_op.fused_conv2d_add_act", "fusion_gru", "tensorrt_engine",
                              "multihead_matmul"]))
    assert not any(map(is_fused, ["pd_op.conv2d:0", "onednn_op.conv2d", "batch_norm", "pd_op.matmul"]))


def test_a_baseline_that_fused_fails_its_recipe():
    fused = tally("baseline", "m/inference.json", "pir",
                  [("onednn_op.fused_conv2d:0", "a", F32, "ONEDNN"), ("onednn_op.fc:1", "b", F32, "ONEDNN")],
                  requires=(NO_FUSED_OPS,))
    assert broken_rules("baseline", fused) == [
        "baseline: its recipe turns optimizations off, yet fused ops ran: onednn_op.fused_conv2d, "
        "onednn_op.fc (pir program)"]
    plain = tally("baseline", "m/inference.json", "pir", [("pd_op.conv2d:0", "a", F32, "NCHW")],
                  requires=(NO_FUSED_OPS,))
    assert broken_rules("baseline", plain) == []


def test_evidence_round_trips_through_a_dict():
    ev = candidate("trt_fp16", TRT_STREAM)
    assert Evidence.from_dict(json.loads(json.dumps(ev.to_dict()))) == ev


def test_the_cpu_kernel_family_is_part_of_the_evidence():
    ev = candidate("onednn_int8", [("onednn_op.quantize:1", "q", "paddle.uint8", "ONEDNN")])
    ev.kernels = "int8 kernels: avx2 without VNNI (AMD EPYC; slower, and larger differences than with VNNI)"
    assert ev.text().endswith("; tensorrt_engine ops: 0; int8 kernels: avx2 without VNNI (AMD EPYC; "
                              "slower, and larger differences than with VNNI)")
    assert Evidence.from_dict(json.loads(json.dumps(ev.to_dict()))) == ev


def test_trt_below_fp32_notes_the_compute_ops_left_to_paddle():
    """One tiny engine with every convolution in Paddle passed as trt_fp16 with nothing said:
    the convolutions and matrix products that ran outside TensorRT are noted."""
    from pytest_paddle_infer.verdict.evidence import converted_program, coverage_note

    tiny = [("feed", "x", F32, "NCHW"), ("conv2d", "conv2d_0.tmp_0", F32, "NCHW"),
            ("conv2d", "conv2d_1.tmp_0", F32, "NCHW"), ("relu", "r", F32, "NCHW"),
            ("conv2d", "conv2d_2.tmp_0", F32, "NCHW"),
            ("tensorrt_engine", "pool2d_0.tmp_0_subgraph_1", F32, "NCHW"),
            ("fc", "linear_0.tmp_1", F32, "NCHW")]
    ev = candidate("trt_fp16", tiny)
    assert broken_rules("trt_fp16", ev) == []  # an engine ran: the rule holds
    assert coverage_note(ev, "fp16") == (
        "TensorRT coverage: 1 tensorrt_engine op(s); convolutions and matrix products left to "
        "Paddle's fp32 kernels, not fp16: conv2d x2, fc")
    assert coverage_note(candidate("trt_fp16", TRT_STREAM), "fp16") == (
        "TensorRT coverage: 1 tensorrt_engine op(s); convolutions and matrix products left to "
        "Paddle's fp32 kernels, not fp16: fc")
    pir = candidate("trt_int8", [])
    pir.converted = converted_program("t.json", {"conv2d": 4, "matmul": 1}, {"tensorrt_engine": 1, "matmul": 1})
    assert coverage_note(pir, "int8", {"tensorrt_engine": 1, "matmul": 1, "data": 1}) == (
        "TensorRT coverage: 1 tensorrt_engine op(s); convolutions and matrix products left to "
        "Paddle's fp32 kernels, not int8: matmul")
    assert coverage_note(pir, "int8", {"tensorrt_engine": 1, "data": 1}) == ""


# ---------------------------------------------------------------------------------------
# A program may ship fused ops itself (``paddle.incubate`` fused layers in NLP/LLM exports,
# PIR ``fused_*``/``fc`` ops): the baseline's "optimizations off, so no fused op" rule counts only
# the fused op types the program did not hold as loaded, i.e. what the passes made.
# ---------------------------------------------------------------------------------------


def test_a_fused_op_a_pass_made_still_fails_beside_a_shipped_one():
    from pytest_paddle_infer.verdict.evidence import shipped_fused

    stream = [("pd_op.fc:0", "a", "paddle.float32", "NCHW"),
              ("onednn_op.fused_conv2d:1", "b", "paddle.float32", "ONEDNN")]
    ev = tally("baseline", "m/inference.json", "pir", stream, requires=(NO_FUSED_OPS,))
    ev.shipped = shipped_fused({"fc": 1, "conv2d": 1, "relu": 2})
    assert broken_rules("baseline", ev) == [
        "baseline: its recipe turns optimizations off, yet fused ops ran: onednn_op.fused_conv2d "
        "(pir program; it ships fc itself, which is allowed)"]
    assert Evidence.from_dict(ev.to_dict()).shipped == ("fc",)
