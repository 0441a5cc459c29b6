"""A session's state in the pytest process: its settings, its case path (the executor it
talks to) and what the installed Paddle can do, kept in the config's stash."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from ..errors import DISK_ERRNOS, PaddleInferError
from . import options as opts
from .xdist_usage import usage_error

REPORT_LOCK = pytest.StashKey[object]()  # this session is the one writer of --paddle-report
FORK_SERVER = pytest.StashKey[str]()  # the controller's fork server (fork_server.py): its spec
FORK_SERVER_INPUT = "paddle_infer_fork_server"  # the key of xdist's workerinput that carries it
SHARED_DIR = "shared-baselines"  # under the cache dir: the baselines xdist workers share, per run

SETTINGS = pytest.StashKey["opts.Settings"]()
RUNNER = pytest.StashKey[object]()
CASE_PATH = pytest.StashKey[object]()
SUITES_SEEN = pytest.StashKey[bool]()
NARROWED = pytest.StashKey[list]()
HEADER_SHOWN = pytest.StashKey[list]()  # paddle-infer lines the session has printed so far


def default_cache_dir(config) -> Path:
    cache = getattr(config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("paddle-infer"))
    return Path(config.rootpath) / ".paddle-infer-cache"


def is_xdist_controller(config) -> bool:
    """The process that hands tests to xdist workers and runs none itself."""
    return (not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))
            and getattr(config.option, "dist", "no") != "no")


def settings_of(config) -> "opts.Settings":
    return config.stash[SETTINGS]


def case_path_of(config):
    """The per-process path every case takes (case_path.py); its executor starts on first use."""
    if CASE_PATH not in config.stash:
        from .case_path import CasePath
        from ..models.cache import heal_cache_dirs

        settings = settings_of(config)
        check_cache_dir(settings)
        heal_cache_dirs(settings.cache_dir)  # a damaged cache is rebuilt, not a traceback
        shared = None
        workerinput = getattr(config, "workerinput", None)
        if workerinput and workerinput.get("testrunuid"):  # the workers of one xdist session
            shared = settings.cache_dir / SHARED_DIR / workerinput["testrunuid"]
        from ..fork_server import lent, serve_children_from

        # the controller's fork server (fork_server.py), given to its own workers only, or
        # one an enclosing process lends: the executor and every command child fork from it
        fork_server = (workerinput or {}).get(FORK_SERVER_INPUT, "") or lent()
        serve_children_from(fork_server)
        config.stash[CASE_PATH] = CasePath(settings, settings.cache_dir / "executor", shared, fork_server)
    return config.stash[CASE_PATH]


class UnusableDirectory(PaddleInferError, pytest.UsageError):
    """A directory the session must write cannot be written (a usage error, or a collection error)."""


def check_cache_dir(settings) -> None:
    """The cache dir is made (when missing) and takes a file, or UnusableDirectory says why."""
    path = settings.cache_dir
    named = (f"--paddle-cache-dir {path}" if "paddle_cache_dir" in settings.given
             else f"the cache dir {path} (the default, under pytest's cache dir)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".paddle-infer-probe-", dir=path)
        try:
            os.write(handle, b"x")
        finally:
            os.close(handle)
            os.unlink(probe)
    except OSError as e:
        why = DISK_ERRNOS.get(e.errno, e.strerror or str(e))
        if e.errno == 2 and path.is_dir():  # made or there, yet a file cannot be made in it
            why = "it takes no files (a kernel file system, such as /proc or /sys)"
        raise UnusableDirectory(
            f"paddle-infer: {named} cannot be written: {why}; the cache holds exported models "
            f"and the executor's logs: give a directory this user can write, e.g. "
            f"--paddle-cache-dir=~/.cache/paddle-infer") from None


def installation(config):
    """(Capabilities, environment) from the executor, remembered per installation."""
    from ..modes.capabilities import known_installation

    def ask():
        from ..supervise import ExecutorDied

        path = case_path_of(config)
        try:
            found = path.about()
        except ExecutorDied as died:  # no case can run: the session ends saying why, not INTERNALERROR
            tail = f"\nlast lines of its log ({died.log_path}):\n{died.log_tail}" if died.log_tail else ""
            raise usage_error(config, f"paddle-infer: no case can run: {died}{tail}") from None
        if is_xdist_controller(config):  # it runs no case
            path.close()
        return found

    return known_installation(settings_of(config).cache_dir, ask)


def stop_idle_executor(config) -> None:
    """No case after all (-k deselected them): stop the executor a suite's collection started."""
    executor = getattr(config.stash.get(CASE_PATH, None), "executor", None)
    if getattr(executor, "conn", True) is None:  # Executor (not inline), never connected
        executor.close()


def display_path(config, path: Path) -> str:
    """A path as messages show it: relative to where pytest was started, when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path(config.invocation_params.dir).resolve()))
    except ValueError:
        return str(path)


def expects_cases(config, settings) -> bool:
    """Whether the command line names cases: --paddle-model, --paddle-suite, or suite files in its paths."""
    from ..cases.suite_scan import is_suite_name

    if settings.active or settings.suites:
        return True
    base = Path(config.invocation_params.dir)
    for arg in config.args:
        path = base / str(arg).split("::")[0]
        if path.is_file() and is_suite_name(path.name):
            return True
        if path.is_dir() and any(is_suite_name(p.name) for depth in ("*", "*/*", "*/*/*")
                                 for p in path.glob(depth + ".yaml")):
            return True
    return False
