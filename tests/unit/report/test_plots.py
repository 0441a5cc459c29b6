"""Report pieces people read, in process: the plot (report/plots.py), the xlsx cells as
numbers and the case sheet (case_files.py), index.html's rows (index_page.py). Comparisons
are real ones (compare_arrays on arrays); nothing runs Paddle."""
import json

import numpy as np
import pytest

from pytest_paddle_infer.report import case_files
from pytest_paddle_infer.report.index_page import render
from pytest_paddle_infer.report.plots import tensor_label, thinned
from pytest_paddle_infer.verdict.compare import compare_arrays
from pytest_paddle_infer.protocol import CaseResult, IntermediateRow

RNG = np.random.default_rng(0)
CASE = "m[1x3-onednn_bf16]"


def _result(intermediates: int, drift_from: int = 3) -> CaseResult:
    rows = []
    for i in range(intermediates):
        base = RNG.standard_normal((2, 3, 4)).astype(np.float32)
        cand = base + (np.float32(0.01) if i >= drift_from else 0)
        c = compare_arrays(f"0x55aa{i:04d}_inner_var_{i}", cand, base, 1e-3, 1e-3, op_type="pd_op.conv2d")
        rows.append(IntermediateRow(i, c, c.name, "structure", False))
    out = RNG.standard_normal((2, 5)).astype(np.float32)
    outputs = [compare_arrays("logits", out + 0.5, out, 1e-3, 1e-2),
               compare_arrays("boxes", out, out, 1e-3, 1e-2)]
    return CaseResult(CASE, outputs, "auto", "enable_mkldnn()", "abcd", intermediates=rows)


def test_labels_are_names_thinned_evenly():
    assert tensor_label("0x55bb6f0a0c601795505103235712089_inner_var_24") == "inner_var_24"
    assert tensor_label("conv2d_0.tmp_0") == "conv2d_0.tmp_0"
    assert len(tensor_label("x" * 80)) == 28
    picks = thinned(284)
    assert len(picks) == 40 and picks[0] == 0 and picks[-1] == 283
    assert thinned(5) == [0, 1, 2, 3, 4]


def test_the_plot_keeps_atol_and_rtol_apart_names_tensors_and_bars_outputs():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    from pytest_paddle_infer.report.plots import figure

    fig = figure(_result(60))
    top, bottom = fig.axes
    assert top.get_ylabel() == "Max Atol" and bottom.get_ylabel() == "Max Rtol"  # one tolerance each
    assert [t.get_text() for t in top.get_legend().get_texts()] == ["Max Atol", "atol 0.001"]
    assert [t.get_text() for t in bottom.get_legend().get_texts()] == ["Max Rtol", "rtol 0.001"]
    labels = [t.get_text() for t in bottom.get_xticklabels()]
    assert len(labels) == 40 and labels[0] == "inner_var_0" and labels[-1] == "inner_var_59"
    assert any("first divergence: #3 inner_var_3" in t.get_text() for t in top.texts)
    plt.close(fig)

    fig = figure(_result(0))  # outputs only: one bar per output, not a lone dot
    top, bottom = fig.axes
    assert len(top.patches) == 2 and len(bottom.patches) == 2
    assert [t.get_text() for t in bottom.get_xticklabels()] == ["logits", "boxes"]
    heights = [p.get_height() for p in top.patches]
    assert heights[0] == pytest.approx(0.5, rel=1e-6) and heights[1] == 1e-12  # zero: at the floor
    plt.close(fig)


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
