"""modes/build_plan.py: GPU and TensorRT run modes wired from recipe to predictor.

The plan of every GPU/TRT mode and toggle is asserted exactly (it is data); the executor runs
for real everything this CPU-only machine can run: CPU plans, the tuned-shape collection pass
of a TensorRT plan (Paddle's CPU wheel ignores enable_use_gpu and collects on the CPU), the
calibration pass's batch feeding, table lookup and error, and the cache-dir handling. Only
the Paddle TensorRT calls themselves fail here, with Paddle's own "compile with TENSORRT".
End to end: tests/integration/test_gpu_wiring.py.
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from config_signatures import check_recipe
from pytest_paddle_infer.engine import build_plan as bp
from pytest_paddle_infer.engine.pir_tensorrt import PIR_PATH
from pytest_paddle_infer.engine.predictor import PredictorCache, build_predictor, run_predictor
from pytest_paddle_infer.engine.runner import Runner
from pytest_paddle_infer.errors import InputError, OptionError, PredictorError
from pytest_paddle_infer.models.inputs import InputSpec, generate_all
from pytest_paddle_infer.models.source import ModelFiles, parse_source
from pytest_paddle_infer.modes import trt_marking as tm
from pytest_paddle_infer.modes.run_modes import DynamicShape, RunModeSpec, parse_run_mode, recipe

ROOT = "/cache/optim"
X1 = InputSpec("x", (1, 3, 224, 224))
X4 = InputSpec("x", (4, 3, 224, 224))
RESNET = ModelFiles("resnet50", "/models/resnet50/inference.pdmodel",  # the legacy TensorRT path
                    "/models/resnet50/inference.pdiparams", (InputSpec("x", (-1, 3, 224, 224)),))
EXPLICIT = DynamicShape.explicit({"x": ([1, 3, 224, 224], [4, 3, 224, 224], [8, 3, 224, 224])})
TUNED = DynamicShape(tuned=True)


# ---------------------------------------------------------------------------------------
# The plan of every mode, exactly.
# ---------------------------------------------------------------------------------------
def gpu(device: int, precision: str = "Float32") -> str:
    return f"enable_use_gpu(256, {device}, PrecisionType.{precision})"


def trt(precision: str, calib: bool, batch: int = 1, static: bool = False) -> str:
    return (f"enable_tensorrt_engine(workspace_size=1073741824, max_batch_size={batch}, "
            f"min_subgraph_size=3, precision_mode=PrecisionType.{precision}, use_static={static}, "
            f"use_calib_mode={calib}, use_cuda_graph=False)")


def render(plan: bp.Plan, cache: str):
    """Steps as plain tuples, the case's cache dir written as {cache}."""
    def text(value):
        return str(value).replace(cache, "{cache}")

    out = []
    for step in plan.steps:
        if isinstance(step, bp.PrepareCacheDir):
            out.append(("prepare", text(step.path), step.keep))
        elif isinstance(step, bp.CollectShapes):
            out.append(("collect", [text(c) for c in step.recipe], text(step.shape_file), step.reuse))
        elif isinstance(step, bp.Calibrate):
            out.append(("calibrate", [text(c) for c in step.recipe], text(step.batches),
                        text(step.table_dir), step.paddle_table_dir, step.lock_file, step.reuse))
        else:
            out.append(("build", [text(c) for c in step.recipe]))
    return out


CACHE_PATTERN = re.compile(r"/cache/optim/resnet50-[0-9a-f]{8}/(\w+)-[0-9a-f]{10}/gw1$")
LOCK = "/cache/optim/locks/{key}.lock"
MODEL_CACHE = "/models/resnet50/_opt_cache"
INSPECT = "enable_tensorrt_inspector(True)"  # int8: engine_info shows the engine's int8 layers
SEEDS8 = "8 batches generated like the case's inputs (seeds 1000007..1000014)"

