"""End to end under -n 2: with history that makes the scheduler split tiny_cnn by run mode, the
worker busy longest with tiny_cnn's cpu_fp32 cases leaves its bf16 unit to the worker that
frees up first and takes the small one (xdist_scheduling.pick_unit); with cases history knows
to be cheap, a worker about to start its last costly case gets one of those first
(xdist_scheduling.find_filler). Every case runs once and passes, nothing waits forever."""
import json
import re
from collections import defaultdict

from helpers import run_suite, write_suite

SMALL = """      small:
        source: pytest_paddle_infer.models.zoo:build_tiny_cnn
        inputs: {x: {shape: [-1, 3, -1, -1]}}
        shapes: [[1, 3, 16, 16], [2, 3, 16, 16]]
        run_modes: [cpu_fp32]
"""
SUITE = """
    models:
      tiny_cnn:
        shapes: [[1, 3, 32, 32], [2, 3, 32, 32]]
        run_modes: [cpu_fp32, {mode: onednn_bf16, tolerances: {atol: 0.1, rtol: 0.05}}]
      tiny_detector:
        shapes: [{image: [8, 3, 64, 64]}, {image: [12, 3, 64, 64]}, {image: [16, 3, 64, 64]},
                 {image: [4, 3, 64, 64]}]
        run_modes: [cpu_fp32, onednn_fp32]
""" + SMALL
# seconds per case as an earlier run would have kept them: units tiny_cnn cpu_fp32 (100 s),
# tiny_detector (40 s, not split: that would not shorten the sweep), tiny_cnn onednn_bf16
# (30 s), small (2 s). The cpu_fp32 worker asks first (after one of its two cases; the
# detector's worker asks after seven of its eight: with six, a loaded machine sometimes let
# it ask first), with 50 s left against at most 40: it takes small, not bf16 as the
# handout order would; bf16 waits for the detector's worker.
HISTORY = {"zoo:tiny_cnn": {"cpu_fp32": 50.0, "onednn_bf16": 15.0},
           "zoo:tiny_detector": {"cpu_fp32": 40.0 / 8, "onednn_fp32": 40.0 / 8},
           "builder:pytest_paddle_infer.models.zoo:build_tiny_cnn": {"cpu_fp32": 1.0}}


def units_by_worker(text: str):
    """Worker -> {(model, run mode)} it ran, from -v lines such as
    "[gw1] [ 25%] PASSED paddle_suite.yaml::tiny_cnn[1x3x32x32-cpu_fp32]"."""
    units = defaultdict(set)
    for worker, model, mode in re.findall(
            r"\[(gw\d+)\] \[\s*\d+%\] PASSED paddle_suite\.yaml::(\w+)\[\S+-(\w+)\]", text):
        units[worker].add((model, mode))
    return dict(units)


def test_the_big_unit_waits_for_the_worker_that_frees_up_first(pytester, run_pytest):
    write_suite(pytester, SUITE)
    cache = pytester.path / "cache"
    cache.mkdir()
    (cache / "xdist-seconds.json").write_text(json.dumps(HISTORY))
    run = run_suite(run_pytest, pytester, "-n", "2", "-v", f"--paddle-cache-dir={cache}",
                    f"--debug={pytester.path / 'debug.log'}")  # --debug: xdist's scheduler log
    assert run.result.ret == 0, run.text
    assert len(run.cases) == 14 and set(run.outcomes().values()) == {"passed"}, run.outcomes()
    units = sorted(units_by_worker(run.text).values(), key=lambda u: ("tiny_cnn", "cpu_fp32") not in u)
    assert units == [{("tiny_cnn", "cpu_fp32"), ("small", "cpu_fp32")},
                     {("tiny_detector", "cpu_fp32"), ("tiny_detector", "onednn_fp32"),
                      ("tiny_cnn", "onednn_bf16")}], run.text
    # the cpu_fp32 worker chose, holding its last 50 s case
    assert re.search(r"look-ahead: builder:pytest_paddle_infer\.models\.zoo:build_tiny_cnn to (gw\d) "
                     r"predicted seconds left: \{[^}]*'\1': 50\.0", run.text), run.text


FILLER_SUITE = """
    models:
      tiny_cnn:
        shapes: [[1, 3, 32, 32], [2, 3, 32, 32]]
        run_modes: [cpu_fp32, onednn_fp32]
      tiny_detector:
        shapes: [{image: [1, 3, 64, 64]}, {image: [2, 3, 64, 64]}]
        run_modes: [cpu_fp32, onednn_fp32]
""" + SMALL
# tiny_cnn split by run mode (two units of 60 and 40 s); small a unit of 4 s; tiny_detector's
# four cases known to take 0.05 s each: fillers
FILLER_HISTORY = {"zoo:tiny_cnn": {"cpu_fp32": 30.0, "onednn_fp32": 20.0},
                  "zoo:tiny_detector": {"cpu_fp32": 0.05, "onednn_fp32": 0.05},
                  "builder:pytest_paddle_infer.models.zoo:build_tiny_cnn": {"cpu_fp32": 2.0}}


def test_a_worker_about_to_start_its_last_case_gets_a_cheap_one_first(pytester, run_pytest):
    """The first worker to start its last tiny_cnn case gets one tiny_detector case, not the
    small unit: it chooses once that case starts. Every case runs once and passes; the units
    that are not fillers stay whole."""
    write_suite(pytester, FILLER_SUITE)
    cache = pytester.path / "cache"
    cache.mkdir()
    (cache / "xdist-seconds.json").write_text(json.dumps(FILLER_HISTORY))
    run = run_suite(run_pytest, pytester, "-n", "2", "-v", f"--paddle-cache-dir={cache}",
                    f"--debug={pytester.path / 'debug.log'}")
    assert run.result.ret == 0, run.text
    assert len(run.cases) == 10 and set(run.outcomes().values()) == {"passed"}, run.outcomes()
    assert re.search(r"filler: paddle_suite\.yaml::tiny_detector\[\S+\] to gw\d", run.text), run.text
    units = units_by_worker(run.text)
    for unit in (("tiny_cnn", "cpu_fp32"), ("tiny_cnn", "onednn_fp32"), ("small", "cpu_fp32")):
        assert sum(unit in ran for ran in units.values()) == 1, (unit, units)
