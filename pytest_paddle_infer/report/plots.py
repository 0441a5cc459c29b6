"""A case's plot (``<stem>.png``): Max Atol over atol and Max Rtol over rtol, tensor by tensor."""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Sequence

from ..files import atomic_write
from ..protocol import CaseResult

FLOOR = 1e-12  # zero on a log scale
MAX_LABELS = 40  # tick labels shown at most; the others are left out evenly
LABEL_CHARS = 28
ADDRESS = re.compile(r"^0x[0-9a-fA-F]+_")  # PIR names: the address says nothing to a reader


def tensor_label(name: str) -> str:
    """``0x55..._inner_var_12`` -> ``inner_var_12``; long names keep their end."""
    short = ADDRESS.sub("", name)
    return short if len(short) <= LABEL_CHARS else "..." + short[-(LABEL_CHARS - 3):]


def thinned(count: int, most: int = MAX_LABELS) -> List[int]:
    """Evenly spaced positions, at most ``most``, always the first and the last."""
    if count <= most:
        return list(range(count))
    step = (count - 1) / (most - 1)
    return sorted({round(i * step) for i in range(most)})


def write_png(path: Path, result: CaseResult) -> bool:
    """Write the plot; False when matplotlib is missing or there is nothing to plot."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig = figure(result)
    if fig is None:
        return False
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=100))
    plt.close(fig)
    return True


def figure(result: CaseResult):
    """The plot as a matplotlib Figure (None when there is nothing to plot)."""
    import matplotlib.pyplot as plt

    matched = [r for r in result.intermediates if r.matched]
    comparisons = [r.comparison for r in matched] or list(result.rows)
    if not comparisons:
        return None
    bars = not matched
    width = max(6.0, min(20.0, 2.0 + len(comparisons) * (0.6 if bars else 0.16)))
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(width, 6.5))
    x = list(range(len(comparisons)))
    _panel(top, x, [c.max_abs for c in comparisons], [c.atol for c in comparisons], "Max Atol", "atol",
           "tab:red", bars)
    _panel(bottom, x, [c.max_rel for c in comparisons], [c.rtol for c in comparisons], "Max Rtol", "rtol",
           "tab:blue", bars)
    first = next((i for i, c in enumerate(comparisons) if not c.passed), None)
    if first is not None and not bars:
        for ax in (top, bottom):
            ax.axvline(first, color="black", lw=0.8, ls="-.")
        top.annotate(f"first divergence: #{matched[first].index} {tensor_label(comparisons[first].name)}",
                     (first, 1.0), xycoords=("data", "axes fraction"), xytext=(4, -12),
                     textcoords="offset points", fontsize=8, va="top")
    ticks = thinned(len(comparisons))
    bottom.set_xticks(ticks)
    bottom.set_xticklabels([tensor_label(comparisons[i].name) for i in ticks], rotation=60 if not bars else 0,
                           ha="right" if not bars else "center", fontsize=7)
    bottom.set_xlabel("output" if bars else
                      f"intermediate tensor, in execution order ({len(comparisons)} compared"
                      + (f"; {len(ticks)} labelled" if len(ticks) < len(comparisons) else "") + ")")
    top.set_title(result.case_id, fontsize=9)
    fig.tight_layout()
    return fig


def _panel(ax, x: Sequence[int], values: Sequence[float], tolerances: Sequence[float], what: str,
           tol_name: str, color: str, bars: bool) -> None:
    shown = [max(v, FLOOR) if v == v else FLOOR for v in values]  # NaN: no finite pair
    limits = [max(t, FLOOR) for t in tolerances]
    distinct = sorted(set(tolerances))
    label = (f"{tol_name} {distinct[0]:g}" if len(distinct) == 1 else f"{tol_name} per tensor") \
        + (" (0: drawn at 1e-12)" if 0 in distinct else "")
    if bars:
        ax.bar(x, shown, width=0.6, color=color, alpha=0.7, label=what)
        ax.hlines(limits, [i - 0.4 for i in x], [i + 0.4 for i in x], colors="black", linestyles="--",
                  lw=1.2, label=label)
        for i, v, y in zip(x, values, shown):
            ax.annotate(f"{v:.3g}", (i, y), ha="center", va="bottom",
                        fontsize=7, xytext=(0, 2), textcoords="offset points")
        ax.set_xlim(-0.6, len(x) - 0.4)
    else:
        ax.semilogy(x, shown, ".-", color=color, lw=1, ms=3, label=what)
        ax.step(x, limits, where="mid", color="black", ls="--", lw=1, label=label)
    ax.set_yscale("log")
    ax.set_ylabel(what)
    ax.grid(True, which="major", axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0)  # beside: never on data
