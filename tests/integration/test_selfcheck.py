"""``pytest --paddle-selfcheck`` on this CPU-only Paddle, with and without -n 2: the table
(Paddle, CUDA, cuDNN, TensorRT, GPU, TF32, CPU; one row per run mode), CPU modes engaged with
both controls right, onednn_bf16 as the CPU allows, GPU modes "cannot run here: CPU-only
Paddle" (trt_fp16 on the PIR TensorRT path too), and the JSON it names; a bad option is a usage error, not a traceback."""
import json
import re
from pathlib import Path

import pytest

from helpers import cpu_lacks_bf16
from pytest_paddle_infer.modes.run_modes import RUN_MODES

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

GPU_MODES = [name for name, mode in RUN_MODES.items() if mode.device == "gpu"]


def test_the_self_check_on_a_cpu_only_paddle(run_pytest, xdist_mode):
    result = run_pytest("--paddle-selfcheck", *xdist_mode)
    text = result.stdout.str()
    assert result.ret == 0, text
    assert "Traceback" not in text
    result.stdout.re_match_lines([
        r"paddle-infer self-check$",
        r"  Paddle    paddlepaddle 3\.\S+ \(commit \w+\)$",
        r"  CUDA      no \(CPU-only Paddle\)$",
        r"  cuDNN     -$",
        r"  TensorRT  no$",
        r"  GPU       none visible$",
        r"  TF32      not used: no GPU \(cuBLAS (on|off), cuDNN (on|off): Paddle's switches\)$",
        r"  CPU       .*; oneDNN yes; .*",
        r"mode +result +evidence \(positive control\) +negative control$",
        r"cpu_fp32 +engaged +no tensor in oneDNN's layout: holds +enable_mkldnn\(\) instead of "
        r"disable_mkldnn\(\): fails the rule, as it must$",
        r"onednn_fp32 +engaged +tensors in oneDNN's layout: holds +disable_mkldnn\(\) instead "
        r"of enable_mkldnn\(\): fails the rule, as it must$",
        (r"onednn_bf16 +cannot run here +no avx512 \(bf16\) on this CPU: Paddle would run fp32$"
         if cpu_lacks_bf16() else
         r"onednn_bf16 +engaged +bfloat16 tensors: holds +without enable_mkldnn_bfloat16\(\): "
         r"fails the rule, as it must$"),
        r"onednn_int8 +engaged +int8 kernels: holds +without enable_mkldnn_int8\(\): fails the "
        r"rule, as it must$",
    ] + [rf"{mode} +cannot run here +CPU-only Paddle$" for mode in GPU_MODES] + [
        r"trt_fp16 \(PIR\) +cannot run here +CPU-only Paddle$",
        r"self-check JSON \(attach it to a bug report\): .*selfcheck\.json$",
    ])
    where = Path(re.search(r"bug report\): (.*selfcheck\.json)$", text, re.M).group(1))
    saved = json.loads(where.read_text())
    rows = {row["label"]: row for row in saved["modes"]}
    assert list(rows) == list(RUN_MODES) + ["trt_fp16 (PIR)"]
    assert saved["machine"]["cuda"] == "" and saved["machine"]["gpus"] == []
    for mode in ("cpu_fp32", "onednn_fp32", "onednn_int8"):
        assert rows[mode]["status"] == "engaged"
        assert rows[mode]["positive"]["tensors"] > 0 and rows[mode]["negative"]["fails_rule"]
    assert rows["onednn_int8"]["positive"]["dtypes"].get("int8", 0) + \
        rows["onednn_int8"]["positive"]["dtypes"].get("uint8", 0) > 0
    for mode in GPU_MODES + ["trt_fp16 (PIR)"]:
        assert rows[mode]["status"] == "cannot run here"
        assert rows[mode]["detail"].startswith(f"{rows[mode]['mode']} needs Paddle built with CUDA")


def test_no_test_and_no_given_case_runs_beside_the_self_check(run_pytest, pytester):
    pytester.makepyfile(test_other="def test_other():\n    raise AssertionError('ran')\n")
    result = run_pytest("--paddle-selfcheck", "--paddle-executor=inline", "--run-mode=cpu_fp32",
                        "--paddle-model=tiny_cnn")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["paddle-infer self-check: --paddle-model, --run-mode not used: the "
                                 "self-check runs every run mode on its own tiny zoo models, and no test"])
    assert "test_other" not in result.stdout.str() and "AssertionError" not in result.stdout.str()
    result.stdout.fnmatch_lines(["* engaged  * cannot run here (*s)"])


def test_a_bad_option_beside_it_is_a_usage_error(run_pytest):
    result = run_pytest("--paddle-selfcheck", "--paddle-timeout=soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --paddle-timeout: *"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
