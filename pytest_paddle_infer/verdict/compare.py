"""Pure-numpy comparison of a candidate tensor with its baseline.

The figures follow the TensorRT precision-debug seed: mismatched elements are those where
``numpy.isclose(actual, expected, rtol, atol)`` is false; Max Atol = max |a - e|;
Max Rtol = max |a - e| / (|e| + 1e-7). Non-finite values in the candidate where the
baseline is finite are mismatches of their own kind and are named as such.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np

RTOL_EPSILON = 1e-7


@dataclass
class TensorComparison:
    name: str
    expected_shape: Tuple[int, ...]
    actual_shape: Tuple[int, ...]
    expected_dtype: str
    actual_dtype: str
    atol: float
    rtol: float
    total: int = 0
    mismatched: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    min_actual: float = float("nan")
    max_actual: float = float("nan")
    min_expected: float = float("nan")
    max_expected: float = float("nan")
    std_expected: float = float("nan")  # the baseline's finite values: spread and scale
    mean_abs_expected: float = float("nan")
    cosine: float = float("nan")
    worst_index: Optional[Tuple[int, ...]] = None
    nan_actual: int = 0
    inf_actual: int = 0
    new_nonfinite: int = 0  # non-finite in the candidate where the baseline is finite
    cosine_min: Optional[float] = None
    op_type: str = ""
    problems: List[str] = field(default_factory=list)
    vacuous: List[str] = field(default_factory=list)  # why a passing output cannot fail (vacuity.py)

    @property
    def shape_ok(self) -> bool:
        return self.expected_shape == self.actual_shape

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def shape_text(self) -> str:
        if self.shape_ok:
            return f"match, {list(self.actual_shape)}"
        return f"expect {list(self.expected_shape)}, but got {list(self.actual_shape)}"

    @property
    def mismatched_text(self) -> str:
        return f"{self.mismatched}/{self.total}" if self.shape_ok else "-"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["passed"] = self.passed
        d["worst_index"] = list(self.worst_index) if self.worst_index is not None else None
        return d


CHUNK = 1 << 20  # elements per step: float64 temporaries stay ~8 MB whatever the tensor size


def compare_arrays(name: str, actual: np.ndarray, expected: np.ndarray, atol: float = 1e-4,
                   rtol: float = 1e-4, cosine_min: Optional[float] = None,
                   op_type: str = "") -> TensorComparison:
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    row = TensorComparison(name, tuple(expected.shape), tuple(actual.shape), str(expected.dtype),
                           str(actual.dtype), float(atol), float(rtol), cosine_min=cosine_min,
                           op_type=op_type)
    if expected.dtype.kind != actual.dtype.kind and not (
            expected.dtype.kind in "fc" and actual.dtype.kind in "fc"):
        row.problems.append(f"dtype: expected {expected.dtype}, got {actual.dtype}")
    if not row.shape_ok:
        row.problems.append(f"shape: expected {list(expected.shape)}, got {list(actual.shape)}")
        return row
    row.total = int(actual.size)
    if actual.size == 0:
        return row
    stats = _Stats()
    flat_a, flat_e = actual.reshape(-1), expected.reshape(-1)
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
    if row.mismatched:
        row.problems.append(f"{row.mismatched}/{row.total} elements outside atol={atol:g} rtol={rtol:g}")
    if cosine_min is not None and not (row.cosine >= cosine_min):
        row.problems.append(f"cosine {row.cosine:.6f} below cosine_min {cosine_min:g}")
    return row


class _Stats:
    """Running figures over chunks of a flattened pair of tensors."""

    def __init__(self):
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
        self.mismatched += int(a.size - np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True).sum())
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
        self.max_abs = max(self.max_abs, float(diff.max()))
        self.max_rel = max(self.max_rel, float((diff / (np.abs(e0) + RTOL_EPSILON)).max()))
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
            row.worst_index = tuple(int(i) for i in np.unravel_index(self.worst_flat, shape))
            na, ne = self.norm_a ** 0.5, self.norm_e ** 0.5
            row.cosine = 1.0 if na == ne == 0.0 else (0.0 if na == 0.0 or ne == 0.0
                                                       else self.dot / (na * ne))


TABLE_COLUMNS = ("Tensor", "Shape", "Mismatched", "Max Atol", "Max Rtol",
                 "Min Val(base)", "Max Val(base)", "Cosine", "Result")


def _pair(actual: float, expected: float) -> str:
    return f"{actual:.6g}({expected:.6g})"


def table_rows(rows: Iterable[TensorComparison]) -> List[Tuple[str, ...]]:
    out = []
    for r in rows:
        out.append((
            r.name, r.shape_text, r.mismatched_text, f"{r.max_abs:.6g}", f"{r.max_rel:.6g}",
            _pair(r.min_actual, r.min_expected), _pair(r.max_actual, r.max_expected),
            f"{r.cosine:.6f}", "ok" if r.passed else "FAIL: " + "; ".join(r.problems),
        ))
    return out


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(header), line("-" * w for w in widths)] + [line(r) for r in rows])


def comparison_table(rows: Sequence[TensorComparison]) -> str:
    return format_table(TABLE_COLUMNS, table_rows(rows))


def assert_tensors_close(actual, expected, atol: float = 1e-4, rtol: float = 1e-4,
                         name: str = "tensor", cosine_min: Optional[float] = None) -> TensorComparison:
    """Assert that ``actual`` matches ``expected`` the way the plugin compares outputs.

    Raises AssertionError with a one-row table (shape, mismatched elements, max abs/rel
    error, value ranges, cosine) when it does not; returns the comparison otherwise.
    """
    __tracebackhide__ = True
    row = compare_arrays(name, np.asarray(actual), np.asarray(expected), atol, rtol, cosine_min)
    if not row.passed:
        raise AssertionError(f"{name} differs (atol={atol:g}, rtol={rtol:g}):\n"
                             + comparison_table([row]))
    return row
