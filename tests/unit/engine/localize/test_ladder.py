"""localize/ladder.py: delta debugging over passes and op types, and every branch of the
ladder driven by scripted trials (a trial says whether a varied spec is within tolerance,
as a real predictor would), with the builds each branch takes."""
import math
from dataclasses import replace

import pytest

from helpers import single_culprit_bound
from pytest_paddle_infer.engine.localize.ladder import Localization, _span, ddmin, localize
from pytest_paddle_infer.engine.localize.op_blame import TRT_MATRIX_MULTIPLY
from pytest_paddle_infer.engine.localize.pir_passes import PassList
from pytest_paddle_infer.modes import run_modes as rm
from pytest_paddle_infer.modes.run_modes import DynamicShape, RunModeSpec, call, parse_run_mode, passes_off

PASSES = [f"pass_{i}" for i in range(41)]


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13, 41, 64])
def test_ddmin_finds_a_single_culprit_within_the_bound(n):
    items = [f"p{i}" for i in range(n)]
    for culprit in items:
        trials = []

        def fixes(deleted):
            trials.append(list(deleted))
            return culprit in deleted

        assert ddmin(items, fixes) == [culprit]
        assert len(trials) <= 2 * math.ceil(math.log2(n)) + 1 <= single_culprit_bound(n)


def test_ddmin_keeps_interacting_culprits_together_in_order():
    calls = []

    def fixes(deleted):  # only deleting pass_6 and pass_1 together helps
        calls.append(tuple(deleted))
        return "pass_1" in deleted and "pass_6" in deleted

    assert ddmin([f"pass_{i}" for i in range(8)], fixes) == ["pass_1", "pass_6"]
    assert len(calls) == len(set(calls))  # no subset tried twice


def test_ddmin_gives_none_when_removing_everything_does_not_help():
    assert ddmin(PASSES, lambda deleted: False) is None
    assert ddmin([], lambda deleted: True) is None


class Scripted:
    """A trial by rule: ``bad(spec, extra)`` says whether the varied predictor diverges
    (or, as "crashed" or "raised", how else it fails); ``crash`` makes every bad trial one
    whose process died."""

    def __init__(self, bad, crash=False):
        self.bad, self.crash, self.specs = bad, crash, []

    def __call__(self, spec, extra=()):
        self.specs.append((spec, tuple(extra)))
        how = self.bad(spec, extra)
        if not how:
            return True, 1e-6, ""
        if how == "raised":
            return False, float("nan"), "raised: (NotFound) Not found attr."
        if self.crash or how == "crashed":
            return False, float("nan"), "crashed: the trial's process was killed by SIGSEGV"
        return False, 0.5, ""


def ir_off(spec):
    return spec.ir_optim is False


def run(spec_text, bad, ops=("conv2d", "relu", "matmul_v2", "softmax"), crash=False,
        program_format="legacy", off_calls=(), failure="fails", passes=None) -> Localization:
    trial = Scripted(bad, crash)
    listed = passes if passes is not None else PassList(PASSES)
    loc = localize(parse_run_mode(spec_text) if isinstance(spec_text, str) else spec_text,
                   trial, lambda: listed, lambda: list(ops), off_calls, program_format, failure)
    assert loc.builds == len(trial.specs) == len(loc.rungs)
    assert loc.lines()[0].endswith(f"({loc.builds} builds)")
    return loc


def test_kernels_with_every_optimization_off_and_no_op_switch():
    loc = run("onednn_fp32", lambda spec, extra: True)
    assert loc.culprit == "kernels" and loc.builds == 1 and not loc.fix
    assert "diverges with every graph optimization off" in loc.verdict


def test_memory_optimization_to_blame():
    loc = run("cpu_fp32", lambda spec, extra: spec.memory_optim)
    assert loc.culprit == "memory_optim" and loc.builds == 2


def test_nothing_to_localize_when_the_case_passes_again():
    loc = run("cpu_fp32", lambda spec, extra: False)
    assert "did not reproduce" in loc.verdict and loc.builds == 3


def test_one_pass_in_log_builds_and_its_deletion_is_the_fix():
    bad = lambda spec, extra: not ir_off(spec) and "pass_29" not in spec.delete_passes
    loc = run("onednn_fp32", bad)
    assert loc.culprit == "pass_29"
    assert loc.fix == "onednn_fp32+delete_pass=pass_29"
    assert loc.search_builds <= single_culprit_bound(len(PASSES))
    assert loc.builds == 3 + loc.search_builds
    # the fix offered is a configuration a trial ran and saw within tolerance
    assert any(r.passed and r.change == "delete_pass: pass_29" for r in loc.rungs)


