"""The self-check's controls (selfcheck/controls.py) with real predictors: each CPU mode's
positive control passes its evidence rule and its negative control, the same recipe without
the call that engages the mode, fails it; the negative recipes of the GPU modes take out just
that call."""
from pathlib import Path

import pytest

from pytest_paddle_infer.modes.run_modes import RUN_MODES, parse_run_mode, recipe
from pytest_paddle_infer.engine import selfcheck as controls


@pytest.fixture(scope="module")
def runner(paddle_cache):
    from pytest_paddle_infer.engine.runner import Runner

    made = Runner(Path(paddle_cache))
    yield made
    made.close()


def controls_of(runner, name):
    mode = RUN_MODES[name]
    model, calls, seen, _ = controls.positive(runner, parse_run_mode(name), lambda *a: None)
    negative, taken = controls.negative_recipe(mode, calls)
    return mode, seen, controls.run_recorded(runner, model, negative, "negative",
                                             runner.inputs(model, {}, 0)), taken


@pytest.mark.parametrize("name, taken", [
    ("cpu_fp32", "enable_mkldnn() instead of disable_mkldnn()"),
    ("onednn_fp32", "disable_mkldnn() instead of enable_mkldnn()"),
    ("onednn_int8", "without enable_mkldnn_int8()"),
])
def test_the_negative_control_fails_the_evidence_rule(runner, name, taken):
    mode, positive, negative, said = controls_of(runner, name)
    assert said == taken
    assert controls.rule_problems(mode, positive) == []
    problems = controls.rule_problems(mode, negative)
    assert len(problems) == 1 and problems[0].startswith(f"{name}: "), problems
    assert negative.evidence.seen  # it ran: the rule, not a missing run, fails it


def test_bf16s_negative_control_fails_the_evidence_rule(runner, bf16_cpu):
    mode, positive, negative, taken = controls_of(runner, "onednn_bf16")
    assert taken == "without enable_mkldnn_bfloat16()"
    assert controls.rule_problems(mode, positive) == []
    assert controls.rule_problems(mode, negative) == [
        f"onednn_bf16: no bfloat16 tensor ran: oneDNN did not compute this model in bfloat16 "
        f"(tensors {negative.evidence.dtype_text()} only)"]


@pytest.mark.parametrize("name, gone, kept", [
    ("gpu_fp32", {"enable_use_gpu"}, set()),
    ("gpu_fp16", set(), {"enable_use_gpu"}),
    ("trt_fp32", {"enable_tensorrt_engine", "set_optim_cache_dir"}, {"enable_use_gpu"}),
    ("trt_int8", {"enable_tensorrt_engine", "enable_tensorrt_inspector"}, {"enable_use_gpu"}),
])
def test_the_gpu_modes_negative_recipes(name, gone, kept):
    from pytest_paddle_infer.modes.run_modes import optim_cache_call

    mode = RUN_MODES[name]
    calls = recipe(parse_run_mode(name)) + ((optim_cache_call("/o"),) if mode.tensorrt else ())
    negative, _ = controls.negative_recipe(mode, calls)
    methods = {c.method for c in negative}
    assert not methods & gone and methods >= kept
    if name == "gpu_fp16":  # the same call, in fp32
        assert [str(c) for c in negative] == [str(c).replace("Half", "Float32") for c in calls]
    assert controls.rule_of(mode) == (mode.shows[0] if mode.shows else controls.GPU_TENSORS)


def test_an_int8_engine_without_int8_layers_does_not_engage_trt_int8(tmp_path):
    """The self-check reads engine info as a case does: files in Paddle's format
    (tests/unit/modes/test_trt_marking.py writes them), in the plan's engine dirs."""
    import time

    from pytest_paddle_infer.engine.build_plan import Built
    from unit.modes.test_trt_marking import FP16_ENGINE, INT8_LAYER, write_engine_info

    spec = parse_run_mode("trt_int8")
    cache, beside = tmp_path / "optim", tmp_path / "_opt_cache"
    cache.mkdir(), beside.mkdir()
    built = Built(None, (), engine_dirs=(str(cache), str(beside)), built_at=time.time() - 5)
    row = {}
    assert controls.engine_problems(row, spec, built) == []  # no file: not known, a note
    assert "whether int8 layers were built is not known" in row["engines"][0]
    write_engine_info(cache / "engine_info_1.json", FP16_ENGINE)
    problems = controls.engine_problems(row, spec, built)
    assert len(problems) == 1 and problems[0].startswith("trt_int8: no int8 layer"), problems
    write_engine_info(cache / "engine_info_1.json", FP16_ENGINE + [INT8_LAYER])
    assert controls.engine_problems(row, spec, built) == []
    assert controls.engine_problems({}, spec, Built(None, ())) == []  # no engine dirs (PIR, CPU)
