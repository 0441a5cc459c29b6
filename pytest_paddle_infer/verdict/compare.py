"""Pure-numpy comparison of a candidate tensor with its baseline (mismatched: ``numpy.isclose``)."""
from __future__ import annotations

from typing import List, Optional, Tuple

import math
import os
import sys
import threading
from types import SimpleNamespace

import numpy as np

from .rows import NEAR_ZERO, TensorComparison, comparison_table
from .metrics import METRICS

RTOL_EPSILON = 1e-7
PERCENTILES = (50, 90, 99)
PERCENTILE_SAMPLE = 1 << 22  # |a - e| values kept for percentiles: exact up to this many elements
CHUNK = 1 << 20  # elements per step: float64 temporaries stay ~8 MB whatever the tensor size
LEAF = 1 << 16  # elements per step of the all-finite path: its float64 buffers stay in cache
PAIRWISE_UNROLL = 8  # numpy's pairwise summation splits a sum at multiples of this
PAIRWISE_BLOCK = 128  # and sums this many or fewer in one unsplit loop
MAX_THREADS = 4  # threads a comparison shares its pieces among (numpy releases the GIL)
_LARGEST = ("max_abs", "max_rel", "max_rel_elsewhere", "atol_needed", "rtol_needed")
_BUFFERS = threading.local()  # each thread's float64 buffers for pieces
_POOL: list = []  # the threads comparisons share pieces out to, made on first use
_POOL_LOCK = threading.Lock()
RADIX_MIN = 1 << 16  # samples smaller than this are partitioned whole
RADIX_STEP = 1 << 18  # elements counted at a time


def compare_rule(name: str, actual: np.ndarray, expected: np.ndarray, rule, op_type: str = "",
                 elementwise: bool = True) -> "TensorComparison":
    """``compare_arrays`` under a tolerances.Rule: atol, rtol and every metric bound it sets."""
    return compare_arrays(name, actual, expected, rule.atol, rule.rtol, op_type=op_type,
                          elementwise=elementwise, **{m.bound: getattr(rule, m.bound) for m in METRICS})


def compare_arrays(name: str, actual: np.ndarray, expected: np.ndarray, atol: float = 1e-4,
                   rtol: float = 1e-4, *, op_type: str = "", elementwise: bool = True,
                   **bounds) -> TensorComparison:
    """``elementwise=False``: no verdict from atol/rtol (a task judges), only ``bounds`` (metrics.py)."""
    for key in set(bounds) - {m.bound for m in METRICS}:  # a misspelt bound would judge nothing
        raise TypeError(f"compare_arrays() got an unexpected keyword argument {key!r}")
    actual, expected = np.asarray(actual), np.asarray(expected)
    row = TensorComparison(name, tuple(expected.shape), tuple(actual.shape), str(expected.dtype),
                           str(actual.dtype), float(atol), float(rtol), op_type=op_type,
                           bounds={m.bound: bounds[m.bound] for m in METRICS if bounds.get(m.bound) is not None})
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
    stats = _finite_stats(flat_a, flat_e, atol, rtol)  # the common case, in fewer passes
    if stats is None:  # a NaN or Inf on either side (or a tolerance outside the fast path's)
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
    for m in METRICS:  # every metric bound the rule sets
        problem = m.bound in row.bounds and m.problem(getattr(row, m.figure), row.bounds[m.bound])
        if problem:
            row.problems.append(problem)
    return row


def _largest_abs(flat: np.ndarray) -> float:
    """The largest finite |value|, in chunks: the scale that near-zero is measured against."""
    largest = 0.0
    for start in range(0, flat.size, CHUNK):
        part = np.abs(flat[start:start + CHUNK].astype(np.float64))
        part = part[np.isfinite(part)]
        if part.size:
            largest = max(largest, float(part.max()))
    return largest


def _half(n: int) -> int:
    """Where numpy's pairwise summation splits ``n`` elements; 0 for a piece of at most LEAF."""
    if n <= max(LEAF, PAIRWISE_BLOCK):
        return 0
    half = n // 2
    return half - half % PAIRWISE_UNROLL


def _leaves(n: int) -> List[int]:
    """The pieces numpy's pairwise summation splits ``n`` into: ``_tree_sum`` of theirs is numpy's."""
    half = _half(n)
    return _leaves(half) + _leaves(n - half) if half else [n]


