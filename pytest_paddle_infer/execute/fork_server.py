"""Executor children for xdist workers, forked from one process that has imported paddle.

Each xdist worker needs its own executor child, and a child spent about 1.2 s importing
paddle before its first case, while the workers were starting too: on a 2-core machine
every import competes with them for the CPUs. On Linux, an xdist controller whose command
line shows cases (early_start.py) starts this server at its plugin import, before it
spawns the workers; the server imports paddle and the executor's modules once, then forks
a child for each worker that asks. The child is an executor like one started on its own
(``executor.serve``): its log, working directory and environment are the worker's, and
paddle was imported with the same environment (a worker whose environment differs, say
FLAGS_* set by a conftest, or whose Python is another, starts its own child instead).

The worker is not the child's parent, so the server reports each child's exit (a signal,
a status) to the worker that asked for it (``ForkedChild``, which the executor supervises
as it would a ``subprocess.Popen``). The server ends when the controller closes its stdin.
Only the controller starts it, and only on Linux: macOS forbids fork after its frameworks
load, and Windows has no fork.
"""
from __future__ import annotations

import hmac
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection, wait
from typing import Dict, Optional

# set by the controller: the server's pid and address, and its key (hex); workers drop both
from .early_start import FORK_SERVER_ENV as ADDRESS_ENV, FORK_SERVER_KEY_ENV as KEY_ENV

GREETING_SECONDS = 120.0  # how long a worker waits for the server, alive, to import paddle
ANSWER_SECONDS = 5.0  # how long the server waits for a worker's answer (others are waiting)
_SERVER: list = []  # the controller's: (process, directory)
_ASKED: dict = {}  # a worker's: the address and key it found, kept for restarts


def available() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork")


# -- the controller --------------------------------------------------------------------


def start(child_env: Dict[str, str]) -> None:
    """Start the server with the environment a worker's child would get; the workers this
    process spawns find it through their environment."""
    if _SERVER or not available():
        return
    import atexit

    directory = tempfile.mkdtemp(prefix="paddle-infer-fork-")
    address = os.path.join(directory, "server")
    key = secrets.token_bytes(16)
    try:
        # bound here, so a worker can connect at once; it waits for the server's greeting
        # while the server lives (it starts its own child otherwise)
        with socket.socket(socket.AF_UNIX) as listening:
            listening.bind(address)
            listening.listen(64)
            proc = subprocess.Popen([sys.executable, "-m", __name__, str(listening.fileno()), directory],
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, pass_fds=(listening.fileno(),),
                                    env=dict(child_env, **{KEY_ENV: key.hex()}), cwd=os.getcwd())
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    _SERVER.append((proc, directory))
    os.environ[ADDRESS_ENV], os.environ[KEY_ENV] = f"{proc.pid}:{address}", key.hex()
    atexit.register(stop)


def stop() -> None:
    """Close the server (its children, executors of workers that are gone by now, go on
    to their own end)."""
    while _SERVER:
        proc, directory = _SERVER.pop()
        try:
            proc.stdin.close()  # it exits at once, unwaited: this process is ending
        except OSError:
            proc.kill()
        shutil.rmtree(directory, ignore_errors=True)
    for name in (ADDRESS_ENV, KEY_ENV):
        os.environ.pop(name, None)


# -- a worker --------------------------------------------------------------------------


def take_offer() -> None:
    """A worker (at plugin import): remember the server its controller started and drop the
    variables, so that nothing this process starts inherits them."""
    offer, key = os.environ.pop(ADDRESS_ENV, None), os.environ.pop(KEY_ENV, None)
    pid, _, address = (offer or "").partition(":")
    if pid.isdigit() and address and key and "PYTEST_XDIST_WORKER" in os.environ:
        _ASKED.update(pid=int(pid), address=address, key=key)


def offered() -> bool:
    """This worker found its controller's server (take_offer) and may ask it for children."""
    return bool(_ASKED)


