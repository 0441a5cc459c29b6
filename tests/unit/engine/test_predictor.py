"""engine/predictor.py: the predictor cache (its limit with intermediates on, a recipe built
once for two threads), Config paths and the hints for known Paddle errors."""
import gc
import os
import threading
import time
import weakref
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_paddle_infer.engine.capture import HookRouters, run_with_sink
from pytest_paddle_infer.engine.predictor import PredictorCache, build_hint, make_config, run_predictor
from pytest_paddle_infer.errors import PredictorError
from pytest_paddle_infer.models.cache import resolve
from pytest_paddle_infer.models.inputs import generate_all
from pytest_paddle_infer.models.source import ModelFiles, parse_source
from pytest_paddle_infer.modes.run_modes import Call, baseline_recipe


def test_evicted_predictors_leave_the_hook_routers(paddle_cache):
    model = resolve(parse_source("tiny_cnn"), paddle_cache)
    inputs = generate_all([s.concrete(tuple(1 if d < 0 else d for d in s.shape)) for s in model.inputs], 0)
    cache = PredictorCache(limit=1)
    routers = HookRouters()
    cache.on_evict.append(routers.forget)
    seen = []
    first = cache.get(model, baseline_recipe("cpu", 1, 0))
    run_with_sink(routers.for_predictor(first), lambda *a: seen.append(a[1]),
                  lambda: run_predictor(first, inputs))
    assert seen and len(routers) == 1
    second = cache.get(model, baseline_recipe("cpu", 2, 0))  # another recipe: evicts the first
    run_with_sink(routers.for_predictor(second), lambda *a: None, lambda: run_predictor(second, inputs))
    assert len(routers) == 1  # only the cached predictor's router is left
    try:
        gone = weakref.ref(first)
    except TypeError:  # Paddle's predictor may not take weak references: count references instead
        import sys

        assert sys.getrefcount(first) == 2  # this name and getrefcount's argument
        return
    del first
    gc.collect()
    assert gone() is None


# ---------------------------------------------------------------------------------------
# execute/predictor.py: the baseline is built in the runner's second thread while the main
# thread builds the candidate; the same recipe asked for by both is built once.
# ---------------------------------------------------------------------------------------


MODEL = SimpleNamespace(prog_file="inference.json", params_file="inference.pdiparams")


def slow_builder(builds, fail=False):
    def build(model, calls):
        time.sleep(0.2)
        builds.append(calls)
        if fail:
            raise PredictorError("building the predictor failed")
        return object()
    return build


def in_two_threads(fn):
    got = []
    other = threading.Thread(target=lambda: got.append(fn()))
    other.start()
    got.append(fn())
    other.join()
    return got


def test_one_recipe_asked_for_by_two_threads_is_built_once():
    cache, builds, evicted = PredictorCache(), [], []
    cache.on_evict.append(evicted.append)
    got = in_two_threads(lambda: cache.get(MODEL, ("disable_mkldnn()",), slow_builder(builds)))
    assert len(builds) == 1 and got[0] is got[1] and not evicted


def test_two_recipes_are_built_side_by_side():
    cache, builds = PredictorCache(), []
    recipes = iter([("disable_mkldnn()",), ("enable_mkldnn()",)])
    lock, both_building = threading.Lock(), threading.Barrier(2, timeout=10)

    def build(model, calls):
        both_building.wait()  # breaks (and raises) unless the other build is under way too
        return slow_builder(builds)(model, calls)

    def get():
        with lock:
            calls = next(recipes)
        return cache.get(MODEL, calls, build)

    got = in_two_threads(get)
    assert len(builds) == 2 and got[0] is not got[1]


def test_a_build_that_fails_fails_for_each_thread_and_is_not_cached():
    cache, builds = PredictorCache(), []
    errors = []

    def get():
        try:
            return cache.get(MODEL, (), slow_builder(builds, fail=True))
        except PredictorError as e:
            errors.append(e)

    in_two_threads(get)
    assert len(errors) == 2 and len(builds) == 2  # the waiter tried for itself
    with pytest.raises(PredictorError):
        cache.get(MODEL, (), slow_builder(builds, fail=True))


def test_configs_name_programs_by_absolute_path(paddle_cache, monkeypatch):
    """Paddle's calibration-table writer runs in the predictor's destructor and throws on a
    relative program path."""
    from pytest_paddle_infer.engine.runner import Runner

    model = Runner(paddle_cache).model_files(parse_source("tiny_cnn"), legacy=True)
    monkeypatch.chdir(Path(model.prog_file).parent.parent)
    relative = replace(model, prog_file=os.path.relpath(model.prog_file),
                       params_file=os.path.relpath(model.params_file))
    config = make_config(relative, ())
    assert os.path.isabs(config.prog_file()) and os.path.isabs(config.params_file())
    assert config.prog_file() == str(Path(model.prog_file).resolve())


def test_memory_optim_on_a_pir_program_gets_a_hint():
    calls = [Call("enable_memory_optim")]
    pir = ModelFiles("m", "/x/inference.json", "/x/inference.pdiparams", ())
    legacy = ModelFiles("m", "/x/inference.pdmodel", "/x/inference.pdiparams", ())
    text = "(InvalidArgument) Not find predictor_id 0 and pass_name memory_optimize_pass"
    assert "drop +memory_optim" in build_hint(text, pir, calls)
    assert "--paddle-program=legacy" in build_hint(text, pir, calls)
    assert build_hint(text, legacy, calls) == "" and build_hint("other", pir, calls) == ""
