"""Run modes as data: each mode is a recipe, the list of ``paddle.inference.Config`` calls
that turns a plain config into that mode.

A recipe is plain data so it can be printed in a failure, compared against the table in the
docs and checked against the installed ``Config`` signatures (``signatures.py``) without
building a predictor. Toggles (``ir_optim``, ``memory_optim``, ``delete_passes``, ``threads``
and the GPU ones in ``GPU_TOGGLES``) modify a mode; they are not modes of their own.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

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
    """One method call on a ``paddle.inference.Config``. ``optional`` calls are skipped
    when the installed Config lacks the method (it came in a later Paddle)."""

    method: str
    args: Tuple[Any, ...] = ()
    kwargs: Tuple[Tuple[str, Any], ...] = ()
    optional: bool = False

    def __str__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        text = f"{self.method}({', '.join(parts)})"
        return text + " [if available]" if self.optional else text


def call(method: str, *args: Any, **kwargs: Any) -> Call:
    return Call(method, tuple(args), tuple(kwargs.items()))


def optional_call(method: str, *args: Any, **kwargs: Any) -> Call:
    return Call(method, tuple(args), tuple(kwargs.items()), optional=True)


class ShapeMap(dict):
    """``{input name: shape}`` that hashes, so a Call holding it stays hashable. A dict
    subclass because pybind's ``dict[str, list[int]]`` accepts no other mapping."""

    def __init__(self, shapes: Union[Mapping[str, Sequence[int]], Sequence] = ()):
        super().__init__((str(k), tuple(int(d) for d in v)) for k, v in dict(shapes).items())

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))

    def __reduce__(self):
        return (ShapeMap, (dict(self),))

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("ShapeMap is read-only: it may be shared by hashed recipes")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _read_only
    __ior__ = _read_only


class NameSet(frozenset):
    """Op names for pybind's ``set[str]``, printed sorted: set order follows per-process
    string hashing, and recipe text must read the same in every worker and run."""

    def __repr__(self) -> str:
        return "{" + ", ".join(map(repr, sorted(self))) + "}"


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


DEFAULT_TOLERANCE = Tolerance(1e-4, 1e-4)


@dataclass(frozen=True)
class RunMode:
    name: str
    device: str  # "cpu" | "gpu"
    calls: Tuple[Call, ...]  # the recipe with every toggle at its default, GPU 0
    needs: Tuple[str, ...]  # capabilities: "cuda", "tensorrt"
    tolerance: Tolerance  # default for this mode; every configured tolerance wins over it
    summary: str
    precision: str = "Float32"  # PrecisionType name the GPU modes run in


# Settings the GPU recipes share; documented in the README's run-mode table.
GPU_MEMORY_POOL_MB = 256
TRT_WORKSPACE_SIZE = 1 << 30
TRT_MIN_SUBGRAPH_SIZE = 3  # the Paddle-TRT guide's value; the debug demo's 5 hides small subgraphs
INT8_SOURCES = ("calibration", "quantized")
TRT_OPTIMIZATION_LEVELS = range(6)  # TensorRT builder levels; 3 is its default
# Generated calibration batches when the run mode names no count; each is one batch of the
# case's shape, so 8 batches of ResNet50 at batch 1 calibrate in seconds.
DEFAULT_CALIBRATION_BATCHES = 8


@dataclass(frozen=True)
class ShapeRange:
    min: Tuple[int, ...]
    opt: Tuple[int, ...]
    max: Tuple[int, ...]


