"""modes/run_modes.py: run-mode recipes against the installed paddle.inference.Config.

Runs on the CPU wheel: GPU and TensorRT recipes are checked by binding (our signature checker)
and by pybind itself (applying each call to a real Config, where the CPU build raises its own
"compile with TensorRT" errors only after the arguments were accepted). Nothing here needs
the pytest plugin module.
"""
from __future__ import annotations

import pickle
import re
from dataclasses import replace
from pathlib import Path

import pytest
from paddle import inference

import config_signatures as sg
from pytest_paddle_infer.engine.capture import HookRouter
from pytest_paddle_infer.engine.predictor import _resolve_arg, apply_recipe, build_predictor, run_predictor
from pytest_paddle_infer.engine.recording import recorded
from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.models.cache import resolve
from pytest_paddle_infer.models.inputs import generate_all
from pytest_paddle_infer.models.source import parse_source
from pytest_paddle_infer.modes import run_modes as rm
from pytest_paddle_infer.modes.run_modes import (BF16_TENSORS, FP16_TENSORS, INT8_KERNELS, NO_FUSED_OPS,
                                                 ONEDNN, RUN_MODES, RUN_MODE_TOGGLES, TRT_ENGINE_OP,
                                                 DynamicShape, EveryOpTypeExcept, Precision, RunModeSpec,
                                                 baseline_recipe, call, optional_call, parse_run_mode,
                                                 passes_off, recipe, recipe_shows)
from pytest_paddle_infer.verdict.evidence import RULES, Tally, broken_rules
from pytest_paddle_infer.verdict.tolerances import Rule

Config = inference.Config

# ---------------------------------------------------------------------------------------
# The recipe table, mode -> calls, from the seeds and Paddle's docs:
# - baseline "GPU fp32, IR optim off" and the trt_fp16 / trt_int8 names: seed 000;
# - enable_tensorrt_engine arguments: seed 004 (workspace 1 << 30, max_batch_size 1,
#   use_static False, use_calib_mode False); min_subgraph_size 3 is the guide's documented
#   default (its examples use 5); use_cuda_graph False is the binding's default, passed
#   explicitly like every argument of that method;
# - int8: calibration table = Int8 + use_calib_mode True, PaddleSlim-quantized model =
#   Int8 + use_calib_mode False: seeds 002 and 004.
# ---------------------------------------------------------------------------------------
GPU0 = "enable_use_gpu(256, 0, PrecisionType.Float32)"


def _trt(precision: str, calib: bool, batch: int = 1, static: bool = False) -> str:
    return (f"enable_tensorrt_engine(workspace_size=1073741824, max_batch_size={batch}, "
            f"min_subgraph_size=3, precision_mode=PrecisionType.{precision}, use_static={static}, "
            f"use_calib_mode={calib}, use_cuda_graph=False)")


EXPECTED = {
    "cpu_fp32": ["disable_mkldnn()", "switch_ir_optim(True)"],
    "onednn_fp32": ["enable_mkldnn()", "switch_ir_optim(True)"],
    "onednn_bf16": ["enable_mkldnn()", "switch_ir_optim(True)", "enable_mkldnn_bfloat16()"],
    "onednn_int8": ["enable_mkldnn()", "switch_ir_optim(True)", "enable_mkldnn_int8()"],
    "gpu_fp32": [GPU0, "switch_ir_optim(True)"],
    "gpu_fp16": ["enable_use_gpu(256, 0, PrecisionType.Half)", "switch_ir_optim(True)"],
    "trt_fp32": [GPU0, "switch_ir_optim(True)", _trt("Float32", False)],
    "trt_fp16": [GPU0, "switch_ir_optim(True)", _trt("Half", False)],
    "trt_int8": [GPU0, "switch_ir_optim(True)", _trt("Int8", True)],
}

EXPLICIT = DynamicShape.explicit({"x": ([1, 3, 32, 32], [1, 3, 224, 224], [4, 3, 512, 512])})
TUNED = DynamicShape(tuned=True)
SHAPE_FILE = "/cache/shape_range.pbtxt"

