"""Fixtures for tests/unit and tests/integration: one model export cache for the whole test
session (and every xdist worker), and a runner for end-to-end pytest sessions that can add
``-n 2``. Helper functions live in helpers.py (``import helpers``)."""
from __future__ import annotations

import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import List

import pytest

# tests/gpu_wheel runs in a venv with paddlepaddle-gpu 2.6.2 (.ci/run): `pytest tests` leaves it
# out, `pytest tests/gpu_wheel` (a path given) collects it
collect_ignore = ["gpu_wheel"]

TEST_CACHE = Path(os.environ.get(
    "PADDLE_INFER_TEST_CACHE", Path(__file__).resolve().parent.parent / ".pytest_cache" / "paddle-infer-tests"))


@pytest.fixture(scope="session")
def paddle_cache() -> Path:
    from pytest_paddle_infer.ownership import marker_kind, write_marker

    TEST_CACHE.mkdir(parents=True, exist_ok=True)
    if marker_kind(TEST_CACHE) != "cache":  # the tests' own cache, made before markers were
        write_marker(TEST_CACHE, "cache")
    return TEST_CACHE


@pytest.fixture(scope="session")
def paddle_in_process():
    """Paddle imported into the test process itself, for end-to-end tests that also call Paddle
    directly: a session fixture is set up before ``pytester`` snapshots ``sys.modules``, so
    pytester does not drop paddle at the test's end (a second import of its C extension in
    one process fails: "'paddle.base.libpaddle' is not a package")."""
    import paddle

    return paddle


@pytest.fixture
def cpu_without_bf16(monkeypatch):
    """The sessions this test starts (``run_pytest``) and Paddle's capabilities in this
    process take this CPU as one without bf16, whatever it has: ``onednn_bf16`` skips as on
    an AVX2 CPU. For tests of that skip, which then run on every CPU (the plugin reads
    ``capabilities.NO_BF16_ENV`` for this alone). Tests of bf16 itself take ``bf16_cpu``."""
    from pytest_paddle_infer.modes.capabilities import NO_BF16_ENV, detect

    monkeypatch.setenv(NO_BF16_ENV, "1")
    detect.cache_clear()  # detect() asks Paddle once per process
    yield
    detect.cache_clear()


@pytest.fixture
def bf16_cpu():
    """Skips the test, naming the CPU, unless ``onednn_bf16`` really runs here: for tests
    of bf16 itself (its evidence, its figures). ``helpers.cpu_lacks_bf16`` says why."""
    from helpers import cpu_lacks_bf16

    reason = cpu_lacks_bf16()
    if reason:
        pytest.skip(reason)


@pytest.fixture(params=["n0", "n2"])
def xdist_mode(request) -> List[str]:
    """Every end-to-end test runs without and with ``-n 2``."""
    return [] if request.param == "n0" else ["-n", "2"]


@pytest.fixture(scope="session")
def result_readers_in_process():
    """numpy and the modules that read a case's result, imported into the test process
    before ``pytester`` snapshots ``sys.modules``: a session run in process imports them, and
    pytester would drop them at the test's end (numpy's C extension cannot load twice in one
    process: "cannot load module more than once per process")."""
    import numpy

    # and the modules that keep the process's children (closed executors still exiting, the
    # fork server, children with a deadline): dropped, their lists would be lost with them
    from pytest_paddle_infer import children, fork_server, protocol, supervise  # noqa: F401
    from pytest_paddle_infer.report import text  # noqa: F401

    return numpy


START_ENV, START_DIR = dict(os.environ), os.getcwd()  # before any test changes them


