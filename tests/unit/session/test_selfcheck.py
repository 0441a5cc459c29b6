"""The self-check's table and exit status (selfcheck/report.py) for the outcomes a CPU machine
cannot produce: a mode that did not engage, and a negative control that showed the mode too,
from the JSON a GPU machine's controls write."""
from pytest_paddle_infer.session import selfcheck as report
from pytest_paddle_infer.engine.selfcheck import CANNOT_RUN, ENGAGED, NOT_ENGAGED, UNTELLABLE

MACHINE = {"paddle": "paddlepaddle-gpu 3.3.1", "commit": "abcdef0123456", "cuda": "12.6",
           "cudnn": "9.5.1", "tensorrt_compile": "10.5.0", "tensorrt_runtime": "10.5.0",
           "gpu_count": 1, "gpus": [{"id": 0, "name": "NVIDIA H100 80GB HBM3",
                                     "compute_capability": "9.0"}],
           "onednn": True, "cpu": "Intel Xeon: avx512", "bf16": True, "int8_kernels": "AMX",
           "tf32": {"cublas": True, "cudnn": True, "gpus_with_tf32": [0]}}


def result(*rows):
    return {"format": 1, "machine": MACHINE, "modes": list(rows), "seconds": 41.0}


def row(mode, status, **more):
    return dict({"mode": mode, "status": status, "rule": "a tensorrt_engine op", "why": ""}, **more)


def test_a_mode_that_did_not_engage_or_cannot_be_told_apart_fails_the_self_check():
    engaged = row("trt_fp16", ENGAGED, negative={"taken": "without enable_tensorrt_engine() "
                                                          "(plain GPU fp32)", "fails_rule": True})
    untold = row("trt_fp32", UNTELLABLE, negative={"taken": "without enable_tensorrt_engine() "
                                                            "(plain GPU fp32)", "fails_rule": False})
    missed = row("trt_int8", NOT_ENGAGED, why="trt_int8: no tensorrt_engine op ran: TensorRT "
                                              "took no part in this model (ops: conv2d)\nmore")
    skipped = row("onednn_bf16", CANNOT_RUN, why="no avx512 (bf16) on this CPU: Paddle would run fp32")
    assert report.exit_status(result(engaged, skipped)) == 0
    assert report.exit_status(result(engaged, untold)) == 1
    assert report.exit_status(result(engaged, missed)) == 1
    lines = report.table(result(engaged, untold, missed, skipped))
    text = "\n".join(lines)
    assert "  GPU       gpu:0 NVIDIA H100 80GB HBM3 (compute capability 9.0)" in lines
    assert "  TensorRT  built against 10.5.0; runtime 10.5.0" in lines
    assert ("  TF32      cuBLAS on, cuDNN on (Paddle's switches); GPU(s) [0] compute TF32 (compute "
            "capability 8.0+): gpu_fp32 and trt_fp32 may round fp32 matmuls and convolutions to "
            "TF32; TensorRT: Paddle sets no TF32 flag") in lines
    assert "fails the rule, as it must" in text and "SHOWS IT TOO: the rule cannot tell" in text
    assert "trt_int8: no tensorrt_engine op ran: TensorRT took no part in this model (ops: conv2d) / more" in text
    assert lines[-1] == "1 engaged  1 not engaged  1 engaged, but so did the negative control  1 cannot run here (41 s)"


def test_an_int8_engine_whose_layers_are_not_known_says_so():
    engaged = row("trt_int8", ENGAGED, negative={"taken": "without enable_tensorrt_engine() "
                                                          "(plain GPU fp32)", "fails_rule": True},
                  engines=["TensorRT engine info: no engine_info_*.json written (the inspector "
                           "needs TensorRT 8.2+): whether int8 layers were built is not known"])
    text = "\n".join(report.table(result(engaged)))
    assert "a tensorrt_engine op: holds; int8 layers not known (no engine_info_*.json)" in text
