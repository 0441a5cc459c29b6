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
    return any(source.kind == model.kind == "zoo" and source.ref == model.ref
               or source.kind == model.kind == "path"
               and Path(source.ref).resolve() == Path(model.ref).resolve() for source in settings.models)


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
    return [f"paddle-infer: {filter_text(settings)} narrowed the declared cases to {kept} of {len(cases)}"]


def nothing_to_run(settings, cases: Sequence[Case]) -> str:
    """The usage error of a --paddle-model/--run-mode that selects none of the declared cases."""
    text = filter_text(settings)
    files = sorted({c.origin.rsplit(":", 1)[0] for c in cases if c.origin})
    if cases:
        models = sorted({c.model.name for c in cases})
        modes = sorted({c.run_mode.label for c in cases})
        found = (f"matched none of the {len(cases)} cases that suites and paddle_case markers "
                 f"declare (models {', '.join(models)}; run modes {', '.join(modes)})")
    else:
        found = "matched no case: the suites collected declare none"
    where = f" ({', '.join(files)})" if files else ""
    ignore = " ".join(f"--ignore={f}" for f in files) if files else "--ignore=SUITE_FILE"
    return (f"paddle-infer: {text} {found}, so nothing it asks for would run. With a suite or a "
            f"paddle_case test collected, --paddle-model and --run-mode only choose among their "
            f"cases{where}. Name one of the declared models and run modes, add the model to the "
            f"suite, or leave the suites out of the session to check the model on its own: run "
            f"from a directory without suite files, pass the paths to collect (pytest "
            f"tests/test_x.py ...), or {ignore}")
