"""End to end: ``pytest --paddle-model=... --run-mode=...`` in an empty directory."""
import pytest

from helpers import DIFFERING_MODE, ZERO_TOLERANCE, summary_rows

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)


def test_cpu_modes_pass_with_figures(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32,onednn_fp32", *xdist_mode)
    result.assert_outcomes(passed=2)
    rows = summary_rows(result)
    assert rows[("tiny_cnn", "1x3x32x32", "cpu_fp32")][0] == "passed"
    # native kernels with IR optimization match the IR-off baseline (bit for bit on Paddle 3)
    _, max_abs, _, mismatched = rows[("tiny_cnn", "1x3x32x32", "cpu_fp32")]
    assert mismatched == "0/10" and float(max_abs) < 1e-5
    assert rows[("tiny_cnn", "1x3x32x32", "onednn_fp32")][3] == "0/10"


def test_same_outcomes_and_figures_with_and_without_xdist(run_pytest):
    args = ("--paddle-model=tiny_cnn", "--paddle-model=tiny_detector",
            "--run-mode=cpu_fp32,onednn_fp32,onednn_fp32+threads=2")
    serial = run_pytest(*args)
    parallel = run_pytest(*args, "-n", "2")
    serial.assert_outcomes(passed=6)
    parallel.assert_outcomes(passed=6)
    assert summary_rows(serial) == summary_rows(parallel)
    assert len(summary_rows(serial)) == 6


def test_zero_tolerance_fails_with_the_table(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=tiny_cnn", f"--run-mode={DIFFERING_MODE}", *ZERO_TOLERANCE, *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*tiny_cnn[[]1x3x32x32-{DIFFERING_MODE}[]]: 1 of 1 outputs outside tolerance; first: *elements outside atol=0 rtol=0*",
        "*baseline:  auto: disable_mkldnn(); switch_ir_optim(False)*",
        "*candidate: enable_mkldnn(); switch_ir_optim(True)",
        "Tensor*Shape*Mismatched*Max Atol*Max Rtol*Min Val(base)*Max Val(base)*Cosine*Result",
        "*match, [[]1, 10[]]*FAIL*",
    ])
    assert "plugin.py" not in result.stdout.str()  # no internal frames


def test_trt_mode_skips_with_the_reason(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=trt_int8", "-rs", *xdist_mode)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*trt_int8 needs Paddle built with CUDA and TensorRT; paddlepaddle * installed here is CPU-only*"])


def test_paddle_error_errors_only_its_case(run_pytest, xdist_mode):
    """memory_optim on a PIR program fails inside Paddle 3.x; the other cases still run."""
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32+memory_optim,cpu_fp32", *xdist_mode)
    outcomes = result.parseoutcomes()
    if outcomes.get("errors"):
        assert outcomes.get("passed") == 1
        result.stdout.fnmatch_lines([
            "*tiny_cnn[[]1x3x32x32-cpu_fp32+memory_optim[]]: building the predictor for tiny_cnn failed:*memory_optimize_pass*",
            "*recipe: disable_mkldnn(); switch_ir_optim(True); enable_memory_optim()*",
        ])
        assert "Traceback" not in result.stdout.str()
    else:  # a Paddle that supports it (legacy programs, Paddle 2.6) passes both cases
        assert outcomes.get("passed") == 2 and outcomes.get("failed") is None


def test_multi_input_model_is_fed_by_name(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=tiny_detector", "--run-mode=onednn_fp32", *xdist_mode)
    result.assert_outcomes(passed=1)
    rows = summary_rows(result)
    # two outputs: 1x4x4 boxes and 1x4 scores
    assert rows[("tiny_detector", "1x3x64x64", "onednn_fp32")][3] == "0/20"


def test_plugin_items_sit_next_to_python_tests(pytester, run_pytest, xdist_mode):
    pytester.makepyfile(test_plain="def test_plain():\n    assert 1 + 1 == 2\n")
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32", "-v", *xdist_mode)
    result.assert_outcomes(passed=2)
    if xdist_mode:  # "[gw0] [ 50%] PASSED <id>", in either order
        result.stdout.fnmatch_lines_random(["*PASSED*test_plain.py::test_plain*",
                                            "*PASSED*tiny_cnn[[]1x3x32x32-cpu_fp32[]]*"])
    else:
        result.stdout.fnmatch_lines(["*test_plain.py::test_plain PASSED*", "*tiny_cnn[[]1x3x32x32-cpu_fp32[]] PASSED*"])


def test_k_and_m_select_cases(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32,onednn_fp32", "-k", "onednn", *xdist_mode)
    result.assert_outcomes(passed=1)
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32,onednn_fp32",
                        "--deselect", "tiny_cnn[1x3x32x32-cpu_fp32]", *xdist_mode)
    result.assert_outcomes(passed=1)


def test_junit_xml_carries_case_properties(run_pytest, pytester, xdist_mode):
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=onednn_fp32", "--junitxml=out.xml", *xdist_mode)
    result.assert_outcomes(passed=1)
    xml = (pytester.path / "out.xml").read_text()
    for key in ("paddle_case", "paddle_max_abs", "paddle_max_rel", "paddle_mismatched", "paddle_first_divergent"):
        assert f'name="{key}"' in xml


@pytest.mark.resnet50
def test_resnet50_onednn_fp32_passes_and_fails_at_zero(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=resnet50", "--run-mode=onednn_fp32", *xdist_mode)
    result.assert_outcomes(passed=1)
    rows = summary_rows(result)
    status, max_abs, _, mismatched = rows[("resnet50", "1x3x224x224", "onednn_fp32")]
    assert status == "passed" and mismatched == "0/1000" and 0 < float(max_abs) < 1e-3
    result = run_pytest("--paddle-model=resnet50", "--run-mode=onednn_fp32", *ZERO_TOLERANCE, *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*resnet50[[]1x3x224x224-onednn_fp32[]]: 1 of 1 outputs outside tolerance*",
                                 "*match, [[]1, 1000[]]*FAIL*"])


def test_no_unknown_marker_warning_without_xdist(run_pytest):
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32", "-p", "no:xdist",
                        "-W", "error::pytest.PytestUnknownMarkWarning")
    result.assert_outcomes(passed=1)
    assert "PytestUnknownMarkWarning" not in result.stdout.str()
