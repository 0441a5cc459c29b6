"""pytest hooks and fixtures; the work itself lives in the modules this one wires together.

Nothing here imports paddle or starts a process at import time, so an installed but unused
plugin costs pytest next to nothing; the executor child starts once the session knows it has
cases (pytest_configure for --paddle-model, a suite's collection).
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

import pytest

from . import options as opts
from .xdist_usage import usage_error
from .errors import CandidateError, CaseSkipped, OptionError, PaddleInferError, strip_ansi

SETTINGS = pytest.StashKey["opts.Settings"]()
RUNNER = pytest.StashKey[object]()
CASE_PATH = pytest.StashKey[object]()

MARKERS = (
    "paddle_model(name): the model of a paddle-infer case",
    "paddle_run_mode(mode): the run mode of a paddle-infer case",
    "paddle_tolerance(atol=None, rtol=None, cosine_min=None, sqnr_min=None, rel_l2_max=None, "
    "p99_abs_max=None): tolerances for the marked cases",
    "paddle_case(model, shapes=None, run_modes=None, atol=None, ...): the cases a test checks "
    "through its paddle_case fixture (the keys of a suite's model entry; see docs/suites.md)",
)
SUITES_SEEN = pytest.StashKey[bool]()
NARROWED = pytest.StashKey[list]()
HEADER_SHOWN = pytest.StashKey[list]()  # paddle-infer lines the session has printed so far
REPORT_LOCK = pytest.StashKey[object]()  # this session is the one writer of --paddle-report


class PaddleInferWarning(pytest.PytestWarning):
    """Something about the session's paddle-infer cases worth reading."""


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
    if not config.pluginmanager.hasplugin("xdist"):  # cases carry it for --dist loadgroup
        config.addinivalue_line("markers", "xdist_group(name): pytest-xdist's grouping (inert without it)")
    try:
        settings = opts.read_settings(config.getoption, config.getini,
                                      lambda: _default_cache_dir(config))
    except OptionError as e:
        raise pytest.UsageError(str(e)) from None
    config.stash[SETTINGS] = settings
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
    config.pluginmanager.register(SessionSummary(config), "paddle-infer-summary")
    if is_xdist_controller(config):  # usage errors the workers find while collecting
        from .xdist_usage import UsageRelay

        config.pluginmanager.register(UsageRelay(), "paddle-infer-usage-relay")
    if config.pluginmanager.hasplugin("xdist"):  # one worker per model's cases (xdist_scheduling.py)
        from .xdist_scheduling import register as register_xdist_scheduling

        register_xdist_scheduling(config)
    _add_suite_args(config, settings.suites)


def is_xdist_controller(config) -> bool:
    """The process that hands tests to xdist workers and runs none itself."""
    return (not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))
            and getattr(config.option, "dist", "no") != "no")


def settings_of(config) -> "opts.Settings":
    return config.stash[SETTINGS]


def runner_of(config):
    if RUNNER not in config.stash:
        from .execute.runner import Runner

        from .execute.goldens import GoldenPolicy

        settings = settings_of(config)
        config.stash[RUNNER] = Runner(settings.cache_dir, settings.device,
                                      GoldenPolicy(settings.save_goldens, settings.update_goldens,
                                                   settings.goldens_float16, settings.save_runs))
    return config.stash[RUNNER]


def case_path_of(config):
    """The per-process path every case takes (case_path.py): its executor child starts on
    first use."""
    if CASE_PATH not in config.stash:
        from .execute.case_path import CasePath
        from .models.cache import heal_cache_dirs

        settings = settings_of(config)
        heal_cache_dirs(settings.cache_dir)  # a damaged cache is rebuilt, not a traceback
        shared = None
        workerinput = getattr(config, "workerinput", None)
        if workerinput and workerinput.get("testrunuid"):  # the workers of one xdist session
            from .execute import SHARED_DIR

            shared = settings.cache_dir / SHARED_DIR / workerinput["testrunuid"]
        config.stash[CASE_PATH] = CasePath(settings, settings.cache_dir / "executor", shared)
    return config.stash[CASE_PATH]


