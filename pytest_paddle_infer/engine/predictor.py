"""Recipe -> predictor -> outputs. One function applies a recipe to a Config; predictors are
cached per process so a baseline is built once per model and reused by every run mode."""
from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from typing import Callable, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from ..errors import InputError, PredictorError, strip_ansi
from ..models.source import ModelFiles
from ..modes.run_modes import Call, EveryOpTypeExcept, Precision


def _resolve_arg(value):
    if isinstance(value, Precision):
        from paddle import inference

        return getattr(inference.PrecisionType, value.name)
    if isinstance(value, EveryOpTypeExcept):
        from paddle.base import core

        return set(core.get_all_op_names()) - set(value)
    return value


def apply_recipe(config, calls: Sequence[Call]) -> None:
    """Make each call of ``calls`` on ``config``, in order."""
    for c in calls:
        method = getattr(config, c.method, None)
        if method is None:
            if getattr(c, "optional", False):
                continue  # not in this Paddle version; the recipe allows going without
            raise PredictorError(f"paddle.inference.Config has no method {c.method!r} (recipe call {c})")
        try:
            method(*[_resolve_arg(a) for a in c.args], **{k: _resolve_arg(v) for k, v in c.kwargs})
        except Exception as e:
            raise PredictorError(f"Config.{c} raised: {trim_paddle_error(e)}") from None


def describe_recipe(calls: Sequence[Call]) -> str:
    return "; ".join(str(c) for c in calls)


def trim_paddle_error(exc: BaseException) -> str:
    """Paddle's C++ error without its C++ traceback: the summary that says what happened."""
    text = strip_ansi(str(exc))
    marker = "Error Message Summary:"
    if marker in text:
        text = text.split(marker, 1)[1]
    text = re.sub(r"-{5,}", "", text)
    lines = [l.rstrip() for l in text.strip().splitlines() if l.strip()]
    lines = [l for l in lines if not l.lstrip().startswith(("C++ Traceback", "0  ", "1  "))]
    summary = "\n".join(lines[:8])
    return f"{type(exc).__name__}: {summary}" if summary else type(exc).__name__


def make_config(model: ModelFiles, calls: Sequence[Call]):
    """The Config of ``calls`` on the model's files, by absolute paths (a relative one makes the
    calibration table's writer throw in a destructor). Quiet first: on the 2.6.2 GPU wheel
    ``disable_glog_info()`` after a TensorRT recipe brings back deleted passes (tests/gpu_wheel)."""
    from paddle import inference

    config = inference.Config(os.path.abspath(model.prog_file), os.path.abspath(model.params_file))
    if hasattr(config, "disable_glog_info"):
        config.disable_glog_info()
    apply_recipe(config, calls)
    return config


def build_predictor(model: ModelFiles, calls: Sequence[Call]):
    from paddle import inference

    config = make_config(model, calls)
    try:
        return inference.create_predictor(config)
    except Exception as e:
        hint = build_hint(str(e), model, calls)
        raise PredictorError(
            f"building the predictor for {model.name} failed: {trim_paddle_error(e)}\n"
            f"recipe: {describe_recipe(calls)}" + (f"\nhint: {hint}" if hint else "")) from None


def build_hint(text: str, model: ModelFiles, calls: Sequence[Call]) -> str:
    """What to do about a Paddle error a recipe is known to cause."""
    pir = model.prog_file.endswith(".json")
    if pir and "memory_optimize_pass" in text and any(c.method == "enable_memory_optim" for c in calls):
        return ("this Paddle does not run enable_memory_optim() on a PIR (.json) program: drop "
                "+memory_optim, or check the legacy .pdmodel program with --paddle-program=legacy "
                "(zoo entries and builders; ini paddle_program, suite key program)")
    return ""


def run_predictor(predictor, inputs: Mapping[str, np.ndarray]) -> "OrderedDict[str, np.ndarray]":
    """Feed inputs by name, run, and copy every output out, in the model's output order."""
    names = list(predictor.get_input_names())
    missing = [n for n in names if n not in inputs]
    extra = [n for n in inputs if n not in names]
    if missing or extra:
        raise InputError(f"the model takes inputs {names}; missing {missing}, unknown {extra}")
    for name in names:
        handle = predictor.get_input_handle(name)
        data = np.ascontiguousarray(inputs[name])
        handle.reshape(list(data.shape))
        handle.copy_from_cpu(data)
    try:
        predictor.run()
    except Exception as e:
        raise PredictorError(f"running the predictor failed: {trim_paddle_error(e)}") from None
    return OrderedDict((n, predictor.get_output_handle(n).copy_to_cpu())
                       for n in predictor.get_output_names())


class PredictorCache:
    """Predictors per (model files, recipe), least recently used dropped first."""
    def __init__(self, limit: int = 6):
        self.limit = limit
        self._items: "OrderedDict[Tuple, object]" = OrderedDict()
        self.on_evict: List[Callable] = []  # told of each predictor the cache lets go
        self._lock = threading.Lock()
        self._building: Dict[Tuple, threading.Event] = {}  # keys a thread is building now

    def get(self, model: ModelFiles, calls: Sequence[Call], build: Callable = build_predictor):
        key = (model.prog_file, model.params_file, tuple(calls))
        while True:
            with self._lock:  # a baseline may be built beside a candidate's build (runner.py)
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key]
                building = self._building.get(key)
                if building is None:
                    building = self._building[key] = threading.Event()
                    break
            building.wait()  # the same recipe, built by the other thread: take that one
        try:
            predictor = build(model, calls)  # outside the lock: builds take seconds
            with self._lock:
                self._items[key] = predictor
                evicted = [self._items.popitem(last=False)[1]
                           for _ in range(max(0, len(self._items) - self.limit))]
        finally:
            with self._lock:
                del self._building[key]
            building.set()  # a build that raised: the waiter tries (and says) for itself
        for gone in evicted:
            for callback in self.on_evict:
                callback(gone)
        return predictor
