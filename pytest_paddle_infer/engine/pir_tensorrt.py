"""TensorRT for PIR (``.json``) programs, which have no TensorRT subgraph pass: ``paddle.tensorrt``'s
convert, planned as data, writes a program of ``pd_op.tensorrt_engine`` ops for a plain GPU
predictor. From Paddle's ``tensorrt/export.py``: ``min_subgraph_size`` is a constructor argument (it
sets a global flag), other fields are set after, each checked to exist; int8 has no calibrator.
``tests/paddle_tensorrt_api.py`` records the API per version."""
from __future__ import annotations

import ctypes.util
import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import CaseSkipped, PredictorError
from ..modes.run_modes import (CALIBRATION, FP16, FP32, INT8, PIR_FORMAT, TRT_MIN_SUBGRAPH_SIZE, TRT_WORKSPACE_SIZE)
from .predictor import trim_paddle_error

PIR_PATH = "PIR TensorRT (paddle.tensorrt.convert)"
LEGACY_PATH = "legacy TensorRT (Config.enable_tensorrt_engine)"
EXPORT_MODULE = "paddle.tensorrt.export"
CONVERTED_PREFIX = "trt/inference"  # under the case's optim cache dir
SOURCE_DIR = "source"  # links to a model whose weights file is not <prefix>.pdiparams
PRECISION_MODES = {FP32: "FP32", FP16: "FP16", INT8: "INT8"}  # RunMode.precision -> PrecisionMode
# Config methods of the legacy TensorRT path; a converted PIR program needs none of them
LEGACY_TRT_METHODS = frozenset({
    "enable_tensorrt_engine", "set_trt_dynamic_shape_info", "enable_tuned_tensorrt_dynamic_shape",
    "exp_disable_tensorrt_ops", "set_tensorrt_optimization_level", "enable_tensorrt_explicit_quantization",
    "enable_tensorrt_inspector", "mark_trt_engine_outputs", "set_optim_cache_dir"})


@dataclass(frozen=True)
class Member:
    """An enum member of ``paddle.tensorrt.export``: ``PrecisionMode.FP16``."""
    enum: str
    name: str

    def __repr__(self) -> str:
        return f"{self.enum}.{self.name}"


@dataclass(frozen=True)
class Made:
    """An object an earlier call made: ``inputs[0]``, ``config``."""
    name: str  # Input | TensorRTConfig
    index: int = 0

    def __repr__(self) -> str:
        return f"inputs[{self.index}]" if self.name == "Input" else "config"


@dataclass(frozen=True)
class CaseArray:
    """The case's own input array ``name``, filled in when the conversion runs."""
    name: str

    def __repr__(self) -> str:
        return f"<the case's {self.name}>"


class Samples(tuple):
    """``warmup_data``: a tuple of arrays, the samples conversion runs to collect shapes."""
    def __repr__(self) -> str:
        return "(" + ", ".join(map(repr, self)) + ")"


# Samples of warm-up data per input: Paddle's docs pass three (min, opt, max); the case's arrays thrice
WARMUP_SAMPLES = 3


class Shape(tuple):
    def __repr__(self) -> str:
        return "(" + ", ".join(map(str, self)) + ")"


class Items(tuple):
    """A list argument, kept hashable: plans are compared and hashed like recipes."""
    def __repr__(self) -> str:
        return "[" + ", ".join(map(repr, self)) + "]"


@dataclass(frozen=True)
class TrtCall:
    """One step of a conversion. ``kind``: ``new`` (a class of the export module), ``set`` (a
    config field; ``optional`` ones skipped where missing), ``call`` (a module function)."""
    kind: str
    name: str
    args: Tuple[Any, ...] = ()
    kwargs: Tuple[Tuple[str, Any], ...] = ()
    optional: bool = False

    def __str__(self) -> str:
        if self.kind == "set":
            text = f"config.{self.name} = {self.args[0]!r}"
        else:
            parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
            text = f"{self.name}({', '.join(parts)})"
        return text + " [if available]" if self.optional else text


