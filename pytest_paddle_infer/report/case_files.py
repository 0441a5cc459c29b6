"""Report files: per case ``<stem>.xlsx/.json/.csv/.png``, over all cases ``summary.json`` and
``index.html``; each written atomically, recorded in the manifest, never over a file not ours."""
from __future__ import annotations

import csv
import io
import json
import warnings
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

from ..protocol import CaseResult
from ..verdict.metrics import METRICS
from ..verdict.rows import TensorComparison, pair_text
from ..errors import strip_ansi
from ..files import atomic_write, safe_file_stem
from ..ownership import check_writable, ours, record, recorded
from .index_page import render
from .plots import write_png
from .text import first_divergence

SEED_COLUMNS = ("Operator Type", "Tensor Name", "Shape", "Mismatched Elements", "Max Atol",
                "Max Rtol", "Min Val(base)", "Max Val(base)")
EXTRA_COLUMNS = ("Cosine", "Worst Index", "NaN", "Inf", "Baseline Tensor", "Matched By", "Atol",
                 "Rtol", "Std(base)", "Cannot Fail", "Result")
NUMBER_COLUMNS = ("Elements", "Min Val", "Min Base", "Max Val", "Max Base", "Worst Position")
# --paddle-localize: the error a tensor's op makes on its own (localize/prune.py); empty if not measured
LOCAL_COLUMNS = ("Local Atol", "Local Result")
# metrics (metrics.py) beside the extra columns' Cosine: after the numbers, and in the summary
LATER = tuple(m for m in METRICS if m.column not in EXTRA_COLUMNS)
METRIC_COLUMNS = tuple(m.column for m in LATER)
COLUMNS = SEED_COLUMNS + EXTRA_COLUMNS + NUMBER_COLUMNS + METRIC_COLUMNS + LOCAL_COLUMNS
SUMMARY = "summary.json"
INDEX = "index.html"
FILE_KINDS = ("xlsx", "json", "csv", "png")  # a case's files
REPORT_FILE = "a paddle-infer report"  # what a file the plugin would write over must be
_warned_missing: set = set()


def table(result: CaseResult) -> List[List[object]]:
    """The per-tensor table in execution order, the seed's columns first, figures as numbers."""
    return ([_row(r.comparison, r.comparison.op_type, r.baseline_name, r.matched_by) + _local_cells(r)
             for r in result.intermediates]
            + [_row(c, "(output)", c.name, "output name") + [None, ""] for c in result.rows])


def _local_cells(r) -> List[object]:
    if getattr(r, "local_max_abs", None) is None:
        return [None, ""]
    passed = getattr(r, "local_passed", None)
    return [r.local_max_abs, "ok" if passed else "FAIL: its op alone breaks tolerance"]


def _row(c: TensorComparison, op_type: str, baseline_name: str, matched_by: str) -> List[object]:
    unmatched = not baseline_name
    figures = {m.column: None if unmatched else _metric(getattr(c, m.figure)) for m in METRICS}
    return [
        op_type, c.name,
        "-" if unmatched else c.shape_text,
        None if unmatched or not c.shape_ok else c.mismatched,
        None if unmatched else c.max_abs,
        None if unmatched else c.max_rel,
        "-" if unmatched else pair_text(c.min_actual, c.min_expected, ".6f"),
        "-" if unmatched else pair_text(c.max_actual, c.max_expected, ".6f"),
        figures["Cosine"],
        None if c.worst_index is None else _flat_index(c.worst_index, c.actual_shape),
        c.nan_actual, c.inf_actual, baseline_name, matched_by, c.atol, c.rtol,
        None if unmatched or c.std_expected != c.std_expected else c.std_expected,  # NaN: none
        ", ".join(c.vacuous),
        "ok" if c.passed else "; ".join(c.problems),
        None if unmatched or not c.shape_ok else c.total,
        *((None,) * 4 if unmatched else (_number(c.min_actual), _number(c.min_expected),
                                         _number(c.max_actual), _number(c.max_expected))),
        "" if c.worst_index is None else str(list(c.worst_index)),
        *(figures[column] for column in METRIC_COLUMNS),
    ]


