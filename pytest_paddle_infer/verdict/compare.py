"""Pure-numpy comparison of a candidate tensor with its baseline.

The figures follow the TensorRT precision-debug seed: mismatched elements are those where
``numpy.isclose(actual, expected, rtol, atol)`` is false; Max Atol = max |a - e|;
Max Rtol = max |a - e| / (|e| + 1e-7). Non-finite values in the candidate where the
baseline is finite are mismatches of their own kind and are named as such.

Beside them: SQNR = 10 log10(sum e^2 / sum (a - e)^2) in dB, relative L2 = ||a - e|| / ||e||,
percentiles of |a - e|, and the smallest atol (at the given rtol) and smallest rtol (at the
given atol) with which the element-wise check would pass. The relative error divides by the
baseline, so where the baseline is near zero (|e| below NEAR_ZERO of the tensor's largest
|e|) it says nothing: the row says when its Max Rtol comes from such an element, and gives
the largest relative error over the other elements.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import math

import numpy as np

# the row and its text live apart, without numpy, for the pytest process
from .rows import NEAR_ZERO, TensorComparison, comparison_table

RTOL_EPSILON = 1e-7
PERCENTILES = (50, 90, 99)
PERCENTILE_SAMPLE = 1 << 22  # |a - e| values kept for percentiles: exact up to this many elements


CHUNK = 1 << 20  # elements per step: float64 temporaries stay ~8 MB whatever the tensor size


def compare_rule(name: str, actual: np.ndarray, expected: np.ndarray, rule, op_type: str = "",
                 elementwise: bool = True) -> "TensorComparison":
    """``compare_arrays`` under a tolerances.Rule: atol, rtol and every metric bound it sets."""
    return compare_arrays(name, actual, expected, rule.atol, rule.rtol, rule.cosine_min, op_type,
                          sqnr_min=rule.sqnr_min, rel_l2_max=rule.rel_l2_max,
                          p99_abs_max=rule.p99_abs_max, elementwise=elementwise)


def compare_arrays(name: str, actual: np.ndarray, expected: np.ndarray, atol: float = 1e-4,
                   rtol: float = 1e-4, cosine_min: Optional[float] = None,
                   op_type: str = "", sqnr_min: Optional[float] = None,
                   rel_l2_max: Optional[float] = None, p99_abs_max: Optional[float] = None,
                   elementwise: bool = True) -> TensorComparison:
    """``elementwise=False``: the figures only, no verdict from atol/rtol (a task comparison
    judges the output: task_compare.py); the metric bounds still apply."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    row = TensorComparison(name, tuple(expected.shape), tuple(actual.shape), str(expected.dtype),
                           str(actual.dtype), float(atol), float(rtol), cosine_min=cosine_min,
                           op_type=op_type, sqnr_min=sqnr_min, rel_l2_max=rel_l2_max,
                           p99_abs_max=p99_abs_max)
    if expected.dtype.kind != actual.dtype.kind and not (
            expected.dtype.kind in "fc" and actual.dtype.kind in "fc"):
        row.problems.append(f"dtype: expected {expected.dtype}, got {actual.dtype}")
    if not row.shape_ok:
        row.problems.append(f"shape: expected {list(expected.shape)}, got {list(actual.shape)}")
        return row
    row.total = int(actual.size)
    if actual.size == 0:
        return row
    flat_a, flat_e = actual.reshape(-1), expected.reshape(-1)
    stats = _Stats(_largest_abs(flat_e), flat_a.size)
    for start in range(0, flat_a.size, CHUNK):
        stats.add(flat_a[start:start + CHUNK].astype(np.float64),
                  flat_e[start:start + CHUNK].astype(np.float64), start, atol, rtol)
    stats.finish(row, actual.shape)
    if stats.base_nan or stats.base_inf:  # nothing to compare against there
        row.problems.append(f"the baseline has {stats.base_nan} NaN and {stats.base_inf} Inf: "
                            "check the model and its inputs")
    if row.new_nonfinite:
        row.problems.append(
            f"non-finite: {row.nan_actual} NaN and {row.inf_actual} Inf in the candidate, "
            f"{row.new_nonfinite} where the baseline is finite")
    if row.mismatched and elementwise:
        row.problems.append(f"{row.mismatched}/{row.total} elements outside atol={atol:g} rtol={rtol:g}")
    check_bounds(row)
    return row


