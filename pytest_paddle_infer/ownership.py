"""The directories the plugin writes into, and which of their files are its own.

Each such directory carries a marker, ``.paddle-infer`` (its kind, the plugin's version); one
holding anything and no marker is someone else's (a usage error naming one of its files),
unless every entry is recognisably what an earlier version wrote (``recognise_*``) or it is
the default cache dir. Inside it the plugin overwrites or deletes only regular files its
manifest ``.paddle-infer-files`` records (name and SHA-256 per JSON line) and only while
unchanged: no file a user can edit decides what is deleted. One session at a time holds a
report directory's lock. Nothing here imports numpy or paddle (start-up)."""
from __future__ import annotations

import json
import os
import re
import time
from contextlib import suppress
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence

from .errors import PaddleInferError
from .files import atomic_write, file_sha256

MARKER = ".paddle-infer"
MANIFEST = ".paddle-infer-files"
SESSION_LOCK = ".paddle-infer.lock"
SESSION_FILE = ".paddle-infer.session"  # who holds the report directory now
FORMAT = 1
OWN_NAMES = (MARKER, MANIFEST, MANIFEST + ".lock", SESSION_LOCK, SESSION_FILE)
NOUNS = {"report": "report", "cache": "cache", "goldens": "goldens", "runs": "saved runs", "repro": "repro"}


class OwnershipError(PaddleInferError):
    """A file or directory the plugin would write over is not its own."""


