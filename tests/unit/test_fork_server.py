"""fork_server.py: when a server may run and be used, and a forked child supervised like a Popen."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_paddle_infer import fork_server

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux's")


def test_the_installed_cpu_wheel_is_read_as_cpu_only_without_importing_paddle():
    code = ("import sys; from pytest_paddle_infer.fork_server import paddle_is_cpu_only; "
            "print(paddle_is_cpu_only(), 'paddle' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


@pytest.mark.parametrize("text, cpu_only", [
    ("cuda_version     = 'False'\nxpu_version = 'False'\n", True),
    ("cuda_version     = 'False'\nhip_version      = None\nxpu_xre_version  = 'False'\n", True),  # 3.3.1's
    ("cuda_version     = 'False'\nxpu_xre_version  = '5.0.21'\n", False),  # an XPU build
    ("cuda_version     = 'False'\nhip_version      = '5.7'\n", False),  # a ROCm build
    ("cuda_version     = '11.8'\n", False),       # paddlepaddle-gpu 2.6.2's
    ("xpu_version = '2.0'\ncuda_version = 'False'\n", False),
    ("full_version = '3.3.1'\n", False),          # says nothing: not known to be CPU-only
])
def test_a_version_file_says_whether_paddle_is_cpu_only(tmp_path, monkeypatch, text, cpu_only):
    (tmp_path / "paddle" / "version").mkdir(parents=True)
    (tmp_path / "paddle" / "__init__.py").write_text("")
    (tmp_path / "paddle" / "version" / "__init__.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "paddle", raising=False)
    assert fork_server.paddle_is_cpu_only() is cpu_only


def spec(directory, environment=None):
    return json.dumps({"pid": os.getpid(), "directory": str(directory), "key": "00",
                       "environment": environment or fork_server.environment_digest(os.environ)})


def test_a_worker_whose_paddle_environment_differs_does_not_use_the_server(monkeypatch, tmp_path):
    (tmp_path / "ready").write_text("1")
    server = spec(tmp_path)
    monkeypatch.setenv("FLAGS_use_mkldnn", "0")  # read by paddle at import: the server's differs
    assert fork_server.request(server, "addr", "00", tmp_path / "log", "KEY", "entry") is None


def test_the_thread_count_paddle_sets_on_import_is_no_difference(monkeypatch):
    """``import paddle`` sets OMP_NUM_THREADS=1 where it is unset (a process that imported it)."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = fork_server.environment_digest(os.environ)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert fork_server.environment_digest(os.environ) == before
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert fork_server.environment_digest(os.environ) != before


def test_another_venv_of_the_same_python_differs(monkeypatch):
    before = fork_server.environment_digest(os.environ)
    monkeypatch.setattr(sys, "prefix", "/elsewhere/venv")
    assert fork_server.environment_digest(os.environ) != before


def test_a_server_that_refused_is_not_waited_for(tmp_path):
    (tmp_path / "refused").write_text("paddle can use a GPU")
    start = time.monotonic()
    assert fork_server.request(spec(tmp_path), "addr", "00", tmp_path / "log", "KEY", "entry") is None
    assert time.monotonic() - start < 5


