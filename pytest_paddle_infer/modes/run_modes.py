"""Run modes (rows of ``RUN_MODES``: traits that code asks instead of the name, a default
tolerance, the recipe of ``paddle.inference.Config`` calls, ``Slot`` arguments filled per case)
and toggles (rows of ``TOGGLES``, toggles.py) as data. Recipes are plain data: printed in
failures, compared with the docs and checked against ``Config``'s signatures without a predictor."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import OptionError
from ..verdict.tolerances import Rule
from .cpu_threads import MAX_THREADS, threads_problem
from .toggles import Choice, Directory, Flag, Kind, Names, NotThisKind, Number, Switch, Toggle, ToggleTable


# -- Config calls ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Precision:
    """A ``paddle.inference.PrecisionType`` member, by name (recipes import no paddle)."""

    name: str  # Float32 | Half | Int8 | Bfloat16

    def __repr__(self) -> str:
        return f"PrecisionType.{self.name}"


@dataclass(frozen=True)
class Slot:
    """An argument each case fills in (``recipe``); ``default`` is what the docs table shows."""

    name: str
    default: Any

    def __repr__(self) -> str:
        return f"<{self.name}>"


@dataclass(frozen=True)
class Call:
    """One call on a ``paddle.inference.Config``; ``optional``: skipped where the method is missing."""

    method: str
    args: Tuple[Any, ...] = ()
    kwargs: Tuple[Tuple[str, Any], ...] = ()
    optional: bool = False

    def __str__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        text = f"{self.method}({', '.join(parts)})"
        return text + " [if available]" if self.optional else text

    def filled(self, values: Mapping[str, Any]) -> "Call":
        """This call with each Slot argument replaced by ``values[slot name]``, else its default."""
        def fill(a: Any) -> Any:
            return values.get(a.name, a.default) if isinstance(a, Slot) else a

        if not any(isinstance(a, Slot) for a in self.args + tuple(v for _, v in self.kwargs)):
            return self
        return replace(self, args=tuple(fill(a) for a in self.args),
                       kwargs=tuple((k, fill(v)) for k, v in self.kwargs))


def call(method: str, *args: Any, **kwargs: Any) -> Call:
    return Call(method, tuple(args), tuple(kwargs.items()))


def optional_call(method: str, *args: Any, **kwargs: Any) -> Call:
    return Call(method, tuple(args), tuple(kwargs.items()), optional=True)


class ShapeMap(dict):
    """A hashable ``{input name: shape}``; a dict because pybind accepts no other mapping."""

    def __init__(self, shapes: Union[Mapping[str, Sequence[int]], Sequence] = ()):
        super().__init__((str(k), tuple(int(d) for d in v)) for k, v in dict(shapes).items())

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))

    def __reduce__(self):
        return (ShapeMap, (dict(self),))

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("ShapeMap is read-only: it may be shared by hashed recipes")

    __setitem__ = __delitem__ = __ior__ = update = pop = popitem = clear = setdefault = _read_only


class NameSet(frozenset):
    """Op names for pybind's ``set[str]``, printed sorted: set order follows per-process string
    hashing, and recipe text must read the same in every worker and run."""

    def __repr__(self) -> str:
        return "{" + ", ".join(map(repr, sorted(self))) + "}"


class EveryOpTypeExcept(NameSet):
    """Every op type Paddle registers but these (for ``set_bfloat16_op``); predictor.py fills it in."""

    def __repr__(self) -> str:
        return f"<every op type except {NameSet.__repr__(self)}>"


# -- run modes ---------------------------------------------------------------------------------
# Traits. device: where the predictor runs. engine: whose kernels run the graph. precision:
# the PrecisionType name the mode computes in.
CPU, GPU = "cpu", "gpu"
PADDLE, ONEDNN, TENSORRT = "paddle", "onednn", "tensorrt"
FP32, FP16, BF16, INT8 = "Float32", "Half", "Bfloat16", "Int8"

# What a run must show it really did (verdict/evidence.py holds the rule of each): the
# ``shows`` column of the mode table, and ``recipe_shows`` for baseline recipes.
TRT_ENGINE_OP = "a tensorrt_engine op"
FP16_TENSORS = "float16 tensors"
BF16_TENSORS = "bfloat16 tensors"
INT8_KERNELS = "int8 kernels"
NO_FUSED_OPS = "no fused ops"


DEFAULT_TOLERANCE = Rule(1e-4, 1e-4)
# fp32 on a GPU: Paddle (and TensorRT's builder) leave TF32 on, so on compute capability 8.0+
# fp32 candidates multiply with fp16's mantissa, about 1e-3 relative per layer against the true
# fp32 baseline (engine/tf32.py): the fp16 bound. Below 8.0, 1e-4 holds: tighten it there.
GPU_FP32_TOLERANCE = Rule(1e-2, 1e-2)


@dataclass(frozen=True)
class RunMode:
    name: str
    device: str  # CPU | GPU
    engine: str  # PADDLE | ONEDNN | TENSORRT
    precision: str  # FP32 | FP16 | BF16 | INT8
    tolerance: Rule  # default for this mode; every configured tolerance wins over it
    template: Tuple[Call, ...]  # the recipe; Slot arguments are filled per case
    shows: Tuple[str, ...] = ()  # what the candidate's run must show (verdict/evidence.py RULES)

    @property
    def tensorrt(self) -> bool:
        return self.engine == TENSORRT

    @property
    def needs(self) -> Tuple[str, ...]:
        """What Paddle must have ("cuda", ...) and the CPU for oneDNN's "bf16" and "int8"."""
        needs = ("cuda",) if self.device == GPU else ()
        needs += (self.engine,) if self.engine in (TENSORRT, ONEDNN) else ()
        cpu = {BF16: "bf16", INT8: "int8"}.get(self.precision) if self.engine == ONEDNN else None
        return needs + ((cpu,) if cpu else ())

    @property
    def calls(self) -> Tuple[Call, ...]:
        """The recipe with every toggle at its default, on GPU 0: the docs table."""
        return tuple(c.filled({}) for c in self.template)


