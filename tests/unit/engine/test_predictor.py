"""execute/predictor.py: the predictor cache's limit holds with intermediates on: a hooked predictor that the cache
lets go is released with its hook router."""
import gc
import weakref

from pytest_paddle_infer.engine.capture import HookRouters, run_with_sink
from pytest_paddle_infer.models.inputs import generate_all
from pytest_paddle_infer.models.source import parse_source
from pytest_paddle_infer.models.cache import resolve
from pytest_paddle_infer.engine.predictor import PredictorCache, run_predictor
from pytest_paddle_infer.modes.run_modes import baseline_recipe


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
