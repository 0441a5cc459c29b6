"""verdict/compare.py: the comparison in pure numpy: the seed's formulas, non-finite values,
shapes, dtypes, the metrics beside atol/rtol/cosine, the finite fast path and the baseline's
spread."""
import math
import tracemalloc

import numpy as np
import pytest

from pytest_paddle_infer import assert_tensors_close, compare_arrays
import pytest_paddle_infer.verdict.compare as compare
from pytest_paddle_infer.verdict.rows import TensorComparison, comparison_table, needed

from unit.verdict.test_vacuity import RNG


def test_figures_follow_the_seed_formulas():
    rng = np.random.default_rng(0)
    expected = rng.normal(size=(4, 5)).astype("float32")
    actual = expected + rng.normal(scale=1e-3, size=expected.shape).astype("float32")
    row = compare_arrays("out", actual, expected, atol=1e-3, rtol=1e-3)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    assert row.mismatched == int((~np.isclose(a, e, rtol=1e-3, atol=1e-3)).sum())
    assert row.max_abs == pytest.approx(np.abs(a - e).max())
    assert row.max_rel == pytest.approx((np.abs(a - e) / (np.abs(e) + 1e-7)).max())
    assert (row.min_actual, row.max_actual) == (pytest.approx(a.min()), pytest.approx(a.max()))
    assert (row.min_expected, row.max_expected) == (pytest.approx(e.min()), pytest.approx(e.max()))
    assert row.cosine == pytest.approx(np.dot(a.ravel(), e.ravel()) / np.linalg.norm(a) / np.linalg.norm(e))
    assert row.total == 20
    excess = np.abs(a - e) - (1e-3 + 1e-3 * np.abs(e))
    assert row.worst_index == np.unravel_index(np.argmax(excess), a.shape)


def test_identical_tensors_pass():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    row = assert_tensors_close(x, x.copy(), name="same")
    assert row.passed and row.mismatched == 0 and row.max_abs == 0 and row.cosine == pytest.approx(1.0)


def test_failure_message_is_a_table():
    expected = np.zeros((2, 2), dtype="float32")
    actual = expected.copy()
    actual[1, 0] = 0.5
    with pytest.raises(AssertionError) as info:
        assert_tensors_close(actual, expected, atol=1e-4, rtol=1e-4, name="logits")
    text = str(info.value)
    assert "logits differs (atol=0.0001, rtol=0.0001)" in text
    assert "Mismatched" in text and "Max Atol" in text and "1/4" in text and "0.5" in text


def test_nan_in_candidate_where_baseline_is_finite_is_named():
    expected = np.ones(5, dtype="float32")
    actual = expected.copy()
    actual[2] = np.nan
    actual[3] = np.inf
    row = compare_arrays("out", actual, expected)
    assert not row.passed
    assert row.nan_actual == 1 and row.inf_actual == 1 and row.new_nonfinite == 2
    assert any("1 NaN and 1 Inf in the candidate, 2 where the baseline is finite" in p for p in row.problems)
    assert row.mismatched == 2


def test_nan_in_the_baseline_is_reported_not_hidden():
    expected = np.array([1.0, np.nan], dtype="float32")
    row = compare_arrays("out", expected.copy(), expected)
    assert not row.passed
    assert any("baseline has 1 NaN" in p for p in row.problems)


def test_shape_mismatch():
    row = compare_arrays("out", np.zeros((2, 3)), np.zeros((3, 2)))
    assert not row.passed
    assert row.shape_text == "expect [3, 2], but got [2, 3]"
    assert "shape: expected [3, 2], got [2, 3]" in row.problems


def test_dtype_kind_mismatch_fails_and_width_change_does_not():
    ints = np.array([1, 2, 3], dtype="int64")
    row = compare_arrays("ids", ints.astype("float32"), ints)
    assert any(p.startswith("dtype: expected int64, got float32") for p in row.problems)
    half = compare_arrays("h", np.ones(3, dtype="float16"), np.ones(3, dtype="float32"))
    assert half.passed