# (spec, recipe kwargs) -> expected calls, for the GPU toggles of issue 6.
EXPECTED_TOGGLED = [
    (RunModeSpec("gpu_fp16", fp32_ops=("softmax",), low_precision_io=True), {"device_id": 1},
     ["enable_use_gpu(256, 1, PrecisionType.Half)", "switch_ir_optim(True)",
      "exp_disable_mixed_precision_ops({'softmax'})", "enable_low_precision_io(True)"]),
    (RunModeSpec("gpu_fp16", fp32_ops=("softmax", "layer_norm", "exp")), {},
     ["enable_use_gpu(256, 0, PrecisionType.Half)", "switch_ir_optim(True)",
      "exp_disable_mixed_precision_ops({'exp', 'layer_norm', 'softmax'})"]),
    (RunModeSpec("trt_int8", int8_source="quantized"), {},
     [GPU0, "switch_ir_optim(True)", _trt("Int8", False),
      "enable_tensorrt_explicit_quantization() [if available]"]),
    (RunModeSpec("trt_fp16", dynamic_shape=EXPLICIT, disable_trt_ops=("pool2d", "softmax"),
                 trt_optimization_level=5), {"max_batch_size": 4},
     [GPU0, "switch_ir_optim(True)", _trt("Half", False, batch=4),
      "set_trt_dynamic_shape_info({'x': (1, 3, 32, 32)}, {'x': (4, 3, 512, 512)}, "
      "{'x': (1, 3, 224, 224)}, False)",
      "exp_disable_tensorrt_ops(('pool2d', 'softmax'))",
      "set_tensorrt_optimization_level(5) [if available]"]),
    (RunModeSpec("trt_int8", use_static=True, calib_batches=3), {"device_id": 2},
     ["enable_use_gpu(256, 2, PrecisionType.Float32)", "switch_ir_optim(True)",
      _trt("Int8", True, static=True)]),
    (RunModeSpec("trt_fp32", dynamic_shape=TUNED, memory_optim=True), {"shape_range_file": SHAPE_FILE},
     [GPU0, "switch_ir_optim(True)", _trt("Float32", False),
      f"enable_tuned_tensorrt_dynamic_shape('{SHAPE_FILE}', True)", "enable_memory_optim()"]),
]


def _strings(calls):
    return [str(c) for c in calls]


def test_table_covers_every_mode():
    assert set(EXPECTED) == set(rm.RUN_MODES)


@pytest.mark.parametrize("mode", list(rm.RUN_MODES))
def test_recipe_matches_table(mode):
    assert _strings(recipe(RunModeSpec(mode))) == EXPECTED[mode]
    assert rm.RUN_MODES[mode].calls == recipe(RunModeSpec(mode))  # the data shown in docs


@pytest.mark.parametrize("spec,kwargs,expected", EXPECTED_TOGGLED,
                         ids=[s.label for s, _, _ in EXPECTED_TOGGLED])
def test_toggled_recipe_matches_table(spec, kwargs, expected):
    assert _strings(recipe(spec, **kwargs)) == expected


def test_gpu_baseline_and_helper_recipes():
    assert _strings(rm.baseline_recipe("gpu", device_id=2)) == [
        "enable_use_gpu(256, 2, PrecisionType.Float32)", "switch_ir_optim(False)"]
    assert _strings(rm.baseline_recipe("cpu", threads=4)) == [
        "disable_mkldnn()", "switch_ir_optim(False)", "set_cpu_math_library_num_threads(4)"]
    assert _strings(rm.shape_collect_recipe(RunModeSpec("trt_fp16", dynamic_shape=TUNED),
                                            Path(SHAPE_FILE), device_id=3)) == [
        "enable_use_gpu(256, 3, PrecisionType.Float32)",
        f"collect_shape_range_info('{SHAPE_FILE}')"]
    assert str(rm.optim_cache_call(Path("/c/m"))) == "set_optim_cache_dir('/c/m/')"


# ---------------------------------------------------------------------------------------
# Every mode, with every toggle, binds against the installed Config.
# ---------------------------------------------------------------------------------------
def _variants(mode: str):
    trt = rm.RUN_MODES[mode].tensorrt
    yield RunModeSpec(mode)
    yield RunModeSpec(mode, ir_optim=True)
    if not trt:
        yield RunModeSpec(mode, ir_optim=False)
    yield RunModeSpec(mode, memory_optim=True)
    yield RunModeSpec(mode, delete_passes=("conv_bn_fuse_pass", "fc_fuse_pass"))
    yield RunModeSpec(mode, threads=2)
    if mode == "gpu_fp16":
        yield RunModeSpec(mode, fp32_ops=("softmax", "layer_norm"))
        yield RunModeSpec(mode, low_precision_io=True)
        yield RunModeSpec(mode, fp32_ops=("softmax",), low_precision_io=True, memory_optim=True)
    if trt:
        yield RunModeSpec(mode, disable_trt_ops=("pool2d",))
        yield RunModeSpec(mode, dynamic_shape=EXPLICIT)
        yield RunModeSpec(mode, dynamic_shape=DynamicShape(EXPLICIT.ranges, False, True))
        yield RunModeSpec(mode, dynamic_shape=TUNED)
        yield RunModeSpec(mode, trt_optimization_level=0)
        yield RunModeSpec(mode, disable_trt_ops=("pool2d",), dynamic_shape=TUNED,
                          trt_optimization_level=3, memory_optim=True,
                          delete_passes=("conv_bn_fuse_pass",))
        yield RunModeSpec(mode, use_static=True)
    if mode == "trt_int8":
        yield RunModeSpec(mode, int8_source="quantized")
        yield RunModeSpec(mode, int8_source="quantized", dynamic_shape=EXPLICIT)
        yield RunModeSpec(mode, calib_batches=2, calib_data="calib/batches", use_static=True)


