"""Supervision: the Paddle work of cases runs in a long-lived child process.

One executor child per pytest process (one per xdist worker) keeps models, inputs,
predictors and baselines between cases, as an in-process runner would. The pytest process
sends a request and gets back what a report needs (rows, notes, evidence), never whole
tensors. When the child dies (a signal, an exit) or hangs past the timeout, only the case in
flight errors, with the phase it was in, the recipe, the end of Paddle's log and a command
that reproduces it; the next case starts a fresh child.

Both processes meet here: the pytest process (session/case_path.py) and localization trials
(engine/localize/trials.py) start and call children with ``Executor``; the child runs
``serve`` with the engine's service (engine/service.py, named by ``ENGINE_ENTRY``, never
imported here). This module imports neither paddle nor numpy.
"""
from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Listener
from pathlib import Path
from typing import Any, Callable, Optional

from .errors import (CaseSkipped, PaddleInferError, describe_exit, disk_fault, is_disk_fault,  # describe_exit: re-exported
                     strip_ansi)

AUTHKEY_ENV = "PADDLE_INFER_EXECUTOR_KEY"
ENGINE_ENTRY = "pytest_paddle_infer.engine.service"  # the child's module: python -m ENGINE_ENTRY
DEFAULT_TIMEOUT = 900.0
LOG_TAIL_LINES = 12
_FRAME = re.compile(r"^\s*\d+\s+\S")


class ExecutorDied(PaddleInferError):
    """The executor child ended (signal or exit) or hung while working on a case."""


@dataclass(frozen=True)
class Phase:
    name: str  # exporting the model, baseline, building the candidate, calibration, running ...
    recipe: str = ""


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of the child's log, ANSI colour codes stripped."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [strip_ansi(l).rstrip() for l in text.splitlines()]
    # C++ stack frames ("12  paddle::...") and rules say less than the messages around them
    kept = [l for l in kept if l.strip() and not _FRAME.match(l) and l.strip("- ")]
    return "\n".join(kept[-lines:])


