"""fork_server.py: when a server may run and be used, and a forked child supervised like a Popen."""
import json
import os
import signal
import subprocess
import sys
import time

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