ALL_SPECS = [s for m in rm.RUN_MODES for s in _variants(m)]


def _all_recipes(spec):
    """Every recipe a spec leads to: candidate (GPU 0 and 1), collect pass, cache dir."""
    out = [recipe(spec, threads=3, shape_range_file=SHAPE_FILE),
           recipe(spec, threads=3, device_id=1, shape_range_file=Path(SHAPE_FILE),
                  max_batch_size=8)]
    if spec.dynamic_shape is not None and spec.dynamic_shape.tuned:
        out.append(rm.shape_collect_recipe(spec, SHAPE_FILE, device_id=1))
    if spec.run_mode.tensorrt:
        out.append(out[0] + (rm.optim_cache_call(Path("/tmp/opt") / rm.optim_cache_subdir(
            "resnet50", spec, "gw1", {"x": (1, 3, 224, 224)})),))
    return out


def test_variants_cover_every_toggle():
    used = {t.name for s in ALL_SPECS for t in rm.TOGGLES if t.is_set(s)}
    assert used == {t.name for t in rm.TOGGLES}


@pytest.mark.parametrize("spec", ALL_SPECS, ids=lambda s: s.label)
def test_every_call_binds_to_installed_config(spec):
    for calls in _all_recipes(spec):
        assert calls
        assert sg.check_recipe(calls) == []
        sg.require_valid(calls)  # raises RecipeError on any problem


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_baselines_bind(device):
    assert sg.check_recipe(rm.baseline_recipe(device, threads=2, device_id=1)) == []


def _apply(config, calls):
    """What the predictor builder does: skip optional calls this Config lacks."""
    for c in calls:
        if c.optional and not hasattr(config, c.method):
            continue
        args = [getattr(inference.PrecisionType, a.name) if isinstance(a, Precision) else a
                for a in c.args]
        kwargs = {k: getattr(inference.PrecisionType, v.name) if isinstance(v, Precision) else v
                  for k, v in c.kwargs}
        getattr(config, c.method)(*args, **kwargs)


def _rejected_by_pybind(exc: BaseException) -> bool:
    return isinstance(exc, TypeError) and "incompatible function arguments" in str(exc)


@pytest.mark.parametrize("spec", ALL_SPECS, ids=lambda s: s.label)
def test_pybind_accepts_every_call(spec):
    """The checker's verdict agrees with pybind: each call gets past argument conversion.
    On the CPU wheel TensorRT and fp16-I/O calls then raise Paddle's own precondition errors,
    which are not argument errors."""
    for calls in _all_recipes(spec):
        for c in calls:
            try:
                _apply(Config(), [c])
            except Exception as e:  # noqa: BLE001 - classified below
                assert not _rejected_by_pybind(e), f"{c}: {e}"


# ---------------------------------------------------------------------------------------
# The checker fails where it must.
# ---------------------------------------------------------------------------------------
def _engine_call(spec=RunModeSpec("trt_fp16")):
    return next(c for c in recipe(spec) if c.method == "enable_tensorrt_engine")


def test_checker_reports_misspelled_method():
    calls = tuple(replace(c, method="enable_tensorrt_engin") if c.method == "enable_tensorrt_engine"
                  else c for c in recipe(RunModeSpec("trt_fp16")))
    problems = sg.check_recipe(calls)
    assert len(problems) == 1
    assert "has no method 'enable_tensorrt_engin'" in problems[0]
    assert "did you mean 'enable_tensorrt_engine'?" in problems[0]
    with pytest.raises(sg.RecipeError, match="enable_tensorrt_engin"):
        sg.require_valid(calls)


def test_checker_requires_use_calib_mode_explicitly():
    engine = _engine_call()
    implicit = replace(engine, kwargs=tuple(kv for kv in engine.kwargs if kv[0] != "use_calib_mode"))
    problems = sg.check_recipe([implicit])
    assert problems == [f"{implicit}: leaves use_calib_mode to the binding default True; "
                        "recipes must pass every argument of enable_tensorrt_engine explicitly"]
    # pybind itself accepts the call, so only the checker stands between a recipe and a
    # silent int8 calibration: the CPU wheel gets past binding to its TensorRT precondition.
    with pytest.raises(RuntimeError, match="TENSORRT|TensorRT"):
        _apply(Config(), [implicit])