def installation(config):
    """(Capabilities, environment) of the installed Paddle. The executor imports paddle and
    reports them; they are remembered per installation, so the pytest process (and the xdist
    controller, which runs no case) never imports paddle."""
    from .modes.capabilities import known_installation

    def ask():
        path = case_path_of(config)
        found = path.about()
        if is_xdist_controller(config):  # it runs no case
            path.close()
        return found

    return known_installation(settings_of(config).cache_dir, ask)


def pytest_report_header(config) -> Optional[List[str]]:
    settings = settings_of(config)
    goldens = golden_header(config, settings)
    if not settings.active:  # a suite's cases say so once collected (pytest_report_collectionfinish)
        config.stash[HEADER_SHOWN] = program_header(settings) + goldens
        return config.stash[HEADER_SHOWN] or None
    return case_header(config, settings) + goldens


def case_header(config, settings) -> List[str]:
    """The ``paddle-infer:`` lines of a session with cases, goldens aside: what Paddle can run
    here, the CPU and its CPU run modes, the baseline, tolerances, seed and cache, the
    program, the GPU mapping."""
    caps, _ = installation(config)
    tol = ("atol={} rtol={}".format(settings.atol if settings.atol is not None else "mode default",
                                    settings.rtol if settings.rtol is not None else "mode default"))
    lines = [
        f"paddle-infer: {caps.describe}",
        f"paddle-infer: {caps.cpu_modes_line()}",
        f"paddle-infer: baseline {settings.baseline}, {tol}, seed {settings.seed}, "
        f"cache {settings.cache_dir}",
    ] + program_header(settings, True)
    gpu_modes = [s.label for s in settings.run_modes if s.run_mode.device == "gpu"]
    if settings.baseline == "gpu" and not gpu_modes:
        gpu_modes = ["baseline gpu"]
    if gpu_modes or caps.gpu_count:  # with GPUs visible, suites' GPU modes use the mapping
        from .modes.devices import mapping_line

        workers = getattr(config.option, "numprocesses", None)
        lines.append(mapping_line(settings.device, workers if isinstance(workers, int) else None,
                                  caps.gpu_count, gpu_modes))
    return lines


def late_case_header(config) -> List[str]:
    """For a session that found its cases only by collecting (suites, markers): the case
    header's lines that the session has not printed yet. Nothing is looked for before
    collection, so a session without cases pays nothing for this."""
    if settings_of(config).active:
        return []
    shown = config.stash.setdefault(HEADER_SHOWN, [])
    late = [line for line in case_header(config, settings_of(config)) if line not in shown]
    shown.extend(late)  # once: an xdist controller hears from every worker
    return late


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """The xdist controller collects nothing: a worker's suite cases bring the header."""
    from .cases.suite_scan import is_suite_name

    config = node.config
    if not any(is_suite_name(Path(nodeid.split("::")[0]).name) for nodeid in ids):
        return
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    for line in late_case_header(config):
        if terminal is not None:
            terminal.write_line(line)


def program_header(settings, cases_ahead: bool = False) -> List[str]:
    """The program the session checks (its --paddle-program), when it has cases or sets it."""
    if not (settings.active or cases_ahead) and "paddle_program" not in settings.given:
        return []
    from .models.program import header_line
    from .modes.capabilities import installed_paddle

    return [header_line(settings.program, installed_paddle()[1])]


def golden_header(config, settings) -> List[str]:
    """Where goldens are recorded, or what the compared ones were recorded with when that
    differs from this run (a suite's own golden baselines show in their failures)."""
    from .cases.baseline_forms import GOLDEN, golden_dir, kind_of

    if settings.save_goldens is not None:
        return [f"paddle-infer: recording each case's baseline outputs as goldens in "
                f"{settings.save_goldens}"]
    if kind_of(settings.baseline) != GOLDEN:
        return []
    from .execute.goldens import header_lines

    lines = header_lines(golden_dir(settings.baseline), installation(config)[1])
    if settings.update_goldens:
        lines.append("paddle-infer: --paddle-update-goldens: goldens are rewritten from live baselines")
    return lines


