"""index.html shows what --paddle-localize found for a failing case: the culprit and the run
mode that passes, beside the first divergence and the first bad op; a max rel at a near-zero
baseline value is marked * as in the terminal (index_page.py)."""
import re
import shutil
import subprocess

import pytest

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


# ---------------------------------------------------------------------------------------
# index.html's count line says 'case' for one case and 'cases' for more (index_page.py).
# ---------------------------------------------------------------------------------------


def _case(name: str, status: str) -> dict:
    return {"status": status, "paddle_case": name, "reason": "", "message": ""}


def test_one_case_is_a_case():
    page = render([_case("a[1-cpu_fp32]", "failed")], {})
    assert '<p class="counts">1 case: <span>failed: 1</span></p>' in page


def test_two_cases_are_cases():
    page = render([_case("a[1-cpu_fp32]", "failed"), _case("b[1-cpu_fp32]", "failed")], {})
    assert '<p class="counts">2 cases: <span>failed: 2</span></p>' in page


# ---------------------------------------------------------------------------------------
# index.html laid out by a real browser: long case ids (TensorRT dynamic-shape toggles) wrap
# inside the case column instead of widening the table past the window (index_page.py STYLE).
# The page's width is measured by headless Chromium; skipped where it is not installed.
# ---------------------------------------------------------------------------------------


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LONG_ID = ("resnet50[8x3x224x224-trt_fp16+dynamic_shape=x:1x3x224x224:4x3x224x224:8x3x224x224"
           "+dynamic_shape=im_shape:1x2:2x2:4x2+calib_batches=32]")
REASON = "trt_fp16 needs Paddle built with CUDA and TensorRT; paddlepaddle 3.3.1 installed here is CPU-only"
EVIDENCE = {"candidate": {"role": "cpu_fp32", "format": "pir", "ops": {f"pd_op.op{i}": 1 for i in range(12)}}}
MEASURE = ("<script>document.title = document.documentElement.scrollWidth + 'x' + "
           "document.documentElement.clientWidth</script></body>")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_long_case_ids_do_not_widen_the_page(tmp_path):
    cases = [{"case": LONG_ID, "status": "skipped", "reason": REASON, "message": REASON, "files": []},
             {"case": "tiny_cnn[1x3x32x32-cpu_fp32]", "status": "passed", "max_abs": 0.0, "max_rel": 0.0,
              "mismatched": 0, "total": 10, "evidence": EVIDENCE, "time": "0.01s",
              "files": ["a.xlsx", "a.json", "a.csv", "a.png"]}]
    page = tmp_path / "index.html"
    page.write_text(render(cases, {"Paddle": "paddlepaddle 3.3.1"}).replace("</body>", MEASURE))
    for attempt in range(2):  # a headless browser that fails to start on a loaded machine: once more
        done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--disable-background-networking", "--disable-component-update",
                               "--disable-sync", f"--user-data-dir={tmp_path / f'profile-{attempt}'}",
                               "--window-size=1200,800", "--dump-dom", page.as_uri()],
                              capture_output=True, text=True, timeout=120)
        measured = re.search(r"<title>(\d+)x(\d+)</title>", done.stdout)
        if measured:
            break
    assert measured, f"chromium gave no page (exit {done.returncode}): {done.stderr[-2000:]}"
    scroll, client = map(int, measured.groups())
    assert scroll <= client, f"the page is {scroll} px wide in a {client} px window"
