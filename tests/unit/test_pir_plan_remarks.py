"""modes/build_plan.py: the remarks a PIR TensorRT plan carries into the case's notes. The
converted program runs on a Paddle 3.x GPU predictor (memory_optim is not acted on there, as
on any GPU mode); the matrix_multiply renaming is the legacy subgraph pass's and is not said."""
from pytest_paddle_infer.models.inputs import InputSpec
from pytest_paddle_infer.models.source import ModelFiles
from pytest_paddle_infer.engine import build_plan as bp
from pytest_paddle_infer.engine.pir_tensorrt import PIR_PATH
from pytest_paddle_infer.modes.run_modes import parse_run_mode

X = InputSpec("x", (1, 3, 32, 32))
PIR = ModelFiles("m", "/models/m/inference.json", "/models/m/inference.pdiparams", (X,))


def plan(text):
    return bp.candidate_plan(parse_run_mode(text), PIR, [X], optim_root="/o")


def test_a_pir_tensorrt_plan_remarks_memory_optim():
    p = plan("trt_fp16+memory_optim")
    assert p.path == PIR_PATH
    assert any(r.startswith("memory_optim: on Paddle 3.x GPU") for r in p.remarks), p.remarks


def test_a_pir_tensorrt_plan_does_not_claim_the_legacy_matrix_multiply_renaming():
    p = plan("trt_fp16+dynamic_shape=tuned+disable_trt_op=matmul_v2")
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
