"""Children forked from one process that imported paddle (CPU-only Paddle, Linux): xdist
workers' executors and the command children (exporter, signature probe, baselines, prune
steps, trials) skip paddle's import, about 4.5 s of CPU each. The xdist controller starts
the server before its workers and tells them where it is (workerinput); a process may also
lend its server to the sessions it starts (``SPEC_ENV``: the project's tests).

A CUDA build's import initialises CUDA, which a forked child cannot use: the server runs only
where paddle's version file says CPU-only, re-checks after its import and then refuses. A
requester whose environment differs, or whose server is absent, refused, slow or gone, spawns
its own child. The server exits with the process that started it; forked children's exit
statuses go to files the requesters read (``ForkedChild``, supervised as a ``subprocess.Popen``).
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Dict, Optional

KEY_ENV = "PADDLE_INFER_FORK_SERVER_KEY"  # the server's key, given to the server alone
PREFIX = "paddle-infer-fork-"  # its directory in the temp dir
OFF_ENV = "PADDLE_INFER_NO_FORK_SERVER"  # set (to anything): never start or use one
SPEC_ENV = "PADDLE_INFER_FORK_SERVER"  # a server's spec, lent to the sessions a process starts
ENGINE = "pytest_paddle_infer.engine.service"  # what the children run (supervise.ENGINE_ENTRY)
READY_SECONDS = 120.0  # how long a worker waits for the server to finish importing paddle
# environment that changes what `import paddle` sets up: a worker differing here spawns
PADDLE_ENV_PREFIXES = ("FLAGS_", "GLOG_", "OMP_", "MKL_", "KMP_", "CUDA_", "LD_", "PYTHON",
                       "DNNL_", "ONEDNN_", "PADDLE_")
_SERVERS: Dict[str, tuple] = {}  # this process's: spec -> (process, directory)
UNKNOWN_EXIT = -9  # a child that ended with no status recorded (its server is gone): as SIGKILL


def paddle_is_cpu_only() -> bool:
    """paddle/version/__init__.py says it was built without CUDA, ROCm and XPU (read as text)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("paddle")
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.submodule_search_locations:
        return False
    version = Path(list(spec.submodule_search_locations)[0]) / "version" / "__init__.py"
    try:
        text = version.read_text()
    except OSError:
        return False
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip().isidentifier():
            values[key.strip()] = value.strip().strip("'\"")
    def off(*keys):  # absent, or built without it
        return all(values.get(k, "False") in ("False", "None", "") for k in keys)

    return (values.get("cuda_version") == "False" and off("xpu_version", "xpu_xre_version", "hip_version",
                                                         "rocm_version") and "with_gpu" not in values)


def available() -> bool:
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and not os.environ.get(OFF_ENV)
            and paddle_is_cpu_only())


# PYTHONPATH is compared apart (``_path_ahead``); GLOG_minloglevel changes only what is logged
UNCOMPARED = ("PYTHONPATH", "GLOG_minloglevel")


def environment_digest(env) -> str:
    """What of an environment `import paddle` reads, and the Python (path and prefixes)."""
    env = {"OMP_NUM_THREADS": "1", **env}  # what `import paddle` sets where it is unset
    kept = sorted((k, v) for k, v in env.items() if k.startswith(PADDLE_ENV_PREFIXES)
                  and not k.startswith("PADDLE_INFER_") and k not in UNCOMPARED)
    python = (os.path.abspath(sys.executable), sys.prefix, sys.exec_prefix)
    return hashlib.sha256(repr((python, kept)).encode()).hexdigest()[:16]


# -- the controller --------------------------------------------------------------------------


def lent() -> str:
    """The spec of a server an enclosing process lends this one, "" where none (or turned off)."""
    return "" if os.environ.get(OFF_ENV) else os.environ.get(SPEC_ENV, "")


_FOR_CHILDREN: list = []  # the spec this process's command children fork from (run_command)


def serve_children_from(spec: str) -> None:
    """The session's server (an xdist worker's controller's, or a lent one), or "": none."""
    _FOR_CHILDREN[:] = [spec] if spec else []


def for_children() -> str:
    return _FOR_CHILDREN[0] if _FOR_CHILDREN else lent()


def _python_path(env) -> list:
    value = env.get("PYTHONPATH", "")  # an empty entry is the working directory, as Python reads it
    return [os.path.abspath(p) for p in value.split(os.pathsep)] if value else []


def _path_ahead(server_path: list, env, imported) -> Optional[list]:
    """The entries ``env``'s PYTHONPATH puts ahead of the server's (pytester's working
    directory, a suite's builder directory), or None where the rest differs, or where they or
    the working directory hold a module the server imported (a forked child would run the
    server's, a spawned one theirs)."""
    from importlib.machinery import PathFinder

    path = _python_path(env)
    if env.get("PYTHONSAFEPATH") or path[len(path) - len(server_path):] != server_path:
        return None
    ahead = path[:len(path) - len(server_path)]
    if any(PathFinder.find_spec(name, [os.getcwd(), *ahead]) for name in imported):
        return None
    return ahead