# (run mode as --run-mode spells it, input, expected steps); worker gw1 on GPU 1, seed 7.
PLANS = [
    ("cpu_fp32", X1, [("build", ["disable_mkldnn()", "switch_ir_optim(True)",
                                 "set_cpu_math_library_num_threads(2)"])]),
    ("onednn_bf16+no_ir_optim", X1, [("build", [
        "enable_mkldnn()", "enable_mkldnn_bfloat16()", "switch_ir_optim(False)",
        "set_cpu_math_library_num_threads(2)"])]),
    ("gpu_fp32", X1, [("build", [gpu(1), "switch_ir_optim(True)"])]),
    ("gpu_fp16+fp32_op=softmax+low_precision_io", X4, [("build", [
        gpu(1, "Half"), "switch_ir_optim(True)", "exp_disable_mixed_precision_ops({'softmax'})",
        "enable_low_precision_io(True)"])]),
    ("trt_fp32", X1, [
        ("prepare", "{cache}", False),
        ("build", [gpu(1), "switch_ir_optim(True)", trt("Float32", False),
                   "set_optim_cache_dir('{cache}/')"])]),
    # static shape: the engine's max batch is the case's batch
    ("trt_fp16+disable_trt_op=pool2d+trt_optimization_level=5", X4, [
        ("prepare", "{cache}", False),
        ("build", [gpu(1), "switch_ir_optim(True)", trt("Half", False, batch=4),
                   "exp_disable_tensorrt_ops(('pool2d',))",
                   "set_tensorrt_optimization_level(5) [if available]",
                   "set_optim_cache_dir('{cache}/')"])]),
    ("trt_fp16+use_static", X1, [
        ("prepare", "{cache}", True),
        ("build", [gpu(1), "switch_ir_optim(True)", trt("Half", False, static=True),
                   "set_optim_cache_dir('{cache}/')"])]),
    ("trt_fp32+dynamic_shape=x:1x3x224x224:4x3x224x224:8x3x224x224", X4, [
        ("prepare", "{cache}", False),
        ("build", [gpu(1), "switch_ir_optim(True)", trt("Float32", False, batch=8),
                   "set_trt_dynamic_shape_info({'x': (1, 3, 224, 224)}, {'x': (8, 3, 224, 224)}, "
                   "{'x': (4, 3, 224, 224)}, False)", "set_optim_cache_dir('{cache}/')"])]),
    ("trt_fp16+dynamic_shape=tuned", X4, [
        ("prepare", "{cache}", False),
        ("collect", [gpu(1), "collect_shape_range_info('{cache}/shape_range.pbtxt')"],
         "{cache}/shape_range.pbtxt", False),
        ("build", [gpu(1), "switch_ir_optim(True)", trt("Half", False, batch=4),
                   "enable_tuned_tensorrt_dynamic_shape('{cache}/shape_range.pbtxt', True)",
                   "set_optim_cache_dir('{cache}/')"])]),
    ("trt_int8", X1, [
        ("prepare", "{cache}", False),
        ("calibrate", [gpu(1), "switch_ir_optim(True)", trt("Int8", True),
                       "set_optim_cache_dir('{cache}/')", INSPECT], SEEDS8, "{cache}", MODEL_CACHE, LOCK, False),
        ("build", [gpu(1), "switch_ir_optim(True)", trt("Int8", True),
                   "set_optim_cache_dir('{cache}/')", INSPECT])]),
    ("trt_int8+use_static+calib_batches=3", X1, [
        ("prepare", "{cache}", True),
        ("calibrate", [gpu(1), "switch_ir_optim(True)", trt("Int8", True, static=True),
                       "set_optim_cache_dir('{cache}/')", INSPECT],
         "3 batches generated like the case's inputs (seeds 1000007..1000009)", "{cache}",
         MODEL_CACHE, LOCK, True),
        ("build", [gpu(1), "switch_ir_optim(True)", trt("Int8", True, static=True),
                   "set_optim_cache_dir('{cache}/')", INSPECT])]),
    ("trt_int8+calib_batches=2+calib_data=/data/calib", X1, [
        ("prepare", "{cache}", False),
        ("calibrate", [gpu(1), "switch_ir_optim(True)", trt("Int8", True),
                       "set_optim_cache_dir('{cache}/')", INSPECT],
         "up to 2 .npy/.npz batches from /data/calib", "{cache}", MODEL_CACHE, LOCK, False),
        ("build", [gpu(1), "switch_ir_optim(True)", trt("Int8", True),
                   "set_optim_cache_dir('{cache}/')", INSPECT])]),
    ("trt_int8+dynamic_shape=tuned", X4, [
        ("prepare", "{cache}", False),
        ("collect", [gpu(1), "collect_shape_range_info('{cache}/shape_range.pbtxt')"],
         "{cache}/shape_range.pbtxt", False),
        ("calibrate", [gpu(1), "switch_ir_optim(True)", trt("Int8", True, batch=4),
                       "enable_tuned_tensorrt_dynamic_shape('{cache}/shape_range.pbtxt', True)",
                       "set_optim_cache_dir('{cache}/')", INSPECT], SEEDS8, "{cache}", MODEL_CACHE, LOCK, False),
        ("build", [gpu(1), "switch_ir_optim(True)", trt("Int8", True, batch=4),
                   "enable_tuned_tensorrt_dynamic_shape('{cache}/shape_range.pbtxt', True)",
                   "set_optim_cache_dir('{cache}/')", INSPECT])]),
    ("trt_int8+int8_source=quantized", X1, [
        ("prepare", "{cache}", False),
        ("build", [gpu(1), "switch_ir_optim(True)", trt("Int8", False),
                   "enable_tensorrt_explicit_quantization() [if available]",
                   "set_optim_cache_dir('{cache}/')", INSPECT])]),
]


