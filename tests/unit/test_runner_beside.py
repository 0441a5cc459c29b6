"""execute/runner.py with real predictors: without intermediates the baseline's runs (the
case's inputs, and other inputs for the vacuity check) go on beside the candidate's build;
both are in before the candidate runs."""
import numpy as np
import pytest

from pytest_paddle_infer.cases.case import Case
from pytest_paddle_infer.engine.runner import Runner
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


def baseline_threads(runner, monkeypatch) -> list:
    """The threads the plain baseline's runs happen in (observed, not replaced)."""
    import threading

    seen, real = [], runner.predictor_baseline
    monkeypatch.setattr(runner, "predictor_baseline", lambda *a: seen.append(
        threading.current_thread().name) or real(*a))
    return seen


def test_the_baseline_runs_beside_the_candidates_build(runner, monkeypatch):
    seen = baseline_threads(runner, monkeypatch)
    prepared = runner.prepare(case_of("onednn_fp32"))
    assert seen and all(name.startswith("paddle-infer-beside") for name in seen)
    assert prepared.baseline_outputs and prepared.seeds is not None  # both in before setup ends
    first, second, seeds = prepared.seeds
    assert seeds == (0, 1)  # the case's seed and the next
    for name, array in first.items():  # the pair is the plain baseline's on two inputs
        np.testing.assert_array_equal(array, prepared.baseline_outputs[name])
        assert not np.array_equal(array, second[name])
    result = runner.run(prepared)
    assert result.passed and not result.vacuous


def test_with_intermediates_outside_tensorrt_the_baseline_runs_beside_the_build(runner, monkeypatch):
    """Only TensorRT's plan depends on the baseline's tensors (it marks them as engine
    outputs); elsewhere the baseline and its spill run beside the candidate's build, as
    without intermediates, and the case still gets every tensor."""
    seen = baseline_threads(runner, monkeypatch)
    prepared = runner.prepare(case_of("onednn_fp32", intermediates="all"))
    assert seen[0].startswith("paddle-infer-beside") and prepared.seeds is not None
    assert prepared.baseline_store is not None and prepared.baseline_store.records
    assert runner.run(prepared).intermediates


def test_a_failing_baseline_is_the_cases_error_in_setup(runner, monkeypatch):
    from pytest_paddle_infer.errors import PredictorError

    def broken(*args, **kwargs):
        raise PredictorError("running the predictor failed: injected")

    seeds = []
    real_seeds = runner.seed_outputs
    monkeypatch.setattr(runner.baselines, "get", broken)
    monkeypatch.setattr(runner, "seed_outputs", lambda *a: seeds.append(a) or real_seeds(*a))
    with pytest.raises(PredictorError, match="injected"):
        runner.prepare(case_of("onednn_fp32"))
    runner._beside.submit(lambda: None).result()  # what was queued beside has run
    assert not runner._beside_work and not seeds  # no second-seed run after a failed baseline


def test_an_interrupt_while_building_is_not_turned_into_the_baselines_error(runner, monkeypatch):
    """Ctrl-C during the candidate's build stops the case at once, even when the baseline
    beside it fails (its error would otherwise be the case's, and the session go on)."""
    import time

    from pytest_paddle_infer.errors import PredictorError

    def failing_baseline(*args, **kwargs):
        time.sleep(0.3)
        raise PredictorError("running the predictor failed: injected")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner.baselines, "get", failing_baseline)
    monkeypatch.setattr(runner.candidates.executor, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner.prepare(case_of("onednn_fp32"))