def takes_pir_path(run_mode, program_format: str) -> bool:
    """TensorRT modes on a ``.json`` program (only a user's own: zoo entries use the legacy export)."""
    return run_mode.tensorrt and program_format == PIR_FORMAT


def skip_reason(spec, program_format: str, prog_file: str = "") -> Optional[str]:
    """Why a TensorRT case cannot take the PIR path (int8 calibration), or None."""
    if takes_pir_path(spec.run_mode, program_format) and spec.run_mode.precision == INT8 \
            and spec.int8_source == CALIBRATION:
        where = f" ({Path(prog_file).name})" if prog_file else ""
        return (f"{spec.mode} calibration needs the legacy program: paddle.tensorrt (the TensorRT "
                f"path of .json programs{where}) sets int8 without a calibrator; use the model's "
                f".pdmodel export, or int8_source=quantized for a quantized model")
    return None


def package_reason(spec, program_format: str, trt_compile: Sequence[int] = (),
                   found: Optional[bool] = None, plugins: Optional[bool] = None) -> Optional[str]:
    """Why a PIR TensorRT case cannot run here for want of NVIDIA's ``tensorrt`` package or
    TensorRT's plugin library, or None. ``found``, ``plugins``: whether each is there (None: look)."""
    if not takes_pir_path(spec.run_mode, program_format):
        return None
    if found is None:
        found = importlib.util.find_spec("tensorrt") is not None
    version = ".".join(map(str, trt_compile)) if trt_compile and any(trt_compile) else ""
    pin = f"=={version}" if version else ""
    built = f" (this Paddle was built with TensorRT {version})" if version else ""
    if not found:
        return (f"{spec.mode} on a .json program takes paddle.tensorrt, which needs NVIDIA's "
                f"tensorrt Python package, not installed here{built}: pip install tensorrt{pin}, "
                f"or check the model's .pdmodel export on the legacy path")
    if plugins or (plugins is None and plugin_library_found()):
        return None
    return (f"{spec.mode} on a .json program takes paddle.tensorrt, which loads TensorRT's "
            f"plugin library (libnvinfer_plugin), found neither beside the tensorrt package nor "
            f"on the library path{built}: pip install tensorrt{pin} (its libraries come with it), "
            f"or add TensorRT's lib directory to LD_LIBRARY_PATH")


