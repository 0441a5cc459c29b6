"""The executor of a ``--paddle-model`` session starts while pytest is still starting.

pytest imports the plugin while it loads its plugins, about 0.14 s before
``pytest_configure``; the plugin asks here first thing, and when the command line alone
shows a plain (not xdist) session that runs cases in an executor child, the child starts at
once, so its paddle import overlaps the rest of pytest's start-up. ``pytest_configure``
adopts it (``Executor.start``) or discards it; so does the interpreter's exit.
"""
from __future__ import annotations

from typing import Sequence


def wants_early_executor(argv: Sequence[str]) -> bool:
    said = lambda *flags: any(a == f or a.startswith(f + "=") for a in argv for f in flags)
    return (said("--paddle-model") and not said("--paddle-executor")
            and not said("-h", "--help", "--version", "-V", "--co", "--collect-only",
                         "--collectonly", "--fixtures", "--markers", "--numprocesses", "--dist")
            and not any(a.startswith("-n") for a in argv))  # xdist: workers start their own


def start_if_asked(argv: Sequence[str]) -> None:
    if wants_early_executor(argv):
        from .executor import start_early

        start_early()
