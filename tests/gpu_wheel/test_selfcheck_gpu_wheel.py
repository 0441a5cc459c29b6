"""``pytest --paddle-selfcheck`` on the GPU wheel without a GPU: the facts a CUDA build
reports (CUDA, cuDNN, the TensorRT it was built against, no runtime found), every GPU mode
"cannot run here: no GPU visible", the CPU modes engaged on Paddle 2.6.2."""
import json
import re
from pathlib import Path

from pytest_paddle_infer.modes.run_modes import RUN_MODES

GPU_MODES = [name for name, mode in RUN_MODES.items() if mode.device == "gpu"]


def test_the_self_check_on_the_gpu_wheel_without_a_gpu(pytester, tmp_path):
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--paddle-selfcheck",
                                           f"--paddle-cache-dir={tmp_path / 'cache'}")
    text = result.stdout.str()
    assert "Traceback" not in text
    result.stdout.re_match_lines([
        r"  Paddle    paddlepaddle-gpu 2\.6\.2 \(commit \w+\)$",
        r"  CUDA      11\.8$",
        r"  cuDNN     8\.\d+\.\d+$",
        r"  TensorRT  built against 8\.5\.3; runtime not found \(libnvinfer\)$",
        r"  GPU       none visible$",
        r"  TF32      not used: no GPU \(cuBLAS on, cuDNN on: Paddle's switches\)$",
        r"cpu_fp32 +engaged .*fails the rule, as it must$",
        r"onednn_fp32 +engaged .*fails the rule, as it must$",
        r"onednn_int8 +engaged .*fails the rule, as it must$",
    ] + [rf"{mode} +cannot run here +no GPU visible$" for mode in GPU_MODES] + [
        r"trt_fp16 \(PIR\) +cannot run here +no GPU visible$"])
    where = Path(re.search(r"bug report\): (.*selfcheck\.json)$", text, re.M).group(1))
    saved = json.loads(where.read_text())
    # onednn_bf16 runs on a CPU with avx512 only; whether Paddle 2.6 engages it there is that
    # CPU's business, not this tier's: every other row decides the status
    others = [row for row in saved["modes"] if row["mode"] != "onednn_bf16"]
    assert {row["status"] for row in others} <= {"engaged", "cannot run here"}
    bf16 = next(row for row in saved["modes"] if row["mode"] == "onednn_bf16")
    assert result.ret == (0 if bf16["status"] in ("engaged", "cannot run here") else 1), text
    machine = saved["machine"]
    assert (machine["tensorrt_compile"], machine["tensorrt_runtime"], machine["gpu_count"]) == ("8.5.3", "", 0)
    assert machine["tf32"] == {"cublas": True, "cudnn": True, "gpus_with_tf32": []}
