"""Model sources -> model files. Zoo entries and builders are exported once per cache dir by a
child (``exporter.py``) into a temporary directory, described by a manifest (sizes, hashes) and
renamed into place under a file lock: a partial or corrupt entry is rebuilt."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import Dict, Mapping, Optional, Tuple

from ..modes.capabilities import installed_paddle
from ..errors import ModelError, strip_ansi
from ..files import atomic_write, file_lock, file_sha256
from .inputs import InputSpec
from .source import MANIFEST, PROGRAM_EXTENSIONS, ModelFiles, ModelSource, find_model_files
from .zoo import ZOO, ZOO_VERSION
from ..ownership import marker_kind
from ..children import ChildTimeout, how_it_ended, oom_kills, run
from ..fork_server import for_children, run_command
from .binding import Signature

BUILDER_PATH_ENV = "PADDLE_INFER_BUILDER_PATH"  # read by exporter.load_builder in the child


def _write_manifest(directory: Path, extra: Mapping[str, object]) -> None:
    files = {p.name: {"size": p.stat().st_size, "sha256": file_sha256(p)}
             for p in sorted(directory.iterdir()) if p.name != MANIFEST}
    (directory / MANIFEST).write_text(json.dumps({"files": files, **extra}, indent=1))


_verified: Dict[str, dict] = {}  # per process: each entry is hashed once
_failed_exports: Dict[str, "ModelError"] = {}  # per process: a failed export is not retried


VERIFIED = ".verified"  # the files' stat stamps when their hashes last matched the manifest


def _stamps(directory: Path, names) -> dict:
    """What changes whenever a file's content can: size, mtime, ctime (no call sets it back), inode."""
    stats = {name: (directory / name).stat() for name in [MANIFEST, *names]}
    return {name: [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino] for name, st in stats.items()}


def _verified_stamps(directory: Path) -> Optional[dict]:
    try:
        return json.loads((directory / VERIFIED).read_text())
    except (OSError, ValueError):
        return None


def _valid_manifest(directory: Path) -> Optional[dict]:
    """The manifest of a complete entry, or None when anything is missing or changed."""
    key = str(directory)
    if key in _verified:
        return _verified[key]
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        stamps = _stamps(directory, manifest["files"])
        if stamps != _verified_stamps(directory):  # hashed unless untouched since last time
            for name, meta in manifest["files"].items():
                p = directory / name
                if p.stat().st_size != meta["size"] or file_sha256(p) != meta["sha256"]:
                    return None
            with suppress(OSError):  # a read-only cache: hashed again next time
                atomic_write(directory / VERIFIED, json.dumps(stamps))
        for path, digest in manifest.get("sources", {}).items():  # a builder's code was edited
            if file_sha256(Path(path)) != digest:
                return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    _verified[key] = manifest
    return manifest


TMP_MARK = ".tmp-"  # an entry being built: "<entry>.tmp-<random>", beside "<entry>.lock"


def remove_entry(path: Path) -> None:
    """Remove a cache entry whatever it has become: a directory, a file, a link."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink()


def cache_subdir(path: Path) -> Path:
    """A directory of the cache, made when missing; a file in its place (damage) is removed."""
    if path.exists() and not path.is_dir():
        remove_entry(path)
    path.mkdir(parents=True, exist_ok=True)
    return path


# the cache's own directories: one replaced by a file (damage) is removed at session start
OWN_DIRS = ("models", "inspect", "signatures", "executor", "spill", "optim", "baselines",
            "shared-baselines", "static-rung", "prune", "repro", "suite-locks")


def heal_cache_dirs(cache_dir: Path) -> None:
    """Remove a file or link in place of one of the cache's own directories (a marked cache only)."""
    if marker_kind(Path(cache_dir)) != "cache":
        return
    for name in OWN_DIRS:
        path = Path(cache_dir) / name
        with suppress(FileNotFoundError):  # another worker healed it first
            if path.is_symlink() or (path.exists() and not path.is_dir()):
                path.unlink()


