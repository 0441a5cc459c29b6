"""Evidence that a run mode really ran (verdict/evidence.py, execute/recording.py).

The GPU rules are judged on recorded hook streams: (op type, tensor name, dtype, layout) per
hook call, as Paddle's output hook reports them; the CPU ones also for real below and in
tests/integration/test_evidence.py.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import config_signatures as sg
from pytest_paddle_infer.engine.capture import HookRouter
from pytest_paddle_infer.engine.recording import recorded
from pytest_paddle_infer.engine.runner import judge_evidence, shared_outputs
from pytest_paddle_infer.engine.localize.ladder import localize
from pytest_paddle_infer.modes import run_modes as rm
from pytest_paddle_infer.modes.run_modes import (BF16_TENSORS, FP16_TENSORS, INT8_KERNELS,
                                                 NO_FUSED_OPS, RUN_MODES, TRT_ENGINE_OP,
                                                 RunModeSpec, baseline_recipe, passes_off,
                                                 recipe_shows)
from pytest_paddle_infer.report.case_files import case_summary
from pytest_paddle_infer.report.text import failure_message, properties
from pytest_paddle_infer.verdict.evidence import (RULES, Evidence, Tally, broken_rules,
                                                  is_fused, tally)
from pytest_paddle_infer.protocol import CaseResult

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


def test_the_mode_table_states_what_each_mode_shows():
    shows = {name: mode.shows for name, mode in RUN_MODES.items()}
    assert shows == {"cpu_fp32": (), "onednn_fp32": (), "onednn_bf16": (BF16_TENSORS,),
                     "onednn_int8": (INT8_KERNELS,), "gpu_fp32": (), "gpu_fp16": (FP16_TENSORS,),
                     "trt_fp32": (TRT_ENGINE_OP,), "trt_fp16": (TRT_ENGINE_OP,),
                     "trt_int8": (TRT_ENGINE_OP,)}
    assert all(r in RULES for mode in RUN_MODES.values() for r in mode.shows)


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


# -- baselines: optimizations really off on PIR programs ------------------------------------


def test_pir_baselines_turn_their_passes_off():
    assert [str(c) for c in baseline_recipe("cpu", 2, 0, "pir")] == [
        "disable_mkldnn()", "switch_ir_optim(False)", "enable_custom_passes([], True)",
        "set_cpu_math_library_num_threads(2)"]
    assert [str(c) for c in baseline_recipe("gpu", None, 1, "pir")] == [
        "enable_use_gpu(256, 1, PrecisionType.Float32)", "switch_ir_optim(False)",
        "enable_custom_passes([], True)"]
    # legacy programs (and Paddle 2.6, which has no PIR) keep switch_ir_optim(False) alone
    assert [str(c) for c in baseline_recipe("cpu", None, 0, "legacy")] == [
        "disable_mkldnn()", "switch_ir_optim(False)"]
    assert [str(c) for c in passes_off("pir", rm.ONEDNN)] == [
        "enable_custom_passes(['onednn_placement_pass'], True)"]
    for device in ("cpu", "gpu"):
        assert sg.check_recipe(baseline_recipe(device, 2, 1, "pir")) == []
    assert recipe_shows(baseline_recipe("cpu", None, 0, "pir")) == (NO_FUSED_OPS,)
    assert recipe_shows(RUN_MODES["onednn_fp32"].calls) == ()


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


# -- into the result and the reports --------------------------------------------------------


def _result(recipe: str = "enable_use_gpu(...); enable_tensorrt_engine(...)") -> CaseResult:
    return CaseResult("m[1x3-trt_fp16]", [], "auto: ...", recipe, "d")


def test_judged_evidence_fails_the_case_with_the_message_and_reports_it():
    result = _result()
    baseline = tally("baseline", "/m/inference.pdmodel", "legacy",
                     [("conv2d", "c", F32, "NCHW")], requires=(NO_FUSED_OPS,))
    judge_evidence(result, candidate("trt_fp16", NO_TRT_STREAM), baseline.to_dict())
    assert not result.passed and result.failures == []
    assert result.problems == [broken_rules("trt_fp16", candidate("trt_fp16", NO_TRT_STREAM))[0]]
    message = failure_message(result)
    assert message.splitlines()[0].startswith(
        "m[1x3-trt_fp16]: trt_fp16: no tensorrt_engine op ran: TensorRT took no part in this model")
    assert "ran: trt_fp16: legacy inference.pdmodel: 4 ops of 3 types" in message
    assert "ran: baseline: legacy inference.pdmodel: 1 ops of 1 types (conv2d)" in message
    props = dict(properties(result))
    assert props["paddle_evidence"].startswith("trt_fp16: legacy inference.pdmodel:")
    assert " | baseline: legacy inference.pdmodel:" in props["paddle_evidence"]
    summary = json.loads(json.dumps(case_summary(result)))  # JSON as summary.json holds it
    assert summary["evidence"]["candidate"]["tensorrt_engine_ops"] == 0
    assert summary["evidence"]["baseline"]["ops"] == {"conv2d": 1}
    assert summary["problems"] == result.problems


def test_evidence_that_shows_its_mode_passes():
    result = _result()
    judge_evidence(result, candidate("trt_fp16", TRT_STREAM), None)
    assert result.passed and result.evidence["candidate"]["tensorrt_engine_ops"] == 1
    assert "baseline" not in result.evidence  # a dygraph, static or golden baseline


def test_a_problem_said_already_is_not_repeated():
    """onednn_int8's own check (int8_evidence.py) may have said it first."""
    result = _result("enable_mkldnn(); enable_mkldnn_int8()")
    result.problems.append("onednn_int8: no int8 kernel ran: the candidate's output hooks saw ...")
    judge_evidence(result, candidate("onednn_int8", [("conv2d", "c", F32, "NCHW")]), None)
    assert len(result.problems) == 1


