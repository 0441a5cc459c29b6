"""What a person reads: a case's failure message, its report properties and the terminal summary."""
from __future__ import annotations

import re
from typing import Dict, List, Mapping, Sequence, Tuple

from ..protocol import CaseResult
from ..verdict.rows import NEAR_ZERO, NEAR_ZERO_MARK, comparison_table, format_table, range_text
from ..verdict.evidence import evidence_texts

PROPERTY_PREFIX = "paddle_"
RANGE_SEPARATOR = "; "
SUMMARY_COLUMNS = ("model", "shape", "mode", "status", "max abs", "max rel", "mismatched", "time")
SUMMARY_KEYS = ("paddle_model", "paddle_shape", "paddle_run_mode", "status", "paddle_max_abs",
                "paddle_max_rel", "paddle_mismatched", "time")
WARNED = "passed*"  # a pass with an output that cannot fail (a PaddleInferWarning)
RANGE_ITEM = re.compile(r"(.+?): (empty|min (\S+) max (\S+) std (\S+))$")
OUTPUT_COLUMNS = ("model", "shape", "output", "min", "max", "std")


def failure_message(result: CaseResult) -> str:
    failing_outputs = [r for r in result.rows if not r.passed]
    if failing_outputs:
        first = failing_outputs[0]
        what = ("cannot fail under their tolerance (--paddle-strict)"
                if all(r.vacuous for r in failing_outputs) else "outside tolerance")
        headline = (f"{result.case_id}: {len(failing_outputs)} of {len(result.rows)} outputs {what}; "
                    f"first: {first.name} ({'; '.join(first.problems)})")
    else:
        judged = [r for r in result.divergent if r.judged]
        headline = (f"{result.case_id}: {len(judged)} intermediate tensors outside the tolerance "
                    f"a tensor rule sets for them; outputs within tolerance")
    if result.problems:  # the run mode did not do what it names: first, with the tensors' verdict
        headline = "\n".join([f"{result.case_id}: {p}" for p in result.problems]
                             + ([headline] if failing_outputs else []))
    lines = [headline] + needed_lines(result) + divergence_lines(result) + result.localization + [
        f"baseline:  {result.baseline}", f"candidate: {result.recipe}",
        f"inputs digest: {result.inputs_digest}",
        f"program:   {result.program_file} ({result.program_choice})",
        *(f"ran: {line}" for line in evidence_texts(result.evidence)),  # verdict/evidence.py
        "", comparison_table(result.rows)]
    lines += [f"cannot fail: {r.name}: {', '.join(r.vacuous)}" for r in result.rows if r.vacuous and r.passed]
    return "\n".join(lines + [f"note: {n}" for n in result.notes])


def needed_lines(result: CaseResult) -> List[str]:
    """For each failing tensor, the smallest passing atol and rtol, or why no tolerance would pass."""
    lines = []
    for r in result.failures:
        if not r.shape_ok and not r.task:
            why = "none: the shapes differ"
        elif r.task and any("without a match" in p for p in r.problems):
            why = (f"none for the unmatched boxes (iou and score_min decide them); matched "
                   f"boxes {r.needed_text or 'pass'}")
        elif r.task.startswith(("top-", "argmax")):
            why = f"none: the ranks decide ({r.task}); element-wise it {r.needed_text or 'passes'}"
        elif r.task.startswith("count of"):
            why = "none: the box counts are judged by the boxes comparison"
        else:
            why = r.needed_text or "none: no finite pair of values to compare"
        lines.append(f"smallest passing tolerance: {r.name}: {why}")
    return lines


def divergence_lines(result: CaseResult) -> List[str]:
    """The first intermediate tensor, in execution order, that breaks its tolerance, and its row."""
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


def vacuous_text(result: CaseResult) -> str:
    """``output: reason, reason; output: ...`` for the outputs that cannot fail."""
    return RANGE_SEPARATOR.join(f"{r.name}: {', '.join(r.vacuous)}" for r in result.rows if r.vacuous)


