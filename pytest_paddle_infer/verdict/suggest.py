"""Tolerances measured, not guessed (``--paddle-suggest-tolerances``): a case's outputs are
compared over several input seeds, the worst figure of each output is kept, and the
suggested tolerance is that figure times a margin, rounded up to two significant digits:

    atol         margin x the largest |candidate - baseline| of any seed: enough at rtol 0,
                 so the output's rtol (which stays) only adds headroom; at least MIN_ATOL, so a
                 bit-identical output does not get atol 0. (The smallest atol that passed at
                 the output's rtol is shown beside it.)
    cosine_min   1 - margin x (1 - the lowest cosine)
    sqnr_min     the lowest SQNR minus 20 log10(margin) dB (the error's amplitude times margin)
    rel_l2_max   margin x the largest relative L2 error
    p99_abs_max  margin x the largest 99th percentile of |error|

Only atol is suggested for every output; the others where the output's rule sets them.
Outputs a rank comparison judges (topk, argmax) get no atol: their figure is the lowest
agreement. Pure Python, JSON-ready dicts: the figures travel from xdist workers as a JUnit
property (``paddle_suggest``).
"""
from __future__ import annotations

import json
import math
from typing import Dict, List, Mapping, Optional, Sequence

from .rows import TensorComparison, ceil_significant

MIN_ATOL = 1e-6
DIGITS = 2
# key -> (how the worst of several seeds is taken, the row's figure)
WORST = {"atol_needed": max, "cosine": min, "sqnr_db": min, "rel_l2": max, "p99_abs": max,
         "max_abs": max, "agreement": min}
BOUNDS = (("cosine_min", "cosine"), ("sqnr_min", "sqnr_db"), ("rel_l2_max", "rel_l2"),
          ("p99_abs_max", "p99_abs"))


def output_figures(row: TensorComparison, position: int) -> Dict[str, object]:
    """What one seed's comparison of one output says, for suggestions."""
    rank_task = row.task.startswith(("top-", "argmax"))
    unmatched = any("without a match" in p for p in row.problems)
    return {
        "name": row.name.split(" (")[0], "shown": row.name, "position": position,
        "atol": row.atol, "rtol": row.rtol, "task": row.task,
        "bounds": {key: getattr(row, key) for key, _ in BOUNDS if getattr(row, key) is not None},
        "atol_needed": None if rank_task else _finite(row.atol_needed), "max_abs": _finite(row.max_abs),
        "cosine": _finite(row.cosine), "sqnr_db": _finite(row.sqnr_db),
        "rel_l2": _finite(row.rel_l2), "p99_abs": _finite(row.p99_abs),
        "agreement": (1.0 - row.mismatched / row.total) if rank_task and row.total else None,
        "unmatched": unmatched, "comparable": row.shape_ok or bool(row.task),
        "std": _finite(row.std_expected), "mean_abs": _finite(row.mean_abs_expected),
    }


def _finite(value: float) -> Optional[float]:
    """A figure as JSON takes it: None for nan; inf stays (as a string)."""
    if value is None or math.isnan(value) or value == -math.inf:
        return None
    return value if math.isfinite(value) else "inf"


def worst(seeds: Sequence[Sequence[Mapping[str, object]]]) -> List[Dict[str, object]]:
    """Per output (by position), the worst figure over the seeds' comparisons."""
    merged: List[Dict[str, object]] = []
    for figures in seeds:
        for i, out in enumerate(figures):
            if i >= len(merged):
                merged.append(dict(out))
                continue
            into = merged[i]
            for key, pick in WORST.items():
                values = [v for v in (into.get(key), out.get(key)) if v is not None]
                if "inf" in values:  # inf is the worst of a max, the best of a min
                    finite = [v for v in values if v != "inf"]
                    into[key] = "inf" if pick is max or not finite else pick(finite)
                elif values:
                    into[key] = pick(values)
            into["unmatched"] = bool(into["unmatched"] or out["unmatched"])
            into["comparable"] = bool(into["comparable"] and out["comparable"])
    return merged


def suggest(out: Mapping[str, object], margin: float) -> Dict[str, float]:
    """The tolerance keys to suggest for one output's worst figures (see the module doc)."""
    found: Dict[str, float] = {}
    need = out.get("max_abs") if out.get("atol_needed") not in (None, "inf") else None
    if need not in (None, "inf") and out.get("comparable"):
        found["atol"] = max(MIN_ATOL, ceil_significant(margin * float(need), DIGITS))
    bounds = out.get("bounds") or {}
    cosine, sqnr, rel_l2, p99 = (out.get(k) for k in ("cosine", "sqnr_db", "rel_l2", "p99_abs"))
    if "cosine_min" in bounds and isinstance(cosine, float):
        found["cosine_min"] = round_down(1.0 - margin * (1.0 - cosine), 6)
    if "sqnr_min" in bounds and isinstance(sqnr, float) and math.isfinite(sqnr):
        found["sqnr_min"] = math.floor((sqnr - 20.0 * math.log10(margin)) * 10) / 10
    if "rel_l2_max" in bounds and isinstance(rel_l2, float):
        found["rel_l2_max"] = max(MIN_ATOL, ceil_significant(margin * rel_l2, DIGITS))
    if "p99_abs_max" in bounds and isinstance(p99, float):
        found["p99_abs_max"] = max(MIN_ATOL, ceil_significant(margin * p99, DIGITS))
    return found


def cannot_fail(out: Mapping[str, object]) -> bool:
    """Whether the suggested atol (with the output's rtol) spans the baseline's spread, so
    that the element-wise check could not fail (verdict/vacuity.py's 'spread' rule)."""
    atol, std, mean_abs = out.get("suggested", {}).get("atol"), out.get("std"), out.get("mean_abs")
    if atol is None or not isinstance(std, float) or not isinstance(mean_abs, float):
        return False
    return std <= atol + float(out["rtol"]) * mean_abs


def round_down(value: float, decimals: int) -> float:
    scale = 10 ** decimals
    return math.floor(value * scale) / scale


def case_suggestion(seeds: Sequence[int], rows_per_seed: Sequence[Sequence[TensorComparison]],
                    margin: float, notes: Sequence[str] = ()) -> str:
    """The ``paddle_suggest`` property: the seeds, the margin, and per output its worst
    figures and the suggested keys (JSON)."""
    figures = [[output_figures(r, i) for i, r in enumerate(rows)] for rows in rows_per_seed]
    outputs = worst(figures)
    for out in outputs:
        out["suggested"] = suggest(out, margin)
    return json.dumps({"seeds": list(seeds), "margin": margin, "outputs": outputs, "notes": list(notes)})


def seeds_text(seeds: Sequence[int]) -> str:
    seeds = sorted(seeds)
    if seeds and seeds == list(range(seeds[0], seeds[0] + len(seeds))) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))
