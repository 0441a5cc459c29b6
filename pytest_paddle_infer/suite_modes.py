"""A suite's run mode written as a mapping: its toggles (those of the ``--run-mode`` string
syntax, in YAML form), each checked at its own line, and the ``RunModeSpec`` they make.

Which run mode takes which toggle is ``RunModeSpec``'s rule; this module asks it rather than
repeating it, and points its answer at the key that breaks it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence

from .errors import OptionError, SuiteError
from .inputs import InputSpec
from .options import TOGGLE_HELP
from .run_modes import (DEFAULT_CALIBRATION_BATCHES, INT8_SOURCES, RUN_MODES, TRT_OPTIMIZATION_LEVELS,
                        DynamicShape, RunModeSpec)
from .suite_inputs import check_rank, parse_dims
from .suite_nodes import AnyName, Context, Node, did_you_mean, join_names

TOGGLE_KEYS = ("ir_optim", "memory_optim", "delete_passes", "threads", "fp32_ops",
               "low_precision_io", "disable_trt_ops", "int8_source", "dynamic_shape",
               "disable_trt_plugin_fp16", "trt_optimization_level", "use_static", "calibration")
GPU_KEYS = TOGGLE_KEYS[4:]
RANGE_KEYS = ("min", "opt", "max")  # TensorRT's order, which DynamicShape.explicit takes
CALIBRATION_KEYS = ("batches", "data")
RANGE_EXAMPLE = "{x: {min: [1, 3, 224, 224], opt: [4, 3, 224, 224], max: [8, 3, 224, 224]}}"
# A value of each key that only some modes take: RunModeSpec says which modes accept it.
PROBES: Mapping[str, Dict[str, Any]] = {
    "fp32_ops": {"fp32_ops": ("softmax",)},
    "low_precision_io": {"low_precision_io": True},
    "disable_trt_ops": {"disable_trt_ops": ("pool2d",)},
    "int8_source": {"int8_source": "quantized"},
    "dynamic_shape": {"dynamic_shape": DynamicShape(tuned=True)},
    "disable_trt_plugin_fp16": {"dynamic_shape": DynamicShape.explicit({"x": ((1,), (1,), (1,))}, True)},
    "trt_optimization_level": {"trt_optimization_level": 3},
    "use_static": {"use_static": True},
    "calibration": {"calib_batches": 1},
}
# the string syntax's spellings, written in a mapping
SPELLING_HINTS = {"calib_batches": "write calibration: {batches: N}",
                  "calib_data": "write calibration: {data: DIR}  (relative to the suite)",
                  "no_ir_optim": "write ir_optim: false"}
# run-mode keys written under a model or defaults
MODE_KEY_HINTS = {k: f"{k} is a run-mode key: write it beside 'mode:' in a run_modes entry, "
                     f"e.g. run_modes: [{{mode: trt_fp16, {k}: ...}}]" for k in GPU_KEYS}


def read_toggles(fields: Mapping[str, Node], ctx: Context) -> Dict[str, Dict[str, Any]]:
    """RunModeSpec keyword arguments per key of a run-mode mapping, in file order."""
    parts: Dict[str, Dict[str, Any]] = {}
    for key, node in fields.items():
        if key in ("ir_optim", "memory_optim", "low_precision_io", "use_static"):
            parts[key] = {key: node.flag(key)}
        elif key in ("delete_passes", "fp32_ops", "disable_trt_ops"):
            example = "fc_fuse_pass" if key == "delete_passes" else "softmax"
            parts[key] = {key: tuple(i.text("a name", example) for i in node.items(key, f"[{example}]"))}
        elif key == "threads":
            parts[key] = {key: node.integer(key, 1)}
        elif key == "int8_source":
            parts[key] = {key: int8_source(node)}
        elif key == "trt_optimization_level":
            parts[key] = {key: optimization_level(node)}
        elif key == "dynamic_shape":
            parts[key] = {key: dynamic_shape(node, fields.get("disable_trt_plugin_fp16"))}
        elif key == "disable_trt_plugin_fp16":
            check_plugin_fp16(node, fields.get("dynamic_shape"))
            parts[key] = {}  # an argument of the dynamic shape, read with it
        elif key == "calibration":
            parts[key] = calibration(node, ctx)
    return parts


def build_spec(mode: str, fields: Mapping[str, Node], parts: Mapping[str, Dict[str, Any]],
               item: Node) -> RunModeSpec:
    for key in fields:
        if key in PROBES and not fits(mode, PROBES[key]):
            takers = [m for m in RUN_MODES if fits(m, PROBES[key])]
            where = f"a run mode with mode: {takers[0]}" if len(takers) == 1 else "a run mode that takes it"
            raise fields[key].fail(f"{key} does not apply to run mode {mode}",
                                   f"{key} only under {join_names(takers)}", found=f"{key} under mode {mode}",
                                   fix=f"remove {key}, or move it to {where}")
    try:
        return RunModeSpec(mode, **merge(parts))
    except OptionError as e:
        raise conflict(mode, fields, parts, item, e) from None


def conflict(mode: str, fields: Mapping[str, Node], parts: Mapping[str, Dict[str, Any]], item: Node,
             e: OptionError) -> SuiteError:
    """Point at the last key without which the toggles fit, and at what it clashes with."""
    without = lambda key: merge({k: v for k, v in parts.items() if k != key})  # noqa: E731
    for key in reversed(list(parts)):
        if not fits(mode, without(key)):
            continue
        if not fits(mode, parts[key]):  # wrong for the mode whatever else is set
            return fields[key].fail(f"{key} does not fit run mode {mode}", f"settings {mode} takes",
                                    found=str(e), fix=f"remove {key}")
        partners = [k for k in parts if k != key and fits(mode, without(k))]
        return fields[key].fail(f"{key} conflicts with {join_names(partners)} in run mode {mode}",
                                "settings that apply together", found=str(e),
                                fix=f"remove {key} or {' or '.join(partners)}")
    return item.fail("settings this run mode cannot take together", f"settings that apply to {mode}",
                     found=str(e))


def fits(mode: str, toggles: Mapping[str, Any]) -> bool:
    try:
        RunModeSpec(mode, **toggles)
        return True
    except OptionError:
        return False


def merge(parts: Mapping[str, Dict[str, Any]]) -> Dict[str, Any]:
    return {k: v for part in parts.values() for k, v in part.items()}


def int8_source(node: Node) -> str:
    text = node.text("int8_source", "calibration")
    if text not in INT8_SOURCES:
        raise node.fail("unknown int8_source", f"one of {join_names(INT8_SOURCES)}",
                        did_you_mean(text, INT8_SOURCES) or "calibration: calibrate on batches "
                        "(the default); quantized: a model with quantize ops")
    return text


def optimization_level(node: Node) -> int:
    low, high = TRT_OPTIMIZATION_LEVELS[0], TRT_OPTIMIZATION_LEVELS[-1]
    level = node.integer("trt_optimization_level", low)
    if level not in TRT_OPTIMIZATION_LEVELS:
        raise node.fail("trt_optimization_level is out of range",
                        f"a whole number {low}..{high} (TensorRT builder levels; 3 is its default)",
                        fix=f"use a level from {low} to {high}")
    return level


def dynamic_shape(node: Node, plugin_node: Optional[Node]) -> DynamicShape:
    if isinstance(node.value, str) and node.value.strip() == "tuned":
        return DynamicShape(tuned=True)
    if not isinstance(node.value, dict) or not node.value:
        fix = did_you_mean(node.value, ["tuned"]) if isinstance(node.value, str) else ""
        raise node.fail("dynamic_shape must be tuned or ranges per input",
                        f"tuned, or min/opt/max per input: {RANGE_EXAMPLE}",
                        fix or "write dynamic_shape: tuned, or give each input's min, opt and max")
    ranges = {}
    for name, child in node.mapping(AnyName(), "dynamic_shape").items():
        parts = child.mapping(RANGE_KEYS, f"the range of {name!r}")
        missing = [k for k in RANGE_KEYS if k not in parts]
        if missing:
            raise child.fail(f"the range of input {name!r} has no {join_names(missing)}",
                             "min, opt and max, each a shape", fix=f"add {missing[0]}: [...]")
        ranges[name] = tuple(parse_dims(parts[k], k, dynamic=False) for k in RANGE_KEYS)
        try:
            DynamicShape.explicit({name: ranges[name]})
        except OptionError as e:
            raise child.fail(f"bad range for input {name!r}", "min <= opt <= max in every dim, one rank "
                             "for all three", found=str(e), fix="reorder or fix the dims") from None
    plugin = plugin_node.flag("disable_trt_plugin_fp16") if plugin_node is not None else False
    return DynamicShape.explicit(ranges, plugin)


def check_plugin_fp16(node: Node, ranges: Optional[Node]) -> None:
    if node.flag("disable_trt_plugin_fp16") and (ranges is None or not isinstance(ranges.value, dict)):
        raise node.fail("disable_trt_plugin_fp16 needs explicit ranges", "dynamic_shape with min/opt/max "
                        "per input beside it (it is an argument of set_trt_dynamic_shape_info)",
                        found="no dynamic_shape" if ranges is None else f"dynamic_shape: {ranges.value}",
                        fix="give dynamic_shape ranges, or remove disable_trt_plugin_fp16")


def calibration(node: Node, ctx: Context) -> Dict[str, Any]:
    parts = node.mapping(CALIBRATION_KEYS, "calibration")
    if not parts:
        raise node.fail("calibration sets nothing", "batches: N and/or data: DIR",
                        fix=f"e.g. calibration: {{batches: 16}}, or remove it for "
                            f"{DEFAULT_CALIBRATION_BATCHES} generated batches")
    out: Dict[str, Any] = {}
    if "batches" in parts:
        out["calib_batches"] = parts["batches"].integer("calibration.batches", 1)
    if "data" in parts:
        data = parts["data"]
        out["calib_data"] = calibration_dir(data, data.text("calibration.data", "calib/"), ctx)
    return out


def calibration_dir(node: Node, text: str, ctx: Context) -> str:
    """DIR relative to the suite, made absolute: cases run from any working directory."""
    path = (ctx.base_dir / Path(text).expanduser()).resolve()
    if not path.is_dir():
        raise node.fail("calibration data directory not found", "a directory of .npy/.npz batches, "
                        f"relative to the suite's directory {ctx.base_dir}",
                        found=f"{text!r} (no such directory: {path})", fix="create it, or fix the path")
    return str(path)


def check_model_ranges(dynamic: Optional[DynamicShape], node: Node, specs: Sequence[InputSpec],
                       model: str) -> None:
    """Explicit ranges name the model's inputs, in their rank, with the dims it fixes."""
    if dynamic is None or dynamic.tuned or not specs:
        return
    declared = {s.name: tuple(-1 if d is None else int(d) for d in s.shape) for s in specs}
    children = node.mapping(AnyName(), "dynamic_shape") if isinstance(node.value, dict) else {}
    for name, r in dynamic.ranges:
        at = children.get(name, node)
        if name not in declared:
            raise at.fail(f"model {model!r} has no input {name!r}", f"one of its inputs: {join_names(declared)}",
                          did_you_mean(name, list(declared)) or "use the model's input names",
                          found=repr(name))
        parts = at.mapping(RANGE_KEYS, f"the range of {name!r}") if at is not node else {}
        for key in RANGE_KEYS:
            check_rank(parts.get(key, at), name, declared[name], getattr(r, key), model)


def string_problem(e: OptionError) -> str:
    """parse_run_mode's message without the command line's framing and toggle list."""
    text = str(e).replace(f"; {TOGGLE_HELP}", "")
    return text[len("--run-mode: "):] if text.startswith("--run-mode: ") else text
