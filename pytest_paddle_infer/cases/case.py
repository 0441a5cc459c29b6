"""A case: one model, one set of input shapes, one run mode, and how to judge it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ..models.inputs import shape_label
from ..models.source import ModelSource
from ..modes.run_modes import RunModeSpec
from ..verdict.tolerances import CaseTolerances

Shapes = Tuple[Tuple[str, Tuple[int, ...]], ...]  # (input name, concrete shape), name order


@dataclass(frozen=True)
class Case:
    model: ModelSource
    run_mode: RunModeSpec
    tolerances: CaseTolerances
    shapes: Shapes = ()  # empty: every input's declared shape, batch 1
    baseline: str = "auto"
    seed: int = 0
    threads: Optional[int] = None
    intermediates: str = "none"  # none | all | globs over tensor names and op types
    program: str = "default"  # default | legacy: which export of a zoo entry or builder (program.py)
    origin: str = ""  # "suite.yaml:12" when a suite or marker declared the case, for messages

    @property
    def shape_text(self) -> str:
        """The shape part of the id: the primary input's shape."""
        return default_label(self.model, self.shapes)

    @property
    def id(self) -> str:
        return f"{self.model.name}[{self.shape_text}-{self.run_mode.label}]"


def default_label(model: ModelSource, shapes: Shapes) -> str:
    """The primary input's shape: the first float input of the highest rank."""
    given = dict(shapes)
    specs = model.inputs or ()
    candidates = [s for s in specs if s.dtype.startswith(("float", "bfloat"))] or list(specs)
    if not candidates:
        return "x".join("-".join(map(str, s)) for _, s in shapes) or "default"
    primary = max(candidates, key=lambda s: len(s.shape))
    if primary.name in given:
        return shape_label(given[primary.name])
    # the declared shape as the case runs it: a dynamic batch is 1, another dynamic dim "?"
    return "x".join("1" if i == 0 and (d is None or d < 0) else "?" if d is None or d < 0
                    else str(d) for i, d in enumerate(primary.shape))
