"""pytest hooks, markers, fixtures and option wiring; the work lives in session/ (the pytest
process) and engine/ (the executor child), which meet in supervise.py. Nothing here imports
paddle or starts a process at import time: an unused plugin costs pytest next to nothing."""
from __future__ import annotations

from typing import List, Optional

import pytest

from .errors import CaseSkipped, OptionError, PaddleInferError, strip_ansi
from .session import options as opts
from .session.headers import late_case_header, report_header, write_worker_header
from .session.items import ERRORED_IN_CALL, add_command_line_cases, case_properties, declared_case, \
    effective_case
from .session.paddle_warning import PaddleInferWarning
from .session.state import (CASE_PATH, FORK_SERVER, FORK_SERVER_INPUT, NARROWED, REPORT_LOCK, RUNNER,
                            SETTINGS, case_path_of, check_cache_dir, default_cache_dir, expects_cases,
                            is_xdist_controller, settings_of, stop_idle_executor)
from .session.suite_files import PaddleSuiteFile, add_suite_args, is_suite_file, parametrize_marked
from .session.summary import SessionSummary
from .verdict.tolerances import RULE_KEYS

__all__ = ["PaddleInferWarning"]

MARKERS = (
    "paddle_model(name): the model of a paddle-infer case",
    "paddle_run_mode(mode): the run mode of a paddle-infer case",
    "paddle_tolerance({}): tolerances for the marked cases".format(", ".join(f"{k}=None" for k in RULE_KEYS)),
    "paddle_case(model, shapes=None, run_modes=None, atol=None, ...): the cases a test checks "
    "through its paddle_case fixture (the keys of a suite's model entry; see docs/suites.md)",
)


def pytest_addoption(parser):
    opts.register(parser)


def pytest_cmdline_main(config):
    """``--paddle-selfcheck``: the self-check instead of a test session (session/selfcheck.py)."""
    from .session.selfcheck import main, requested

    return main(config) if requested(config) else None


def pytest_configure(config):
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    if not config.pluginmanager.hasplugin("xdist"):  # cases carry it for --dist loadgroup
        config.addinivalue_line("markers", "xdist_group(name): pytest-xdist's grouping (inert without it)")
    try:
        settings = opts.read_settings(config.getoption, config.getini, lambda: default_cache_dir(config))
    except OptionError as e:
        raise pytest.UsageError(str(e)) from None
    config.stash[SETTINGS] = settings
    if settings.active or "paddle_cache_dir" in settings.given:
        check_cache_dir(settings)  # read-only, /proc, a full disk: a usage error naming it, first
    if not hasattr(config, "workerinput"):  # the directories it writes into are its own (ownership.py)
        from .ownership import claim_directories

        try:
            config.stash[REPORT_LOCK] = claim_directories(
                settings, "paddle_cache_dir" in settings.given,
                lambda ini: opts.named(next(o for o in opts.OPTIONS if o.ini == ini), config.getoption).flag)
        except PaddleInferError as e:
            raise pytest.UsageError(str(e)) from None
    if settings.active and not is_xdist_controller(config):
        case_path_of(config).start()  # the executor imports paddle while pytest collects
    if is_xdist_controller(config) and expects_cases(config, settings):
        from .fork_server import lent, start

        # the workers' executors fork from one import of paddle, started before the workers
        # (or from the server an enclosing process lends, which the workers find themselves)
        config.stash[FORK_SERVER] = "" if lent() else start()
    config.pluginmanager.register(SessionSummary(config), "paddle-infer-summary")
    if is_xdist_controller(config):  # usage errors the workers find while collecting
        from .session.xdist_usage import UsageRelay

        config.pluginmanager.register(UsageRelay(), "paddle-infer-usage-relay")
    if config.pluginmanager.hasplugin("xdist"):  # one worker per model's cases (xdist_grouping.py)
        from .session.xdist_grouping import register as register_xdist_grouping

        register_xdist_grouping(config)
    add_suite_args(config, settings.suites)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist's controller, for each worker it starts: where its fork server is."""
    spec = node.config.stash.get(FORK_SERVER, "")
    if spec:
        node.workerinput[FORK_SERVER_INPUT] = spec


