"""Files on disk: a lock shared by processes, atomic writes, shell-safe file names for case
ids, and numpy array files checked against what a model takes. No numpy or filelock import at
module level: the plugin imports this at start-up."""
from __future__ import annotations

import hashlib
import os
import re
import secrets
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Callable, Dict, Iterator, Optional, Sequence, Tuple, Union

from .errors import InputError

if TYPE_CHECKING:
    import numpy as np

PathLike = Union[str, "os.PathLike[str]"]


@contextmanager
def file_lock(lock_path: PathLike) -> Iterator[None]:
    """Exclusive across processes while held; the lock file (which holds no data) may stay."""
    from filelock import FileLock

    lock_path = Path(lock_path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock_path)):
        yield


def atomic_write(path: PathLike, content: Union[bytes, str, Callable[[BinaryIO], None]],
                 durable: bool = False) -> Path:
    """Readers see the old file or the whole new one (a temporary file renamed into place); ``content``:
    bytes, text (UTF-8) or a function writing to a binary file; ``durable``: fsynced first (goldens)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:  # a hidden name no other writer (process or thread) uses
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(content):
                content(f)
            else:
                f.write(content.encode() if isinstance(content, str) else content)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# nothing POSIX shells, cmd.exe or PowerShell treat specially inside a word ("=" and "," are
# argument separators in cmd.exe, "," builds a list in PowerShell), valid on every file system
SAFE_CHARACTERS = "A-Za-z0-9_.+-"
MAX_STEM = 120


def safe_file_stem(case_id: str, limit: int = MAX_STEM) -> str:
    """A shell-safe stem valid on every file system: ``a[1x3-cpu_fp32]`` -> ``a-1x3-cpu_fp32-<hash>``;
    when anything was replaced (or cut at ``limit``), 8 hex digits of the id's SHA-1 keep ids apart."""
    stem = case_id.replace("::", "__")
    stem = re.sub(r"\[(.*)\]$", r"-\1", stem, flags=re.S)
    stem = re.sub(f"[^{SAFE_CHARACTERS}]+", "_", stem)
    if not re.match(r"[A-Za-z0-9_]", stem):  # no leading "-" (an option) or "." (hidden)
        stem = "_" + stem
    if stem != case_id or len(stem) > limit:
        digest = hashlib.sha1(case_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        stem = f"{stem[:limit - len(digest) - 1]}-{digest}"
    return stem


NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # an .npz is a zip archive (empty: end record only)
SAVE_FIX = "save it with numpy.save (one array) or numpy.savez (one array per input name)"


@dataclass(frozen=True)
class WantedArray:
    """An array a model takes: its name, numpy dtype and shape (-1: any size; None: any shape)."""

    name: str
    dtype: str
    shape: Optional[Tuple[int, ...]] = None


class ArrayFileError(InputError, ValueError):
    """An array file that cannot be used, in parts a caller may format (a ValueError too)."""

    def __init__(self, path: PathLike, problem: str, expected: str, found: str, fix: str = ""):
        self.path, self.problem, self.expected, self.found, self.fix = Path(path), problem, expected, found, fix
        super().__init__(f"{path} {problem}: expected {expected}, found {found}"
                         + (f"; {fix}" if fix else ""))


def load_arrays(path: PathLike, wanted: Sequence[WantedArray], exact: bool = False,
                mmap: bool = False, shape_fix: str = "") -> Dict[str, "np.ndarray"]:
    """The arrays of an ``.npy`` (one wanted) or ``.npz`` (one per name; ``exact``: no others), checked
    against their dtype and shape, read without pickle; ``mmap`` maps an ``.npy`` (its shape, cheaply)."""
    loaded = open_array_file(Path(path), mmap)
    names = [w.name for w in wanted]
    if not hasattr(loaded, "files"):  # an .npy
        if len(wanted) != 1:
            raise ArrayFileError(path, "holds a single array", f"one array per input ({_names(names)})",
                                 "an .npy file", "save an .npz holding one array per input name")
        arrays = {names[0]: loaded}
    else:
        with loaded:
            held = list(loaded.files)
            missing = [n for n in names if n not in held]
            unknown = [n for n in held if n not in names]
            if exact and (missing or unknown):
                raise ArrayFileError(path, "holds other arrays than the model's inputs",
                                     f"arrays {_names(names)}",
                                     f"arrays {_names(held)} (missing: {_names(missing) or 'none'}; "
                                     f"unknown: {_names(unknown) or 'none'})",
                                     "save one array per input, named after it")
            if missing:
                raise ArrayFileError(path, f"has no array named {missing[0]!r}",
                                     f"an array named {missing[0]!r}", f"arrays {_names(held) or 'none'}",
                                     "save the array under the input's name: numpy.savez(path, name=array)")
            arrays = {n: _member(path, loaded, n) for n in (held if exact else names)}
    for want in wanted:
        _check(path, want, arrays[want.name], shape_fix)
    return arrays


def open_array_file(path: Path, mmap: bool = False):
    """``numpy.load`` without pickle, errors said as the file's; an ``.npz`` is returned open."""
    import numpy as np

    try:
        with open(path, "rb") as f:
            head = f.read(len(NPY_MAGIC))
    except OSError as e:
        raise ArrayFileError(path, "cannot be read", "a readable .npy or .npz file",
                             e.strerror or str(e)) from None
    if not (head.startswith(NPY_MAGIC) or head[:4] in ZIP_MAGICS):
        raise _invalid(path, "an empty file" if not head else
                       "neither numpy's .npy header nor an .npz (zip) archive")
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except OSError as e:
        if e.errno is not None:  # the file system's error, not the format's
            raise ArrayFileError(path, "cannot be read", "a readable .npy or .npz file",
                                 e.strerror or str(e)) from None
        raise _invalid(path, _content_problem(e)) from None
    except Exception as e:  # numpy's, zipfile's and zlib's errors about the content
        raise _invalid(path, _content_problem(e)) from None


def _member(path: PathLike, npz, name: str) -> "np.ndarray":
    import numpy as np

    try:
        array = npz[name]
    except Exception as e:
        raise _invalid(path, f"array {name!r}: {_content_problem(e)}") from None
    if not isinstance(array, np.ndarray):  # numpy returns the raw bytes of a non-.npy member
        raise _invalid(path, f"member {name!r} is not an .npy array")
    return array


def _invalid(path: PathLike, found: str) -> ArrayFileError:
    return ArrayFileError(path, "is not a valid numpy array file",
                          "an .npy or .npz file of numeric arrays", found, SAVE_FIX)


def load_error_text(e: BaseException) -> str:
    """numpy's error loading a file, in words that never invite loading it unsafely."""
    text = str(e)
    if any(word in text.lower() for word in ("pickle", "object arrays", "python objects")):
        return "an array of Python objects (only numeric arrays are read)"
    return f"{type(e).__name__}: {text}"


def _content_problem(e: BaseException) -> str:
    text = load_error_text(e)
    return text if text.startswith("an array of Python objects") else f"damaged or incomplete content ({text})"


def _check(path: PathLike, want: WantedArray, array: "np.ndarray", shape_fix: str) -> None:
    import numpy as np

    if array.dtype != np.dtype(want.dtype):
        raise ArrayFileError(path, f"holds array {want.name!r} with the wrong dtype", str(np.dtype(want.dtype)),
                             str(array.dtype), f"save it as {np.dtype(want.dtype)}")
    if want.shape is None:
        return
    shape = tuple(int(d) for d in array.shape)
    expected = tuple(-1 if d is None else int(d) for d in want.shape)
    if len(shape) != len(expected) or any(e >= 0 and s != e for s, e in zip(shape, expected)):
        text = f"{list(expected)}" + (" (-1: any size)" if any(e < 0 for e in expected) else "")
        raise ArrayFileError(path, f"holds array {want.name!r} with the wrong shape", text,
                             str(list(shape)), shape_fix)


def _names(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def file_sha256(path) -> str:
    """A file's SHA-256, read in 1 MB pieces."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