def plan_for(text: str, spec_input: InputSpec = X1, **kwargs) -> bp.Plan:
    args = dict(optim_root=ROOT, threads=2, seed=7, device_id=1, worker="gw1")
    args.update(kwargs)
    return bp.candidate_plan(parse_run_mode(text), RESNET, [spec_input], **args)


def test_plans_cover_every_mode_and_gpu_toggle():
    specs = [parse_run_mode(text) for text, _, _ in PLANS]
    assert {s.mode for s in specs} == {"cpu_fp32", "onednn_bf16", "gpu_fp32", "gpu_fp16",
                                       "trt_fp32", "trt_fp16", "trt_int8"}
    toggled = {t for s in specs for t in ("fp32_ops", "low_precision_io", "disable_trt_ops",
                                          "int8_source", "dynamic_shape", "trt_optimization_level",
                                          "use_static", "calib_batches", "calib_data")
               if getattr(s, t) != getattr(RunModeSpec(s.mode), t)}
    assert len(toggled) == 9


@pytest.mark.parametrize("text,spec_input,expected", PLANS, ids=[p[0] for p in PLANS])
def test_plan_is_exactly(text, spec_input, expected):
    plan = plan_for(text, spec_input)
    cache = plan.steps[0].path if isinstance(plan.steps[0], bp.PrepareCacheDir) else "-"
    if cache != "-":
        match = CACHE_PATTERN.match(cache)
        assert match and match.group(1) == parse_run_mode(text).mode, cache
    key = bp.table_dir_key(RESNET)  # calibrations lock per <model dir>/_opt_cache
    want = [tuple(part.replace("{key}", key) if isinstance(part, str) else part for part in step)
            for step in expected]
    assert render(plan, cache) == want
    assert isinstance(plan.final, bp.Build) and len(plan.steps) == len(expected)


def test_plan_says_which_int8_path_it_knows_up_front():
    assert plan_for("trt_int8+int8_source=quantized").int8 == bp.INT8_QUANTIZED
    # a calibration says at run time whether it generated or loaded the table
    assert plan_for("trt_int8").int8 == ""
    assert plan_for("trt_fp16").int8 == ""


def test_generated_calibration_batches_are_the_case_inputs_shape_with_other_seeds():
    batches = plan_for("trt_int8+calib_batches=2").steps[1].batches
    assert batches == bp.GeneratedBatches((X1,), (1_000_007, 1_000_008))
    loaded = bp.load_batches(batches)
    case_inputs = generate_all([X1], 7)
    assert [b["x"].shape for b in loaded] == [(1, 3, 224, 224)] * 2
    assert not np.array_equal(loaded[0]["x"], loaded[1]["x"])
    assert not np.array_equal(loaded[0]["x"], case_inputs["x"])


# ---------------------------------------------------------------------------------------
# Cache dirs: per model, run mode, shapes and worker.
# ---------------------------------------------------------------------------------------
def cache_of(text="trt_int8", spec_input=X1, worker="gw1", model=RESNET) -> str:
    return bp.candidate_plan(parse_run_mode(text), model, [spec_input], optim_root=ROOT,
                             worker=worker).steps[0].path


def test_optim_cache_dirs_are_distinct_per_worker_shape_mode_and_model():
    other_model = replace(RESNET, prog_file="/elsewhere/resnet50/inference.pdmodel")
    dirs = [cache_of(), cache_of(worker="gw0"), cache_of(worker="main"),
            cache_of(spec_input=X4), cache_of("trt_int8+dynamic_shape=tuned"),
            cache_of("trt_int8+dynamic_shape=x:1x3x224x224:4x3x224x224:8x3x224x224"),
            cache_of("trt_int8+calib_data=/data/calib"), cache_of("trt_fp16"),
            cache_of(model=other_model)]
    assert len(set(dirs)) == len(dirs)
    assert cache_of() == cache_of()  # stable: +use_static finds last run's engines
    assert all(d.startswith(ROOT + "/") for d in dirs)
    assert cache_of(model=other_model).split("/")[3] != cache_of().split("/")[3]


def test_max_batch_size_follows_inputs_and_ranges():
    assert bp.max_batch_size({"x": (4, 3, 8, 8), "im_shape": (4, 2)}, None) == 4
    assert bp.max_batch_size({"x": (2, 3, 224, 224)}, EXPLICIT) == 8
    assert bp.max_batch_size({}, None) == 1


# ---------------------------------------------------------------------------------------
# A shape outside the declared range: an error before anything is built.
# ---------------------------------------------------------------------------------------
def test_shape_outside_range_fails_planning():
    with pytest.raises(OptionError) as e:
        plan_for("trt_fp16+dynamic_shape=x:1x3x224x224:4x3x224x224:8x3x224x224",
                 InputSpec("x", (16, 3, 224, 224)))
    assert str(e.value) == (
        "TensorRT dynamic shape: input 'x' shape [16, 3, 224, 224] is outside its range min "
        "[1, 3, 224, 224] .. max [8, 3, 224, 224] (dim 0: 16 not in [1, 8]); widen the range "
        "or drop the shape")