def test_pir_candidate_with_ir_optim_off_notes_its_fusions():
    result = _result("enable_mkldnn(); switch_ir_optim(False)")
    fused = tally("onednn_fp32+no_ir_optim", "m/inference.json", "pir",
                  [("onednn_op.fused_conv2d:0", "a", F32, "ONEDNN")])
    judge_evidence(result, fused, None)
    assert result.passed
    assert result.notes == ["switch_ir_optim(False) does not turn a PIR program's passes off: "
                            "fused ops ran (onednn_op.fused_conv2d)"]


def test_evidence_round_trips_through_a_dict():
    ev = candidate("trt_fp16", TRT_STREAM)
    assert Evidence.from_dict(json.loads(json.dumps(ev.to_dict()))) == ev


def test_the_cpu_kernel_family_is_part_of_the_evidence():
    ev = candidate("onednn_int8", [("onednn_op.quantize:1", "q", "paddle.uint8", "ONEDNN")])
    ev.kernels = "int8 kernels: avx2 without VNNI (AMD EPYC; slower, and larger differences than with VNNI)"
    assert ev.text().endswith("; tensorrt_engine ops: 0; int8 kernels: avx2 without VNNI (AMD EPYC; "
                              "slower, and larger differences than with VNNI)")
    assert Evidence.from_dict(json.loads(json.dumps(ev.to_dict()))) == ev


# -- recording --------------------------------------------------------------------------------


class FakeTensor:
    dtype, layout = "paddle.float16", "NCHW"


class FakePredictor:
    """Calls no hook on its first run, like Paddle 3.x's new executor on GPU."""

    def __init__(self):
        self.runs = 0
        self.hooks = []

    def register_output_hook(self, fn):
        self.hooks.append(fn)

    def run(self):
        self.runs += 1
        if self.runs > 1:
            for fn in self.hooks:
                fn("pd_op.conv2d:0", "t", FakeTensor())
        return self.runs


def test_a_run_whose_hooks_saw_nothing_runs_once_more():
    predictor = FakePredictor()
    router = HookRouter(predictor)
    seen = []
    router.sink = lambda *call: seen.append(call[0])
    shown = Tally("gpu_fp16", "m.pdmodel", "legacy", RUN_MODES["gpu_fp16"].shows)
    assert recorded(router, shown, predictor.run)() == 1  # the first run's result
    assert predictor.runs == 2 and shown.evidence.runs == 2 and seen == ["pd_op.conv2d:0"]
    assert shown.evidence.dtypes == {"float16": 1} and broken_rules("gpu_fp16", shown.evidence) == []
    assert router.recorder is None
    recorded(router, Tally("c", "m", "legacy"), predictor.run)()
    assert predictor.runs == 3  # hooks seen: one run


def test_shared_baselines_carry_their_evidence(tmp_path):
    outputs = {"out": np.arange(3.0)}
    written = {}

    def run():
        written["evidence"] = {"role": "baseline", "ops": {"pd_op.conv2d": 1}}
        return outputs

    shared_outputs(tmp_path, ("p", (), "d"), run, written)
    read: dict = {}
    again = shared_outputs(tmp_path, ("p", (), "d"), lambda: pytest.fail("computed twice"), read)
    assert read == written and list(again) == ["out"]


def test_the_ladder_turns_pir_passes_off_in_its_first_rungs():
    calls = []

    def trial(spec, extra=()):
        calls.append((spec.label, tuple(str(c) for c in extra)))
        return True, 0.0, ""

    off = passes_off("pir", rm.ONEDNN)
    loc = localize(RunModeSpec("onednn_bf16"), trial, lambda: [], lambda: [], off)
    extra = ("enable_custom_passes(['onednn_placement_pass'], True)",)
    assert calls == [("onednn_bf16+no_ir_optim", extra),
                     ("onednn_bf16+no_ir_optim+memory_optim", extra), ("onednn_bf16", ())]
    assert loc.rungs[0].change == ("onednn_bf16+no_ir_optim + "
                                   "enable_custom_passes(['onednn_placement_pass'], True)")


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