class Executor:
    """The pytest process's side: starts the child on demand, sends requests, supervises."""

    def __init__(self, init: dict, log_dir: Path, timeout: float = DEFAULT_TIMEOUT, fork_server: str = ""):
        self.init = init  # what the child's runner is built from (cache dir, device, goldens)
        self.log_dir = Path(log_dir)
        self.timeout = timeout
        self.fork_server = fork_server  # an xdist worker's: its controller's fork server (spec)
        self.proc: Optional[subprocess.Popen] = None
        self.conn = None
        self.log_path: Optional[Path] = None
        self.started = 0

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Start a child now: it imports paddle while pytest goes on collecting."""
        if self.proc is not None:
            return
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.started += 1
        self.log_path = self.log_dir / f"executor-{os.getpid()}-{self.started}.log"
        from .children import oom_kills

        self._oom_before = oom_kills()  # a SIGKILL we did not send: did the cgroup count an OOM kill?
        self._listener, self.proc = _spawn(self.log_path, self.fork_server)
        self.conn = None

    def _connection(self):
        if self.conn is None:
            # accept() blocks; the child connects right after its imports. A child that dies
            # before connecting is noticed by the watcher below.
            self.conn = _accept(self._listener, self.proc, self.timeout)
            self._listener.close()
            self._send(("init", self.init))
        return self.conn

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            if self.conn is None:  # started but never used: nothing to finish
                self._kill()
            elif self.proc.poll() is None:
                self.conn.send(("close", None))
                if self.conn.poll(30) and self.conn.recv() == ("ok", None):
                    # cleaned up and exiting: its exit (unmapping Paddle's memory) need not
                    # hold up this process's; it is reaped at the next close (no zombies
                    # pile up in a process that runs many sessions, pytester's in-process ones)
                    reap_exited()
                    _EXITING.append(self.proc)
                    if self.log_path is not None:
                        self.log_path.unlink(missing_ok=True)
                    return
            if self.proc.wait(30) in (0, -getattr(signal, "SIGKILL", 9)) and self.log_path is not None:
                self.log_path.unlink(missing_ok=True)  # logs are kept for children that died
        except (OSError, EOFError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            self._discard()

    def _discard(self) -> None:
        for closable in (self.conn, getattr(self, "_listener", None)):
            try:
                if closable is not None:
                    closable.close()
            except OSError:
                pass
        self.proc = self.conn = None

    def _kill(self) -> None:
        if self.proc is not None:
            if self.proc.returncode is None:  # kill() polls first: an ended child is left be
                self.proc.kill()
            self.proc.wait()

    # -- requests ----------------------------------------------------------------------

    def call(self, op: str, *args) -> Any:
        """Send one request and wait for its answer; exceptions raised in the child are
        re-raised here. A child that dies or hangs raises ``ExecutorDied``."""
        self.start()
        phase = Phase("starting the executor")
        deadline = time.monotonic() + self.timeout
        try:
            conn = self._connection()
            phase = Phase(_OP_PHASES.get(op, op))
            self._send((op, args))
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._kill()
                    raise self._died(phase, f"timed out after {self.timeout:g} s (--paddle-timeout) "
                                            f"and was killed")
                if not conn.poll(min(left, 1.0)):
                    if self.proc.poll() is not None:
                        raise self._died(phase)
                    continue
                message = conn.recv()
                kind = message[0]
                if kind == "phase":
                    phase = Phase(message[1], message[2] or phase.recipe)
                elif kind == "ok":
                    return message[1]
                elif kind == "raise":
                    raise message[1]
                elif kind == "bug":
                    raise ExecutorBug(message[1])
        except (EOFError, ConnectionError, BrokenPipeError):
            raise self._died(phase) from None
        except _TimedOut:  # it had not connected by the deadline: importing paddle took longer
            raise self._died(phase, f"timed out after {self.timeout:g} s (--paddle-timeout) and was "
                                    f"killed (importing paddle takes seconds: give --paddle-timeout "
                                    f"more, e.g. --paddle-timeout=600)") from None
        except _ChildGone:
            raise self._died(phase) from None

    def _send(self, message) -> None:
        try:
            self.conn.send(message)
        except (OSError, ValueError):
            raise _ChildGone() from None

    def _died(self, phase: Phase, how: str = "") -> ExecutorDied:
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self._kill()
        if not how:
            from .children import how_it_ended

            how = how_it_ended(self.proc.returncode, getattr(self, "_oom_before", None))
        log = self.log_path
        self._discard()
        died = ExecutorDied(f"the executor process {how} while {phase.name}")
        died.phase, died.recipe, died.how = phase.name, phase.recipe, how
        died.log_tail, died.log_path = log_tail(log) if log else "", log
        return died


class ExecutorBug(Exception):
    """An unexpected exception in the child: its traceback, for a bug report."""


class _ChildGone(Exception):
    pass


class _TimedOut(_ChildGone):
    """The child did not connect by the deadline, and was killed."""


_OP_PHASES = {"about": "importing paddle", "prepare": "preparing the case", "run": "running the candidate",
              "release": "releasing the case", "tensors": "handing out tensors",
              "trial": "running a localization trial", "localize_crash": "localizing the crash or error",
              "selfcheck": "running the self-check"}


def _spawn(log_path: Path, fork_server: str = ""):
    """A child that imports paddle, then connects back: (listener, process). Under an xdist
    controller that runs a fork server (CPU-only paddle), the child is forked from it."""
    key = secrets.token_bytes(16)
    listener = _listener(key)
    address = _address_text(listener.address)

    def spawn():
        from .children import child_env

        env = child_env({"GLOG_minloglevel": "1", **os.environ, AUTHKEY_ENV: key.hex()})
        with open(log_path, "wb") as log:
            return subprocess.Popen([sys.executable, "-m", ENGINE_ENTRY, address],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)

    if fork_server:  # an xdist worker whose controller runs one
        return listener, _ForkOnFirstUse(fork_server, address, key.hex(), log_path, spawn)
    return listener, spawn()


class _ForkOnFirstUse:
    """A child asked of the fork server (fork_server.py) when first supervised, not when
    started: the worker goes on collecting while the server imports paddle. Spawned instead
    where the server cannot fork one. Supervised as a ``subprocess.Popen``."""

    def __init__(self, server: str, address: str, key: str, log_path: Path, spawn: Callable):
        self._ask = (server, address, key, log_path)
        self._spawn = spawn
        self._proc = None
        self._cancelled = False

    def _child(self):
        if self._proc is None:
            from .fork_server import request

            server, address, key, log_path = self._ask
            self._proc = request(server, address, key, log_path, AUTHKEY_ENV, ENGINE_ENTRY) or self._spawn()
        return self._proc

    @property
    def pid(self) -> Optional[int]:
        return None if self._proc is None else self._proc.pid

    @property
    def returncode(self) -> Optional[int]:
        if self._proc is None:
            return -getattr(signal, "SIGKILL", 9) if self._cancelled else None
        return self._proc.returncode

    def poll(self) -> Optional[int]:
        return self.returncode if self._cancelled and self._proc is None else self._child().poll()

    def wait(self, timeout: Optional[float] = None) -> int:
        return self.returncode if self._cancelled and self._proc is None else self._child().wait(timeout)

    def kill(self) -> None:
        if self._proc is None:
            self._cancelled = True  # never asked for: nothing to kill
        else:
            self._proc.kill()


def _listener(key: bytes) -> Listener:
    """On Linux a socket in the abstract namespace: no file to leave behind, where the default
    one lives in a ``pymp-*`` temp dir that only a clean interpreter exit removes (xdist workers
    and killed sessions left hundreds)."""
    if sys.platform.startswith("linux"):
        return Listener("\0paddle-infer-" + secrets.token_hex(12), family="AF_UNIX", authkey=key)
    return Listener(authkey=key)


def _address_text(address) -> str:
    if isinstance(address, bytes):  # the abstract namespace; argv holds no NUL: "@" stands for it
        return "@" + address[1:].decode()
    return address if isinstance(address, str) else f"{address[0]}:{address[1]}"


def _accept(listener: Listener, proc: subprocess.Popen, timeout: float):
    """Wait for the child's connection, giving up when it exits first."""
    import threading

    box: dict = {}

    def accept():
        while "conn" not in box:
            try:
                box["conn"] = listener.accept()
            except AuthenticationError:  # not the child (a wrong key): wait on for it
                continue
            except (OSError, EOFError) as e:  # closed below when the child died
                box["error"] = e
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while thread.is_alive():
        thread.join(0.2)
        if proc.poll() is not None and thread.is_alive():
            listener.close()
            thread.join(1)
            raise _ChildGone()
        if time.monotonic() > deadline:
            proc.kill()
            listener.close()
            raise _TimedOut()
    if "conn" not in box:
        raise _ChildGone()
    return box["conn"]


