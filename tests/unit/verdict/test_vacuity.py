"""Outputs that cannot fail (verdict/vacuity.py), the baseline's spread (compare.py) and how
both are shown (report/text.py, report/case_files.py): pure numpy, no pytest session."""
from __future__ import annotations

import numpy as np
import pytest

from pytest_paddle_infer.report.case_files import case_summary
from pytest_paddle_infer.report.text import failure_message, outputs_table, properties, \
    summary_row, summary_table
from pytest_paddle_infer.verdict import compare
from pytest_paddle_infer.verdict.compare import compare_arrays
from pytest_paddle_infer.protocol import CaseResult
from pytest_paddle_infer.verdict.vacuity import judge_outputs, mark_strict, reasons


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def judged(expected, seeds=None, atol=1e-4, rtol=1e-4):
    row = compare_arrays("out", expected, expected, atol, rtol)
    return reasons(row, expected, seeds)


RNG = np.random.default_rng(0)


def test_spread_is_computed_in_chunks(monkeypatch):
    monkeypatch.setattr(compare, "CHUNK", 7)
    x = RNG.normal(3.0, 2.0, size=1000).astype(np.float32)
    row = compare_arrays("x", x, x)
    assert row.std_expected == pytest.approx(float(x.astype(np.float64).std()), rel=1e-9)
    assert row.mean_abs_expected == pytest.approx(float(np.abs(x.astype(np.float64)).mean()), rel=1e-9)


def test_one_hot_softmax_is_flagged():
    found = judged(softmax(RNG.normal(size=(2, 1000)) * 1000))
    assert len(found) == 1 and found[0].startswith("one-hot")


def test_flat_softmax_is_flagged():
    found = judged(softmax(RNG.normal(size=(1, 1000)) * 1e-3))
    assert found[0].startswith("flat: probabilities") and "within the tolerance 0.0001" in found[0]


def test_magnitude_within_tolerance_is_flagged():
    found = judged((RNG.uniform(0.4, 0.6, size=(1, 100)) * 4e-4).astype(np.float32))
    assert found[0].startswith("spread within tolerance: values")


def test_empty_output_is_flagged():
    assert judged(np.zeros((0, 6), np.float32)) == ["empty: 0 elements (shape [0, 6])"]


def test_output_the_same_for_two_seeds_is_flagged():
    out = RNG.normal(size=(1, 10)).astype(np.float32)
    found = judged(out, (out, out.copy(), (0, 1)))
    assert found == ["does not depend on the input: the same for input seeds 0 and 1 within a "
                     "tenth of the tolerance (max abs 0)"]
    assert judged(out, (out, out + 1e-2, (0, 1))) == []


@pytest.mark.parametrize("expected", [
    RNG.normal(size=(1, 1000)).astype(np.float32),  # logits
    softmax(RNG.normal(size=(2, 4))),  # an uncertain softmax over few classes
    RNG.uniform(0, 64, size=(1, 4, 4)).astype(np.float32),  # boxes
    np.array([3], np.int64),  # one element: the seed check judges it
])
def test_outputs_that_can_fail_are_not_flagged(expected):
    assert judged(expected) == []


def test_a_failing_output_is_not_judged():
    a = np.zeros((0, 6), np.float32)
    row = compare_arrays("out", np.ones((1, 6), np.float32), a)
    assert reasons(row, a) == []


def result_with(expected):
    rows = [compare_arrays("fetch_name_0", expected, expected)]
    judge_outputs(rows, {"fetch_name_0": expected}, {"fetch_name_0": expected})
    return CaseResult("m[1x8-cpu_fp32]", rows, "auto", "recipe", "digest")


def test_reports_carry_ranges_and_the_warning():
    result = result_with(softmax(RNG.normal(size=(1, 10)) * 1000))
    props = dict(properties(result))
    assert props["paddle_ranges"].startswith("fetch_name_0: min ") and " std " in props["paddle_ranges"]
    assert props["paddle_vacuous"].startswith("fetch_name_0: one-hot")
    summary = case_summary(result)
    assert summary["passed"] and summary["warnings"][0].startswith("fetch_name_0 cannot fail")
    assert summary["outputs"][0]["max"] == 1.0 and summary["outputs"][0]["elements"] == 10
    row = summary_row("m[1x8-cpu_fp32]", "passed", {"paddle_model": "m", "paddle_shape": "1x8",
                                                     "paddle_run_mode": "cpu_fp32", **props}, 0.1)
    assert "passed*" in summary_table([row]).splitlines()[2]
    lines = outputs_table([row])
    assert lines[0].splitlines()[2].split()[:3] == ["m", "1x8", "fetch_name_0"]
    assert lines[-1].startswith("  m[1x8-cpu_fp32]: fetch_name_0: one-hot")


def test_strict_fails_the_output():
    result = result_with(np.zeros((0, 6), np.float32))
    assert result.passed and result.vacuous
    mark_strict(result.vacuous)
    assert not result.passed
    assert failure_message(result).startswith(
        "m[1x8-cpu_fp32]: 1 of 1 outputs cannot fail under their tolerance (--paddle-strict); "
        "first: fetch_name_0 (cannot fail under its tolerance: empty: 0 elements")
