"""GPU and TensorRT plan details written from Paddle's source (issue 11, items 4, 7-10, 12):
tuned shape collection runs several times, low_precision_io feeds float16, explicit
quantization only for Q/DQ programs, one calibration batch shape, TensorRT 10's runtime
version, one calibration lock per _opt_cache directory, absolute program paths."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pytest_paddle_infer.engine.predictor import PredictorCache, build_predictor, make_config
from pytest_paddle_infer.models.inputs import InputSpec
from pytest_paddle_infer.models.source import ModelFiles, parse_source
from pytest_paddle_infer.engine import build_plan as bp
from pytest_paddle_infer.modes.capabilities import Capabilities, normalize_trt_version
from pytest_paddle_infer.modes.run_modes import RUN_MODES, parse_run_mode

X = InputSpec("x", (2, 3, 32, 32))
LEGACY = ModelFiles("m", "/models/m/inference.pdmodel", "/models/m/inference.pdiparams", (X,))


def plan(text, program_ops=None, model=LEGACY, spec_input=X):
    return bp.candidate_plan(parse_run_mode(text), model, [spec_input], optim_root="/o",
                             program_ops=program_ops)


# -- item 4: tuned dynamic shape collects over several runs --------------------------------


class CountingPredictor:
    """A real predictor whose runs are counted into ``runs`` (a list, so the predictor itself
    can go: Paddle writes the shape file when it is destroyed)."""

    def __init__(self, predictor, runs):
        self.predictor, self.runs = predictor, runs

    def run(self):
        self.runs[-1] += 1
        return self.predictor.run()

    def __getattr__(self, name):
        return getattr(self.predictor, name)


def test_shape_collection_runs_the_inputs_four_times(paddle_cache, tmp_path):
    """On Paddle 3.x GPU the first run of the collecting predictor calls no hook, so one run
    records nothing; PaddleX runs min, opt, opt, max. Here the collection runs for real on the
    CPU (the CPU wheel ignores enable_use_gpu)."""
    from pytest_paddle_infer.engine.runner import Runner
    from pytest_paddle_infer.models.inputs import generate_all

    runner = Runner(paddle_cache)
    model = runner.model_files(parse_source("tiny_cnn"), legacy=True)
    specs = runner.input_specs(model, {})
    p = bp.candidate_plan(parse_run_mode("trt_fp16+dynamic_shape=tuned"), model, specs,
                          optim_root=tmp_path)
    collect = p.steps[1]
    assert isinstance(collect, bp.CollectShapes) and collect.runs == 4
    assert "(4 runs)" in str(collect)
    runs = []

    def build(files, calls):
        runs.append(0)
        return CountingPredictor(build_predictor(files, calls), runs)

    executor = bp.PlanExecutor(PredictorCache(), build=build)
    bp.prepare_cache_dir(p.steps[0])
    executor._collect_shapes(collect, model, generate_all(specs, 0))
    assert runs == [4]
    assert Path(collect.shape_file).stat().st_size > 0


# -- item 7: gpu_fp16+low_precision_io feeds float16 ----------------------------------------


def test_low_precision_io_feeds_float16_inputs():
    p = plan("gpu_fp16+low_precision_io")
    assert p.feed_dtype == "float16"
    assert plan("gpu_fp16").feed_dtype == ""
    inputs = {"x": np.ones((1, 3), "float32"), "im_shape": np.ones((1, 2), "int32")}
    fed = bp.candidate_feeds(p, inputs)
    assert fed["x"].dtype == np.float16 and fed["im_shape"].dtype == np.int32
    assert bp.candidate_feeds(plan("gpu_fp16"), inputs) is inputs


# -- item 8: explicit quantization only for Q/DQ programs -----------------------------------


@pytest.mark.parametrize("ops, explicit", [
    ({"conv2d": 3, "quantize_linear": 2, "dequantize_linear": 4}, True),
    # PaddleSlim's older format: scales as attributes, only TensorRT's implicit path reads them
    ({"conv2d": 3, "fake_quantize_moving_average_abs_max": 2, "fake_dequantize_max_abs": 2}, False),
    (None, True),  # not known: Paddle's newer quantization format
])
def test_explicit_quantization_follows_the_program(ops, explicit):
    calls = [c.method for c in plan("trt_int8+int8_source=quantized", ops).final.recipe]
    assert ("enable_tensorrt_explicit_quantization" in calls) is explicit


# -- item 9: calibration batches share one shape --------------------------------------------


def test_generated_calibration_batches_take_the_opt_shape_of_a_range():
    text = "trt_int8+dynamic_shape=x:1x3x32x32:4x3x32x32:8x3x32x32"
    batches = plan(text).steps[1].batches
    assert {s.shape for s in batches.specs} == {(4, 3, 32, 32)}
    loaded = bp.load_batches(replace(batches, seeds=batches.seeds[:2]))
    assert {b["x"].shape for b in loaded} == {(4, 3, 32, 32)}
    assert plan("trt_int8").steps[1].batches.specs == (X,)  # static: the case's shape


# -- item 10: TensorRT 10's runtime version ------------------------------------------------


@pytest.mark.parametrize("read, meant", [
    ((100, 5, 0), (10, 5, 0)),  # getInferLibVersion() 100500 split as major*1000 + ...
    ((101, 1, 0), (10, 11, 0)),  # 101100: TensorRT 10.11.0
    ((8, 6, 1), (8, 6, 1)),
    ((0,), (0,)),
])
def test_tensorrt_10_runtime_version_is_normalized(read, meant):
    assert normalize_trt_version(read) == meant


def test_tensorrt_10_runtime_does_not_skip_for_a_major_mismatch():
    caps = Capabilities("paddlepaddle-gpu", "3.3.1", "", True, 1, (10, 5, 0),
                        normalize_trt_version((100, 5, 0)), True)
    assert caps.missing_for(RUN_MODES["trt_fp16"], 0) is None


# -- item 12: one calibration lock per _opt_cache dir; absolute program paths ---------------


def test_calibrations_of_programs_in_one_directory_share_a_lock():
    other = replace(LEGACY, name="n", prog_file="/models/m/other.pdmodel")
    elsewhere = replace(LEGACY, prog_file="/models/n/inference.pdmodel")
    lock = plan("trt_int8").steps[1].lock_file
    assert lock == bp.candidate_plan(parse_run_mode("trt_int8"), other, [X], optim_root="/o").steps[1].lock_file
    assert lock != bp.candidate_plan(parse_run_mode("trt_int8"), elsewhere, [X], optim_root="/o").steps[1].lock_file


def test_configs_name_programs_by_absolute_path(paddle_cache, monkeypatch):
    """Paddle's calibration-table writer runs in the predictor's destructor and throws on a
    relative program path."""
    from pytest_paddle_infer.engine.runner import Runner

    model = Runner(paddle_cache).model_files(parse_source("tiny_cnn"), legacy=True)
    monkeypatch.chdir(Path(model.prog_file).parent.parent)
    relative = replace(model, prog_file=os.path.relpath(model.prog_file),
                       params_file=os.path.relpath(model.params_file))
    config = make_config(relative, ())
    assert os.path.isabs(config.prog_file()) and os.path.isabs(config.params_file())
    assert config.prog_file() == str(Path(model.prog_file).resolve())


# -- item 11: what belongs to plans ----------------------------------------------------------


def test_disabling_a_matmul_with_dynamic_shape_disables_matrix_multiply():
    """trt_map_ops_to_matrix_multiply_pass renames mul/matmul/matmul_v2 when the engine has a
    dynamic shape, before the TensorRT teller reads the disabled list."""
    def disabled(text):
        p = plan(text)
        return next(c.args[0] for c in p.final.recipe if c.method == "exp_disable_tensorrt_ops"), p

    ops, p = disabled("trt_fp16+dynamic_shape=tuned+disable_trt_op=matmul_v2")
    assert ops == ("matmul_v2", "matrix_multiply")
    assert any("renames mul/matmul/matmul_v2 to matrix_multiply" in r for r in p.remarks)
    ops, p = disabled("trt_fp16+disable_trt_op=matmul_v2")  # static shape: no renaming
    assert ops == ("matmul_v2",) and p.remarks == ()
    ops, _ = disabled("trt_fp16+dynamic_shape=tuned+disable_trt_op=softmax")
    assert ops == ("softmax",)


def test_memory_optim_on_gpu_under_paddle_3_is_remarked():
    spec = parse_run_mode("gpu_fp32+memory_optim")
    assert bp.plan_remarks(spec, "3.3.1") == (
        "memory_optim: on Paddle 3.x GPU the new executor runs with memory optimization off "
        "whatever enable_memory_optim() asks",)
    assert bp.plan_remarks(spec, "2.6.2") == ()
    assert bp.plan_remarks(parse_run_mode("cpu_fp32+memory_optim"), "3.3.1") == ()


def test_static_shape_tensorrt_on_a_model_declaring_free_dims_asks_for_dynamic_shape():
    """Legacy TensorRT without +dynamic_shape builds from the declared shapes (the batch from
    max_batch_size); Paddle rejects [-1, 3, -1, -1] with a message about TensorRT 5."""
    from pytest_paddle_infer.engine import build_plan as bp
    from pytest_paddle_infer.errors import OptionError
    from pytest_paddle_infer.models.inputs import InputSpec
    from pytest_paddle_infer.models.source import ModelFiles
    from pytest_paddle_infer.modes.run_modes import parse_run_mode

    free = ModelFiles("det", "/m/det/inference.pdmodel", "/m/det/inference.pdiparams",
                      (InputSpec("image", (-1, 3, -1, -1)), InputSpec("scale", (-1, 2))))
    specs = [InputSpec("image", (1, 3, 64, 64)), InputSpec("scale", (1, 2))]
    with pytest.raises(OptionError) as e:
        bp.candidate_plan(parse_run_mode("trt_fp16"), free, specs, optim_root="/o")
    assert str(e.value) == (
        "trt_fp16: det declares input dims other than the batch as -1 (image [-1, 3, -1, -1]); "
        "static-shape TensorRT needs them fixed. Add +dynamic_shape=tuned (ranges from the "
        "case's inputs) or +dynamic_shape=image:MIN:OPT:MAX per input (suite key dynamic_shape)")
    for text in ("trt_fp16+dynamic_shape=tuned", "gpu_fp32",
                 "trt_fp16+dynamic_shape=image:1x3x32x32:1x3x64x64:1x3x128x128"):
        bp.candidate_plan(parse_run_mode(text), free, specs, optim_root="/o")
    fixed = ModelFiles("cls", "/m/cls/inference.pdmodel", "/m/cls/inference.pdiparams",
                       (InputSpec("x", (-1, 3, 224, 224)),))
    bp.candidate_plan(parse_run_mode("trt_fp16"), fixed, [InputSpec("x", (2, 3, 224, 224))],
                      optim_root="/o")


def test_fp32_op_on_gpu_fp16_must_name_an_op_type_of_the_program(paddle_cache):
    """exp_disable_mixed_precision_ops matches op types as the pass sees them: the legacy
    name matmul_v2 on a .json program (where it is matmul) keeps nothing in fp32. Checked
    against the real programs' own op types, both exports of one model."""
    from pytest_paddle_infer.engine.int8_evidence import program_op_types
    from pytest_paddle_infer.engine.runner import Runner

    runner = Runner(paddle_cache)
    pir = runner.model_files(parse_source("tiny_cnn"), legacy=False)
    legacy = runner.model_files(parse_source("tiny_cnn"), legacy=True)
    wrong = parse_run_mode("gpu_fp16+fp32_op=matmul_v2")
    problem = bp.fp32_ops_problem(wrong, program_op_types(pir.prog_file), pir.format)
    assert problem.startswith(
        "gpu_fp16+fp32_op=matmul_v2: +fp32_op names matmul_v2, which the program holds no op of, "
        "and no fusion makes: nothing would be kept in fp32. A .json (PIR) program names ops as "
        "the file holds them (matmul, not matmul_v2; add, not elementwise_add). Its op types: ")
    assert "matmul" in problem
    assert bp.fp32_ops_problem(wrong, program_op_types(legacy.prog_file), legacy.format) is None
    for text in ("gpu_fp16+fp32_op=matmul", "gpu_fp16+fp32_op=pd_op.matmul",
                 "gpu_fp16+fp32_op=fused_gemm_epilogue", "gpu_fp16+fp32_op=fc"):
        assert bp.fp32_ops_problem(parse_run_mode(text), program_op_types(pir.prog_file),
                                   pir.format) is None, text
    # a name fusion may take into another type: said in the plan's remarks
    plan = bp.candidate_plan(parse_run_mode("gpu_fp16+fp32_op=matmul+fp32_op=softmax"), pir,
                             [s.concrete((1, 3, 32, 32)) for s in pir.inputs], optim_root="/o")
    [remark] = [r for r in plan.remarks if r.startswith("fp32_op:")]
    assert remark.startswith("fp32_op: GPU fusion passes may take matmul into fused op types")
