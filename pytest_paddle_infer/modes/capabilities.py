"""What the installed Paddle and this machine can run: CUDA, TensorRT, oneDNN, and the CPU's
bf16 and int8 kernels. Imports paddle when asked."""
from __future__ import annotations

import functools
import json
import os
import sys
import warnings
from contextlib import suppress
from dataclasses import asdict, dataclass
from importlib import metadata, util
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple

from ..host import (INT8_AVX2, INT8_AVX512, INT8_AVX512_VNNI, VNNI_FAMILIES, cpu_description,
                    int8_kernels, isa_text)
from .run_modes import CPU, RUN_MODES, RunMode
from ..files import atomic_write

PADDLE_DISTRIBUTIONS = ("paddlepaddle", "paddlepaddle-gpu")
# For tests of the skip: set (not "" or "0"), detect reports a CPU without bf16 (tests/conftest.py
# ``cpu_without_bf16``). Part of the installation key.
NO_BF16_ENV = "PADDLE_INFER_TEST_NO_BF16"


def bf16_hidden() -> bool:
    return os.environ.get(NO_BF16_ENV, "") not in ("", "0")


def installed_paddle() -> Tuple[str, str]:
    """(distribution, version) without importing paddle; ("", "") when none is installed."""
    for dist in PADDLE_DISTRIBUTIONS:
        try:
            return dist, metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return "", ""


@dataclass(frozen=True)
class Capabilities:
    distribution: str
    version: str
    commit: str
    cuda: bool
    gpu_count: int
    trt_compile: Tuple[int, ...]
    trt_runtime: Tuple[int, ...]
    onednn: bool
    # the CPU (None: not known, nothing skips for it)
    cpu: str = ""  # model name (host.cpu_description)
    cpu_flags: str = ""  # its kernel-selecting flags (host.KERNEL_FLAGS)
    bf16: Optional[bool] = None  # Paddle's supports_bfloat16(): without it bf16 runs as fp32
    bf16_hidden: bool = False  # bf16 reads False because NO_BF16_ENV is set (tests)
    int8_kernels: Optional[str] = None  # host.INT8_* family; "": none (supports_int8() False)

    @property
    def tensorrt(self) -> bool:
        return any(self.trt_compile) and any(self.trt_runtime)

    @property
    def describe(self) -> str:
        cuda = f"CUDA yes ({self.gpu_count} GPU)" if self.cuda else "CUDA no"
        trt = "TensorRT " + (_dotted(self.trt_compile) if any(self.trt_compile) else "no")
        return f"{self.distribution} {self.version}, {cuda}, {trt}, oneDNN {'yes' if self.onednn else 'no'}"

    @property
    def cpu_text(self) -> str:
        """``AMD EPYC: avx2``: the CPU model and what of its flags the CPU modes depend on."""
        return f"{self.cpu or 'CPU model unknown'}: {isa_text(self.cpu_flags)}"

    @property
    def vnni(self) -> bool:
        return self.int8_kernels in VNNI_FAMILIES

    def cpu_modes_line(self) -> str:
        """The header's CPU line: the CPU, the modes that run or skip, the int8 kernel family."""
        cpu_modes = [mode for mode in RUN_MODES.values() if mode.device == CPU]
        runs = [mode.name for mode in cpu_modes if self.missing_for(mode) is None]
        skips = [f"{mode.name} skips ({_short_need(mode, self)})" for mode in cpu_modes
                 if self.missing_for(mode) is not None]
        text = f"CPU {self.cpu or 'model unknown'} ({isa_text(self.cpu_flags)}): {', '.join(runs)} run"
        if "onednn_int8" in runs and self.int8_kernels:
            text += (f"; onednn_int8's int8 kernels: {self.int8_kernels}"
                     + ("" if self.vnni else " (slower, and larger differences than with VNNI: "
                        "README, int8 on the CPU)"))
        return "; ".join([text] + skips)

    def missing_for(self, mode: RunMode, device_id: Optional[int] = None) -> Optional[str]:
        """Why ``mode`` (on GPU ``device_id``, when given) cannot run here, or None. Build-time
        gaps come first: a GPU appearing would not fix them."""
        where = f"{self.distribution} {self.version} installed here"
        trt = "tensorrt" in mode.needs
        if "cuda" in mode.needs and not self.cuda:
            what = "CUDA and TensorRT" if trt else "CUDA"
            return f"{mode.name} needs Paddle built with {what}; {where} is CPU-only"
        if trt and not any(self.trt_compile):
            return (f"{mode.name} needs Paddle built with TensorRT; {where} was built with CUDA "
                    f"but without TensorRT")
        if "cuda" in mode.needs and self.gpu_count == 0:
            return (f"{mode.name} needs a visible GPU; {where} has CUDA but sees no device "
                    f"(check the driver and CUDA_VISIBLE_DEVICES)")
        if trt and not any(self.trt_runtime):
            return (f"{mode.name} needs the TensorRT runtime (libnvinfer) "
                    f"{_dotted(self.trt_compile)} that {where} was built against; none was "
                    f"found (add TensorRT's lib dir to LD_LIBRARY_PATH)")
        if trt and self.trt_runtime[0] != self.trt_compile[0]:
            return (f"{mode.name} needs TensorRT {self.trt_compile[0]}.x, which {where} was "
                    f"built against ({_dotted(self.trt_compile)}); the runtime found is "
                    f"{_dotted(self.trt_runtime)}")
        if "cuda" in mode.needs and device_id is not None and not 0 <= device_id < self.gpu_count:
            return (f"{mode.name} was asked for GPU {device_id}; {where} sees "
                    f"{self.gpu_count} GPU(s), numbered 0..{self.gpu_count - 1}")
        if "onednn" in mode.needs and not self.onednn:
            return f"{mode.name} needs Paddle built with oneDNN; {where} was built without it"
        if "bf16" in mode.needs and self.bf16 is False:
            why = (f"counts as having none: {NO_BF16_ENV} is set (a test of this skip)"
                   if self.bf16_hidden else "has none, and Paddle would silently run fp32")
            return f"{mode.name} needs a CPU with avx512 (bf16); this one ({self.cpu_text}) {why}"
        if "int8" in mode.needs and self.int8_kernels == "":
            return (f"{mode.name} needs a CPU with avx2 or avx512 (oneDNN's int8 kernels); this one "
                    f"({self.cpu_text}) has neither")
        return None