def start() -> str:
    """Start a server; its spec for the workers, "" where none runs."""
    if not available():
        return ""
    from . import scratch

    scratch.sweep(prefix=PREFIX)  # what a killed session's server left
    try:
        directory = str(scratch.make(PREFIX))
    except OSError:  # an unwritable temp dir: the workers spawn their own children
        return ""
    key = secrets.token_hex(16)
    try:
        proc = subprocess.Popen([sys.executable, "-m", __name__, directory], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                # the environment a spawned executor child gets (supervise.py)
                                env={"GLOG_minloglevel": "1", **os.environ, KEY_ENV: key})
    except OSError:
        scratch.remove(Path(directory))
        return ""
    spec = json.dumps({"pid": proc.pid, "directory": directory, "key": key,
                       "environment": environment_digest(os.environ), "path": _python_path(os.environ)})
    _SERVERS[spec] = (proc, directory)
    return spec


def stop(spec: str) -> None:
    """The end of the server ``start`` gave ``spec`` for; children it forked are the workers' to close."""
    if spec in _SERVERS:
        proc, directory = _SERVERS.pop(spec)
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        from .scratch import remove

        remove(Path(directory))


# -- a worker --------------------------------------------------------------------------------


class ForkedChild:
    """An executor child the server forked, supervised like a Popen: its status from the server's file."""

    def __init__(self, pid: int, status_file: Path):
        self.pid = pid
        self.status_file = status_file
        self.returncode: Optional[int] = None
        self._gone_since: Optional[float] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            try:
                self.returncode = int(self.status_file.read_text())
            except (OSError, ValueError):
                if _alive(self.pid):
                    return None
                # reaped: its status is written at once, unless its server is gone
                now = time.monotonic()
                self._gone_since = self._gone_since or now
                if now - self._gone_since > 1.0:
                    self.returncode = UNKNOWN_EXIT
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"forked executor {self.pid}", timeout)
            time.sleep(0.02)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is not None:  # reaped: its pid may be another process's by now
            return
        with suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)

    terminate = kill


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def request(spec: str, address: str, authkey: str, log_path: Path, authkey_env: str,
            entry: str) -> Optional[ForkedChild]:
    """An executor child from the server of ``spec``, connecting to ``address``; None: spawn one."""
    from .children import child_env

    return _ask(spec, {"address": address, "authkey": authkey, "authkey_env": authkey_env,
                       "entry": entry, "log": str(log_path), "env": child_env()})


def run_command(spec: str, module: str, args, env: dict, timeout: Optional[float]):
    """``python -m module *args`` with ``env``, forked from the server of ``spec`` (its own
    session and process group, stdout and stderr captured): a CompletedProcess, or None where
    the server cannot run it (spawn it). Past ``timeout`` seconds: children.ChildTimeout."""
    from .children import ChildTimeout, child_env

    try:  # its output in the server's directory, which goes with the server
        out = Path(json.loads(spec)["directory"]) / f"command-{secrets.token_hex(8)}.out"
    except (ValueError, TypeError, KeyError):
        return None
    err = out.with_suffix(".err")
    try:
        child = _ask(spec, {"entry": module, "argv": [str(a) for a in args], "log": str(out),
                            "stderr": str(err), "env": child_env(env)})
        if child is None:
            return None
        try:
            child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            raise ChildTimeout(timeout) from None
        except BaseException:
            child.kill()
            raise
        finally:
            with suppress(ProcessLookupError, PermissionError):  # what it left in its group
                os.killpg(child.pid, signal.SIGKILL)
        return subprocess.CompletedProcess([sys.executable, "-m", module, *args], child.returncode,
                                           out.read_text(errors="replace"), err.read_text(errors="replace"))
    finally:
        for name in (out, err):
            name.unlink(missing_ok=True)


def _ask(spec: str, wanted: dict) -> Optional[ForkedChild]:
    try:
        found = json.loads(spec)
        pid, directory, key = int(found["pid"]), Path(found["directory"]), str(found["key"])
    except (ValueError, TypeError, KeyError):
        return None
    if found.get("environment") != environment_digest(wanted["env"]) or not directory.is_dir():
        return None
    deadline = time.monotonic() + READY_SECONDS
    while not (directory / "ready").exists():
        if (directory / "refused").exists() or not _alive(pid) or time.monotonic() > deadline:
            return None
        time.sleep(0.05)
    ahead = _path_ahead(found.get("path", []), wanted["env"], (directory / "ready").read_text().split())
    if ahead is None:
        return None
    from multiprocessing.connection import Client

    try:
        with Client(str(directory / "socket"), family="AF_UNIX", authkey=bytes.fromhex(key)) as conn:
            conn.send({**wanted, "cwd": os.getcwd(), "path_ahead": ahead})
            if not conn.poll(30):
                return None
            child = conn.recv()
    except (OSError, EOFError, ValueError):
        return None
    return ForkedChild(child, directory / f"{child}.status") if isinstance(child, int) else None


