"""Saved runs: outputs (``o0, ...``), intermediates (``t00000, ...``, in execution order) and
``__meta__`` JSON in one compressed ``.npz`` written member by member (one tensor in memory at a
time); ``meta["intermediates"]`` lists each tensor's index, name, op type, shape, dtype, storage."""
from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple

import numpy as np

from ..files import atomic_write, load_error_text
from ..goldens import FORMAT, GoldenError, golden_path, legacy_file_name, replaceable
from .capture import Record, fingerprint

META = "__meta__"
FLOAT16_MAX = 65504.0  # beyond it float16 holds inf: such a tensor stays in its own dtype

TensorSource = Iterable[Tuple[dict, Callable[[], np.ndarray]]]  # (entry, load) per tensor


def tensor_key(index: int) -> str:
    return f"t{index:05d}"


def store_entries(store) -> TensorSource:
    """A spilled baseline store's tensors (capture.BaselineStore), in execution order."""
    for r in getattr(store, "records", ()):
        entry = {"index": r.index, "name": r.name, "op_type": r.op_type, "shape": list(r.shape),
                 "dtype": r.dtype}
        yield entry, (lambda r=r: store.load(r))


def write_archive(f, outputs: Mapping[str, np.ndarray], tensors: TensorSource,
                  meta: Mapping[str, object], float16: bool = False) -> None:
    """Write the ``.npz`` into the binary file object ``f`` (deflate-compressed)."""
    entries: List[dict] = []
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for i, array in enumerate(outputs.values()):  # outputs decide the verdict: as computed
            _member(zf, f"o{i}", np.asarray(array))
        for entry, load in tensors:
            array = np.asarray(load())
            entry = dict(entry)
            if float16 and _fits_float16(array):
                array = array.astype(np.float16)
                entry["stored"] = "float16"
            _member(zf, tensor_key(entry["index"]), array)
            entries.append(entry)
            del array
        full = dict(meta, intermediates=entries, tensor_store="float16" if float16 else "as computed")
        with zf.open(META + ".npy", "w") as member:
            np.lib.format.write_array(member, np.array(json.dumps(full, sort_keys=True)))


def _member(zf: zipfile.ZipFile, key: str, array: np.ndarray) -> None:
    with zf.open(key + ".npy", "w", force_zip64=True) as member:
        np.lib.format.write_array(member, array, allow_pickle=False)


def _fits_float16(array: np.ndarray) -> bool:
    if array.dtype not in (np.float32, np.float64) or array.size == 0:
        return False
    finite = array[np.isfinite(array)]
    return not finite.size or float(np.abs(finite).max()) <= FLOAT16_MAX


class SavedTensors:
    """A saved run's intermediates, read like a spilled baseline store."""
    def __init__(self, path: Path, entries: Iterable[Mapping[str, object]]):
        self.path = Path(path)
        self.records: List[Record] = []
        self.by_name: Dict[str, Record] = {}
        self._stored: Dict[int, str] = {}
        self._data = np.load(self.path, allow_pickle=False)
        for e in entries:
            index = int(e["index"])
            record = Record(index, str(e["op_type"]), str(e["name"]), tuple(e["shape"]),
                            str(e["dtype"]), self.path, np.zeros(0))
            self._stored[index] = str(e.get("stored", ""))
            record.fingerprint = fingerprint(self._read(record))
            self.records.append(record)
            self.by_name[record.name] = record

    def _read(self, record: Record) -> np.ndarray:
        """The first read of a tensor: a missing or damaged member is the file's fault."""
        try:
            return self.load(record)
        except (KeyError, ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
            self._data.close()
            raise GoldenError(f"{self.path}: intermediate tensor #{record.index} ({record.name}) "
                              f"cannot be read ({load_error_text(e)}); rewrite it with "
                              f"--paddle-update-goldens") from None

    def load(self, record: Record) -> np.ndarray:
        array = self._data[tensor_key(record.index)]
        # compared in the dtype it was computed in (float16 storage rounds, it does not retype)
        return array.astype(record.dtype) if self._stored.get(record.index) else array

    def remove(self) -> None:
        self._data.close()


def saved_tensors(path: Path, meta: Mapping[str, object]) -> Optional[SavedTensors]:
    """The intermediates a saved run holds, or None when it holds none."""
    entries = meta.get("intermediates") or []
    return SavedTensors(path, entries) if entries else None


def write_golden(directory: Path, case_id: str, outputs: Mapping[str, "np.ndarray"],
                 meta: Mapping[str, object], store=None, float16: bool = False) -> Path:
    """Write one case's golden atomically, with ``store``'s intermediate tensors; returns its path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = golden_path(directory, case_id)
    if not replaceable(path):
        raise GoldenError(f"{path} is not a golden or saved run paddle-infer wrote, and paddle-infer never "
                          f"overwrites a file it did not write: move it away, or record into an empty "
                          f"or a paddle-infer goldens directory")
    full = dict(meta, format=FORMAT, case_id=case_id, outputs=list(outputs),
                recorded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    atomic_write(path, lambda f: write_archive(f, outputs, store_entries(store), full, float16), durable=True)
    legacy = directory / legacy_file_name(case_id)
    if legacy != path and legacy.is_file() and replaceable(legacy):  # rewritten: not counted twice
        legacy.unlink()
    return path