def fork(executor_address: str, executor_key: bytes, log_path: str,
         env: Dict[str, str], same_session) -> Optional["ForkedChild"]:
    """An executor child forked by the server, or None (no server, gone, or a paddle import
    done in another environment: the caller starts its own child)."""
    if not _ASKED:
        return None
    try:
        conn = _connect(_ASKED["address"], _ASKED["pid"], bytes.fromhex(_ASKED["key"]))
        server_env, server_cwd, server_python = conn.recv()
        if server_python != sys.executable or not same_session((server_env, server_cwd),
                                                               (env, os.getcwd())):
            conn.close()
            _ASKED.clear()  # it will not match later either
            return None
        conn.send({"address": executor_address, "key": executor_key.hex(), "log": log_path,
                   "env": env, "cwd": os.getcwd()})
        if not conn.poll(GREETING_SECONDS):
            raise OSError("the fork server did not answer")
        return ForkedChild(conn, int(conn.recv()))
    except Exception:  # whatever went wrong, the worker's own child does the work
        _ASKED.clear()
        return None


def _connect(address: str, server_pid: int, key: bytes) -> Connection:
    """Connected and authenticated (the server proves nothing: its address is in a directory
    only this user can enter). Waits while the server imports paddle, as long as it lives."""
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(address)
    conn = Connection(sock.detach())
    deadline = time.monotonic() + GREETING_SECONDS
    while not conn.poll(0.2):
        if not _alive(server_pid) or time.monotonic() > deadline:
            conn.close()
            raise OSError("the fork server is gone or stuck")
    nonce = conn.recv_bytes(64)
    conn.send_bytes(hmac.new(key, nonce, "sha256").digest())
    return conn


class ForkedChild:
    """A forked executor child, supervised like a ``subprocess.Popen``: ``poll``, ``wait``,
    ``kill``, ``returncode`` (negative: the signal that killed it), from the server's report."""

    def __init__(self, conn, pid: int):
        self.conn, self.pid, self.returncode = conn, pid, None
        self.how = ""  # set when the exit status cannot be known
        self.server_gone = False

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            self._read(0)
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"executor {self.pid}", timeout)
            self._read(0.2 if left is None else min(left, 0.2))
        return self.returncode

    def kill(self) -> None:
        if self.poll() is not None:
            return  # reaped already: its pid may be another process's by now
        try:
            os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _read(self, timeout: float) -> None:
        if self.server_gone:  # no report will come: tell by the pid alone
            if not _alive(self.pid):
                self.returncode, self.how = 1, "ended (how is not known: its fork server ended first)"
            else:
                time.sleep(timeout)
            return
        try:
            if self.conn.poll(timeout):
                self.returncode = int(self.conn.recv())
                self.conn.close()
        except (EOFError, OSError, ValueError):
            self.server_gone = True
            self.conn.close()
            self._read(0)


class LaterChild:
    """The child a worker asks the server for (``ask``), asked in a thread: the worker goes
    on loading plugins and collecting while the server may still be importing paddle
    (about half a second of a busy start-up). Supervised like the child it turns into: the
    first use waits for the answer, and starts ``start()``'s child when the server gave none."""

    def __init__(self, ask, start):
        self._start, self._answer, self._child = start, [], None
        self._thread = threading.Thread(target=lambda: self._answer.append(ask()), daemon=True)
        self._thread.start()

    def _resolve(self, start: bool = True):
        if self._child is None:
            self._thread.join()
            self._child = self._answer[0] if self._answer else None
            if self._child is None and start:
                self._child = self._start()
        return self._child

    def child(self):
        """The child it turned into (waits for the server's answer)."""
        return self._resolve()

    def poll(self) -> Optional[int]:
        return self._resolve().poll()

    def wait(self, timeout: Optional[float] = None) -> int:
        return self._resolve().wait(timeout)

    def kill(self) -> None:
        child = self._resolve(start=False)
        if child is None:  # the server gave none: start nothing only to kill it
            self._child = _NeverStarted()
        else:
            child.kill()

    def __getattr__(self, name: str):  # pid, returncode, how
        return getattr(self._resolve(), name)