# Settings the GPU recipes share; documented in the README's run-mode table.
GPU_MEMORY_POOL_MB = 256
TRT_WORKSPACE_SIZE = 1 << 30
TRT_MIN_SUBGRAPH_SIZE = 3  # the Paddle-TRT guide's value; the debug demo's 5 hides small subgraphs
CALIBRATION, QUANTIZED = "calibration", "quantized"
TRT_OPTIMIZATION_LEVELS = range(6)  # TensorRT builder levels; 3 is its default
# Generated calibration batches when the run mode names no count (ResNet50: seconds).
DEFAULT_CALIBRATION_BATCHES = 8

DEVICE_ID = Slot("device_id", 0)  # the worker's GPU (--paddle-device)
MAX_BATCH_SIZE = Slot("max_batch_size", 1)  # static-shape TensorRT: the case's batch
IR_ON = call("switch_ir_optim", True)


def gpu_enable(precision: str = FP32, device_id: Any = DEVICE_ID) -> Call:
    return call("enable_use_gpu", GPU_MEMORY_POOL_MB, device_id, Precision(precision))


def tensorrt_engine(precision: str) -> Call:
    # Every argument explicit: the binding defaults use_calib_mode to True, wrong for quantized models
    return call("enable_tensorrt_engine", workspace_size=TRT_WORKSPACE_SIZE,
                max_batch_size=MAX_BATCH_SIZE, min_subgraph_size=TRT_MIN_SUBGRAPH_SIZE,
                precision_mode=Precision(precision), use_static=Slot("use_static", False),
                use_calib_mode=Slot("use_calib_mode", precision == INT8), use_cuda_graph=False)


