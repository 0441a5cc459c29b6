"""Every GPU and TensorRT plan of every run mode and toggle, applied to a real GPU
``paddle.inference.Config`` (paddlepaddle-gpu 2.6.2) with the plugin's own ``make_config``; then
what Paddle holds is read back: ``use_gpu()``, the GPU id and memory pool,
``tensorrt_engine_enabled()``, the TensorRT precision, dynamic shape, optimization level,
explicit quantization and inspector, the mixed precision mode (``summary()``, where Paddle can
print it without TensorRT's library), IR optimization and the pass list
(``pass_builder().all_passes()``), deleted passes included.

Not readable from the Config's Python API in 2.6.2, so only applied here (Paddle accepts the
call with its arguments): ``exp_disable_tensorrt_ops`` (disabled TensorRT ops),
``exp_disable_mixed_precision_ops`` (+fp32_op), ``enable_low_precision_io``,
``set_optim_cache_dir``, and ``enable_tensorrt_engine``'s ``use_static`` and
``use_calib_mode``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from config_signatures import check_recipe
from pytest_paddle_infer.engine.predictor import make_config
from pytest_paddle_infer.models.inputs import InputSpec
from pytest_paddle_infer.models.source import ModelFiles
from pytest_paddle_infer.engine import build_plan as bp
from pytest_paddle_infer.modes.run_modes import (FP16, GPU, INT8, QUANTIZED, RUN_MODES, TOGGLES,
                                                 parse_run_mode, recipe)

X = InputSpec("x", (2, 3, 32, 32))
DEVICE = 1  # not the default 0: the worker's GPU must reach the Config
GPU_MODES = [name for name, mode in RUN_MODES.items() if mode.device == GPU]
RANGE = "x:1x3x16x16:2x3x32x32:4x3x32x32"

# Every GPU mode alone, and with each toggle that applies to it (a value other than the
# default; the coverage test below holds this list to the toggle table).
SPECS = GPU_MODES + [
    "gpu_fp32+no_ir_optim", "gpu_fp32+memory_optim", "gpu_fp32+delete_pass=conv_elementwise_add_fuse_pass",
    "gpu_fp32+threads=2", "gpu_fp32+ir_optim",
    "gpu_fp16+no_ir_optim", "gpu_fp16+memory_optim", "gpu_fp16+delete_pass=conv_elementwise_add_fuse_pass",
    "gpu_fp16+threads=2", "gpu_fp16+fp32_op=softmax", "gpu_fp16+fp32_op=softmax+fp32_op=conv2d",
    "gpu_fp16+low_precision_io", "gpu_fp16+ir_optim",
] + [f"{m}+{t}" for m in ("trt_fp32", "trt_fp16", "trt_int8") for t in (
    "memory_optim", "delete_pass=conv_elementwise_add_fuse_pass", "delete_pass=tensorrt_subgraph_pass",
    "threads=2", "disable_trt_op=conv2d", "dynamic_shape=tuned", f"dynamic_shape={RANGE}",
    f"dynamic_shape={RANGE}+disable_trt_plugin_fp16", "trt_optimization_level=1", "use_static",
    "ir_optim",
)] + [
    "trt_fp16+dynamic_shape=tuned+disable_trt_op=matmul_v2",
    "trt_int8+int8_source=quantized", "trt_int8+calib_batches=2", "trt_int8+calib_data=calib",
    "trt_int8+int8_source=quantized+dynamic_shape=tuned+use_static",
]


def legacy_model(tmp_path: Path) -> ModelFiles:
    d = tmp_path / "model"
    return ModelFiles("m", str(d / "inference.pdmodel"), str(d / "inference.pdiparams"), (X,))


def plan_of(text: str, tmp_path: Path, model=None, program_ops=None) -> bp.Plan:
    return bp.candidate_plan(parse_run_mode(text), model or legacy_model(tmp_path), [X],
                             optim_root=tmp_path / "optim", device_id=DEVICE,
                             program_ops=program_ops)


def summary_of(config) -> dict:
    """``Config.summary()``'s table as a dict; {} where it needs TensorRT's library (absent
    on this machine: summary() asks for its version when TensorRT is on)."""
    try:
        text = config.summary()
    except RuntimeError:
        return {}
    rows = (re.match(r"\|\s*(\S+)\s*\|\s*(.*?)\s*\|$", line.strip()) for line in text.splitlines())
    return {m.group(1): m.group(2) for m in rows if m}


def test_the_specs_cover_every_toggle_of_every_gpu_mode():
    covered = set()
    for text in SPECS:
        spec = parse_run_mode(text)
        covered |= {(spec.mode, row.name) for row in TOGGLES if row.is_set(spec)}
    wanted = {(mode, row.name) for mode in GPU_MODES for row in TOGGLES
              if row.applies(TOGGLES.spec_type(mode))}
    assert wanted - covered == set()


def test_the_gpu_wheel_reports_what_it_was_built_with(gpu_paddle):
    from pytest_paddle_infer.modes.capabilities import detect

    caps = detect()
    assert (caps.distribution, caps.version, caps.cuda) == ("paddlepaddle-gpu", "2.6.2", True)
    assert caps.trt_compile == (8, 5, 3)
    assert caps.gpu_count == 0 and caps.trt_runtime == (0,)  # no GPU, no libnvinfer here
    assert caps.missing_for(RUN_MODES["gpu_fp16"], 0) == (
        "gpu_fp16 needs a visible GPU; paddlepaddle-gpu 2.6.2 installed here has CUDA but sees "
        "no device (check the driver and CUDA_VISIBLE_DEVICES)")
    assert "needs a visible GPU" in caps.missing_for(RUN_MODES["trt_int8"], 0)


@pytest.mark.parametrize("text", SPECS)
def test_the_plan_applied_to_a_gpu_config(gpu_paddle, tmp_path, text):
    from paddle import inference

    spec = parse_run_mode(text)
    mode = spec.run_mode
    program_ops = {"conv2d": 4, "quantize_linear": 4, "dequantize_linear": 4} \
        if spec.int8_source == QUANTIZED else None
    plan = plan_of(text, tmp_path, program_ops=program_ops)
    model = legacy_model(tmp_path)
    for step in plan.steps:
        calls = getattr(step, "recipe", None)
        if calls is not None:
            assert check_recipe(calls) == [], f"{step} does not fit the GPU wheel's Config"
    config = make_config(model, plan.final.recipe)

    assert config.use_gpu() and config.gpu_device_id() == DEVICE
    assert config.memory_pool_init_size_mb() == 256
    assert config.ir_optim() is (spec.ir_optim is not False)
    assert config.tensorrt_engine_enabled() is mode.tensorrt
    # the pass list: the recipe's without its delete_pass calls, less the deleted passes
    plain = make_config(model, [c for c in plan.final.recipe if c.method != "delete_pass"])
    passes = list(config.pass_builder().all_passes())
    assert passes == [p for p in plain.pass_builder().all_passes() if p not in spec.delete_passes]
    for deleted in spec.delete_passes:
        assert deleted in plain.pass_builder().all_passes()  # the deletion took something away
    if mode.tensorrt:
        assert "tensorrt_subgraph_pass" in passes or "tensorrt_subgraph_pass" in spec.delete_passes
        assert config.tensorrt_precision_mode() == getattr(inference.PrecisionType, mode.precision)
        dyn = spec.dynamic_shape
        assert config.tensorrt_dynamic_shape_enabled() is (dyn is not None and not dyn.tuned)
        assert config.tuned_tensorrt_dynamic_shape() is bool(dyn is not None and dyn.tuned)
        if dyn is not None and dyn.tuned:
            assert config.shape_range_info_path() == str(tmp_path / "optim" / Path(
                plan.steps[0].path).relative_to(tmp_path / "optim") / bp.SHAPE_RANGE_FILE)
            assert config.trt_allow_build_at_runtime()
        assert config.tensorrt_optimization_level() == (
            spec.trt_optimization_level if spec.trt_optimization_level is not None
            else plain.tensorrt_optimization_level())
        assert config.tensorrt_explicit_quantization_enabled() is (spec.int8_source == QUANTIZED)
        # int8 without marked outputs: the inspector writes engine_info_*.json (int8 evidence)
        assert config.tensorrt_inspector_enabled() is (mode.precision == INT8)
    else:
        table = summary_of(config)
        assert table["use_gpu"] == "true" and table["use_tensorrt"] == "false"
        assert table["mixed_precision_mode"] == ("fp16" if mode.precision == FP16 else "fp32")
        assert table["enable_gpu_mixed"] == ("1" if mode.precision == FP16 else "0")
        assert table["memory_optim"] == ("true" if spec.memory_optim else "false")
    methods = [c.method for c in plan.final.recipe]
    assert ("exp_disable_tensorrt_ops" in methods) is bool(spec.disable_trt_ops)
    assert ("exp_disable_mixed_precision_ops" in methods) is bool(spec.fp32_ops)
    assert ("enable_low_precision_io" in methods) is spec.low_precision_io
    assert plan.feed_dtype == ("float16" if spec.low_precision_io else "")


@pytest.mark.parametrize("text", [t for t in SPECS if "dynamic_shape=tuned" in t])
def test_the_shape_collecting_pass_applied_to_a_gpu_config(gpu_paddle, tmp_path, text):
    plan = plan_of(text, tmp_path)
    collect = next(s for s in plan.steps if isinstance(s, bp.CollectShapes))
    config = make_config(legacy_model(tmp_path), collect.recipe)
    assert config.use_gpu() and config.gpu_device_id() == DEVICE
    assert not config.tensorrt_engine_enabled()
    assert config.shape_range_info_collected() and config.shape_range_info_path() == collect.shape_file


@pytest.mark.parametrize("text", ["trt_int8", "trt_int8+calib_batches=2",
                                  f"trt_int8+dynamic_shape={RANGE}"])
def test_the_calibration_pass_applied_to_a_gpu_config(gpu_paddle, tmp_path, text):
    from paddle import inference

    plan = plan_of(text, tmp_path)
    calibrate = next(s for s in plan.steps if isinstance(s, bp.Calibrate))
    assert calibrate.recipe == plan.final.recipe  # the table is made by the checked recipe
    config = make_config(legacy_model(tmp_path), calibrate.recipe)
    assert config.tensorrt_engine_enabled()
    assert config.tensorrt_precision_mode() == inference.PrecisionType.Int8
    assert not config.tensorrt_explicit_quantization_enabled()
    engine = next(c for c in calibrate.recipe if c.method == "enable_tensorrt_engine")
    assert dict(engine.kwargs)["use_calib_mode"] is True


def test_quantized_int8_never_calibrates(gpu_paddle, tmp_path):
    plan = plan_of("trt_int8+int8_source=quantized", tmp_path,
                   program_ops={"conv2d": 4, "quantize_linear": 4, "dequantize_linear": 4})
    assert not any(isinstance(s, bp.Calibrate) for s in plan.steps)
    engine = next(c for c in plan.final.recipe if c.method == "enable_tensorrt_engine")
    assert dict(engine.kwargs)["use_calib_mode"] is False
    # an older PaddleSlim model (scales as attributes): the implicit path, no explicit flag
    older = plan_of("trt_int8+int8_source=quantized", tmp_path,
                    program_ops={"conv2d": 4, "fake_quantize_moving_average_abs_max": 4})
    assert not make_config(legacy_model(tmp_path), older.final.recipe).tensorrt_explicit_quantization_enabled()


@pytest.mark.parametrize("text", ["trt_fp32", "trt_fp16", "trt_int8+int8_source=quantized",
                                  f"trt_fp16+dynamic_shape={RANGE}+disable_trt_op=softmax"])
def test_a_pir_programs_predictor_runs_the_converted_program_without_legacy_tensorrt(
        gpu_paddle, tmp_path, text):
    """A .json program takes paddle.tensorrt.convert; the predictor that runs the converted
    program is plain GPU fp32: the legacy TensorRT subgraph pass must not run on it again."""
    d = tmp_path / "user"
    model = ModelFiles("m", str(d / "inference.json"), str(d / "inference.pdiparams"), (X,))
    plan = plan_of(text, tmp_path, model=model)
    assert plan.path == bp.pir_tensorrt.PIR_PATH
    convert = next(s for s in plan.steps if isinstance(s, bp.ConvertPir))
    assert plan.final.program == (convert.program, convert.params)
    config = make_config(ModelFiles("m", convert.program, convert.params, (X,)), plan.final.recipe)
    assert config.use_gpu() and config.gpu_device_id() == DEVICE
    assert not config.tensorrt_engine_enabled()
    assert "tensorrt_subgraph_pass" not in config.pass_builder().all_passes()