def test_cosine_min_is_an_extra_criterion():
    expected = np.array([1.0, 0.0], dtype="float32")
    actual = np.array([1.0, 0.01], dtype="float32")
    assert compare_arrays("x", actual, expected, atol=0.1, rtol=0).passed
    row = compare_arrays("x", actual, expected, atol=0.1, rtol=0, cosine_min=0.99999)
    assert not row.passed and "below cosine_min" in row.problems[-1]


def test_chunked_figures_equal_whole_array_figures(monkeypatch):
    import pytest_paddle_infer.verdict.compare as compare

    rng = np.random.default_rng(1)
    expected = rng.normal(size=(3, 1000)).astype("float32")
    actual = expected + rng.normal(scale=1e-3, size=expected.shape).astype("float32")
    actual[2, 7] = np.nan
    whole = compare.compare_arrays("t", actual, expected, atol=1e-3, rtol=1e-3)
    monkeypatch.setattr(compare, "CHUNK", 97)  # many uneven chunks
    chunked = compare.compare_arrays("t", actual, expected, atol=1e-3, rtol=1e-3)
    for field in ("mismatched", "max_abs", "max_rel", "min_actual", "max_actual", "worst_index",
                  "nan_actual", "new_nonfinite"):
        assert getattr(chunked, field) == getattr(whole, field), field
    assert chunked.cosine == pytest.approx(whole.cosine, rel=1e-12)


# ---------------------------------------------------------------------------------------
# verdict/compare.py's path for tensors without NaN or Inf (the common case, and the cost of
# comparing every intermediate tensor): the figures of the general path, bit for bit but the
# dot products (their rounding changes with BLAS's thread count there), in bounded memory;
# percentiles as numpy.percentile gives them.
# ---------------------------------------------------------------------------------------


FINITE_RNG = np.random.default_rng(7)
DOTS = ("cosine", "sqnr_db", "rel_l2")  # from the dot products: equal within rounding


def general_row(actual, expected, atol, rtol):
    """The figures as the general path (NaN and Inf handled) computes them."""
    flat_a, flat_e = actual.reshape(-1), expected.reshape(-1)
    row = TensorComparison("t", expected.shape, actual.shape, str(expected.dtype), str(actual.dtype),
                           atol, rtol)
    row.total = actual.size
    stats = compare._Stats(compare._largest_abs(flat_e), flat_a.size)
    for start in range(0, flat_a.size, compare.CHUNK):
        stats.add(flat_a[start:start + compare.CHUNK].astype(np.float64),
                  flat_e[start:start + compare.CHUNK].astype(np.float64), start, atol, rtol)
    stats.finish(row, actual.shape)
    return row


def finite_row(actual, expected, atol, rtol):
    row = TensorComparison("t", expected.shape, actual.shape, str(expected.dtype), str(actual.dtype),
                           atol, rtol)
    row.total = actual.size
    stats = compare._finite_stats(actual.reshape(-1), expected.reshape(-1), atol, rtol)
    assert stats is not None
    stats.finish(row, actual.shape)
    return row


def relu_pair(shape, scale=1e-3):
    e = np.maximum(FINITE_RNG.normal(size=shape), 0).astype(np.float32)
    a = np.maximum(e + FINITE_RNG.normal(scale=scale, size=shape).astype(np.float32), 0).astype(np.float32)
    return a, e