def test_declared_shapes_check_needs_no_export():
    from pytest_paddle_infer.cases.case import Case
    from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule

    source = parse_source("tiny_cnn")
    spec = parse_run_mode("trt_fp16+dynamic_shape=x:1x3x8x8:1x3x16x16:2x3x16x16")
    case = Case(source, spec, CaseTolerances(base=Rule(1e-2, 1e-2), override=Rule(None, None)))
    builder = bp.CandidateBuilder(PredictorCache(), "/nowhere", gpu_count=lambda: 0)
    assert bp.declared_shapes(case) == {"x": (1, 3, 32, 32)}
    with pytest.raises(OptionError, match=r"shape \[1, 3, 32, 32\] is outside its range"):
        builder.check_ranges(case)
    builder.check_ranges(replace(case, shapes=(("x", (2, 3, 16, 16)),)))  # inside: no error


# ---------------------------------------------------------------------------------------
# The executor, for real on CPU.
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny(paddle_cache):
    """tiny_cnn's files (legacy program: every supported Paddle runs it) and batch-2 inputs."""
    runner = Runner(paddle_cache)
    model = runner.model_files(parse_source("tiny_cnn"), legacy=True)
    specs = runner.input_specs(model, {"x": (2, 3, 32, 32)})
    return model, specs, generate_all(specs, 0)


def test_cpu_plan_is_one_build_and_runs(tiny, tmp_path):
    model, specs, inputs = tiny
    plan = bp.candidate_plan(RunModeSpec("onednn_fp32"), model, specs, optim_root=tmp_path)
    assert render(plan, "-") == [("build", ["enable_mkldnn()", "switch_ir_optim(True)"])]
    cache = PredictorCache()
    executor = bp.PlanExecutor(cache)
    built = executor.run(plan, model, inputs)
    assert built.notes == () and built.int8 == ""
    direct = run_predictor(build_predictor(model, recipe(RunModeSpec("onednn_fp32"))), inputs)
    got = run_predictor(built.predictor, inputs)
    assert list(got) == list(direct) and got[next(iter(got))].shape == (2, 10)
    np.testing.assert_array_equal(got[next(iter(got))], direct[next(iter(direct))])
    assert executor.run(plan, model, inputs).predictor is built.predictor  # cached per worker
    assert not any(tmp_path.iterdir())  # CPU modes have no optim cache dir


def test_tuned_trt_plan_collects_shapes_for_real_then_fails_at_tensorrt(tiny, tmp_path):
    model, specs, inputs = tiny
    plan = bp.candidate_plan(parse_run_mode("trt_fp16+dynamic_shape=tuned"), model, specs,
                             optim_root=tmp_path, worker="gw0")
    cache = Path(plan.steps[0].path)
    cache.mkdir(parents=True)
    (cache / "stale_engine").write_text("from an earlier run")
    with pytest.raises(PredictorError) as e:
        bp.PlanExecutor(PredictorCache()).run(plan, model, inputs)
    # the TensorRT call is the first thing this CPU-only Paddle cannot do
    assert "Config.enable_tensorrt_engine(" in str(e.value) and "TENSORRT" in str(e.value)
    assert not (cache / "stale_engine").exists()  # emptied without +use_static
    ranges = (cache / bp.SHAPE_RANGE_FILE).read_text()
    assert ranges.count("shape_range_info {") >= 3
    # the case's batch-2 input and its conv outputs, as min = max = opt
    assert "min_shape: 2\n  min_shape: 3\n  min_shape: 32\n  min_shape: 32" in ranges
    assert "max_shape: 2\n  max_shape: 3\n  max_shape: 32\n  max_shape: 32" in ranges


def cpu_final(plan: bp.Plan) -> bp.Plan:
    """The plan's own steps before its build, then a CPU build, so it completes here."""
    return replace(plan, steps=plan.steps[:-1] + (bp.Build(recipe(RunModeSpec("cpu_fp32"))),))


def test_use_static_reuses_shape_ranges_and_reports_each_step(tiny, tmp_path):
    model, specs, inputs = tiny
    spec = parse_run_mode("trt_fp32+dynamic_shape=tuned+use_static")
    plan = cpu_final(bp.candidate_plan(spec, model, specs, optim_root=tmp_path))
    cache = Path(plan.steps[0].path)
    built = bp.PlanExecutor(PredictorCache()).run(plan, model, inputs)
    shape_file = cache / bp.SHAPE_RANGE_FILE
    assert built.notes == (
        f"TensorRT optim cache dir: {cache} (kept from earlier runs: +use_static)",
        f"tuned dynamic shape: shape ranges collected from the case's inputs into {shape_file}")
    first = shape_file.read_bytes()
    again = bp.PlanExecutor(PredictorCache()).run(plan, model, inputs)  # a later session
    assert again.notes[1] == f"tuned dynamic shape: shape ranges reused from {shape_file} (+use_static)"
    assert shape_file.read_bytes() == first