RUN_MODES: Mapping[str, RunMode] = {m.name: m for m in (
    RunMode("cpu_fp32", CPU, PADDLE, FP32, DEFAULT_TOLERANCE, (call("disable_mkldnn"), IR_ON)),
    RunMode("onednn_fp32", CPU, ONEDNN, FP32, DEFAULT_TOLERANCE, (call("enable_mkldnn"), IR_ON)),
    RunMode("onednn_bf16", CPU, ONEDNN, BF16, Rule(5e-2, 5e-2),
            (call("enable_mkldnn"), IR_ON, call("enable_mkldnn_bfloat16")), shows=(BF16_TENSORS,)),
    # quantized models only; without VNNI the zoo's differ up to 0.94 abs, cosine 0.945 (README
    # "int8 on the CPU"): cosine judges the drift, atol gross errors (broken: 1.7, cosine 0.30)
    RunMode("onednn_int8", CPU, ONEDNN, INT8, Rule(1.0, 1e-1, cosine_min=0.9),
            (call("enable_mkldnn"), IR_ON, call("enable_mkldnn_int8")), shows=(INT8_KERNELS,)),
    RunMode("gpu_fp32", GPU, PADDLE, FP32, GPU_FP32_TOLERANCE, (gpu_enable(FP32), IR_ON)),
    RunMode("gpu_fp16", GPU, PADDLE, FP16, Rule(1e-2, 1e-2), (gpu_enable(FP16), IR_ON),
            shows=(FP16_TENSORS,)),
    # TensorRT subgraphs in the engine's precision, the rest in Paddle's fp32 GPU kernels
    RunMode("trt_fp32", GPU, TENSORRT, FP32, GPU_FP32_TOLERANCE,
            (gpu_enable(FP32), IR_ON, tensorrt_engine(FP32)), shows=(TRT_ENGINE_OP,)),
    RunMode("trt_fp16", GPU, TENSORRT, FP16, Rule(1e-2, 1e-2),
            (gpu_enable(FP32), IR_ON, tensorrt_engine(FP16)), shows=(TRT_ENGINE_OP,)),
    RunMode("trt_int8", GPU, TENSORRT, INT8, Rule(1e-1, 1e-1),  # calibration or quantized
            (gpu_enable(FP32), IR_ON, tensorrt_engine(INT8)), shows=(TRT_ENGINE_OP,)),
)}

ALIASES: Mapping[str, str] = {"mkldnn_fp32": "onednn_fp32", "mkldnn_bf16": "onednn_bf16",
                              "mkldnn_int8": "onednn_int8"}


def canonical_mode(name: str) -> str:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in RUN_MODES:
        raise OptionError(f"unknown run mode {name!r}; valid run modes: {', '.join(RUN_MODES)} "
                          f"(aliases: {', '.join(ALIASES)})")
    return key


# -- dynamic shape: the value of the dynamic_shape toggle ----------------------------------------
@dataclass(frozen=True)
class ShapeRange:
    min: Tuple[int, ...]
    opt: Tuple[int, ...]
    max: Tuple[int, ...]


@dataclass(frozen=True)
class DynamicShape:
    """TensorRT dynamic-shape ranges: explicit per input, or ``tuned`` (collected by a first pass)."""

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
            bad = [i for i in range(len(r.min)) if not 0 < r.min[i] <= r.opt[i] <= r.max[i]]
            if bad:
                raise OptionError(f"dynamic shape of input {name!r}: need 0 < min <= opt <= max "
                                  f"in every dim; dims {bad} break it (min {list(r.min)}, "
                                  f"opt {list(r.opt)}, max {list(r.max)})")

    @classmethod
    def explicit(cls, ranges: Mapping[str, Tuple[Sequence[int], Sequence[int], Sequence[int]]],
                 disable_trt_plugin_fp16: bool = False) -> "DynamicShape":
        """``{input name: (min, opt, max)}`` (TensorRT's order, not Paddle's min/max/opt)."""
        return cls(tuple((str(n), ShapeRange(*(tuple(int(d) for d in s) for s in mom)))
                         for n, mom in ranges.items()), False, disable_trt_plugin_fp16)

    def shape_maps(self) -> Tuple[ShapeMap, ShapeMap, ShapeMap]:
        """(min, max, opt) in ``set_trt_dynamic_shape_info``'s argument order."""
        return tuple(ShapeMap({n: getattr(r, k) for n, r in self.ranges})  # type: ignore
                     for k in ("min", "max", "opt"))


def _dims(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape)