@dataclass(frozen=True)
class DynamicShape:
    """TensorRT dynamic-shape ranges: explicit per input (``DynamicShape.explicit``), or
    ``tuned``: a first pass collects every tensor's shape range from the case's own inputs
    (``shape_collect_recipe``) and the TensorRT predictor is built from that file."""

    ranges: Tuple[Tuple[str, ShapeRange], ...] = ()
    tuned: bool = False
    disable_trt_plugin_fp16: bool = False

    def __post_init__(self) -> None:
        if self.tuned == bool(self.ranges):
            raise OptionError("a TensorRT dynamic shape is either tuned or has explicit "
                              "min/opt/max ranges per input, not both and not neither")
        if self.tuned and self.disable_trt_plugin_fp16:
            raise OptionError("disable_trt_plugin_fp16 is an argument of "
                              "set_trt_dynamic_shape_info: it needs explicit ranges, not tuned")
        names = [n for n, _ in self.ranges]
        if len(set(names)) != len(names):
            raise OptionError(f"dynamic shape: input(s) {sorted({n for n in names if names.count(n) > 1})} "
                              f"have more than one range")
        for name, r in self.ranges:
            if not len(r.min) == len(r.opt) == len(r.max):
                raise OptionError(f"dynamic shape of input {name!r}: min {list(r.min)}, opt "
                                  f"{list(r.opt)} and max {list(r.max)} differ in rank")
            bad = [i for i in range(len(r.min))
                   if not 0 < r.min[i] <= r.opt[i] <= r.max[i]]
            if bad:
                raise OptionError(f"dynamic shape of input {name!r}: need 0 < min <= opt <= max "
                                  f"in every dim; dims {bad} break it (min {list(r.min)}, "
                                  f"opt {list(r.opt)}, max {list(r.max)})")

    @classmethod
    def explicit(cls, ranges: Mapping[str, Tuple[Sequence[int], Sequence[int], Sequence[int]]],
                 disable_trt_plugin_fp16: bool = False) -> "DynamicShape":
        """``{input name: (min, opt, max)}``; note TensorRT's min/opt/max order, not Paddle's
        min/max/opt argument order."""
        return cls(tuple((str(n), ShapeRange(*(tuple(int(d) for d in s) for s in mom)))
                         for n, mom in ranges.items()), False, disable_trt_plugin_fp16)

    def shape_maps(self) -> Tuple[ShapeMap, ShapeMap, ShapeMap]:
        """(min, max, opt) in ``set_trt_dynamic_shape_info``'s argument order."""
        return tuple(ShapeMap({n: getattr(r, k) for n, r in self.ranges})  # type: ignore
                     for k in ("min", "max", "opt"))


def _gpu_calls(precision: str, device_id: int) -> List[Call]:
    return [call("enable_use_gpu", GPU_MEMORY_POOL_MB, device_id, Precision(precision)),
            call("switch_ir_optim", True)]


def _trt_engine(precision: str, use_calib_mode: bool, max_batch_size: int,
                use_static: bool = False) -> Call:
    # Every argument explicit: the binding defaults use_calib_mode to True, the guide to False.
    return call("enable_tensorrt_engine", workspace_size=TRT_WORKSPACE_SIZE,
                max_batch_size=max_batch_size, min_subgraph_size=TRT_MIN_SUBGRAPH_SIZE,
                precision_mode=Precision(precision), use_static=use_static,
                use_calib_mode=use_calib_mode, use_cuda_graph=False)


def _trt_default(precision: str) -> Tuple[Call, ...]:
    return tuple(_gpu_calls("Float32", 0)) + (_trt_engine(precision, precision == "Int8", 1),)


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
            "gpu_fp32", "gpu", tuple(_gpu_calls("Float32", 0)),
            ("cuda",), DEFAULT_TOLERANCE, "Paddle GPU kernels, fp32",
        ),
        RunMode(
            "gpu_fp16", "gpu", tuple(_gpu_calls("Half", 0)),
            ("cuda",), Tolerance(atol=1e-2, rtol=1e-2), "Paddle GPU mixed precision, fp16",
            precision="Half",
        ),
        RunMode(
            "trt_fp32", "gpu", _trt_default("Float32"),
            ("cuda", "tensorrt"), DEFAULT_TOLERANCE, "TensorRT subgraphs, fp32",
        ),
        RunMode(
            "trt_fp16", "gpu", _trt_default("Half"),
            ("cuda", "tensorrt"), Tolerance(atol=1e-2, rtol=1e-2), "TensorRT subgraphs, fp16",
            precision="Half",
        ),
        RunMode(
            "trt_int8", "gpu", _trt_default("Int8"),
            ("cuda", "tensorrt"), Tolerance(atol=1e-1, rtol=1e-1),
            "TensorRT subgraphs, int8 (calibration table or quantized model)",
            precision="Int8",
        ),
    )
}

ALIASES: Mapping[str, str] = {
    "mkldnn_fp32": "onednn_fp32",
    "mkldnn_bf16": "onednn_bf16",
    "mkldnn_int8": "onednn_int8",
}

TOGGLES = ("ir_optim", "memory_optim", "delete_passes", "threads")
# Toggles that only some GPU modes accept; RunModeSpec rejects them elsewhere.
GPU_TOGGLES = ("fp32_ops", "low_precision_io", "disable_trt_ops", "int8_source",
               "dynamic_shape", "trt_optimization_level", "use_static", "calib_batches",
               "calib_data")