def plugin_library_found() -> bool:
    """libnvinfer_plugin in the tensorrt wheels' packages, or where the dynamic loader looks."""
    for name in ("tensorrt_libs", "tensorrt_cu12_libs", "tensorrt_cu11_libs", "tensorrt"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for place in (spec.submodule_search_locations or []) if spec else []:
            if any(Path(place).glob("libnvinfer_plugin.so*")):
                return True
    return ctypes.util.find_library("nvinfer_plugin") is not None


def check_takes(spec, program_format: str, prog_file: str = "",
                trt_compile: Optional[Sequence[int]] = None) -> None:
    """Skip a case the PIR path cannot take; with ``trt_compile`` also one lacking tensorrt."""
    reason = skip_reason(spec, program_format, prog_file)
    if reason is None and trt_compile is not None:
        reason = package_reason(spec, program_format, trt_compile)
    if reason:
        raise CaseSkipped(reason)


def conversion_calls(spec, model_path: str, save_prefix: str,
                     inputs: Sequence[Tuple[str, Sequence[int], str]]) -> Tuple[TrtCall, ...]:
    """The conversion of ``model_path`` for inputs ``(name, shape, dtype)``, as data."""
    mode, dyn = spec.run_mode, spec.dynamic_shape
    calls: List[TrtCall] = []
    for name, shape, dtype in inputs:
        if dyn is None or dyn.tuned:
            # without explicit ranges the case's own arrays are the warm-up data (as PaddleX
            # does): paddle.tensorrt's drawn data is junk for shape-tensor inputs (im_shape);
            # input_data_type None: it applies to drawn data only (Paddle warns otherwise)
            calls.append(TrtCall("new", "Input", kwargs=(
                ("name", name), ("warmup_data", Samples((CaseArray(name),) * WARMUP_SAMPLES)),
                ("input_data_type", None))))
            continue
        r = dict(dyn.ranges).get(name)  # else the case's own shape three times
        low, opt, high = map(Shape, (r.min, r.opt, r.max)) if r is not None else (Shape(shape),) * 3
        calls.append(TrtCall("new", "Input", kwargs=(
            ("name", name), ("min_input_shape", low), ("optim_input_shape", opt),
            ("max_input_shape", high), ("input_data_type", dtype))))
    calls.append(TrtCall("new", "TensorRTConfig", kwargs=(
        ("inputs", Items(Made("Input", i) for i in range(len(inputs)))),
        ("min_subgraph_size", TRT_MIN_SUBGRAPH_SIZE))))
    calls.append(TrtCall("set", "precision_mode", (Member("PrecisionMode", PRECISION_MODES[mode.precision]),)))
    calls.append(TrtCall("set", "workspace_size", (TRT_WORKSPACE_SIZE,)))
    if spec.disable_trt_ops:
        calls.append(TrtCall("set", "disable_ops", (Items(o if "." in o else f"pd_op.{o}"  # by dialect
                                                          for o in spec.disable_trt_ops),)))
    if spec.trt_optimization_level is not None:
        calls.append(TrtCall("set", "optimization_level", (spec.trt_optimization_level,)))
    calls.append(TrtCall("set", "save_model_dir", (save_prefix,)))
    calls.append(TrtCall("call", "convert", (model_path, Made("TensorRTConfig"))))
    return tuple(calls)


def predictor_recipe(calls) -> Tuple:
    """The converted program's predictor: the mode's recipe without legacy TensorRT calls."""
    return tuple(c for c in calls if c.method not in LEGACY_TRT_METHODS)


def run_calls(calls: Sequence[TrtCall], inputs: Optional[Mapping[str, Any]] = None) -> List[str]:
    """Make ``calls`` (in the executor, on a TensorRT build of Paddle; ``inputs`` fill ``CaseArray``);
    returns the optional fields this Paddle lacked."""
    try:
        export = importlib.import_module(EXPORT_MODULE)
    except ImportError as e:
        raise PredictorError(f"{EXPORT_MODULE} cannot be imported ({e}): the PIR TensorRT path "
                             f"needs Paddle built with TensorRT") from None
    made: Dict[str, List[Any]] = {"Input": [], "TensorRTConfig": []}
    skipped: List[str] = []

    value = lambda v: argument(v, made, export, inputs)  # noqa: E731
    for c in calls:
        try:
            if c.kind == "set":
                config = made["TensorRTConfig"][0]
                if not hasattr(config, c.name):
                    if c.optional:
                        skipped.append(c.name)
                        continue
                    raise PredictorError(f"{EXPORT_MODULE}.TensorRTConfig has no field {c.name!r} "
                                         f"in this Paddle (call {c})")
                setattr(config, c.name, value(c.args[0]))
                continue
            target = getattr(export, c.name)
            result = target(*[value(a) for a in c.args], **{k: value(v) for k, v in c.kwargs})
            if c.name in made:
                made[c.name].append(result)
        except PredictorError:
            raise
        except Exception as e:
            raise PredictorError(f"{EXPORT_MODULE}: {c} raised: {trim_paddle_error(e)}") from None
    return skipped


def argument(v: Any, made: Mapping[str, List[Any]], export: Any,
             inputs: Optional[Mapping[str, Any]] = None) -> Any:
    """A planned argument as paddle.tensorrt gets it."""
    if isinstance(v, Made):
        return made[v.name][v.index]
    if isinstance(v, Member):
        return getattr(getattr(export, v.enum), v.name)
    if isinstance(v, Items):
        return [argument(x, made, export, inputs) for x in v]
    if isinstance(v, Samples):
        return tuple(argument(x, made, export, inputs) for x in v)
    if isinstance(v, CaseArray):
        if inputs is None or v.name not in inputs:
            raise PredictorError(f"{EXPORT_MODULE}: the warm-up data {v!r} was not given")
        return inputs[v.name]
    if isinstance(v, Shape):
        return tuple(v)
    return v
