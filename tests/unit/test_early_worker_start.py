"""xdist: which controller command lines make the workers start their executor child at
plugin import (early_start.py), and which environment changes between that start and the
child's adoption still let a worker adopt it (executor.same_session)."""
import os

import pytest

from pytest_paddle_infer.execute import early_start
from pytest_paddle_infer.execute.early_start import EARLY_WORKER_ENV, wants_early_workers
from pytest_paddle_infer.execute.executor import same_session


@pytest.fixture
def suites_dir(tmp_path, monkeypatch):
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "cpu.paddle.yaml").write_text("models: {}\n")
    (tmp_path / "tests" / "deep").mkdir(parents=True)
    (tmp_path / "tests" / "deep" / "paddle_deep.yaml").write_text("models: {}\n")
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("argv, early", [
    (["--paddle-model=tiny_cnn", "-n", "2"], True),
    (["--paddle-model", "tiny_cnn", "-n2"], True),
    (["--paddle-model=tiny_cnn", "--numprocesses=auto"], True),
    (["--paddle-model=tiny_cnn", "--dist", "loadgroup"], True),
    (["sweep.paddle.yaml", "-n", "2"], True),                     # a suite by name, even not there yet
    (["paddle_sweep.yaml::tiny_cnn[1x3x32x32-cpu_fp32]", "-n", "2"], True),
    (["--paddle-suite", "checks.yaml", "-n", "2"], True),
    (["suites", "-n", "2"], True),                                # a directory holding a suite
    (["tests", "-n", "2"], False),                                # suites only deeper: not walked
    ([".", "-n", "2"], False),                                    # no suite right there
    (["-n", "2"], False),                                         # testpaths/ini: not read
    (["--paddle-model=tiny_cnn"], False),                         # plain: wants_early_executor's
    (["sweep.paddle.yaml"], False),
    (["--paddle-model=tiny_cnn", "-n", "0"], False),              # xdist off: a plain session's
    (["--paddle-model=tiny_cnn", "-n0"], False),
    (["--paddle-model=tiny_cnn", "--dist=no"], False),
    (["--paddle-model=tiny_cnn", "-n", "2", "--co"], False),
    (["--paddle-model=tiny_cnn", "-n", "2", "--help"], False),
    (["--paddle-model=tiny_cnn", "-n", "2", "--version"], False),
    (["--paddle-model=tiny_cnn", "-n", "2", "--paddle-executor=inline"], False),
    (["tests", "--ignore", "sweep.paddle.yaml", "-n", "2"], False),  # a path option's value
    (["tests", "--deselect=sweep.paddle.yaml", "-n", "2"], False),
])
def test_controller_asks_its_workers_to_start_early(suites_dir, argv, early):
    assert wants_early_workers(argv) is early


@pytest.mark.parametrize("argv", [["--paddle-model=tiny_cnn", "-n", "0"],
                                  ["--paddle-model=tiny_cnn", "--dist=no"]])
def test_xdist_off_is_a_plain_session(argv):
    assert early_start.wants_early_executor(argv) and not wants_early_workers(argv)


def test_only_the_controllers_own_workers_start_early(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    monkeypatch.setenv(EARLY_WORKER_ENV, str(os.getppid()))
    assert early_start.is_early_worker() and EARLY_WORKER_ENV not in os.environ  # dropped
    monkeypatch.setenv(EARLY_WORKER_ENV, str(os.getpid()))  # a grandchild: a test's subprocess
    assert not early_start.is_early_worker() and EARLY_WORKER_ENV not in os.environ
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    monkeypatch.setenv(EARLY_WORKER_ENV, str(os.getppid()))  # not an xdist worker
    assert not early_start.is_early_worker()


def test_a_controller_marks_its_environment_and_starts_a_fork_server(monkeypatch):
    from pytest_paddle_infer.execute import fork_server

    monkeypatch.setenv(EARLY_WORKER_ENV, "")  # undone after the test: set, or not, as before
    monkeypatch.setattr(fork_server, "_SERVER", [])
    for name in (fork_server.ADDRESS_ENV, fork_server.KEY_ENV):
        monkeypatch.delenv(name, raising=False)
    try:
        early_start.start_if_asked(["--paddle-model=tiny_cnn", "-n", "2"])
        assert os.environ[EARLY_WORKER_ENV] == str(os.getpid())
        assert len(fork_server._SERVER) == fork_server.available()  # Linux only
        if fork_server._SERVER:
            proc, directory = fork_server._SERVER[0]
            assert os.environ[fork_server.ADDRESS_ENV] == f"{proc.pid}:{directory}/server"
    finally:
        fork_server.stop()
    assert fork_server.ADDRESS_ENV not in os.environ


BASE = ({"PATH": "/usr/bin", "OMP_NUM_THREADS": "1"}, "/work")


@pytest.mark.parametrize("changed, same", [
    ({"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2",
      "PYTEST_XDIST_TESTRUNUID": "abc"}, True),                  # xdist's own, set by then
    ({EARLY_WORKER_ENV: "1234"}, True),                           # the controller's marker
    ({"FLAGS_use_mkldnn": "0"}, False),                           # Paddle reads it at import
    ({"OMP_NUM_THREADS": "4"}, False),
    ({"PYTEST_XDIST_WORKER": "gw1", "FLAGS_call_stack_level": "2"}, False),
])
def test_adoption_ignores_xdist_keys_only(changed, same):
    assert same_session(BASE, (dict(BASE[0], **changed), BASE[1])) is same
    assert same_session((dict(BASE[0], **changed), BASE[1]), BASE) is same  # set, or unset


def test_adoption_needs_the_same_cwd():
    assert not same_session(BASE, (dict(BASE[0]), "/elsewhere"))


def test_a_worker_adopts_its_early_child_after_xdist_sets_its_keys(tmp_path, monkeypatch):
    from pytest_paddle_infer.execute import executor as ex

    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setenv(EARLY_WORKER_ENV, "1234")  # the controller's, never the child's
    ex.start_early()
    early = ex._EARLY[-1][1]
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw7")
    monkeypatch.delenv(EARLY_WORKER_ENV)
    executor = ex.Executor({}, tmp_path / "logs", timeout=30)
    try:
        if os.path.exists(f"/proc/{early.pid}/environ"):
            with open(f"/proc/{early.pid}/environ", "rb") as f:
                assert EARLY_WORKER_ENV.encode() not in f.read()
        executor.start()
        assert executor.proc is early and executor.adopted_early and not ex._EARLY
    finally:
        executor.close()
        ex.discard_early()
    assert early.poll() is not None