def test_checker_counts_positional_engine_arguments_as_explicit():
    positional = call("enable_tensorrt_engine", 1 << 30, 1, 3, Precision("Half"), False, False)
    assert sg.check_recipe([positional]) == [
        f"{positional}: leaves use_cuda_graph to the binding default False; recipes must pass "
        "every argument of enable_tensorrt_engine explicitly"]
    complete = call("enable_tensorrt_engine", 1 << 30, 1, 3, Precision("Half"), False, False, False)
    assert sg.check_recipe([complete]) == []


def test_binding_default_of_use_calib_mode_still_contradicts_the_docs():
    # If Paddle ever changes this default or adds an argument, the explicit-required list
    # needs a look: these assertions say so.
    (sig,) = sg.signatures_of(Config, "enable_tensorrt_engine")
    assert sig.param("use_calib_mode").default is True
    assert [p.name for p in sig.params] == list(sg.EXPLICIT_REQUIRED["enable_tensorrt_engine"])


# (call, pybind agrees it is wrong): wrong types and names the checker must report.
BAD_CALLS = [
    (call("set_trt_dynamic_shape_info", min_input_shape={}, max_input_shape={},
          opt_input_shape={}), True, "unexpected keyword argument 'opt_input_shape' "
                                     "(did you mean 'optim_input_shape'?)"),
    (call("exp_disable_mixed_precision_ops", ("softmax",)), True, "is not set[str]"),
    (call("set_optim_cache_dir", Path("/tmp")), True, "(PosixPath) is not str"),
    (call("enable_use_gpu", 256.0, 0), True, "256.0 (float) is not int"),
    (call("delete_pass", arg0="fc_fuse_pass"), True, "'arg0' is positional-only"),
    (call("exp_disable_tensorrt_ops", ["pool2d", 3]), True, "3 (int) is not str"),
    (call("set_trt_dynamic_shape_info", {"x": [1, "3"]}), True, "'3' (str) is not int"),
    (call("enable_use_gpu"), True, "missing required argument(s) memory_pool_init_size_mb"),
    (call("switch_ir_optim", True, False), True, "takes 1 arguments, 2 positional given"),
    (call("enable_use_gpu", 256, 0, Precision("Fp16")), False,
     "PrecisionType.Fp16 is not a paddle.inference.PrecisionType member"),
    # pybind converts 1 to True; recipes must still say what they mean.
    (call("enable_memory_optim", 1), False, "1 (int) is not bool"),
]


@pytest.mark.parametrize("bad,pybind_rejects,message", BAD_CALLS, ids=[str(b[0]) for b in BAD_CALLS])
def test_checker_reports_wrong_arguments(bad, pybind_rejects, message):
    problems = sg.check_recipe([call("disable_mkldnn"), bad])
    assert len(problems) == 1 and problems[0].startswith(f"{bad}: does not fit Config.")
    assert message in problems[0]
    if pybind_rejects:
        with pytest.raises(TypeError, match="incompatible function arguments"):
            _apply(Config(), [bad])


def test_overloaded_signatures_are_all_tried():
    sigs = sg.signatures_of(Config, "set_model")
    assert [len(s.params) for s in sigs] == [1, 2]
    assert sg.check_recipe([call("set_model", "m.pdmodel", "m.pdiparams")]) == []
    problems = sg.check_recipe([call("set_model", 1)])
    assert "overload 1: argument arg0: 1 (int) is not str" in problems[0]
    assert "overload 2: missing required argument(s) arg1" in problems[0]


def test_parser_reads_defaults_of_every_kind():
    doc = ("f(self: X, a: int = 1073741824, b: X.Precision = <Precision.Half: 2>, "
           "c: dict[str, list[int]] = {}, d: set[str] = set(), e: str = '', g: list[str]) -> None")
    (sig,) = sg.parse_signatures(doc, "f")
    assert [(p.name, p.type, p.default) for p in sig.params[:-1]] == [
        ("a", "int", 1 << 30), ("b", "X.Precision", Precision("Half")),
        ("c", "dict[str, list[int]]", {}), ("d", "set[str]", frozenset()), ("e", "str", "")]
    assert sig.params[-1].required


# ---------------------------------------------------------------------------------------
# Optional calls: skipped where the installed Config lacks the method.
# ---------------------------------------------------------------------------------------
# Real Config methods that exist in some supported Paddle versions only (enable_new_ir came
# with 3.x; enable_lite_engine left with it), plus one no version has.
VERSION_SPECIFIC = ["enable_new_ir", "enable_lite_engine", "enable_tensorrt_in_a_later_paddle"]


