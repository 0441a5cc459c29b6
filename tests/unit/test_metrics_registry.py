"""A metric is one entry of verdict/metrics.py's registry: an entry added there, and nowhere
else, is a bound that Rule, the suite schema, markers, the verdict, the tables, the report
files and the suggested tolerances all take. The made-up entry bounds the 90th percentile of
|error|, a figure compare.py already measures but no tolerance bounds."""
from __future__ import annotations

import importlib
import json
import pickle
import sys
import textwrap

import numpy as np
import pytest

PACKAGE = "pytest_paddle_infer"


def _ours() -> list:
    return [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]


@pytest.fixture
def fresh():
    """The package imported anew with the made-up entry added to the registry before any other
    module reads it; the modules imported before come back afterwards."""
    saved = {n: sys.modules.pop(n) for n in _ours()}
    try:
        metrics = importlib.import_module(PACKAGE + ".verdict.metrics")
        metrics.METRICS += (metrics.Metric(
            "p90_abs", "p90_abs_max", max, "90th percentile of |c - b|", "P90 Abs", ".3g",
            "90th percentile of |error| {:.4g}", metrics.scaled),)
        yield lambda module: importlib.import_module(f"{PACKAGE}.{module}")
    finally:
        for name in _ours():
            del sys.modules[name]
        sys.modules.update(saved)


E = np.linspace(-1.0, 1.0, 101)
A = E + 0.01  # |error| 0.01 everywhere, a hair more on some elements (float64 rounding)


def test_rule_and_the_suite_schema_take_the_new_bound(fresh, tmp_path):
    tolerances, suite = fresh("verdict.tolerances"), fresh("cases.suite")
    rule = tolerances.Rule(atol=1e-3, rtol=0.0, p90_abs_max=0.02)
    assert "p90_abs_max" in tolerances.RULE_KEYS and "p90_abs_max" in suite.MARKER_KEYS
    assert rule.describe() == "atol=0.001 rtol=0 p90_abs_max=0.02"
    assert pickle.loads(pickle.dumps(rule)) == rule  # Rule crosses the executor's pipe
    assert suite.marker_rule((), {"p90_abs_max": 0.02}, suite.Where("test_x.py", 3)) == \
        tolerances.Rule(p90_abs_max=0.02)
    path = tmp_path / "paddle_s.yaml"
    path.write_text(textwrap.dedent("""
        defaults:
          tolerances: {p90_abs_max: 0.05, outputs: {'#0': {p90_abs_max: 0.02}}}
        models:
          tiny_cnn: {run_modes: [cpu_fp32]}
    """))
    ctx = suite.Context(file=path.name, base_dir=tmp_path, rootdir=tmp_path, cache_dir=tmp_path / "cache")
    tol = suite.load_suite(path, ctx)[0].case.tolerances
    assert tol.base.p90_abs_max == 0.05 and tol.for_tensor("out", 0).p90_abs_max == 0.02
    path.write_text(path.read_text().replace("0.05", "-1"))
    with pytest.raises(suite.SuiteError, match="p90_abs_max is out of range"):
        suite.load_suite(path, ctx)
    assert "p90_abs_max=None" in fresh("plugin").MARKERS[2]  # pytest --markers


def test_the_verdict_judges_by_the_new_bound(fresh):
    compare, tolerances = fresh("verdict.compare"), fresh("verdict.tolerances")
    row = compare.compare_arrays("t", A, E, 1.0, 1.0, p90_abs_max=1e-3)
    assert row.problems == [f"90th percentile of |error| {row.p90_abs:.4g} above p90_abs_max 0.001"]
    assert compare.compare_arrays("t", A, E, 1.0, 1.0, p90_abs_max=0.011).passed
    ruled = compare.compare_rule("t", A, E, tolerances.Rule(atol=1.0, rtol=1.0, p90_abs_max=1e-3))
    assert ruled.problems == row.problems and ruled.bounds == {"p90_abs_max": 1e-3}
    with pytest.raises(AssertionError, match="above p90_abs_max"):
        compare.assert_tensors_close(A, E, atol=1.0, p90_abs_max=1e-3)


def test_the_tables_and_report_files_show_the_new_figure(fresh):
    rows, case_files = fresh("verdict.rows"), fresh("report.case_files")
    row = fresh("verdict.compare").compare_arrays("t", A, E, 1.0, 1.0, p90_abs_max=1e-3)
    assert rows.TABLE_COLUMNS[-2:] == ("P90 Abs", "Result")
    header, _, cells = rows.comparison_table([row]).splitlines()[:3]
    assert "P90 Abs" in header and f"{row.p90_abs:.3g}" in cells.split()
    assert case_files.COLUMNS[-3:] == ("P90 Abs", "Local Atol", "Local Result")
    result = fresh("protocol").CaseResult("c", [row], "auto", "", "")
    cells = dict(zip(case_files.COLUMNS, case_files.table(result)[0]))
    assert cells["P90 Abs"] == row.p90_abs and cells["P99 Abs"] == row.p99_abs
    assert case_files.case_summary(result)["outputs"][0]["p90_abs"] == row.p90_abs


def test_suggestions_and_the_suite_writer_take_the_new_bound(fresh):
    suggest, metrics = fresh("verdict.suggest"), fresh("verdict.metrics")
    compare = fresh("verdict.compare")
    seeds = [[compare.compare_arrays("out", a, E, 1.0, 1.0, p90_abs_max=1.0)] for a in (A, E + 0.02)]
    out = json.loads(suggest.case_suggestion([0, 1], seeds, 2.0))["outputs"][0]
    assert out["p90_abs"] == seeds[1][0].p90_abs  # the worse seed's
    assert out["suggested"]["p90_abs_max"] == metrics.scaled(seeds[1][0].p90_abs, 2.0)
    assert fresh("cases.suite_writer").LOOSEST["p90_abs_max"] is max


def test_the_registry_is_what_the_modules_read():
    """Without the made-up entry: the keys and columns of today, in their order."""
    from pytest_paddle_infer.cases.suite_writer import LOOSEST
    from pytest_paddle_infer.report.case_files import METRIC_COLUMNS
    from pytest_paddle_infer.verdict.metrics import METRICS
    from pytest_paddle_infer.verdict.rows import TABLE_COLUMNS
    from pytest_paddle_infer.verdict.tolerances import RULE_KEYS

    assert RULE_KEYS == ("atol", "rtol", "cosine_min", "sqnr_min", "rel_l2_max", "p99_abs_max")
    assert TABLE_COLUMNS[7:] == ("Cosine", "SQNR dB", "Rel L2", "P99 Abs", "Result")
    assert METRIC_COLUMNS == ("SQNR dB", "Rel L2", "P99 Abs")  # Cosine sits among the extra columns
    assert {m.bound: m.worst for m in METRICS} == {k: v for k, v in LOOSEST.items() if k != "atol"}
