"""``index.html``: what ran where, then a row per case in the order given. Static HTML, no script."""
from __future__ import annotations

import html
import platform
import shlex
import sys
import time
from collections import Counter
from typing import Iterable, List, Mapping, Optional

from ..host import cpu_description
from ..verdict.evidence import Evidence

BAD = ("failed", "error", "crashed", "timeout")
HEADER = ("case", "status", "max abs", "max rel", "mismatched", "time (s)", "first divergence / reason",
          "evidence (what ran)", "files")

STYLE = """
body{font-family:sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em;margin:0 0 .5em}
table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f3f3f3}
table.env th{width:9em}
table.cases td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.cases td.case{max-width:24em;overflow-wrap:anywhere}
tr.failed td.status,tr.error td.status,tr.crashed td.status,tr.timeout td.status{background:#fdd;font-weight:bold}
tr.passed td.status{background:#dfd}
tr.skipped{color:#777}
tr.plot td{border-top:none;padding:2px 6px 10px}
pre{margin:0;white-space:pre-wrap;font-size:.85em;max-width:60em}
summary{cursor:pointer}
summary pre{display:inline}
details[open] summary{display:none}
.counts span{margin-right:1em}
small{color:#666}
"""


def session_environment(paddle: str, software: Mapping[str, str], args, cwd) -> "dict":
    """What heads the page: Paddle and what it was built with, the CPU, date, command line."""
    cpu = cpu_description()
    built = ", ".join(f"{k} {software[k]}" for k in ("cuda", "cudnn", "tensorrt") if software.get(k))
    return {
        "Paddle": paddle, "commit": software.get("commit", ""), "built with": built,
        "CPU": cpu["cpu"], "CPU flags": cpu["cpu_flags"],
        "host": f"{platform.node()} ({platform.system()} {platform.machine()}), Python {sys.version.split()[0]}",
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "command line": " ".join(shlex.quote(a) for a in ["pytest", *map(str, args)]),
        "directory": str(cwd),
    }


def _esc(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _number(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if value == value else "-"
    return _esc(value)


def status_text(case: Mapping[str, object]) -> str:
    status = str(case.get("status", ""))
    return f"{status}*" if status == "passed" and case.get("warnings") else status


def evidence_text(case: Mapping[str, object]) -> str:
    """What the candidate and the baseline ran, one line each (verdict/evidence.py)."""
    evidence = case.get("evidence")
    if not isinstance(evidence, Mapping):
        return ""
    lines = []
    for role in sorted(evidence, key=lambda r: r != "candidate"):
        try:
            lines.append(Evidence.from_dict(evidence[role]).text())
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return "\n".join(lines)


def what_happened(case: Mapping[str, object]) -> str:
    """A mode's problems, a failure's first divergence, an error's reason, a vacuous pass's warnings."""
    parts: List[str] = [str(p) for p in case.get("problems") or []]
    if case.get("first_divergence"):
        parts.append(f"first divergence: {case['first_divergence']}")
    found = [f"{label}: {case[key]}" for key, label in (("culprit", "culprit"),  # --paddle-localize's ladder
                                                        ("suggested_run_mode", "suggested run mode"))
             if case.get(key)]
    if found:
        parts.append("; ".join(found))
    if case.get("first_bad_op"):  # --paddle-localize pruning (localize/prune.py)
        parts.append(f"first bad op: {case['first_bad_op']}")
    if case.get("message") or case.get("reason"):  # an error's or crash's whole message
        parts.append(str(case.get("message") or case["reason"]))
    parts += [str(w) for w in case.get("warnings") or []]
    return "\n".join(parts)


def folded(text: str, width: int = 0) -> str:
    """The first line (cut to ``width`` when given) shown, the whole text one click away."""
    if not text:
        return ""
    first = text.splitlines()[0]
    if width and len(first) > width:
        first = first[:width - 3] + "..."
    if first == text:
        return f"<pre>{_esc(text)}</pre>"
    return f"<details><summary><pre>{_esc(first)}</pre></summary><pre>{_esc(text)}</pre></details>"


def case_rows(case: Mapping[str, object], columns: int) -> str:
    status = str(case.get("status", ""))
    files = [f for f in case.get("files") or [] if isinstance(f, str)]
    links = " ".join(f'<a href="{_esc(f)}">{_esc(f.rsplit(".", 1)[-1])}</a>' for f in files)
    repro = str(case.get("repro") or "").replace("\\", "/").rstrip("/").split("/")
    if len(repro) > 1 and repro[-2] == "repro":  # a repro folder inside the report dir
        links += f' <a href="repro/{_esc(repro[-1])}/README.md">repro</a>'
    mismatched = case.get("mismatched")
    counts = f"{_number(mismatched)}/{_number(case.get('total'))}" if mismatched is not None else ""
    elsewhere = case.get("max_rel_elsewhere")  # max rel at a near-zero baseline value: marked *
    max_rel = (f'<td class="num" title="at a near-zero baseline value; elsewhere {_number(elsewhere)}">'
               f'{_number(case.get("max_rel"))}*</td>' if isinstance(elsewhere, float)
               else f'<td class="num">{_number(case.get("max_rel"))}</td>')
    cells = [
        f'<td class="case"><code>{_esc(case.get("case"))}</code></td>',
        f'<td class="status">{_esc(status_text(case))}</td>',
        f'<td class="num">{_number(case.get("max_abs"))}</td>',
        max_rel,
        f'<td class="num">{_esc(counts)}</td>',
        f'<td class="num">{_esc(str(case.get("time") or "").rstrip("s"))}</td>',
        f"<td>{folded(what_happened(case))}</td>",
        f"<td>{folded(evidence_text(case), 70)}</td>",
        f'<td class="files">{links}</td>',
    ]
    row = f'<tr class="{_esc(status)}">{"".join(cells)}</tr>'
    png = next((f for f in files if f.endswith(".png")), None)
    if png and status in BAD:  # the failure's plot, where the eye already is
        row += (f'<tr class="plot {_esc(status)}"><td colspan="{columns}"><a href="{_esc(png)}">'
                f'<img src="{_esc(png)}" alt="plot of {_esc(case.get("case"))}" style="max-width:100%"></a></td></tr>')
    return row


def render(cases: Iterable[Mapping[str, object]], environment: Optional[Mapping[str, str]] = None) -> str:
    cases = list(cases)
    counts = Counter(status_text(c) for c in cases)
    summary = "".join(f"<span>{_esc(k)}: {v}</span>" for k, v in counts.items())
    head = "".join(f"<th>{h}</th>" for h in HEADER)
    body = "".join(case_rows(c, len(HEADER)) for c in cases)
    env = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>"
                  for k, v in (environment or {}).items() if v)
    return (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<title>paddle-infer report</title>"
        f"<style>{STYLE}</style></head><body>"
        "<h1>paddle-infer report</h1>"
        + (f'<table class="env">{env}</table>' if environment else "")
        + f'<p class="counts">{len(cases)} case{"" if len(cases) == 1 else "s"}: {summary}</p>'
        + f'<table class="cases"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        + "<p><small>passed*: passed, but an output cannot fail under its tolerance. max rel*: at a "
          "near-zero baseline value (|base| &lt; 0.001 x the output's largest |base|), not meaningful "
          "there; the largest elsewhere is in its tooltip. Figures are "
          "the case's outputs; each case's xlsx, json and csv hold every tensor compared.</small></p>"
        + "</body></html>\n")