@pytest.mark.parametrize("method", VERSION_SPECIFIC)
def test_optional_call_follows_installed_config(method):
    present = hasattr(Config, method)
    opt = optional_call(method)
    calls = (call("disable_mkldnn"), opt)
    assert sg.check_recipe(calls) == []
    assert sg.skipped_optional(calls) == (() if present else (opt,))
    _apply(Config(), calls)  # applies, or leaves the absent call out, without error
    required = sg.check_recipe([call(method)])
    if present:
        assert required == []
    else:
        assert len(required) == 1
        assert required[0].startswith(f"{method}(): paddle.inference.Config has no method "
                                      f"{method!r}")


def test_some_version_specific_method_is_absent_here():
    assert [m for m in VERSION_SPECIFIC[:2] if not hasattr(Config, m)], \
        "expected one of enable_new_ir / enable_lite_engine to be missing on any Paddle >= 2.6"


def test_optional_calls_in_recipes():
    """Which recipe calls may be skipped, and whether this Paddle skips them."""
    optional = {c.method for s in ALL_SPECS for r in _all_recipes(s) for c in r if c.optional}
    assert optional == {"set_tensorrt_optimization_level", "enable_tensorrt_explicit_quantization"}
    for spec in ALL_SPECS:
        calls = recipe(spec, shape_range_file=SHAPE_FILE)
        assert sg.skipped_optional(calls) == tuple(
            c for c in calls if c.optional and not hasattr(Config, c.method))


# ---------------------------------------------------------------------------------------
# Spec data: validation, labels, hashing, shapes, caches.
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,message", [
    ({"mode": "trt_fp32", "fp32_ops": ("softmax",)}, "run mode trt_fp32 does not take fp32_ops"),
    ({"mode": "gpu_fp32", "low_precision_io": True}, "does not take low_precision_io"),
    ({"mode": "gpu_fp16", "disable_trt_ops": ("pool2d",)}, "does not take disable_trt_ops"),
    ({"mode": "cpu_fp32", "dynamic_shape": TUNED}, "does not take dynamic_shape"),
    ({"mode": "trt_fp16", "int8_source": "quantized"}, "does not take int8_source"),
    ({"mode": "trt_int8", "int8_source": "slim"}, "int8_source 'slim': use one of"),
    ({"mode": "trt_fp16", "ir_optim": False}, "would run no TensorRT subgraph"),
    ({"mode": "trt_fp16", "trt_optimization_level": 7}, "builder levels are 0..5"),
    ({"mode": "gpu_fp32", "use_static": True}, "run mode gpu_fp32 does not take use_static"),
    ({"mode": "trt_fp16", "calib_batches": 4}, "run mode trt_fp16 does not take calib_batches"),
    ({"mode": "trt_int8", "int8_source": "quantized", "calib_data": "d"},
     "run mode trt_int8 does not take calib_data"),
    ({"mode": "trt_int8", "calib_batches": 0}, "calibration needs at least one batch"),
])
def test_spec_rejects_toggles_that_do_not_apply(kwargs, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(".", r"\.")):
        RunModeSpec(**kwargs)


def test_tuned_recipe_needs_the_shape_file():
    with pytest.raises(OptionError, match="needs the shape-range file"):
        recipe(RunModeSpec("trt_fp16", dynamic_shape=TUNED))
    with pytest.raises(OptionError, match="no tuned dynamic shape"):
        rm.shape_collect_recipe(RunModeSpec("trt_fp16"), SHAPE_FILE)


def test_labels_are_distinct_and_recipes_hashable():
    labels = [s.label for s in ALL_SPECS]
    assert ("trt_int8+int8_source=quantized+dynamic_shape=x:1x3x32x32:1x3x224x224:4x3x512x512"
            in labels)
    assert "gpu_fp16+memory_optim+fp32_op=softmax+low_precision_io" in labels
    assert ("trt_fp32+memory_optim+delete_pass=conv_bn_fuse_pass+disable_trt_op=pool2d"
            "+dynamic_shape=tuned+trt_optimization_level=3") in labels
    assert "trt_int8+use_static+calib_batches=2+calib_data=calib/batches" in labels
    # Explicit ranges are part of the id, so every distinct spec has its own label.
    assert len(set(labels)) == len(labels) == len(set(ALL_SPECS))
    recipes = {r for s in ALL_SPECS for r in _all_recipes(s)}
    assert len(recipes) > len(ALL_SPECS)
    spec = RunModeSpec("trt_fp16", disable_trt_ops=["pool2d"], dynamic_shape=EXPLICIT)
    assert hash(spec) == hash(RunModeSpec("trt_fp16", disable_trt_ops=("pool2d",),
                                          dynamic_shape=EXPLICIT))