def canonical_mode(name: str) -> str:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in RUN_MODES:
        raise OptionError(
            f"unknown run mode {name!r}; valid run modes: {', '.join(RUN_MODES)} "
            f"(aliases: {', '.join(ALIASES)})"
        )
    return key


def _is_trt(mode: str) -> bool:
    return "tensorrt" in RUN_MODES[mode].needs


@dataclass(frozen=True)
class RunModeSpec:
    """A run mode with the toggles that modify it."""

    mode: str
    ir_optim: Optional[bool] = None
    memory_optim: bool = False
    delete_passes: Tuple[str, ...] = ()
    threads: Optional[int] = None
    fp32_ops: Tuple[str, ...] = ()  # gpu_fp16: ops kept in fp32
    low_precision_io: bool = False  # gpu_fp16: fp16 inputs and outputs
    disable_trt_ops: Tuple[str, ...] = ()  # trt_*: op types left to Paddle
    int8_source: str = "calibration"  # trt_int8: "calibration" table or "quantized" model
    dynamic_shape: Optional[DynamicShape] = None  # trt_*
    trt_optimization_level: Optional[int] = None  # trt_*: TensorRT builder level 0..5
    use_static: bool = False  # trt_*: keep engines (and tables, shape ranges) across runs
    calib_batches: Optional[int] = None  # trt_int8 calibration: how many batches
    calib_data: Optional[str] = None  # trt_int8 calibration: a dir of .npy/.npz batches

    def __post_init__(self) -> None:
        for name in ("delete_passes", "fp32_ops", "disable_trt_ops"):
            object.__setattr__(self, name, tuple(getattr(self, name)))  # hashable
        if self.mode not in RUN_MODES:
            return  # canonical_mode reports unknown names
        wrong = []
        if self.mode != "gpu_fp16":
            wrong += [t for t in ("fp32_ops", "low_precision_io") if getattr(self, t)]
        if not _is_trt(self.mode):
            wrong += [t for t in ("disable_trt_ops", "dynamic_shape", "use_static")
                      if getattr(self, t)]
            if self.trt_optimization_level is not None:
                wrong.append("trt_optimization_level")
        if self.mode != "trt_int8" and self.int8_source != "calibration":
            wrong.append("int8_source")
        if not needs_calibration(self):
            wrong += [t for t in ("calib_batches", "calib_data") if getattr(self, t) is not None]
        if wrong:
            raise OptionError(f"run mode {self.mode} does not take {', '.join(wrong)}: "
                              f"{_TOGGLE_MODES}")
        if self.trt_optimization_level is not None and \
                self.trt_optimization_level not in TRT_OPTIMIZATION_LEVELS:
            raise OptionError(f"trt_optimization_level {self.trt_optimization_level}: TensorRT "
                              f"builder levels are 0..5 (3 is its default)")
        if self.int8_source not in INT8_SOURCES:
            raise OptionError(f"int8_source {self.int8_source!r}: use one of {INT8_SOURCES}")
        if self.calib_batches is not None and self.calib_batches < 1:
            raise OptionError(f"calib_batches {self.calib_batches}: calibration needs at least "
                              f"one batch")
        if self.calib_data is not None and not str(self.calib_data).strip():
            raise OptionError("calib_data: give a directory of .npy/.npz calibration batches")
        if _is_trt(self.mode) and self.ir_optim is False:
            raise OptionError(f"{self.mode} with IR optimization off would run no TensorRT "
                              f"subgraph at all (the TensorRT pass is an IR pass)")

    @property
    def run_mode(self) -> RunMode:
        return RUN_MODES[self.mode]

    @property
    def label(self) -> str:
        """The id part: the mode, then each toggle in ``--run-mode`` syntax."""
        parts = [self.mode]
        if self.ir_optim is not None:
            parts.append("ir_optim" if self.ir_optim else "no_ir_optim")
        if self.memory_optim:
            parts.append("memory_optim")
        parts.extend(f"delete_pass={p}" for p in self.delete_passes)
        if self.threads is not None:
            parts.append(f"threads={self.threads}")
        parts.extend(f"fp32_op={op}" for op in self.fp32_ops)
        if self.low_precision_io:
            parts.append("low_precision_io")
        parts.extend(f"disable_trt_op={op}" for op in self.disable_trt_ops)
        if self.int8_source != "calibration":
            parts.append(f"int8_source={self.int8_source}")
        dyn = self.dynamic_shape
        if dyn is not None and dyn.tuned:
            parts.append("dynamic_shape=tuned")
        elif dyn is not None:  # NAME:MIN:OPT:MAX per input, so distinct ranges get distinct ids
            parts.extend(f"dynamic_shape={n}:{_dims(r.min)}:{_dims(r.opt)}:{_dims(r.max)}"
                         for n, r in dyn.ranges)
            if dyn.disable_trt_plugin_fp16:
                parts.append("disable_trt_plugin_fp16")
        if self.trt_optimization_level is not None:
            parts.append(f"trt_optimization_level={self.trt_optimization_level}")
        if self.use_static:
            parts.append("use_static")
        if self.calib_batches is not None:
            parts.append(f"calib_batches={self.calib_batches}")
        if self.calib_data is not None:
            parts.append(f"calib_data={self.calib_data}")
        return "+".join(parts)

    @property
    def calibration_batches(self) -> int:
        """Batches a calibration run feeds: the count asked for, else the default (a data
        directory with fewer files feeds all it has)."""
        return self.calib_batches if self.calib_batches is not None else DEFAULT_CALIBRATION_BATCHES