# -- the marker ----------------------------------------------------------------------------
def marker_kind(directory: Path) -> Optional[str]:
    """The kind a directory's marker names ("report", "cache", ...), None when unmarked."""
    path = Path(directory) / MARKER
    try:
        if path.is_symlink() or not path.is_file():
            return None
        kind = json.loads(path.read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        return None
    return kind if kind in NOUNS else None


def write_marker(directory: Path, kind: str) -> None:
    from . import __version__

    atomic_write(Path(directory) / MARKER, json.dumps(
        {"kind": kind, "format": FORMAT, "written_by": f"pytest-paddle-infer {__version__}"}) + "\n")


def _marker_being_written(name: str) -> bool:
    """files.atomic_write's temporary name for the marker."""
    return name.startswith(f".{MARKER}.") and name.endswith(".tmp")


def _entries(directory: Path) -> List[str]:
    return sorted(os.listdir(directory))


def foreign_message(flag: str, directory: Path, name: str, kind: str) -> str:
    noun = NOUNS[kind]
    return (f"{flag}: {Path(directory) / name} is not a paddle-infer {noun} file: {directory} holds "
            f"files and no {MARKER} marker, and paddle-infer never overwrites or deletes files it did "
            f"not write; choose an empty or a paddle-infer {noun} directory (one it made)")


def claim(directory: Path, kind: str, flag: str,
          recognise: Optional[Callable[[Path, List[str]], bool]] = None,
          adopt_any: bool = False, first: Sequence[str] = ()) -> None:
    """Make ``directory`` the plugin's ``kind`` directory (missing or empty: made and marked; unmarked:
    when ``adopt_any`` or ``recognise`` knows every entry), else an OwnershipError naming a file."""
    directory = Path(directory)
    try:
        if directory.is_symlink() and not directory.exists():
            raise OwnershipError(f"{flag}: {directory} is a link to nothing ({os.readlink(directory)}); "
                                 f"give a directory")
        if not directory.exists():
            directory.mkdir(parents=True, exist_ok=True)
        found = marker_kind(directory)
        if found is None:
            # another process (an xdist worker reading the same suite) may be writing the marker
            entries = [n for n in _entries(directory) if not _marker_being_written(n)]
            if entries and not adopt_any and not (recognise is not None and recognise(directory, entries)):
                found = marker_kind(directory)  # written meanwhile: judged below
                if found is None:
                    shown = next((n for n in first if n in entries), entries[0])
                    raise OwnershipError(foreign_message(flag, directory, shown, kind))
        if found is None:
            write_marker(directory, kind)
        elif found != kind:
            raise OwnershipError(f"{flag}: {directory} is a paddle-infer {NOUNS[found]} directory, not a "
                                 f"{NOUNS[kind]} directory: give each its own directory")
    except OSError as e:
        raise OwnershipError(f"{flag}: cannot use {directory}: {e.strerror or e}; give a directory "
                             f"this user can write") from None


# -- what earlier versions wrote (no marker) ---------------------------------------------------
# the cache's own entries: a directory of each of these names, its entries of this form
CACHE_DIRS = {
    "models": r".+-[0-9a-f]{12}-(default|legacy)(\.lock|\.tmp-.+)?",
    "inspect": r"[0-9a-f]{16}\.json|\..+\.tmp", "signatures": r"[0-9a-f]{16}\.json|\..+\.tmp",
    "baselines": r"pid\d+", "spill": r"pid\d+", "prune": r"pid\d+", "static-rung": r"pid\d+",
    "executor": r".*", "optim": r".*", "shared-baselines": r".*", "repro": r".*",
    "suite-locks": r"[0-9a-f]{16}\.lock",
}
CACHE_FILES = r"installation\.json|xdist-seconds\.json|\..+\.tmp|.+\.lock"


def recognise_cache(directory: Path, entries: List[str]) -> bool:
    """A cache an earlier version made: only the cache's own directories and files."""
    def known(name: str) -> bool:
        path = Path(directory) / name
        if path.is_symlink():
            return False
        if name in CACHE_DIRS and path.is_dir():
            return all(re.fullmatch(CACHE_DIRS[name], child) for child in os.listdir(path))
        return path.is_file() and bool(re.fullmatch(CACHE_FILES, name))

    return all(known(name) for name in entries)


REPORT_TITLE = "<title>paddle-infer report</title>"


def _json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def recognise_report(directory: Path, entries: List[str]) -> bool:
    """A report an earlier version wrote: index.html, summary.json, per-case files each beside
    its case's json, repro/; each of its form, nothing else."""
    return all(_report_entry(Path(directory), name) for name in entries)


def _report_entry(directory: Path, name: str) -> bool:
    path = directory / name
    if path.is_symlink():
        return False
    if name == "repro" and path.is_dir():
        return all(marker_kind(path / n) == "repro" or _legacy_repro_files(path / n) is not None
                   for n in _entries(path))
    if not path.is_file():
        return False
    if name == "index.html":
        try:
            return REPORT_TITLE in path.read_text(encoding="utf-8", errors="replace")[:4096]
        except OSError:
            return False
    if name == "summary.json":
        doc = _json(path)
        return isinstance(doc, dict) and isinstance(doc.get("cases"), list)
    stem, dot, suffix = name.rpartition(".")
    doc = _json(directory / f"{stem}.json") if dot and suffix in ("json", "csv", "xlsx", "png") else None
    return isinstance(doc, dict) and {"summary", "columns", "rows"} <= set(doc)


def recognise_goldens(directory: Path, entries: List[str]) -> bool:
    """Recorded goldens or saved runs: regular ``.npz`` files only."""
    return all(name.endswith(".npz") and (Path(directory) / name).is_file()
               and not (Path(directory) / name).is_symlink() for name in entries)


# -- the manifest: the files the plugin wrote, by content --------------------------------------
def _plain_name(name) -> bool:
    """A relative path inside the directory, no "..", not a bookkeeping file."""
    if not isinstance(name, str) or not name or name.startswith("/") or "\\" in name:
        return False
    return all(p not in ("", ".", "..") for p in name.split("/")) and name not in OWN_NAMES


def recorded(directory: Path) -> Dict[str, str]:
    """name -> SHA-256 of what the manifest records (last line wins; malformed lines ignored)."""
    out: Dict[str, str] = {}
    path = Path(directory) / MANIFEST
    try:
        if path.is_symlink():
            return out
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return out
    for line in lines:
        try:
            entry = json.loads(line)
            name, digest = entry["name"], entry["sha256"]
        except (ValueError, KeyError, TypeError):
            continue
        if _plain_name(name) and isinstance(digest, str):
            out[name] = digest
    return out


def _manifest_lock(directory: Path):
    from filelock import FileLock

    return FileLock(str(Path(directory) / (MANIFEST + ".lock")))


def record(directory: Path, names: Iterable[str]) -> None:
    """Add files the plugin has just written in ``directory`` to its manifest (under a file lock)."""
    directory = Path(directory)
    lines = [json.dumps({"name": name, "sha256": file_sha256(directory / name)}) + "\n" for name in names
             if _plain_name(name) and (directory / name).is_file() and not (directory / name).is_symlink()]
    if not lines:
        return
    with _manifest_lock(directory):
        with open(directory / MANIFEST, "a", encoding="utf-8") as f:
            f.write("".join(lines))


def ours(directory: Path, name: str, known: Optional[Dict[str, str]] = None) -> bool:
    """A regular file the manifest records, its content unchanged since."""
    path = Path(directory) / name
    if path.is_symlink() or not path.is_file():
        return False
    digest = (recorded(directory) if known is None else known).get(name)
    try:
        return digest is not None and file_sha256(path) == digest
    except OSError:
        return False


def check_writable(directory: Path, names: Iterable[str], what: str) -> None:
    """OwnershipError unless each of ``names`` is absent or a file the plugin wrote, unchanged."""
    directory = Path(directory)
    known = None
    for name in names:
        path = directory / name
        if not path.exists() and not path.is_symlink():
            continue
        known = recorded(directory) if known is None else known
        if not ours(directory, name, known):
            why = ("was changed since paddle-infer wrote it" if name in known and path.is_file()
                   and not path.is_symlink() else f"is not {what} file")
            raise OwnershipError(f"{path} {why}, and paddle-infer never overwrites a file it did not "
                                 f"write: move it away, or choose an empty or a paddle-infer directory")


def remove_recorded(directory: Path, keep: Callable[[str], bool] = lambda name: False) -> List[str]:
    """Delete the recorded files still as written (but those ``keep`` names) and the directories
    left empty; the manifest forgets files gone or changed. Returns what was deleted."""
    directory = Path(directory)
    removed = []
    with _manifest_lock(directory):
        known = recorded(directory)
        kept = {}
        for name, digest in known.items():
            if keep(name):
                kept[name] = digest
            elif ours(directory, name, known):
                (directory / name).unlink()
                removed.append(name)
        text = "".join(json.dumps({"name": n, "sha256": d}) + "\n" for n, d in kept.items())
        if known or (directory / MANIFEST).exists():
            atomic_write(directory / MANIFEST, text)
    for name in removed:  # sub-directories emptied (a repro folder's model/)
        parent = (directory / name).parent
        while parent != directory:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
    return removed


def record_tree(directory: Path) -> None:
    """Record every regular file under ``directory`` (a folder the plugin just filled)."""
    directory = Path(directory)
    names = [str(p.relative_to(directory)) for p in sorted(directory.rglob("*"))
             if p.is_file() and not p.is_symlink() and p.name not in OWN_NAMES]
    record(directory, names)


def fresh_folder(folder: Path, kind: str = "repro") -> Path:
    """``folder`` made, or emptied of what the plugin wrote; OwnershipError (nothing deleted)
    for a folder not the plugin's or holding files it did not write."""
    folder = Path(folder)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise OwnershipError(f"{folder} is not a paddle-infer {NOUNS[kind]} folder (a file or a link "
                             f"is in its place): move it away")
    if folder.exists():
        if marker_kind(folder) != kind:
            if not (kind == "repro" and _remove_legacy_repro(folder)):
                raise OwnershipError(f"{folder} is not a paddle-infer {NOUNS[kind]} folder (no {MARKER} "
                                     f"marker): move it away")
            write_marker(folder, kind)
        remove_recorded(folder)
        left = [n for n in _entries(folder) if n not in OWN_NAMES]
        if left:
            raise OwnershipError(f"{folder / left[0]} is not a file paddle-infer wrote, so the "
                                 f"{NOUNS[kind]} folder {folder} is not rewritten: move it away")
        return folder
    folder.mkdir(parents=True)
    write_marker(folder, kind)
    return folder


REPRO_FILES = ("README.md", "repro.py", "inputs.npz")


def _legacy_repro_files(folder: Path) -> Optional[List[Path]]:
    """The files of an earlier version's repro folder (no marker), None for anything else."""
    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir():
        return None
    entries = _entries(folder)
    model = folder / "model"
    if not entries or any(n not in REPRO_FILES + ("model",) for n in entries):
        return None
    files = [folder / n for n in entries if n != "model"]
    if "model" in entries:
        if model.is_symlink() or not model.is_dir():
            return None
        inner = _entries(model)
        if any(not n.startswith("inference") for n in inner):
            return None
        files += [model / n for n in inner]
    return None if any(f.is_symlink() or not f.is_file() for f in files) else files


def _remove_legacy_repro(folder: Path) -> bool:
    """Delete an earlier version's repro folder's files: True, else False (nothing deleted)."""
    files = _legacy_repro_files(folder)
    if files is None:
        return False
    for f in files:
        f.unlink()
    if (Path(folder) / "model").is_dir():
        (Path(folder) / "model").rmdir()
    return True


# -- one session per report directory -----------------------------------------------------------
def hold_session(directory: Path, flag: str):
    """This session's lock on ``directory`` until ``release``; OwnershipError naming the holder."""
    from filelock import FileLock, Timeout

    directory = Path(directory)
    lock = FileLock(str(directory / SESSION_LOCK))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        holder = _json(directory / SESSION_FILE)
        who = (f" (pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')})"
               if isinstance(holder, dict) else "")
        raise OwnershipError(
            f"{flag}: another pytest session{who} is writing its report into {directory}; two "
            f"sessions in one report directory would each leave half a report: wait for it to "
            f"end, or give this session another directory") from None
    except OSError as e:
        raise OwnershipError(f"{flag}: cannot use {directory}: {e.strerror or e}") from None
    import platform

    with suppress(OSError):
        atomic_write(directory / SESSION_FILE, json.dumps({
            "pid": os.getpid(), "host": platform.node(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}) + "\n")
    return lock


def release(lock) -> None:
    if lock is not None:
        lock.release()


# -- the session's directories -------------------------------------------------------------------
def claim_directories(settings, cache_given: bool, flag_of: Callable[[str], str] = lambda ini: ""):
    """Claim the directories the session writes into (not in xdist workers); returns the report
    directory's lock or None. ``flag_of(ini key)``: the option as the user gave it."""
    dirs = {"paddle_report": settings.report_dir, "paddle_save_goldens": settings.save_goldens,
            "paddle_save_runs": settings.save_runs, "paddle_cache_dir": settings.cache_dir}
    flags = {ini: flag_of(ini) or "--" + ini.replace("_", "-") for ini in dirs}
    same: Dict[str, str] = {}
    for ini, path in dirs.items():
        if path is None:
            continue
        if str(path) in same:
            raise OwnershipError(f"{flags[ini]} and {same[str(path)]} name the same directory ({path}): "
                                 f"give each its own")
        same[str(path)] = flags[ini]
    if cache_given:
        claim(settings.cache_dir, "cache", flags["paddle_cache_dir"], recognise_cache)
    else:  # paddle-infer under pytest's cache dir: the plugin's by its name
        claim(settings.cache_dir, "cache", flags["paddle_cache_dir"], adopt_any=True)
    for path, kind, ini in ((settings.save_goldens, "goldens", "paddle_save_goldens"),
                            (settings.save_runs, "runs", "paddle_save_runs")):
        if path is not None:
            claim(path, kind, flags[ini], recognise_goldens)
    if settings.update_goldens and "paddle_baseline" in settings.given:
        claim_goldens_of(settings.baseline, f"--paddle-baseline={settings.baseline}")
    if settings.report_dir is None:
        return None
    flag = flags["paddle_report"]
    claim(settings.report_dir, "report", flag, recognise_report, first=("index.html", "summary.json"))
    lock = hold_session(settings.report_dir, flag)
    with suppress(OSError):
        adopt_report_files(settings.report_dir)
    return lock


def claim_goldens_of(baseline: str, flag: str) -> None:
    """Claim the goldens directory of a ``golden:DIR`` baseline, which --paddle-update-goldens rewrites."""
    from .cases.baseline_forms import GOLDEN, golden_dir, kind_of

    if kind_of(baseline) == GOLDEN:
        claim(golden_dir(baseline), "goldens", flag, recognise_goldens)


def adopt_report_files(directory: Path) -> None:
    """Record an earlier version's report files (recognised, no manifest yet) as the plugin's."""
    directory = Path(directory)
    if (directory / MANIFEST).exists():
        return
    names = [n for n in _entries(directory) if n not in OWN_NAMES and (directory / n).is_file()
             and not (directory / n).is_symlink()]
    if names and recognise_report(directory, names):
        record(directory, names)
    else:
        atomic_write(directory / MANIFEST, "")
