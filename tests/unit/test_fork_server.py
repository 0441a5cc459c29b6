"""The fork server (execute/fork_server.py): an xdist worker's executor child forked from a
process that imported paddle once, supervised like a spawned one. Real processes: the server
imports paddle, the executor's requests run in the forked child."""
import os
import signal
import subprocess
import sys
import time

import pytest

from pytest_paddle_infer.execute import executor as ex
from pytest_paddle_infer.execute import fork_server

pytestmark = pytest.mark.skipif(not fork_server.available(), reason="fork servers run on Linux only")


@pytest.fixture
def server(monkeypatch, tmp_path):
    """A fork server started as a controller starts it, offered to this process as to a
    worker of that controller."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw9")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(fork_server, "_SERVER", [])
    monkeypatch.setattr(fork_server, "_ASKED", {})
    fork_server.start(ex.child_env())
    proc, directory = fork_server._SERVER[0]
    fork_server.take_offer()
    assert fork_server.ADDRESS_ENV not in os.environ and fork_server.KEY_ENV not in os.environ
    yield proc, directory
    fork_server.stop()


def forked(runner) -> bool:
    """The worker's child was asked for beside (LaterChild) and the server forked it."""
    return isinstance(runner.proc, fork_server.LaterChild) and \
        isinstance(runner.proc.child(), fork_server.ForkedChild)


def executor(tmp_path):
    init = {"cache_dir": str(tmp_path / "cache"), "device": None, "save_goldens": None,
            "update_goldens": False}
    return ex.Executor(init, tmp_path / "logs", timeout=60)


def test_a_workers_child_is_forked_and_answers(server, tmp_path):
    runner = executor(tmp_path)
    caps, _ = runner.call("about")
    assert forked(runner)
    assert runner.proc.pid != server[0].pid and caps is not None
    # the worker's working directory and environment, not the server's
    assert os.readlink(f"/proc/{runner.proc.pid}/cwd") == os.getcwd()
    assert runner.log_path.is_file()
    runner.close()
    assert not runner.log_path.exists()  # a clean close, as with a spawned child


@pytest.mark.parametrize("how, text", [(signal.SIGSEGV, "was killed by SIGSEGV"),
                                       (signal.SIGABRT, "was killed by SIGABRT")])
def test_a_forked_child_that_dies_is_reported_with_its_signal(server, tmp_path, how, text):
    runner = executor(tmp_path)
    runner.call("about")
    pid = runner.proc.pid
    os.kill(pid, how)
    with pytest.raises(ex.ExecutorDied, match=text):
        runner.call("about")
    assert runner.proc is None
    runner.call("about")  # the next request gets a fresh child, forked again
    assert forked(runner) and runner.proc.pid != pid
    runner.close()


def test_an_exit_status_and_a_wait_timeout(server, tmp_path):
    from multiprocessing.connection import Listener

    child = fork_server.fork(str(tmp_path / "nobody-listens"), b"k" * 16, str(tmp_path / "log"),
                             ex.child_env(), ex.same_session)
    assert isinstance(child, fork_server.ForkedChild)
    # it cannot connect to that address: its executor loop raises, and it exits with 1
    assert child.wait(30) == 1 and child.poll() == 1
    assert "Traceback" in (tmp_path / "log").read_text()
    with Listener(str(tmp_path / "never-accepts"), authkey=b"k" * 16) as listener:
        waiting = fork_server.fork(listener.address, b"k" * 16, str(tmp_path / "log2"),
                                   ex.child_env(), ex.same_session)
        with pytest.raises(subprocess.TimeoutExpired):  # connected, waits for its handshake
            waiting.wait(0.5)
        waiting.kill()
        assert waiting.wait(30) == -signal.SIGKILL