def pytest_report_header(config) -> Optional[List[str]]:
    return report_header(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    write_worker_header(node.config, ids)


def pytest_collect_file(file_path, parent):
    if is_suite_file(file_path, settings_of(parent.config).suites):
        return PaddleSuiteFile.from_parent(parent, path=file_path)
    return None


def pytest_generate_tests(metafunc):
    parametrize_marked(metafunc)


@pytest.hookimpl(tryfirst=True)  # before -k/-m/--deselect filter the list
def pytest_collection_modifyitems(session, config, items):
    add_command_line_cases(session, config, items)


def pytest_report_collectionfinish(config, start_path, items):
    header = late_case_header(config) if any(declared_case(i) is not None for i in items) else []
    return (header + (config.stash.get(NARROWED, None) or [])) or None


def pytest_sessionstart(session):
    settings = settings_of(session.config)
    if settings.report_dir is not None and not hasattr(session.config, "workerinput"):
        from .ownership import remove_recorded

        remove_recorded(settings.report_dir)  # only what an earlier run wrote, unchanged since


def pytest_collection_finish(session):
    """Start the executor while the session's first tests get going: it imports paddle."""
    if any(declared_case(item) is not None for item in session.items):
        case_path_of(session.config).start()
    else:
        stop_idle_executor(session.config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    excinfo = call.excinfo
    if excinfo is not None and isinstance(excinfo.value, PaddleInferError):
        report.longrepr = f"{item.nodeid}: {strip_ansi(str(excinfo.value))}"
        if call.when == "call":  # the case could not be checked: an error, as in setup
            report.user_properties.append((ERRORED_IN_CALL, "1"))
            item.user_properties.append((ERRORED_IN_CALL, "1"))  # JUnit reads the teardown's
    return report


def pytest_report_teststatus(report, config):
    """A Paddle error while running a case (a predictor that raises, an executor that died)
    is not a verdict on the outputs: ERROR, like the same error while building it in setup."""
    if report.when == "call" and report.failed and any(
            name == ERRORED_IN_CALL for name, _ in getattr(report, "user_properties", ())):
        return "error", "E", "ERROR"
    return None


def pytest_unconfigure(config):
    from .children import kill_all

    if config.stash.get(REPORT_LOCK, None) is not None:
        from .ownership import release

        release(config.stash[REPORT_LOCK])
    if config.stash.get(FORK_SERVER, ""):
        from .fork_server import stop

        stop(config.stash[FORK_SERVER])
    for key in (CASE_PATH, RUNNER):
        if key in config.stash:
            config.stash[key].close()
    if CASE_PATH in config.stash:  # its server is not the next session's (state.case_path_of)
        from .fork_server import serve_children_from

        serve_children_from("")
    kill_all()  # a child this process started (the signature probe) outlives no session


# -- fixtures: Paddle objects in the test's own process (session/fixtures.py) --------------
@pytest.fixture(scope="session")
def paddle_infer_runner(pytestconfig):
    """The per-worker runner: model files, inputs, predictors and baselines, cached."""
    from .session.fixtures import runner_of

    return runner_of(pytestconfig)


@pytest.fixture(scope="session")
def paddle_predictor(paddle_infer_runner, pytestconfig):
    """Factory: ``paddle_predictor("resnet50", run_mode="onednn_bf16")`` -> a predictor
    handle with ``.run(inputs) -> {output name: ndarray}``."""
    from .session.fixtures import predictor_factory

    return predictor_factory(paddle_infer_runner, settings_of(pytestconfig), baseline=False)


@pytest.fixture(scope="session")
def paddle_baseline_predictor(paddle_infer_runner, pytestconfig):
    """Factory: ``paddle_baseline_predictor("resnet50", device="cpu")``: fp32, IR optim off, oneDNN off."""
    from .session.fixtures import predictor_factory

    return predictor_factory(paddle_infer_runner, settings_of(pytestconfig), baseline=True)


@pytest.fixture(scope="session")
def paddle_dygraph_layer():
    """Factory: ``paddle_dygraph_layer("tiny_detector")`` or ``paddle_dygraph_layer("my_pkg.nets:build_net",
    width=16)`` -> the eval-mode ``paddle.nn.Layer``, built in this process with the seeds the exporter
    uses (so its weights are the exported model's). Building seeds paddle's global generator."""
    from .session.fixtures import dygraph_layer_factory

    return dygraph_layer_factory()


@pytest.fixture(scope="session")
def paddle_inputs(paddle_infer_runner, pytestconfig):
    """Factory: ``paddle_inputs("resnet50", shapes={"x": (2, 3, 224, 224)}, seed=0)`` ->
    {input name: ndarray}, the data the cases feed."""
    from .session.fixtures import inputs_factory

    return inputs_factory(paddle_infer_runner, settings_of(pytestconfig))


@pytest.fixture
def paddle_case(request):
    """The case a ``@pytest.mark.paddle_case(...)`` test is parametrized with, prepared:
    ``.case``, ``.inputs``, ``.baseline_outputs``, ``.run()`` -> result, ``.check()`` asserts."""
    case = getattr(request, "param", None)
    if case is None:
        pytest.fail(f"{request.node.nodeid}: the paddle_case fixture needs "
                    "@pytest.mark.paddle_case(model=..., run_modes=[...]) on the test", pytrace=False)
    from .session.fixtures import CaseHandle

    node = request.node
    node.user_properties.extend(case_properties(case))
    handle = CaseHandle(node, effective_case(node, case))
    try:
        handle.prepare()
    except CaseSkipped as e:
        pytest.skip(str(e))
    request.addfinalizer(handle.release)
    return handle
