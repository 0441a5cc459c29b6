"""--paddle-report end to end, read the way people read it: index.html opened in a real
headless browser (Debian's chromium), the xlsx opened with openpyxl, the terminal's pointer
to the report. One session holds a failure with intermediates, passes, a skip, an error and a
crash, in an order that sorting would change."""
import importlib.util
import json
import re
import shlex
import shutil
import subprocess
from html.parser import HTMLParser

import numpy  # noqa: F401  imported before pytester snapshots sys.modules (numpy loads once)
import pytest

from helpers import DIFFERING_MODE, summary_table
from pytest_paddle_infer.engine.service import FAULT_ENV
from pytest_paddle_infer.files import safe_file_stem

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

DIFFERING = f"{DIFFERING_MODE}+threads=2"
MODES = (DIFFERING, "cpu_fp32", "onednn_fp32", "trt_fp16", "cpu_fp32+memory_optim")
MODELS = ("tiny_cnn", "tiny_detector")
SHAPES = {"tiny_cnn": "1x3x32x32", "tiny_detector": "1x3x64x64"}
CRASHED = "tiny_detector[1x3x64x64-onednn_fp32]"
FAILED = ("tiny_cnn[1x3x32x32-onednn_fp32]", f"tiny_cnn[1x3x32x32-{DIFFERING}]")
# tiny_cnn's oneDNN cases differ from the baseline on every CPU (helpers.DIFFERING_MODE): at
# zero tolerance they fail; every other case is judged at 1e-3
TOLERANCES = """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        zero = item.name.startswith("tiny_cnn[") and "-onednn_" in item.name
        item.add_marker(pytest.mark.paddle_tolerance(atol=0 if zero else 1e-3, rtol=0 if zero else 1e-3))
"""
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")


def case_ids():
    return [f"{m}[{SHAPES[m]}-{mode}]" for m in MODELS for mode in MODES]


def chromium(tmp_path, *args):
    """Run the browser with a fresh profile; its stdout (the DOM for --dump-dom)."""
    profile = tmp_path / f"chromium-profile-{len(list(tmp_path.glob('chromium-profile-*')))}"
    done = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class Rows(HTMLParser):
    """The cases table as the browser built it: each row's class and cell texts, links, images."""

    def __init__(self):
        super().__init__()
        self.rows, self.links, self.images = [], [], []
        self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr":
            self.rows.append({"class": attrs.get("class", ""), "cells": []})
        elif tag in ("td", "th") and self.rows:
            self._cell = []
            self.rows[-1]["cells"].append(self._cell)
        elif tag == "a":
            self.links.append(attrs["href"])
        elif tag == "img":
            self.images.append(attrs["src"])

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y "
                                             "chromium); the report page is checked in a real browser")
def test_the_report_reads_right_in_a_browser(run_pytest, pytester, monkeypatch, xdist_mode, tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib is not installed: no plots to show")
    monkeypatch.setenv(FAULT_ENV, f"building the candidate:SIGABRT:{CRASHED}")
    pytester.makeconftest(TOLERANCES)
    result = run_pytest(*[f"--paddle-model={m}" for m in MODELS], f"--run-mode={','.join(MODES)}",
                        "--paddle-intermediates=all", "--paddle-report=out", *xdist_mode)
    out = pytester.path / "out"
    ids = case_ids()
    result.stdout.fnmatch_lines([f"paddle-infer: report: {out / 'index.html'} (summary.json and each case's*"])
    # the summary and summary.json in the order given (sorting would put cpu_fp32 first)
    assert [f"{r[0]}[{r[1]}-{r[2]}]" for r in summary_table(result)] == ids
    summary = json.loads((out / "summary.json").read_text())
    assert [c["case"] for c in summary["cases"]] == ids
    status = {c["case"]: c["status"] for c in summary["cases"]}
    assert status[CRASHED] == "crashed" and [status[c] for c in FAILED] == ["failed", "failed"]
    assert status["tiny_detector[1x3x64x64-trt_fp16]"] == "skipped"
    assert status["tiny_detector[1x3x64x64-cpu_fp32+memory_optim]"] == "error"
    env = summary["environment"]
    assert env["Paddle"].startswith("paddlepaddle ") and env["commit"] and env["date"].endswith("UTC")
    assert "--paddle-report=out" in env["command line"] and "avx" in env["CPU flags"]
    assert all(shlex.quote(p.name) == p.name for p in out.iterdir())  # no quoting in a shell

    # the page, as chromium parses and lays it out
    dom = chromium(tmp_path, "--dump-dom", (out / "index.html").as_uri())
    page = Rows()
    page.feed(dom)
    env_rows = {r["cells"][0][0]: "".join(r["cells"][1]) for r in page.rows if len(r["cells"]) == 2}
    assert env_rows["Paddle"] == env["Paddle"] and env_rows["CPU flags"] == env["CPU flags"]
    cases = [r for r in page.rows if len(r["cells"]) == 9 and r["class"] != ""]
    assert ["".join(r["cells"][0]) for r in cases] == ids  # one row per case, crashed and errored too
    for row, case_id in zip(cases, ids):
        assert row["class"] == status[case_id] and "".join(row["cells"][1]).rstrip("*") == status[case_id]
    crashed = cases[ids.index(CRASHED)]
    assert "killed by SIGABRT while building the candidate" in "".join(crashed["cells"][6])
    failed = cases[ids.index(FAILED[1])]
    assert re.search(r"first divergence: onednn_op\.fused_conv2d \S+", "".join(failed["cells"][6]))
    assert f"{DIFFERING}: pir inference.json" in "".join(failed["cells"][7])  # the evidence
    assert failed["cells"][4] == ["0/10"] or "/10" in "".join(failed["cells"][4])
    for case_id in ids:  # every checked case links its files; every link resolves
        if status[case_id] in ("passed", "failed"):
            stem = safe_file_stem(case_id)
            assert {f"{stem}.{ext}" for ext in ("xlsx", "json", "csv", "png")} <= set(page.links)
    assert all((out / link).is_file() for link in page.links)
    failing_plots = {safe_file_stem(c) + ".png" for c in ids if status[c] == "failed"}
    assert set(page.images) == failing_plots and len(failing_plots) == 2  # inline, failures only

    shot = tmp_path / "index.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,2400", (out / "index.html").as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000

    # the xlsx: figures are numbers, the case is named inside
    book = openpyxl.load_workbook(out / f"{safe_file_stem(FAILED[1])}.xlsx")
    sheet = book["tensors"]
    header = [c.value for c in sheet[1]]
    for row in sheet.iter_rows(min_row=2, values_only=True):
        cells = dict(zip(header, row))
        for column in ("Mismatched Elements", "Elements", "Worst Index", "NaN", "Inf"):
            assert isinstance(cells[column], int), (column, cells[column])
        for column in ("Max Atol", "Max Rtol", "Min Val", "Min Base", "Max Val", "Max Base"):
            assert isinstance(cells[column], (int, float)), (column, cells[column])
    assert dict(book["case"].iter_rows(values_only=True))["case"] == FAILED[1]
