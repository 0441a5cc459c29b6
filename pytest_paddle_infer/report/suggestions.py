"""``--paddle-suggest-tolerances``: the terminal section, and writing the suggestions into the suites."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Dict, List, Mapping, Sequence, Tuple

from ..verdict.rows import format_table
from ..verdict.suggest import cannot_fail, method_text, seeds_text

COLUMNS = ("case", "output", "seeds", "worst max abs", "atol needed (at rtol)", "atol now", "suggested")
# learned from: a failure may be the very regression the tolerance is there to catch
LEARNED_FROM = ("passed",)


def _figure(value) -> str:
    return "-" if value is None else (value if isinstance(value, str) else f"{value:.3g}")


def suggested_rows(rows: Sequence[Mapping[str, str]]) -> List[Tuple[str, dict, dict]]:
    """(case id, suggestion, suite entry or {}) of the cases measured, in node id order."""
    return [(r.get("paddle_case", r["nodeid"]), json.loads(r["paddle_suggest"]),
             json.loads(r["paddle_suite_entry"]) if r.get("paddle_suite_entry") else {})
            for r in sorted(rows, key=lambda r: r["nodeid"]) if r.get("paddle_suggest")]


def suggestion_lines(rows: Sequence[Mapping[str, str]], written: Sequence[str]) -> List[str]:
    measured = suggested_rows(rows)
    if not measured:
        return []
    margin = measured[0][1]["margin"]
    table = []
    for case, suggestion, _ in measured:
        seeds = seeds_text(suggestion["seeds"])
        for out in suggestion["outputs"]:
            keys = out["suggested"]
            text = " ".join(f"{k}={v:g}" for k, v in keys.items()) or why_none(out)
            if cannot_fail(out):
                text += (f" (spans the baseline's spread, std {out['std']:.3g}: the element-wise check "
                         f"cannot fail; judge by cosine_min or sqnr_min)")
            need = f"{_figure(out['atol_needed'])} ({out['rtol']:g})"
            table.append((case, out["shown"], seeds, _figure(out["max_abs"]), need, f"{out['atol']:g}", text))
    lines = [method_text(margin), format_table(COLUMNS, table)]
    for case, suggestion, _ in measured:
        lines += [f"note: {case}: {n}" for n in suggestion.get("notes", [])]
    return lines + list(written)


def why_none(out: Mapping[str, object]) -> str:
    if out.get("agreement") is not None:
        return f"none (a rank comparison: lowest agreement {out['agreement']:.4g})"
    if out.get("unmatched"):
        return "none (unmatched boxes: see iou, score_min)"
    return "none (no tolerance passes: shapes or NaN/Inf differ)"


def write_suites(rows: Sequence[Mapping[str, str]], cache_dir: Path) -> List[str]:
    """Write each suite's suggestions into it (not one with hard links: it would split them)."""
    from ..cases.suite_writer import write_suggestions

    by_file: Dict[str, List[Tuple[dict, dict]]] = {}
    shown: Dict[str, str] = {}
    unwritable, not_learned = [], []
    statuses = {r.get("paddle_case", r["nodeid"]): r.get("status", "") for r in rows}
    for case, suggestion, entry in suggested_rows(rows):
        if statuses.get(case) not in LEARNED_FROM:
            not_learned.append(f"{case} ({statuses.get(case) or 'not run'})")
        elif entry:
            real = str(Path(entry["file"]).resolve())
            shown.setdefault(real, entry["file"])
            by_file.setdefault(real, []).append((dict(entry, case=case), suggestion))
        else:
            unwritable.append(case)
    lines = []
    for real, cases in by_file.items():
        file = shown[real]
        try:
            links = Path(real).stat().st_nlink
        except OSError as e:
            lines.append(f"not written: {file}: {e.strerror or e}")
            continue
        if links > 1:
            lines.append(f"not written: {file} has {links} hard links, and writing it (a new file renamed "
                         f"into place) would leave the others with the old text; make it a symbolic link "
                         f"or a file of its own")
            continue
        lock = Path(cache_dir) / "suite-locks" / (hashlib.sha1(real.encode()).hexdigest()[:16] + ".lock")
        refused: List[str] = []
        changes = write_suggestions(Path(file), cases, lock, refused)
        where = f"{real} (through the link {file})" if Path(file).is_symlink() else file
        lines.append(f"wrote {len(changes)} tolerance(s) into {where}"
                     + (":" if changes else "" if refused else " (already as suggested)"))
        lines += [f"  {c}" for c in changes] + [f"  {r}" for r in refused]
    if not_learned:
        lines.append(f"not learned from (only cases that passed are): {', '.join(not_learned)}")
    if unwritable:
        lines.append(f"not written (no suite file declares them): {', '.join(unwritable)}")
    return lines
