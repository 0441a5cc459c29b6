"""Quantized zoo entries (models/quantized.py) and onednn_int8's evidence rule
(execute/int8_evidence.py): a float model skips onednn_int8, a quantized one passes it with
int8 tensors seen, and a candidate that ran no int8 kernel fails even when its outputs match."""
import json

from helpers import summary_rows


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
    result.assert_outcomes(passed=4)
    rows = summary_rows(result)
    for model, shape, bound in (("tiny_cnn_int8", "1x3x32x32", 0.03),
                                ("resnet18_int8", "1x3x224x224", 0.2)):
        status, max_abs, _, mismatched = rows[(model, shape, "onednn_int8")]
        # int8 arithmetic, not fp32: differences well above fp32 level, within the mode's 0.2
        assert status == "passed" and mismatched.startswith("0/")
        assert 1e-3 < float(max_abs) < bound, (model, max_abs)
        # the fake-quantized program on native kernels with IR optimization: exact
        assert rows[(model, shape, "cpu_fp32")][1] == "0"
    cases = [json.loads(p.read_text())["summary"] for p in report.glob("*.json")
             if p.name != "summary.json"]
    notes = {c["case"]: c["notes"] for c in cases if "onednn_int8" in c["case"]}
    assert len(notes) == 2
    for case_notes in notes.values():
        evidence = [n for n in case_notes if n.startswith("int8 evidence:")]
        assert evidence and " int8 x" in evidence[0] and " uint8 x" in evidence[0], case_notes


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
