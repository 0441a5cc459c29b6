"""Intermediate tensors: hooked out of a predictor in execution order, the baseline's spilled
to disk, the candidate's compared one at a time as they arrive (bounded memory)."""
from __future__ import annotations

import functools
import re
import shutil
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from ..verdict.compare import compare_rule
from ..verdict.rows import TensorComparison
from ..protocol import IntermediateRow
from ..cases.tensor_selection import Selection, op_label
from ..modes.trt_marking import program_name

# PIR programs name intermediates by address: they differ between predictors.
ADDRESS_NAME = re.compile(r"^0x[0-9a-fA-F]+_inner_var_\d+$")
FINGERPRINT_SIZE = 1024
# A structural match: relative difference of sampled values below MATCH_DISTANCE (bf16 drifts
# ~20 % deep in ResNet50; distinct tensors ~100 %), the next-closest AMBIGUITY_RATIO times further.
MATCH_DISTANCE = 0.5
AMBIGUITY_RATIO = 2.0


@functools.lru_cache(maxsize=None)  # once per process
def release_large_buffers_promptly() -> None:
    """Have glibc serve allocations over 1 MiB with mmap, so dropped tensors go back to the OS
    (else peak RSS grows by the spilled tensors: ResNet50 batch 8, +18 %). Best effort."""
    with suppress(OSError, AttributeError):  # not glibc: nothing to tune
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-3, 1 << 20)  # M_MMAP_THRESHOLD


def plain_numpy(tensor, view: bool = False) -> np.ndarray:
    """The tensor's values as numpy, in the plain layout (a oneDNN tensor's raw memory would
    read as mismatches). ``view``: no copy where DLPack allows, valid only while the hook runs."""
    if "ONEDNN" in str(getattr(tensor, "layout", "")).upper():
        tensor = tensor.clone()  # the copy is in the plain layout; .cpu() would not convert
    array = None
    if view:
        with suppress(Exception):  # bfloat16 (numpy has none), a GPU tensor, a Paddle without DLPack
            array = np.from_dlpack(tensor)
    if array is None:
        array = np.asarray(tensor.numpy())
    if "bfloat16" in str(getattr(tensor, "dtype", "")) and array.dtype == np.uint16:
        # numpy has no bfloat16: Paddle hands out the bit patterns; widen them to float32
        array = (array.astype(np.uint32) << 16).view(np.float32)
    return array


class SeenTensors:
    """What the baseline's hooks saw: op types, a few tensor names, and the globs that matched."""
    SAMPLES = 4

    def __init__(self):
        self.op_types: Dict[str, None] = {}
        self.names: List[str] = []
        self.matched: set = set()

    def add(self, name: str, op_type: str, selection: Selection) -> None:
        label = op_label(op_type)
        self.op_types.setdefault(label, None)
        if len(self.names) < self.SAMPLES and name not in self.names:
            self.names.append(name)
        self.matched.update(g for g in selection.globs
                            if g not in self.matched and selection.glob_matches(g, name, op_type))

    def unmatched(self, selection: Selection) -> List[str]:
        return [g for g in selection.globs if g not in self.matched]

    def choices(self) -> str:
        ops = list(self.op_types)
        more = f" and {len(ops) - 12} more" if len(ops) > 12 else ""
        return (f"the op types hooked: {', '.join(ops[:12])}{more}; tensor names look like "
                f"{', '.join(self.names) or 'none (no tensor was hooked)'}")


def selection_problems(store: "BaselineStore", model: str) -> Tuple[str, str]:
    """(error, note): an error when the globs select no tensor, else a note on those that missed."""
    if getattr(store, "seen", None) is None:  # a golden's tensors: selected when it was recorded
        return "", ""
    selection = store.selection
    unmatched = store.seen.unmatched(selection)
    if not selection.globs or not unmatched:
        return "", ""
    if not store.records:
        return (f"intermediates {selection.spec!r} select no tensor of {model}, so no intermediate "
                f"tensor would be compared; globs match tensor names or op types: "
                f"{store.seen.choices()}"), ""
    return "", (f"intermediates: {', '.join(repr(g) for g in unmatched)} matched no tensor of "
                f"{model} ({store.seen.choices()})")


@dataclass
class Record:
    index: int
    op_type: str
    name: str
    shape: Tuple[int, ...]
    dtype: str
    path: Path
    fingerprint: np.ndarray


def fingerprint(array: np.ndarray) -> np.ndarray:
    """Values at fixed positions of the flattened tensor: enough to tell tensors apart."""
    flat = array.reshape(-1)
    if flat.size == 0:
        return np.zeros(0)
    positions = np.linspace(0, flat.size - 1, min(flat.size, FINGERPRINT_SIZE)).astype(np.int64)
    return flat[positions].astype(np.float64)


def print_distance(a: np.ndarray, reference: np.ndarray) -> float:
    """How far fingerprint ``a`` is from ``reference``, relative to the reference."""
    return float(np.linalg.norm(a - reference)) / (float(np.linalg.norm(reference)) + 1e-12)


def nearest(want, prints, limit: float):
    """The key of the (key, fingerprint) pair nearest ``want`` within ``limit``, else None."""
    want = np.asarray(want, dtype=np.float64)
    scored = [(print_distance(p, want), key) for key, p in prints if p.shape == want.shape]
    best = min(scored, key=lambda s: s[0], default=(limit, None))
    return best[1] if best[0] < limit else None