def test_a_crash_is_a_bad_outcome_and_the_search_names_the_pass():
    bad = lambda spec, extra: not ir_off(spec) and "pass_3" not in spec.delete_passes
    loc = run("onednn_fp32", bad, crash=True)
    assert loc.culprit == "pass_3" and loc.fix == "onednn_fp32+delete_pass=pass_3"
    assert [r.state for r in loc.rungs[:3]] == ["passes", "passes", "crashed"]
    assert "crashed" in loc.lines()[4]


def test_the_all_off_rung_takes_the_pir_calls():
    off = (call("enable_custom_passes", [], True),)
    trial = Scripted(lambda spec, extra: not extra and "pass_0" not in spec.delete_passes)
    loc = localize(parse_run_mode("cpu_fp32"), trial, lambda: list(PASSES), lambda: [], off, "pir")
    assert trial.specs[0][1] == off and trial.specs[1][1] == ()
    # PIR's custom passes cannot carry memory optimization: that rung is said, not built
    assert loc.rungs[1].state == "not tried" and "memory_optimize_pass" in loc.rungs[1].detail
    assert loc.builds == len(trial.specs) == len(loc.rungs) - 1
    assert loc.culprit == "pass_0"


BF16_PASS = "cpu_bfloat16_placement_pass"


def bf16_bad(spec, extra):
    """bf16 diverges through fused_conv2d only, and only while the bf16 pass runs."""
    return (not ir_off(spec) and BF16_PASS not in spec.delete_passes
            and "fused_conv2d" not in spec.fp32_ops)


def test_bf16_precision_pass_goes_on_to_the_op_types_to_keep_in_fp32():
    passes = PASSES[:20] + [BF16_PASS] + PASSES[20:]
    trial = Scripted(bf16_bad)
    loc = localize(parse_run_mode("onednn_bf16"), trial, lambda: list(passes),
                   lambda: ["onednn_op.fused_conv2d", "pool2d", "fc", "pd_op.relu", "feed"],
                   (), "legacy")
    assert loc.culprit == "fused_conv2d"
    assert loc.fix == "onednn_bf16+fp32_op=fused_conv2d"
    assert loc.verdict == ("op type fused_conv2d kept in fp32 brings onednn_bf16 within "
                           f"tolerance; so does deleting pass {BF16_PASS}")
    # deleting the bf16 pass runs fp32, which the mode's evidence check fails: no alternative
    assert loc.alternatives == []
    assert not any("also within tolerance" in line for line in loc.lines())
    assert loc.search_builds <= single_culprit_bound(4)  # fused_conv2d, pool2d, fc, relu


def test_bf16_on_pir_names_the_pass_and_why_no_op_types():
    passes = PASSES[:20] + [BF16_PASS] + PASSES[20:]
    loc = localize(parse_run_mode("onednn_bf16"), Scripted(bf16_bad), lambda: list(passes),
                   lambda: ["fused_conv2d"], (), "pir")
    assert loc.culprit == BF16_PASS and loc.fix == ""  # without it the mode is fp32
    assert "what puts onednn_bf16 in bf16" in loc.verdict and "precision itself" in loc.verdict
    assert "ignores set_bfloat16_op" in loc.verdict


INT8_PASSES = ["quant_dequant_onednn_pass", "compute_propagate_scales_onednn_pass"]


def test_int8_passes_found_are_the_precision_not_a_run_mode_to_suggest():
    """Deleting the int8 rewrite fixes the outputs by running fp32 kernels, which onednn_int8's
    evidence check fails: the verdict blames the precision and suggests no run mode. A pass
    of another kind found under the same mode is a fix."""
    passes = PASSES[:10] + INT8_PASSES + PASSES[10:]
    int8_bad = lambda spec, extra: not ir_off(spec) and not set(INT8_PASSES) <= set(spec.delete_passes)
    loc = localize(parse_run_mode("onednn_int8"), Scripted(int8_bad), lambda: list(passes),
                   lambda: [], (), "legacy")
    assert loc.culprit == ", ".join(INT8_PASSES) and loc.fix == ""
    assert "what puts onednn_int8 in int8" in loc.verdict
    other_bad = lambda spec, extra: not ir_off(spec) and "pass_12" not in spec.delete_passes
    loc = localize(parse_run_mode("onednn_int8"), Scripted(other_bad), lambda: list(passes),
                   lambda: [], (), "legacy")
    assert loc.fix == "onednn_int8+delete_pass=pass_12" and "precision" not in loc.verdict


