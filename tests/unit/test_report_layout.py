"""index.html laid out by a real browser: long case ids (TensorRT dynamic-shape toggles) wrap
inside the case column instead of widening the table past the window (index_page.py STYLE).
The page's width is measured by headless Chromium; skipped where it is not installed."""
import re
import shutil
import subprocess

import pytest

from pytest_paddle_infer.report.index_page import render

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
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
                           "--window-size=1200,800", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    scroll, client = map(int, re.search(r"<title>(\d+)x(\d+)</title>", done.stdout).groups())
    assert scroll <= client, f"the page is {scroll} px wide in a {client} px window"
