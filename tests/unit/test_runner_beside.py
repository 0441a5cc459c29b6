"""execute/runner.py with real predictors: without intermediates the baseline's runs (the
case's inputs, and other inputs for the vacuity check) go on beside the candidate's build;
both are in before the candidate runs."""
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


def test_with_intermediates_the_baseline_comes_first(runner, monkeypatch):
    """The candidate's plan may depend on the baseline's tensors (TensorRT marks them): the
    baseline runs before the build, as it always did."""
    seen = baseline_threads(runner, monkeypatch)
    prepared = runner.prepare(case_of("onednn_fp32", intermediates="all"))
    assert seen[0] == "MainThread" and prepared.seeds is not None
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



@pytest.fixture
def sibling(paddle_cache, tmp_path):
    """A runner whose baselines are shared with (imagined) sibling xdist workers, its model
    loaded, the case these tests prepare, and where its two plain baseline runs' shared
    outputs live: (runner, case, the case's inputs' entry, the other seed's entry)."""
    from pytest_paddle_infer.execute import runner as runner_module

    runner = Runner(paddle_cache, shared_dir=tmp_path / "shared")
    model = runner.prepare(case_of("cpu_fp32", shape=(1, 3, 32, 32))).model
    case = case_of("onednn_fp32")
    plain, _, other_digest = runner._other_seed(case, model)
    calls = runner.baseline_calls(plain, model)
    digest = runner_module.inputs_digest(runner.inputs(model, dict(case.shapes), case.seed))
    entry = lambda d: runner_module.shared_path(runner.shared_dir, (model.prog_file, calls, d))
    yield runner, case, entry(digest), entry(other_digest)
    runner.close()


def test_a_seed_a_sibling_is_computing_is_read_after_the_candidate_runs(sibling, monkeypatch):
    """Under xdist a sibling worker may hold the other seed's shared outputs while it computes
    them: the case is prepared without waiting, and its run reads them (or, when the sibling
    left without them, computes them) before judging, which still gets both seeds."""
    from filelock import FileLock

    from pytest_paddle_infer.execute import runner as runner_module
    from pytest_paddle_infer.files import lock_is_held

    runner, case, _, entry = sibling
    judged, real = [], runner_module.judge_outputs
    monkeypatch.setattr(runner_module, "judge_outputs",
                        lambda rows, outputs, base, seeds: judged.append(seeds) or real(rows, outputs, base, seeds))
    with FileLock(str(entry.with_suffix(".lock"))):  # the sibling, computing
        assert lock_is_held(entry.with_suffix(".lock"))
        prepared = runner.prepare(case)
        assert callable(prepared.seeds) and not entry.exists()
    assert not lock_is_held(entry.with_suffix(".lock"))
    result = runner.run(prepared)  # the sibling left without them: computed here
    first, second, seeds = judged[0]
    assert seeds == (0, 1) and entry.is_file()
    for name, array in first.items():
        np.testing.assert_array_equal(array, prepared.baseline_outputs[name])
        assert not np.array_equal(array, second[name])
    assert result.passed and not result.vacuous


def test_while_a_sibling_computes_the_baseline_the_other_seed_is_run(sibling):
    """A sibling worker holds the baseline on the case's inputs: this worker runs the baseline
    on the other seed's inputs meanwhile instead of waiting."""
    import threading
    import time

    from filelock import FileLock

    runner, case, mine, other = sibling
    box = {}
    with FileLock(str(mine.with_suffix(".lock"))):  # the sibling, computing
        thread = threading.Thread(target=lambda: box.update(prepared=runner.prepare(case)))
        thread.start()
        deadline = time.monotonic() + 60
        while not other.is_file() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert other.is_file() and not mine.exists()  # the other seed, while it waited
    thread.join(60)
    prepared = box["prepared"]
    assert mine.is_file() and prepared.seeds is not None and not callable(prepared.seeds)
    assert runner.run(prepared).passed


def test_the_time_a_case_waits_for_baselines_is_counted_and_time_the_build_hides_is_not(
        runner, monkeypatch):
    """Runner.baseline_seconds, which xdist scheduling prices apart from a case's own time:
    the seconds the case's main thread stood waiting for baselines' outputs."""
    import time

    real_baseline, slow = runner.predictor_baseline, {"calls": 2}

    def slow_baseline(*args):  # the first two (the case's inputs, the other seed's) are slow
        if slow["calls"]:
            slow["calls"] -= 1
            time.sleep(0.6)
        return real_baseline(*args)

    monkeypatch.setattr(runner, "predictor_baseline", slow_baseline)
    before = runner.baseline_seconds
    runner.run(runner.prepare(case_of("onednn_fp32")))
    waited = runner.baseline_seconds - before
    assert waited >= 0.6, waited  # 1.2 s of baselines, little of it hidden by a tiny build
    # the next mode finds them computed
    before = runner.baseline_seconds
    runner.run(runner.prepare(case_of("cpu_fp32")))
    assert runner.baseline_seconds - before < 0.05
    # a build slower than the baselines beside it hides them: the case did not wait
    real_run = runner.candidates.executor.run
    monkeypatch.setattr(runner.candidates.executor, "run",
                        lambda *a: time.sleep(1.0) or real_run(*a))
    before = runner.baseline_seconds
    runner.run(runner.prepare(case_of("onednn_fp32", shape=(3, 3, 32, 32))))  # new inputs
    assert runner.baseline_seconds - before < 0.3, runner.baseline_seconds - before
