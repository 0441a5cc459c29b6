"""Child processes that die with the session: every child the plugin starts is started here
or calls ``hold_to_parent`` first thing, so it dies with the process that started it (Linux
``PR_SET_PDEATHSIG``; a pytest killed by SIGKILL leaves no child running). ``run`` kills the
child's whole process group at its deadline or on Ctrl-C, ``kill_all`` those still running
at the end; ``how_it_ended`` tells a deadline from a SIGKILL nobody here sent, most often the
out-of-memory killer (the cgroup's count of oom kills confirms it where readable)."""
from __future__ import annotations

import os
import signal
import subprocess
from contextlib import suppress
from pathlib import Path
from typing import Dict, Optional

PARENT_ENV = "PADDLE_INFER_PARENT_PID"  # set for a child: the pid that must outlive it
PR_SET_PDEATHSIG = 1

_live: Dict[int, subprocess.Popen] = {}  # pid -> child whose group kill_all kills
_hooked: list = []  # [True] once the atexit hook is registered


class ChildTimeout(Exception):
    """A child ran past its deadline and was killed (with its process group)."""

    def __init__(self, seconds: float):
        super().__init__(f"ran past {seconds:g} s")
        self.seconds = seconds


def child_env(env: Optional[dict] = None) -> dict:
    """``env`` (default: this one's) naming this process as the one the child must not outlive."""
    env = dict(os.environ if env is None else env)
    env[PARENT_ENV] = str(os.getpid())
    return env


def hold_to_parent() -> None:
    """In a child, first thing: die when the process that started it ends (a no-op when started
    by hand); the variable is unset so the child's own children are not held to this parent."""
    parent = os.environ.pop(PARENT_ENV, None)
    if not parent or os.name == "nt":  # Windows: os.kill(pid, 0) would end that process
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the session's kill_all still reaches it
        pass
    if str(os.getppid()) != parent:  # re-parented, or forked by another (the fork server)
        try:
            os.kill(int(parent), 0)
        except ProcessLookupError:  # it ended before the request took effect
            os._exit(1)
        except (OSError, ValueError):  # alive under another user
            return
        import threading

        threading.Thread(target=_exit_with, args=(int(parent),), daemon=True).start()


def _exit_with(pid: int) -> None:
    """End this process and its children when ``pid`` (not the parent: the kernel won't) ends."""
    try:
        import select

        watch = select.poll()
        watch.register(os.pidfd_open(pid), select.POLLIN)  # readable once the process ends
        watch.poll()
    except (AttributeError, OSError):  # no pidfd (not Linux 5.3+): look twice a second
        import time

        while _alive(pid):
            time.sleep(0.5)
    kill_all()
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def start(args, **popen) -> subprocess.Popen:
    """Popen in a process group of its own, registered for ``kill_all``."""
    if not _hooked:
        import atexit

        atexit.register(kill_all)
        _hooked.append(True)
    popen["env"] = child_env(popen.get("env"))
    proc = subprocess.Popen(args, start_new_session=True, **popen)
    _live[proc.pid] = proc
    return proc


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL to the child's process group (what it started too), then reap it."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with suppress(OSError):
        proc.kill()
    proc.wait()
    _live.pop(proc.pid, None)


def run(args, timeout: Optional[float] = None, **popen) -> subprocess.CompletedProcess:
    """subprocess.run capturing text; its group is killed past ``timeout`` (ChildTimeout) or on any error."""
    proc = start(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(proc)
        raise ChildTimeout(timeout) from None
    except BaseException:
        kill(proc)
        raise
    _live.pop(proc.pid, None)
    with suppress(ProcessLookupError, PermissionError):  # what the finished child left in its group
        os.killpg(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def kill_all() -> None:
    """Kill every registered child still running, with its group (the session's end)."""
    for proc in list(_live.values()):
        if proc.poll() is None:
            kill(proc)
        else:
            _live.pop(proc.pid, None)


def oom_kills() -> Optional[int]:
    """The cgroup's count of oom kills (v2 ``memory.events``, v1 ``memory.oom_control``) or None;
    inside a container the cgroup path may not exist as named: the mount's root is tried too."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    places = []
    for line in lines:
        _, controllers, group = (line.split(":", 2) + ["", ""])[:3]
        group = group.strip().lstrip("/")
        if controllers == "":  # v2
            places += [Path("/sys/fs/cgroup") / group / "memory.events", Path("/sys/fs/cgroup/memory.events")]
        elif "memory" in controllers.split(","):  # v1
            root = Path("/sys/fs/cgroup/memory")
            places += [root / group / "memory.oom_control", root / "memory.oom_control"]
    for place in places:
        try:
            text = place.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill" and value.strip().isdigit():
                return int(value)
    return None


def how_it_ended(returncode: int, oom_before: Optional[int] = None) -> str:
    """A child's end in words; a SIGKILL says whether the cgroup counted an oom kill since ``oom_before``."""
    from .errors import describe_exit

    how = describe_exit(returncode)
    if returncode != -int(signal.SIGKILL):
        return how
    after = oom_kills()
    if oom_before is not None and after is not None and after > oom_before:
        return (f"{how}: the out-of-memory killer (the cgroup's memory.events counted "
                f"{after - oom_before} oom_kill); give it more memory or run fewer cases at once")
    return (f"{how} (not by paddle-infer): often the out-of-memory killer; check `dmesg` or "
            f"the container's memory limit")
