"""End to end: --paddle-model, --run-mode, -k, -m and --deselect narrow a suite's cases; with a
suite collected, --paddle-model and --run-mode add no standalone cases, and a session they
leave nothing to run is a usage error."""
import pytest

from helpers import run_suite, write_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

SUITE = """
    defaults:
      run_modes: [cpu_fp32, onednn_fp32, {mode: onednn_fp32, ir_optim: false}]
    models:
      cnn:
        source: tiny_cnn
      tiny_detector:
        run_modes: [cpu_fp32, {mode: onednn_fp32, threads: 2}]
"""
ALL = {
    "cnn[1x3x32x32-cpu_fp32]", "cnn[1x3x32x32-onednn_fp32]", "cnn[1x3x32x32-onednn_fp32+no_ir_optim]",
    "tiny_detector[1x3x64x64-cpu_fp32]", "tiny_detector[1x3x64x64-onednn_fp32+threads=2]",
}


def ran(run):
    return {key.split("::", 1)[1] for key in run.cases}


@pytest.mark.parametrize("args, expected", [
    # a suite model's own name, or the zoo entry it uses
    (["--paddle-model=cnn"], {c for c in ALL if c.startswith("cnn")}),
    (["--paddle-model=tiny_cnn"], {c for c in ALL if c.startswith("cnn")}),
    # a bare run mode keeps the mode with any toggles; toggles keep exactly that variant
    (["--run-mode=onednn_fp32"], {"cnn[1x3x32x32-onednn_fp32]", "cnn[1x3x32x32-onednn_fp32+no_ir_optim]",
                                  "tiny_detector[1x3x64x64-onednn_fp32+threads=2]"}),
    (["--run-mode=onednn_fp32+no_ir_optim"], {"cnn[1x3x32x32-onednn_fp32+no_ir_optim]"}),
    (["--paddle-model=tiny_detector", "--run-mode=cpu_fp32,onednn_fp32+no_ir_optim"],
     {"tiny_detector[1x3x64x64-cpu_fp32]"}),
    (["-k", "detector and threads"], {"tiny_detector[1x3x64x64-onednn_fp32+threads=2]"}),
    (["-m", "paddle_run_mode(mode='cpu_fp32')"], {"cnn[1x3x32x32-cpu_fp32]", "tiny_detector[1x3x64x64-cpu_fp32]"}),
    (["-m", "paddle_model(name='tiny_detector')"], {c for c in ALL if c.startswith("tiny_detector")}),
    (["--deselect", "paddle_suite.yaml::cnn[1x3x32x32-cpu_fp32]"], ALL - {"cnn[1x3x32x32-cpu_fp32]"}),
], ids=["suite_name", "zoo_name", "mode", "mode_with_toggle", "model_and_mode", "k", "m_mode", "m_model",
        "deselect"])
def test_selection_keeps_exactly_the_named_cases(pytester, run_pytest, xdist_mode, args, expected):
    write_suite(pytester, SUITE)
    run = run_suite(run_pytest, pytester, *args, *xdist_mode)
    assert ran(run) == expected
    assert set(run.outcomes().values()) == {"passed"}


def test_filters_that_match_nothing_are_a_usage_error(pytester, run_pytest, xdist_mode):
    """A check was asked for and none of it would run: never a green (or empty) session."""
    write_suite(pytester, SUITE)
    run = run_suite(run_pytest, pytester, "--paddle-model=resnet50", "--run-mode=onednn_bf16", *xdist_mode)
    assert run.result.ret == 4, run.text
    assert run.cases == {}  # and no standalone resnet50 case was added
    message = ("ERROR: paddle-infer: --paddle-model resnet50 and --run-mode onednn_bf16 matched none of "
               "the 5 cases that suites and paddle_case markers declare (models cnn, tiny_detector; run "
               "modes *), so nothing it asks for would run.*")
    run.result.stderr.fnmatch_lines([message])


def test_narrowing_is_reported_under_the_header(pytester, run_pytest):
    write_suite(pytester, SUITE)
    run = run_suite(run_pytest, pytester, "--run-mode=cpu_fp32")
    run.result.stdout.fnmatch_lines(["paddle-infer: --run-mode cpu_fp32 narrowed the declared cases to 2 of 5"])
    run.result.assert_outcomes(passed=2, deselected=3)