def test_calibration_pass_runs_every_batch_and_reports_a_missing_table(tiny, tmp_path):
    """A calibration step with a CPU recipe: the batches run for real and the predictor is
    destroyed, but no TensorRT ran, so no table: the error says so instead of a silent pass."""
    model, specs, inputs = tiny
    step = bp.Calibrate(recipe(RunModeSpec("cpu_fp32")), bp.GeneratedBatches(tuple(specs), (1, 2, 3)),
                        table_dir=str(tmp_path / "optim"), paddle_table_dir=str(tmp_path / "model_cache"),
                        lock_file=str(tmp_path / "locks" / "m.lock"), reuse=False)
    plan = bp.Plan((bp.PrepareCacheDir(str(tmp_path / "optim"), False), step,
                    bp.Build(recipe(RunModeSpec("cpu_fp32")))))
    with pytest.raises(PredictorError) as e:
        bp.PlanExecutor(PredictorCache()).run(plan, model, inputs)
    assert str(e.value).startswith(
        f"trt_int8 calibration ran 3 batches but no trt_calib_* table appeared in "
        f"{tmp_path / 'optim'} or {tmp_path / 'model_cache'}: no part of the model ran in TensorRT")
    assert (tmp_path / "locks" / "m.lock").exists()


def test_real_int8_plan_fails_here_at_the_tensorrt_call_after_checking_its_batches(tiny, tmp_path):
    model, specs, inputs = tiny
    plan = bp.candidate_plan(parse_run_mode("trt_int8+calib_batches=2"), model, specs,
                             optim_root=tmp_path)
    with pytest.raises(PredictorError, match=r"Config\.enable_tensorrt_engine\(.*TENSORRT"):
        bp.PlanExecutor(PredictorCache()).run(plan, model, inputs)
    bad = replace(plan.steps[1], batches=bp.FileBatches(str(tmp_path / "none"), None, tuple(specs)))
    with pytest.raises(InputError, match="calib_data: no such directory"):
        bp.PlanExecutor(PredictorCache()).run(replace(plan, steps=(plan.steps[0], bad, plan.final)),
                                              model, inputs)


def test_table_from_an_earlier_run_is_loaded_with_use_static(tiny, tmp_path):
    model, specs, inputs = tiny
    plan = cpu_final(bp.candidate_plan(parse_run_mode("trt_int8+use_static"), model, specs,
                                       optim_root=tmp_path))
    cache = Path(plan.steps[0].path)
    cache.mkdir(parents=True)
    (cache / "trt_calib_8234").write_text("TRT-8601-EntropyCalibration2\n")
    built = bp.PlanExecutor(PredictorCache()).run(plan, model, inputs)
    assert built.int8 == bp.INT8_LOADED
    assert built.notes[-1] == (f"int8: calibration table loaded: trt_calib_8234 in {cache}, kept "
                               f"from an earlier run (+use_static)")


def test_quantized_plan_reports_its_int8_path(tiny, tmp_path):
    model, specs, inputs = tiny
    plan = cpu_final(bp.candidate_plan(parse_run_mode("trt_int8+int8_source=quantized"), model,
                                       specs, optim_root=tmp_path))
    built = bp.PlanExecutor(PredictorCache()).run(plan, model, inputs)
    assert built.int8 == bp.INT8_QUANTIZED
    assert built.notes[-1] == ("int8: quantized model: scales come from the model's quantize ops, "
                               "no calibration (use_calib_mode=False)")
    again = bp.PlanExecutor(PredictorCache())
    again.predictors.get(model, plan.final.recipe)  # built by someone else in this worker
    assert again.run(plan, model, inputs).int8 == bp.INT8_QUANTIZED


def test_new_tables_move_from_the_model_dir_into_the_optim_cache(tmp_path):
    paddle_dir, target = tmp_path / "model" / "_opt_cache", tmp_path / "optim"
    paddle_dir.mkdir(parents=True)
    target.mkdir()
    (paddle_dir / "trt_calib_old").write_text("a user's earlier table")
    before = bp._stamps(paddle_dir)
    (paddle_dir / "trt_calib_123").write_text("new table")
    (paddle_dir / "engine_info_123.json").write_text("{}")
    assert bp._move_new_tables(paddle_dir, before, target) == [target / "trt_calib_123"]
    assert (target / "trt_calib_123").read_text() == "new table"
    assert sorted(p.name for p in paddle_dir.iterdir()) == ["engine_info_123.json", "trt_calib_old"]


