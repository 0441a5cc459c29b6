"""Directories one session's processes share while it runs (xdist plan files, the fork server's
socket, shared baselines), each locked by its maker until removed (before it gets its name);
the kernel drops the lock when that process dies, so the next session sweeps what a killed one
left, but only a directory carrying that lock file, ours, and unlocked: nothing a user made."""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Dict, Optional

LOCK = ".paddle-infer-session.lock"
HOST = ".paddle-infer-session.host"  # the maker's host: some network file systems lock per host
UNNAMED = ".paddle-infer-unnamed-"  # a directory being made: it is locked, then renamed

_HELD: Dict[str, object] = {}  # directory -> its lock, held for this process's life


def make(prefix: str = "", parent: Optional[Path] = None, name: str = "") -> Path:
    """A new directory held by this process, under ``parent`` (else the temp dir): ``name``, or
    ``prefix`` and a random tail. OSError where a non-empty ``name`` exists."""
    unnamed = Path(tempfile.mkdtemp(prefix=UNNAMED, dir=parent))
    (unnamed / HOST).write_text(socket.gethostname())
    lock = _lock(unnamed / LOCK)
    directory = unnamed.with_name(name or prefix + unnamed.name[len(UNNAMED):])
    try:
        os.rename(unnamed, directory)  # the lock, held through its open file, goes along
    except OSError:
        if lock is not None:
            lock.release()
        shutil.rmtree(unnamed, ignore_errors=True)
        raise
    _HELD[str(directory)] = lock
    return directory


def _lock(path: Path):
    """The lock at ``path``, held; None where this file system cannot lock (some NFS and FUSE
    mounts): the lock file is removed, so no sweep ever takes the directory for a dead one."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
        return lock
    except (Timeout, OSError, NotImplementedError):
        Path(path).unlink(missing_ok=True)
        return None


def remove(directory: Path) -> None:
    lock = _HELD.pop(str(directory), None)
    if lock is not None:
        with contextlib.suppress(OSError):
            lock.release()
    shutil.rmtree(directory, ignore_errors=True)


def sweep(parent: Optional[Path] = None, prefix: str = "") -> int:
    """How many ``prefix`` directories of dead sessions were removed under ``parent`` (else the temp dir);
    only this host's: some network file systems lock per host, so another's live lock may look free."""
    from filelock import FileLock, Timeout

    parent = Path(parent or tempfile.gettempdir())
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(prefix)]
    except OSError:
        return 0
    swept = 0
    for entry in entries:
        lock_path = Path(entry.path) / LOCK
        try:
            if (not entry.is_dir(follow_symlinks=False) or entry.path in _HELD
                    or not lock_path.is_file() or not _ours(entry)
                    or (Path(entry.path) / HOST).read_text() != socket.gethostname()):
                continue
            with FileLock(str(lock_path), timeout=0):
                pass
        except (OSError, Timeout, NotImplementedError):  # held (a live session's), or no locks here
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        swept += 1
    return swept


def _ours(entry: os.DirEntry) -> bool:
    getuid = getattr(os, "getuid", None)  # Windows: the temp dir is the user's own
    return getuid is None or entry.stat(follow_symlinks=False).st_uid == getuid()
