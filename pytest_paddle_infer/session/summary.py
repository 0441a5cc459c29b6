"""The end of a session: every case's outcome and figures gathered from the test reports
(on the controller under xdist), the terminal summary, the report index, written suggestions."""
from __future__ import annotations

from typing import Dict, List

import pytest

from ..errors import PaddleInferError, disk_fault, strip_ansi
from .items import ERRORED_IN_CALL
from .state import installation, settings_of

class SessionSummary:
    """Outcome and figures of every case, from the test reports: the terminal summary and index."""

    def __init__(self, config):
        self.config = config
        self.rows: Dict[str, Dict[str, str]] = {}
        self.order: Dict[str, int] = {}  # node id -> its place in the collection
        self.index_path = None  # where the report's index.html went
        self.report_error = ""  # why the report could not be written (a full disk)
        self.suggest_written: List[str] = []  # --paddle-suggest-tolerances=write: what changed

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
            from ..report.text import summary_row

            row = summary_row(report.nodeid, outcome, props, report.duration)
            if outcome in ("skipped", "error", "crashed", "timeout"):
                row["reason"] = (_full_reason(report).splitlines() or [""])[0]
                row["message"] = _full_reason(report)  # summary.json keeps all of it
            self.rows[report.nodeid] = row

    def pytest_sessionfinish(self, session):
        settings = settings_of(self.config)
        if settings.suggest == "write" and not hasattr(self.config, "workerinput") and self.rows:
            from ..report.suggestions import write_suites

            try:  # only here (the controller under xdist): one writer per suite file
                self.suggest_written = write_suites(list(self.rows.values()), settings.cache_dir)
            except (OSError, ImportError, ValueError) as e:
                self.suggest_written = [f"paddle-infer: the suggested tolerances were not written: {e}"]
        if settings.report_dir is not None and not hasattr(self.config, "workerinput") and self.rows:
            from ..report.case_files import write_index

            try:
                self.index_path = write_index(settings.report_dir, self.ordered_rows(),
                                              report_environment(self.config))
            except PaddleInferError as e:  # a file in the way that is not the plugin's
                self.report_error = f"paddle-infer: the report's index was not written: {e}"
            except OSError as e:  # the summary is still printed; the report's fault in a line
                self.report_error = "paddle-infer: " + disk_fault(
                    e, f"writing the report (--paddle-report {settings.report_dir})")
                session.exitstatus = session.exitstatus or pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if hasattr(self.config, "workerinput"):
            return
        unused = unused_update_goldens(settings_of(self.config), self.rows.values())
        if unused:
            terminalreporter.write_line(unused, yellow=True, bold=True)
        if not self.rows:
            return
        from ..report.suggestions import suggestion_lines
        from ..report.text import near_zero_lines, outputs_table, summary_table, task_lines

        terminalreporter.write_sep("=", "paddle-infer summary")
        terminalreporter.write_line(summary_table(list(self.ordered_rows().values())))
        rows = list(self.rows.values())
        # each a section of its own: the summary table ends at the next rule
        for title, lines in (("paddle-infer outputs (baseline value ranges)", outputs_table(rows)),
                             ("paddle-infer relative error near zero", near_zero_lines(rows)),  # max rel*
                             ("paddle-infer task comparisons", task_lines(rows)),  # compare: in a suite
                             ("paddle-infer suggested tolerances",
                              suggestion_lines(rows, self.suggest_written))):
            if lines:
                terminalreporter.write_sep("=", title)
                terminalreporter.write_line("\n".join(lines))
        if self.report_error:
            terminalreporter.write_line(self.report_error, red=True, bold=True)
        if self.index_path is not None:
            terminalreporter.write_line(f"paddle-infer: report: {self.index_path} (summary.json and each "
                                        f"case's xlsx/json/csv/png beside it)")


def report_environment(config) -> Dict[str, str]:
    """The head of index.html: what ran where, and how it was started."""
    from ..report.index_page import session_environment

    try:
        caps, software = installation(config)
        paddle = caps.describe
    except Exception:  # the report still says what it can; the session's outcome stands
        from ..modes.capabilities import installed_paddle

        paddle, software = " ".join(installed_paddle()) or "not installed", {}
    params = config.invocation_params
    return session_environment(paddle, software, params.args, params.dir)


def unused_update_goldens(settings, rows) -> str:
    """--paddle-update-goldens in a session with no golden case rewrites nothing: say so."""
    from ..cases.baseline_forms import GOLDEN, kind_of

    if not settings.update_goldens or any(kind_of(r.get("paddle_baseline", "")) == GOLDEN for r in rows):
        return ""
    return ("paddle-infer: warning: --paddle-update-goldens rewrote nothing: no case of this session "
            "compares against goldens (baseline golden:DIR in a suite or --paddle-baseline=golden:DIR); "
            "to record new goldens use --paddle-save-goldens=DIR")


def _full_reason(report) -> str:
    if isinstance(report.longrepr, tuple):  # a skip: (path, line, "Skipped: reason")
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return strip_ansi(str(report.longrepr).strip()) if report.longrepr else ""
