"""Usage errors found while xdist workers collect reach the person running pytest: xdist
ignores a worker's exit status, so the worker puts its message in its ``workeroutput`` and the
controller prints it as a usage error and ends the session with exit code 4."""
from __future__ import annotations

import sys

import pytest

KEY = "paddle_infer_usage_error"


def usage_error(config, message: str) -> pytest.UsageError:
    """The error to raise; on an xdist worker its message also goes to the controller."""
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput.setdefault(KEY, message)
    return pytest.UsageError(message)


class UsageRelay:
    """On the xdist controller: the first worker's usage error ends the session as one."""

    def __init__(self) -> None:
        self.message = None

    def pytest_testnodedown(self, node, error) -> None:
        output = getattr(node, "workeroutput", None) or {}
        if self.message is None and output.get(KEY):
            self.message = output[KEY]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session) -> None:
        if self.message is not None:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def pytest_unconfigure(self, config) -> None:
        if self.message is not None:  # after the summary, where pytest puts a usage error
            sys.stderr.write(f"ERROR: {self.message}\n\n")
