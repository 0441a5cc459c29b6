"""Outputs against the baseline's: pairing by name (or position), one comparison row each
under the case's tolerances."""
from __future__ import annotations

from typing import List, Mapping

import numpy as np

from ..cases.case import Case
from ..errors import SuiteError
from .compare import TensorComparison, compare_arrays


def check_output_names(case: Case, outputs: Mapping[str, np.ndarray]) -> None:
    """A tolerance for an output the model does not have would never apply: say so."""
    positions = {f"#{i}" for i in range(len(outputs))}
    unknown = [name for name, _ in case.tolerances.outputs if name not in outputs and name not in positions]
    if unknown:
        where = f"{case.origin}: " if case.origin else ""
        raise SuiteError(
            f"{where}tolerances.outputs names {unknown[0]!r}, which {case.model.name} does not produce\n"
            f"  expected: one of its outputs: {', '.join(outputs)}\n"
            f"  found:    {', '.join(map(repr, unknown))}\n"
            f"  fix:      use an output name, its position (#0 .. #{len(outputs) - 1}), "
            f"or a tensors: glob to match several")


def pair_outputs(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray]):
    """Outputs pair by name; when no name matches and the counts agree (two exports of
    one model, a dygraph layer's flattened outputs), by position. Yields (name, shown name,
    actual or None, expected or None); the shown name adds the baseline's name when it differs:
    ``fetch_name_1 (out.scores)``."""
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
    rows = []
    positions = {name: i for i, name in enumerate(actual)}
    for output, name, a, e in pair_outputs(actual, expected):
        # tolerances name the predictor's outputs, or their positions (#0, #1, ...)
        rule = case.tolerances.for_tensor(output, positions.get(output))
        if a is None or e is None:
            row = TensorComparison(name, () if e is None else e.shape, () if a is None else a.shape,
                                   "", "", rule.atol, rule.rtol)
            row.problems.append("missing from the candidate's outputs" if a is None
                                else "not among the baseline's outputs")
        else:
            row = compare_arrays(name, a, e, rule.atol, rule.rtol, rule.cosine_min)
        rows.append(row)
    return rows
