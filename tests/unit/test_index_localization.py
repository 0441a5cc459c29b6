"""index.html shows what --paddle-localize found for a failing case: the culprit and the run
mode that passes, beside the first divergence and the first bad op (index_page.py)."""
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
