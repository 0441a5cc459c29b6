"""The machine a run happened on, as reports and goldens state it: CPU model, the flags that
change what Paddle's CPU kernels compute, and the oneDNN kernel families they select. Read from
/proc/cpuinfo (Linux) or ``platform``; no numpy or paddle here."""
from __future__ import annotations

import functools
import platform
import re
from contextlib import suppress
from typing import Dict

# flags that select kernels; the rest of /proc/cpuinfo's list changes no result
KERNEL_FLAGS = re.compile(r"^(sse4_[12]|avx\w*|fma|f16c|amx\w*|\w*vnni\w*|\w*bf16\w*)$")


@functools.lru_cache(maxsize=1)
def cpu_description() -> Dict[str, str]:
    """``{"cpu": "AMD EPYC", "cpu_flags": "avx avx2 avx512f ... "}`` (values may be empty)."""
    model, flags = platform.processor() or platform.machine(), ""
    with suppress(OSError):  # not Linux
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
    return {"cpu": model, "cpu_flags": flags}


# oneDNN's avx512_core, which Paddle's ``supports_bfloat16()`` asks for: without it Paddle
# runs an onednn_bf16 config in fp32, silently
AVX512_CORE = ("avx512f", "avx512bw", "avx512vl", "avx512dq")

# oneDNN int8 kernel families, best first: without VNNI (avx2, avx512) pairs of products are
# summed in int16 first, with saturation: larger differences, and slower
INT8_AMX, INT8_AVX512_VNNI, INT8_AVX_VNNI = "AMX", "avx512 VNNI", "AVX-VNNI"
INT8_AVX512, INT8_AVX2 = "avx512 without VNNI", "avx2 without VNNI"
VNNI_FAMILIES = (INT8_AMX, INT8_AVX512_VNNI, INT8_AVX_VNNI)


def vector_level(flags: str) -> str:
    """The widest vector set oneDNN uses: "avx512" (avx512_core), "avx2", "avx", "sse4_2" or ""."""
    have = set(flags.split())
    if all(f in have for f in AVX512_CORE):
        return "avx512"
    return next((f for f in ("avx2", "avx", "sse4_2") if f in have), "")


def isa_text(flags: str) -> str:
    """What of ``flags`` decides the CPU run modes: vector level, VNNI, bf16, AMX ("avx512, amx_bf16")."""
    have = flags.split()
    extra = [f for f in have if re.search(r"vnni|bf16|^amx_(int8|bf16)$", f)]
    parts = [p for p in [vector_level(flags)] + extra if p]
    return ", ".join(parts) or "no vector flags known"


def int8_kernels(flags: str) -> str:
    """The oneDNN int8 kernel family of a CPU with ``flags`` (INT8_*); "" for none (no avx2)."""
    have = set(flags.split())
    if "amx_int8" in have:
        return INT8_AMX
    if "avx512_vnni" in have and vector_level(flags) == "avx512":
        return INT8_AVX512_VNNI
    if "avx_vnni" in have:
        return INT8_AVX_VNNI
    return {"avx512": INT8_AVX512, "avx2": INT8_AVX2}.get(vector_level(flags), "")