class _NeverStarted:
    """A child killed before it was started."""
    pid, how, returncode = None, "", -signal.SIGKILL

    def poll(self) -> int:
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        return self.returncode

    def kill(self) -> None:
        pass


def _alive(pid: int) -> bool:
    """Running (a zombie is not: its parent has yet to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


# -- the server ------------------------------------------------------------------------


def serve(fd: int, directory: str) -> None:
    key = bytes.fromhex(os.environ.pop(KEY_ENV))
    listening = socket.socket(fileno=fd)  # workers queue up on it while paddle is imported
    from ..modes.capabilities import import_paddle

    state = (dict(os.environ), os.getcwd(), sys.executable)  # what a worker compares with its own
    import_paddle()
    # what importing paddle set (OMP_NUM_THREADS...): a child it imports in has them too
    imported = {k: v for k, v in os.environ.items() if state[0].get(k) != v}
    import importlib

    importlib.import_module(f"{__package__}.runner")  # what every child imports next
    from .executor import serve as serve_executor

    watched: Dict[int, object] = {}  # child pid -> the worker's connection (None: it left)
    while True:
        conns = [c for c in watched.values() if c is not None]
        for ready in wait([listening, sys.stdin] + conns, timeout=0.2):
            if ready is sys.stdin:
                if not os.read(sys.stdin.fileno(), 1024):  # the controller is done (or killed)
                    shutil.rmtree(directory, ignore_errors=True)
                    os._exit(0)  # at once: tearing paddle down would hold up the controller's exit
            elif ready is listening:
                conn = Connection(listening.accept()[0].detach())
                request = _greet(conn, key, state)
                if request is None:
                    conn.close()
                    continue  # a worker whose environment differs, one that went away or hangs
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    inherited = [listening.fileno(), conn.fileno()] + [c.fileno() for c in conns]
                    _become_executor(dict(request, env=dict(request["env"], **imported)), inherited,
                                     serve_executor)
                try:
                    conn.send(pid)
                    watched[pid] = conn
                except OSError:  # the worker went away: its child ends at its own EOF
                    conn.close()
                    watched[pid] = None
            else:  # a worker's connection closed: it no longer waits for the report
                for pid, conn in list(watched.items()):
                    if conn is ready:
                        conn.close()
                        watched[pid] = None
        _reap(watched)


def _greet(conn: Connection, key: bytes, state) -> Optional[dict]:
    """Authenticate a worker, tell it how paddle was imported, take its request; None when it
    fails to answer in time (one stuck worker must not stop the others being served)."""
    try:
        nonce = secrets.token_bytes(32)
        conn.send_bytes(nonce)
        if not conn.poll(ANSWER_SECONDS) or not hmac.compare_digest(
                conn.recv_bytes(64), hmac.new(key, nonce, "sha256").digest()):
            return None
        conn.send(state)
        return conn.recv() if conn.poll(ANSWER_SECONDS) else None
    except (OSError, EOFError, ValueError):
        return None


def _reap(watched: Dict[int, object]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = watched.pop(pid, None)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if conn is not None:
            try:
                conn.send(code)
                conn.close()
            except OSError:
                pass


def _become_executor(request: dict, inherited, serve_executor) -> None:
    """In the forked child: the worker's log, directory and environment, then the executor's
    loop; never returns to the server's. ``inherited``: the server's sockets, closed here
    (by number: the child has no use for them)."""
    code = 1
    try:
        for fd in inherited:
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a spawned child
        null = os.open(os.devnull, os.O_RDONLY)
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        code = serve_executor(request["address"], bytes.fromhex(request["key"]))
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2])
