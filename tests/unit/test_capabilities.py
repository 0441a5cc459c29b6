"""modes/capabilities.py: what the installed Paddle can run, and what is missing, in words a
person can act on."""
from pytest_paddle_infer.modes import run_modes as rm
from pytest_paddle_infer.modes.capabilities import Capabilities, detect, installed_paddle


def _caps(dist="paddlepaddle-gpu", cuda=True, gpus=2, compiled=(8, 6, 1), runtime=(8, 6, 1)):
    return Capabilities(dist, "3.3.1", "abc", cuda, gpus, compiled, runtime, True)


MODES = rm.RUN_MODES


def test_skip_reason_cpu_only():
    caps = _caps("paddlepaddle", cuda=False, gpus=0, compiled=(0, 0, 0), runtime=(0, 0, 0))
    assert caps.missing_for(MODES["trt_int8"]) == (
        "trt_int8 needs Paddle built with CUDA and TensorRT; paddlepaddle 3.3.1 installed here "
        "is CPU-only")
    assert caps.missing_for(MODES["gpu_fp16"]) == (
        "gpu_fp16 needs Paddle built with CUDA; paddlepaddle 3.3.1 installed here is CPU-only")
    assert caps.missing_for(MODES["onednn_bf16"]) is None


def test_skip_reason_cuda_without_tensorrt():
    caps = _caps(compiled=(0, 0, 0), runtime=(0, 0, 0), gpus=0)
    assert caps.missing_for(MODES["trt_fp16"]) == (
        "trt_fp16 needs Paddle built with TensorRT; paddlepaddle-gpu 3.3.1 installed here was "
        "built with CUDA but without TensorRT")
    assert caps.missing_for(MODES["gpu_fp32"]).startswith("gpu_fp32 needs a visible GPU")


def test_skip_reason_tensorrt_compiled_but_no_runtime():
    caps = _caps(runtime=(0, 0, 0))
    assert caps.missing_for(MODES["trt_fp32"]) == (
        "trt_fp32 needs the TensorRT runtime (libnvinfer) 8.6.1 that paddlepaddle-gpu 3.3.1 "
        "installed here was built against; none was found (add TensorRT's lib dir to "
        "LD_LIBRARY_PATH)")
    assert caps.missing_for(MODES["gpu_fp32"]) is None and not caps.tensorrt


def test_skip_reason_tensorrt_major_mismatch():
    assert _caps(runtime=(10, 0, 1)).missing_for(MODES["trt_fp16"]) == (
        "trt_fp16 needs TensorRT 8.x, which paddlepaddle-gpu 3.3.1 installed here was built "
        "against (8.6.1); the runtime found is 10.0.1")


def test_skip_reason_no_gpu_visible():
    caps = _caps(gpus=0)
    for mode in ("gpu_fp32", "trt_int8"):
        assert caps.missing_for(MODES[mode]) == (
            f"{mode} needs a visible GPU; paddlepaddle-gpu 3.3.1 installed here has CUDA but "
            "sees no device (check the driver and CUDA_VISIBLE_DEVICES)")


def test_skip_reason_device_out_of_range():
    caps = _caps(gpus=2)
    assert caps.missing_for(MODES["trt_fp16"], device_id=1) is None
    assert caps.missing_for(MODES["gpu_fp32"], device_id=2) == (
        "gpu_fp32 was asked for GPU 2; paddlepaddle-gpu 3.3.1 installed here sees 2 GPU(s), "
        "numbered 0..1")
    assert caps.missing_for(MODES["cpu_fp32"], device_id=5) is None


def test_detect_reports_this_cpu_only_install():
    caps = detect()
    dist, version = installed_paddle()
    assert (caps.distribution, caps.version) == (dist, version)
    assert not caps.cuda and caps.gpu_count == 0 and not caps.tensorrt
    assert not any(caps.trt_compile)
    assert caps.missing_for(MODES["trt_int8"]) == (
        f"trt_int8 needs Paddle built with CUDA and TensorRT; {dist} {version} installed here "
        "is CPU-only")
    assert caps.missing_for(MODES["cpu_fp32"]) is None