def _short_need(mode: RunMode, caps: Capabilities) -> str:
    """Why a CPU mode skips, in a few words, for the header (``missing_for`` says it whole)."""
    if "onednn" in mode.needs and not caps.onednn:
        return "Paddle built without oneDNN"
    if "bf16" in mode.needs and caps.bf16 is False:
        return f"bf16 hidden by {NO_BF16_ENV}" if caps.bf16_hidden else \
            "no avx512 (bf16): Paddle would run fp32"
    return "no avx2 or avx512 int8 kernels"


def import_paddle():
    """Import paddle without the start-up warnings it prints (a missing ccache, ...)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle
    return paddle


def normalize_trt_version(version: Tuple[int, ...]) -> Tuple[int, ...]:
    """Paddle decodes TensorRT's version the TensorRT 8 way (major*1000), so 10.5.0 (100500)
    reads as (100, 5, 0): re-split such a triple the TensorRT 10 way (major*10000)."""
    if len(version) != 3 or version[0] < 100:
        return version
    code = version[0] * 1000 + version[1] * 100 + version[2]
    return (code // 10000, code // 100 % 100, code % 100)


def _dotted(version: Tuple[int, ...]) -> str:
    return ".".join(map(str, version))


@functools.lru_cache(maxsize=1)
def detect() -> Capabilities:
    paddle = import_paddle()
    from paddle import inference

    cuda = bool(paddle.is_compiled_with_cuda())
    gpu_count = 0
    with suppress(Exception):  # a driver problem reads as "no device"
        gpu_count = int(paddle.device.cuda.device_count()) if cuda else 0

    def _version(fn_name: str) -> Tuple[int, ...]:
        fn = getattr(inference, fn_name, None)
        try:
            return normalize_trt_version(tuple(int(v) for v in fn())) if fn else (0,)
        except Exception:  # libnvinfer missing at run time
            return (0,)

    dist, _ = installed_paddle()
    core = paddle.base.core
    onednn = bool(getattr(core, "is_compiled_with_mkldnn", lambda: True)())
    return Capabilities(distribution=dist or "paddle", version=paddle.__version__,
                        commit=getattr(paddle.version, "commit", ""), cuda=cuda, gpu_count=gpu_count,
                        trt_compile=_version("get_trt_compile_version"),
                        trt_runtime=_version("get_trt_runtime_version"), onednn=onednn, **cpu_facts(core))


def cpu_facts(core) -> Dict[str, object]:
    """The CPU's Capabilities fields: model and flags (host.py), and Paddle's own ``supports_*`` answers."""
    def ask(name: str) -> Optional[bool]:
        fn = getattr(core, name, None)
        try:
            return bool(fn()) if fn is not None else None
        except Exception:  # a build that cannot tell: not known
            return None

    described = cpu_description()
    flags = described["cpu_flags"]
    bf16, int8, vnni = ask("supports_bfloat16"), ask("supports_int8"), ask("supports_vnni")
    family: Optional[str] = int8_kernels(flags) if flags else None
    if int8 is False:
        family = ""
    elif int8 and not family:  # no flags read (not Linux): Paddle's answers alone
        family = INT8_AVX512_VNNI if vnni else (INT8_AVX512 if ask("supports_avx512f") else INT8_AVX2)
    hidden = bf16_hidden() and bf16 is not False
    return {"cpu": described["cpu"], "cpu_flags": flags, "bf16": False if hidden else bf16,
            "bf16_hidden": hidden, "int8_kernels": family}


INSTALLATION_FILE = "installation.json"
# What decides the GPUs and TensorRT libraries Paddle finds at run time (FLAGS_tensorrt_dir:
# where Paddle 3.x loads libnvinfer from): a changed value is another answer.
RUNTIME_ENV = ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "FLAGS_tensorrt_dir")


def installation_key() -> list:
    """What identifies the installed Paddle and what it sees, without importing it."""
    spec = util.find_spec("paddle")
    origin = spec.origin if spec is not None and spec.origin else ""
    stamp = 0
    with suppress(OSError):
        stamp = os.stat(origin).st_mtime_ns if origin else 0
    cpu = cpu_description()  # a cache dir may move to another machine
    return [*installed_paddle(), origin, stamp, sys.executable,
            *(os.environ.get(name) for name in RUNTIME_ENV), cpu["cpu"], cpu["cpu_flags"], bf16_hidden()]


def incomplete(caps: Capabilities) -> bool:
    """A CUDA build without a GPU, or TensorRT without its runtime: fixed outside the key, not kept."""
    return caps.cuda and (caps.gpu_count == 0 or (any(caps.trt_compile) and not any(caps.trt_runtime)))


def known_installation(cache_dir: Path, ask: Callable[[], Tuple[Capabilities, Dict[str, str]]]
                       ) -> Tuple[Capabilities, Dict[str, str]]:
    """The installed Paddle's capabilities and environment as ``ask`` (the executor) reports
    them, remembered per installation in the cache dir: the pytest process never imports paddle."""
    path = Path(cache_dir) / INSTALLATION_FILE
    key = installation_key()
    with suppress(OSError, ValueError, KeyError, TypeError):
        saved = json.loads(path.read_text())
        if saved["key"] == key:
            caps = saved["capabilities"]
            caps.update(trt_compile=tuple(caps["trt_compile"]),
                        trt_runtime=normalize_trt_version(tuple(caps["trt_runtime"])))
            return Capabilities(**caps), dict(saved["environment"])
    caps, environment = ask()
    if incomplete(caps):
        path.unlink(missing_ok=True)
        return caps, environment
    with suppress(OSError):  # remembering is an optimization
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"key": key, "capabilities": asdict(caps),
                                       "environment": environment}, indent=1))
    return caps, environment