# -- items ------------------------------------------------------------------------------


class PaddleCaseItem(pytest.Item):
    line = 0  # 0-based line of the entry that declares the case (suite items)

    def __init__(self, *, case, **kwargs):
        super().__init__(**kwargs)
        self.case = case
        self.prepared = None
        for mark in case_marks(case):
            self.add_marker(mark)
        self.user_properties.extend(case_properties(case))

    def setup(self):
        try:
            self.prepared = prepare_case(self, effective_case(self, self.case), from_cli=self.parent is self.session)
        except CaseSkipped as e:
            # reported at the case (suite file and line), not at this line of the plugin
            raise pytest.skip.Exception(str(e), _use_item_location=True) from None

    def runtest(self):
        check_case(self, self.case, from_cli=self.parent is self.session)

    def teardown(self):
        if self.prepared is not None:
            case_path_of(self.config).release(self.nodeid)
        self.prepared = None

    def repr_failure(self, excinfo, style=None):
        from .execute.case_path import CaseFailed

        if isinstance(excinfo.value, (CaseFailed, PaddleInferError)):
            return strip_ansi(str(excinfo.value))
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        # a line number is what pytest needs to report a skip mark at the item's location
        return self.path, self.line, self.case.id


def case_marks(case) -> list:
    """The marks of a case's test; the keyword copies let -m select:
    -m "paddle_run_mode(mode='onednn_bf16')"."""
    return [pytest.mark.paddle_model(case.model.name, name=case.model.name),
            pytest.mark.paddle_run_mode(case.run_mode.mode, mode=case.run_mode.mode),
            pytest.mark.xdist_group(case.model.name)]


def case_properties(case) -> list:
    """What every case's report carries from the start (JUnit, xdist, the summary)."""
    return [("paddle_case", case.id), ("paddle_model", case.model.name),
            ("paddle_shape", case.shape_text), ("paddle_run_mode", case.run_mode.label),
            ("paddle_baseline", case.baseline)]


def prepare_case(item, case, from_cli: bool) -> dict:
    """Prepare ``case`` in the executor under the item's node id; a dead executor errors the
    case with how it died and a command that reproduces it."""
    from .execute.executor import ExecutorDied

    try:
        info = case_path_of(item.config).prepare(item.nodeid, case)
    except ExecutorDied as died:
        raise _crash(item, case, died, from_cli) from None
    except CandidateError as e:
        raise _localized_error(item, case, e) from None
    if info["int8"]:  # which int8 path the candidate took, for JUnit and xdist
        item.user_properties.append(("paddle_int8", info["int8"]))
    return info


def check_case(item, case, from_cli: bool):
    """Run a prepared case to its verdict: figures, report files, the failure."""
    from .execute.executor import ExecutorDied

    try:
        return case_path_of(item.config).check(item.nodeid, item.nodeid, item.user_properties)
    except ExecutorDied as died:
        raise _crash(item, case, died, from_cli) from None
    except CandidateError as e:
        raise _localized_error(item, case, e) from None


def _crash(item, case, died, from_cli: bool) -> PaddleInferError:
    from .execute.case_path import crash_message

    item.user_properties.append(("paddle_crash", f"{died.how} while {died.phase}"))
    localization = _localize_crash(item, case, died)
    return PaddleInferError(crash_message(died, repro_command(item, case, from_cli), localization))


def _localized_error(item, case, error) -> PaddleInferError:
    """A candidate that raised a Paddle error: with --paddle-localize, the error and what the
    ladder found (a Paddle bug is no error a user can fix first)."""
    lines = _localize_crash(item, case, None, "raised")
    return type(error)("\n".join([str(error)] + lines)) if lines else error