# -- the child -------------------------------------------------------------------------


def _portable(exc: BaseException) -> BaseException:
    """An exception the parent can unpickle and show: ours as they are, Paddle's and other
    errors as their message."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return PaddleInferError(f"{type(exc).__name__}: {exc}")


_EXITING: list = []  # closed children not waited for (kept referenced: no ResourceWarning)


def reap_exited() -> None:
    """Reap the closed children that have ended; those still exiting stay listed."""
    _EXITING[:] = [proc for proc in _EXITING if proc.poll() is None]


def serve(make_service: Callable[[dict, Callable], Any]) -> int:
    """The child's loop: connect back to the parent, build the service from its first
    message, answer requests until "close" or the parent is gone. ``make_service(init,
    send)`` is the engine's (engine/service.py). The child dies with the pytest process,
    and its own children (exports, baselines, pruning) with it."""
    from .children import kill_all

    key = bytes.fromhex(os.environ.pop(AUTHKEY_ENV))
    address = sys.argv[1]
    if address.startswith("@"):
        address = "\0" + address[1:]
    elif ":" in address and not address.startswith(("/", "\\")):
        host, port = address.rsplit(":", 1)
        address = (host, int(port))
    conn = Client(address, authkey=key)
    service = None
    while True:
        try:
            op, args = conn.recv()
        except (EOFError, OSError):
            break  # the pytest process is gone
        try:
            if op == "init":
                service = make_service(args, conn.send)
                continue
            if op == "close":
                if service is not None:
                    service.close()
                conn.send(("ok", None))
                sys.stdout.flush()
                kill_all()  # os._exit skips atexit
                # done and cleaned up: skip the predictors' destructors, which only cost the
                # pytest process time at its exit (it waits for this process)
                os._exit(0)
            conn.send(("ok", getattr(service, op)(*args)))
        except (PaddleInferError, CaseSkipped) as e:
            conn.send(("raise", _portable(e)))
        except OSError as e:
            if not is_disk_fault(e):  # a full disk or an unwritable directory: the case's error
                conn.send(("bug", traceback.format_exc()))
            else:
                conn.send(("raise", PaddleInferError(disk_fault(e, _OP_PHASES.get(op, op)))))
        except Exception:
            conn.send(("bug", traceback.format_exc()))
        sys.stdout.flush()
    return 0


class InlineExecutor:
    """The executor's requests served in this process: no supervision (a crash ends the
    session), for debugging with --pdb and for measuring what supervision costs."""

    def __init__(self, init: dict):
        self.init = init
        self.service = None

    def start(self) -> None:
        pass

    def call(self, op: str, *args):
        try:
            if self.service is None:
                import importlib

                # the engine in this process: loaded by name, as the child loads it with -m
                self.service = importlib.import_module(ENGINE_ENTRY).Service(self.init, lambda message: None)
            return getattr(self.service, op)(*args)
        except OSError as e:  # as the child answers: a full disk is the case's error, in a line
            if not is_disk_fault(e):
                raise
            raise PaddleInferError(disk_fault(e, _OP_PHASES.get(op, op))) from None

    def close(self) -> None:
        if self.service is not None:
            self.service.close()
            self.service = None
