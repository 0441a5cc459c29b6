"""End to end: the suites in example_suites/ do what docs/suites.md says they do."""
import shutil

import pytest

from pytest_paddle_infer.modes.capabilities import installed_paddle
from helpers import EXAMPLES, cpu_lacks_bf16, run_suite, summary_figures

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

CPU_ONLY_PADDLE = installed_paddle()[0] == "paddlepaddle"  # the GPU wheel is paddlepaddle-gpu


def copy_example(pytester, name: str):
    source = EXAMPLES / name
    if source.is_dir():
        shutil.copytree(source, pytester.path / name, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copy(source, pytester.path / name)


@pytest.mark.skipif(not CPU_ONLY_PADDLE, reason="checks the skips of a CPU-only Paddle")
def test_gpu_suite_skips_every_case_with_the_reason(pytester, run_pytest, xdist_mode):
    copy_example(pytester, "gpu_trt.paddle.yaml")
    run = run_suite(run_pytest, pytester, "-rs", *xdist_mode)
    assert len(run.cases) == 22 and set(run.outcomes().values()) == {"skipped"}
    for case in run.cases.values():
        assert "needs Paddle built with CUDA" in case.message and "CPU-only" in case.message


def test_builder_example_passes(pytester, run_pytest, xdist_mode):
    copy_example(pytester, "builder")
    run = run_suite(run_pytest, pytester, *xdist_mode)
    bf16 = {k for k in run.cases if k.endswith("-onednn_bf16]")}
    assert len(run.cases) == 8 and len(bf16) == 2
    assert {v for k, v in run.outcomes().items() if k not in bf16} == {"passed"}
    # bf16 runs where the CPU has it, and skips where it has not
    lacks = cpu_lacks_bf16()
    assert {run.cases[k].outcome for k in bf16} == {"skipped" if lacks else "passed"}
    assert all("onednn_bf16" in run.cases[k].message for k in bf16 if lacks)


def test_cpu_sweep_declares_three_models_two_shapes_three_modes(pytester, run_pytest):
    copy_example(pytester, "cpu_sweep.paddle.yaml")
    result = run_pytest("--collect-only", "-q")
    ids = [line for line in result.outlines if line.startswith("cpu_sweep.paddle.yaml::")]
    assert len(ids) == 18
    assert "cpu_sweep.paddle.yaml::resnet50[4x3x224x224-onednn_bf16]" in ids
    assert "cpu_sweep.paddle.yaml::tiny_detector[4x3x64x64-onednn_fp32]" in ids


@pytest.mark.resnet50
def test_cpu_sweep_passes_alike_with_and_without_xdist(pytester, run_pytest):
    copy_example(pytester, "cpu_sweep.paddle.yaml")
    serial = run_suite(run_pytest, pytester)
    parallel = run_suite(run_pytest, pytester, "-n", "2")
    bf16 = {k for k in serial.cases if k.endswith("-onednn_bf16]")}
    assert len(serial.cases) == 18 and len(bf16) == 6
    assert {v for k, v in serial.outcomes().items() if k not in bf16} == {"passed"}
    # bf16 runs where the CPU has it, and skips naming the CPU where it has not
    lacks = cpu_lacks_bf16()
    assert {serial.cases[k].outcome for k in bf16} == {"skipped" if lacks else "passed"}
    assert all(lacks.split(" has none")[0] in serial.cases[k].message for k in bf16 if lacks)
    assert parallel.outcomes() == serial.outcomes()
    assert summary_figures(parallel.text) == summary_figures(serial.text)