def _tree_sum(sums: List[float], n: int) -> float:
    """The pieces' sums (in order, as ``_leaves(n)`` splits) added along numpy's tree."""
    it = iter(sums)

    def go(m: int) -> float:
        half = _half(m)
        return go(half) + go(m - half) if half else next(it)  # left first: the pieces' order

    return go(n)


def _extreme(flat: np.ndarray, low: bool, found: float) -> float:
    """The min or max as ``_Stats.add`` has it: by chunk for a zero (+0.0 or -0.0 by reduction order)."""
    if found != 0.0 or (low and not np.signbit(flat).any()):  # no -0.0 beside a +0.0 min
        return found
    pick = min if low else max
    result = math.inf if low else -math.inf
    for start in range(0, flat.size, CHUNK):
        part = flat[start:start + CHUNK].astype(np.float64)
        result = pick(result, float(part.min() if low else part.max()))
    return result


def _finite_stats(flat_a: np.ndarray, flat_e: np.ndarray, atol: float, rtol: float) -> Optional["_Stats"]:
    """``_Stats.add``'s figures in fewer passes, in pieces on threads; None where NaN or Inf is."""
    if flat_a.dtype.kind not in "fiu" or flat_e.dtype.kind not in "fiu" or not (
            0.0 <= atol < math.inf and 0.0 <= rtol < math.inf):
        return None
    found = [float(flat_a.min()), float(flat_a.max()), float(flat_e.min()), float(flat_e.max())]
    if not all(math.isfinite(v) for v in found):  # a NaN or Inf anywhere shows in min or max
        return None
    size = flat_a.size
    stats = _Stats(max(abs(found[2]), abs(found[3])), size)  # _largest_abs: all finite here
    stats.any_finite = True
    stats.min_a, stats.max_a = _extreme(flat_a, True, found[0]), _extreme(flat_a, False, found[1])
    stats.min_e, stats.max_e = _extreme(flat_e, True, found[2]), _extreme(flat_e, False, found[3])
    chunks = []  # (its size, its pieces as (offset, size))
    for start in range(0, size, CHUNK):
        k = min(CHUNK, size - start)
        sizes = _leaves(k)
        chunks.append((k, [(start + sum(sizes[:j]), m) for j, m in enumerate(sizes)]))
    pieces = [p for _, ps in chunks for p in ps]
    e_sums = iter(_map(lambda p: _piece_sum(flat_e, *p), pieces))
    chunk_means = [_tree_sum([next(e_sums) for _ in ps], k) / k for k, ps in chunks]  # e.mean()
    means = [mean for (_, ps), mean in zip(chunks, chunk_means) for _ in ps]  # each piece's chunk's
    sample = np.empty(-(-size // stats.stride), dtype=np.float32)
    figures = iter(_map(lambda i: _piece_figures(flat_a, flat_e, *pieces[i], means[i], atol, rtol,
                                                 stats.near_zero, stats.stride, sample),
                        range(len(pieces))))
    for (k, ps), mean in zip(chunks, chunk_means):
        sums: List[List[float]] = [[] for _ in range(6)]  # m2, |e|, err2, a e, a a, e e
        for (at, _), piece in zip(ps, figures):
            for j in range(6):
                sums[j].append(piece.sums[j])
            for key in _LARGEST:
                setattr(stats, key, max(getattr(stats, key), getattr(piece, key)))
            stats.mismatched += piece.mismatched
            if piece.worst > stats.worst:  # the first of equals, as chunk by chunk
                stats.worst, stats.worst_flat = piece.worst, at + piece.worst_at
        m2, abs_sum, err2, dot, norm_a, norm_e = (_tree_sum(s, k) for s in sums)
        stats._merge(k, mean, m2, abs_sum)
        stats.err2 += err2
        stats.dot += dot
        stats.norm_a += norm_a
        stats.norm_e += norm_e
    stats.samples.append(sample)
    return stats


def _buffers(size: int):
    """This thread's buffers, at least ``size`` elements: six float64 and one bool."""
    held = getattr(_BUFFERS, "held", None)
    if held is None or held[0].size < size:
        held = _BUFFERS.held = [np.empty(size) for _ in range(6)] + [np.empty(size, dtype=bool)]
    return held


def _piece_sum(flat: np.ndarray, at: int, m: int) -> float:
    part = _buffers(m)[0][:m]
    np.copyto(part, flat[at:at + m], casting="unsafe")
    return float(part.sum())


def _piece_figures(flat_a: np.ndarray, flat_e: np.ndarray, at: int, m: int, mean: float,
                   atol: float, rtol: float, near_zero: float, stride: int,
                   sample: np.ndarray) -> SimpleNamespace:
    """Elements ``at`` to ``at + m``, each float64 operation as ``_Stats.add`` does it."""
    a, e, diff, abs_e, tmp, tmp2, mask = (b[:m] for b in _buffers(m))
    out = SimpleNamespace()  # merged in order by _finite_stats
    np.copyto(a, flat_a[at:at + m], casting="unsafe")
    np.copyto(e, flat_e[at:at + m], casting="unsafe")
    sums = out.sums = []
    np.subtract(e, mean, out=tmp)  # the baseline's spread, as _Stats._spread
    np.square(tmp, out=tmp)
    sums.append(float(tmp.sum()))
    np.abs(e, out=abs_e)
    sums.append(float(abs_e.sum()))
    np.subtract(a, e, out=diff)
    np.abs(diff, out=diff)
    out.max_abs = float(diff.max())
    np.square(diff, out=tmp)
    sums.append(float(tmp.sum()))
    np.add(abs_e, RTOL_EPSILON, out=tmp)
    np.divide(diff, tmp, out=tmp)  # the relative error
    i = int(tmp.argmax())
    out.max_rel = float(tmp[i])
    if abs_e[i] >= near_zero:  # the largest is away from near-zero baselines
        out.max_rel_elsewhere = out.max_rel
    else:  # zero where the baseline is near zero: the largest elsewhere
        np.greater_equal(abs_e, near_zero, out=mask)
        np.multiply(tmp, mask, out=tmp)
        out.max_rel_elsewhere = float(tmp.max())
    np.multiply(abs_e, rtol, out=tmp)
    np.subtract(diff, tmp, out=tmp2)
    out.atol_needed = float(tmp2.max())
    out.rtol_needed = 0.0
    if out.max_abs > atol:  # the rtol that lets these pass at this atol
        np.greater(diff, atol, out=mask)
        with np.errstate(divide="ignore"):
            out.rtol_needed = float(((diff[mask] - atol) / abs_e[mask]).max())
    np.add(tmp, atol, out=tmp)  # the tolerance, atol + rtol |e|, as numpy.isclose has it
    np.subtract(diff, tmp, out=tmp2)  # how far outside its tolerance
    i = int(tmp2.argmax())
    out.worst, out.worst_at = float(tmp2[i]), i
    out.mismatched = 0
    if not out.worst < 0.0:  # some element may be outside: count (with atol, rtol >= 0, a == e
        np.greater(diff, tmp, out=mask)  # is close, as isclose's a == b term has it)
        out.mismatched = int(np.count_nonzero(mask))
    first = (-at) % stride  # the same sample whatever the chunking
    kept = diff[first::stride]
    taken = -(-at // stride)  # sampled elements before this piece
    sample[taken:taken + kept.size] = kept
    for x, y in ((a, e), (a, a), (e, e)):
        np.multiply(x, y, out=tmp)
        sums.append(float(tmp.sum()))
    return out


def compare_threads() -> int:
    """This process's cores shared with the other xdist workers' executors, at most MAX_THREADS."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        sharing = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    except ValueError:
        sharing = 1
    return max(1, min(MAX_THREADS, cores // sharing))


def _map(fn, items) -> list:
    """``[fn(x) for x in items]`` on ``compare_threads()`` threads (numpy releases the GIL)."""
    items = list(items)
    workers = compare_threads()
    if len(items) < 2 or workers < 2:
        return [fn(x) for x in items]
    with _POOL_LOCK:
        if not _POOL:
            from concurrent.futures import ThreadPoolExecutor

            if hasattr(os, "register_at_fork"):  # a forked child has none of the pool's threads
                os.register_at_fork(after_in_child=_POOL.clear)
            _POOL.append(ThreadPoolExecutor(max_workers=workers, thread_name_prefix="paddle-infer-compare"))
    return list(_POOL[0].map(fn, items))


class _Stats:
    """Running figures over chunks of a flattened pair of tensors."""

    def __init__(self, largest_abs: float = 0.0, size: int = 0):
        self.near_zero = NEAR_ZERO * largest_abs
        self.stride = max(1, -(-size // PERCENTILE_SAMPLE))  # every stride-th |a - e| is kept
        self.samples: List[np.ndarray] = []
        self.err2 = 0.0  # sum of squared errors (both finite)
        self.max_abs = self.max_rel = self.max_rel_elsewhere = self.atol_needed = self.rtol_needed = 0.0
        self.mismatched = self.nan_a = self.inf_a = self.new_nonfinite = self.base_nan = self.base_inf = 0
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
        self._merge(n, mean, float(np.square(e - mean).sum()), float(np.abs(e).sum()))

    def _merge(self, n: int, mean: float, m2: float, abs_sum: float) -> None:
        total = self.count_e + n
        delta = mean - self.mean_e
        self.mean_e += delta * n / total
        self.m2_e += m2 + delta * delta * self.count_e * n / total
        self.count_e = total
        self.abs_e += abs_sum

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
            sample = (self.samples[0] if len(self.samples) == 1 else
                      np.concatenate(self.samples) if self.samples else np.zeros(0, np.float32))
            if sample.size:
                row.p50_abs, row.p90_abs, row.p99_abs = percentiles(sample)
            row.worst_index = tuple(int(i) for i in np.unravel_index(self.worst_flat, shape))
            na, ne = self.norm_a ** 0.5, self.norm_e ** 0.5
            row.cosine = 1.0 if na == ne == 0.0 else (0.0 if na == 0.0 or ne == 0.0 else self.dot / (na * ne))


def percentiles(sample: np.ndarray) -> Tuple[float, ...]:
    """``numpy.percentile(sample.astype(numpy.float64), PERCENTILES)`` without the copy and full sort."""
    n = sample.size
    virtual = (n - 1) * np.true_divide(PERCENTILES, 100)
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= n - 1  # numpy takes the last value there
    previous[above] = following[above] = -1
    previous, following = previous.astype(np.intp), following.astype(np.intp)
    ranks = np.unique(np.concatenate([previous, following]) % n)
    found = dict(zip(ranks.tolist(), order_statistics(sample, ranks).tolist()))
    low = np.array([found[i % n] for i in previous.tolist()])
    high = np.array([found[i % n] for i in following.tolist()])
    gamma = virtual - previous
    step = high - low  # numpy's _lerp, from whichever end is nearer
    result = low + step * gamma
    np.subtract(high, step * (1 - gamma), out=result, where=gamma >= 0.5)
    return tuple(float(v) for v in result)


def order_statistics(sample: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """The sorted ``ranks``' values of non-negative float32s, whose bits order as they do: by bins."""
    if sample.dtype != np.float32 or sample.size < RADIX_MIN or sys.byteorder != "little" \
            or sample.strides != (4,):
        return np.partition(sample, ranks)[ranks].astype(np.float64)
    upper = sample.view(np.uint16)[1::2]  # little-endian: each value's upper half
    steps = range(0, sample.size, RADIX_STEP)  # numpy indexes with intp copies: a step at a time
    counts = sum(_map(lambda i: np.bincount(upper[i:i + RADIX_STEP], minlength=1 << 16), steps))
    ends = np.cumsum(counts)
    bins = np.searchsorted(ends, ranks, side="right")  # the bin holding each rank
    zeros = 0
    if bins[0] == 0:
        zeros = sum(_map(lambda i: int(np.count_nonzero(sample[i:i + RADIX_STEP] == 0)), steps))
    values = np.zeros(len(ranks))
    rest = ranks >= zeros
    chosen = np.unique(bins[rest])
    if chosen.size:
        table = np.zeros(1 << 16, dtype=bool)
        table[chosen] = True
        picked = np.concatenate(_map(  # the chosen bins' values, as they come
            lambda i: sample[i:i + RADIX_STEP][table[upper[i:i + RADIX_STEP]]], steps))
        below = {int(b): int(counts[chosen[chosen < b]].sum()) for b in chosen}  # picked before b
        local = np.array([int(r) - int(ends[b] - counts[b]) + below[int(b)]
                          for r, b in zip(ranks[rest], bins[rest])])
        values[rest] = np.partition(picked, local)[local]
    return values


def assert_tensors_close(actual, expected, atol: float = 1e-4, rtol: float = 1e-4,
                         name: str = "tensor", **bounds) -> TensorComparison:
    """Assert that ``actual`` matches ``expected`` as the plugin compares outputs (bounds by key)."""
    __tracebackhide__ = True
    row = compare_arrays(name, np.asarray(actual), np.asarray(expected), atol, rtol, **bounds)
    if not row.passed:
        raise AssertionError(f"{name} differs (atol={atol:g}, rtol={rtol:g}):\n"
                             + (f"{row.needed_text}\n" if row.needed_text else "")
                             + comparison_table([row]))
    return row
