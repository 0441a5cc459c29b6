"""Quantized zoo entries (models/quantized.py) and onednn_int8's evidence rule
(execute/int8_evidence.py): a float model skips onednn_int8, a quantized one passes it with
int8 tensors seen, and a candidate that ran no int8 kernel fails even when its outputs match."""
import json

import pytest

from helpers import int8_kernels_here, summary_rows
from pytest_paddle_infer.host import VNNI_FAMILIES, cpu_description

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

# max abs of onednn_int8 against the fake-quantized baseline, seed 0 (README, int8 on the
# CPU): with VNNI and without (AVX2: pairs of products summed in int16, saturating)
WITH_VNNI = {"tiny_cnn_int8": (1e-3, 0.03), "resnet18_int8": (1e-3, 0.2)}
WITHOUT_VNNI = {"tiny_cnn_int8": (0.2, 0.6), "resnet18_int8": (0.4, 1.0)}


def test_a_float_model_skips_onednn_int8_saying_why(run_pytest, xdist_mode):
    # before: passed at fp32-level differences (max abs 3.6e-07), with no int8 kernel run
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=onednn_int8", "-rs", *xdist_mode)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([
        "SKIPPED *tiny_cnn carries no quantize/dequantize ops: onednn_int8 needs a quantized model*"])


def test_quantized_models_pass_onednn_int8_with_int8_evidence(run_pytest, pytester, xdist_mode):
    report = pytester.path / "report"
    result = run_pytest("--paddle-model=tiny_cnn_int8", "--paddle-model=resnet18_int8",
                        "--run-mode=onednn_int8,cpu_fp32", f"--paddle-report={report}", *xdist_mode)
    # the mode's default (atol 1, rtol 0.1, cosine_min 0.9) holds with VNNI and without
    result.assert_outcomes(passed=4)
    rows = summary_rows(result)
    family = int8_kernels_here()
    figures = WITH_VNNI if family in VNNI_FAMILIES else WITHOUT_VNNI
    for model, shape in (("tiny_cnn_int8", "1x3x32x32"), ("resnet18_int8", "1x3x224x224")):
        status, max_abs, _, mismatched = rows[(model, shape, "onednn_int8")]
        # int8 arithmetic, not fp32: differences well above fp32 level, as this CPU's kernels give
        assert status == "passed" and mismatched.startswith("0/")
        low, high = figures[model]
        assert low < float(max_abs) < high, (model, family, max_abs)
        # the fake-quantized program on native kernels with IR optimization: exact
        assert rows[(model, shape, "cpu_fp32")][1] == "0"
    cases = [json.loads(p.read_text())["summary"] for p in report.glob("*.json")
             if p.name != "summary.json"]
    int8_cases = [c for c in cases if "onednn_int8" in c["case"]]
    assert len(int8_cases) == 2
    # the kernel family the figures come from, with the CPU, in the evidence and the note
    kernels = f"int8 kernels: {family} ({cpu_description()['cpu']}"
    for case in int8_cases:
        evidence = [n for n in case["notes"] if n.startswith("int8 evidence:")]
        assert evidence and " int8 x" in evidence[0] and " uint8 x" in evidence[0], case["notes"]
        assert kernels in evidence[0] and case["evidence"]["candidate"]["kernels"].startswith(kernels)
        assert ("slower" in evidence[0]) == (family not in VNNI_FAMILIES)


def test_no_int8_kernel_fails_with_the_evidence(run_pytest, xdist_mode):
    # IR optimization off: the quantize ops run as fp32 and match the baseline exactly
    result = run_pytest("--paddle-model=tiny_cnn_int8", "--run-mode=onednn_int8+no_ir_optim",
                        *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*tiny_cnn_int8[[]1x3x32x32-onednn_int8+no_ir_optim[]]: onednn_int8: no int8 kernel ran: "
        "the candidate's output hooks saw no int8/uint8 tensor (tensors float32 x*; ops *quantize_linear*), "
        "although the program carries dequantize_linear x*, quantize_linear x*",
        "*linear_0.tmp_1*0/10*ok*",
    ])