class BaselineStore:
    """The baseline's hooked tensors, each written to its own ``.npy`` file as it arrives."""
    def __init__(self, directory: Path, selection: Selection):
        self.directory = Path(directory)
        self.selection = selection
        self.records: List[Record] = []
        self.by_name: Dict[str, Record] = {}
        self.seen = SeenTensors()  # every hooked tensor, selected or not: a glob's misses
        release_large_buffers_promptly()
        if self.directory.exists():
            shutil.rmtree(self.directory)
        self.directory.mkdir(parents=True)

    def __call__(self, op_type: str, name: str, tensor) -> None:
        self.seen.add(name, op_type, self.selection)
        if not self.selection.wants(name, op_type):
            return
        array = plain_numpy(tensor, view=True)  # written out before the hook returns
        path = self.directory / f"{len(self.records):05d}.npy"
        np.save(path, array)
        record = Record(len(self.records), op_label(op_type), name, tuple(array.shape),
                        str(array.dtype), path, fingerprint(array))
        self.records.append(record)
        self.by_name[name] = record  # a name written twice (in-place ops): the last write wins

    def load(self, record: Record) -> np.ndarray:
        return np.load(record.path)

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


class Aligner:
    """Pairs a candidate tensor with its baseline tensor: by name, else by values when unambiguous."""
    def __init__(self, store: BaselineStore):
        self.store = store
        self.last_index = -1

    def match(self, name: str, shape: Tuple[int, ...], dtype: str,
              print_: np.ndarray) -> Tuple[Optional[Record], str]:
        if not ADDRESS_NAME.match(name):
            # a TensorRT engine's tensors carry Paddle's _subgraph_<id> suffix
            record = self.store.by_name.get(name) or self.store.by_name.get(program_name(name))
            if record is not None:
                return record, "name"
        # renamed by a pass (PIR addresses, oneDNN bf16 quantize/dequantize names): by structure
        scored = [(print_distance(print_, r.fingerprint), r.index <= self.last_index, r.index, r)
                  for r in self.store.records if r.shape == shape and r.dtype == dtype]
        if not scored:
            return None, "no baseline tensor of this shape and dtype"
        scored.sort(key=lambda s: s[:3])
        best = scored[0]
        if best[0] > MATCH_DISTANCE:
            return None, f"no baseline tensor with these values (closest differs by {best[0]:.3g})"
        fits = [s for s in scored if s[0] <= max(best[0] * AMBIGUITY_RATIO, 1e-6)]
        if len(fits) > 1 and not all(np.array_equal(best[3].fingerprint, s[3].fingerprint) for s in fits):
            return None, f"ambiguous: {len(fits)} baseline tensors fit"
        # one fit, or copies of one value (a fetch of an output, an in-place op): either is right
        self.last_index = best[2]
        return best[3], "structure"


class CandidateComparer:
    """The candidate's hook sink: compare each selected tensor as it arrives, keep its row."""
    def __init__(self, store: BaselineStore, selection: Selection,
                 rule_for: Callable[[str], object], judged: Callable[[str, str], bool]):
        self.store = store
        self.selection = selection
        self.rule_for = rule_for
        self.judged = judged
        self.aligner = Aligner(store)
        self.rows: List[IntermediateRow] = []

    def wants(self, name: str, op_type: str) -> bool:
        """The selection's verdict; a TensorRT engine's output is wanted when its baseline tensor was."""
        if self.selection.wants(name, op_type):
            return True
        return (op_label(op_type).rsplit(".", 1)[-1] == "tensorrt_engine"
                and program_name(name) in self.store.by_name)

    def __call__(self, op_type: str, name: str, tensor) -> None:
        if not self.wants(name, op_type):
            return
        self.add(op_type, name, plain_numpy(tensor, view=True))  # compared before the hook returns

    def add(self, op_type: str, name: str, array: np.ndarray) -> None:
        """Pair one candidate tensor (live, or read from a saved run) and keep its row."""
        label = op_label(op_type)
        record, how = self.aligner.match(name, tuple(array.shape), str(array.dtype), fingerprint(array))
        # tolerances name the model's tensors: a tensor a pass renamed takes its partner's rules
        rule = self.rule_for(record.name if record is not None and not ADDRESS_NAME.match(record.name)
                             else name)
        if record is None:
            row = TensorComparison(name, (), tuple(array.shape), "", str(array.dtype), rule.atol,
                                   rule.rtol, op_type=label)
            row.problems.append(f"unmatched: {how}")
            self.rows.append(IntermediateRow(len(self.rows), row, "", how, False))
            return
        row = compare_rule(name, array, self.store.load(record), rule, op_type=label)  # every bound
        self.rows.append(IntermediateRow(len(self.rows), row, record.name, how,
                                         self.judged(name, label) or self.judged(record.name, label)))


class HookRouter:
    """One hook per predictor (Paddle keeps hooks for every later run), pointed at each run's sink."""
    def __init__(self, predictor):
        self.sink: Optional[Callable] = None
        # sees every call whatever the sink: what the run executed (recording.py)
        self.recorder: Optional[Callable] = None
        predictor.register_output_hook(self._dispatch)

    def _dispatch(self, op_type, name, tensor) -> None:
        if self.recorder is not None:
            self.recorder(op_type, name, tensor)
        if self.sink is not None:
            self.sink(op_type, name, tensor)


class HookRouters:
    """The router of each hooked predictor, which it keeps alive (ids stay unique) until ``forget``."""
    def __init__(self):
        self._routers: Dict[int, Tuple[object, HookRouter]] = {}

    def for_predictor(self, predictor) -> HookRouter:
        key = id(predictor)
        if key not in self._routers:
            self._routers[key] = (predictor, HookRouter(predictor))
        return self._routers[key][1]

    def forget(self, predictor) -> None:
        self._routers.pop(id(predictor), None)

    def __len__(self) -> int:
        return len(self._routers)


def run_with_sink(router: HookRouter, sink: Callable, run: Callable):
    router.sink = sink
    try:
        return run()
    finally:
        router.sink = None