def check_bounds(row: TensorComparison) -> None:
    """The metric bounds a rule sets (cosine_min, sqnr_min, rel_l2_max, p99_abs_max)."""
    if row.cosine_min is not None and not (row.cosine >= row.cosine_min):
        row.problems.append(f"cosine {row.cosine:.6f} below cosine_min {row.cosine_min:.10g}")
    if row.sqnr_min is not None and not (row.sqnr_db >= row.sqnr_min):
        row.problems.append(f"SQNR {row.sqnr_db:.4g} dB below sqnr_min {row.sqnr_min:g}")
    if row.rel_l2_max is not None and not (row.rel_l2 <= row.rel_l2_max):
        row.problems.append(f"relative L2 {row.rel_l2:.4g} above rel_l2_max {row.rel_l2_max:g}")
    if row.p99_abs_max is not None and not (row.p99_abs <= row.p99_abs_max):
        row.problems.append(f"99th percentile of |error| {row.p99_abs:.4g} above p99_abs_max "
                            f"{row.p99_abs_max:g}")


def _largest_abs(flat: np.ndarray) -> float:
    """The largest finite |value|, in chunks: the scale that near-zero is measured against."""
    largest = 0.0
    for start in range(0, flat.size, CHUNK):
        part = np.abs(flat[start:start + CHUNK].astype(np.float64))
        part = part[np.isfinite(part)]
        if part.size:
            largest = max(largest, float(part.max()))
    return largest