def _metric(value: float):
    """A number a spreadsheet and JSON take: NaN (nothing to compute) empty, infinities as text."""
    if value is None or value != value:
        return None
    return value if abs(value) != float("inf") else ("inf" if value > 0 else "-inf")


def _flat_index(position, shape) -> int:
    """The row-major flat index of ``position`` in ``shape`` (numpy.ravel_multi_index)."""
    flat = 0
    for i, size in zip(position, tuple(shape)[-len(position):] if position else ()):
        flat = flat * int(size) + int(i)
    return flat


def case_summary(result: CaseResult) -> Dict[str, object]:
    return {
        "case": result.case_id, "passed": result.passed, "max_abs": result.max_abs, "max_rel": result.max_rel,
        # set when max_rel is at a near-zero baseline value: the largest relative error elsewhere
        "max_rel_elsewhere": _number(result.max_rel_elsewhere),
        "mismatched": result.mismatched, "total": result.total,
        "first_divergence": first_divergence(result) or None, "divergent_tensors": len(result.divergent),
        "intermediates": len(result.intermediates),
        "unmatched": sum(1 for r in result.intermediates if not r.matched),
        "baseline": result.baseline, "recipe": result.recipe, "inputs_digest": result.inputs_digest,
        "program": result.program, "program_file": result.program_file,
        "program_choice": result.program_choice,
        "notes": [strip_ansi(str(t)) for t in result.notes],  # Paddle log lines come coloured
        "localization": [strip_ansi(str(t)) for t in result.localization],
        "localization_builds": getattr(result, "localization_builds", 0),  # predictors it built
        "culprit": getattr(result, "culprit", ""),
        "suggested_run_mode": getattr(result, "suggested_run_mode", ""),
        "first_bad_op": getattr(result, "first_bad_op", ""), "repro": getattr(result, "repro_dir", ""),
        "evidence": result.evidence,  # what the candidate and baseline ran (evidence.py)
        "problems": [strip_ansi(str(t)) for t in result.problems],
        # the baseline's value range per output, and why an output cannot fail
        "outputs": [{"name": c.name, "elements": c.total, "min": _number(c.min_expected),
                     "max": _number(c.max_expected), "std": _number(c.std_expected),
                     "cannot_fail": list(c.vacuous), **metrics(c)} for c in result.rows],
        "warnings": [f"{c.name} cannot fail under its tolerance: {', '.join(c.vacuous)}"
                     for c in result.vacuous],
    }


def _number(value: float):
    return value if value == value else None  # NaN is not JSON


def metrics(c) -> dict:
    """An output's metrics, passing tolerances and task comparison ("inf" as text: not in JSON)."""
    figures = [m.figure for m in LATER] + ["p50_abs", "p90_abs", "atol_needed", "rtol_needed"]
    return {**{f: _metric(getattr(c, f)) for f in figures},
            "max_rel_near_zero": c.max_rel_near_zero, "max_rel_elsewhere": _metric(c.max_rel_elsewhere),
            "task": c.task, "task_figures": c.task_figures}


