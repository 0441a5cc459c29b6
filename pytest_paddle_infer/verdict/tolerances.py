"""Tolerances: a Rule per layer (cases/tolerance_precedence.py), and a case's rules per tensor."""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, fields, make_dataclass, replace
from typing import Optional, Tuple

from .metrics import METRICS

RULE_KEYS = ("atol", "rtol") + tuple(m.bound for m in METRICS)  # a Rule's numbers


@dataclass(frozen=True)
class Compare:
    """A task-aware comparison (task_compare.py) and its settings (None: the default)."""

    kind: str
    k: Optional[int] = None  # topk
    axis: Optional[int] = None  # topk, sorted, argmax
    min_agreement: Optional[float] = None  # topk, argmax: share of samples that must agree
    iou: Optional[float] = None  # boxes: IoU at or above which two boxes of a class match
    score_min: Optional[float] = None  # boxes: boxes scored below it are not detections
    columns: Optional[Tuple[str, ...]] = None  # boxes: the meaning of each column
    count: Optional[str] = None  # boxes: the output holding boxes per image ("#1", a name)

    def describe(self) -> str:
        settings = [f"{f.name}={getattr(self, f.name)}" for f in fields(self)[1:]
                    if getattr(self, f.name) is not None]
        return self.kind + (f"({', '.join(settings)})" if settings else "")


@dataclass(frozen=True)
class Rule(make_dataclass("Limits", [(key, Optional[float], None) for key in RULE_KEYS], frozen=True)):
    """A number per key of RULE_KEYS (None: unset), then a task-aware comparison."""

    compare: Optional[Compare] = None

    def over(self, lower: "Rule") -> "Rule":
        """This rule's values, falling back to ``lower`` where this one sets none."""
        return Rule(**{f.name: getattr(self, f.name) if getattr(self, f.name) is not None
                       else getattr(lower, f.name) for f in fields(self)})

    def describe(self) -> str:
        parts = [f"{key}={getattr(self, key):g}" for key in RULE_KEYS  # atol and rtol always
                 if key in ("atol", "rtol") or getattr(self, key) is not None]
        if self.compare is not None:
            parts.append(f"compare={self.compare.describe()}")
        return " ".join(parts)


@dataclass(frozen=True)
class CaseTolerances:
    base: Rule  # resolved from mode default, suite, model and run-mode layers
    outputs: Tuple[Tuple[str, Rule], ...] = ()  # exact output names
    tensors: Tuple[Tuple[str, Rule], ...] = ()  # globs over output and intermediate names
    override: Rule = Rule()  # command line over marker, already merged

    def for_tensor(self, name: str, position: Optional[int] = None) -> Rule:
        """``position``: an output's index, which ``#N`` rules name (formats name outputs apart)."""
        rule = self.base
        for out_name, r in self.outputs:
            if out_name == name or (position is not None and out_name == f"#{position}"):
                rule = r.over(rule)
        for pattern, r in self.tensors:
            if fnmatch.fnmatchcase(name, pattern):
                rule = r.over(rule)
        return self.override.over(rule)

    def names_tensor(self, name: str, op_type: str = "") -> bool:
        """Whether a tensor glob covers it: only then does an intermediate outside tolerance fail."""
        return any(fnmatch.fnmatchcase(name, p) or (op_type and fnmatch.fnmatchcase(op_type, p))
                   for p, _ in self.tensors)

    def with_override(self, rule: Rule) -> "CaseTolerances":
        return replace(self, override=self.override.over(rule))
