"""modes/pir_tensorrt.py and its plans: a user's .json model under trt_* takes the PIR TensorRT
path (paddle.tensorrt convert, then a plain GPU predictor on the converted program); zoo
entries and builders take the legacy path (their legacy export on Paddle 3.x). The calls are
checked against paddle.tensorrt's API as recorded from Paddle's source (paddle_tensorrt_api.py):
the CPU wheel has no paddle.tensorrt, so only the conversion itself cannot run here."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from paddle_tensorrt_api import API, check_trt_calls
from config_signatures import check_recipe
from pytest_paddle_infer.errors import CaseSkipped, PredictorError
from pytest_paddle_infer.models.inputs import InputSpec
from pytest_paddle_infer.models.source import ModelFiles
from pytest_paddle_infer.engine import build_plan as bp
from pytest_paddle_infer.engine import pir_tensorrt as pt
from pytest_paddle_infer.modes.run_modes import parse_run_mode

X = InputSpec("x", (2, 3, 32, 32))
MINE = ModelFiles("mine", "/models/mine/inference.json", "/models/mine/inference.pdiparams",
                  (InputSpec("x", (-1, 3, 32, 32)),))
LEGACY = replace(MINE, prog_file="/models/mine/inference.pdmodel")
GPU1 = "enable_use_gpu(256, 1, PrecisionType.Float32)"


def plan(text: str, model: ModelFiles = MINE, spec_input: InputSpec = X) -> bp.Plan:
    return bp.candidate_plan(parse_run_mode(text), model, [spec_input], optim_root="/cache/optim",
                             device_id=1, worker="gw1")


def calls_text(step) -> list:
    cache = str(Path(step.program).parent.parent)
    return [str(c).replace(cache, "{cache}") for c in step.calls]


def test_json_model_takes_the_pir_path_with_convert_then_a_plain_gpu_predictor():
    p = plan("trt_fp16")
    assert p.path == pt.PIR_PATH
    prepare, convert, build = p.steps
    assert isinstance(prepare, bp.PrepareCacheDir) and isinstance(convert, bp.ConvertPir)
    assert calls_text(convert) == [
        "Input(name='x', warmup_data=(<the case's x>, <the case's x>, <the case's x>), "
        "input_data_type=None)",
        "TensorRTConfig(inputs=[inputs[0]], min_subgraph_size=3)",
        "config.precision_mode = PrecisionMode.FP16",
        "config.workspace_size = 1073741824",
        "config.save_model_dir = '{cache}/trt/inference'",
        "convert('/models/mine/inference', config)"]
    assert convert.links == ()  # inference.pdiparams sits beside inference.json
    assert build.program == (prepare.path + "/trt/inference.json", prepare.path + "/trt/inference.pdiparams")
    # no enable_tensorrt_engine: the converted program holds the tensorrt_engine ops
    assert [str(c) for c in build.recipe] == [GPU1, "switch_ir_optim(True)"]
    assert check_recipe(build.recipe) == []


def test_legacy_model_takes_the_legacy_path():
    p = plan("trt_fp16", LEGACY)
    assert p.path == pt.LEGACY_PATH
    assert not any(isinstance(s, bp.ConvertPir) for s in p.steps)
    assert any(c.method == "enable_tensorrt_engine" for c in p.final.recipe)
    assert p.final.program is None
    assert plan("gpu_fp32").path == ""  # not a TensorRT mode


@pytest.mark.parametrize("text, expected", [
    ("trt_fp32+dynamic_shape=x:1x3x32x32:2x3x32x32:8x3x64x64", [
        "Input(name='x', min_input_shape=(1, 3, 32, 32), optim_input_shape=(2, 3, 32, 32), "
        "max_input_shape=(8, 3, 64, 64), input_data_type='float32')",
        "config.precision_mode = PrecisionMode.FP32"]),
    # tuned: the case's inputs are the only shapes there are to collect
    ("trt_fp16+dynamic_shape=tuned", [
        "Input(name='x', warmup_data=(<the case's x>, <the case's x>, <the case's x>), "
        "input_data_type=None)",
        "config.precision_mode = PrecisionMode.FP16"]),
    ("trt_int8+int8_source=quantized+disable_trt_op=softmax+disable_trt_op=pd_op.pool2d"
     "+trt_optimization_level=5", [
        "config.precision_mode = PrecisionMode.INT8",
        "config.disable_ops = ['pd_op.softmax', 'pd_op.pool2d']",
        "config.optimization_level = 5"]),
])
def test_toggles_become_config_fields(text, expected):
    got = calls_text(plan(text).steps[1])
    assert all(line in got for line in expected), got


def test_every_pir_plan_conforms_to_each_recorded_paddle_tensorrt_version():
    texts = ["trt_fp32", "trt_fp16+use_static", "trt_int8+int8_source=quantized",
             "trt_fp16+dynamic_shape=tuned", "trt_fp32+dynamic_shape=x:1x3x32x32:2x3x32x32:8x3x64x64",
             "trt_fp16+disable_trt_op=softmax+trt_optimization_level=0"]
    for text in texts:
        convert = plan(text).steps[1]
        for version in API:
            assert check_trt_calls(convert.calls, version) == [], (text, version)


def test_the_conformance_check_catches_wrong_calls():
    calls = list(plan("trt_fp16").steps[1].calls)
    wrong = [
        replace(calls[2], args=(pt.Member("PrecisionMode", "HALF"),)),  # no such member
        replace(calls[3], name="workspace"),  # a field that does not exist: silently ignored at run time
        replace(calls[0], kwargs=calls[0].kwargs + (("opt_input_shape", (1,)),)),
        replace(calls[-1], args=calls[-1].args + ("extra",)),
        pt.TrtCall("set", "use_cuda_graph", (False,)),  # newer than 3.0
    ]
    for bad in wrong[:4]:
        assert check_trt_calls([calls[0], calls[1], bad], "newest"), bad
    assert check_trt_calls([calls[0], calls[1], wrong[4]], "3.0")
    assert check_trt_calls([calls[0], calls[1], wrong[4]], "newest") == []
    assert check_trt_calls([calls[2]], "newest")  # set before a config exists


def test_int8_calibration_on_a_json_model_is_a_skip_naming_the_pdmodel_export():
    with pytest.raises(CaseSkipped) as e:
        plan("trt_int8")
    assert str(e.value) == (
        "trt_int8 calibration needs the legacy program: paddle.tensorrt (the TensorRT path of "
        ".json programs (inference.json)) sets int8 without a calibrator; use the model's .pdmodel "
        "export, or int8_source=quantized for a quantized model")
    assert pt.skip_reason(parse_run_mode("trt_int8"), "legacy") is None
    assert pt.skip_reason(parse_run_mode("trt_int8+int8_source=quantized"), "pir") is None


def test_weights_under_another_name_are_linked_where_convert_reads_them(tmp_path):
    model = replace(MINE, params_file="/models/mine/weights.bin")
    convert = plan("trt_fp32", model).steps[1]
    cache = Path(convert.program).parent.parent
    source = cache / pt.SOURCE_DIR / "inference.json"
    assert convert.links == ((str(source), "/models/mine/inference.json"),
                             (str(source.with_suffix(".pdiparams")), "/models/mine/weights.bin"))
    assert convert.calls[-1].args[0] == str(source.with_suffix(""))


def test_conversion_fails_here_naming_the_missing_module(tmp_path):
    """The CPU wheel has no paddle.tensorrt: the step fails with a clear message, after the
    links are in place."""
    prog = tmp_path / "m" / "inference.json"
    prog.parent.mkdir()
    prog.write_text("{}")
    (tmp_path / "m" / "w.bin").write_text("")
    model = ModelFiles("m", str(prog), str(tmp_path / "m" / "w.bin"), (X,))
    p = bp.candidate_plan(parse_run_mode("trt_fp16"), model, [X], optim_root=tmp_path / "optim")
    bp.prepare_cache_dir(p.steps[0])
    with pytest.raises(PredictorError, match=r"paddle.tensorrt.export cannot be imported .*needs "
                                             r"Paddle built with TensorRT"):
        bp.convert_pir(p.steps[1])
    link = Path(p.steps[1].links[0][0])
    assert link.is_symlink() and link.resolve() == prog.resolve()


def test_use_static_keeps_an_earlier_conversion_and_counts_its_engines(tmp_path):
    p = bp.candidate_plan(parse_run_mode("trt_fp16+use_static"), MINE, [X], optim_root=tmp_path)
    step = p.steps[1]
    Path(step.program).parent.mkdir(parents=True)
    # a converted program as PIR writes it (dialect 1 is pd_op): the engine op among plain ops
    Path(step.program).write_text('{"program": {"regions": [{"#": "region_0", "blocks": [{"ops": ['
                                  '{"#": "p"}, {"#": "1.data"}, {"#": "1.tensorrt_engine"}, '
                                  '{"#": "1.fetch"}]}]}]}}')
    Path(step.params).write_text("")
    assert bp.convert_pir(step) == (f"PIR TensorRT: kept from an earlier run (+use_static): "
                                    f"{step.program}; the program holds 1 tensorrt_engine op(s)")


def test_zoo_entries_take_the_legacy_path_on_paddle_3(paddle_cache, tmp_path):
    """On Paddle 3.x a zoo entry's trt_* case checks its legacy export (models/program.py), so
    its plan is the legacy TensorRT path; the same entry's .json export would take the PIR path."""
    from pytest_paddle_infer.cases.case import Case
    from pytest_paddle_infer.engine.runner import Runner
    from pytest_paddle_infer.models.program import paddle_major
    from pytest_paddle_infer.models.source import parse_source
    from pytest_paddle_infer.modes.capabilities import installed_paddle
    from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule

    if paddle_major(installed_paddle()[1]) < 3:
        pytest.skip("Paddle 2.x exports legacy programs anyway")
    runner = Runner(paddle_cache)
    case = Case(parse_source("tiny_cnn"), parse_run_mode("trt_fp16"),
                CaseTolerances(base=Rule(1e-2, 1e-2), override=Rule(None, None)))
    model = runner.case_model(case)
    assert model.format == "legacy"
    specs = runner.input_specs(model, {})
    assert bp.candidate_plan(case.run_mode, model, specs, optim_root=tmp_path).path == pt.LEGACY_PATH
    own = runner.model_files(case.model, legacy=False)
    assert own.format == "pir"
    assert bp.candidate_plan(case.run_mode, own, specs, optim_root=tmp_path).path == pt.PIR_PATH