def test_a_server_that_died_before_it_was_ready_is_not_waited_for(tmp_path):
    """It writes ``refused`` on its way out: a zombie's pid still answers kill(pid, 0)."""
    out = subprocess.run([sys.executable, "-m", "pytest_paddle_infer.fork_server", str(tmp_path)],
                         env={k: v for k, v in os.environ.items() if k != fork_server.KEY_ENV},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "KeyError" in (tmp_path / "refused").read_text()


def test_a_child_that_ended_without_a_status_is_known_ended(tmp_path):
    """Its server gone (nothing will write the status): after a grace second, an exit."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    child = fork_server.ForkedChild(ended.pid, tmp_path / f"{ended.pid}.status")
    assert child.wait(5) == fork_server.UNKNOWN_EXIT


def test_a_forked_childs_exit_status_comes_from_the_servers_file(tmp_path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    child = fork_server.ForkedChild(sleeper.pid, tmp_path / f"{sleeper.pid}.status")
    assert child.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(0.1)
    child.kill()
    sleeper.wait(10)
    (tmp_path / f"{sleeper.pid}.status").write_text(str(-signal.SIGKILL))  # as the server reaps
    assert child.wait(5) == -signal.SIGKILL


def test_pythonpath_entries_ahead_of_the_servers_are_given_to_the_child(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    server_path = [str(tmp_path / "server")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "builders"), *server_path]))
    assert fork_server._path_ahead(server_path, os.environ, []) == [str(tmp_path / "builders")]
    # the server's own entries missing, or another order: a fresh Python would differ
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "builders"))
    assert fork_server._path_ahead(server_path, os.environ, []) is None
    # an empty entry is the working directory, as Python reads it
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "builders"), "", *server_path]))
    assert fork_server._path_ahead(server_path, os.environ, []) == [str(tmp_path / "builders"), str(tmp_path)]


def test_a_working_directory_that_holds_a_module_the_server_imported_is_refused(tmp_path, monkeypatch):
    """A spawned child would import the working directory's copy first."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert fork_server._path_ahead([], os.environ, ["google"]) == []
    (tmp_path / "google.py").write_text("")
    assert fork_server._path_ahead([], os.environ, ["google"]) is None


def test_an_entry_ahead_that_holds_a_package_the_server_imported_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "..")
    (tmp_path / "numpy").mkdir()
    (tmp_path / "numpy" / "__init__.py").write_text("")  # would shadow the server's numpy
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert fork_server._path_ahead([], os.environ, ["paddle", "numpy"]) is None


COMMAND = '''
import os, sys, time

def main(argv):
    if argv[0] == "echo":
        print("cwd", os.getcwd(), "env", os.environ.get("CHOSEN"), "path0", sys.path[0])
        print("err", file=sys.stderr)
        return int(argv[1])
    if argv[0] == "refuse":
        raise SystemExit("the builder is broken")
    if argv[0] == "hang":
        time.sleep(600)
    if argv[0] == "atexit":
        import atexit
        atexit.register(lambda: open("ended", "w").close())  # as dy2static cleans up at exit
        return 0
'''


@pytest.fixture(scope="module")
def server():
    spec = fork_server.start()
    if not spec:
        pytest.skip("no fork server runs with this paddle (not CPU-only)")
    yield spec
    fork_server.stop(spec)


def test_a_command_child_forked_from_the_server_runs_as_a_spawned_one_would(server, tmp_path, monkeypatch):
    """Its module from a PYTHONPATH entry ahead of the server's, its working directory and
    environment, its stdout and stderr apart, its exit status; SystemExit's message on stderr."""
    from pytest_paddle_infer.children import ChildTimeout

    (tmp_path / "builders").mkdir()
    (tmp_path / "builders" / "forked_command.py").write_text(COMMAND)
    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "CHOSEN": "yes",
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "builders"), *json.loads(server)["path"]])}
    done = fork_server.run_command(server, "forked_command", ["echo", "3"], env, 60)
    assert done is not None, "the server did not fork the command"
    assert done.returncode == 3 and done.stderr.strip() == "err"
    assert done.stdout.split() == ["cwd", str(tmp_path), "env", "yes", "path0", str(tmp_path)]
    refused = fork_server.run_command(server, "forked_command", ["refuse"], env, 60)
    assert refused.returncode == 1 and refused.stderr.strip() == "the builder is broken"
    start = time.monotonic()
    with pytest.raises(ChildTimeout):
        fork_server.run_command(server, "forked_command", ["hang"], env, 1)
    assert time.monotonic() - start < 30
    assert fork_server.run_command(server, "forked_command", ["atexit"], env, 60).returncode == 0
    assert (tmp_path / "ended").exists(), "the child's atexit handlers did not run"
    # nothing of the commands is left in the server's directory
    assert not list(Path(json.loads(server)["directory"]).glob("command-*"))
    # a Paddle setting the server was not started with: not forked (spawn it)
    assert fork_server.run_command(server, "forked_command", ["echo", "0"],
                                   {**env, "FLAGS_enable_pir_api": "0"}, 60) is None
