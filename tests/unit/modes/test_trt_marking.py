"""modes/trt_marking.py: TensorRT output marking: calls that bind to the installed Config (the engine itself
needs a TensorRT build)."""
from config_signatures import check_recipe

from pytest_paddle_infer.modes.trt_marking import FUSION_WARNING, marking_calls


def test_marking_calls_bind_to_the_installed_config():
    calls = marking_calls(["relu_0.tmp_0", "pool2d_0.tmp_0"])
    assert [str(c) for c in calls] == [
        "enable_tensorrt_inspector(True)", "mark_trt_engine_outputs(('relu_0.tmp_0', 'pool2d_0.tmp_0'))"]
    assert check_recipe(calls) == []
    assert "change what TensorRT fuses" in FUSION_WARNING


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
