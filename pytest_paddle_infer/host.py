"""The machine a run happened on, as reports and goldens state it: CPU model and the
instruction-set flags that change what Paddle's CPU kernels compute (AVX-512, bf16, VNNI,
AMX pick other oneDNN kernels, so other roundings). Read from /proc/cpuinfo (Linux) or
``platform``; nothing here imports numpy or paddle."""
from __future__ import annotations

import functools
import platform
import re
from typing import Dict

# flags that select kernels; the rest of /proc/cpuinfo's list changes no result
KERNEL_FLAGS = re.compile(r"^(sse4_[12]|avx\w*|fma|f16c|amx\w*|\w*vnni\w*|\w*bf16\w*)$")


@functools.lru_cache(maxsize=1)
def cpu_description() -> Dict[str, str]:
    """``{"cpu": "AMD EPYC", "cpu_flags": "avx avx2 avx512f ... "}`` (values may be empty)."""
    model, flags = platform.processor() or platform.machine(), ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Model name", "cpu model") and model in ("", platform.machine()):
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = " ".join(sorted(w for w in value.split() if KERNEL_FLAGS.match(w)))
                if flags and model:
                    break
    except OSError:  # not Linux
        pass
    return {"cpu": model, "cpu_flags": flags}