def _dims(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape)


_TOGGLE_MODES = ("fp32_ops and low_precision_io apply to gpu_fp16; disable_trt_ops, "
                 "dynamic_shape, trt_optimization_level and use_static to trt_*; int8_source "
                 "to trt_int8; calib_batches and calib_data to trt_int8 with int8_source "
                 "calibration")


def _trt_calls(spec: RunModeSpec, device_id: int, shape_range_file: Optional[Union[str, Path]],
               max_batch_size: int) -> List[Call]:
    precision = spec.run_mode.precision
    quantized = spec.int8_source == "quantized"
    calls = _gpu_calls("Float32", device_id)
    calls.append(_trt_engine(precision, precision == "Int8" and not quantized, max_batch_size,
                             spec.use_static))
    if quantized:
        # Q/DQ models: explicit quantization where Paddle has it, else the implicit path.
        calls.append(optional_call("enable_tensorrt_explicit_quantization"))
    dyn = spec.dynamic_shape
    if dyn is not None and dyn.tuned:
        if shape_range_file is None:
            raise OptionError(f"{spec.label} needs the shape-range file that "
                              f"shape_collect_recipe() makes the first pass write")
        calls.append(call("enable_tuned_tensorrt_dynamic_shape", str(shape_range_file), True))
    elif dyn is not None:
        calls.append(call("set_trt_dynamic_shape_info", *dyn.shape_maps(),
                          dyn.disable_trt_plugin_fp16))
    if spec.disable_trt_ops:
        calls.append(call("exp_disable_tensorrt_ops", spec.disable_trt_ops))
    if spec.trt_optimization_level is not None:
        calls.append(optional_call("set_tensorrt_optimization_level",
                                   spec.trt_optimization_level))
    return calls


def recipe(spec: RunModeSpec, threads: Optional[int] = None, device_id: int = 0,
           shape_range_file: Optional[Union[str, Path]] = None,
           max_batch_size: int = 1) -> Tuple[Call, ...]:
    """The full list of Config calls for a run mode and its toggles. ``max_batch_size``
    matters to static-shape TensorRT only: a larger batch fails there."""
    mode = spec.run_mode
    if _is_trt(spec.mode):
        calls = _trt_calls(spec, device_id, shape_range_file, max_batch_size)
    elif mode.device == "gpu":
        calls = _gpu_calls(mode.precision, device_id)
        if spec.fp32_ops:
            calls.append(call("exp_disable_mixed_precision_ops", NameSet(spec.fp32_ops)))
        if spec.low_precision_io:
            # Not optional: without it inputs stay fp32 and the case tests something else.
            calls.append(call("enable_low_precision_io", True))
    else:
        calls = list(mode.calls)
    if spec.ir_optim is not None:
        calls = [c for c in calls if c.method != "switch_ir_optim"]
        calls.append(call("switch_ir_optim", spec.ir_optim))
    if spec.memory_optim:
        calls.append(call("enable_memory_optim"))
    calls.extend(call("delete_pass", p) for p in spec.delete_passes)
    n = spec.threads if spec.threads is not None else threads
    if n is not None and mode.device == "cpu":
        calls.append(call("set_cpu_math_library_num_threads", n))
    return tuple(calls)


