"""Tolerances measured (``--paddle-suggest-tolerances``): each output's worst figure over the seeds
times a margin; JSON-ready, as the figures travel from xdist workers in ``paddle_suggest``."""
from __future__ import annotations

import json
import math
from typing import Dict, List, Mapping, Optional, Sequence

from .metrics import METRICS, MIN_ATOL, scaled
from .rows import TensorComparison

# figure -> how the worst of several seeds is taken
WORST = {"atol_needed": max, **{m.figure: m.worst for m in METRICS}, "max_abs": max, "agreement": min}


def output_figures(row: TensorComparison, position: int) -> Dict[str, object]:
    """What one seed's comparison of one output says, for suggestions."""
    rank_task = row.task.startswith(("top-", "argmax"))
    return {
        "name": row.name.split(" (")[0], "shown": row.name, "position": position,
        "atol": row.atol, "rtol": row.rtol, "task": row.task, "bounds": dict(row.bounds),
        "atol_needed": None if rank_task else _finite(row.atol_needed), "max_abs": _finite(row.max_abs),
        **{m.figure: _finite(getattr(row, m.figure)) for m in METRICS},
        "agreement": (1.0 - row.mismatched / row.total) if rank_task and row.total else None,
        "unmatched": any("without a match" in p for p in row.problems),
        "comparable": row.shape_ok or bool(row.task),
        "std": _finite(row.std_expected), "mean_abs": _finite(row.mean_abs_expected)}


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
        found["atol"] = scaled(float(need), margin)
    bounds = out.get("bounds") or {}
    for m in METRICS:  # a figure of "inf" (as text) or none gives no bound
        figure = out.get(m.figure)
        if m.bound in bounds and isinstance(figure, float) and math.isfinite(figure):
            found[m.bound] = m.suggest(figure, margin)
    return found


def cannot_fail(out: Mapping[str, object]) -> bool:
    """Whether the suggested atol spans the baseline's spread (vacuity.py's 'spread' rule)."""
    atol, std, mean_abs = out.get("suggested", {}).get("atol"), out.get("std"), out.get("mean_abs")
    if atol is None or not isinstance(std, float) or not isinstance(mean_abs, float):
        return False
    return std <= atol + float(out["rtol"]) * mean_abs


def case_suggestion(seeds: Sequence[int], rows_per_seed: Sequence[Sequence[TensorComparison]],
                    margin: float, notes: Sequence[str] = ()) -> str:
    """The ``paddle_suggest`` property (JSON): seeds, margin, each output's worst figures and keys."""
    figures = [[output_figures(r, i) for i, r in enumerate(rows)] for rows in rows_per_seed]
    outputs = worst(figures)
    for out in outputs:
        out["suggested"] = suggest(out, margin)
    return json.dumps({"seeds": list(seeds), "margin": margin, "outputs": outputs, "notes": list(notes)})


def method_text(margin: float) -> str:
    return (f"suggested = {margin:g} x the worst figure over the seeds (atol: x the worst max abs, "
            f"so it holds at rtol 0; at least {MIN_ATOL:g}), rounded up to 2 significant digits; rtol stays")


def seeds_text(seeds: Sequence[int]) -> str:
    seeds = sorted(seeds)
    if seeds and seeds == list(range(seeds[0], seeds[0] + len(seeds))) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))
