"""Which GPU a worker's GPU run modes use: ``--paddle-device`` and the xdist worker id (worker
k takes GPU k mod count). No paddle here: the GPU count comes from the caller."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from ..errors import OptionError

WORKER_ENV = "PYTEST_XDIST_WORKER"
MAIN_WORKER = "main"  # the name of a run without xdist, in cache dirs and the header

DEVICE_FORMS = ("auto (xdist worker k uses GPU k mod the visible count; default)",
                "gpu:N (every worker uses GPU N)",
                "gpu:N,M,... (worker k uses the (k mod count)-th GPU of the list)")


@dataclass(frozen=True)
class DeviceChoice:
    """``ids`` empty: every visible GPU, round robin over workers."""

    ids: Tuple[int, ...] = ()

    @property
    def text(self) -> str:
        return "gpu:" + ",".join(map(str, self.ids)) if self.ids else "auto"


AUTO = DeviceChoice()


def parse_device(text: Optional[str]) -> DeviceChoice:
    """``--paddle-device`` value -> a choice; anything else names the valid forms."""
    value = (text or "auto").strip().lower()
    if value == "auto":
        return AUTO
    match = re.fullmatch(r"gpu:(\d+(?:,\d+)*)", value.replace(" ", ""))
    if not match:
        hint = ""
        if value in ("cpu", "gpu") or value.startswith("cpu"):
            hint = (" (CPU run modes always run on the CPU; this option only picks the GPU of GPU run modes)")
        raise OptionError(f"--paddle-device: {text!r} is not a device{hint}; valid forms: "
                          + "; ".join(DEVICE_FORMS))
    ids = tuple(int(i) for i in match.group(1).split(","))
    if len(set(ids)) != len(ids):
        raise OptionError(f"--paddle-device: {text!r} names a GPU twice; valid forms: "
                          + "; ".join(DEVICE_FORMS))
    return DeviceChoice(ids)


def current_worker() -> str:
    """``gw3`` in an xdist worker, ``main`` otherwise."""
    return os.environ.get(WORKER_ENV) or MAIN_WORKER


def worker_index(worker: str) -> int:
    """``gw3`` -> 3; a run without xdist is worker 0."""
    match = re.fullmatch(r"gw(\d+)", worker or "")
    return int(match.group(1)) if match else 0


def gpu_for_worker(choice: DeviceChoice, worker: str, gpu_count: int) -> int:
    """The GPU id ``worker`` uses; an explicit id even where fewer GPUs are seen (the case skips)."""
    ids: Sequence[int] = choice.ids or range(gpu_count)
    # no GPU visible: 0, and GPU cases skip before any device is used
    return ids[worker_index(worker) % len(ids)] if ids else 0


def mapping_line(choice: DeviceChoice, numprocesses: Optional[int], gpu_count: int,
                 gpu_modes: Sequence[str]) -> str:
    """The report header's line for GPU run modes: which worker uses which GPU."""
    modes = ", ".join(gpu_modes) or "any"
    if gpu_count == 0 and not choice.ids:
        return f"paddle-infer: GPU run modes ({modes}): no GPU visible here, their cases skip"
    pairs = ", ".join(f"{w} -> gpu:{gpu_for_worker(choice, w, gpu_count)}"
                      for w in ([f"gw{k}" for k in range(numprocesses)] if numprocesses else [MAIN_WORKER]))
    return (f"paddle-infer: GPU run modes ({modes}) per worker: {pairs} "
            f"(--paddle-device={choice.text}, {gpu_count} GPU(s) visible)")
