"""The per-tensor files (xlsx, json, csv) carry the terminal table's SQNR dB, Rel L2 and P99
Abs beside the seed's columns (case_files.py); an exact tensor's SQNR is "inf" as text."""
import csv
import json

import numpy as np
import pytest

from pytest_paddle_infer.report import case_files
from pytest_paddle_infer.verdict.compare import compare_arrays
from pytest_paddle_infer.protocol import CaseResult

CASE = "m[1x5-onednn_bf16]"
BASE = np.linspace(-2.0, 3.0, 50, dtype=np.float32).reshape(5, 10)


def _result() -> CaseResult:
    drifted = compare_arrays("logits", BASE * np.float32(1.01), BASE, 1e-3, 1e-3)
    exact = compare_arrays("boxes", BASE, BASE, 1e-3, 1e-3)
    return CaseResult(CASE, [drifted, exact], "auto", "enable_mkldnn()", "abcd")


def test_metrics_in_json_csv_and_xlsx(tmp_path):
    result = _result()
    drifted = result.rows[0]
    written = case_files.write_case(tmp_path, CASE, result)
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