def test_shape_map_is_read_only_and_pickles():
    (shape_call,) = [c for c in recipe(RunModeSpec("trt_fp32", dynamic_shape=EXPLICIT))
                     if c.method == "set_trt_dynamic_shape_info"]
    smin = shape_call.args[0]
    with pytest.raises(TypeError, match="read-only"):
        smin["y"] = (1,)
    assert pickle.loads(pickle.dumps(shape_call)) == shape_call
    assert dict(smin) == {"x": (1, 3, 32, 32)}


@pytest.mark.parametrize("ranges,message", [
    ({"x": ([1, 3, 64, 64], [1, 3, 32, 32], [1, 3, 512, 512])}, "dims [2, 3] break it"),
    ({"x": ([1, 3, 32], [1, 3, 64, 64], [1, 3, 512, 512])}, "differ in rank"),
    ({"x": ([0, 3, 32, 32], [1, 3, 64, 64], [1, 3, 512, 512])}, "dims [0] break it"),
])
def test_dynamic_shape_rejects_bad_ranges(ranges, message):
    with pytest.raises(OptionError, match=message.replace("[", r"\[").replace("]", r"\]")):
        DynamicShape.explicit(ranges)


def test_dynamic_shape_plugin_flag_and_repeated_inputs():
    with pytest.raises(OptionError, match="needs explicit ranges, not tuned"):
        DynamicShape(tuned=True, disable_trt_plugin_fp16=True)
    twice = EXPLICIT.ranges + EXPLICIT.ranges
    with pytest.raises(OptionError, match=r"input\(s\) \['x'\] have more than one range"):
        DynamicShape(twice)


def test_dynamic_shape_is_tuned_or_explicit():
    with pytest.raises(OptionError, match="either tuned or has explicit"):
        DynamicShape()
    with pytest.raises(OptionError, match="either tuned or has explicit"):
        DynamicShape(EXPLICIT.ranges, tuned=True)


def test_check_shape_in_range():
    rm.check_shape_in_range({"x": (2, 3, 224, 224)}, EXPLICIT)
    rm.check_shape_in_range({"x": (9, 3, 999, 999)}, TUNED)  # collected from the case itself
    rm.check_shape_in_range({"x": (9, 3, 999, 999)}, None)
    rm.check_shape_in_range({"x": (1, 3, 32, 32), "im_shape": (1, 2)}, EXPLICIT)
    with pytest.raises(OptionError) as e:
        rm.check_shape_in_range({"x": (8, 3, 640, 16)}, EXPLICIT)
    assert str(e.value) == (
        "TensorRT dynamic shape: input 'x' shape [8, 3, 640, 16] is outside its range min "
        "[1, 3, 32, 32] .. max [4, 3, 512, 512] (dim 0: 8 not in [1, 4]; dim 2: 640 not in "
        "[32, 512]; dim 3: 16 not in [32, 512]); widen the range or drop the shape")
    with pytest.raises(OptionError, match="has shape \\[1, 3, 224\\], rank 3"):
        rm.check_shape_in_range({"x": (1, 3, 224)}, EXPLICIT)
    with pytest.raises(OptionError, match="ranges name inputs \\['x'\\] but the case's inputs "
                                          "are \\['image'\\]"):
        rm.check_shape_in_range({"image": (1, 3, 224, 224)}, EXPLICIT)


def test_optim_cache_dirs_and_calibration_tables(tmp_path):
    spec = RunModeSpec("trt_int8")
    a = rm.optim_cache_subdir("zoo:resnet50", spec, "gw0", {"x": (1, 3, 224, 224)})
    assert a == rm.optim_cache_subdir("zoo:resnet50", spec, "gw0", {"x": [1, 3, 224, 224]})
    assert re.match(r"zoo_resnet50(-[0-9a-f]{8})?/trt_int8-[0-9a-f]{10}/gw0$", a), a
    others = {rm.optim_cache_subdir("zoo:resnet50", spec, "gw1", {"x": (1, 3, 224, 224)}),
              rm.optim_cache_subdir("zoo:resnet50", spec, "gw0", {"x": (2, 3, 224, 224)}),
              rm.optim_cache_subdir("zoo:resnet50", replace(spec, dynamic_shape=EXPLICIT), "gw0",
                                    {"x": (1, 3, 224, 224)}),
              rm.optim_cache_subdir("zoo:resnet50", replace(spec, int8_source="quantized"),
                                    "gw0", {"x": (1, 3, 224, 224)})}
    assert len(others) == 4 and a not in others
    assert rm.needs_calibration(spec) and not rm.needs_calibration(replace(spec, int8_source="quantized"))
    assert rm.calibration_tables(tmp_path) == []
    (tmp_path / "trt_calib_4242").write_text("table")
    (tmp_path / "engine_info_4242.json").write_text("{}")
    assert rm.calibration_tables(tmp_path) == [tmp_path / "trt_calib_4242"]