def write_case(directory: Path, nodeid: str, result: CaseResult) -> List[str]:
    """Write the case's files, named after its test id; returns their names."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = safe_file_stem(nodeid)
    check_writable(directory, [f"{stem}.{ext}" for ext in FILE_KINDS], REPORT_FILE)
    rows = table(result)
    doc = {"summary": case_summary(result), "columns": list(COLUMNS), "rows": rows}
    atomic_write(directory / f"{stem}.json", json.dumps(doc, indent=1))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    atomic_write(directory / f"{stem}.csv", out.getvalue())
    written = [f"{stem}.json", f"{stem}.csv"]
    if _write_xlsx(directory / f"{stem}.xlsx", rows, doc["summary"]):
        written.append(f"{stem}.xlsx")
    if write_png(directory / f"{stem}.png", result):
        written.append(f"{stem}.png")
    record(directory, written)  # the plugin's own: replaced or deleted by a later run
    return written


def _write_xlsx(path: Path, rows: Sequence[Sequence[object]], summary: Mapping[str, object]) -> bool:
    try:
        from openpyxl import Workbook
        from openpyxl.styles import Font, PatternFill
    except ImportError:  # the report extra is not installed: json and csv still carry it all
        if "openpyxl" not in _warned_missing:  # once per process
            _warned_missing.add("openpyxl")
            from ..session.paddle_warning import PaddleInferWarning  # pytest's: not for paddle-infer-diff

            warnings.warn_explicit(PaddleInferWarning(  # located at the option, not at this line
                "openpyxl is not installed, so no .xlsx files are written (pip install openpyxl, or "
                "pytest-paddle-infer[report]); the .json and .csv files carry the same table"),
                None, "--paddle-report", 0)
        return False
    wb = Workbook()
    ws = wb.active
    ws.title = "tensors"
    ws.append(list(COLUMNS))
    for cell in ws[1]:
        cell.font = Font(bold=True)
    ws.freeze_panes = "A2"
    fail = PatternFill("solid", fgColor="FFC7CE")
    result_col = COLUMNS.index("Result")
    for row in rows:
        ws.append(list(row))
        if row[result_col] != "ok":
            for cell in ws[ws.max_row]:
                cell.fill = fail
    for i, name in enumerate(COLUMNS, start=1):
        ws.column_dimensions[ws.cell(1, i).column_letter].width = max(12, min(40, len(name) + 4))
    _case_sheet(wb, summary, Font)
    atomic_write(path, wb.save)
    return True


def _case_sheet(wb, summary: Mapping[str, object], font) -> None:
    """A second sheet naming the case (the file name only hints at its id) and how it was run."""
    ws = wb.create_sheet("case")
    for key, value in summary.items():
        if isinstance(value, (list, dict)):
            value = json.dumps(value) if value else ""
        ws.append([key, value])
        ws.cell(ws.max_row, 1).font = font(bold=True)
    ws.column_dimensions["A"].width = 22
    ws.column_dimensions["B"].width = 100
    wb.properties.title = str(summary.get("case", ""))


def write_index(directory: Path, outcomes: Mapping[str, Mapping[str, str]],
                environment: Optional[Mapping[str, str]] = None) -> Path:
    """``summary.json`` and ``index.html`` from the per-case JSON files and the outcomes; the page's path."""
    directory.mkdir(parents=True, exist_ok=True)
    check_writable(directory, [SUMMARY, INDEX], REPORT_FILE)
    cases = []
    known = recorded(directory)  # the case files this session's workers wrote
    for nodeid in outcomes:
        stem = safe_file_stem(nodeid)
        outcome = outcomes[nodeid]
        entry: Dict[str, object] = {"test": nodeid, "case": outcome.get("paddle_case", nodeid)}
        case_json = directory / f"{stem}.json"
        if outcome.get("status") in ("passed", "failed") and ours(directory, case_json.name, known):
            entry.update(json.loads(case_json.read_text())["summary"])
            entry["files"] = [f"{stem}.{ext}" for ext in FILE_KINDS
                              if ours(directory, f"{stem}.{ext}", known)]
        else:
            entry["files"] = []
            entry["reason"] = outcome.get("reason", "")  # the first line; "message": all of it
            entry["message"] = outcome.get("message", entry["reason"])
        entry.update(status=outcome.get("status", ""), time=outcome.get("time", ""))
        cases.append(entry)
    atomic_write(directory / SUMMARY, json.dumps({"environment": dict(environment or {}), "cases": cases},
                                                 indent=1))
    page = atomic_write(directory / INDEX, render(cases, environment))
    record(directory, [SUMMARY, INDEX])
    return page