@dataclass(frozen=True)
class DynamicShapeValue(Kind):
    """``+dynamic_shape=tuned`` or ``=NAME:MIN:OPT:MAX`` per input (+``disable_trt_plugin_fp16``)."""

    plugin_flag: str = "disable_trt_plugin_fp16"
    default = None
    type = Optional[DynamicShape]
    probe = DynamicShape(tuned=True)

    @property
    def extra_keys(self) -> Tuple[str, ...]:  # type: ignore[override]
        return (self.plugin_flag,)

    def tokens(self, name: str) -> Tuple[str, ...]:
        return (name, self.plugin_flag)

    def syntax(self, name: str) -> Tuple[str, ...]:
        return (f"{name}=tuned", f"{name}=NAME:MIN:OPT:MAX", self.plugin_flag)

    def take(self, key: str, eq: bool, value: str, state: Any) -> Any:
        ranges, tuned, plugin = state or ((), False, False)
        if key == self.plugin_flag:
            if eq:
                raise NotThisKind
            return ranges, tuned, True
        if value == "tuned":
            return ranges, True, plugin
        if not value:
            raise NotThisKind
        return ranges + (shape_range(key, value),), tuned, plugin

    def finish(self, state: Any) -> Any:
        ranges, tuned, plugin = state
        if tuned and ranges:
            raise OptionError("dynamic_shape=tuned and explicit dynamic_shape ranges exclude each other")
        if plugin and not ranges:
            raise OptionError(f"{self.plugin_flag} needs explicit dynamic_shape ranges")
        return DynamicShape(tuple(ranges), tuned, plugin)

    def label(self, name: str, value: Any) -> List[str]:
        if value.tuned:
            return [f"{name}=tuned"]
        parts = [f"{name}={n}:{_dims(r.min)}:{_dims(r.opt)}:{_dims(r.max)}" for n, r in value.ranges]
        return parts + ([self.plugin_flag] if value.disable_trt_plugin_fp16 else [])


def shape_range(key: str, value: str) -> Tuple[str, ShapeRange]:
    """``x:1x3x32x32:1x3x224x224:8x3x224x224`` -> ("x", min, opt, max)."""
    parts = value.rsplit(":", 3)
    try:
        if len(parts) != 4 or not parts[0]:
            raise ValueError
        dims = [tuple(int(d) for d in p.split("x")) for p in parts[1:]]
    except ValueError:
        raise OptionError(f"{key}={value!r} is not NAME:MIN:OPT:MAX with dims joined by x, "
                          f"e.g. {key}=x:1x3x32x32:1x3x224x224:8x3x224x224") from None
    return parts[0], ShapeRange(*dims)


# -- toggles -----------------------------------------------------------------------------------
def _gpu_mixed_precision(spec) -> bool:
    mode = spec.run_mode
    return mode.device == GPU and mode.engine == PADDLE and mode.precision != FP32


def _low_precision(spec) -> bool:
    """GPU fp16 and oneDNN bf16: op types can be kept in fp32."""
    mode = spec.run_mode
    return _gpu_mixed_precision(spec) or (mode.engine == ONEDNN and mode.precision == BF16)


def _tensorrt(spec) -> bool:
    return spec.run_mode.tensorrt


def _tensorrt_int8(spec) -> bool:
    return spec.run_mode.tensorrt and spec.run_mode.precision == INT8


def needs_calibration(spec) -> bool:
    """TensorRT int8 from a calibration table, which a first predictor writes."""
    return _tensorrt_int8(spec) and spec.int8_source == CALIBRATION


def _ir_optim_problem(on: bool, spec) -> Optional[str]:
    if spec.run_mode.tensorrt and not on:
        return (f"{spec.mode} with IR optimization off would run no TensorRT subgraph at all "
                f"(the TensorRT pass is an IR pass)")
    return None


def _threads(n: int, mode: RunMode) -> Tuple[Call, ...]:
    return (call("set_cpu_math_library_num_threads", n),) if mode.device == CPU else ()


CALIBRATING = "trt_int8 with int8_source calibration"

