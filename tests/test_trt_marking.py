"""TensorRT output marking: names from the inspector's JSON or a range, and calls that bind
to the installed Config (the engine itself needs a TensorRT build)."""
import json

import pytest

from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.signatures import check_recipe
from pytest_paddle_infer.trt_marking import (FUSION_WARNING, comparable, engine_info_files,
                                             fused_layer_outputs, marking_calls, names_in_range)

BASELINE = ["conv2d_0.tmp_0", "batch_norm_0.tmp_2", "relu_0.tmp_0", "pool2d_0.tmp_0",
            "conv2d_1.tmp_0", "relu_1.tmp_0"]


def test_fused_layer_outputs_are_read_from_a_globbed_inspector_file(tmp_path):
    cache = tmp_path / "_opt_cache"
    cache.mkdir()
    info = {"Layers": [
        {"Name": "conv2d (Output: relu_0.tmp_0) + relu", "LayerType": "CaskConvolution",
         "Inputs": [{"Name": "x"}], "Outputs": [{"Name": "relu_0.tmp_0", "Dimensions": [1, 64, 112, 112]}]},
        {"Name": "pool", "Outputs": [{"Name": "pool2d_0.tmp_0"}]},
        "a layer described by name only",
        {"Name": "reformat", "Outputs": [{"Name": "Reformatted Output Tensor 0"}]},
    ]}
    (cache / "engine_info_1234567890.json").write_text(json.dumps(info))
    files = engine_info_files(tmp_path)
    assert [f.name for f in files] == ["engine_info_1234567890.json"]
    names = fused_layer_outputs(files[0])
    assert names == ["relu_0.tmp_0", "pool2d_0.tmp_0", "Reformatted Output Tensor 0"]
    assert comparable(names, BASELINE) == ["relu_0.tmp_0", "pool2d_0.tmp_0"]


def test_unreadable_inspector_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "engine_info_1.json"
    bad.write_text("{")
    with pytest.raises(OptionError, match=r"cannot read TensorRT inspector file .*engine_info_1.json"):
        fused_layer_outputs(bad)


def test_range_of_baseline_names():
    assert names_in_range(BASELINE, "relu_0.tmp_0", "conv2d_1.tmp_0") == [
        "relu_0.tmp_0", "pool2d_0.tmp_0", "conv2d_1.tmp_0"]
    assert names_in_range(BASELINE, None, "batch_norm_0.tmp_2") == BASELINE[:2]
    with pytest.raises(OptionError, match="no tensor named 'nope'"):
        names_in_range(BASELINE, "nope", None)
    with pytest.raises(OptionError, match="comes after"):
        names_in_range(BASELINE, "relu_1.tmp_0", "relu_0.tmp_0")


def test_marking_calls_bind_to_the_installed_config():
    calls = marking_calls(["relu_0.tmp_0", "pool2d_0.tmp_0"])
    assert [str(c) for c in calls] == [
        "enable_tensorrt_inspector(True)", "mark_trt_engine_outputs(('relu_0.tmp_0', 'pool2d_0.tmp_0'))"]
    assert check_recipe(calls) == []
    assert "change what TensorRT fuses" in FUSION_WARNING


def test_trt_plan_marks_the_selected_tensors(tmp_path, paddle_cache):
    """With intermediates on, a TensorRT candidate's build step exposes the baseline's
    selected tensors; a CPU mode's plan is unchanged by the same request."""
    from pytest_paddle_infer.build_plan import Build, candidate_plan
    from pytest_paddle_infer.models import parse_source, resolve
    from pytest_paddle_infer.run_modes import RunModeSpec

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
