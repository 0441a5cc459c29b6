"""A case's result: the rows of its outputs and intermediate tensors, the recipes compared,
notes and the localization; what the executor sends back and the reports read."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .verdict.rows import TensorComparison


# --paddle-selfcheck: what each run mode did on this machine (engine/selfcheck.py)
ENGAGED, NOT_ENGAGED, CANNOT_RUN = "engaged", "not engaged", "cannot run here"
UNTELLABLE = "engaged, but so did the negative control"  # the rule cannot tell


@dataclass
class IntermediateRow:
    index: int
    comparison: TensorComparison
    baseline_name: str  # the paired baseline tensor, "" when unmatched
    matched_by: str  # "name", "structure", or why there is no pair
    judged: bool  # a tensor tolerance names it: a failure fails the case
    local_max_abs: Optional[float] = None  # its op's own error (localize/prune.py); None: not measured
    local_passed: Optional[bool] = None

    @property
    def matched(self) -> bool:
        return bool(self.baseline_name)


@dataclass
class CaseResult:
    case_id: str
    rows: List[TensorComparison]
    baseline: str
    recipe: str
    inputs_digest: str
    duration: float = 0.0
    notes: List[str] = field(default_factory=list)
    intermediates: List[IntermediateRow] = field(default_factory=list)
    localization: List[str] = field(default_factory=list)  # the ladder's verdict and rungs
    culprit: str = ""  # what the ladder blames: a pass, op types, kernels
    first_bad_op: str = ""  # pruning: the first op out of tolerance on its own (localize/prune.py)
    repro_dir: str = ""  # the repro folder --paddle-localize wrote for this case
    localization_builds: int = 0  # predictors the ladder built
    suggested_run_mode: str = ""  # a run mode the ladder's trial ran within tolerance
    program: str = ""  # the format and file checked: "pir inference.json" (models/program.py)
    program_file: str = ""  # its path
    program_choice: str = ""  # why that program: the session's or suite's choice, TensorRT
    problems: List[str] = field(default_factory=list)  # the run mode did not do what it names
    # what the candidate and the baseline really ran, by role: Evidence.to_dict() (evidence.py)
    evidence: Dict[str, Dict[str, object]] = field(default_factory=dict)

    @property
    def divergent(self) -> List[IntermediateRow]:
        """Intermediate tensors outside their tolerance, in execution order."""
        return [r for r in self.intermediates if r.matched and not r.comparison.passed]

    @property
    def failures(self) -> List[TensorComparison]:
        """Failing outputs, then failing intermediates that a tensor tolerance names."""
        return [r for r in self.rows if not r.passed] + [r.comparison for r in self.divergent if r.judged]

    @property
    def passed(self) -> bool:
        return not self.failures and not self.problems

    @property
    def vacuous(self) -> List[TensorComparison]:
        """Passing outputs that cannot fail under their tolerance (vacuity.py)."""
        return [r for r in self.rows if r.vacuous and r.passed]

    @property
    def max_abs(self) -> float:
        return max((r.max_abs for r in self.rows), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((r.max_rel for r in self.rows), default=0.0)

    @property
    def mismatched(self) -> int:
        return sum(r.mismatched for r in self.rows)

    @property
    def max_rel_elsewhere(self):
        """The largest relative error away from near-zero baseline values if the max is at one, else None."""
        if not self.rows or not max(self.rows, key=lambda r: r.max_rel).max_rel_near_zero:
            return None
        return max(r.max_rel_elsewhere if r.max_rel_near_zero else r.max_rel for r in self.rows)

    @property
    def mismatched_text(self) -> str:
        """``mismatched/total`` over the outputs; ``shape`` when an uncounted output's shape differs."""
        return "shape" if any(not r.counted for r in self.rows) else f"{self.mismatched}/{self.total}"

    @property
    def task_text(self) -> str:
        """``output: compare kind: figures; ...`` for the outputs a task comparison judged."""
        return "; ".join(f"{r.name}: {r.task}: {r.task_figures}" for r in self.rows if r.task)

    @property
    def total(self) -> int:
        return sum(r.total for r in self.rows)