# The toggles, in id order. GPU and TensorRT toggles have no ``calls``: ``_gpu_toggle_calls``
# places them among the engine's calls.
TOGGLES = ToggleTable((
    Toggle("ir_optim", Switch(off="no_ir_optim"), ("IR optimization on", "IR optimization off"),
           check=_ir_optim_problem, calls=lambda on, mode: (call("switch_ir_optim", on),)),
    Toggle("memory_optim", Flag(), "enable_memory_optim()",
           calls=lambda on, mode: (call("enable_memory_optim"),)),
    Toggle("delete_passes", Names("delete_pass", "NAME", "fc_fuse_pass"),
           "delete_pass(NAME); repeatable",
           calls=lambda passes, mode: tuple(call("delete_pass", p) for p in passes)),
    Toggle("threads", Number(1, MAX_THREADS, below=threads_problem(0) or "",
                             above=threads_problem(MAX_THREADS + 1) or ""),
           f"CPU math library threads (1..{MAX_THREADS})", calls=_threads),
    Toggle("fp32_ops", Names("fp32_op", "OP", "softmax"), "keep op type OP in fp32; repeatable",
           scope="gpu_fp16, onednn_bf16", applies=_low_precision),
    Toggle("low_precision_io", Flag(), "fp16 inputs and outputs",
           scope="gpu_fp16", applies=_gpu_mixed_precision),
    Toggle("disable_trt_ops", Names("disable_trt_op", "OP", "softmax"),
           "leave op type OP to Paddle; repeatable", scope="trt_*", applies=_tensorrt),
    Toggle("int8_source", Choice(((CALIBRATION, "calibrate on batches (the default)"),
                                  (QUANTIZED, "a model with quantize ops"))),
           "a calibration table (default) or a quantized model's own scales",
           scope="trt_int8", applies=_tensorrt_int8),
    Toggle("dynamic_shape", DynamicShapeValue(),
           ("collect shape ranges from the case's inputs first",
            "one input's range, dims joined by x; one per input",
            "with explicit ranges, no fp16 in TensorRT plugins"), scope="trt_*", applies=_tensorrt),
    Toggle("trt_optimization_level",
           Number(TRT_OPTIMIZATION_LEVELS[0], TRT_OPTIMIZATION_LEVELS[-1],
                  what="TensorRT builder level", note="3 is its default"),
           "TensorRT builder level 0..5", scope="trt_*", applies=_tensorrt),
    Toggle("use_static", Flag(), "keep engines, calibration tables and shape ranges across runs",
           scope="trt_*", applies=_tensorrt),  # fills the engine call's use_static
    Toggle("calib_batches", Number(1, below="calibration needs at least one batch"),
           f"calibration batches (default {DEFAULT_CALIBRATION_BATCHES})",
           scope=CALIBRATING, applies=needs_calibration, key="calibration.batches"),
    Toggle("calib_data", Directory("calibration data", "a directory of .npy/.npz calibration "
                                   "batches", example="calib/"),
           "calibrate on the .npy/.npz batches in DIR",
           scope=CALIBRATING, applies=needs_calibration, key="calibration.data"),
), RUN_MODES, canonical_mode, module=__name__,
    examples=("cpu_fp32+no_ir_optim", "trt_fp16+dynamic_shape=x:1x3x32x32:1x3x224x224:8x3x224x224",
              "trt_int8+calib_batches=16"),
    doc="A run mode with the toggles that modify it: ``mode``, then one field per row of "
        "``TOGGLES``, each at its default unless set.")

RunModeSpec = TOGGLES.spec_type
RUN_MODE_TOGGLES = TOGGLES.syntax  # (how a toggle is written, what it does), in id order
TOGGLE_HELP = TOGGLES.help


def parse_run_mode(text: str) -> RunModeSpec:
    """``trt_fp16+dynamic_shape=tuned+use_static`` -> a spec; the inverse of ``RunModeSpec.label``."""
    return TOGGLES.parse(text)


def parse_run_modes(values: Sequence[str]) -> Tuple[RunModeSpec, ...]:
    """``--run-mode a,b --run-mode c`` -> specs in order, without repeats."""
    return TOGGLES.parse_list(values)