class _Stats:
    """Running figures over chunks of a flattened pair of tensors."""

    def __init__(self, largest_abs: float = 0.0, size: int = 0):
        self.near_zero = NEAR_ZERO * largest_abs
        self.stride = max(1, -(-size // PERCENTILE_SAMPLE))  # every stride-th |a - e| is kept
        self.samples: List[np.ndarray] = []
        self.err2 = 0.0  # sum of squared errors (both finite)
        self.atol_needed = self.rtol_needed = 0.0
        self.max_rel_elsewhere = 0.0
        self.mismatched = self.nan_a = self.inf_a = self.new_nonfinite = 0
        self.base_nan = self.base_inf = 0
        self.max_abs = self.max_rel = 0.0
        self.worst = -np.inf
        self.worst_flat: Optional[int] = None
        self.dot = self.norm_a = self.norm_e = 0.0
        self.min_a = self.min_e = np.inf
        self.max_a = self.max_e = -np.inf
        self.any_finite = False
        self.count_e = 0  # finite baseline values: count, mean, sum of squared deviations, sum |e|
        self.mean_e = self.m2_e = self.abs_e = 0.0

    def _spread(self, e: np.ndarray) -> None:
        """Chan et al.'s pairwise update: the chunk's mean and squared deviations merged in."""
        n = e.size
        if not n:
            return
        mean = float(e.mean())
        m2 = float(np.square(e - mean).sum())
        total = self.count_e + n
        delta = mean - self.mean_e
        self.mean_e += delta * n / total
        self.m2_e += m2 + delta * delta * self.count_e * n / total
        self.count_e = total
        self.abs_e += float(np.abs(e).sum())

    def add(self, a: np.ndarray, e: np.ndarray, offset: int, atol: float, rtol: float) -> None:
        finite_a, finite_e = np.isfinite(a), np.isfinite(e)
        self.nan_a += int(np.isnan(a).sum())
        self.inf_a += int(np.isinf(a).sum())
        self.base_nan += int(np.isnan(e).sum())
        self.base_inf += int(np.isinf(e).sum())
        self.new_nonfinite += int((~finite_a & finite_e).sum())
        close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        self.mismatched += int(a.size - close.sum())
        if not close[~(finite_a & finite_e)].all():  # a NaN/Inf no tolerance accepts
            self.atol_needed = self.rtol_needed = math.inf
        if finite_a.any():
            self.min_a = min(self.min_a, float(a[finite_a].min()))
            self.max_a = max(self.max_a, float(a[finite_a].max()))
        if finite_e.any():
            self.min_e = min(self.min_e, float(e[finite_e].min()))
            self.max_e = max(self.max_e, float(e[finite_e].max()))
            self._spread(e[finite_e])
        both = finite_a & finite_e
        if not both.any():
            return
        self.any_finite = True
        a0, e0 = np.where(both, a, 0.0), np.where(both, e, 0.0)
        diff = np.abs(a0 - e0)
        abs_e = np.abs(e0)
        self.max_abs = max(self.max_abs, float(diff.max()))
        rel = diff / (abs_e + RTOL_EPSILON)
        self.max_rel = max(self.max_rel, float(rel.max()))
        away = both & (abs_e >= self.near_zero)
        if away.any():
            self.max_rel_elsewhere = max(self.max_rel_elsewhere, float(rel[away].max()))
        self.err2 += float(np.dot(diff, diff))
        self.atol_needed = max(self.atol_needed, float((diff - rtol * abs_e).max()))
        over = diff > atol  # the rtol that lets these pass at this atol
        if over.any():
            with np.errstate(divide="ignore"):
                self.rtol_needed = max(self.rtol_needed, float(((diff[over] - atol) / abs_e[over]).max()))
        first = (-offset) % self.stride  # the same sample whatever the chunking
        self.samples.append(diff[first::self.stride][both[first::self.stride]].astype(np.float32))
        # the element furthest outside its tolerance (or closest to leaving it)
        excess = np.where(both, diff - (atol + rtol * np.abs(e0)), -np.inf)
        i = int(np.argmax(excess))
        if excess[i] > self.worst:
            self.worst, self.worst_flat = float(excess[i]), offset + i
        self.dot += float(np.dot(a0, e0))
        self.norm_a += float(np.dot(a0, a0))
        self.norm_e += float(np.dot(e0, e0))

    def finish(self, row: TensorComparison, shape: Tuple[int, ...]) -> None:
        row.mismatched = self.mismatched
        row.nan_actual, row.inf_actual, row.new_nonfinite = self.nan_a, self.inf_a, self.new_nonfinite
        if np.isfinite(self.min_a):
            row.min_actual, row.max_actual = self.min_a, self.max_a
        if np.isfinite(self.min_e):
            row.min_expected, row.max_expected = self.min_e, self.max_e
            row.std_expected = (self.m2_e / self.count_e) ** 0.5
            row.mean_abs_expected = self.abs_e / self.count_e
        if self.any_finite:
            row.max_abs, row.max_rel = self.max_abs, self.max_rel
            row.atol_needed, row.rtol_needed = max(self.atol_needed, 0.0), self.rtol_needed
            row.max_rel_elsewhere = self.max_rel_elsewhere
            row.max_rel_near_zero = self.max_rel > self.max_rel_elsewhere
            signal = self.norm_e  # sum e^2
            row.sqnr_db = (math.inf if self.err2 == 0.0 else
                           -math.inf if signal == 0.0 else 10.0 * math.log10(signal / self.err2))
            row.rel_l2 = (0.0 if self.err2 == 0.0 else math.inf if signal == 0.0
                          else (self.err2 / signal) ** 0.5)
            sample = np.concatenate(self.samples) if self.samples else np.zeros(0, np.float32)
            if sample.size:
                row.p50_abs, row.p90_abs, row.p99_abs = (
                    float(v) for v in np.percentile(sample.astype(np.float64), PERCENTILES))
            row.worst_index = tuple(int(i) for i in np.unravel_index(self.worst_flat, shape))
            na, ne = self.norm_a ** 0.5, self.norm_e ** 0.5
            row.cosine = 1.0 if na == ne == 0.0 else (0.0 if na == 0.0 or ne == 0.0
                                                       else self.dot / (na * ne))


def assert_tensors_close(actual, expected, atol: float = 1e-4, rtol: float = 1e-4,
                         name: str = "tensor", cosine_min: Optional[float] = None,
                         sqnr_min: Optional[float] = None, rel_l2_max: Optional[float] = None,
                         p99_abs_max: Optional[float] = None) -> TensorComparison:
    """Assert that ``actual`` matches ``expected`` the way the plugin compares outputs.

    Raises AssertionError with the smallest passing atol and rtol and a one-row table (shape,
    mismatched elements, max abs/rel error, value ranges, cosine, SQNR, relative L2, 99th
    percentile of the error) when it does not; returns the comparison otherwise.
    """
    __tracebackhide__ = True
    row = compare_arrays(name, np.asarray(actual), np.asarray(expected), atol, rtol, cosine_min,
                         sqnr_min=sqnr_min, rel_l2_max=rel_l2_max, p99_abs_max=p99_abs_max)
    if not row.passed:
        raise AssertionError(f"{name} differs (atol={atol:g}, rtol={rtol:g}):\n"
                             + (f"{row.needed_text}\n" if row.needed_text else "")
                             + comparison_table([row]))
    return row
