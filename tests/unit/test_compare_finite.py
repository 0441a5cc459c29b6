"""verdict/compare.py's path for tensors without NaN or Inf (the common case, and the cost of
comparing every intermediate tensor): the figures of the general path, bit for bit but the
dot products (their rounding changes with BLAS's thread count there), in bounded memory;
percentiles as numpy.percentile gives them."""
import math
import tracemalloc

import numpy as np
import pytest

import pytest_paddle_infer.verdict.compare as compare
from pytest_paddle_infer.verdict.rows import TensorComparison

RNG = np.random.default_rng(7)
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
    e = np.maximum(RNG.normal(size=shape), 0).astype(np.float32)
    a = np.maximum(e + RNG.normal(scale=scale, size=shape).astype(np.float32), 0).astype(np.float32)
    return a, e


CASES = {
    "relu-like, zeros and mismatches": (relu_pair((7, 3001)), 1e-4, 1e-4),
    "close": (relu_pair((5000,), 1e-6), 1e-3, 1e-3),
    "equal": ((np.arange(4000, dtype=np.float32),) * 2, 1e-4, 1e-4),
    "zero tolerances": (relu_pair((3, 999)), 0.0, 0.0),
    "negative zeros": ((np.where(RNG.random(3000) < .5, np.float32(-0.0), np.float32(0.0)),
                        np.where(RNG.random(3000) < .5, np.float32(0.0), np.float32(-0.0))), 1e-4, 1e-4),
    "all non-positive": ((-np.abs(RNG.normal(size=2000)).astype(np.float32),
                          -np.abs(RNG.normal(size=2000)).astype(np.float32)), 1e-2, 1e-2),
    "float16 and float32": ((RNG.normal(size=3000).astype(np.float16),
                             RNG.normal(size=3000).astype(np.float32)), 1e-2, 1e-2),
    "integers": ((RNG.integers(0, 5, 2500), RNG.integers(0, 5, 2500)), 0.0, 0.0),
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
    samples = [np.abs(RNG.normal(size=size)).astype(np.float32) * 1e-4,
               RNG.integers(0, 3, size).astype(np.float32),  # ties: few values
               np.where(RNG.random(size) < .7, 0, RNG.exponential(size=size)).astype(np.float32)]
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
