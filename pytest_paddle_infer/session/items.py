"""Cases as pytest items: the command line's cases, declared cases (suites, paddle_case
tests) narrowed by --paddle-model/--run-mode, each case's setup and check through the case path,
and what a case that crashed or raised says (with a command that reproduces it)."""
from __future__ import annotations

import shlex
from dataclasses import replace

import pytest

from ..errors import CandidateError, CaseSkipped, OptionError, PaddleInferError, strip_ansi
from . import options as opts
from .paddle_warning import PaddleInferWarning
from .state import NARROWED, SUITES_SEEN, case_path_of, display_path, settings_of
from .xdist_usage import usage_error

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
        from .case_path import CaseFailed

        if isinstance(excinfo.value, (CaseFailed, PaddleInferError)):
            return strip_ansi(str(excinfo.value))
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        # a line number is what pytest needs to report a skip mark at the item's location
        return self.path, self.line, self.case.id


def case_marks(case) -> list:
    """The marks of a case's test; keyword copies let -m select ``paddle_run_mode(mode='onednn_bf16')``."""
    return [pytest.mark.paddle_model(case.model.name, name=case.model.name),
            pytest.mark.paddle_run_mode(case.run_mode.mode, mode=case.run_mode.mode),
            pytest.mark.xdist_group(case.model.name)]


def case_properties(case) -> list:
    """What every case's report carries from the start (JUnit, xdist, the summary)."""
    return [("paddle_case", case.id), ("paddle_model", case.model.name),
            ("paddle_shape", case.shape_text), ("paddle_run_mode", case.run_mode.label),
            ("paddle_baseline", case.baseline)]


def prepare_case(item, case, from_cli: bool) -> dict:
    """Prepare ``case`` in the executor."""
    info = _on_path(item, case, from_cli, lambda path: path.prepare(item.nodeid, case))
    if info["int8"]:  # which int8 path the candidate took, for JUnit and xdist
        item.user_properties.append(("paddle_int8", info["int8"]))
    return info


def check_case(item, case, from_cli: bool):
    """Run a prepared case to its verdict: figures, report files, the failure."""
    return _on_path(item, case, from_cli,
                    lambda path: path.check(item.nodeid, item.nodeid, item.user_properties))


def _on_path(item, case, from_cli: bool, request):
    """``request(case path)``; a dead executor errors the case with how, and a repro command."""
    from ..supervise import ExecutorDied

    try:
        return request(case_path_of(item.config))
    except ExecutorDied as died:
        raise _crash(item, case, died, from_cli) from None
    except CandidateError as e:
        raise _localized_error(item, case, e) from None


def _crash(item, case, died, from_cli: bool) -> PaddleInferError:
    from .case_path import crash_message

    item.user_properties.append(("paddle_crash", f"{died.how} while {died.phase}"))
    localization = _localize_crash(item, case, died)
    return PaddleInferError(crash_message(died, repro_command(item, case, from_cli), localization))


def _localized_error(item, case, error) -> PaddleInferError:
    """A candidate that raised a Paddle error, with what --paddle-localize found."""
    lines = _localize_crash(item, case, None, "raised")
    return type(error)("\n".join([str(error)] + lines)) if lines else error


def _localize_crash(item, case, died, failure: str = "crashed") -> list:
    """--paddle-localize on a case whose candidate killed the executor (``died``) or raised
    (``failure``): the ladder in a (fresh) executor, every trial in a child of it."""
    from ..supervise import ExecutorDied

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
    config = item.config
    settings = settings_of(config)
    skip = {"paddle_model", "run_mode", "paddle_suite"}
    args = ["pytest"] + ([f"--paddle-model={case.model.ref}", f"--run-mode={case.run_mode.label}"]
                         if from_cli else [item.nodeid])
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
    """The --paddle-model x --run-mode cases; OptionError for shapes the models cannot take."""
    from ..cases.case import Case
    from ..cases.cli_shapes import shapes_by_model
    from ..cases.tolerance_precedence import case_tolerances
    from ..verdict.tolerances import Rule

    sources = [with_declared_inputs(source, settings.cache_dir, settings.timeout) for source in settings.models]
    shapes = shapes_by_model(sources, settings.shapes, settings.batch)
    return [Case(model=source, run_mode=spec, baseline=settings.baseline, seed=settings.seed,
                 threads=settings.threads, program=settings.program, shapes=shapes[source.name],
                 tolerances=case_tolerances(spec.mode, command_line=Rule(settings.atol, settings.rtol)))
            for source in sources for spec in settings.run_modes]