# ---------------------------------------------------------------------------------------
# --run-mode toggles: parsing and the messages of mistakes.
# ---------------------------------------------------------------------------------------
def test_toggles_in_any_order_give_one_spec():
    assert parse_run_mode("trt_int8+use_static+calib_batches=4") == \
        parse_run_mode("trt_int8+calib_batches=4+use_static")


@pytest.mark.parametrize("text,message", [
    ("trt_fp16+turbo", "unknown toggle 'turbo'"),
    ("trt_fp16+dynamic_shape=x:1x3", "dynamic_shape='x:1x3' is not NAME:MIN:OPT:MAX"),
    ("trt_fp16+dynamic_shape=x:1x3:1xa:1x3", "is not NAME:MIN:OPT:MAX"),
    ("trt_fp16+dynamic_shape=x:4x3:1x3:8x3", "need 0 < min <= opt <= max"),
    ("trt_fp16+dynamic_shape=tuned+dynamic_shape=x:1:1:1", "exclude each other"),
    ("trt_fp16+disable_trt_plugin_fp16", "needs explicit dynamic_shape ranges"),
    ("onednn_fp32+use_static", "run mode onednn_fp32 does not take use_static"),
    ("trt_int8+int8_source=quantized+calib_data=d", "does not take calib_data"),
    ("trt_int8+calib_batches=0", "calib_batches 0: calibration needs at least one batch"),
    ("trt_fp16+trt_optimization_level=9", "builder levels are 0..5"),
])
def test_bad_toggles_say_what_is_valid(text, message):
    with pytest.raises(OptionError) as e:
        parse_run_mode(text)
    assert message in str(e.value)
    assert str(e.value).startswith("--run-mode: ")


def test_unknown_toggle_lists_every_toggle():
    with pytest.raises(OptionError) as e:
        parse_run_mode("trt_fp16+fast")
    for syntax, _ in RUN_MODE_TOGGLES:
        assert "+" + syntax in str(e.value)


# ---------------------------------------------------------------------------------------
# Optimizations really off on a PIR (.json) program, shown by the evidence of real runs on
# CPU with oneDNN on: ``switch_ir_optim(False)`` alone still fuses convolutions;
# ``passes_off`` leaves plain ops (or unfused oneDNN ops, for the ladder's oneDNN rung).
# ---------------------------------------------------------------------------------------


ONEDNN_IR_OFF = (call("enable_mkldnn"), call("switch_ir_optim", False))


@pytest.fixture(scope="module")
def pir_model(paddle_cache):
    model = resolve(parse_source("tiny_cnn"), paddle_cache)
    if model.format != "pir":
        pytest.skip("this Paddle exports legacy programs only (no PIR: nothing to turn off)")
    return model


def evidence_of(model, calls):
    predictor = build_predictor(model, calls)
    shown = Tally("baseline", model.prog_file, model.format, recipe_shows(calls))
    inputs = generate_all([s.concrete((1, 3, 32, 32)) for s in model.inputs], 0)
    recorded(HookRouter(predictor), shown, lambda: run_predictor(predictor, inputs))()
    return shown.evidence


def test_ir_optim_off_alone_still_fuses(pir_model):
    ev = evidence_of(pir_model, ONEDNN_IR_OFF)
    assert ev.fused.get("onednn_op.fused_conv2d") == 4
    [message] = broken_rules("baseline", ev)
    assert message.startswith("baseline: its recipe turns optimizations off, yet fused ops ran: "
                              "onednn_op.fused_conv2d x4")


def test_custom_passes_leave_plain_ops(pir_model):
    ev = evidence_of(pir_model, ONEDNN_IR_OFF + passes_off("pir"))
    assert ev.fused == {} and broken_rules("baseline", ev) == []
    assert ev.ops["pd_op.conv2d"] == 4 and ev.ops["pd_op.batch_norm_"] == 4
    assert ev.onednn_tensors == 0


def test_the_onednn_rung_keeps_onednn_kernels_unfused(pir_model):
    ev = evidence_of(pir_model, ONEDNN_IR_OFF + passes_off("pir", ONEDNN))
    assert ev.fused == {} and ev.ops["onednn_op.conv2d"] == 4 and ev.onednn_tensors > 0


def test_the_mode_table_states_what_each_mode_shows():
    shows = {name: mode.shows for name, mode in RUN_MODES.items()}
    assert shows == {"cpu_fp32": (), "onednn_fp32": (), "onednn_bf16": (BF16_TENSORS,),
                     "onednn_int8": (INT8_KERNELS,), "gpu_fp32": (), "gpu_fp16": (FP16_TENSORS,),
                     "trt_fp32": (TRT_ENGINE_OP,), "trt_fp16": (TRT_ENGINE_OP,),
                     "trt_int8": (TRT_ENGINE_OP,)}
    assert all(r in RULES for mode in RUN_MODES.values() for r in mode.shows)


