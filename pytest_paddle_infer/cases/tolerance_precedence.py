"""Which tolerance wins, decided in one place. Highest first: command line > paddle_tolerance
marker > per-tensor glob > per-output > per-run-mode > per-model > suite defaults > the run
mode's built-in default. Each layer sets any key of a Rule on its own (verdict/tolerances.py)."""
from __future__ import annotations

from typing import Sequence

from ..modes.run_modes import RUN_MODES
from ..verdict.tolerances import CaseTolerances, Rule


def case_tolerances(mode: str, layers: Sequence = (), command_line: Rule = Rule()) -> CaseTolerances:
    """A case's tolerances: its ``layers`` (lowest first) over the mode's default, under the command line."""
    base = RUN_MODES[mode].tolerance  # the run mode's built-in default (1e-4 for fp32 modes)
    for layer in layers:
        base = layer.rule.over(base)
    return CaseTolerances(base=base, outputs=sum((l.outputs for l in layers), ()),
                          tensors=sum((l.tensors for l in layers), ()), override=command_line)


def overridden(tolerances: CaseTolerances, marker: Rule, command_line: Rule) -> CaseTolerances:
    """A declared case's tolerances under a paddle_tolerance marker and the command line."""
    return tolerances.with_override(command_line.over(marker))