def with_declared_inputs(source, cache_dir, timeout=None):
    """Disk models' inputs, read now so ids show shapes (unreadable: the case says so when run)."""
    from ..models.source import find_model_files
    from ..models.cache import declared_inputs

    if source.kind != "path" or source.inputs is not None:
        return source
    try:
        prog, _ = find_model_files(source.ref)
        return replace(source, inputs=declared_inputs(prog, cache_dir, timeout))
    except PaddleInferError:
        return source


ERRORED_IN_CALL = "paddle_error"


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
    """Warn of options that act on cases only, given to a session with no case."""
    dests = {o.flag: o.ini for o in opts.OPTIONS}
    given = [flag for flag in CASE_ONLY_OPTIONS if config.getoption(dests[flag], None) not in (None, False)]
    if given:
        import warnings

        warnings.warn_explicit(PaddleInferWarning(
            f"paddle-infer: {', '.join(given)} given, but no paddle-infer case was collected, so "
            f"{'it does' if len(given) == 1 else 'they do'} nothing: name models with --paddle-model "
            f"NAME, or collect a suite file (*.paddle.yaml) or a paddle_case test"), None, "command line", 0)


def narrow_declared_cases(config, items, collection_errors: int = 0) -> bool:
    """--paddle-model and --run-mode keep the declared cases they name (True: add no cases of their own)."""
    cases = [c for c in map(declared_case, items) if c is not None]
    if not cases and not config.stash.get(SUITES_SEEN, False):
        return False
    from ..cases import narrowing

    settings = settings_of(config)
    if not narrowing.filtering(settings) or (not cases and collection_errors):  # the suite's error says why
        return True
    if not cases:  # a suite was collected, but it declares no case to narrow
        raise usage_error(config, narrowing.nothing_to_run(settings, cases))
    keep, drop = [], []
    for item in items:
        case = declared_case(item)
        (drop if case is not None and not narrowing.case_selected(case, settings) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    if len(drop) == len(cases) and not collection_errors:  # a check was asked for and none runs: never a green session
        raise usage_error(config, narrowing.nothing_to_run(settings, cases))
    config.stash[NARROWED] = narrowing.report_lines(settings, len(cases) - len(drop), cases)
    return True


def item_where(item):
    from ..cases.suite import Where

    _, line, _ = item.location
    return Where(display_path(item.config, item.path), line + 1 if line is not None else None)


def effective_case(item, case):
    """The case with the command line's tolerances over a paddle_tolerance marker's over its own."""
    from ..cases.tolerance_precedence import overridden
    from ..verdict.tolerances import Rule

    settings = settings_of(item.config)
    marker = item.get_closest_marker("paddle_tolerance")
    rule = Rule()
    if marker is not None:
        from ..cases.suite import marker_rule

        rule = marker_rule(marker.args, marker.kwargs, item_where(item))
    case = replace(case, tolerances=overridden(case.tolerances, rule, Rule(settings.atol, settings.rtol)))
    if settings.intermediates != "none":  # the command line wins over a suite's choice
        case = replace(case, intermediates=settings.intermediates)
    if "paddle_program" in settings.given:  # so does --paddle-program (or the ini key)
        case = replace(case, program=settings.program)
    return case


def add_command_line_cases(session, config, items) -> None:
    """pytest_collection_modifyitems: narrow declared cases, or add --paddle-model's."""
    settings = settings_of(config)
    if narrow_declared_cases(config, items, session.testsfailed):  # --paddle-model/--run-mode pick among declared cases
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
    added = [PaddleCaseItem.from_parent(session, name=case.id, nodeid=case.id, case=case) for case in cases]
    items.extend(added)
    # reported as collected, so pytest's "collected N items" counts them
    config.hook.pytest_collectreport(report=pytest.CollectReport(
        nodeid="", outcome="passed", longrepr=None, result=added))
    are = "is a case" if len(cases) == 1 else "are cases"
    config.stash[NARROWED] = [f"paddle-infer: {len(cases)} of the items collected {are} "
                              f"from --paddle-model and --run-mode"]
