"""What a person reads: the failure message of a case, the per-case properties that travel
with test reports (JUnit XML, xdist), and the terminal summary table."""
from __future__ import annotations

from typing import Dict, List, Mapping, Sequence, Tuple

from .check import CaseResult
from .compare import comparison_table, format_table

PROPERTY_PREFIX = "paddle_"


def failure_message(result: CaseResult) -> str:
    failures = result.failures
    first = failures[0]
    lines = [
        f"{result.case_id}: {len(failures)} of {len(result.rows)} outputs outside tolerance; "
        f"first: {first.name} ({'; '.join(first.problems)})",
        f"baseline:  {result.baseline}",
        f"candidate: {result.recipe}",
        f"inputs digest: {result.inputs_digest}",
        "",
        comparison_table(result.rows),
    ]
    return "\n".join(lines + [f"note: {n}" for n in result.notes])


def properties(result: CaseResult) -> List[Tuple[str, object]]:
    first = result.failures[0].name if result.failures else ""
    return [
        ("paddle_case", result.case_id),
        ("paddle_max_abs", f"{result.max_abs:.6g}"),
        ("paddle_max_rel", f"{result.max_rel:.6g}"),
        ("paddle_mismatched", f"{result.mismatched}/{result.total}"),
        ("paddle_first_divergent", first),
        ("paddle_duration", f"{result.duration:.3f}"),
    ]


SUMMARY_COLUMNS = ("model", "shape", "mode", "status", "max abs", "max rel", "mismatched", "time")
SUMMARY_KEYS = ("paddle_model", "paddle_shape", "paddle_run_mode", "status", "paddle_max_abs",
                "paddle_max_rel", "paddle_mismatched", "time")


def summary_table(rows: Sequence[Mapping[str, str]]) -> str:
    """One row per case, sorted by id so runs with and without xdist print the same."""
    ordered = sorted(rows, key=lambda r: r["nodeid"])
    return format_table(SUMMARY_COLUMNS, [[r.get(k, "-") for k in SUMMARY_KEYS] for r in ordered])


def summary_row(nodeid: str, outcome: str, props: Mapping[str, object], seconds: float) -> Dict[str, str]:
    row = {k: str(v) for k, v in props.items() if k.startswith(PROPERTY_PREFIX)}
    row.update(nodeid=nodeid, status=outcome, time=f"{seconds:.2f}s")
    return row