def baseline_recipe(device: str, threads: Optional[int] = None,
                    device_id: int = 0) -> Tuple[Call, ...]:
    """The seeds' baseline: same device, fp32, IR optimization off, oneDNN off."""
    if device == "gpu":
        calls = [call("enable_use_gpu", GPU_MEMORY_POOL_MB, device_id, Precision("Float32")),
                 call("switch_ir_optim", False)]
    else:
        calls = [call("disable_mkldnn"), call("switch_ir_optim", False)]
        if threads is not None:
            calls.append(call("set_cpu_math_library_num_threads", threads))
    return tuple(calls)


def shape_collect_recipe(spec: RunModeSpec, shape_range_file: Union[str, Path],
                         device_id: int = 0) -> Tuple[Call, ...]:
    """First pass of tuned dynamic shape: plain GPU fp32 that records every tensor's shape
    range (Paddle turns its optimizations off in this mode)."""
    if spec.dynamic_shape is None or not spec.dynamic_shape.tuned:
        raise OptionError(f"{spec.label} has no tuned dynamic shape to collect")
    return (call("enable_use_gpu", GPU_MEMORY_POOL_MB, device_id, Precision("Float32")),
            call("collect_shape_range_info", str(shape_range_file)))


def optim_cache_call(cache_dir: Union[str, Path]) -> Call:
    """Where TensorRT engines and int8 calibration tables (``trt_calib_*``) go; the predictor
    builder appends it to TensorRT recipes, one dir per ``optim_cache_subdir``."""
    return call("set_optim_cache_dir", str(cache_dir))


def optim_cache_subdir(model_key: str, spec: RunModeSpec, worker: str = "main",
                       shapes: Optional[Mapping[str, Sequence[int]]] = None) -> str:
    """A relative dir per (model, run mode with toggles, shapes and ranges, worker), so
    workers never share an engine or a half-written calibration table."""
    shape_text = sorted((k, tuple(v)) for k, v in (shapes or {}).items())
    digest = hashlib.sha1(repr((spec, shape_text)).encode()).hexdigest()[:10]
    safe = lambda s: re.sub(r"[^A-Za-z0-9_.=+-]+", "_", s)[:80]  # noqa: E731
    return f"{safe(model_key)}/{safe(spec.mode)}-{digest}/{safe(worker)}"


def needs_calibration(spec: RunModeSpec) -> bool:
    """trt_int8 from a calibration table: the first predictor writes the table while it runs
    the calibration inputs, and only a predictor built after that runs in int8."""
    return spec.mode == "trt_int8" and spec.int8_source == "calibration"


def calibration_tables(cache_dir: Union[str, Path]) -> List[Path]:
    return sorted(Path(cache_dir).glob("trt_calib_*"))


def check_shape_in_range(shapes: Mapping[str, Sequence[int]],
                         dynamic: Optional[DynamicShape]) -> None:
    """Raise OptionError when a case's input shape lies outside the declared TensorRT range
    (Paddle would fail deep in engine building, or rebuild silently). Inputs without a range
    are left to Paddle: they may feed no TensorRT subgraph."""
    if dynamic is None or dynamic.tuned:
        return
    problems = []
    unknown = [n for n, _ in dynamic.ranges if n not in shapes]
    if unknown:
        problems.append(f"ranges name inputs {unknown} but the case's inputs are {list(shapes)}")
    for name, r in dynamic.ranges:
        if name not in shapes:
            continue
        shape = [int(d) for d in shapes[name]]
        if len(shape) != len(r.min):
            problems.append(f"input {name!r} has shape {shape}, rank {len(shape)}; its range "
                            f"has rank {len(r.min)} (min {list(r.min)}, max {list(r.max)})")
            continue
        dims = [f"dim {i}: {d} not in [{lo}, {hi}]"
                for i, (d, lo, hi) in enumerate(zip(shape, r.min, r.max)) if not lo <= d <= hi]
        if dims:
            problems.append(f"input {name!r} shape {shape} is outside its range min "
                            f"{list(r.min)} .. max {list(r.max)} ({'; '.join(dims)})")
    if problems:
        raise OptionError("TensorRT dynamic shape: " + "; ".join(problems)
                          + "; widen the range or drop the shape")


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
