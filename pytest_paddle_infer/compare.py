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
    cosine: float = float("nan")
    worst_index: Optional[Tuple[int, ...]] = None
    nan_actual: int = 0
    inf_actual: int = 0
    new_nonfinite: int = 0  # non-finite in the candidate where the baseline is finite
    cosine_min: Optional[float] = None
    op_type: str = ""
    problems: List[str] = field(default_factory=list)

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


def _as_float(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64, copy=False)


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
    a = _as_float(actual)
    e = _as_float(expected)
    row.total = int(a.size)
    if a.size == 0:
        return row
    finite_a, finite_e = np.isfinite(a), np.isfinite(e)
    row.nan_actual = int(np.isnan(a).sum())
    row.inf_actual = int(np.isinf(a).sum())
    row.new_nonfinite = int((~finite_a & finite_e).sum())
    close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    row.mismatched = int(a.size - close.sum())
    both = finite_a & finite_e
    if both.any():
        diff = np.where(both, np.abs(a - e), 0.0)
        rel = diff / (np.abs(np.where(both, e, 0.0)) + RTOL_EPSILON)
        row.max_abs = float(diff.max())
        row.max_rel = float(rel.max())
        # the element furthest outside its tolerance (or closest to leaving it)
        worst = diff - (atol + rtol * np.abs(np.where(both, e, 0.0)))
        row.worst_index = tuple(int(i) for i in np.unravel_index(int(np.argmax(worst)), a.shape))
        row.min_actual, row.max_actual = float(a[finite_a].min()), float(a[finite_a].max())
        row.min_expected, row.max_expected = float(e[finite_e].min()), float(e[finite_e].max())
        row.cosine = cosine_similarity(a[both], e[both])
    base_nan, base_inf = int(np.isnan(e).sum()), int(np.isinf(e).sum())
    if base_nan or base_inf:  # nothing to compare against there: the model or inputs are broken
        row.problems.append(f"the baseline has {base_nan} NaN and {base_inf} Inf: "
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


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    a = a.ravel()
    b = b.ravel()
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


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
