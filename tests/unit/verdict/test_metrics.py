"""Metrics beside atol/rtol/cosine (verdict/compare.py): SQNR, relative L2, percentiles, the
smallest passing tolerances, near-zero baselines, and their bounds."""
import math

import numpy as np
import pytest

from pytest_paddle_infer.verdict.compare import compare_arrays
from pytest_paddle_infer.verdict.rows import ceil_significant, comparison_table, needed


def test_sqnr_rel_l2_and_percentiles_against_numpy():
    rng = np.random.default_rng(3)
    e = rng.normal(size=5000)
    a = e + rng.normal(scale=1e-2, size=e.size)
    row = compare_arrays("t", a, e, 1e-4, 1e-4)
    err = a - e
    assert row.sqnr_db == pytest.approx(10 * math.log10((e ** 2).sum() / (err ** 2).sum()))
    assert row.rel_l2 == pytest.approx(np.linalg.norm(err) / np.linalg.norm(e))
    assert (row.p50_abs, row.p90_abs, row.p99_abs) == pytest.approx(np.percentile(np.abs(err), [50, 90, 99]), rel=1e-6)
    same = compare_arrays("t", e, e)
    assert same.sqnr_db == math.inf and same.rel_l2 == 0.0


@pytest.mark.parametrize("rtol,atol", [(1e-4, 1e-4), (0.0, 1e-3), (1e-2, 0.0)])
def test_the_stated_smallest_tolerances_pass_and_anything_smaller_fails(rtol, atol):
    rng = np.random.default_rng(4)
    e = rng.normal(size=(50, 40)).astype("float32")
    a = e + rng.normal(scale=1e-2, size=e.shape).astype("float32")
    row = compare_arrays("t", a, e, atol, rtol)
    assert row.needed_text.startswith(f"would pass with atol >= {needed(row.atol_needed)} (at rtol={rtol:g}) or rtol >= ")
    atol_ok, rtol_ok = float(needed(row.atol_needed)), float(needed(row.rtol_needed))
    assert compare_arrays("t", a, e, atol_ok, rtol).passed
    assert compare_arrays("t", a, e, atol, rtol_ok).passed
    assert not compare_arrays("t", a, e, row.atol_needed * 0.99, rtol).passed
    assert not compare_arrays("t", a, e, atol, row.rtol_needed * 0.99).passed


def test_no_tolerance_passes_a_new_nan_or_an_error_at_an_exact_zero():
    row = compare_arrays("t", np.array([1.0, np.nan]), np.array([1.0, 2.0]), 0, 0)
    assert math.isinf(row.atol_needed) and "atol >= none (inf)" in row.needed_text
    zero = compare_arrays("t", np.array([1.0, 1e-3]), np.array([1.0, 0.0]), 1e-4, 0)
    assert math.isinf(zero.rtol_needed) and zero.atol_needed == pytest.approx(1e-3)


def test_max_rtol_at_a_near_zero_baseline_is_marked():
    e = np.array([1e-6, 1.0, 2.0, -3.0])
    a = e + np.array([1e-4, 1e-3, -2e-3, 0])
    row = compare_arrays("t", a, e, 1e-2, 1e-2)
    assert row.max_rel_near_zero and row.max_rel == pytest.approx(1e-4 / (1e-6 + 1e-7))
    assert row.max_rel_elsewhere == pytest.approx(1e-3)
    table = comparison_table([row])
    assert f"{row.max_rel:.6g}*" in table
    assert "* Max Rtol at a near-zero baseline value (|base| < 0.001 x the tensor's largest |base|): " \
           "not meaningful there; elsewhere max rtol t 0.001" in table
    assert not compare_arrays("t", e[1:] * 1.001, e[1:]).max_rel_near_zero


def test_metric_bounds_fail_with_their_figures():
    e = np.linspace(-1, 1, 100)
    a = e + 0.01
    row = compare_arrays("t", a, e, 1, 1, sqnr_min=60, rel_l2_max=1e-3, p99_abs_max=1e-3)
    assert [p.split(" ")[0] for p in row.problems] == ["SQNR", "relative", "99th"]
    assert "below sqnr_min 60" in row.problems[0] and "above rel_l2_max 0.001" in row.problems[1]
    assert compare_arrays("t", a, e, 1, 1, sqnr_min=30, rel_l2_max=0.02, p99_abs_max=0.011).passed


def test_ceil_significant_never_rounds_below():
    for v in (0.0018000000000000017, 9.7e-5, 1.94e-4, 0.5, 123456.0, 1e-12):
        up = ceil_significant(v, 2)
        assert up >= v and up <= v * 1.11


def test_assert_tensors_close_states_the_passing_tolerances_and_takes_the_bounds():
    from pytest_paddle_infer import assert_tensors_close

    e = np.linspace(-1, 1, 51)  # holds an exact 0: no rtol passes an error there
    with pytest.raises(AssertionError) as err:
        assert_tensors_close(e + 0.01, e, atol=1e-3, rtol=0, name="logits")
    # 0.01 added in float64 is a hair above 0.01 on some elements: rounded up, it passes
    assert "would pass with atol >= 0.0101 (at rtol=0) or rtol >= none (inf) (at atol=0.001)" in str(err.value)
    assert_tensors_close(e + 0.01, e, atol=0.0101, rtol=0)
    with pytest.raises(AssertionError, match="SQNR .* below sqnr_min 60"):
        assert_tensors_close(e + 0.01, e, atol=1, rtol=0, sqnr_min=60)
