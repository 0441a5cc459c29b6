"""GPU and TensorRT run modes end to end on a CPU-only Paddle, with and without -n 2: skips with
the reason, a shape outside its declared range, --paddle-device and the header's GPU mapping."""
import pytest

from helpers import summary_rows

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)


def test_gpu_toggles_skip_with_the_reason(run_pytest, xdist_mode):
    modes = ["trt_int8+int8_source=quantized", "trt_fp16+dynamic_shape=tuned+use_static",
             "trt_int8+calib_batches=2", "gpu_fp16+fp32_op=softmax"]
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=" + ",".join(modes), "-rs",
                        *xdist_mode)
    result.assert_outcomes(skipped=4)
    rows = summary_rows(result)
    assert {mode: rows[("tiny_cnn", "1x3x32x32", mode)][0] for mode in modes} == \
        dict.fromkeys(modes, "skipped")  # each id carries its toggles
    result.stdout.fnmatch_lines_random([
        "SKIPPED [[]2[]] *: trt_int8 needs Paddle built with CUDA and TensorRT; paddlepaddle * "
        "installed here is CPU-only",
        "SKIPPED [[]1[]] *: trt_fp16 needs Paddle built with CUDA and TensorRT; *CPU-only",
        "SKIPPED [[]1[]] *: gpu_fp16 needs Paddle built with CUDA; *CPU-only"])


def test_shape_outside_declared_range_errors_before_any_build(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=tiny_cnn",
                        "--run-mode=trt_fp16+dynamic_shape=x:1x3x8x8:1x3x16x16:2x3x16x16,cpu_fp32",
                        *xdist_mode)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*tiny_cnn[[]1x3x32x32-trt_fp16+dynamic_shape=x:1x3x8x8:1x3x16x16:2x3x16x16[]]: "
        "TensorRT dynamic shape: input 'x' shape [[]1, 3, 32, 32[]] is outside its range min "
        "[[]1, 3, 8, 8[]] .. max [[]2, 3, 16, 16[]] (dim 2: 32 not in [[]8, 16[]]; dim 3: 32 not "
        "in [[]8, 16[]]); widen the range or drop the shape"])
    assert "Traceback" not in result.stdout.str()


def test_bad_device_is_a_usage_error(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=tiny_cnn", "--paddle-device=cuda:0", *xdist_mode)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --paddle-device: 'cuda:0' is not a device; valid forms: "
                                 "auto (xdist worker k uses GPU k mod the visible count; default)*"])


def test_header_shows_the_gpu_of_each_worker(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=trt_fp16,cpu_fp32",
                        "--paddle-device=gpu:2,3", *xdist_mode)
    result.assert_outcomes(passed=1, skipped=1)
    workers = "gw0 -> gpu:2, gw1 -> gpu:3" if xdist_mode else "main -> gpu:2"
    result.stdout.fnmatch_lines([f"paddle-infer: GPU run modes (trt_fp16) per worker: {workers} "
                                 f"(--paddle-device=gpu:2,3, 0 GPU(s) visible)"])


def test_header_says_no_gpu_for_auto(run_pytest):
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=gpu_fp32", "--co")
    result.stdout.fnmatch_lines(["paddle-infer: GPU run modes (gpu_fp32): no GPU visible here, "
                                 "their cases skip"])
