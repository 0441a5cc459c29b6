"""A tensor's comparison row and the per-tensor table, without numpy (for the pytest process)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .metrics import METRICS, ceil_significant

NEAR_ZERO = 1e-3  # |baseline| below this part of the tensor's largest |baseline|: near zero


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
    op_type: str = ""
    problems: List[str] = field(default_factory=list)
    vacuous: List[str] = field(default_factory=list)  # why a passing output cannot fail (vacuity.py)
    bounds: Dict[str, float] = field(default_factory=dict)  # each metric bound the rule sets (metrics.py)
    sqnr_db: float = float("nan")  # inf when the candidate equals the baseline
    rel_l2: float = float("nan")
    p50_abs: float = float("nan")
    p90_abs: float = float("nan")
    p99_abs: float = float("nan")
    atol_needed: float = float("nan")  # the smallest atol passing every element at this rtol (inf: none)
    rtol_needed: float = float("nan")  # and rtol at this atol (inf: none, as where the baseline is 0)
    max_rel_near_zero: bool = False  # Max Rtol is at a near-zero baseline element: not meaningful
    max_rel_elsewhere: float = float("nan")  # the largest relative error away from near-zero baselines
    task: str = ""  # a task-aware comparison (task_compare.py) and its settings; "" when element-wise
    task_figures: str = ""

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
        return f"{self.mismatched}/{self.total}" if self.counted else "-"

    @property
    def counted(self) -> bool:
        """Whether mismatched/total say something: not for a shape mismatch no task explains."""
        return self.shape_ok or bool(self.task)

    @property
    def needed_text(self) -> str:
        """``would pass with atol >= X (at rtol R) or rtol >= Y (at atol A)``."""
        if math.isnan(self.atol_needed):
            return ""
        return (f"would pass with atol >= {needed(self.atol_needed)} (at rtol={self.rtol:g}) "
                f"or rtol >= {needed(self.rtol_needed)} (at atol={self.atol:g})")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["passed"] = self.passed
        d["worst_index"] = list(self.worst_index) if self.worst_index is not None else None
        return d


def needed(value: float) -> str:
    """A needed tolerance as text, rounded up (3 significant digits) so that it passes."""
    if math.isinf(value):
        return "none (inf)"
    return f"{ceil_significant(value, 3):.3g}"


TABLE_COLUMNS = ("Tensor", "Shape", "Mismatched", "Max Atol", "Max Rtol", "Min Val(base)",
                 "Max Val(base)") + tuple(m.column for m in METRICS) + ("Result",)
NEAR_ZERO_MARK = "*"  # after a Max Rtol found at a near-zero baseline element


def finite_text(value: float, spec: str = ".6g") -> str:
    """A figure, or ``-`` when there was none (``nan`` would read as if the tensor held NaN)."""
    return "-" if value != value else format(value, spec)


def range_text(row: TensorComparison) -> str:
    """``min .. max, std`` of the baseline, for properties and the summary."""
    if row.total == 0:
        return "empty"
    return (f"min {finite_text(row.min_expected)} max {finite_text(row.max_expected)} "
            f"std {finite_text(row.std_expected)}")


def pair_text(actual: float, expected: float, spec: str = ".6g") -> str:
    """``actual(expected)``; ``-`` when neither side has a finite value."""
    if actual != actual and expected != expected:
        return "-"
    return f"{finite_text(actual, spec)}({finite_text(expected, spec)})"


def table_rows(rows: Iterable[TensorComparison]) -> List[Tuple[str, ...]]:
    return [(r.name, r.shape_text, r.mismatched_text, f"{r.max_abs:.6g}",
             f"{r.max_rel:.6g}{NEAR_ZERO_MARK if r.max_rel_near_zero else ''}",
             pair_text(r.min_actual, r.min_expected), pair_text(r.max_actual, r.max_expected),
             *(finite_text(getattr(r, m.figure), m.cell) for m in METRICS),
             "ok" if r.passed else "FAIL: " + "; ".join(r.problems)) for r in rows]


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(header), line("-" * w for w in widths)] + [line(r) for r in rows])


def comparison_table(rows: Sequence[TensorComparison]) -> str:
    """The per-tensor table, what a marked Max Rtol means and the task comparisons' figures."""
    lines = [format_table(TABLE_COLUMNS, table_rows(rows))]
    marked = [r for r in rows if r.max_rel_near_zero]
    if marked:
        lines.append(f"{NEAR_ZERO_MARK} Max Rtol at a near-zero baseline value (|base| < {NEAR_ZERO:g} x the "
                     f"tensor's largest |base|): not meaningful there; elsewhere max rtol "
                     + ", ".join(f"{r.name} {r.max_rel_elsewhere:.6g}" for r in marked))
    lines += [f"{r.name}: compare {r.task}: {r.task_figures}" for r in rows if r.task]
    return "\n".join(lines)