def remove_stale_builds(directory: Path, held: str = "") -> None:
    """Remove temporary export dirs killed processes left: ``held``'s, and those whose lock is free."""
    from filelock import FileLock, Timeout

    for tmp in Path(directory).glob(f"*{TMP_MARK}*"):
        owner = tmp.name.split(TMP_MARK, 1)[0]
        if owner == held:
            remove_entry(tmp)
            continue
        with suppress(Timeout, OSError), FileLock(str(tmp.with_name(owner + ".lock")), timeout=0):
            remove_entry(tmp)


_swept: set = set()  # per process: directories whose stale builds were looked for


def cached_build(entry_dir: Path, build) -> dict:
    """Run ``build(tmp_dir) -> metadata`` once per entry; returns the manifest."""
    if str(entry_dir.parent) not in _swept and entry_dir.parent.is_dir():
        _swept.add(str(entry_dir.parent))  # once per process, cached entries or not
        remove_stale_builds(entry_dir.parent)
    manifest = _valid_manifest(entry_dir)
    if manifest is not None:
        return manifest
    cache_subdir(entry_dir.parent)
    with file_lock(entry_dir.with_name(entry_dir.name + ".lock")):
        manifest = _valid_manifest(entry_dir)  # another worker may have built it meanwhile
        if manifest is not None:
            return manifest
        _verified.pop(str(entry_dir), None)
        remove_stale_builds(entry_dir.parent, held=entry_dir.name)
        tmp = Path(tempfile.mkdtemp(prefix=entry_dir.name + TMP_MARK, dir=entry_dir.parent))
        try:
            extra = build(tmp)
            _write_manifest(tmp, extra)
            remove_entry(entry_dir)  # a partial or corrupt entry (or a file in its place)
            os.rename(tmp, entry_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    manifest = _valid_manifest(entry_dir)
    if manifest is None:
        raise ModelError(f"model cache entry {entry_dir} failed verification right after it was written")
    return manifest


class ChildTimedOut(ModelError):
    """A child process ran past its deadline and was killed."""


def run_child(args, legacy: bool, what: str, search_path: Tuple[str, ...] = (),
              module: str = "pytest_paddle_infer.models.exporter",
              timeout: Optional[float] = None, timeout_option: str = "") -> dict:
    """The last stdout line (JSON) of the exporter (or ``module``) in a child process, which is
    killed past ``timeout`` (ChildTimedOut); ``search_path`` goes first on its PYTHONPATH."""
    env = dict(os.environ)
    if search_path:
        env["PYTHONPATH"] = os.pathsep.join([*search_path, *filter(None, [env.get("PYTHONPATH")])])
        # and ahead of the working directory, which "python -m" puts first: a module of the
        # same name there (a project's own conftest.py) must not shadow the builder's
        env[BUILDER_PATH_ENV] = os.pathsep.join(search_path)
    if legacy:  # otherwise the installed Paddle's default: forcing PIR on 2.6 crashes jit.save
        env["FLAGS_enable_pir_api"] = "0"
    env.setdefault("GLOG_minloglevel", "2")
    oom_before = oom_kills()
    try:
        # forked from the session's fork server where there is one (no import of paddle)
        spec = for_children()
        proc = (spec and run_command(spec, module, args, env, timeout)) or \
            run([sys.executable, "-m", module, *args], env=env, timeout=timeout)
    except ChildTimeout:
        option = f" ({timeout_option})" if timeout_option else ""
        raise ChildTimedOut(f"{what} failed: the child process timed out after {timeout:g} s{option} "
                            f"and was killed") from None
    if proc.returncode != 0:
        raise ModelError(child_failure(what, proc.returncode, proc.stderr, oom_before))
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):  # the child exited 0 without its answer (os._exit(0))
        raise ModelError(f"{what} failed: the child process exited without an answer"
                         + (f"\n{_trim_child_error(proc.stderr)}" if proc.stderr.strip() else "")) from None


def child_failure(what: str, returncode: int, stderr: str, oom_before: Optional[int] = None) -> str:
    """``WHAT failed: the child process was killed by SIGSEGV``, then the end of what it printed."""
    how = f"the child process {how_it_ended(returncode, oom_before)}"
    tail = _trim_child_error(stderr)
    return f"{what} failed: {how}" + (f"\n{tail}" if tail else "")


