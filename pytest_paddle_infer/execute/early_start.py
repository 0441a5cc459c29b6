"""The executor child starts while pytest is still starting, when the command line shows cases.

pytest imports the plugin while it loads its plugins, about 0.14 s before
``pytest_configure``; the plugin asks here first thing (``start_if_asked``):

- a plain (not xdist) session whose command line alone shows that it runs cases in an
  executor child (``--paddle-model``, ``--paddle-suite``, a suite file given by path, a
  directory holding one) starts the child at once, so its paddle import overlaps the rest
  of pytest's start-up;
- an xdist controller runs no case, but when its command line shows cases (``--paddle-model``,
  ``--paddle-suite``, a suite file given by path) it sets ``EARLY_WORKER_ENV`` to its pid in
  its own environment, which the workers it spawns inherit; a worker whose parent is that
  pid starts its child at its own plugin import, about 0.35 s before a suite's collection
  would, and drops the variable so that nothing it starts (the child, a test's subprocess)
  inherits it. On Linux the controller also starts a fork server (fork_server.py) that
  imports paddle once; the workers' children are forked from it.

``pytest_configure`` (``--paddle-model``) or a suite's collection adopts the child
(``Executor.start``), or the end of configure/collection discards it when, all options read
and tests collected, the process runs no case; so does the interpreter's exit.
"""
from __future__ import annotations

import os
from typing import Sequence

# set by an xdist controller whose command line shows cases, to its pid: its workers start
# their executor child at plugin import
EARLY_WORKER_ENV = "PADDLE_INFER_EARLY_WORKER_EXECUTOR"
FORK_SERVER_ENV = "PADDLE_INFER_FORK_SERVER"  # fork_server.ADDRESS_ENV: its pid and address
FORK_SERVER_KEY_ENV = FORK_SERVER_ENV + "_KEY"  # fork_server.KEY_ENV: its key

# sessions that run no case whatever else the command line says
_NO_CASES = ("-h", "--help", "--version", "-V", "--co", "--collect-only", "--collectonly",
             "--fixtures", "--markers", "--paddle-executor")  # --paddle-executor: inline has no child
# options whose separate value may look like a path: that value names no suite to collect
_PATH_VALUED = ("--ignore", "--ignore-glob", "--deselect", "-c", "--config-file", "--rootdir",
                "--confcutdir", "--basetemp", "--junitxml", "--junit-xml", "--paddle-cache-dir",
                "--paddle-baseline", "--paddle-save-runs", "--paddle-report", "-p")


def child_env() -> dict:
    """The environment an executor child gets (and paddle is imported with)."""
    env = dict(os.environ)
    for marker in (EARLY_WORKER_ENV, FORK_SERVER_ENV, FORK_SERVER_KEY_ENV):
        env.pop(marker, None)  # the xdist controller's, for its workers: not the child's
    env.setdefault("GLOG_minloglevel", "1")
    return env


def _said(argv: Sequence[str], *flags: str) -> bool:
    return any(a == f or a.startswith(f + "=") for a in argv for f in flags)


def _xdist_workers(argv: Sequence[str]) -> bool:
    """The command line asks xdist for workers: -n N (not 0), --numprocesses, --dist, --tx."""
    for i, a in enumerate(argv):
        value = None
        if a in ("-n", "--numprocesses", "--dist"):
            value = argv[i + 1] if i + 1 < len(argv) else ""
        elif a.startswith(("--numprocesses=", "--dist=")):
            value = a.split("=", 1)[1]
        elif a.startswith("-n") and not a.startswith("--"):
            value = a[2:].lstrip("=")
        elif a == "--tx" or a.startswith("--tx="):
            return True
        if value is not None and value not in ("0", "no"):
            return True
    return False


def wants_early_executor(argv: Sequence[str]) -> bool:
    """A plain session whose command line shows cases: this process starts its child now."""
    return not _xdist_workers(argv) and not _said(argv, *_NO_CASES) and _shows_cases(argv)


def wants_early_workers(argv: Sequence[str]) -> bool:
    """An xdist controller whose command line shows cases: its workers start their children
    at plugin import."""
    return _xdist_workers(argv) and not _said(argv, *_NO_CASES) and _shows_cases(argv)


def _shows_cases(argv: Sequence[str]) -> bool:
    """Cheap by design (no paddle, no YAML, one directory listing at most)."""
    return _said(argv, "--paddle-model", "--paddle-suite") or any(
        _names_suites(a) for i, a in enumerate(argv)
        if not a.startswith("-") and not (i and argv[i - 1] in _PATH_VALUED))


def _names_suites(arg: str) -> bool:
    """A positional argument that surely collects a suite: a suite file (``::id`` allowed), or
    a directory holding one directly. Deeper directories are not walked and a directory
    without a suite file of its own does not count (``pytest tests -n 2`` of a project's own
    Python tests is the common case): a wrong yes costs every worker a discarded child
    importing paddle on a busy start-up, a wrong no only the 0.35 s this saves."""
    from ..cases.suite_scan import is_suite_name

    path = arg.split("::", 1)[0]
    if is_suite_name(os.path.basename(path)):
        return True
    try:
        with os.scandir(path) as entries:
            return any(is_suite_name(e.name) and e.is_file() for e in entries)
    except OSError:  # not a directory (a module, a -k expression's word...)
        return False


def is_early_worker() -> bool:
    """An xdist worker of a controller that asked for early children. The variable is
    dropped here, in whichever process inherited it: only the controller's own workers (its
    children, with PYTEST_XDIST_WORKER, which xdist sets before loading plugins) act on it."""
    asked = os.environ.pop(EARLY_WORKER_ENV, None)
    return asked == str(os.getppid()) and "PYTEST_XDIST_WORKER" in os.environ


def start_if_asked(argv: Sequence[str]) -> None:
    if FORK_SERVER_ENV in os.environ:  # a worker: its controller's fork server (fork_server.py)
        from .fork_server import take_offer

        take_offer()
    if is_early_worker() or wants_early_executor(argv):
        from .executor import start_early

        try:
            start_early()
        except OSError:  # a head start only: the late start says what is wrong, on a case
            pass
    elif wants_early_workers(argv):
        from . import fork_server

        if fork_server.available():  # the workers' children fork from it, paddle imported
            try:
                fork_server.start(child_env())
            except OSError:  # a head start only: each worker then starts its own child
                pass
        os.environ[EARLY_WORKER_ENV] = str(os.getpid())