def properties(result: CaseResult) -> List[Tuple[str, object]]:
    first = first_divergence(result)
    # the baseline's value range per output, and the outputs that cannot fail
    props: List[Tuple[str, object]] = [
        ("paddle_ranges", RANGE_SEPARATOR.join(f"{r.name}: {range_text(r)}" for r in result.rows))]
    if any(r.vacuous for r in result.rows):
        props.append(("paddle_vacuous", vacuous_text(result)))
    if result.task_text:  # task_compare.py
        props.append(("paddle_task", result.task_text))
    if result.max_rel_elsewhere is not None:  # the max rel is at a near-zero baseline value
        props.append(("paddle_max_rel_elsewhere", f"{result.max_rel_elsewhere:.6g}"))
    return props + [
        ("paddle_max_abs", f"{result.max_abs:.6g}"), ("paddle_max_rel", f"{result.max_rel:.6g}"),
        ("paddle_mismatched", result.mismatched_text),
        ("paddle_program", result.program),  # the format and file checked: "pir inference.json"
        ("paddle_first_divergent", first),
        ("paddle_duration", f"{result.duration:.3f}"),
        ("paddle_evidence", " | ".join(evidence_texts(result.evidence))),  # what really ran
    ] + [(k, v) for k, v in (("paddle_first_bad_op", getattr(result, "first_bad_op", "")),
                             ("paddle_repro", getattr(result, "repro_dir", ""))) if v]


def shown_status(row: Mapping[str, str]) -> str:
    return WARNED if row.get("status") == "passed" and row.get("paddle_vacuous") else row.get("status", "-")


def summary_table(rows: Sequence[Mapping[str, str]]) -> str:
    """One row per case, in the order given (the cases' order: the same with and without xdist)."""
    return format_table(SUMMARY_COLUMNS, [[summary_cell(r, k) for k in SUMMARY_KEYS] for r in rows])


def summary_cell(row: Mapping[str, str], key: str) -> str:
    if key == "status":
        return shown_status(row)
    if key == "paddle_max_rel" and row.get("paddle_max_rel_elsewhere"):
        return row.get(key, "-") + NEAR_ZERO_MARK  # explained in a section of its own
    return row.get(key, "-")


def outputs_table(rows: Sequence[Mapping[str, str]]) -> List[str]:
    """Every output's baseline value range (each once), then the passes with an output that cannot fail."""
    seen: Dict[Tuple[str, ...], None] = {}
    for r in sorted(rows, key=lambda r: r["nodeid"]):
        for item in filter(None, r.get("paddle_ranges", "").split(RANGE_SEPARATOR)):
            m = RANGE_ITEM.match(item)
            if m:
                figures = m.group(3, 4, 5) if m.group(3) else ("empty", "-", "-")
                seen[(r.get("paddle_model", "-"), r.get("paddle_shape", "-"), m.group(1)) + figures] = None
    if not seen:
        return []
    lines = [format_table(OUTPUT_COLUMNS, list(seen))]
    warned = [r for r in sorted(rows, key=lambda r: r["nodeid"]) if shown_status(r) == WARNED]
    if warned:
        lines.append(f"{WARNED}: passed, but an output cannot fail under its tolerance "
                     f"(PaddleInferWarning; --paddle-strict fails the case):")
        lines += [f"  {r.get('paddle_case', r['nodeid'])}: {r['paddle_vacuous']}" for r in warned]
    return lines


def near_zero_lines(rows: Sequence[Mapping[str, str]]) -> List[str]:
    """What a ``max rel*`` in the summary means, and each such case's largest relative error elsewhere."""
    near_zero = [r for r in sorted(rows, key=lambda r: r["nodeid"]) if r.get("paddle_max_rel_elsewhere")]
    if not near_zero:
        return []
    return [f"max rel{NEAR_ZERO_MARK}: at a near-zero baseline value (|base| < {NEAR_ZERO:g} x the "
            f"output's largest |base|), not meaningful there; the largest elsewhere:"] + [
        f"  {r.get('paddle_case', r['nodeid'])}: {r['paddle_max_rel_elsewhere']}" for r in near_zero]


def task_lines(rows: Sequence[Mapping[str, str]]) -> List[str]:
    """The task comparisons' figures per case (``paddle_task``), for the terminal summary."""
    return [f"{r.get('paddle_case', r['nodeid'])}: {r['paddle_task']}"
            for r in sorted(rows, key=lambda r: r["nodeid"]) if r.get("paddle_task")]


def summary_row(nodeid: str, outcome: str, props: Mapping[str, object], seconds: float) -> Dict[str, str]:
    row = {k: str(v) for k, v in props.items() if k.startswith(PROPERTY_PREFIX)}
    row.update(nodeid=nodeid, status=outcome, time=f"{seconds:.2f}s")
    return row