# ---------------------------------------------------------------------------------------
# Calibration data from a directory.
# ---------------------------------------------------------------------------------------
TWO_INPUTS = (InputSpec("image", (1, 3, 8, 8)), InputSpec("im_shape", (1, 2), "int32"))


def batch_dir(tmp_path, **files) -> str:
    for name, arrays in files.items():
        np.savez(tmp_path / name, **arrays)
    return str(tmp_path)


def good(batch=1, side=8):
    return {"image": np.zeros((batch, 3, side, side), "float32"),
            "im_shape": np.ones((batch, 2), "int32")}


def test_file_batches_load_sorted_and_limited(tmp_path):
    np.savez(tmp_path / "b.npz", **good(side=8))
    np.savez(tmp_path / "a.npz", **dict(good(), image=np.ones((1, 3, 8, 8), "float32")))
    np.savez(tmp_path / "c.npz", **good())
    (tmp_path / "readme.txt").write_text("not a batch")
    batches = bp.load_batches(bp.FileBatches(str(tmp_path), 2, TWO_INPUTS))
    assert len(batches) == 2 and set(batches[0]) == {"image", "im_shape"}
    assert batches[0]["image"].max() == 1 and batches[1]["image"].max() == 0  # a.npz first
    single = tmp_path / "single"
    single.mkdir()
    np.save(single / "0.npy", np.zeros((1, 3, 8, 8), "float32"))
    loaded = bp.load_batches(bp.FileBatches(str(single), None, (TWO_INPUTS[0],)))
    assert [b["image"].shape for b in loaded] == [(1, 3, 8, 8)]


@pytest.mark.parametrize("arrays,message", [
    ({"image": good()["image"]}, r"0.npz holds other arrays than the model's inputs: expected arrays "
                                 r"'image', 'im_shape', found arrays 'image' \(missing: 'im_shape'; unknown: none\)"),
    (dict(good(), im_shape=np.ones((1, 2), "int64")),
     "holds array 'im_shape' with the wrong dtype: expected int32, found int64; save it as int32"),
    (good(batch=2), r"holds array 'image' with the wrong shape: expected \[1, 3, 8, 8\], found \[2, 3, 8, 8\]; "
                    r"every calibration batch has one shape"),
])
def test_file_batches_that_do_not_fit_are_named(tmp_path, arrays, message):
    directory = batch_dir(tmp_path, **{"0.npz": arrays})
    with pytest.raises(InputError, match=message):
        bp.load_batches(bp.FileBatches(directory, None, TWO_INPUTS))


def test_file_batches_under_an_explicit_range_all_have_its_opt_shape(tmp_path):
    """Paddle's calibrator sizes its buffers from the first batch: batches of other shapes
    within the range would be copied short or past their end (see test_calibration_shape.py)."""
    dyn = DynamicShape.explicit({"image": ([1, 3, 8, 8], [3, 3, 8, 8], [4, 3, 8, 8]),
                                 "im_shape": ([1, 2], [3, 2], [4, 2])})
    specs = bp.calibration_shapes(TWO_INPUTS, dyn)
    ok = bp.load_batches(bp.FileBatches(batch_dir(tmp_path, **{"0.npz": good(batch=3)}), None,
                                        specs, dyn))
    assert ok[0]["image"].shape == (3, 3, 8, 8)
    np.savez(tmp_path / "1.npz", **good(batch=2))  # inside the range, but not the opt shape
    with pytest.raises(InputError, match=r"1.npz holds array 'image' with the wrong shape: "
                                         r"expected \[3, 3, 8, 8\], found \[2, 3, 8, 8\]"):
        bp.load_batches(bp.FileBatches(str(tmp_path), None, specs, dyn))


def test_empty_dir_and_npy_for_two_inputs_are_errors(tmp_path):
    with pytest.raises(InputError, match="holds no .npy or .npz calibration batches"):
        bp.load_batches(bp.FileBatches(str(tmp_path), None, TWO_INPUTS))
    np.save(tmp_path / "0.npy", good()["image"])
    with pytest.raises(InputError, match=r"0.npy holds a single array: expected one array per input "
                                         r"\('image', 'im_shape'\), found an .npy file"):
        bp.load_batches(bp.FileBatches(str(tmp_path), None, TWO_INPUTS))