def test_gpu_fp16_kernels_narrowed_to_an_op_type():
    bad = lambda spec, extra: "softmax" not in spec.fp32_ops
    loc = run("gpu_fp16", bad)
    assert loc.rungs[0].state == "fails" and loc.culprit == "softmax"
    assert loc.fix == "gpu_fp16+fp32_op=softmax"
    assert "exp_disable_mixed_precision_ops" in loc.rungs[-1].change


DYNAMIC = DynamicShape.explicit({"x": ((1, 3, 8, 8), (1, 3, 32, 32), (4, 3, 32, 32))})


def test_tensorrt_excludes_matmul_by_the_name_the_teller_sees():
    spec = RunModeSpec("trt_fp16", dynamic_shape=DYNAMIC)
    bad = lambda s, extra: TRT_MATRIX_MULTIPLY not in s.disable_trt_ops
    loc = run(spec, bad, ops=("conv2d", "matmul_v2", "mul", "relu", "softmax"))
    assert loc.rungs[0].name == "as configured"  # no optimizations-off rungs for TensorRT
    assert loc.culprit == TRT_MATRIX_MULTIPLY
    assert loc.fix == replace(spec, disable_trt_ops=(TRT_MATRIX_MULTIPLY,)).label
    # static shape: the names stay as they are
    static = run("trt_fp16", lambda s, extra: "matmul_v2" not in s.disable_trt_ops,
                 ops=("conv2d", "matmul_v2"))
    assert static.culprit == "matmul_v2"


def test_tensorrt_divergence_no_op_type_explains():
    loc = run("trt_fp32", lambda s, extra: True)
    assert "stays with every op type kept out of TensorRT" in loc.verdict and not loc.fix
    assert loc.builds == 2  # as configured, then every op type out


def test_with_every_optimization_off_passing_the_verdict_never_blames_the_kernels():
    """Deleting every listed pass does not help, but every optimization off does: IR
    optimization beyond its pass list makes the difference, and the run mode of that rung
    (which a trial passed) is the fix; on PIR that rung needs calls no toggle spells."""
    loc = run("onednn_fp32", lambda spec, extra: not ir_off(spec))
    assert loc.rungs[0].state == "passes" and "kernels" not in loc.verdict
    assert loc.culprit == "ir_optim" and loc.fix == "onednn_fp32+no_ir_optim"
    assert loc.verdict.startswith("onednn_fp32 passes with every graph optimization off, but "
                                  "deleting all 41 passes it runs beyond those does not")
    assert loc.builds == 4  # off, memory, as configured, every pass deleted
    off = (call("enable_custom_passes", [], True),)
    pir = localize(parse_run_mode("onednn_fp32"), Scripted(lambda spec, extra: not extra),
                   lambda: list(PASSES), lambda: [], off, "pir")
    assert pir.culprit == "ir_optim" and not pir.fix


def test_a_pass_list_that_could_not_be_read_is_said_with_the_command_to_read_it():
    why = "building the candidate to list them crashed (the process was killed by SIGSEGV) before Paddle named any pass"
    listed = PassList([], why, "python -c '...' 2>&1 | grep 'Running PIR pass'")
    loc = run("onednn_fp32", lambda spec, extra: not ir_off(spec), crash=True, passes=listed,
              failure="crashed")
    assert [r.state for r in loc.rungs] == ["passes", "passes", "crashed"]
    assert loc.verdict == (f"the passes onednn_fp32 runs could not be read: {why}; list them by "
                           f"hand: python -c '...' 2>&1 | grep 'Running PIR pass'")
    assert not loc.culprit and not loc.fix


def test_the_case_own_failure_with_every_optimization_off_blames_the_kernels():
    loc = run("onednn_fp32", lambda spec, extra: True, crash=True, failure="crashed")
    assert loc.culprit == "kernels" and "crashes with every graph optimization off" in loc.verdict
    raised = run("onednn_fp32", lambda spec, extra: "raised", failure="raised")
    assert raised.culprit == "kernels" and raised.builds == 1
    assert "errors with every graph optimization off" in raised.verdict


