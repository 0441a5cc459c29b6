"""A program may ship fused ops itself (``paddle.incubate`` fused layers in NLP/LLM exports,
PIR ``fused_*``/``fc`` ops): the baseline's "optimizations off, so no fused op" rule counts only
the fused op types the program did not hold as loaded, i.e. what the passes made."""
from __future__ import annotations

from pytest_paddle_infer.verdict.evidence import Evidence, broken_rules, tally
from pytest_paddle_infer.modes.run_modes import NO_FUSED_OPS


def save_program_with_fc(prefix: str) -> None:
    """A PIR program whose first op is ``pd_op.fc`` (built in static mode, as an export of a
    fused layer holds it), then a relu."""
    import paddle

    paddle.enable_static()
    try:
        with paddle.pir_utils.IrGuard():
            main, startup = paddle.static.Program(), paddle.static.Program()
            with paddle.static.program_guard(main, startup):
                x = paddle.static.data("x", [2, 4], "float32")
                w = paddle.create_parameter([4, 3], "float32")
                b = paddle.create_parameter([3], "float32")
                y = paddle.nn.functional.relu(paddle._C_ops.fc(x, w, b, 1, "", False))
            exe = paddle.static.Executor(paddle.CPUPlace())
            exe.run(startup)
            paddle.static.save_inference_model(prefix, [x], [y], exe, program=main)
    finally:
        paddle.disable_static()


def test_a_program_that_ships_a_fused_op_passes_its_baseline_rule(paddle_cache, tmp_path):
    from pytest_paddle_infer.cases.case import Case
    from pytest_paddle_infer.engine.runner import Runner
    from pytest_paddle_infer.models.source import parse_source
    from pytest_paddle_infer.modes.run_modes import parse_run_mode
    from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule

    save_program_with_fc(str(tmp_path / "m" / "inference"))
    runner = Runner(tmp_path / "cache")
    case = Case(parse_source(str(tmp_path / "m")), parse_run_mode("cpu_fp32"),
                CaseTolerances(base=Rule(1e-4, 1e-4), override=Rule(None, None)))
    try:
        result = runner.run(runner.prepare(case))
    finally:
        runner.close()
    assert result.problems == []
    baseline = Evidence.from_dict(result.evidence["baseline"])
    assert baseline.requires == (NO_FUSED_OPS,)  # the plain baseline: optimizations off
    assert baseline.fused == {"pd_op.fc": 1} and baseline.shipped == ("fc",)
    assert broken_rules("baseline", baseline) == []


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