def _trim_child_error(stderr: str) -> str:
    """Keep the end of a child's traceback: Paddle's own message and the user's source line."""
    lines = [l for l in strip_ansi(stderr).splitlines()  # not warnings, nor glog's info and warning lines
             if l.strip() and "warnings.warn" not in l and "Warning:" not in l and not GLOG_NOTE.match(l)]
    for i, line in enumerate(lines):  # dy2static errors carry the user's code below this line
        if "In transformed code" in line:
            return "\n".join(lines[i:])[-4000:]
    starts = [i for i, l in enumerate(lines) if l.startswith("Traceback (most recent call last)")]
    return _user_traceback(lines[starts[-1] + 1:]) if starts else "\n".join(lines[-25:])


PLUGIN_DIR = str(Path(__file__).resolve().parent.parent)
GLOG_NOTE = re.compile(r"[IW]\d{4} ")  # glog's I1128 12:00:00.000 ... and W1128 ... lines
USER_FRAMES = 4


def _user_traceback(lines) -> str:
    """The last ``USER_FRAMES`` frames of the user's own code in a child's traceback, and the exception."""
    frames, current, i = [], None, 0
    while i < len(lines) and lines[i].startswith(" "):
        line = lines[i]
        if line.lstrip().startswith('File "'):
            current = [line]
            frames.append(current)
        elif current is not None:
            current.append(line)
        i += 1
    exception = lines[i:]

    def users(frame) -> bool:
        path = frame[0].split('"')[1] if frame[0].count('"') >= 2 else ""
        return not (path.startswith((PLUGIN_DIR, "<")) or "site-packages" in path
                    or path.startswith(sys.prefix) or path.startswith(sys.base_prefix))

    kept = [l for f in [f for f in frames if users(f)][-USER_FRAMES:] for l in f]
    return "\n".join(kept + exception[-25:])


