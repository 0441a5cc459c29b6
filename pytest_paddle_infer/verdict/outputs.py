"""Outputs against the baseline's: paired by name (or position), a row each under the case's tolerances."""
from __future__ import annotations

from typing import Dict, List, Mapping

import numpy as np

from ..cases.case import Case
from ..errors import SuiteError
from .compare import compare_rule
from .rows import TensorComparison
from .task_compare import compare_task, count_row, find_count_output


def check_output_names(case: Case, outputs: Mapping[str, np.ndarray]) -> None:
    """A tolerance for an output the model does not have would never apply: say so."""
    positions = {f"#{i}" for i in range(len(outputs))}
    unknown = [name for name, _ in case.tolerances.outputs if name not in outputs and name not in positions]
    # compare: boxes may name the output that counts its boxes
    unknown += [rule.compare.count for _, rule in case.tolerances.outputs if rule.compare is not None
                and rule.compare.count is not None and rule.compare.count not in outputs
                and rule.compare.count not in positions]
    if unknown:
        where = f"{case.origin}: " if case.origin else ""
        raise SuiteError(
            f"{where}tolerances.outputs names {unknown[0]!r}, which {case.model.name} does not produce\n"
            f"  expected: one of its outputs: {', '.join(outputs)}\n"
            f"  found:    {', '.join(map(repr, unknown))}\n"
            f"  fix:      use an output name, its position (#0 .. #{len(outputs) - 1}), "
            f"or a tensors: glob to match several")


def pair_outputs(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray]):
    """(name, shown name, actual, expected) by name, else by position: ``fetch_name_1 (out.scores)``."""
    if not set(actual) & set(expected) and len(actual) == len(expected):
        for (name, a), (base_name, e) in zip(actual.items(), expected.items()):
            yield name, f"{name} ({base_name})", a, e
        return
    for name, e in expected.items():
        yield name, name, actual.get(name), e
    for name, a in actual.items():
        if name not in expected:
            yield name, name, a, None


def compare_outputs(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
                    case: Case) -> List[TensorComparison]:
    """One row per output, in pairing order; a box count is judged with the boxes it counts."""
    positions = {name: i for i, name in enumerate(actual)}
    pairs = list(pair_outputs(actual, expected))
    # tolerances name the predictor's outputs, or their positions (#0, #1, ...)
    rules = {output: case.tolerances.for_tensor(output, positions.get(output)) for output, *_ in pairs}
    both = {output: (a, e) for output, _, a, e in pairs if a is not None and e is not None}
    counted = {}  # count output -> the boxes output it counts
    for output, rule in rules.items():
        if rule.compare is not None and rule.compare.kind == "boxes" and output in both:
            found = find_count_output(output, rule.compare, {o: e for o, (_, e) in both.items()}, positions)
            if found is not None:
                counted[found] = output
    rows: Dict[str, TensorComparison] = {}
    for output, name, a, e in pairs:  # boxes first: their count outputs are judged with them
        if output in counted.values() or output not in counted:
            rows[output] = _compare_one(output, name, a, e, rules[output], both, counted)
    for output, name, a, e in pairs:
        if output in counted and output not in counted.values():
            boxes = rows[counted[output]]
            rows[output] = (count_row(name, a, e, rules[output], boxes) if output in both
                            else _compare_one(output, name, a, e, rules[output], both, {}))
    return [rows[output] for output, *_ in pairs]


def _compare_one(output: str, name: str, a, e, rule, both, counted) -> TensorComparison:
    if a is None or e is None:
        row = TensorComparison(name, () if e is None else e.shape, () if a is None else a.shape,
                               "", "", rule.atol, rule.rtol)
        row.problems.append("missing from the candidate's outputs" if a is None
                            else "not among the baseline's outputs")
        return row
    if rule.compare is None:
        return compare_rule(name, a, e, rule)
    count = next((c for c, boxes in counted.items() if boxes == output), None)
    counts = both[count] if count is not None and count in both else None
    return compare_task(name, a, e, rule, counts)
