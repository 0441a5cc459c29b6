"""What the installed Paddle can run: CUDA, TensorRT, oneDNN. Imports paddle when asked."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import metadata
from typing import Optional, Tuple

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
        trt = "TensorRT " + (
            ".".join(map(str, self.trt_compile)) if any(self.trt_compile) else "no"
        )
        return f"{self.distribution} {self.version}, {cuda}, {trt}, oneDNN {'yes' if self.onednn else 'no'}"

    def missing_for(self, mode: RunMode) -> Optional[str]:
        """Why ``mode`` cannot run here, or None when it can."""
        where = f"{self.distribution} {self.version} installed here"
        if "cuda" in mode.needs and not self.cuda:
            what = "CUDA and TensorRT" if "tensorrt" in mode.needs else "CUDA"
            return f"{mode.name} needs Paddle built with {what}; {where} is CPU-only"
        if "cuda" in mode.needs and self.gpu_count == 0:
            return f"{mode.name} needs a visible GPU; {where} has CUDA but sees no device"
        if "tensorrt" in mode.needs:
            if not any(self.trt_compile):
                return f"{mode.name} needs Paddle built with TensorRT; {where} was built without it"
            if not any(self.trt_runtime):
                return (f"{mode.name} needs the TensorRT runtime (libnvinfer) that {where} "
                        f"was built against ({'.'.join(map(str, self.trt_compile))}); none was found")
        if mode.name.startswith("onednn") and not self.onednn:
            return f"{mode.name} needs Paddle built with oneDNN; {where} was built without it"
        return None


def import_paddle():
    """Import paddle without the start-up warnings it prints (a missing ccache, ...)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle
    return paddle


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
            return tuple(int(v) for v in fn()) if fn else (0,)
        except Exception:  # libnvinfer missing at run time
            return (0,)

    dist, _ = installed_paddle()
    onednn = bool(getattr(paddle.base.core, "is_compiled_with_mkldnn", lambda: True)())
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
