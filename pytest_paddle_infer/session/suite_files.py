"""Suite files (*.paddle.yaml, --paddle-suite) collected as items, and paddle_case markers
parametrized into cases."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ..errors import PaddleInferError
from .items import PaddleCaseItem, case_marks
from .state import SUITES_SEEN, case_path_of, display_path, settings_of

def is_suite_file(path: Path, named: tuple) -> bool:
    from ..cases.suite_scan import is_suite_name

    return is_suite_name(path.name) or (bool(named) and path.resolve() in named)


def add_suite_args(config, suites) -> None:
    """Files named by --paddle-suite are collected even when outside the paths given."""
    base = Path(config.invocation_params.dir)
    covered = [(base / str(arg).split("::")[0]).resolve() for arg in config.args]
    for path in suites:
        if not any(path == c or c in path.parents for c in covered):
            config.args.append(str(path))


def suite_context(config, path: Path):
    from ..cases.suite import Context

    settings = settings_of(config)
    forced = tuple((key, getattr(settings, key)) for key in ("seed", "baseline", "threads")
                   if f"paddle_{key}" in settings.given)  # the command line wins over the suite
    return Context(file=display_path(config, path), base_dir=Path(path).resolve().parent,
                   rootdir=Path(config.rootpath), cache_dir=settings.cache_dir, seed=settings.seed,
                   baseline=settings.baseline, threads=settings.threads, forced=forced,
                   timeout=settings.timeout, update_goldens=settings.update_goldens)


class PaddleSuiteFile(pytest.File):
    """A YAML suite: one PaddleCaseItem per model x shape set x run mode, in file order."""

    def collect(self):
        from ..cases.suite import load_suite

        self.config.stash[SUITES_SEEN] = True  # here, not at creation: pytest creates collectors
        # for files beside the paths it was given, and collects only those it was given
        case_path_of(self.config).start()  # the executor imports paddle while pytest collects
        cases = list(load_suite(self.path, suite_context(self.config, self.path)))
        per_mode = Counter((d.model_name, d.mode_path) for d in cases)  # cases per model x run mode
        for declared in cases:
            item = PaddleCaseItem.from_parent(self, name=declared.case.id, case=declared.case)
            item.line = (declared.where.line or 1) - 1
            if settings_of(self.config).suggest and declared.mode_path:  # where its tolerances live
                item.user_properties.append(("paddle_suite_entry", json.dumps(
                    {"file": str(self.path), "model": declared.model_name,
                     "mode": list(declared.mode_path),
                     "cases": per_mode[(declared.model_name, declared.mode_path)]})))
            if declared.skip is not None:
                item.add_marker(pytest.mark.skip(reason=declared.skip))
            if declared.xfail is not None:
                item.add_marker(pytest.mark.xfail(reason=declared.xfail, strict=declared.xfail_strict))
            yield item

    def repr_failure(self, excinfo):  # a Collector's takes no style
        if isinstance(excinfo.value, PaddleInferError):  # the message says file:line and the fix
            return str(excinfo.value)
        return super().repr_failure(excinfo)


def parametrize_marked(metafunc) -> None:
    """pytest_generate_tests: a test marked paddle_case gets one parameter per case."""
    markers = list(metafunc.definition.iter_markers("paddle_case"))
    if not markers:
        return
    _, line, name = metafunc.definition.location
    path = display_path(metafunc.config, metafunc.definition.path)
    where = f"{path}:{line + 1}"
    if "paddle_case" not in metafunc.fixturenames:
        raise pytest.Collector.CollectError(
            f"{where}: {name} is marked paddle_case but does not take the paddle_case fixture; "
            f"fix: def {metafunc.function.__name__}(paddle_case): paddle_case.check()")
    from ..cases.suite import Where, marker_cases

    context = suite_context(metafunc.config, metafunc.definition.path)
    params = []
    for marker in markers:
        try:
            declared = marker_cases(marker.args, marker.kwargs, Where(path, line + 1), context)
        except PaddleInferError as e:
            raise pytest.Collector.CollectError(str(e)) from None
        params += [pytest.param(d.case, id=f"{d.case.model.name}-{d.case.shape_text}-{d.case.run_mode.label}",
                                marks=case_marks(d.case)) for d in declared]
    metafunc.parametrize("paddle_case", params, indirect=True)