def test_convert_gets_a_path_prefix_that_paddles_own_loader_reads(paddle_cache, tmp_path):
    """paddle.tensorrt.convert hands its model_path to load_inference_model under PIR, which
    appends '.json' itself: the plan passes the prefix, as PaddleX does. Checked with the
    installed wheel's loader on a real .json export, as convert would call it (IrGuard), for a
    model beside its weights and one whose weights were linked in under convert's names."""
    import paddle

    from pytest_paddle_infer.engine.runner import Runner
    from pytest_paddle_infer.models.source import parse_source

    model = Runner(paddle_cache).model_files(parse_source("tiny_cnn"), legacy=False)
    assert model.format == "pir"
    other = tmp_path / "other"
    other.mkdir()
    (other / "model.json").symlink_to(model.prog_file)
    (other / "weights.bin").symlink_to(model.params_file)
    renamed = replace(model, prog_file=str(other / "model.json"),
                      params_file=str(other / "weights.bin"))
    for m in (model, renamed):
        p = bp.candidate_plan(parse_run_mode("trt_fp32"), m, [s.concrete(
            tuple(1 if d < 0 else d for d in s.shape)) for s in m.inputs], optim_root=tmp_path)
        step = p.steps[1]
        bp.prepare_cache_dir(p.steps[0])
        for link, target in step.links:
            Path(link).parent.mkdir(parents=True, exist_ok=True)
            Path(link).symlink_to(target)
        model_path = step.calls[-1].args[0]
        # convert's own checks of a prefix: <prefix>.json and <prefix>.pdiparams exist
        assert not Path(model_path).is_file()
        assert Path(model_path + ".json").is_file() and Path(model_path + ".pdiparams").is_file()
        paddle.enable_static()
        try:
            with paddle.pir_utils.IrGuard():
                exe = paddle.static.Executor(paddle.CPUPlace())
                program, feeds, fetches = paddle.static.io.load_inference_model(model_path,
                                                                                 executor=exe)
        finally:
            paddle.disable_static()
        assert feeds == [s.name for s in m.inputs] and fetches


