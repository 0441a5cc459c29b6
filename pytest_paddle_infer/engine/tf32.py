"""TF32 on GPU: the baseline computes in true fp32; what the fp32 candidates use is said. On
compute capability 8.0+ cuBLAS and cuDNN may run fp32 products in TF32; Paddle's switches for them
are process-wide, read at each call. TensorRT's builder sets its own TF32 flag, never cleared."""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator, Optional, Tuple

from ..modes.capabilities import import_paddle

# compute capability from which GPUs have TF32 tensor cores (Ampere)
TF32_CAPABILITY = (8, 0)


def _core():
    return import_paddle().base.core


def switches() -> Optional[Tuple[bool, bool]]:
    """(cuBLAS, cuDNN) TF32 switches of this process; None where this Paddle has none."""
    core = _core()
    get_blas, get_dnn = getattr(core, "get_cublas_switch", None), getattr(core, "get_cudnn_switch", None)
    if get_blas is None or get_dnn is None:
        return None
    return bool(get_blas()), bool(get_dnn())


def set_switches(blas: bool, dnn: bool) -> None:
    core = _core()
    core.set_cublas_switch(blas)
    core.set_cudnn_switch(dnn)


_lock = threading.Lock()
_holders = 0  # blocks inside true_fp32 now, in any thread (a baseline beside another)
_saved: Optional[Tuple[bool, bool]] = None


@contextlib.contextmanager
def true_fp32() -> Iterator[str]:
    """Both switches off for the block, restored when the last such block ends; yields what it did."""
    global _holders, _saved
    if switches() is None:
        yield "TF32 could not be turned off: this Paddle has no cuBLAS/cuDNN TF32 switch"
        return
    with _lock:
        if _holders == 0:
            _saved = switches()
            set_switches(False, False)
        _holders += 1
    try:
        yield "TF32 off (cuBLAS and cuDNN switches cleared for this run): true fp32"
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _saved is not None:
                set_switches(*_saved)


def capability(device_id: int) -> Optional[Tuple[int, int]]:
    """The GPU's compute capability; None where it cannot be read."""
    try:
        import paddle

        major, minor = paddle.device.cuda.get_device_capability(device_id)
        return int(major), int(minor)
    except Exception:
        return None


def candidate_text(tensorrt: bool, state: Optional[Tuple[bool, bool]], cc: Optional[Tuple[int, int]]) -> str:
    """An fp32 GPU candidate's TF32 use: the switches, TensorRT's flag, the GPU's TF32."""
    on = lambda v: "on" if v else "off"  # noqa: E731
    parts = ["cuBLAS/cuDNN TF32 switches not readable in this Paddle" if state is None
             else f"cuBLAS TF32 {on(state[0])}, cuDNN TF32 {on(state[1])}"]
    if tensorrt:
        parts.append("TensorRT builder TF32 flag on (Paddle never clears it)")
    if cc is None:
        parts.append("compute capability unknown")
    elif cc < TF32_CAPABILITY:
        parts.append(f"compute capability {cc[0]}.{cc[1]} has no TF32: computes in fp32 (the "
                     f"mode's default tolerance allows for TF32; a tighter one holds here)")
    else:
        parts.append(f"compute capability {cc[0]}.{cc[1]}: TF32 tensor cores used where on")
    return "TF32: " + "; ".join(parts)
