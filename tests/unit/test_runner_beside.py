"""execute/runner.py with real predictors: without intermediates the baseline runs beside the
candidate's build and its run on other inputs beside the candidate's run; what the case
compares is what a sequential run gives."""
import numpy as np
import pytest

from pytest_paddle_infer.cases.case import Case
from pytest_paddle_infer.execute.runner import Runner
from pytest_paddle_infer.models.source import parse_source
from pytest_paddle_infer.modes.run_modes import parse_run_mode
from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule


def case_of(mode: str, intermediates: str = "none", shape=(2, 3, 32, 32)) -> Case:
    return Case(model=parse_source("tiny_cnn"), run_mode=parse_run_mode(mode),
                intermediates=intermediates, shapes=(("x", shape),),
                tolerances=CaseTolerances(Rule(1e-4, 1e-4)), program="legacy")


@pytest.fixture
def runner(paddle_cache):
    r = Runner(paddle_cache)
    yield r
    r.close()


def test_the_seed_pair_is_taken_when_the_case_compares(runner):
    prepared = runner.prepare(case_of("onednn_fp32"))
    assert prepared.baseline_outputs  # the baseline is in before setup ends
    assert prepared.later is not None and prepared.seeds is None
    result = runner.run(prepared)
    assert prepared.later is None and prepared.seeds is not None
    first, second, seeds = prepared.seeds
    assert seeds == (0, 1)  # the case's seed and the next
    for name, array in first.items():  # the pair is the plain baseline's on two inputs
        np.testing.assert_array_equal(array, prepared.baseline_outputs[name])
        assert not np.array_equal(array, second[name])
    assert result.passed and not result.vacuous


def test_a_candidate_that_is_the_baseline_predictor_runs_after_the_seed_run(runner, monkeypatch):
    """cpu_fp32 without IR optimization on a legacy program is the plain baseline's recipe:
    the predictor cache hands both the same predictor, which must not run twice at once."""
    from pytest_paddle_infer.execute import runner as runner_module

    runner.run(runner.prepare(case_of("onednn_fp32")))  # the plain baseline's predictor is cached
    case = case_of("cpu_fp32+no_ir_optim", shape=(4, 3, 32, 32))  # new inputs: seed runs again
    prepared = runner.prepare(case)
    baseline = runner.predictors.peek(prepared.model, runner.baseline_calls(case, prepared.model))
    assert baseline is prepared.candidate  # the case this guards
    order = []
    real_run, real_settle = runner_module.run_predictor, runner.settle
    monkeypatch.setattr(runner_module, "run_predictor",  # observed, not replaced
                        lambda p, feeds: order.append("candidate runs") or real_run(p, feeds))
    monkeypatch.setattr(runner, "settle", lambda p: order.append("seeds settled") or real_settle(p))
    result = runner.run(prepared)
    assert order[:2] == ["seeds settled", "candidate runs"]
    assert result.passed and result.rows[0].max_abs == 0.0


def test_with_intermediates_the_baseline_comes_first(runner):
    """The candidate's plan may depend on the baseline's tensors (TensorRT marks them): the
    baseline runs before the build, as it always did."""
    prepared = runner.prepare(case_of("onednn_fp32", intermediates="all"))
    assert prepared.later is None and prepared.seeds is not None
    assert prepared.baseline_store is not None and prepared.baseline_store.records
    assert runner.run(prepared).intermediates


def test_a_failing_baseline_is_the_cases_error_in_setup(runner, monkeypatch):
    from pytest_paddle_infer.errors import PredictorError

    def broken(*args, **kwargs):
        raise PredictorError("running the predictor failed: injected")

    monkeypatch.setattr(runner.baselines, "get", broken)
    with pytest.raises(PredictorError, match="injected"):
        runner.prepare(case_of("onednn_fp32"))
    assert not runner._beside_work  # nothing left running beside
