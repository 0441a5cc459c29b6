"""Tolerances and where they come from.

Precedence, highest first: command line > marker > per-tensor glob > per-output >
per-run-mode > per-model > suite defaults > the run mode's built-in default (1e-4 for fp32
modes). Each layer may set atol, rtol and cosine_min independently.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from typing import Optional, Tuple


@dataclass(frozen=True)
class Rule:
    atol: Optional[float] = None
    rtol: Optional[float] = None
    cosine_min: Optional[float] = None

    def over(self, lower: "Rule") -> "Rule":
        """This rule's values, falling back to ``lower`` where this one sets none."""
        return Rule(
            self.atol if self.atol is not None else lower.atol,
            self.rtol if self.rtol is not None else lower.rtol,
            self.cosine_min if self.cosine_min is not None else lower.cosine_min,
        )

    def describe(self) -> str:
        parts = [f"atol={self.atol:g}", f"rtol={self.rtol:g}"]
        if self.cosine_min is not None:
            parts.append(f"cosine_min={self.cosine_min:g}")
        return " ".join(parts)


@dataclass(frozen=True)
class CaseTolerances:
    base: Rule  # resolved from mode default, suite, model and run-mode layers
    outputs: Tuple[Tuple[str, Rule], ...] = ()  # exact output names
    tensors: Tuple[Tuple[str, Rule], ...] = ()  # globs over output and intermediate names
    override: Rule = Rule()  # command line over marker, already merged

    def for_tensor(self, name: str, position: Optional[int] = None) -> Rule:
        """``position``: an output's index, which ``#N`` output rules name (program formats
        name outputs differently: ``fetch_name_0`` in PIR, ``save_infer_model/...`` legacy)."""
        rule = self.base
        for out_name, r in self.outputs:
            if out_name == name or (position is not None and out_name == f"#{position}"):
                rule = r.over(rule)
        for pattern, r in self.tensors:
            if fnmatch.fnmatchcase(name, pattern):
                rule = r.over(rule)
        return self.override.over(rule)

    def names_tensor(self, name: str, op_type: str = "") -> bool:
        """Whether a tensor glob covers this tensor: only then does an intermediate tensor
        outside tolerance fail the case (others are reported)."""
        return any(fnmatch.fnmatchcase(name, p) or (op_type and fnmatch.fnmatchcase(op_type, p))
                   for p, _ in self.tensors)

    def with_override(self, rule: Rule) -> "CaseTolerances":
        return replace(self, override=self.override.over(rule))
