"""report/case_files.py: the per-case files (xlsx, json, csv) with the terminal table's
figures, the program, and index.html's rows and summary.json, from real comparisons
(compare_arrays on arrays); nothing runs Paddle."""
import csv
import json

import numpy as np
import pytest

from pytest_paddle_infer.protocol import CaseResult
from pytest_paddle_infer.report import case_files
from pytest_paddle_infer.report.case_files import case_summary, write_index
from pytest_paddle_infer.report.index_page import render
from pytest_paddle_infer.report.text import properties
from pytest_paddle_infer.verdict.compare import compare_arrays

from unit.report.test_plots import CASE, _result

COLUMNS_CASE = "m[1x5-onednn_bf16]"
BASE = np.linspace(-2.0, 3.0, 50, dtype=np.float32).reshape(5, 10)


def _columns_result() -> CaseResult:
    drifted = compare_arrays("logits", BASE * np.float32(1.01), BASE, 1e-3, 1e-3)
    exact = compare_arrays("boxes", BASE, BASE, 1e-3, 1e-3)
    return CaseResult(COLUMNS_CASE, [drifted, exact], "auto", "enable_mkldnn()", "abcd")


def test_metrics_in_json_csv_and_xlsx(tmp_path):
    result = _columns_result()
    drifted = result.rows[0]
    written = case_files.write_case(tmp_path, COLUMNS_CASE, result)
    doc = json.loads((tmp_path / next(w for w in written if w.endswith(".json"))).read_text())
    rows = [dict(zip(doc["columns"], r)) for r in doc["rows"]]
    assert rows[0]["SQNR dB"] == pytest.approx(drifted.sqnr_db) and 39 < rows[0]["SQNR dB"] < 41
    assert rows[0]["Rel L2"] == pytest.approx(0.01, rel=1e-3)
    assert rows[0]["P99 Abs"] == pytest.approx(drifted.p99_abs)
    assert (rows[1]["SQNR dB"], rows[1]["Rel L2"], rows[1]["P99 Abs"]) == ("inf", 0.0, 0.0)
    with open(tmp_path / next(w for w in written if w.endswith(".csv")), newline="") as f:
        table = list(csv.DictReader(f))
    assert table[1]["SQNR dB"] == "inf" and float(table[0]["Rel L2"]) == pytest.approx(0.01, rel=1e-3)
    openpyxl = pytest.importorskip("openpyxl")
    sheet = openpyxl.load_workbook(tmp_path / next(w for w in written if w.endswith(".xlsx")))["tensors"]
    header = [c.value for c in sheet[1]]
    cells = {h: c.value for h, c in zip(header, sheet[2])}
    assert isinstance(cells["SQNR dB"], float) and cells["P99 Abs"] == pytest.approx(drifted.p99_abs)


def test_reports_carry_the_program():
    result = CaseResult("tiny_cnn[1x3x32x32-cpu_fp32]", [], "auto", "recipe", "d",
                        program="pir inference.json", program_file="/c/inference.json",
                        program_choice="default: the model's own format")
    assert ("paddle_program", "pir inference.json") in properties(result)
    summary = case_summary(result)
    assert summary["program"] == "pir inference.json" and summary["program_file"] == "/c/inference.json"
    assert summary["program_choice"] == "default: the model's own format"


def test_xlsx_figures_are_numbers_and_the_case_is_named_inside(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    written = case_files.write_case(tmp_path, CASE, _result(4))
    assert all(" " not in w and "[" not in w for w in written)
    book = openpyxl.load_workbook(tmp_path / next(w for w in written if w.endswith(".xlsx")))
    sheet = book["tensors"]
    header = [c.value for c in sheet[1]]
    assert header[:8] == list(case_files.SEED_COLUMNS)
    row = {h: c.value for h, c in zip(header, sheet[sheet.max_row - 1])}  # the logits output
    assert row["Mismatched Elements"] == 10 and row["Elements"] == 10
    assert isinstance(row["Max Atol"], float) and isinstance(row["Min Val"], float)
    assert isinstance(row["Worst Index"], int) and row["Worst Position"].startswith("[")
    assert row["Min Val(base)"].endswith(")")  # the seed's pair, as the seed prints it
    case_sheet = dict(book["case"].iter_rows(values_only=True))
    assert case_sheet["case"] == CASE and book.properties.title == CASE
    doc = json.loads((tmp_path / next(w for w in written if w.endswith(".json"))).read_text())
    assert doc["summary"]["case"] == CASE and doc["rows"][-2][3] == 10


def test_index_rows_follow_the_given_order_with_errors_and_inline_failure_plots(tmp_path):
    failed = _result(4)
    failed.case_id = "z[1-onednn_bf16]"
    case_files.write_case(tmp_path, "z[1-onednn_bf16]", failed)
    outcomes = {  # given order: not sorted
        "z[1-onednn_bf16]": {"status": "failed", "paddle_case": "z[1-onednn_bf16]", "time": "1.20s"},
        "a[1-cpu_fp32]": {"status": "crashed", "paddle_case": "a[1-cpu_fp32]",
                          "reason": "the executor process was killed by SIGABRT",
                          "message": "the executor process was killed by SIGABRT\nrecipe: x"},
    }
    page = case_files.write_index(tmp_path, outcomes, {"Paddle": "paddlepaddle 9.9", "date": "today"}).read_text()
    assert page.index("z[1-onednn_bf16]") < page.index("a[1-cpu_fp32]")
    assert "<th>Paddle</th><td>paddlepaddle 9.9</td>" in page
    assert "killed by SIGABRT" in page and 'class="crashed"' in page
    if (tmp_path / case_files.safe_file_stem("z[1-onednn_bf16]")).with_suffix(".png").exists():
        assert page.count("<img ") == 1  # the failure's plot, inline
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [c["case"] for c in summary["cases"]] == ["z[1-onednn_bf16]", "a[1-cpu_fp32]"]
    assert summary["environment"]["Paddle"] == "paddlepaddle 9.9"
    assert "<script" not in render([], {})


def test_summary_json_keeps_the_whole_message(tmp_path):
    message = "first line\nrecipe: enable_memory_optim()\nhint: drop +memory_optim"
    write_index(tmp_path, {"t::c": {"status": "error", "paddle_case": "c", "reason": "first line",
                                    "message": message}})
    case = json.loads((tmp_path / "summary.json").read_text())["cases"][0]
    assert case["reason"] == "first line" and case["message"] == message