def test_conversion_warms_up_on_the_case_inputs_not_drawn_data():
    """paddle.tensorrt draws uniform data for min/opt/max shapes unless given warmup_data:
    shape-tensor inputs (im_shape, scale_factor) would get junk values. Without explicit
    ranges every Input carries the case's own arrays, filled in when the conversion runs."""
    import numpy as np

    model = replace(MINE, inputs=(InputSpec("image", (-1, 3, -1, -1)), InputSpec("im_shape", (-1, 2))))
    specs = [InputSpec("image", (1, 3, 64, 48)), InputSpec("im_shape", (1, 2))]
    calls = bp.candidate_plan(parse_run_mode("trt_fp16"), model, specs, optim_root="/o").steps[1].calls
    inputs = [c for c in calls if c.name == "Input"]
    assert [dict(c.kwargs)["warmup_data"] for c in inputs] == [
        pt.Samples((pt.CaseArray("image"),) * 3), pt.Samples((pt.CaseArray("im_shape"),) * 3)]
    arrays = {"image": np.ones((1, 3, 64, 48), "float32"), "im_shape": np.array([[64.0, 48.0]], "float32")}
    got = pt.argument(dict(inputs[1].kwargs)["warmup_data"], {}, None, arrays)
    assert isinstance(got, tuple) and len(got) == 3 and all(a is arrays["im_shape"] for a in got)
    with pytest.raises(PredictorError, match="the warm-up data <the case's image> was not given"):
        pt.argument(pt.CaseArray("image"), {}, None, {})
    for version in API:
        assert check_trt_calls(calls, version) == [], version
    ranged = bp.candidate_plan(parse_run_mode(
        "trt_fp16+dynamic_shape=image:1x3x32x32:1x3x64x48:1x3x128x128"
        "+dynamic_shape=im_shape:1x2:1x2:1x2"), model, specs, optim_root="/o").steps[1].calls
    assert all("warmup_data" not in dict(c.kwargs) for c in ranged if c.name == "Input")