def _localize_crash(item, case, died, failure: str = "crashed") -> list:
    """--paddle-localize on a case whose candidate killed the executor (``died``), or raised
    (``failure``): the ladder in the executor (a fresh one after a crash), every trial in a
    child of it, so a crashing trial is one bad outcome."""
    from .execute.executor import ExecutorDied

    if not settings_of(item.config).localize or (died is not None and "candidate" not in died.phase):
        return []
    try:
        found = case_path_of(item.config).localize_crash(item.nodeid, case, failure)
    except (ExecutorDied, PaddleInferError) as e:
        return [f"localization: could not run ({str(e).splitlines()[0]})"]
    if found["culprit"]:
        item.user_properties.append(("paddle_culprit", found["culprit"]))
    item.user_properties.append(("paddle_localization_builds", found["builds"]))
    if found.get("fix"):
        item.user_properties.append(("paddle_suggested_run_mode", found["fix"]))
    return found["lines"]


def repro_command(item, case, from_cli: bool) -> str:
    """A command that runs just this case with this session's paddle-infer options."""
    import shlex

    config = item.config
    settings = settings_of(config)
    skip = {"paddle_model", "run_mode", "paddle_suite"}
    args = ["pytest"]
    if from_cli:
        args += [f"--paddle-model={case.model.ref}", f"--run-mode={case.run_mode.label}"]
    else:
        args.append(item.nodeid)
    for opt in opts.OPTIONS:
        if opt.ini in skip or opt.ini not in settings.given:
            continue
        value = config.getoption(opt.ini)
        if opt.switch:
            if value:
                args.append(opt.flag)
        elif isinstance(value, list):  # a repeatable option: once per value
            args.extend(f"{opt.flag}={v}" for v in value)
        elif value not in (None, ""):
            args.append(f"{opt.flag}={value}")
    return " ".join(shlex.quote(a) for a in args)


def build_cases(settings) -> list:
    """The --paddle-model x --run-mode cases; OptionError for --paddle-shape/--paddle-batch
    values the models cannot take."""
    from .cases.case import Case
    from .cases.cli_shapes import shapes_by_model
    from .modes.run_modes import RUN_MODES
    from .verdict.tolerances import CaseTolerances, Rule

    cases = []
    sources = [with_declared_inputs(source, settings.cache_dir) for source in settings.models]
    shapes = shapes_by_model(sources, settings.shapes, settings.batch)
    for source in sources:
        for spec in settings.run_modes:
            default = RUN_MODES[spec.mode].tolerance
            cases.append(Case(
                model=source, run_mode=spec, baseline=settings.baseline, seed=settings.seed,
                threads=settings.threads, program=settings.program, shapes=shapes[source.name],
                tolerances=CaseTolerances(base=Rule(default.atol, default.rtol, default.cosine_min),
                                          override=Rule(settings.atol, settings.rtol)),
            ))
    return cases


def with_declared_inputs(source, cache_dir):
    """Disk models: read their inputs now so ids show shapes; a model that cannot be read
    keeps ``inputs=None`` and its cases report the problem when they run."""
    from dataclasses import replace

    from .models.source import find_model_files
    from .models.cache import declared_inputs

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
    if narrow_declared_cases(config, items):  # --paddle-model/--run-mode pick among declared cases
        if settings.shapes or settings.batch is not None:
            raise usage_error(config, "--paddle-shape and --paddle-batch give the shapes of the "
                              "cases --paddle-model adds; suites and paddle_case markers declare "
                              "their cases' shapes under shapes: (docs/suites.md)")
        return
    if not settings.active:
        warn_idle_options(config)
        return
    if settings.unresolved:
        raise usage_error(config, settings.unresolved[0][1])
    try:
        cases = build_cases(settings)
    except OptionError as e:
        raise usage_error(config, str(e)) from None
    added = [PaddleCaseItem.from_parent(session, name=case.id, nodeid=case.id, case=case)
             for case in cases]
    items.extend(added)
    # reported as collected, so pytest's "collected N items" counts them (not "collected 0
    # items" before they appear), and said where they come from
    config.hook.pytest_collectreport(report=pytest.CollectReport(
        nodeid="", outcome="passed", longrepr=None, result=added))
    are = "is a case" if len(cases) == 1 else "are cases"
    config.stash[NARROWED] = [f"paddle-infer: {len(cases)} of the items collected {are} "
                              f"from --paddle-model and --run-mode"]


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