def test_a_rung_failing_another_way_than_the_case_blames_nothing_and_the_search_goes_on():
    """The case crashes in pass_7; with every optimization off the program raises (another
    failure, which neither reproduces the crash nor clears the passes): the search goes on,
    every trial that raises or crashes counting as bad, and names pass_7."""
    def bad(spec, extra):
        if ir_off(spec):
            return "raised"
        if "pass_7" not in spec.delete_passes:
            return "crashed"
        return "raised" if len(spec.delete_passes) < 3 else False  # a partial deletion errors

    loc = run("onednn_fp32", bad, failure="crashed")
    assert [r.state for r in loc.rungs[:2]] == ["raised", "crashed"]  # no memory rung after a raise
    assert loc.rungs[1].name == "as configured"
    assert loc.culprit and "pass_7" in loc.culprit.split(", ") and loc.fix.startswith("onednn_fp32+delete_pass=")
    assert all(r.passed for r in loc.rungs if r.change == f"delete_pass: {_span(loc.culprit.split(', '))}")
    # a divergent case: a raise with every optimization off is not the divergence either
    diverges = run("onednn_fp32", lambda spec, extra: "raised" if ir_off(spec)
                   else "pass_29" not in spec.delete_passes)
    assert diverges.culprit == "pass_29" and diverges.rungs[0].state == "raised"
    none = run("onednn_fp32", lambda spec, extra: "raised" if ir_off(spec) else True)
    assert not none.culprit and "errors, a failure other than the case's" in none.verdict


def test_kernels_of_a_mode_with_an_op_switch_when_no_op_type_helps():
    loc = run("gpu_fp16", lambda spec, extra: True)
    assert loc.culprit == "kernels" and not loc.fix
    assert [r.name for r in loc.rungs] == ["all optimizations off", "4 op type(s) kept in fp32"]


def test_the_pass_a_listing_build_stopped_in_is_tried_first():
    """A candidate whose build crashes in pass_30: the listing names it (PassList.stopped_in)
    and one trial without it settles the search; a suspect that does not fix the case alone
    leaves the search over every pass as before."""
    crash_in_30 = lambda spec, extra: not ir_off(spec) and "pass_30" not in spec.delete_passes
    loc = run("onednn_fp32", crash_in_30, crash=True, failure="crashed",
              passes=PassList(PASSES, stopped_in=["pass_30"]))
    assert loc.culprit == "pass_30" and loc.search_builds == 1
    both = lambda spec, extra: not ir_off(spec) and not {"pass_4", "pass_30"} <= set(spec.delete_passes)
    wider = run("onednn_fp32", both, crash=True, failure="crashed",
                passes=PassList(PASSES, stopped_in=["pass_30"]))
    assert wider.culprit == "pass_4, pass_30" and wider.rungs[3].change == "delete_pass: pass_30"


def test_the_trt_op_search_names_the_types_the_teller_sees_after_fusion():
    """Legacy TensorRT: exp_disable_tensorrt_ops is matched by the subgraph pass after the
    fusion passes, so the search lists the op types of the candidate with that pass deleted
    (fused convolutions by their fused name) before the program's own."""
    from pytest_paddle_infer.engine.localize.ladder import TRT_SUBGRAPH_PASS, search_op_types
    from pytest_paddle_infer.engine.localize.op_blame import knob_for

    asked = []

    def ran(spec):  # what that trial's predictor would list (a GPU run; recorded names)
        asked.append(spec)
        return ["feed", "fused_conv2d_add_act", "pool2d", "matrix_multiply", "fetch"]

    spec = parse_run_mode("trt_fp16+delete_pass=fc_fuse_pass")
    baseline = ["feed", "conv2d", "batch_norm", "relu", "pool2d", "matmul_v2", "fetch"]
    types = search_op_types(spec, "legacy", baseline, ran)
    assert asked[0].delete_passes == ("fc_fuse_pass", TRT_SUBGRAPH_PASS)
    assert asked[0].mode == "trt_fp16" and asked[0].disable_trt_ops == ()
    knob, _ = knob_for(spec, "legacy")
    assert knob.names(types, spec)[:3] == ["fused_conv2d_add_act", "pool2d", "matrix_multiply"]
    assert "conv2d" in knob.names(types, spec)  # the program's own names follow
    assert search_op_types(spec, "pir", baseline, ran) == baseline  # paddle.tensorrt: its own
    assert search_op_types(spec, "legacy", baseline, None) == baseline
    gpu = parse_run_mode("gpu_fp16")
    search_op_types(gpu, "legacy", baseline, ran)
    assert asked[-1] == gpu  # the placement's names: the candidate itself


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
