"""A suite's GPU and TensorRT run-mode keys end to end on a CPU-only Paddle: the skip reasons,
and a shape outside its declared dynamic-shape range errors its case."""
import pytest

from helpers import run_suite, write_suite
from pytest_paddle_infer.modes.capabilities import installed_paddle

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

CPU_ONLY_PADDLE = installed_paddle()[0] == "paddlepaddle"  # the GPU wheel is paddlepaddle-gpu
X_LABEL = "dynamic_shape=x:1x3x32x32:2x3x32x32:4x3x32x32"


GPU_SUITE = """
    models:
      tiny_cnn:
        shapes: [[1, 3, 32, 32], [8, 3, 32, 32]]
        run_modes:
          - mode: trt_fp16
            dynamic_shape: {x: {min: [1, 3, 32, 32], opt: [2, 3, 32, 32], max: [4, 3, 32, 32]}}
            tolerances: {atol: 1e-2, cosine_min: 0.999}
          - {mode: trt_int8, dynamic_shape: tuned, calibration: {batches: 2}}
          - {mode: gpu_fp16, fp32_ops: [softmax], low_precision_io: true}
"""


@pytest.mark.skipif(not CPU_ONLY_PADDLE, reason="checks the skips of a CPU-only Paddle")
def test_gpu_keys_skip_here_and_a_shape_outside_its_range_errors(pytester, run_pytest, xdist_mode):
    write_suite(pytester, GPU_SUITE)
    run = run_suite(run_pytest, pytester, "-rs", *xdist_mode)
    trt16 = f"trt_fp16+{X_LABEL}"
    out_of_range = f"paddle_suite.yaml::tiny_cnn[8x3x32x32-{trt16}]"
    assert run.ids("error") == [out_of_range]
    assert ("paddle_suite.yaml:2: TensorRT dynamic shape: input 'x' shape [8, 3, 32, 32] is outside its "
            "range min [1, 3, 32, 32] .. max [4, 3, 32, 32]") in run.cases[out_of_range].message
    assert run.ids("skipped") == sorted([
        f"paddle_suite.yaml::tiny_cnn[1x3x32x32-{trt16}]",
        "paddle_suite.yaml::tiny_cnn[1x3x32x32-trt_int8+dynamic_shape=tuned+calib_batches=2]",
        "paddle_suite.yaml::tiny_cnn[8x3x32x32-trt_int8+dynamic_shape=tuned+calib_batches=2]",
        "paddle_suite.yaml::tiny_cnn[1x3x32x32-gpu_fp16+fp32_op=softmax+low_precision_io]",
        "paddle_suite.yaml::tiny_cnn[8x3x32x32-gpu_fp16+fp32_op=softmax+low_precision_io]",
    ])
    for key in run.ids("skipped"):
        what = "CUDA and TensorRT" if "trt_" in key else "CUDA;"
        assert f"needs Paddle built with {what}" in run.cases[key].message and "CPU-only" in run.cases[key].message
    run.result.stdout.fnmatch_lines(["SKIPPED * trt_int8 needs Paddle built with CUDA and TensorRT; *CPU-only"])