ERRORED_IN_CALL = "paddle_error"


def pytest_report_teststatus(report, config):
    """A Paddle error while running a case (a predictor that raises, an executor that died)
    is not a verdict on the outputs: ERROR, like the same error while building it in setup."""
    if report.when == "call" and report.failed and any(
            name == ERRORED_IN_CALL for name, _ in getattr(report, "user_properties", ())):
        return "error", "E", "ERROR"
    return None


# -- summary ----------------------------------------------------------------------------


class SessionSummary:
    """Outcome and figures of every case, gathered from the test reports (on the controller
    under xdist): the terminal summary and the report index are written from them."""

    def __init__(self, config):
        self.config = config
        self.rows: Dict[str, Dict[str, str]] = {}
        self.order: Dict[str, int] = {}  # node id -> its place in the collection
        self.index_path = None  # where the report's index.html went
        self.suggest_written: List[str] = []  # --paddle-suggest-tolerances=write: what changed
        self.report_error = ""  # why the report's index was not written

    def pytest_collection_finish(self, session):
        if session.items:  # not the xdist controller, which collects nothing
            self.order = {item.nodeid: i for i, item in enumerate(session.items)}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        """The xdist controller collects nothing itself: the workers' order is the order given."""
        if not self.order:
            self.order = {nodeid: i for i, nodeid in enumerate(ids)}

    def ordered_rows(self) -> Dict[str, Dict[str, str]]:
        """The rows in the order the cases were given (collected), whatever order they ran in."""
        late = len(self.order)
        ranked = sorted(enumerate(self.rows), key=lambda p: (self.order.get(p[1], late), p[0]))
        return {nodeid: self.rows[nodeid] for _, nodeid in ranked}

    def pytest_runtest_logreport(self, report):
        props = dict(report.user_properties)
        if "paddle_model" not in props:
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            errored = report.failed and (report.when == "setup" or ERRORED_IN_CALL in props)
            outcome = "error" if errored else report.outcome
            if "paddle_crash" in props:  # the executor died or hung on this case
                outcome = "timeout" if "timed out" in str(props["paddle_crash"]) else "crashed"
            from .report.text import summary_row

            row = summary_row(report.nodeid, outcome, props, report.duration)
            if outcome in ("skipped", "error", "crashed", "timeout"):
                row["reason"] = _short_reason(report)
                row["message"] = _full_reason(report)  # summary.json keeps all of it
            self.rows[report.nodeid] = row

    def pytest_sessionfinish(self, session):
        settings = settings_of(self.config)
        if settings.suggest == "write" and not hasattr(self.config, "workerinput") and self.rows:
            from .report.suggestions import write_suites

            try:  # only here (the controller under xdist): one writer per suite file
                self.suggest_written = write_suites(list(self.rows.values()), settings.cache_dir)
            except (OSError, ImportError, ValueError) as e:
                self.suggest_written = [f"paddle-infer: the suggested tolerances were not written: {e}"]
        if settings.report_dir is not None and not hasattr(self.config, "workerinput") and self.rows:
            from .report.case_files import write_index

            try:
                self.index_path = write_index(settings.report_dir, self.ordered_rows(),
                                              report_environment(self.config))
            except PaddleInferError as e:  # a file in the way that is not the plugin's
                self.report_error = f"paddle-infer: the report's index was not written: {e}"

    def pytest_terminal_summary(self, terminalreporter):
        if hasattr(self.config, "workerinput"):
            return
        unused = unused_update_goldens(settings_of(self.config), self.rows.values())
        if unused:
            terminalreporter.write_line(unused, yellow=True, bold=True)
        if not self.rows:
            return
        from .report.text import outputs_table, summary_table

        terminalreporter.write_sep("=", "paddle-infer summary")
        terminalreporter.write_line(summary_table(list(self.ordered_rows().values())))
        outputs = outputs_table(list(self.rows.values()))
        if outputs:  # a section of its own: the summary table ends at the next rule
            terminalreporter.write_sep("=", "paddle-infer outputs (baseline value ranges)")
            terminalreporter.write_line("\n".join(outputs))
        from .report.text import near_zero_lines, task_lines

        near_zero = near_zero_lines(list(self.rows.values()))
        if near_zero:  # the summary's max rel* (compare.py: NEAR_ZERO)
            terminalreporter.write_sep("=", "paddle-infer relative error near zero")
            terminalreporter.write_line("\n".join(near_zero))
        tasks = task_lines(list(self.rows.values()))
        if tasks:  # outputs judged by a task-aware comparison (compare: in a suite)
            terminalreporter.write_sep("=", "paddle-infer task comparisons")
            terminalreporter.write_line("\n".join(tasks))
        from .report.suggestions import suggestion_lines

        suggested = suggestion_lines(list(self.rows.values()), self.suggest_written)
        if suggested:  # --paddle-suggest-tolerances
            terminalreporter.write_sep("=", "paddle-infer suggested tolerances")
            terminalreporter.write_line("\n".join(suggested))
        if self.report_error:
            terminalreporter.write_line(self.report_error, red=True, bold=True)
        if self.index_path is not None:
            terminalreporter.write_line(f"paddle-infer: report: {self.index_path} (summary.json and each "
                                        f"case's xlsx/json/csv/png beside it)")


