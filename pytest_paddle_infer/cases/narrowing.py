"""``--paddle-model`` and ``--run-mode`` as filters over the cases suites and ``paddle_case``
markers declare: the session keeps their intersection instead of adding standalone cases."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .case import Case
from ..models.source import ModelSource
from ..modes.run_modes import RunModeSpec


def filtering(settings) -> bool:
    return bool(settings.model_refs) or settings.run_modes_given


def model_selected(model: ModelSource, settings) -> bool:
    """Named by its suite name, or the same zoo entry or model file as a --paddle-model value."""
    if not settings.model_refs or model.name in settings.model_refs:
        return True
    for source in settings.models:
        if source.kind == model.kind == "zoo" and source.ref == model.ref:
            return True
        if source.kind == model.kind == "path" and Path(source.ref).resolve() == Path(model.ref).resolve():
            return True
    return False


def mode_selected(spec: RunModeSpec, settings) -> bool:
    """A bare --run-mode name keeps the mode with any toggles; one with toggles keeps exactly that."""
    if not settings.run_modes_given:
        return True
    return any(cli.mode == spec.mode and (cli == RunModeSpec(cli.mode) or cli == spec)
               for cli in settings.run_modes)


def case_selected(case: Case, settings) -> bool:
    return model_selected(case.model, settings) and mode_selected(case.run_mode, settings)


def filter_text(settings) -> str:
    parts = []
    if settings.model_refs:
        parts.append("--paddle-model " + ",".join(settings.model_refs))
    if settings.run_modes_given:
        parts.append("--run-mode " + ",".join(s.label for s in settings.run_modes))
    return " and ".join(parts)


def report_lines(settings, kept: int, cases: Sequence[Case]) -> list:
    text = filter_text(settings)
    if kept:
        return [f"paddle-infer: {text} narrowed the declared cases to {kept} of {len(cases)}"]
    models = sorted({c.model.name for c in cases})
    modes = sorted({c.run_mode.label for c in cases})
    return [f"paddle-infer: {text} matched none of the {len(cases)} cases that suites and "
            f"paddle_case markers declare, so none of them run; they declare models "
            f"{', '.join(models) or '-'} and run modes {', '.join(modes) or '-'}"]