CASES = {
    "relu-like, zeros and mismatches": (relu_pair((7, 3001)), 1e-4, 1e-4),
    "close": (relu_pair((5000,), 1e-6), 1e-3, 1e-3),
    "equal": ((np.arange(4000, dtype=np.float32),) * 2, 1e-4, 1e-4),
    "zero tolerances": (relu_pair((3, 999)), 0.0, 0.0),
    "negative zeros": ((np.where(FINITE_RNG.random(3000) < .5, np.float32(-0.0), np.float32(0.0)),
                        np.where(FINITE_RNG.random(3000) < .5, np.float32(0.0), np.float32(-0.0))), 1e-4, 1e-4),
    "all non-positive": ((-np.abs(FINITE_RNG.normal(size=2000)).astype(np.float32),
                          -np.abs(FINITE_RNG.normal(size=2000)).astype(np.float32)), 1e-2, 1e-2),
    "float16 and float32": ((FINITE_RNG.normal(size=3000).astype(np.float16),
                             FINITE_RNG.normal(size=3000).astype(np.float32)), 1e-2, 1e-2),
    "integers": ((FINITE_RNG.integers(0, 5, 2500), FINITE_RNG.integers(0, 5, 2500)), 0.0, 0.0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_finite_path_gives_the_general_figures(monkeypatch, name):
    (actual, expected), atol, rtol = CASES[name]
    monkeypatch.setattr(compare, "CHUNK", 1000)  # many chunks, uneven at the end
    monkeypatch.setattr(compare, "LEAF", 8)  # each split in pieces along numpy's pairwise tree
    monkeypatch.setattr(compare, "PERCENTILE_SAMPLE", 1500)  # a strided sample
    want, got = general_row(actual, expected, atol, rtol).to_dict(), finite_row(actual, expected, atol, rtol).to_dict()
    for field, value in want.items():
        if field in DOTS and isinstance(value, float) and math.isfinite(value):
            assert got[field] == pytest.approx(value, rel=1e-12), field
        else:
            assert repr(got[field]) == repr(value), field


def test_non_finite_tensors_take_the_general_path():
    finite = np.ones(10, dtype=np.float32)
    for bad in (np.nan, np.inf, -np.inf):
        other = finite.copy()
        other[3] = bad
        assert compare._finite_stats(other, finite, 1e-4, 1e-4) is None
        assert compare._finite_stats(finite, other, 1e-4, 1e-4) is None
    row = compare.compare_arrays("t", other, finite)
    assert row.inf_actual == 1 and row.new_nonfinite == 1


@pytest.mark.parametrize("size", [1, 2, 3, 10, 101, compare.RADIX_MIN - 1, compare.RADIX_MIN, 300_007])
def test_percentiles_are_numpys(size):
    samples = [np.abs(FINITE_RNG.normal(size=size)).astype(np.float32) * 1e-4,
               FINITE_RNG.integers(0, 3, size).astype(np.float32),  # ties: few values
               np.where(FINITE_RNG.random(size) < .7, 0, FINITE_RNG.exponential(size=size)).astype(np.float32)]
    for sample in samples:
        want = tuple(float(v) for v in np.percentile(sample.astype(np.float64), compare.PERCENTILES))
        assert compare.percentiles(sample.copy()) == want


def test_comparing_a_large_tensor_allocates_little_beside_it():
    a, e = relu_pair((1 << 22,))
    tracemalloc.start()
    try:
        compare.compare_arrays("t", a, e, 1e-4, 1e-4)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the |a - e| sample for percentiles (float32, one per element here), the values of the
    # bins its percentiles fall in, and small buffers; a float64 temporary per operation on
    # 1M-element chunks and float64 copies of the sample took 6x the tensor's size
    assert peak < 3 * a.nbytes, peak / a.nbytes


def test_a_comparison_shares_the_cores_with_the_other_xdist_workers(monkeypatch):
    import os

    from pytest_paddle_infer.verdict import compare

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    assert compare.compare_threads() == max(1, min(compare.MAX_THREADS, cores))
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(cores))  # a worker per core: one thread each
    assert compare.compare_threads() == 1


# ---------------------------------------------------------------------------------------
# Metrics beside atol/rtol/cosine (verdict/compare.py): SQNR, relative L2, percentiles, the
# smallest passing tolerances, near-zero baselines, and their bounds.
# ---------------------------------------------------------------------------------------


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


def test_spread_is_computed_in_chunks(monkeypatch):
    monkeypatch.setattr(compare, "CHUNK", 7)
    x = RNG.normal(3.0, 2.0, size=1000).astype(np.float32)
    row = compare_arrays("x", x, x)
    assert row.std_expected == pytest.approx(float(x.astype(np.float64).std()), rel=1e-9)
    assert row.mean_abs_expected == pytest.approx(float(np.abs(x.astype(np.float64)).mean()), rel=1e-9)