def report_environment(config) -> Dict[str, str]:
    """The head of index.html: what ran where, and how it was started."""
    from .report.index_page import session_environment

    try:
        caps, software = installation(config)
        paddle = caps.describe
    except Exception:  # the report still says what it can; the session's outcome stands
        from .modes.capabilities import installed_paddle

        paddle, software = " ".join(installed_paddle()) or "not installed", {}
    params = config.invocation_params
    return session_environment(paddle, software, params.args, params.dir)


def unused_update_goldens(settings, rows) -> str:
    """--paddle-update-goldens in a session none of whose cases compares against goldens
    rewrites nothing: say so rather than let it pass for a refresh."""
    from .cases.baseline_forms import GOLDEN, kind_of

    if not settings.update_goldens or any(kind_of(r.get("paddle_baseline", "")) == GOLDEN for r in rows):
        return ""
    return ("paddle-infer: warning: --paddle-update-goldens rewrote nothing: no case of this session "
            "compares against goldens (baseline golden:DIR in a suite or --paddle-baseline=golden:DIR); "
            "to record new goldens use --paddle-save-goldens=DIR")


def _short_reason(report) -> str:
    return (_full_reason(report).splitlines() or [""])[0]


def _full_reason(report) -> str:
    if isinstance(report.longrepr, tuple):  # a skip: (path, line, "Skipped: reason")
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return strip_ansi(str(report.longrepr).strip()) if report.longrepr else ""


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


def stop_idle_executor(config) -> None:
    """No case here after all (-k deselected them): the executor a suite's collection
    started, never asked anything, stops importing paddle now rather than at the session's
    end; a later request would start another."""
    executor = getattr(config.stash.get(CASE_PATH, None), "executor", None)
    if getattr(executor, "conn", True) is None:  # Executor (not inline), never connected
        executor.close()


def pytest_unconfigure(config):
    if config.stash.get(REPORT_LOCK, None) is not None:
        from .ownership import release

        release(config.stash[REPORT_LOCK])
    if CASE_PATH in config.stash:
        config.stash[CASE_PATH].close()
    if RUNNER in config.stash:
        config.stash[RUNNER].close()


# -- fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def paddle_infer_runner(pytestconfig):
    """The per-worker runner: model files, inputs, predictors and baselines, cached."""
    from .modes.capabilities import import_paddle

    import_paddle()  # in this process: without Paddle's start-up warnings (a missing ccache)
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
def paddle_dygraph_layer():
    """Factory: ``paddle_dygraph_layer("tiny_detector")`` or
    ``paddle_dygraph_layer("my_pkg.nets:build_net", width=16)`` -> the eval-mode
    ``paddle.nn.Layer``, built in this process with the seeds the exporter uses (so its
    weights are the exported model's). Building seeds paddle's global generator."""
    from .execute.baselines import build_dygraph_layer
    from .modes.capabilities import import_paddle

    import_paddle()  # without Paddle's start-up warnings

    return build_dygraph_layer


