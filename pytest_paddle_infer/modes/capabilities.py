"""What the installed Paddle can run: CUDA, TensorRT, oneDNN. Imports paddle when asked."""
from __future__ import annotations

import functools
import json
import os
import sys
from dataclasses import asdict, dataclass
from importlib import metadata, util
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple

from .run_modes import RunMode

PADDLE_DISTRIBUTIONS = ("paddlepaddle", "paddlepaddle-gpu")


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

    @property
    def tensorrt(self) -> bool:
        return any(self.trt_compile) and any(self.trt_runtime)

    @property
    def describe(self) -> str:
        cuda = f"CUDA yes ({self.gpu_count} GPU)" if self.cuda else "CUDA no"
        trt = "TensorRT " + (_dotted(self.trt_compile) if any(self.trt_compile) else "no")
        return f"{self.distribution} {self.version}, {cuda}, {trt}, oneDNN {'yes' if self.onednn else 'no'}"

    def missing_for(self, mode: RunMode, device_id: Optional[int] = None) -> Optional[str]:
        """Why ``mode`` (on GPU ``device_id``, when given) cannot run here, or None when it
        can. Build-time gaps come first: a GPU appearing would not fix them."""
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
        return None


def import_paddle():
    """Import paddle without the start-up warnings it prints (a missing ccache, ...)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle
    return paddle


def normalize_trt_version(version: Tuple[int, ...]) -> Tuple[int, ...]:
    """Paddle's ``GetTrtRuntimeVersion`` splits ``getInferLibVersion()`` as major*1000 +
    minor*100 + patch, TensorRT 8's encoding; TensorRT 10 encodes major*10000 + minor*100 +
    patch, so 10.5.0 (100500) reads as (100, 5, 0). No TensorRT major reaches 100: re-split
    such a triple the TensorRT 10 way."""
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
    if cuda:
        try:
            gpu_count = int(paddle.device.cuda.device_count())
        except Exception:  # a driver problem reads as "no device"
            gpu_count = 0

    def _version(fn_name: str) -> Tuple[int, ...]:
        fn = getattr(inference, fn_name, None)
        try:
            return normalize_trt_version(tuple(int(v) for v in fn())) if fn else (0,)
        except Exception:  # libnvinfer missing at run time
            return (0,)

    dist, _ = installed_paddle()
    core = getattr(paddle, "base", None) or paddle.fluid  # paddle < 2.6 calls it fluid
    onednn = bool(getattr(core.core, "is_compiled_with_mkldnn", lambda: True)())
    return Capabilities(
        distribution=dist or "paddle",
        version=paddle.__version__,
        commit=getattr(paddle.version, "commit", ""),
        cuda=cuda,
        gpu_count=gpu_count,
        trt_compile=_version("get_trt_compile_version"),
        trt_runtime=_version("get_trt_runtime_version"),
        onednn=onednn,
    )


# -- what the pytest process knows without importing paddle ------------------------------

INSTALLATION_FILE = "installation.json"


def installation_key() -> list:
    """What identifies the installed Paddle and the devices it sees, without importing it."""
    spec = util.find_spec("paddle")
    origin = spec.origin if spec is not None and spec.origin else ""
    try:
        stamp = os.stat(origin).st_mtime_ns if origin else 0
    except OSError:
        stamp = 0
    return [*installed_paddle(), origin, stamp, sys.executable,
            os.environ.get("CUDA_VISIBLE_DEVICES")]


def known_installation(cache_dir: Path, ask: Callable[[], Tuple[Capabilities, Dict[str, str]]]
                       ) -> Tuple[Capabilities, Dict[str, str]]:
    """The capabilities and software environment of the installed Paddle, as ``ask`` (the
    executor, which imports paddle anyway) reports them, remembered per installation in the
    cache dir: the pytest process itself never imports paddle."""
    path = Path(cache_dir) / INSTALLATION_FILE
    key = installation_key()
    try:
        saved = json.loads(path.read_text())
        if saved["key"] == key:
            caps = saved["capabilities"]
            caps.update(trt_compile=tuple(caps["trt_compile"]),
                        trt_runtime=normalize_trt_version(tuple(caps["trt_runtime"])))
            return Capabilities(**caps), dict(saved["environment"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    caps, environment = ask()
    try:
        from ..files import atomic_write

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"key": key, "capabilities": asdict(caps),
                                       "environment": environment}, indent=1))
    except OSError:
        pass  # remembering is an optimization
    return caps, environment