def calibration_batch_count(spec: RunModeSpec) -> int:
    """Batches a calibration feeds (a data directory with fewer files feeds all it has)."""
    return spec.calib_batches if spec.calib_batches is not None else DEFAULT_CALIBRATION_BATCHES


# -- recipes -----------------------------------------------------------------------------------
# With dynamic shape, these are renamed matrix_multiply before TensorRT reads the disabled list.
MATRIX_MULTIPLY_OPS = ("mul", "matmul", "matmul_v2")


def disabled_trt_ops(spec: RunModeSpec) -> Tuple[str, ...]:
    """``disable_trt_op`` values as Config gets them (with a dynamic shape, plus matrix_multiply)."""
    ops = tuple(spec.disable_trt_ops)
    if spec.dynamic_shape is not None and set(ops) & set(MATRIX_MULTIPLY_OPS) \
            and "matrix_multiply" not in ops:
        ops += ("matrix_multiply",)
    return ops


def _gpu_toggle_calls(spec: RunModeSpec, shape_range_file: Optional[Union[str, Path]],
                      explicit_quantization: bool = True) -> List[Call]:
    """What the GPU and TensorRT toggles add after the engine's calls."""
    mode = spec.run_mode
    calls: List[Call] = []
    if mode.tensorrt:
        if spec.int8_source == QUANTIZED and explicit_quantization:
            # Q/DQ programs (build_plan.explicit_quantization); else the implicit path
            calls.append(optional_call("enable_tensorrt_explicit_quantization"))
        dyn = spec.dynamic_shape
        if dyn is not None and dyn.tuned:
            if shape_range_file is None:
                raise OptionError(f"{spec.label} needs the shape-range file that "
                                  f"shape_collect_recipe() makes the first pass write")
            calls.append(call("enable_tuned_tensorrt_dynamic_shape", str(shape_range_file), True))
        elif dyn is not None:
            calls.append(call("set_trt_dynamic_shape_info", *dyn.shape_maps(), dyn.disable_trt_plugin_fp16))
        if spec.disable_trt_ops:
            calls.append(call("exp_disable_tensorrt_ops", disabled_trt_ops(spec)))
        if spec.trt_optimization_level is not None:
            calls.append(optional_call("set_tensorrt_optimization_level", spec.trt_optimization_level))
    if spec.fp32_ops and mode.engine == ONEDNN:
        # oneDNN takes the op types to run in bf16 (legacy programs only)
        calls.append(call("set_bfloat16_op", EveryOpTypeExcept(spec.fp32_ops)))
    elif spec.fp32_ops:
        calls.append(call("exp_disable_mixed_precision_ops", NameSet(spec.fp32_ops)))
    if spec.low_precision_io:
        # not optional: without it inputs stay fp32 and the case tests something else
        calls.append(call("enable_low_precision_io", True))
    return calls


def recipe(spec: RunModeSpec, threads: Optional[int] = None, device_id: int = 0,
           shape_range_file: Optional[Union[str, Path]] = None,
           max_batch_size: int = 1, explicit_quantization: bool = True) -> Tuple[Call, ...]:
    """The Config calls of a run mode and its toggles; ``threads``: the session's default."""
    mode = spec.run_mode
    table = spec.TABLE  # TOGGLES, or the table of a spec type made from other rows
    values = {row.name: getattr(spec, row.name) for row in table}
    if values["threads"] is None:
        values["threads"] = threads
    slots = dict(values, device_id=device_id, max_batch_size=max_batch_size,
                 use_calib_mode=needs_calibration(spec))
    calls = [c.filled(slots) for c in mode.template] + _gpu_toggle_calls(spec, shape_range_file,
                                                                         explicit_quantization)
    for row in table:
        value = values[row.name]
        if row.calls is None or value == row.kind.default:
            continue
        added = tuple(row.calls(value, mode))
        replaced = {c.method for c in added}
        calls = [c for c in calls if c.method not in replaced] + list(added)
    return tuple(calls)


class PassNames(tuple):
    """Pass names for pybind's ``list[str]``, printed as a list."""

    def __repr__(self) -> str:
        return repr(list(self))


