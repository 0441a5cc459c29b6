"""What a predictor run really executed: the hook router's ``recorder`` reads each tensor's op
type, dtype and layout (never its values) into a Tally, which ``verdict/evidence.py`` judges."""
from __future__ import annotations

from typing import Callable, Optional

from ..verdict.evidence import Tally
from .capture import HookRouter, run_with_sink


def recorded(router: HookRouter, tally: Tally, run: Callable) -> Callable:
    """``run`` with ``tally`` recording what its hooks see; returns run's result. When the hooks
    saw no op, ``run`` goes once more (on Paddle 3.x GPU a predictor's first run calls no hook)."""
    def record(op_type, name, tensor) -> None:
        tally.add(str(op_type), str(name), str(getattr(tensor, "dtype", "")),
                  str(getattr(tensor, "layout", "")))

    def go():
        router.recorder = record
        try:
            tally.start_run()
            result = run()
            if not tally.evidence.seen:
                tally.start_run()
                run()
            return result
        finally:
            router.recorder = None

    return go


def needs_warm_up(calls) -> bool:
    """``calls``: Config calls, or recipe texts. GPU predictors on Paddle 3.x: the first run calls
    no output hook (or only some), so intermediates stored from it would be partial."""
    return any(getattr(c, "method", "") == "enable_use_gpu"
               or (isinstance(c, str) and "enable_use_gpu(" in c) for c in calls)


def warm_up(router: HookRouter, run: Callable) -> None:
    """One run no sink or recorder sees, before the run that is recorded."""
    sink, recorder = router.sink, router.recorder
    router.sink = router.recorder = None
    try:
        run()
    finally:
        router.sink, router.recorder = sink, recorder


def hooked_run(router: HookRouter, sink: Optional[Callable], tally: Tally, run: Callable, warm: bool = False):
    """``run`` with ``sink`` and ``tally`` on its hooks; ``warm``: a warm-up run first."""
    if warm:
        warm_up(router, run)
    if sink is None:
        return recorded(router, tally, run)()
    return run_with_sink(router, sink, recorded(router, tally, run))
