"""Options: usage errors exit 4 with the valid choices and no traceback; ini keys; header."""
import pytest

from helpers import summary_rows

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)


@pytest.mark.parametrize("args, message", [
    (["--paddle-model=tiny_cnn", "--run-mode=bogus"],
     "ERROR: unknown run mode 'bogus'; valid run modes: cpu_fp32, onednn_fp32, onednn_bf16, onednn_int8, "
     "gpu_fp32, gpu_fp16, trt_fp32, trt_fp16, trt_int8 (aliases: mkldnn_fp32, mkldnn_bf16, mkldnn_int8)"),
    (["--paddle-model=no_such_model"],
     "ERROR: --paddle-model: unknown model 'no_such_model': not a zoo entry and no such file or directory; "
     "zoo entries: resnet50, mobilenet_v3_small, tiny_cnn, tiny_detector*"),
    (["--paddle-model=tiny_cnn", "--paddle-atol=abc"],
     "ERROR: --paddle-atol: 'abc' is not a number (e.g. --paddle-atol=1e-4)"),
    (["--paddle-model=tiny_cnn", "--paddle-rtol=-1"],
     "ERROR: --paddle-rtol: '-1' must be a finite number >= 0 (e.g. --paddle-rtol=1e-4)"),
    (["--paddle-model=tiny_cnn", "--paddle-threads=0"],
     "ERROR: --paddle-threads: '0': a predictor needs at least one thread"),
    (["--paddle-model=tiny_cnn", "--paddle-baseline=nope"],
     "ERROR: --paddle-baseline: unknown baseline 'nope'; valid baselines: auto, cpu, gpu*"),
    (["--paddle-model=tiny_cnn", "--run-mode=cpu_fp32+turbo"],
     "ERROR: --run-mode: unknown toggle 'turbo' in 'cpu_fp32+turbo'; toggles: +ir_optim*"),
    (["--paddle-model=missing_dir/model.pdmodel"],
     "ERROR: --paddle-model: model path missing_dir/model.pdmodel does not exist"),
])
def test_usage_errors(run_pytest, args, message):
    result = run_pytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_ini_keys_and_command_line_wins(pytester, run_pytest, xdist_mode):
    pytester.makeini("[pytest]\npaddle_model = tiny_cnn\nrun_mode = cpu_fp32 onednn_fp32\npaddle_atol = 0\npaddle_rtol = 0\n")
    result = run_pytest("-v", *xdist_mode)
    result.stdout.fnmatch_lines(["*FAILED*tiny_cnn[[]1x3x32x32-onednn_fp32[]]*" if xdist_mode
                                 else "*tiny_cnn[[]1x3x32x32-onednn_fp32[]] FAILED*"])  # not bit-exact
    assert result.parseoutcomes().get("failed", 0) >= 1
    result = run_pytest("--run-mode=onednn_fp32", "--paddle-atol=1e-3", *xdist_mode)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["paddle-infer: baseline auto, atol=0.001 rtol=0.0, seed 0*"])


def test_mkldnn_aliases(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=mkldnn_fp32", "-v", *xdist_mode)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*PASSED*tiny_cnn[[]1x3x32x32-onednn_fp32[]]*" if xdist_mode
                                 else "*tiny_cnn[[]1x3x32x32-onednn_fp32[]] PASSED*"])


def test_header_names_paddle_and_capabilities(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32", "--paddle-seed=3", *xdist_mode)
    result.stdout.fnmatch_lines([
        "paddle-infer: paddlepaddle *, CUDA no, TensorRT no, oneDNN yes",
        "paddle-infer: baseline auto, atol=mode default rtol=mode default, seed 3, cache *",
    ])


def test_seed_changes_the_inputs(run_pytest, xdist_mode):
    a = run_pytest("--paddle-model=tiny_cnn", "--run-mode=onednn_fp32", "--paddle-seed=1", "--junitxml=a.xml", *xdist_mode)
    b = run_pytest("--paddle-model=tiny_cnn", "--run-mode=onednn_fp32", "--paddle-seed=1", "--junitxml=b.xml", *xdist_mode)
    c = run_pytest("--paddle-model=tiny_cnn", "--run-mode=onednn_fp32", "--paddle-seed=2", *xdist_mode)
    assert summary_rows(a) == summary_rows(b)
    assert summary_rows(a) != summary_rows(c)
