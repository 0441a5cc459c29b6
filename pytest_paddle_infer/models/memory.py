"""Will a case's inputs fit in memory? Asked before anything is allocated, so an absurd shape
errors on its case instead of the kernel killing the executor. A rough estimate: the inputs'
bytes times ``HELD_COPIES`` (two seeds, copies in both predictors, activations; measured:
tiny_cnn at 8x3x1024x1024 peaked at 13x its inputs)."""
from __future__ import annotations

import math
from contextlib import suppress
from pathlib import Path
from typing import Optional, Sequence, Tuple

from ..errors import InputError
from .inputs import InputSpec, numpy_dtype, shape_label

HELD_COPIES = 8
MEMINFO = Path("/proc/meminfo")
CGROUP_LIMITS = (  # (limit, usage): cgroup v2, then v1, as a container sees its own
    (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory.current")),
    (Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"), Path("/sys/fs/cgroup/memory/memory.usage_in_bytes")),
)


def _meminfo_available(path: Path = MEMINFO) -> Optional[int]:
    with suppress(OSError, ValueError, IndexError):
        for line in path.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # kB
    return None


def _cgroup_available(limits=CGROUP_LIMITS) -> Optional[int]:
    for limit_path, usage_path in limits:
        try:
            limit = limit_path.read_text().strip()
            usage = int(usage_path.read_text().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:  # "max" or a huge number: no limit
            return max(0, int(limit) - usage)
    return None


def available_memory() -> Optional[Tuple[int, str]]:
    """(bytes available, where the figure comes from), or None where none can be read."""
    figures = [(b, where) for b, where in ((_meminfo_available(), "MemAvailable in /proc/meminfo"),
                                           (_cgroup_available(), "the cgroup's memory limit"))
               if b is not None]
    return min(figures) if figures else None


def input_bytes(specs: Sequence[InputSpec]) -> int:
    """Bytes of the generated inputs (not those read from files or with a dynamic dim left)."""
    return sum(math.prod(int(d) for d in s.shape) * numpy_dtype(s.dtype).itemsize for s in specs
               if not s.file and not any(d is None or d < 0 for d in s.shape))


def size_text(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024


def check_fits(model: str, specs: Sequence[InputSpec], available=available_memory) -> None:
    """``InputError`` when the inputs, held ``HELD_COPIES`` times over, need more than is available."""
    need_inputs = input_bytes(specs)
    free = available() if need_inputs else None
    need = need_inputs * HELD_COPIES
    if free is None or need <= free[0]:
        return
    free_bytes, where = free
    shapes = ", ".join(f"{s.name} {shape_label(s.shape)} {s.dtype}" for s in specs if not s.file)
    raise InputError(
        f"{model}: the inputs ({shapes}) take {size_text(need_inputs)}; a case holds them about "
        f"{HELD_COPIES} times over (inputs of two seeds, the baseline's and the candidate's copies, "
        f"activations), an estimated {size_text(need)}, more than the {size_text(free_bytes)} "
        f"available ({where}); nothing was allocated. Use smaller shapes.")