# -- baselines: optimizations really off on PIR programs ------------------------------------


def test_pir_baselines_turn_their_passes_off():
    assert [str(c) for c in baseline_recipe("cpu", 2, 0, "pir")] == [
        "disable_mkldnn()", "switch_ir_optim(False)", "enable_custom_passes([], True)",
        "set_cpu_math_library_num_threads(2)"]
    assert [str(c) for c in baseline_recipe("gpu", None, 1, "pir")] == [
        "enable_use_gpu(256, 1, PrecisionType.Float32)", "switch_ir_optim(False)",
        "enable_custom_passes([], True)"]
    # legacy programs (and Paddle 2.6, which has no PIR) keep switch_ir_optim(False) alone
    assert [str(c) for c in baseline_recipe("cpu", None, 0, "legacy")] == [
        "disable_mkldnn()", "switch_ir_optim(False)"]
    assert [str(c) for c in passes_off("pir", rm.ONEDNN)] == [
        "enable_custom_passes(['onednn_placement_pass'], True)"]
    for device in ("cpu", "gpu"):
        assert sg.check_recipe(baseline_recipe(device, 2, 1, "pir")) == []
    assert recipe_shows(baseline_recipe("cpu", None, 0, "pir")) == (NO_FUSED_OPS,)
    assert recipe_shows(RUN_MODES["onednn_fp32"].calls) == ()


def test_fp32_op_on_onednn_bf16_is_every_other_op_type_in_bf16():
    from paddle.base import core

    calls = recipe(parse_run_mode("onednn_bf16+fp32_op=fused_conv2d"))
    (bf16,) = [c for c in calls if c.method == "set_bfloat16_op"]
    (arg,) = bf16.args
    assert isinstance(arg, EveryOpTypeExcept) and str(bf16) == \
        "set_bfloat16_op(<every op type except {'fused_conv2d'}>)"
    resolved = _resolve_arg(arg)
    assert "fused_conv2d" not in resolved and {"pool2d", "fc", "conv2d"} <= resolved
    assert len(resolved) == len(set(core.get_all_op_names())) - 1
    from paddle import inference

    apply_recipe(inference.Config(), calls)  # the installed binding takes it


def test_fp32_op_on_a_pir_bf16_program_is_an_error_not_a_silent_no_op():
    from pytest_paddle_infer.modes.run_modes import fp32_ops_problem

    spec = parse_run_mode("onednn_bf16+fp32_op=fused_conv2d")
    assert "legacy programs only" in fp32_ops_problem(spec, "pir")
    assert fp32_ops_problem(spec, "legacy") is None
    assert fp32_ops_problem(parse_run_mode("gpu_fp16+fp32_op=softmax"), "pir") is None
    assert fp32_ops_problem(parse_run_mode("onednn_bf16"), "pir") is None


def test_fp32_gpu_defaults_allow_for_tf32():
    for mode in ("gpu_fp32", "trt_fp32"):
        assert RUN_MODES[mode].tolerance == Rule(1e-2, 1e-2)
    assert RUN_MODES["cpu_fp32"].tolerance == Rule(1e-4, 1e-4)


# ---------------------------------------------------------------------------------------
# Modes: traits, not names.
# ---------------------------------------------------------------------------------------
def test_needs_follow_from_traits():
    assert {m.name: m.needs for m in RUN_MODES.values()} == {
        "cpu_fp32": (), "onednn_fp32": ("onednn",), "onednn_bf16": ("onednn", "bf16"),
        "onednn_int8": ("onednn", "int8"), "gpu_fp32": ("cuda",), "gpu_fp16": ("cuda",),
        "trt_fp32": ("cuda", "tensorrt"), "trt_fp16": ("cuda", "tensorrt"),
        "trt_int8": ("cuda", "tensorrt")}
    assert [m for m in RUN_MODES if RUN_MODES[m].tensorrt] == ["trt_fp32", "trt_fp16", "trt_int8"]


def test_gpu_rows_show_their_slots():
    engine = RUN_MODES["trt_int8"].template[-1]
    assert str(engine) == (
        "enable_tensorrt_engine(workspace_size=1073741824, max_batch_size=<max_batch_size>, "
        "min_subgraph_size=3, precision_mode=PrecisionType.Int8, use_static=<use_static>, "
        "use_calib_mode=<use_calib_mode>, use_cuda_graph=False)")
    assert "use_calib_mode=False" in str(rm.recipe(RunModeSpec("trt_int8", int8_source="quantized"))[2])
