"""The PIR TensorRT path's files against Paddle 3.x's own loader and saver, and the GPU plan's
fixes this tier can see: the PIR TensorRT path's program argument, TF32 off in the GPU
baseline, the capability record's key, the TensorRT optimization level below TensorRT 8.6 and
what the PIR path drops."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_paddle_infer.engine import build_plan as bp
from pytest_paddle_infer.models.inputs import InputSpec
from pytest_paddle_infer.models.source import ModelFiles
from pytest_paddle_infer.modes.run_modes import parse_run_mode

X = InputSpec("x", (2, 4))


# -- finding 1: the program argument of paddle.tensorrt.convert ------------------------------

EXPORT = textwrap.dedent("""
    import sys, paddle
    net = paddle.nn.Sequential(paddle.nn.Linear(4, 4), paddle.nn.ReLU())
    net.eval()
    paddle.jit.save(net, sys.argv[1], [paddle.static.InputSpec([-1, 4], "float32", "x")])
""")
# what paddle.tensorrt.convert does with its model_path (python/paddle/tensorrt/export.py,
# 3.x): a file path goes to load_inference_model as given, under PIR; on CPUPlace here
LOAD = textwrap.dedent("""
    import sys, paddle
    paddle.enable_static()
    with paddle.pir_utils.IrGuard():
        program, feeds, fetches = paddle.static.io.load_inference_model(
            sys.argv[1], executor=paddle.static.Executor(paddle.CPUPlace()))
    print("loaded", feeds, len(fetches))
""")


@pytest.fixture(scope="module")
def pir_export(pir_run, tmp_path_factory) -> Path:
    """A real .json program and its weights, written by Paddle 3.x."""
    prefix = tmp_path_factory.mktemp("pir") / "model" / "inference"
    done = pir_run(EXPORT, str(prefix))
    assert done.returncode == 0, done.stderr[-2000:]
    assert prefix.with_suffix(".json").is_file() and prefix.with_suffix(".pdiparams").is_file()
    return prefix


def convert_argument(prefix: Path, tmp_path: Path) -> str:
    model = ModelFiles("m", str(prefix.with_suffix(".json")), str(prefix.with_suffix(".pdiparams")), (X,))
    plan = bp.candidate_plan(parse_run_mode("trt_fp16"), model, [X], optim_root=tmp_path)
    convert = next(s for s in plan.steps if isinstance(s, bp.ConvertPir))
    call = next(c for c in convert.calls if c.name == "convert")
    return call.args[0]


# what convert does with save_model_dir (the same file, 3.x): save_inference_model of the
# converted program's feeds and fetches under that prefix
SAVE = textwrap.dedent("""
    import sys, paddle
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.pir_utils.IrGuard():
        program, _, _ = paddle.static.io.load_inference_model(sys.argv[1], executor=exe)
        block = program.global_block()
        feeds = [r for op in block.ops if op.name() in ("pd_op.data", "pd_op.feed") for r in op.results()]
        fetches = [o.source() for op in block.ops if op.name() == "pd_op.fetch" for o in op.operands()]
        paddle.static.save_inference_model(sys.argv[2], feeds, fetches, exe, program=program)
""")


def test_the_converted_program_is_where_the_predictor_reads_it(pir_run, pir_export, tmp_path):
    model = ModelFiles("m", str(pir_export.with_suffix(".json")), str(pir_export.with_suffix(".pdiparams")), (X,))
    plan = bp.candidate_plan(parse_run_mode("trt_fp16"), model, [X], optim_root=tmp_path)
    convert = next(s for s in plan.steps if isinstance(s, bp.ConvertPir))
    prefix = next(c.args[0] for c in convert.calls if c.kind == "set" and c.name == "save_model_dir")
    done = pir_run(SAVE, str(pir_export), prefix)
    assert done.returncode == 0, done.stderr[-2000:]
    assert plan.final.program == (convert.program, convert.params)
    assert Path(convert.program).is_file() and Path(convert.params).is_file()


def test_the_loader_reads_a_prefix(pir_run, pir_export):
    """The check below is sound: Paddle 3.x loads this export by its prefix."""
    done = pir_run(LOAD, str(pir_export))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "loaded ['x']" in done.stdout


def test_the_pir_tensorrt_plan_names_a_program_the_loader_reads(pir_run, pir_export, tmp_path):
    argument = convert_argument(pir_export, tmp_path)
    done = pir_run(LOAD, argument)
    assert done.returncode == 0, f"convert({argument!r}): {done.stderr[-1500:]}"


# -- finding 5: TF32 in the GPU baseline ----------------------------------------------------


def test_the_gpu_baseline_is_true_fp32(gpu_paddle, tmp_path):
    from paddle.base import core

    from pytest_paddle_infer.engine.tf32 import true_fp32

    before = (core.get_cublas_switch(), core.get_cudnn_switch())
    with true_fp32() as what:  # what the runner wraps a GPU baseline's runs in
        assert (core.get_cublas_switch(), core.get_cudnn_switch()) == (False, False), what
    assert (core.get_cublas_switch(), core.get_cudnn_switch()) == before


# -- finding 6: the capability record's key -------------------------------------------------


@pytest.mark.parametrize("variable", ["LD_LIBRARY_PATH", "FLAGS_tensorrt_dir"])
def test_the_capability_record_follows_where_tensorrt_is_looked_for(gpu_paddle, monkeypatch, variable):
    from pytest_paddle_infer.modes.capabilities import detect, installation_key

    skip = detect().missing_for(parse_run_mode("trt_fp16").run_mode)
    assert skip is not None  # no GPU here; on a GPU machine without libnvinfer it names LD_LIBRARY_PATH
    monkeypatch.delenv(variable, raising=False)
    before = installation_key()
    monkeypatch.setenv(variable, "/opt/TensorRT-8.5.3/lib")
    assert installation_key() != before


# -- finding 8: what TensorRT 8.5 and the PIR path do not do --------------------------------


def test_an_optimization_level_under_tensorrt_8_5_is_remarked(gpu_paddle, tmp_path):
    from paddle import inference

    assert tuple(inference.get_trt_compile_version()) == (8, 5, 3)
    model = ModelFiles("m", str(tmp_path / "inference.pdmodel"), str(tmp_path / "inference.pdiparams"), (X,))
    plan = bp.candidate_plan(parse_run_mode("trt_fp16+trt_optimization_level=1"), model, [X],
                             optim_root=tmp_path, trt_version=tuple(inference.get_trt_compile_version()))
    assert any("trt_optimization_level" in r for r in plan.remarks), plan.remarks


@pytest.mark.parametrize("text", ["trt_fp16+dynamic_shape=tuned",
                                  "trt_fp16+dynamic_shape=x:1x4:2x4:4x4+disable_trt_plugin_fp16"])
def test_the_pir_path_says_what_it_drops(tmp_path, text):
    model = ModelFiles("m", str(tmp_path / "inference.json"), str(tmp_path / "inference.pdiparams"), (X,))
    try:
        plan = bp.candidate_plan(parse_run_mode(text), model, [X], optim_root=tmp_path)
    except Exception as e:  # an error naming the toggle says it too
        assert "tuned" in str(e) or "disable_trt_plugin_fp16" in str(e)
        return
    toggle = "tuned" if "tuned" in text else "disable_trt_plugin_fp16"
    assert any(toggle in r for r in plan.remarks), plan.remarks
