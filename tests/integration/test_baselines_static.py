"""--paddle-baseline=static: the exported program under paddle.static.Executor (the
framework's own kernels, no inference passes), in both program formats."""
import pytest

from helpers import summary_rows

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)


def test_static_executor_baseline_agrees_with_the_predictor(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=tiny_cnn", "--paddle-model=tiny_detector",
                        "--run-mode=cpu_fp32,onednn_fp32", "--paddle-baseline=static", *xdist_mode)
    result.assert_outcomes(passed=4)
    rows = summary_rows(result)
    # the same kernels as the native predictor: equal to well under the tolerance
    for model, shape in (("tiny_cnn", "1x3x32x32"), ("tiny_detector", "1x3x64x64")):
        status, max_abs, _, mismatched = rows[(model, shape, "cpu_fp32")]
        assert status == "passed" and float(max_abs) < 1e-6 and mismatched.startswith("0/")
    assert "paddle-infer: baseline static" in result.stdout.str()


def test_legacy_program_runs_under_the_static_executor(run_pytest, xdist_mode):
    """--paddle-program=legacy asks for the legacy .pdmodel export: the executor child must read
    it with PIR off. Tolerance 0 makes the oneDNN case fail so its message shows the baseline."""
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=onednn_fp32", "--paddle-baseline=static",
                        "--paddle-program=legacy", "--paddle-intermediates=relu_*", "--paddle-atol=0",
                        "--paddle-rtol=0", *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*tiny_cnn[[]1x3x32x32-onednn_fp32[]]: 1 of 1 outputs outside tolerance*",
        "baseline:  static: paddle.static.Executor on cpu running inference.pdmodel (the framework's kernels, no inference passes)",
        "(intermediate tensors are not compared: a static baseline has no predictor to hook)",
    ])