# ---------------------------------------------------------------------------------------
# The worker's GPU (modes/devices.py: tests/unit/modes/test_devices.py).
# ---------------------------------------------------------------------------------------
def test_worker_comes_from_xdist_env(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    builder = bp.CandidateBuilder(PredictorCache(), "/o", gpu_count=lambda: 2)
    assert (builder.worker, builder.gpu_id()) == ("gw3", 1)
    assert builder.device_id(RunModeSpec("trt_fp16")) == 1
    assert builder.device_id(RunModeSpec("onednn_fp32")) == 0
    assert str(builder.plan(RunModeSpec("gpu_fp32"), RESNET, [X1]).final.recipe[0]) == gpu(1)
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert bp.CandidateBuilder(PredictorCache(), "/o").worker == "main"


# ---------------------------------------------------------------------------------------
# GPU and TensorRT plan details written from Paddle's source (issue 11, items 4, 7-10, 12):
# tuned shape collection runs several times, low_precision_io feeds float16, explicit
# quantization only for Q/DQ programs, one calibration batch shape, TensorRT 10's runtime
# version, one calibration lock per _opt_cache directory, absolute program paths.
# ---------------------------------------------------------------------------------------


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


# -- item 12: one calibration lock per _opt_cache dir; absolute program paths ---------------


def test_calibrations_of_programs_in_one_directory_share_a_lock():
    other = replace(LEGACY, name="n", prog_file="/models/m/other.pdmodel")
    elsewhere = replace(LEGACY, prog_file="/models/n/inference.pdmodel")
    lock = plan("trt_int8").steps[1].lock_file
    assert lock == bp.candidate_plan(parse_run_mode("trt_int8"), other, [X], optim_root="/o").steps[1].lock_file
    assert lock != bp.candidate_plan(parse_run_mode("trt_int8"), elsewhere, [X], optim_root="/o").steps[1].lock_file


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


# ---------------------------------------------------------------------------------------
# modes/build_plan.py: the remarks a PIR TensorRT plan carries into the case's notes. The
# converted program runs on a Paddle 3.x GPU predictor (memory_optim is not acted on there, as
# on any GPU mode); the matrix_multiply renaming is the legacy subgraph pass's and is not said.
# ---------------------------------------------------------------------------------------


PIR_X = InputSpec("x", (1, 3, 32, 32))
PIR = ModelFiles("m", "/models/m/inference.json", "/models/m/inference.pdiparams", (PIR_X,))


def pir_plan(text):
    return bp.candidate_plan(parse_run_mode(text), PIR, [PIR_X], optim_root="/o")


def test_a_pir_tensorrt_plan_remarks_memory_optim():
    p = pir_plan("trt_fp16+memory_optim")
    assert p.path == PIR_PATH
    assert any(r.startswith("memory_optim: on Paddle 3.x GPU") for r in p.remarks), p.remarks


def test_a_pir_tensorrt_plan_does_not_claim_the_legacy_matrix_multiply_renaming():
    p = pir_plan("trt_fp16+dynamic_shape=tuned+disable_trt_op=matmul_v2")
    assert p.path == PIR_PATH and not any("matrix_multiply" in r for r in p.remarks), p.remarks
    disabled = [c for c in p.steps[-2].calls if c.name == "disable_ops"]
    assert [list(c.args[0]) for c in disabled] == [["pd_op.matmul_v2"]]


# -- what the installed TensorRT, or the PIR path, does not do --------------------------------

def _trt_plan(text, version, model=None, program_ops=None):
    from pytest_paddle_infer.engine import build_plan as bp
    from pytest_paddle_infer.models.inputs import InputSpec
    from pytest_paddle_infer.models.source import ModelFiles
    from pytest_paddle_infer.modes.run_modes import parse_run_mode

    model = model or ModelFiles("m", "/m/inference.pdmodel", "/m/inference.pdiparams",
                                (InputSpec("x", (-1, 3, 32, 32)),))
    return bp.candidate_plan(parse_run_mode(text), model, [InputSpec("x", (1, 3, 32, 32))],
                             optim_root="/o", trt_version=version, program_ops=program_ops)


def test_optimization_level_below_tensorrt_8_6_is_a_remark():
    """The PyPI paddlepaddle-gpu 2.6.2 wheel is built with TensorRT 8.5.3: no builder level."""
    [remark] = _trt_plan("trt_fp16+trt_optimization_level=5", (8, 5, 3)).remarks
    assert remark == ("trt_optimization_level: TensorRT 8.5.3 here has no builder optimization "
                      "level (it came in 8.6): Paddle drops the value, and the engine is built "
                      "as without it")
    assert _trt_plan("trt_fp16+trt_optimization_level=5", (8, 6, 1)).remarks == ()
    assert _trt_plan("trt_fp16+trt_optimization_level=5", None).remarks == ()  # not known


def test_explicit_quantization_below_tensorrt_8_5_1_is_left_out_with_a_remark():
    qdq = {"quantize_linear": 4, "dequantize_linear": 4, "conv2d": 2}
    old = _trt_plan("trt_int8+int8_source=quantized", (8, 4, 3), program_ops=qdq)
    assert not any(c.method == "enable_tensorrt_explicit_quantization" for c in old.final.recipe)
    [remark] = old.remarks
    assert remark.startswith("int8_source=quantized: TensorRT 8.4.3 here has no explicit "
                             "quantization (it came in 8.5.1)")
    new = _trt_plan("trt_int8+int8_source=quantized", (8, 5, 3), program_ops=qdq)
    assert any(c.method == "enable_tensorrt_explicit_quantization" for c in new.final.recipe)
    assert new.remarks == ()


def test_the_pir_tensorrt_path_says_what_it_drops():
    from pytest_paddle_infer.models.inputs import InputSpec
    from pytest_paddle_infer.models.source import ModelFiles

    pir = ModelFiles("m", "/m/inference.json", "/m/inference.pdiparams", (InputSpec("x", (-1, 3, 32, 32)),))
    [tuned] = _trt_plan("trt_fp16+dynamic_shape=tuned", None, pir).remarks
    assert tuned.startswith("dynamic_shape=tuned: paddle.tensorrt (the TensorRT path of .json "
                            "programs) collects no shape ranges")
    [plugin] = _trt_plan("trt_fp16+dynamic_shape=x:1x3x32x32:1x3x32x32:2x3x32x32"
                         "+disable_trt_plugin_fp16", None, pir).remarks
    assert plugin.startswith("disable_trt_plugin_fp16: paddle.tensorrt (the TensorRT path of "
                             ".json programs) has no such setting")
    assert _trt_plan("trt_fp16+dynamic_shape=tuned", None).remarks == ()  # legacy: both work


def test_pir_conversion_off_gpu_0_is_a_remark():
    from pytest_paddle_infer.engine import build_plan as bp
    from pytest_paddle_infer.models.inputs import InputSpec
    from pytest_paddle_infer.models.source import ModelFiles
    from pytest_paddle_infer.modes.run_modes import parse_run_mode

    pir = ModelFiles("m", "/m/inference.json", "/m/inference.pdiparams", (InputSpec("x", (-1, 3, 32, 32)),))
    specs = [InputSpec("x", (1, 3, 32, 32))]
    [remark] = bp.candidate_plan(parse_run_mode("trt_fp16"), pir, specs, optim_root="/o",
                                 device_id=2).remarks
    assert remark.startswith("PIR TensorRT: paddle.tensorrt converts on GPU 0 (its convert uses "
                             "CUDAPlace(0)), whatever this worker's GPU 2")
    assert bp.candidate_plan(parse_run_mode("trt_fp16"), pir, specs, optim_root="/o",
                             device_id=0).remarks == ()


def test_int8_plans_turn_the_serialized_inspector_on():
    model = ModelFiles("m", "/m/inference.pdmodel", "/m/inference.pdiparams", (InputSpec("x", (1, 3, 8, 8)),))
    specs = [InputSpec("x", (1, 3, 8, 8))]
    for text in ("trt_int8", "trt_int8+int8_source=quantized"):
        p = bp.candidate_plan(parse_run_mode(text), model, specs, optim_root="/o")
        assert tm.INSPECTOR in p.final.recipe
        assert bp.engine_dirs(p, model) == (p.steps[0].path, "/m/_opt_cache")
    fp16 = bp.candidate_plan(parse_run_mode("trt_fp16"), model, specs, optim_root="/o")
    assert tm.INSPECTOR not in fp16.final.recipe


def test_trt_plan_marks_the_selected_tensors(tmp_path, paddle_cache):
    """With intermediates on, a TensorRT candidate's build step exposes the baseline's
    selected tensors; a CPU mode's plan is unchanged by the same request."""
    from pytest_paddle_infer.engine.build_plan import Build, candidate_plan
    from pytest_paddle_infer.models.source import parse_source
    from pytest_paddle_infer.models.cache import resolve
    from pytest_paddle_infer.modes.run_modes import RunModeSpec

    model = resolve(parse_source("tiny_cnn"), paddle_cache, legacy=True)
    specs = [model.inputs[0].concrete((1, 3, 32, 32))]
    marks = ("relu_0.tmp_0", "pool2d_0.tmp_0")
    plan = candidate_plan(RunModeSpec("trt_fp16"), model, specs, optim_root=tmp_path, mark_outputs=marks)
    build = plan.steps[-1]
    assert isinstance(build, Build)
    assert [str(c) for c in build.recipe[-2:]] == [
        "enable_tensorrt_inspector(True)", "mark_trt_engine_outputs(('relu_0.tmp_0', 'pool2d_0.tmp_0'))"]
    assert check_recipe(build.recipe) == []
    hash(build.recipe)  # recipes key the predictor cache
    cpu = candidate_plan(RunModeSpec("onednn_fp32"), model, specs, optim_root=tmp_path)
    assert not any(c.method == "mark_trt_engine_outputs" for c in cpu.steps[-1].recipe)
