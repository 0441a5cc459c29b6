"""localize/static_rung.py: when the static-graph rung runs and what it says."""
from types import SimpleNamespace

from pytest_paddle_infer.engine.localize import static_rung


def test_static_rung_runs_only_when_everything_off_fails_and_says_which_side():
    rung = lambda name, passed: SimpleNamespace(name=name, passed=passed)
    assert static_rung.all_off_failed(SimpleNamespace(rungs=[rung("all optimizations off", False)]))
    assert not static_rung.all_off_failed(SimpleNamespace(rungs=[rung("all optimizations off", True),
                                                                 rung("as configured", False)]))
    # a case that crashed: a raise with everything off is another failure, no kernels' verdict
    from pytest_paddle_infer.engine.localize.ladder import Localization, Rung

    off = lambda detail: [Rung("all optimizations off", "x", False, detail=detail)]  # noqa: E731
    assert not static_rung.all_off_failed(Localization(off("raised: (NotFound) ..."), failure="crashed"))
    assert static_rung.all_off_failed(Localization(off("crashed: the trial's process ..."), failure="crashed"))
    assert "framework's op implementations" in static_rung.verdict(False, "native kernels")
    assert "an inference issue" in static_rung.verdict(True, "native kernels")
    assert "no verdict" in static_rung.verdict(None, "native kernels")
    assert static_rung.rung_line(False, 3e-7, "Executor").startswith("  static Executor              fails (max abs 3e-07)")
