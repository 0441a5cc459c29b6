"""What a person reads: the failure message of a case, the per-case properties that travel
with test reports (JUnit XML, xdist), and the terminal summary table."""
from __future__ import annotations

from typing import Dict, List, Mapping, Sequence, Tuple

from ..verdict.result import CaseResult
from ..verdict.compare import comparison_table, format_table
from ..verdict.evidence import evidence_property

PROPERTY_PREFIX = "paddle_"


def failure_message(result: CaseResult) -> str:
    failing_outputs = [r for r in result.rows if not r.passed]
    if failing_outputs:
        first = failing_outputs[0]
        headline = (f"{result.case_id}: {len(failing_outputs)} of {len(result.rows)} outputs outside "
                    f"tolerance; first: {first.name} ({'; '.join(first.problems)})")
    else:
        judged = [r for r in result.divergent if r.judged]
        headline = (f"{result.case_id}: {len(judged)} intermediate tensors outside the tolerance "
                    f"a tensor rule sets for them; outputs within tolerance")
    if result.problems:  # the run mode did not do what it names: first, with the tensors' verdict
        headline = "\n".join([f"{result.case_id}: {p}" for p in result.problems]
                             + ([headline] if failing_outputs else []))
    lines = [headline] + divergence_lines(result) + result.localization + [
        f"baseline:  {result.baseline}",
        f"candidate: {result.recipe}",
        f"inputs digest: {result.inputs_digest}",
        f"program:   {result.program_file} ({result.program_choice})",
        *evidence_lines(result),
        "",
        comparison_table(result.rows),
    ]
    return "\n".join(lines + [f"note: {n}" for n in result.notes])


def evidence_lines(result: CaseResult) -> List[str]:
    """What the candidate and the baseline really ran (verdict/evidence.py)."""
    from ..verdict.evidence import Evidence

    order = sorted(result.evidence, key=lambda role: role != "candidate")
    return [f"ran: {Evidence.from_dict(result.evidence[role]).text()}" for role in order]


def divergence_lines(result: CaseResult) -> List[str]:
    """Where it goes wrong: the first intermediate tensor, in execution order, that breaks
    its tolerance, with its row of the per-tensor table."""
    if not result.intermediates:
        return []
    divergent = result.divergent
    unmatched = sum(1 for r in result.intermediates if not r.matched)
    counts = (f"{len(divergent)} of {len(result.intermediates)} intermediate tensors break tolerance"
              + (f" ({unmatched} without a baseline pair)" if unmatched else ""))
    if not divergent:
        return [f"intermediates: {counts}"]
    first = divergent[0]
    c = first.comparison
    return [
        f"first divergent tensor: #{first.index} {c.op_type} {c.name} ({'; '.join(c.problems)}); {counts}",
        comparison_table([c]).replace("\n", "\n    ").join(["    ", ""]),
    ]


def first_divergence(result: CaseResult) -> str:
    """``op_type name`` of the first tensor outside tolerance, intermediates first."""
    if result.divergent:
        c = result.divergent[0].comparison
        return f"{c.op_type} {c.name}"
    failing = [c for c in result.rows if not c.passed]
    return f"(output) {failing[0].name}" if failing else ""


def properties(result: CaseResult) -> List[Tuple[str, object]]:
    first = first_divergence(result)
    return [
        ("paddle_max_abs", f"{result.max_abs:.6g}"),
        ("paddle_max_rel", f"{result.max_rel:.6g}"),
        ("paddle_mismatched", f"{result.mismatched}/{result.total}"),
        ("paddle_program", result.program),  # the format and file checked: "pir inference.json"
        ("paddle_first_divergent", first),
        ("paddle_duration", f"{result.duration:.3f}"),
        # what really ran, candidate then baseline (verdict/evidence.py)
        ("paddle_evidence", evidence_property(result.evidence)),
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
