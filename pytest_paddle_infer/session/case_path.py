"""One path from a Case to its CaseResult, for every case: command line, suite, marker.
``CasePath`` sends the case to the executor (supervise.py; engine/service.py does the Paddle
work), then records the figures, writes the report files and raises the failure."""
from __future__ import annotations

import importlib
import threading
import warnings
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import List, Optional, Sequence

from ..errors import CandidateError, PaddleInferError, disk_fault
from .paddle_warning import PaddleInferWarning


LOCALIZE_NOT_RUN = ("--paddle-localize: not run: the ladder re-runs the candidate with recipe "
                    "variations and compares its tensors with the baseline's, and this case "
                    "stopped before any output was compared; fix the error above first")


class CaseFailed(AssertionError):
    """A case whose outputs are outside tolerance; the message is the table."""


class CasePath:
    """The pytest process's side of every case."""

    def __init__(self, settings, log_dir: Path, shared_dir: Optional[Path] = None, fork_server: str = ""):
        self._warming = False
        self.settings = settings
        self.seeds: dict = {}  # node id -> the prepared case's input seed
        init = {"cache_dir": str(settings.cache_dir), "device": settings.device,
                "save_goldens": settings.save_goldens, "update_goldens": settings.update_goldens,
                "goldens_float16": settings.goldens_float16,
                "save_runs": str(settings.save_runs) if settings.save_runs else None,
                "shared_dir": str(shared_dir) if shared_dir else None,
                "repro_dir": str(settings.report_dir / "repro") if settings.report_dir else None,
                "fork_server": fork_server}
        from ..supervise import Executor, InlineExecutor

        self.executor = InlineExecutor(init) if settings.executor == "inline" else \
            Executor(init, log_dir, settings.timeout, fork_server)

    def start(self) -> None:
        """Start the executor now (it imports paddle while pytest collects), and the result readers."""
        self.executor.start()
        if not self._warming:
            self._warming = threading.Thread(target=_import_result_readers, name="paddle-infer-imports",
                                             daemon=True)
            self._warming.start()

    def about(self):
        """(Capabilities, environment) of the installed Paddle, from the executor."""
        return self.executor.call("about")

    def prepare(self, key: str, case) -> dict:
        """Model files, inputs, baseline and candidate; CaseSkipped when the mode cannot run here."""
        self.seeds[key] = case.seed  # --paddle-suggest-tolerances measures the next seeds too
        with self._localize_said():
            return self.executor.call("prepare", key, case)

    def run(self, key: str):
        with self._localize_said():
            return self.executor.call("run", key, self.settings.localize)

    @contextmanager
    def _localize_said(self):
        """With --paddle-localize, an error before any comparison says localization did not run."""
        try:
            yield
        except PaddleInferError as e:
            from ..supervise import ExecutorDied

            # a candidate's Paddle error is localized (plugin.py), a crash says it its own way
            if not self.settings.localize or isinstance(e, (ExecutorDied, CandidateError)) \
                    or type(e) is PaddleInferError:
                raise
            try:
                said = type(e)(f"{e}\n{LOCALIZE_NOT_RUN}")
            except TypeError:  # an error class built from parts (files.ArrayFileError)
                said = PaddleInferError(f"{e}\n{LOCALIZE_NOT_RUN}")
            raise said from None

    def localize_crash(self, key: str, case, failure: str = "crashed") -> dict:
        """The ladder after the executor died on ``case`` (or its candidate raised)."""
        return self.executor.call("localize_crash", key, case, failure)

    def tensors(self, key: str, which: str):
        """The prepared case's inputs or baseline outputs, for a test that asks for them."""
        return self.executor.call("tensors", key, which)

    def release(self, key: str) -> None:
        with suppress(PaddleInferError):  # a child that died has nothing left to release
            self.executor.call("release", key)

    def finish(self, nodeid: str, result, record: List) -> None:
        """Figures into the test's properties, report files, and the failure."""
        from ..report.text import failure_message, properties

        vacuous = result.vacuous if result.passed else []
        if vacuous and self.settings.strict:
            from ..verdict.vacuity import mark_strict

            mark_strict(vacuous)  # the case fails, in its reports too
        record.extend((f"paddle_{name}", getattr(result, name))
                      for name in ("culprit", "localization_builds", "suggested_run_mode")
                      if getattr(result, name, None))
        record.extend(properties(result))
        if self.settings.report_dir is not None:
            from ..report.case_files import write_case

            try:
                write_case(self.settings.report_dir, nodeid, result)
            except OSError as e:  # a full or unwritable report dir: this case's error, in a line
                raise PaddleInferError(disk_fault(e, f"writing the case's report files under "
                                                     f"--paddle-report {self.settings.report_dir}")) from None
        if not result.passed:
            failed = CaseFailed(failure_message(result))
            failed.result = result
            raise failed
        if vacuous:
            warn_vacuous(result)

    def check(self, key: str, nodeid: str, record: List):
        """Run a prepared case to its verdict: the one path items and marker tests share."""
        result = self.run(key)
        if self.settings.suggest:
            record.append(("paddle_suggest", self.measure(key, result)))
        self.finish(nodeid, result, record)
        return result

    def measure(self, key: str, result) -> str:
        """--paddle-suggest-tolerances: the case on its next seeds too; suggestions as JSON (suggest.py)."""
        from ..verdict.suggest import case_suggestion

        first = self.seeds.get(key, 0)
        others = list(range(first + 1, first + self.settings.suggest_seeds))
        rows, measured, notes = self.executor.call("measure", key, others) if others else ([], [], [])
        return case_suggestion([first] + measured, [result.rows] + rows, self.settings.suggest_margin, notes)

    def close(self) -> None:
        self.executor.close()
        if self._warming:  # no thread of the session's still importing once it has ended
            self._warming.join(30)


def _import_result_readers() -> None:
    """What reading a result needs, imported while the executor starts."""
    for name in ("..protocol", "..report.text"):
        importlib.import_module(name, __package__)


def warn_vacuous(result) -> None:
    """A pass that checked nothing: a PaddleInferWarning naming each output and why."""
    from ..report.text import vacuous_text

    message = (f"{result.case_id}: passed, but an output cannot fail under its tolerance "
               f"(--paddle-strict fails it): {vacuous_text(result)}")
    # located at the case, not at this line of the plugin
    warnings.warn_explicit(PaddleInferWarning(message), None, result.case_id, 0)


def crash_message(died, repro: str, localization: Sequence[str] = ()) -> str:
    """A dead executor's case: how, where, the recipe, Paddle's last words, a repro, the localization."""
    lines = [str(died)]
    if died.recipe:
        lines.append(f"recipe: {died.recipe}")
    if died.log_tail:
        lines.append(f"last lines of the executor's log ({died.log_path}):")
        lines.extend("    " + l for l in died.log_tail.splitlines())
    lines.append(f"reproduce: {repro}")
    return "\n".join(lines + list(localization))