def test_a_missing_tensorrt_package_skips_the_pir_path_naming_the_pip_install():
    """paddle.tensorrt imports NVIDIA's tensorrt package; without it the case skips saying
    which version to install, instead of an import error blamed on Paddle's build. Looked up
    for real here (this machine has no tensorrt package)."""
    import importlib.util

    spec = parse_run_mode("trt_fp16")
    assert importlib.util.find_spec("tensorrt") is None
    assert pt.package_reason(spec, "pir", (8, 5, 3)) == (
        "trt_fp16 on a .json program takes paddle.tensorrt, which needs NVIDIA's tensorrt Python "
        "package, not installed here (this Paddle was built with TensorRT 8.5.3): pip install "
        "tensorrt==8.5.3, or check the model's .pdmodel export on the legacy path")
    with pytest.raises(CaseSkipped, match=r"pip install tensorrt==8\.6\.1"):
        pt.check_takes(spec, "pir", "/m/inference.json", (8, 6, 1))
    assert pt.package_reason(spec, "legacy", (8, 6, 1)) is None  # the legacy path needs none
    assert pt.package_reason(spec, "pir", (8, 6, 1), found=True, plugins=True) is None
    assert "pip install tensorrt, " in pt.package_reason(spec, "pir", (0, 0, 0))


def test_a_tensorrt_package_without_its_plugin_library_skips_naming_it():
    """paddle.tensorrt's converter loads libnvinfer_plugin: a tensorrt package without it
    would fail inside the conversion, blamed on the wrong thing."""
    spec = parse_run_mode("trt_fp16")
    said = pt.package_reason(spec, "pir", (8, 6, 1), found=True, plugins=False)
    assert "libnvinfer_plugin" in said and "pip install tensorrt==8.6.1" in said
    assert "LD_LIBRARY_PATH" in said
    assert pt.package_reason(spec, "pir", (8, 6, 1), found=True, plugins=True) is None
    assert pt.package_reason(spec, "legacy", (8, 6, 1), found=True, plugins=False) is None


def test_the_plugin_library_is_found_where_the_tensorrt_wheels_keep_it(tmp_path, monkeypatch):
    import ctypes.util

    assert ctypes.util.find_library("nvinfer_plugin") is None  # no TensorRT on this machine
    assert not pt.plugin_library_found()
    libs = tmp_path / "tensorrt_libs"
    libs.mkdir()
    (libs / "__init__.py").write_text("")
    (libs / "libnvinfer_plugin.so.8").write_bytes(b"")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert pt.plugin_library_found()