PIR_FORMAT = "pir"  # models/source.py FORMATS: a .json program
ONEDNN_PLACEMENT_PASS = "onednn_placement_pass"


def passes_off(program_format: str, engine: str = PADDLE) -> Tuple[Call, ...]:
    """A PIR program's optimizations off (it ignores ``switch_ir_optim``): only Paddle's basic
    passes, and oneDNN's kernel placement (the localization ladder's first rung runs them)."""
    if program_format != PIR_FORMAT:
        return ()
    keep = (ONEDNN_PLACEMENT_PASS,) if engine == ONEDNN else ()
    return (call("enable_custom_passes", PassNames(keep), True),)


def fp32_ops_problem(spec: RunModeSpec, program_format: str) -> Optional[str]:
    """``+fp32_op`` on ``onednn_bf16`` would change nothing on a PIR program."""
    if spec.fp32_ops and spec.run_mode.engine == ONEDNN and program_format == PIR_FORMAT:
        return (f"{spec.label}: +fp32_op takes effect on legacy programs only (Paddle 3.3.1's "
                f"PIR bf16 placement reads no op list from set_bfloat16_op); use "
                f"--paddle-program=legacy (suite key program: legacy), or "
                f"+delete_pass=cpu_bfloat16_placement_pass to keep every op in fp32")
    return None


def recipe_shows(calls: Sequence[Call]) -> Tuple[str, ...]:
    """What a baseline recipe's run must show: with optimizations off, no fused op."""
    off = any(c.method == "switch_ir_optim" and c.args[:1] == (False,) for c in calls)
    return (NO_FUSED_OPS,) if off else ()


def baseline_recipe(device: str, threads: Optional[int] = None,
                    device_id: int = 0, program_format: str = "legacy") -> Tuple[Call, ...]:
    """The plain baseline: same device, fp32, optimizations and oneDNN off."""
    first = gpu_enable(FP32, device_id) if device == GPU else call("disable_mkldnn")
    cpu = device != GPU and threads is not None
    last = (call("set_cpu_math_library_num_threads", threads),) if cpu else ()
    return (first, call("switch_ir_optim", False), *passes_off(program_format), *last)


def shape_collect_recipe(spec: RunModeSpec, shape_range_file: Union[str, Path],
                         device_id: int = 0) -> Tuple[Call, ...]:
    """First pass of tuned dynamic shape: plain GPU fp32 recording every tensor's shape range."""
    if spec.dynamic_shape is None or not spec.dynamic_shape.tuned:
        raise OptionError(f"{spec.label} has no tuned dynamic shape to collect")
    return (gpu_enable(FP32, device_id), call("collect_shape_range_info", str(shape_range_file)))


def optim_cache_call(cache_dir: Union[str, Path]) -> Call:
    """Where TensorRT engines and calibration tables go. With a trailing separator: Paddle
    concatenates the inspector's ``engine_info_<key>.json`` to the dir without one."""
    return call("set_optim_cache_dir", os.path.join(str(cache_dir), ""))


def optim_cache_subdir(model_key: str, spec: RunModeSpec, worker: str = "main",
                       shapes: Optional[Mapping[str, Sequence[int]]] = None) -> str:
    """A dir per (model, spec, shapes, worker): workers never share engines or tables."""
    shape_text = sorted((k, tuple(v)) for k, v in (shapes or {}).items())
    digest = hashlib.sha1(repr((spec, shape_text)).encode()).hexdigest()[:10]
    from ..files import safe_file_stem

    safe = lambda s: safe_file_stem(s, limit=80)  # noqa: E731
    return f"{safe(model_key)}/{safe(spec.mode)}-{digest}/{safe(worker)}"


def calibration_tables(cache_dir: Union[str, Path]) -> List[Path]:
    return sorted(Path(cache_dir).glob("trt_calib_*"))


def check_shape_in_range(shapes: Mapping[str, Sequence[int]], dynamic: Optional[DynamicShape]) -> None:
    """OptionError for an input shape outside its declared TensorRT range (Paddle would fail
    deep in engine building, or rebuild silently); inputs without a range are left alone."""
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
