"""The CI gate example, example_suites/paddleclas_style: a PaddleClas-style repo checked by
its pytest.ini, builder module (paddle_gate.py) and suite files alone."""
import shutil

import pytest

from helpers import EXAMPLES, cpu_lacks_bf16, run_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

CONFIGS = ("TinyResNet", "TinyLCNet", "TinyDistillation")
SHAPES = ("1x3x32x32", "4x3x32x32")


def copy_gate(pytester):
    shutil.copytree(EXAMPLES / "paddleclas_style", pytester.path / "paddleclas_style",
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "inference"))


def test_gate_passes_with_the_dy2static_checks(pytester, run_pytest, xdist_mode):
    copy_gate(pytester)
    run = run_suite(run_pytest, pytester, "paddleclas_style", *xdist_mode)
    outcomes = run.outcomes()
    dy2static = {f"dy2static.paddle.yaml::{c}[{s}-cpu_fp32+no_ir_optim]" for c in CONFIGS for s in SHAPES}
    assert dy2static <= {k for k, v in outcomes.items() if v == "passed"}
    cpu = {k for k in outcomes if k.startswith("cpu_modes.paddle.yaml::")}
    bf16 = {k for k in cpu if k.endswith("-onednn_bf16]")}
    assert len(cpu) == 18 and len(bf16) == 6 and {outcomes[k] for k in cpu - bf16} == {"passed"}
    # bf16 runs where the CPU has it, and skips naming the CPU where it has not
    lacks = cpu_lacks_bf16()
    assert {outcomes[k] for k in bf16} == {"skipped" if lacks else "passed"}
    assert all(lacks.split(" has none")[0] in run.cases[k].message for k in bf16 if lacks)
    gpu = {k for k in outcomes if k.startswith("gpu_goldens.paddle.yaml::")}
    assert len(gpu) == 16 and {outcomes[k] for k in gpu} == {"skipped"}
    assert all("CPU-only" in run.cases[k].message for k in gpu)
    assert len(outcomes) == 40 and run.result.ret == 0
    # JUnit XML carries each case's figures for the CI's test report
    distill = run.cases["dy2static.paddle.yaml::TinyDistillation[4x3x32x32-cpu_fp32+no_ir_optim]"]
    assert distill.properties["paddle_mismatched"] == "0/80"  # both heads: 2 x 4 x 10


def test_gate_catches_a_forward_that_cannot_be_exported(pytester, run_pytest, xdist_mode):
    """An edit inside the repo's arch package (not the builder module) must re-export: the
    cached export records the source files it imported."""
    copy_gate(pytester)
    suite = "paddleclas_style/dy2static.paddle.yaml"
    first = run_suite(run_pytest, pytester, suite, "-k", "TinyResNet", *xdist_mode)
    assert set(first.outcomes().values()) == {"passed"} and len(first.cases) == 2
    backbone = pytester.path / "paddleclas_style/ppcls/arch/backbone/tiny_resnet.py"
    source = backbone.read_text()
    edited = source.replace(
        "        return self.fc(x.flatten(1))",
        "        if x.mean() > 0:\n            return self.fc(x.flatten(1))\n        return x, x")
    assert edited != source
    backbone.write_text(edited)
    run = run_suite(run_pytest, pytester, suite, "-k", "TinyResNet", *xdist_mode)
    assert set(run.outcomes().values()) == {"error"} and len(run.cases) == 2
    message = run.cases["dy2static.paddle.yaml::TinyResNet[1x3x32x32-cpu_fp32+no_ir_optim]"].message
    line = edited.splitlines().index("        if x.mean() > 0:") + 1
    assert "exporting model 'TinyResNet'" in message and f'tiny_resnet.py", line {line}, in forward' in message
    assert "if x.mean() > 0:" in message