def _source_key(source: ModelSource) -> str:
    _, version = installed_paddle()
    # only what the export depends on: the input signature, not how input data are drawn
    signature = [[i.name, list(i.shape), i.dtype] for i in source.inputs or ()]
    text = json.dumps([source.kind, source.ref, source.kwargs, version, ZOO_VERSION, signature,
                       source.fingerprint], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def export_dir(source: ModelSource, cache_dir: Path, legacy: bool) -> Path:
    flavour = "legacy" if legacy else "default"
    stem = source.ref if source.kind == "zoo" else source.name  # a suite's alias shares the export
    return Path(cache_dir) / "models" / f"{stem}-{_source_key(source)}-{flavour}"


def resolve(source: ModelSource, cache_dir: Path, legacy: bool = False) -> ModelFiles:
    """Model files for a source; zoo entries and builders exported on first use (``legacy``: .pdmodel)."""
    if source.kind == "path":
        prog, params = find_model_files(source.ref)
        if legacy and prog.suffix != ".pdmodel":
            raise ModelError(f"model {prog} is a PIR program; no legacy .pdmodel was given")
        return ModelFiles(source.name, str(prog), str(params),
                          source.inputs or declared_inputs(prog, cache_dir))
    quantized = source.kind == "zoo" and ZOO[source.ref].quantized
    legacy = legacy or quantized  # Paddle 3.3.1 cannot load their PIR export (quantized.py)
    directory = export_dir(source, cache_dir, legacy)
    inputs = source.inputs
    if inputs is None:
        raise ModelError(f"model {source.name!r}: a builder needs its inputs declared")

    def build(tmp: Path) -> dict:
        spec = [{"name": i.name, "shape": list(i.shape), "dtype": i.dtype} for i in inputs]
        builder = ZOO[source.ref].builder if source.kind == "zoo" else source.ref
        result = run_child(["export", builder, json.dumps(dict(source.kwargs)), json.dumps(spec),
                            str(tmp / "inference"), *(["int8-weights"] if quantized else [])], legacy,
                           f"exporting model {source.name!r} (paddle.jit.to_static, paddle.jit.save)",
                           source.search_path)
        return {"source": source.ref, "paddle": result["paddle"],
                "weights": result.get("weights", ""), "sources": result.get("sources", {})}

    if str(directory) in _failed_exports:  # every case of the model: one export attempt
        raise _failed_exports[str(directory)]
    try:
        cached_build(directory, build)
    except ModelError as e:
        _failed_exports[str(directory)] = e
        raise
    programs = [p for p in directory.iterdir() if p.suffix in PROGRAM_EXTENSIONS and p.name != MANIFEST]
    if legacy and not any(p.suffix == ".pdmodel" for p in programs):
        raise ModelError(f"the installed Paddle did not write a legacy .pdmodel for {source.name!r}")
    prog = directory / ("inference.pdmodel" if legacy or not (directory / "inference.json").exists()
                        else "inference.json")
    return ModelFiles(source.name, str(prog), str(directory / "inference.pdiparams"), inputs)


def declared_inputs(prog: Path, cache_dir: Path, timeout: Optional[float] = None) -> Tuple[InputSpec, ...]:
    """A model file's declared inputs (cached by content); ``timeout``: the reading child's deadline."""
    stat = prog.stat()
    key = hashlib.sha256(f"{prog.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    path = Path(cache_dir) / "inspect" / f"{key}.json"
    data = read_record(path, key)
    if data is None or not _valid_inputs(data.get("inputs")):
        data = run_child(["inspect", str(prog)], prog.suffix == ".pdmodel",
                         f"reading the inputs of {prog}", timeout=timeout, timeout_option="--paddle-timeout")
        write_record(path, key, data)
    return tuple(InputSpec(i["name"], tuple(i["shape"]), i["dtype"]) for i in data["inputs"])


def _valid_inputs(inputs) -> bool:
    try:
        return all(isinstance(i["name"], str) and isinstance(i["dtype"], str)
                   and all(isinstance(d, int) for d in i["shape"]) for i in inputs)
    except (TypeError, KeyError):
        return False


# Records (inspections, signatures) carry a digest of content and key: an edited one is never trusted
def _record_digest(key: str, data) -> str:
    return hashlib.sha256(json.dumps([key, data], sort_keys=True, default=str).encode()).hexdigest()


def write_record(path: Path, key: str, data: dict) -> None:
    cache_subdir(path.parent)
    if path.is_dir():  # a directory in its place (damage)
        remove_entry(path)
    atomic_write(path, json.dumps({"data": data, "digest": _record_digest(key, data)}))


def read_record(path: Path, key: str) -> Optional[dict]:
    """The record's data, or None when it is missing, unreadable or not what was written."""
    try:
        sealed = json.loads(path.read_text())
        data, digest = sealed["data"], sealed["digest"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data if isinstance(data, dict) and digest == _record_digest(key, data) else None

_signatures: Dict[str, object] = {}  # per process: each builder is asked once


def builder_signature(source: ModelSource, cache_dir: Path, timeout: Optional[float] = None):
    """The ``binding.Signature`` of the layer a builder returns (asked of a child, cached with
    the sources it read), or None when it cannot be built here (its export then says why)."""
    text = json.dumps([source.ref, source.kwargs, source.fingerprint, installed_paddle()[1],
                       list(source.search_path)], sort_keys=True, default=str)
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    if key in _signatures:
        if isinstance(_signatures[key], ChildTimedOut):
            raise _signatures[key]
        return _signatures[key]
    path = Path(cache_dir) / "signatures" / f"{key}.json"
    data = read_record(path, key)
    try:
        if data is not None and any(file_sha256(Path(p)) != digest
                                    for p, digest in data.get("sources", {}).items()):
            data = None
    except (OSError, ValueError, TypeError, AttributeError):
        data = None
    if data is None:
        try:
            data = run_child(["signature", source.ref, json.dumps(dict(source.kwargs))], False,
                             f"building {source.name!r} to read its forward's parameters",
                             source.search_path, timeout=timeout, timeout_option="--paddle-timeout")
        except ChildTimedOut as e:
            _signatures[key] = e
            raise
        except (ModelError, ValueError, IndexError):
            _signatures[key] = None
            return None
        write_record(path, key, data)
    try:
        _signatures[key] = Signature.from_json(data["signature"])
    except (KeyError, TypeError, ValueError, AttributeError):  # what the child answered: odd
        _signatures[key] = None
    return _signatures[key]
