"""How many CPU math threads one predictor may be given: more than a machine can schedule is a
usage error (Paddle's OpenMP aborts the process). The limit is generous, ``PER_CPU`` per usable
CPU and at least ``FLOOR``, so a suite written on a big machine still runs on a small one."""
from __future__ import annotations

import os
from typing import Optional

PER_CPU = 4
FLOOR = 64


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


CPUS = usable_cpus()
MAX_THREADS = max(FLOOR, PER_CPU * CPUS)
LIMIT_TEXT = (f"at most {MAX_THREADS} (the larger of {FLOOR} and {PER_CPU} per usable CPU; "
              f"{CPUS} usable here)")


def threads_problem(n: int) -> Optional[str]:
    """What is wrong with ``n`` CPU math threads, or None."""
    if n < 1:
        return "a predictor needs at least one thread"
    return f"more threads than this machine can schedule: {LIMIT_TEXT}" if n > MAX_THREADS else None
