"""index.html shows what --paddle-localize found for a failing case: the culprit and the run
mode that passes, beside the first divergence and the first bad op; a max rel at a near-zero
baseline value is marked * as in the terminal (index_page.py)."""
from pytest_paddle_infer.report.index_page import render, what_happened

LOCALIZED = {"case": "tiny_cnn[1x3x32x32-onednn_bf16]", "status": "failed",
             "first_divergence": "(output) fetch_name_0",
             "culprit": "cpu_bfloat16_placement_pass",
             "suggested_run_mode": "onednn_bf16+delete_pass=cpu_bfloat16_placement_pass",
             "first_bad_op": "op 0 pd_op.conv2d (op0:conv2d:0)"}


def test_the_culprit_and_the_suggested_run_mode_follow_the_first_divergence():
    assert what_happened(LOCALIZED).splitlines() == [
        "first divergence: (output) fetch_name_0",
        "culprit: cpu_bfloat16_placement_pass; suggested run mode: "
        "onednn_bf16+delete_pass=cpu_bfloat16_placement_pass",
        "first bad op: op 0 pd_op.conv2d (op0:conv2d:0)"]
    assert "suggested run mode: onednn_bf16+delete_pass=cpu_bfloat16_placement_pass" in render([LOCALIZED])


def test_a_case_not_localized_says_nothing_of_it():
    plain = {k: v for k, v in LOCALIZED.items() if k not in ("culprit", "suggested_run_mode", "first_bad_op")}
    assert what_happened(plain) == "first divergence: (output) fetch_name_0"


def test_max_rel_at_a_near_zero_baseline_is_marked_as_in_the_terminal():
    """From a real comparison: a baseline with a near-zero element where the error is largest."""
    import numpy as np

    from pytest_paddle_infer.report.case_files import case_summary
    from pytest_paddle_infer.verdict.compare import compare_arrays
    from pytest_paddle_infer.protocol import CaseResult

    base = np.array([1e-6, 1.0, -2.0, 3.0], np.float32)
    near = compare_arrays("out", base + np.float32(0.01), base, 1.0, 1.0)
    summary = {**case_summary(CaseResult("m[1-cpu_fp32]", [near], "auto", "x", "abcd")),
               "status": "passed"}
    assert summary["max_rel_elsewhere"] == near.max_rel_elsewhere < near.max_rel
    page = render([summary])
    assert f'title="at a near-zero baseline value; elsewhere {near.max_rel_elsewhere:.4g}">' \
           f'{near.max_rel:.4g}*</td>' in page
    far = compare_arrays("out", base * np.float32(1.01), base, 1.0, 1.0)  # relative error alike
    summary = {**case_summary(CaseResult("m[1-cpu_fp32]", [far], "auto", "x", "abcd")), "status": "passed"}
    assert summary["max_rel_elsewhere"] is None
    assert f'<td class="num">{far.max_rel:.4g}</td>' in render([summary])
