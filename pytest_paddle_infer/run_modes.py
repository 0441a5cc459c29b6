"""Run modes as data: each mode is a recipe, the list of ``paddle.inference.Config`` calls
that turns a plain config into that mode.

A recipe is plain data so it can be printed in a failure, compared against the table in the
docs and checked against the installed ``Config`` signatures without building a predictor.
Toggles (``ir_optim``, ``memory_optim``, ``delete_passes``, ``threads``) modify a mode; they
are not modes of their own.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence, Tuple

from .errors import OptionError


@dataclass(frozen=True)
class Precision:
    """A ``paddle.inference.PrecisionType`` member, named so recipes stay importable
    without paddle."""

    name: str  # Float32 | Half | Int8 | Bfloat16

    def __repr__(self) -> str:
        return f"PrecisionType.{self.name}"


@dataclass(frozen=True)
class Call:
    """One method call on a ``paddle.inference.Config``."""

    method: str
    args: Tuple[Any, ...] = ()
    kwargs: Tuple[Tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        return f"{self.method}({', '.join(parts)})"


def call(method: str, *args: Any, **kwargs: Any) -> Call:
    return Call(method, tuple(args), tuple(kwargs.items()))


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


DEFAULT_TOLERANCE = Tolerance(1e-4, 1e-4)


@dataclass(frozen=True)
class RunMode:
    name: str
    device: str  # "cpu" | "gpu"
    calls: Tuple[Call, ...]
    needs: Tuple[str, ...]  # capabilities: "cuda", "tensorrt"
    tolerance: Tolerance  # default for this mode; every configured tolerance wins over it
    summary: str


# Settings the GPU recipes share; documented in the README's run-mode table.
GPU_MEMORY_POOL_MB = 256
TRT_WORKSPACE_SIZE = 1 << 30
TRT_MIN_SUBGRAPH_SIZE = 3  # the Paddle-TRT guide's value; the debug demo's 5 hides small subgraphs


def _trt_calls(precision: str, use_calib_mode: bool) -> Tuple[Call, ...]:
    return (
        call("enable_use_gpu", GPU_MEMORY_POOL_MB, 0, Precision("Float32")),
        call("switch_ir_optim", True),
        call(
            "enable_tensorrt_engine",
            workspace_size=TRT_WORKSPACE_SIZE,
            max_batch_size=1,
            min_subgraph_size=TRT_MIN_SUBGRAPH_SIZE,
            precision_mode=Precision(precision),
            use_static=False,
            use_calib_mode=use_calib_mode,
        ),
    )


RUN_MODES: Mapping[str, RunMode] = {
    m.name: m
    for m in (
        RunMode(
            "cpu_fp32", "cpu",
            (call("disable_mkldnn"), call("switch_ir_optim", True)),
            (), DEFAULT_TOLERANCE, "native CPU kernels, IR optimization on",
        ),
        RunMode(
            "onednn_fp32", "cpu",
            (call("enable_mkldnn"), call("switch_ir_optim", True)),
            (), DEFAULT_TOLERANCE, "oneDNN kernels and fusions, fp32",
        ),
        RunMode(
            "onednn_bf16", "cpu",
            (call("enable_mkldnn"), call("switch_ir_optim", True), call("enable_mkldnn_bfloat16")),
            (), Tolerance(atol=5e-2, rtol=5e-2), "oneDNN with bfloat16 kernels where supported",
        ),
        RunMode(
            "onednn_int8", "cpu",
            (call("enable_mkldnn"), call("switch_ir_optim", True), call("enable_mkldnn_int8")),
            (), Tolerance(atol=1e-1, rtol=1e-1), "oneDNN int8 (for quantized models)",
        ),
        RunMode(
            "gpu_fp32", "gpu",
            (call("enable_use_gpu", GPU_MEMORY_POOL_MB, 0, Precision("Float32")),
             call("switch_ir_optim", True)),
            ("cuda",), DEFAULT_TOLERANCE, "Paddle GPU kernels, fp32",
        ),
        RunMode(
            "gpu_fp16", "gpu",
            (call("enable_use_gpu", GPU_MEMORY_POOL_MB, 0, Precision("Half")),
             call("switch_ir_optim", True)),
            ("cuda",), Tolerance(atol=1e-2, rtol=1e-2), "Paddle GPU mixed precision, fp16",
        ),
        RunMode(
            "trt_fp32", "gpu", _trt_calls("Float32", use_calib_mode=False),
            ("cuda", "tensorrt"), DEFAULT_TOLERANCE, "TensorRT subgraphs, fp32",
        ),
        RunMode(
            "trt_fp16", "gpu", _trt_calls("Half", use_calib_mode=False),
            ("cuda", "tensorrt"), Tolerance(atol=1e-2, rtol=1e-2), "TensorRT subgraphs, fp16",
        ),
        RunMode(
            "trt_int8", "gpu", _trt_calls("Int8", use_calib_mode=True),
            ("cuda", "tensorrt"), Tolerance(atol=1e-1, rtol=1e-1),
            "TensorRT subgraphs, int8 with calibration",
        ),
    )
}

ALIASES: Mapping[str, str] = {
    "mkldnn_fp32": "onednn_fp32",
    "mkldnn_bf16": "onednn_bf16",
    "mkldnn_int8": "onednn_int8",
}

TOGGLES = ("ir_optim", "memory_optim", "delete_passes", "threads")


def canonical_mode(name: str) -> str:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in RUN_MODES:
        raise OptionError(
            f"unknown run mode {name!r}; valid run modes: {', '.join(RUN_MODES)} "
            f"(aliases: {', '.join(ALIASES)})"
        )
    return key


@dataclass(frozen=True)
class RunModeSpec:
    """A run mode with the toggles that modify it."""

    mode: str
    ir_optim: Optional[bool] = None
    memory_optim: bool = False
    delete_passes: Tuple[str, ...] = ()
    threads: Optional[int] = None

    @property
    def run_mode(self) -> RunMode:
        return RUN_MODES[self.mode]

    @property
    def label(self) -> str:
        """The id part: the mode, then any toggle that changes it."""
        parts = [self.mode]
        if self.ir_optim is not None:
            parts.append("ir" if self.ir_optim else "noir")
        if self.memory_optim:
            parts.append("memopt")
        parts.extend(f"no_{p}" for p in self.delete_passes)
        if self.threads is not None:
            parts.append(f"t{self.threads}")
        return "+".join(parts)


def recipe(spec: RunModeSpec, threads: Optional[int] = None) -> Tuple[Call, ...]:
    """The full list of Config calls for a run mode and its toggles."""
    calls = list(spec.run_mode.calls)
    if spec.ir_optim is not None:
        calls = [c for c in calls if c.method != "switch_ir_optim"]
        calls.append(call("switch_ir_optim", spec.ir_optim))
    if spec.memory_optim:
        calls.append(call("enable_memory_optim"))
    calls.extend(call("delete_pass", p) for p in spec.delete_passes)
    n = spec.threads if spec.threads is not None else threads
    if n is not None and spec.run_mode.device == "cpu":
        calls.append(call("set_cpu_math_library_num_threads", n))
    return tuple(calls)


def baseline_recipe(device: str, threads: Optional[int] = None) -> Tuple[Call, ...]:
    """The seeds' baseline: same device, fp32, IR optimization off, oneDNN off."""
    if device == "gpu":
        calls = [call("enable_use_gpu", GPU_MEMORY_POOL_MB, 0, Precision("Float32")),
                 call("switch_ir_optim", False)]
    else:
        calls = [call("disable_mkldnn"), call("switch_ir_optim", False)]
        if threads is not None:
            calls.append(call("set_cpu_math_library_num_threads", threads))
    return tuple(calls)


def parse_mode_list(values: Sequence[str]) -> Tuple[RunModeSpec, ...]:
    """``--run-mode a,b --run-mode c`` -> specs, in order, without repeats."""
    seen: list[RunModeSpec] = []
    for value in values:
        for part in str(value).split(","):
            if not part.strip():
                continue
            spec = RunModeSpec(canonical_mode(part))
            if spec not in seen:
                seen.append(spec)
    return tuple(seen)
