"""localize/prune.py: the pruning step after the ladder: the recipes it takes, the tolerance
it judges by, where local errors go, and its lines."""
from types import SimpleNamespace

import numpy as np
import pytest

from pytest_paddle_infer.engine.capture import Record, fingerprint
from pytest_paddle_infer.engine.localize import prune, repro
from pytest_paddle_infer.modes.run_modes import parse_run_mode, recipe
from pytest_paddle_infer.verdict.rows import TensorComparison
from pytest_paddle_infer.protocol import CaseResult, IntermediateRow


def tiny_cnn(paddle_cache, legacy: bool):
    from pytest_paddle_infer.models.cache import resolve
    from pytest_paddle_infer.models.source import parse_source

    model = resolve(parse_source("tiny_cnn"), paddle_cache, legacy=legacy)
    if not legacy and model.format != "pir":
        pytest.skip("this Paddle exports legacy programs only")
    return model


def test_prune_lines_say_what_was_found():
    answer = {"op_types": ["conv2d", "batch_norm", "relu"], "ops": 3, "builds": 7, "seconds": 1.0,
              "first_bad": None, "run_start": 0, "first_divergent": 2, "divergent_from": "halving",
              "locals": [{"op": i, "passed": True, "max_abs": 0.0, "tensor": "t", "shape": [1]}
                         for i in range(3)]}
    text = "\n".join(prune.prune_lines(answer, ""))
    assert "no op alone up to op 2 relu breaks tolerance; from op 0 (conv2d) on they do together" in text
    assert "first divergent tensor: op 2 relu (found by halving)" in text
    assert "7 predictor builds" in text
    answer.update(first_bad=1, run_start=None)
    answer["locals"][1].update(passed=False, max_abs=0.5)
    assert prune.prune_lines(answer, "")[0].startswith("first bad op: op 1 batch_norm (t, shape [1])")
    assert "not done: the candidate takes 3 steps" in prune.prune_lines({}, "the candidate takes 3 steps")[0]


def test_local_errors_go_to_the_rows_of_their_tensor_by_name_or_by_values(tmp_path):
    """Legacy tensors pair by name; PIR ones (address names) by the baseline's values."""
    values = {"conv_out": np.arange(16, dtype=np.float32), "0x1_inner_var_3": -np.arange(16, dtype=np.float32)}
    records = [Record(i, "op", n, (16,), "float32", tmp_path / f"{i}.npy", fingerprint(a))
               for i, (n, a) in enumerate(values.items())]
    store = SimpleNamespace(records=records, by_name={r.name: r for r in records})
    row = lambda name: IntermediateRow(0, TensorComparison(name, (16,), (16,), "float32", "float32", 0, 0),
                                       name, "name", False)
    result = CaseResult("c", [], "", "", "", intermediates=[row("conv_out"), row("0x1_inner_var_3"), row("other")])
    answer = {"locals": [
        {"tensor": "conv_out", "shape": [16], "fingerprint": [], "max_abs": 0.25, "passed": False},
        {"tensor": "op7:relu:0", "shape": [16], "max_abs": 0.0, "passed": True,
         "fingerprint": fingerprint(values["0x1_inner_var_3"]).tolist()},
    ]}
    prune.mark_local_errors(result, answer, store)
    assert [(r.local_max_abs, r.local_passed) for r in result.intermediates] == [
        (0.25, False), (0.0, True), (None, None)]


def test_a_failing_step_after_the_ladder_keeps_the_ladder_and_says_so():
    from pytest_paddle_infer.engine.localize.ladder import Localization

    loc = Localization()
    loc.verdict = "deleting pass x brings onednn_bf16 within tolerance"
    prune.prune_step(loc, runner=None, prepared=None)  # nothing to prune with: an internal error
    assert loc.lines()[0].startswith("localization: deleting pass x")
    assert loc.extra and loc.extra[0].startswith("pruning: failed: AttributeError")


@pytest.mark.parametrize("mode, steps", [("onednn_bf16", 1), ("trt_fp16", 2), ("trt_int8", 3)])
def test_the_repro_takes_the_cases_own_recipes_and_prunes_one_build_plans_only(paddle_cache, tmp_path,
                                                                               mode, steps):
    """The Config calls come from the case's plan (the final build) and its baseline; a plan
    of more steps (TensorRT: its cache dir, a calibration) is not pruned and says why."""
    from pytest_paddle_infer.cases.case import Case
    from pytest_paddle_infer.engine.runner import Runner
    from pytest_paddle_infer.models.source import parse_source
    from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule

    model = tiny_cnn(paddle_cache, legacy=True)
    case = Case(parse_source("tiny_cnn"), parse_run_mode(mode),
                CaseTolerances(base=Rule(1e-3, 1e-3), override=Rule(None, None)))
    runner = Runner(tmp_path / "cache")
    baseline, candidate, why_not = prune._calls(runner, SimpleNamespace(case=case, model=model))
    assert [c.method for c in baseline][:2] == ["disable_mkldnn", "switch_ir_optim"] or \
        baseline[0].method == "enable_use_gpu"
    if steps == 1:
        assert candidate == recipe(parse_run_mode(mode)) and why_not == ""
    else:
        assert any(c.method == "enable_tensorrt_engine" for c in candidate)
        assert why_not.startswith(f"the candidate takes {steps} steps (")
        text = repro.script_text(case.id, "w", "inference.pdmodel", baseline, candidate, 1e-2, 1e-2)
        assert 'config.set_optim_cache_dir(os.path.join(HERE, "optim_cache", ""))' in text
        compile(text, "repro.py", "exec")


def test_pruning_judges_by_the_tolerance_the_case_failed_by():
    comparison = lambda name, atol, passed: SimpleNamespace(name=name, atol=atol, rtol=atol / 10,
                                                              bounds={}, passed=passed)
    ok, bad = comparison("out0", 1e-4, True), comparison("out1", 5e-2, False)
    result = SimpleNamespace(rows=[ok, bad], divergent=[])
    assert prune._tolerance(None, result) == (5e-2, 5e-3, None)
    judged = SimpleNamespace(comparison=comparison("conv_out", 1e-3, False), judged=True)
    assert prune._tolerance(None, SimpleNamespace(rows=[ok], divergent=[judged])) == (1e-3, 1e-4, None)