@pytest.fixture(scope="session")
def fork_server_to_lend():
    """One fork server (fork_server.py) for the sessions this test process starts: their
    executors fork from one import of paddle instead of importing it, about 4 s each. ""
    where none may run (a GPU-capable paddle, not Linux)."""
    from helpers import LENT_SERVERS, TAG_ENV
    from pytest_paddle_infer import fork_server

    with pytest.MonkeyPatch.context() as clean:  # the run's environment, not the first test's
        for name in set(os.environ) - set(START_ENV):
            clean.delenv(name)
        for name, value in START_ENV.items():
            clean.setenv(name, value)
        clean.delenv(TAG_ENV, raising=False)  # it outlives the test that starts it
        clean.chdir(START_DIR)
        spec = fork_server.start()
    if spec:
        LENT_SERVERS.add(json.loads(spec)["pid"])
    yield spec
    if spec:
        fork_server.stop(spec)


@pytest.fixture
def lend_fork_server(request, monkeypatch):
    """The sessions ``run_pytest`` starts fork their executors from ``fork_server_to_lend``,
    unless the test is marked ``spawned_executors`` (tests of how executors start and end)."""
    from pytest_paddle_infer.fork_server import SPEC_ENV

    if request.node.get_closest_marker("spawned_executors"):
        monkeypatch.delenv(SPEC_ENV, raising=False)
        return
    spec = request.getfixturevalue("fork_server_to_lend")
    if spec:
        monkeypatch.setenv(SPEC_ENV, spec)


@pytest.fixture
def run_pytest(request, result_readers_in_process, pytester, paddle_cache, lend_fork_server):
    """Run a pytest session with the shared export cache: in a subprocess, or, in a module
    marked ``sessions_in_process``, in this process (``run_pytest_inline``)."""
    if request.node.get_closest_marker("sessions_in_process"):
        return request.getfixturevalue("run_pytest_inline")

    def run(*args: str):
        return pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", f"--paddle-cache-dir={paddle_cache}", *args)

    return run


@pytest.fixture
def run_pytest_inline(result_readers_in_process, pytester, paddle_cache, lend_fork_server):
    """Run a pytest session in this process (``pytester.runpytest_inprocess``) with the shared
    export cache: a process of its own would cost its start-up (Python, pytest, the plugins)
    and test nothing more. Paddle still runs in the session's executor child, closed at the
    session's end; xdist workers (``-n 2``) are processes as ever. Paddle must stay out of
    this process (pytester drops what a test imported, and paddle's C extension cannot be
    imported twice): ``--paddle-executor=inline`` sessions run in a subprocess, and a session
    that imported paddle here anyway (the plugin's Paddle fixtures do) fails the test."""

    def run(*args: str):
        base = ("-p", "no:cacheprovider", f"--paddle-cache-dir={paddle_cache}")
        if "--paddle-executor=inline" in args:
            return pytester.runpytest_subprocess(*base, *args)
        had_paddle = "paddle" in sys.modules
        result = pytester.runpytest_inprocess(*base, *args)
        assert had_paddle or "paddle" not in sys.modules, \
            "this session imported paddle into the test process: run it in a subprocess"
        return result

    return run


def pytest_configure(config):
    config.addinivalue_line("markers", "resnet50: runs the full-size ResNet50 (slower)")
    config.addinivalue_line("markers", "sessions_in_process: run_pytest runs its sessions in the test "
                            "process (run_pytest_inline)")
    config.addinivalue_line("markers", "spawned_executors: the sessions run_pytest starts spawn their "
                            "executors (no fork server lent to them)")


@pytest.fixture
def tag(monkeypatch):
    from helpers import TAG_ENV, cmdline, leftovers

    """Tags every process the test starts; afterwards none may remain (a closed executor
    may take a few seconds to exit)."""
    value = uuid.uuid4().hex
    monkeypatch.setenv(TAG_ENV, value)
    yield value
    deadline = time.monotonic() + 30
    while leftovers(value) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = leftovers(value)
    described = [f"{pid}: {cmdline(pid)}" for pid in left]
    for pid in left:  # leave the machine clean for the next test
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, "processes outlived the session:\n" + "\n".join(described)