def test_a_worker_with_another_environment_starts_its_own_child(server, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGS_use_mkldnn", "0")  # paddle reads FLAGS_* at import: not the server's
    runner = executor(tmp_path)
    runner.call("about")
    assert isinstance(runner.proc.child(), subprocess.Popen)
    assert fork_server._ASKED == {}  # not asked again: it would not match later either
    runner.close()


def test_a_worker_on_another_python_starts_its_own_child(server, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "executable", sys.executable + "-other")  # --tx popen//python=...
    assert fork_server.fork("a", b"k" * 16, str(tmp_path / "log"), ex.child_env(), ex.same_session) is None


def test_the_server_ends_with_its_controller(server):
    proc, directory = server
    fork_server.stop()
    assert proc.wait(30) == 0
    assert not os.path.exists(directory)


def test_a_child_outlives_its_server_and_is_still_supervised(server, tmp_path):
    runner = executor(tmp_path)
    runner.call("about")
    fork_server.stop()  # the server is gone: its report can no longer come
    server[0].wait(30)
    assert runner.proc.poll() is None  # still alive, told by its pid
    runner.proc.kill()
    deadline = time.monotonic() + 30
    while runner.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert runner.proc.returncode is not None
    assert "how is not known" in runner.proc.how
    runner._discard()


def test_no_server_off_linux_or_outside_xdist(monkeypatch):
    monkeypatch.setattr(fork_server, "_ASKED", {})
    monkeypatch.setenv(fork_server.ADDRESS_ENV, "123:/somewhere")
    monkeypatch.setenv(fork_server.KEY_ENV, "00" * 16)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    fork_server.take_offer()  # not a worker: dropped, not taken
    assert fork_server._ASKED == {} and fork_server.ADDRESS_ENV not in os.environ
    assert fork_server.fork("x", b"k", "log", {}, ex.same_session) is None
    monkeypatch.setattr(sys, "platform", "darwin")
    assert not fork_server.available()


def test_a_forked_child_takes_the_workers_log_directory_and_environment(tmp_path):
    """What the server's child does right after the fork, in a forked process of this test."""
    (tmp_path / "cwd").mkdir()
    request = {"log": str(tmp_path / "log"), "cwd": str(tmp_path / "cwd"), "address": "a", "key": "6b",
               "env": {"ONLY_THE_WORKERS": "1", "OMP_NUM_THREADS": "1"}}
    out = tmp_path / "seen"

    def serve_executor(address, key):
        os.write(1, b"to the log\n")  # fd 1: pytest captures sys.stdout here
        out.write_text(repr((address, key, os.getcwd(), dict(os.environ))))
        return 3

    pid = os.fork()
    if pid == 0:
        fork_server._become_executor(request, [], serve_executor)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 3
    address, key, cwd, env = eval(out.read_text())
    assert (address, key, cwd) == ("a", b"k", str(tmp_path / "cwd"))
    assert env == request["env"]  # the worker's, nothing of the server's
    assert (tmp_path / "log").read_text() == "to the log\n"


def test_a_dead_server_is_not_waited_for(server, tmp_path):
    server[0].kill()
    server[0].wait()
    start = time.monotonic()
    assert fork_server.fork("a", b"k" * 16, str(tmp_path / "log"), ex.child_env(), ex.same_session) is None
    assert time.monotonic() - start < 5


def test_a_stuck_or_vanishing_worker_does_not_stop_the_server(server, tmp_path):
    import socket
    from multiprocessing.connection import Connection

    address, key = fork_server._ASKED["address"], bytes.fromhex(fork_server._ASKED["key"])
    stuck = socket.socket(socket.AF_UNIX)
    stuck.connect(address)  # never answers the server's greeting
    gone = fork_server._connect(address, server[0].pid, key)
    gone.recv()
    gone.send({"address": str(tmp_path / "nobody"), "key": "00", "log": str(tmp_path / "log0"),
               "env": ex.child_env(), "cwd": os.getcwd()})
    gone.close()  # before the server sends the child's pid
    runner = executor(tmp_path)
    runner.call("about")  # served after the stuck one's answer time ran out
    assert forked(runner) and server[0].poll() is None
    runner.close()
    stuck.close()


def test_waiting_on_a_child_whose_server_is_gone_does_not_spin(server, tmp_path):
    runner = executor(tmp_path)
    runner.call("about")
    fork_server.stop()
    server[0].wait(30)
    cpu = time.process_time()
    with pytest.raises(subprocess.TimeoutExpired):
        runner.proc.wait(1)
    assert time.process_time() - cpu < 0.3
    runner.proc.kill()
    assert runner.proc.wait(30) == 1 and "not known" in runner.proc.how
    runner._discard()


def test_a_worker_goes_on_while_its_server_is_busy(server, tmp_path):
    """The child is asked for beside (LaterChild): a worker whose server cannot answer yet
    (here: stopped, as if still importing paddle) is not held up at its plugin import; its
    first request waits for the child, which the server forks once it can."""
    os.kill(server[0].pid, signal.SIGSTOP)
    try:
        start = time.monotonic()
        ex.start_early()
        assert time.monotonic() - start < 5  # not the server's greeting time
        early = ex._EARLY[-1][1]
        assert isinstance(early, fork_server.LaterChild) and early._thread.is_alive()
    finally:
        os.kill(server[0].pid, signal.SIGCONT)
    runner = executor(tmp_path)
    runner.call("about")
    assert runner.adopted_early and runner.proc is early and forked(runner)
    assert runner.log_path.parent == tmp_path / "logs"  # moved once the child connected
    runner.close()
    assert not runner.log_path.exists()


def test_a_child_killed_before_it_was_started_is_never_started(server, tmp_path, monkeypatch):
    """The server gave no child (another Python): killing the one asked for starts none."""
    monkeypatch.setattr(sys, "executable", sys.executable + "-other")
    started = []
    later = fork_server.LaterChild(
        lambda: fork_server.fork("a", b"k" * 16, str(tmp_path / "log"), ex.child_env(), ex.same_session),
        lambda: started.append(1))
    later.kill()
    assert later.poll() == later.wait() == -signal.SIGKILL and later.child().pid is None
    assert started == []