# -- the server ------------------------------------------------------------------------------


def _reap(directory: Path) -> None:
    """SIGCHLD: write each ended child's status (Popen's convention: -N for signal N)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        tmp = directory / f"{pid}.status.tmp"
        tmp.write_text(str(os.waitstatus_to_exitcode(status)))
        os.replace(tmp, directory / f"{pid}.status")


def _paddle_uses_a_device(paddle) -> bool:
    checks = ("is_compiled_with_cuda", "is_compiled_with_rocm", "is_compiled_with_xpu")
    if any(getattr(paddle, name, lambda: False)() for name in checks):
        return True
    try:
        return bool(paddle.device.get_all_custom_device_type())
    except Exception:
        return False


def _child(request: Dict, listener, conn) -> None:
    """In the forked child: become the worker's executor, or run a command child; then exit."""
    import atexit

    code = 1
    try:
        atexit._clear()  # the server's handlers are not the child's; its own run at its end
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig in (signal.SIGCHLD, signal.SIGALRM, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        listener.close()
        conn.close()
        command = "argv" in request  # a command child (run_command), else an executor
        if command:
            os.setsid()  # a group of its own, as children.start gives a spawned one
        for fd, name in ((1, "log"), (2, "stderr" if command else "log")):
            out = os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(out, fd)
            os.close(out)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # the path `python -m` would give it: its working directory first, then its PYTHONPATH
        sys.path[:1] = [request["cwd"], *request["path_ahead"]]
        import importlib

        module = importlib.import_module(request["entry"])
        if command:
            sys.argv = [request["entry"], *request["argv"]]
            code = module.main(request["argv"])
        else:
            os.environ[request["authkey_env"]] = request["authkey"]
            sys.argv = [request["entry"], request["address"]]
            code = module.main()
    except SystemExit as e:  # as the interpreter ends on it: a message goes to stderr, status 1
        code = e.code
        if not (code is None or isinstance(code, int)):
            print(code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with suppress(BaseException):
            atexit._run_exitfuncs()  # as at an interpreter's end (dy2static removes its files)
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code if isinstance(code, int) else int(code is not None))


def serve(directory: Path) -> int:
    """Import paddle and the engine, then fork a child per request until the controller goes."""
    try:
        return _serve(directory)
    except BaseException as e:  # the workers spawn their own children
        (directory / "refused").write_text(f"{type(e).__name__}: {e}")
        raise


def _serve(directory: Path) -> int:
    from multiprocessing.connection import Listener

    key = bytes.fromhex(os.environ.pop(KEY_ENV))
    parent = os.getppid()

    def orphaned(*_):
        if os.getppid() != parent:  # the controller is gone: so is the session
            shutil.rmtree(directory, ignore_errors=True)
            os._exit(0)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the controller's to handle
    signal.signal(signal.SIGALRM, orphaned)
    signal.setitimer(signal.ITIMER_REAL, 1.0, 1.0)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    from .modes.capabilities import import_paddle

    paddle = import_paddle()
    if _paddle_uses_a_device(paddle):  # never fork after a device-capable import
        (directory / "refused").write_text("paddle can use a GPU or another device here")
        return 0
    import importlib

    importlib.import_module(ENGINE)  # the engine's modules, loaded once for every child
    signal.signal(signal.SIGCHLD, lambda *_: _reap(directory))
    listener = Listener(str(directory / "socket"), family="AF_UNIX", authkey=key)
    # ready: the top-level modules it imported, which no requester's path may shadow
    (directory / "ready").write_text("\n".join(sorted({n.split(".")[0] for n in sys.modules if n[0] != "_"})))
    while True:
        try:
            conn = listener.accept()
        except Exception:  # a worker that failed the handshake or went away
            continue
        with conn:
            try:
                wanted = conn.recv()
                # no status of this pid's may be read before it is recorded (an earlier one's)
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
                try:
                    pid = os.fork()
                    if pid == 0:
                        try:
                            _child(wanted, listener, conn)
                        finally:  # never back into this loop
                            os._exit(70)
                    (directory / f"{pid}.status").unlink(missing_ok=True)
                finally:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
                conn.send(pid)
            except Exception:  # a worker gone, a fork refused: it spawns its own child
                continue


if __name__ == "__main__":
    sys.exit(serve(Path(sys.argv[1])))
