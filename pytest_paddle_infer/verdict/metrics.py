"""The metrics a tolerance may bound beside atol and rtol, an entry each, for every reader."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

MIN_ATOL = 1e-6  # a suggested atol or max-bound: above 0 even for a bit-identical output


@dataclass(frozen=True)
class Metric:
    figure: str  # the row's field holding the measured value
    bound: str  # the key that bounds it: in suites, markers, Rule and the row's bounds
    worst: Callable  # min: the figure must be at least the bound, max: at most; the worse of several
    description: str
    column: str  # its column in the per-tensor table and the report files
    cell: str  # the figure's format in the table
    shown: str  # the figure in a problem message
    suggest: Callable[[float, float], float]  # (worst figure over seeds, margin) -> bound
    bound_format: str = "g"  # the bound in a problem message
    low: float = 0.0  # the range a suite's bound must lie in
    high: float = math.inf
    # scale-free: a constant candidate's figure from the baseline's m, s, sqrt(m^2 + s^2) (vacuity.py)
    constant: Optional[Callable[[float, float, float], float]] = None

    def problem(self, value: float, bound: float) -> Optional[str]:
        """What a figure outside its bound says; None within it (a NaN figure never is)."""
        if self.worst(value, bound) == bound:
            return None
        side = "below" if self.worst is min else "above"
        return f"{self.shown.format(value)} {side} {self.bound} {bound:{self.bound_format}}"


def ceil_significant(value: float, digits: int) -> float:
    """``value`` rounded up to ``digits`` significant digits (0 stays 0)."""
    if value <= 0 or not math.isfinite(value):
        return value
    scale = 10.0 ** (math.floor(math.log10(value)) - digits + 1)
    up = float(f"{math.ceil(value / scale) * scale:.{digits}g}")
    return up if up >= value else float(f"{up + scale:.{digits}g}")  # never below value


def scaled(worst: float, margin: float) -> float:
    """margin x the worst figure, rounded up to 2 significant digits, at least MIN_ATOL."""
    return max(MIN_ATOL, ceil_significant(margin * worst, 2))


METRICS = (
    # suggested: 1 - margin x (1 - the lowest cosine), rounded down
    Metric("cosine", "cosine_min", min, "cosine similarity", "Cosine", ".6f", "cosine {:.6f}",
           lambda w, margin: math.floor((1.0 - margin * (1.0 - w)) * 1e6) / 1e6,
           bound_format=".10g", low=-1.0, high=1.0, constant=lambda m, s, r: abs(m) / r),
    # suggested: the lowest SQNR minus 20 log10(margin) dB (the error's amplitude times margin)
    Metric("sqnr_db", "sqnr_min", min, "signal-to-quantization-noise ratio in dB", "SQNR dB", ".4g",
           "SQNR {:.4g} dB", lambda w, margin: math.floor((w - 20.0 * math.log10(margin)) * 10) / 10,
           low=-math.inf, constant=lambda m, s, r: 20.0 * math.log10(r / s) if s > 0.0 else math.inf),
    Metric("rel_l2", "rel_l2_max", max, "relative L2 error ||c - b|| / ||b||", "Rel L2", ".3g",
           "relative L2 {:.4g}", scaled, constant=lambda m, s, r: s / r),
    Metric("p99_abs", "p99_abs_max", max, "99th percentile of |c - b|", "P99 Abs", ".3g",
           "99th percentile of |error| {:.4g}", scaled),
)
