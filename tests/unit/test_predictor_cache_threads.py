"""execute/predictor.py: the baseline is built in the runner's second thread while the main
thread builds the candidate; the same recipe asked for by both is built once."""
import threading
import time
from types import SimpleNamespace

import pytest

from pytest_paddle_infer.errors import PredictorError
from pytest_paddle_infer.engine.predictor import PredictorCache

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