@pytest.fixture(scope="session")
def paddle_inputs(paddle_infer_runner, pytestconfig):
    """Factory: ``paddle_inputs("resnet50", shapes={"x": (2, 3, 224, 224)}, seed=0)`` ->
    {input name: ndarray}, the data the cases feed."""
    from .fixtures import inputs_factory

    return inputs_factory(paddle_infer_runner, settings_of(pytestconfig))


# -- suites and the paddle_case marker -------------------------------------------------


def is_suite_file(path: Path, named: tuple) -> bool:
    from .cases.suite_scan import is_suite_name

    return is_suite_name(path.name) or (bool(named) and path.resolve() in named)


def _add_suite_args(config, suites) -> None:
    """Files named by --paddle-suite are collected even when outside the paths given."""
    base = Path(config.invocation_params.dir)
    covered = [(base / str(arg).split("::")[0]).resolve() for arg in config.args]
    for path in suites:
        if not any(path == c or c in path.parents for c in covered):
            config.args.append(str(path))


def pytest_collect_file(file_path, parent):
    if is_suite_file(file_path, settings_of(parent.config).suites):
        return PaddleSuiteFile.from_parent(parent, path=file_path)
    return None


def display_path(config, path: Path) -> str:
    """A path as messages show it: relative to where pytest was started, when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path(config.invocation_params.dir).resolve()))
    except ValueError:
        return str(path)


def suite_context(config, path: Path):
    from .cases.suite import Context

    settings = settings_of(config)
    forced = tuple((key, getattr(settings, key)) for key in ("seed", "baseline", "threads")
                   if f"paddle_{key}" in settings.given)  # the command line wins over the suite
    return Context(file=display_path(config, path), base_dir=Path(path).resolve().parent,
                   rootdir=Path(config.rootpath), cache_dir=settings.cache_dir, seed=settings.seed,
                   baseline=settings.baseline, threads=settings.threads, forced=forced)


class PaddleSuiteFile(pytest.File):
    """A YAML suite: one PaddleCaseItem per model x shape set x run mode, in file order."""

    def collect(self):
        from .cases.suite import load_suite

        self.config.stash[SUITES_SEEN] = True  # here, not at creation: pytest creates collectors
        # for files beside the paths it was given, and collects only those it was given
        case_path_of(self.config).start()  # the executor imports paddle while pytest collects
        from collections import Counter

        cases = list(load_suite(self.path, suite_context(self.config, self.path)))
        per_mode = Counter((d.model_name, d.mode_path) for d in cases)  # cases per model x run mode
        for declared in cases:
            item = PaddleCaseItem.from_parent(self, name=declared.case.id, case=declared.case)
            item.line = (declared.where.line or 1) - 1
            if settings_of(self.config).suggest and declared.mode_path:  # where its tolerances live
                import json

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


def declared_case(item):
    """The case a suite item or a paddle_case-parametrized test checks, else None."""
    if isinstance(item, PaddleCaseItem):
        return item.case
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("paddle_case") if callspec is not None else None


# options that only act on cases: given on the command line to a session without any, said so
CASE_ONLY_OPTIONS = ("--run-mode", "--paddle-localize", "--paddle-intermediates", "--paddle-report",
                     "--paddle-suggest-tolerances", "--paddle-save-runs", "--paddle-strict",
                     "--paddle-shape", "--paddle-batch")


def warn_idle_options(config) -> None:
    """A session with no case (no --paddle-model, suite or paddle_case test collected) that
    was given options which act on cases only: they would do nothing, silently."""
    from .options import OPTIONS

    dests = {o.flag: o.ini for o in OPTIONS}
    given = [flag for flag in CASE_ONLY_OPTIONS if config.getoption(dests[flag], None) not in (None, False)]
    if given:
        import warnings

        warnings.warn_explicit(PaddleInferWarning(
            f"paddle-infer: {', '.join(given)} given, but no paddle-infer case was collected, so "
            f"{'it does' if len(given) == 1 else 'they do'} nothing: name models with --paddle-model "
            f"NAME, or collect a suite file (*.paddle.yaml) or a paddle_case test"), None, "command line", 0)


def narrow_declared_cases(config, items) -> bool:
    """With suites or paddle_case tests collected, --paddle-model and --run-mode keep the
    cases they name (True: no standalone cases are added)."""
    cases = [c for c in map(declared_case, items) if c is not None]
    if not cases and not config.stash.get(SUITES_SEEN, False):
        return False
    from .cases import narrowing

    settings = settings_of(config)
    if not narrowing.filtering(settings) or not cases:
        return True
    keep, drop = [], []
    for item in items:
        case = declared_case(item)
        (drop if case is not None and not narrowing.case_selected(case, settings) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    lines = narrowing.report_lines(settings, len(cases) - len(drop), cases)
    config.stash[NARROWED] = lines
    if len(drop) == len(cases):
        import warnings

        # located at a declaring file: the warning is about the session's cases, not plugin code
        warnings.warn_explicit(PaddleInferWarning(lines[0]), None, str(drop[0].path), 1)
    return True


def pytest_report_collectionfinish(config, start_path, items):
    header = late_case_header(config) if any(declared_case(i) is not None for i in items) else []
    return (header + (config.stash.get(NARROWED, None) or [])) or None


def item_where(item):
    from .cases.suite import Where

    _, line, _ = item.location
    return Where(display_path(item.config, item.path), line + 1 if line is not None else None)


def effective_case(item, case):
    """The case with the command line's tolerances over a paddle_tolerance marker's over
    the case's own (precedence: command line > marker > the suite's layers)."""
    from dataclasses import replace

    from .verdict.tolerances import Rule

    settings = settings_of(item.config)
    marker = item.get_closest_marker("paddle_tolerance")
    rule = Rule()
    if marker is not None:
        from .cases.suite import marker_rule

        rule = marker_rule(marker.args, marker.kwargs, item_where(item))
    override = Rule(settings.atol, settings.rtol).over(rule)
    case = replace(case, tolerances=case.tolerances.with_override(override))
    if settings.intermediates != "none":  # the command line wins over a suite's choice
        case = replace(case, intermediates=settings.intermediates)
    if "paddle_program" in settings.given:  # so does --paddle-program (or the ini key)
        case = replace(case, program=settings.program)
    return case


def pytest_generate_tests(metafunc):
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
    from .cases.suite import Where, marker_cases

    context = suite_context(metafunc.config, metafunc.definition.path)
    params = []
    for marker in markers:
        try:
            declared = marker_cases(marker.args, marker.kwargs, Where(path, line + 1), context)
        except PaddleInferError as e:
            raise pytest.Collector.CollectError(str(e)) from None
        for d in declared:
            case = d.case
            params.append(pytest.param(
                case, id=f"{case.model.name}-{case.shape_text}-{case.run_mode.label}",
                marks=case_marks(case)))
    metafunc.parametrize("paddle_case", params, indirect=True)


@pytest.fixture
def paddle_case(request):
    """The case a ``@pytest.mark.paddle_case(...)`` test is parametrized with, prepared:
    ``.case``, ``.inputs``, ``.baseline_outputs``, ``.run()`` -> result, ``.check()`` asserts."""
    case = getattr(request, "param", None)
    if case is None:
        pytest.fail(f"{request.node.nodeid}: the paddle_case fixture needs "
                    "@pytest.mark.paddle_case(model=..., run_modes=[...]) on the test", pytrace=False)
    from .fixtures import CaseHandle

    node = request.node
    node.user_properties.extend(case_properties(case))
    handle = CaseHandle(node, effective_case(node, case))
    try:
        handle.prepare()
    except CaseSkipped as e:
        pytest.skip(str(e))
    request.addfinalizer(handle.release)
    return handle
