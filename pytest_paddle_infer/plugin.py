"""pytest hooks and fixtures; the work itself lives in the modules this one wires together.

Nothing here imports paddle at import time, so an installed but unused plugin costs pytest
next to nothing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

import pytest

from . import options as opts
from .errors import CaseSkipped, OptionError, PaddleInferError

SETTINGS = pytest.StashKey["opts.Settings"]()
RUNNER = pytest.StashKey[object]()
SUMMARY = pytest.StashKey[Dict[str, Dict[str, str]]]()

MARKERS = (
    "paddle_model(name): the model of a paddle-infer case",
    "paddle_run_mode(mode): the run mode of a paddle-infer case",
    "paddle_tolerance(atol=None, rtol=None, cosine_min=None): tolerances for the marked cases",
)


class CaseFailed(AssertionError):
    """A case whose outputs are outside tolerance; the message is the table."""


def pytest_addoption(parser):
    opts.register(parser)


def _default_cache_dir(config) -> Path:
    cache = getattr(config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("paddle-infer"))
    return Path(config.rootpath) / ".paddle-infer-cache"


def pytest_configure(config):
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    try:
        settings = opts.read_settings(config.getoption, config.getini,
                                      lambda: _default_cache_dir(config))
    except OptionError as e:
        raise pytest.UsageError(str(e)) from None
    config.stash[SETTINGS] = settings
    config.stash[SUMMARY] = {}


def settings_of(config) -> "opts.Settings":
    return config.stash[SETTINGS]


def runner_of(config):
    if RUNNER not in config.stash:
        from .check import Runner

        config.stash[RUNNER] = Runner(settings_of(config).cache_dir)
    return config.stash[RUNNER]


def pytest_report_header(config) -> Optional[List[str]]:
    settings = settings_of(config)
    if not settings.active:
        return None
    from .capabilities import detect

    tol = ("atol={} rtol={}".format(settings.atol if settings.atol is not None else "mode default",
                                    settings.rtol if settings.rtol is not None else "mode default"))
    return [
        f"paddle-infer: {detect().describe}",
        f"paddle-infer: baseline {settings.baseline}, {tol}, seed {settings.seed}, "
        f"cache {settings.cache_dir}",
    ]


# -- items ------------------------------------------------------------------------------


class PaddleCaseItem(pytest.Item):
    def __init__(self, *, case, **kwargs):
        super().__init__(**kwargs)
        self.case = case
        self.prepared = None
        self.add_marker(pytest.mark.paddle_model(case.model.name))
        self.add_marker(pytest.mark.paddle_run_mode(case.run_mode.mode))
        self.add_marker(pytest.mark.xdist_group(case.model.name))
        self.user_properties.extend([
            ("paddle_model", case.model.name),
            ("paddle_shape", case.shape_text),
            ("paddle_run_mode", case.run_mode.label),
        ])

    def setup(self):
        try:
            self.prepared = runner_of(self.config).prepare(self.case)
        except CaseSkipped as e:
            pytest.skip(str(e))

    def runtest(self):
        from .report import failure_message, properties

        result = runner_of(self.config).run(self.prepared)
        self.user_properties.extend(properties(result))
        if not result.passed:
            raise CaseFailed(failure_message(result))

    def teardown(self):
        self.prepared = None

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (CaseFailed, PaddleInferError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, self.case.id


def build_cases(settings) -> list:
    from .case import Case
    from .run_modes import RUN_MODES
    from .tolerances import CaseTolerances, Rule

    cases = []
    for source in settings.models:
        source = with_declared_inputs(source, settings.cache_dir)
        for spec in settings.run_modes:
            default = RUN_MODES[spec.mode].tolerance
            cases.append(Case(
                model=source, run_mode=spec, baseline=settings.baseline, seed=settings.seed,
                threads=settings.threads,
                tolerances=CaseTolerances(base=Rule(default.atol, default.rtol),
                                          override=Rule(settings.atol, settings.rtol)),
            ))
    return cases


def with_declared_inputs(source, cache_dir):
    """Disk models: read their inputs now so ids show shapes; a model that cannot be read
    keeps ``inputs=None`` and its cases report the problem when they run."""
    from dataclasses import replace

    from .models import declared_inputs, find_model_files

    if source.kind != "path" or source.inputs is not None:
        return source
    try:
        prog, _ = find_model_files(source.ref)
        return replace(source, inputs=declared_inputs(prog, cache_dir))
    except PaddleInferError:
        return source


@pytest.hookimpl(tryfirst=True)  # before -k/-m/--deselect filter the list
def pytest_collection_modifyitems(session, config, items):
    settings = settings_of(config)
    if not settings.active:
        return
    for case in build_cases(settings):
        items.append(PaddleCaseItem.from_parent(session, name=case.id, nodeid=case.id, case=case))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    excinfo = call.excinfo
    if excinfo is not None and isinstance(excinfo.value, PaddleInferError):
        report.longrepr = f"{item.nodeid}: {excinfo.value}"
    return report


# -- summary ----------------------------------------------------------------------------


def pytest_runtest_logreport(report):
    props = dict(report.user_properties)
    if "paddle_model" not in props:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        outcome = "error" if report.when == "setup" and report.failed else report.outcome
        from .report import summary_row

        _summary_rows[report.nodeid] = summary_row(report.nodeid, outcome, props, report.duration)


_summary_rows: Dict[str, Dict[str, str]] = {}


def pytest_terminal_summary(terminalreporter, config):
    if hasattr(config, "workerinput") or not _summary_rows:
        return
    from .report import summary_table

    terminalreporter.write_sep("=", "paddle-infer summary")
    terminalreporter.write_line(summary_table(list(_summary_rows.values())))


# -- fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def paddle_infer_runner(pytestconfig):
    """The per-worker runner: model files, inputs, predictors and baselines, cached."""
    return runner_of(pytestconfig)


@pytest.fixture(scope="session")
def paddle_predictor(paddle_infer_runner, pytestconfig):
    """Factory: ``paddle_predictor("resnet50", run_mode="onednn_bf16")`` -> a predictor
    handle with ``.run(inputs) -> {output name: ndarray}``."""
    from .fixtures import predictor_factory

    return predictor_factory(paddle_infer_runner, settings_of(pytestconfig), baseline=False)


@pytest.fixture(scope="session")
def paddle_baseline_predictor(paddle_infer_runner, pytestconfig):
    """Factory: ``paddle_baseline_predictor("resnet50", device="cpu")``: fp32, IR optim off,
    oneDNN off."""
    from .fixtures import predictor_factory

    return predictor_factory(paddle_infer_runner, settings_of(pytestconfig), baseline=True)


@pytest.fixture(scope="session")
def paddle_inputs(paddle_infer_runner, pytestconfig):
    """Factory: ``paddle_inputs("resnet50", shapes={"x": (2, 3, 224, 224)}, seed=0)`` ->
    {input name: ndarray}, the data the cases feed."""
    from .fixtures import inputs_factory

    return inputs_factory(paddle_infer_runner, settings_of(pytestconfig))
