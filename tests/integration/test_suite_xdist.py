"""End to end: a suite under -n 2 runs the same cases with the same outcomes and figures as
without it, and the plugin's scheduler (xdist_scheduling.py) keeps each model's cases on one
worker while other tests spread as with --dist load; -p no:paddle_infer_xdist turns it off."""
import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from helpers import DIFFERING_AT_ZERO, DIFFERING_MODE, run_suite, summary_figures, write_suite
from pytest_paddle_infer.session.xdist_grouping import SETUP

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

SUITE = f"""
    defaults:
      run_modes: [cpu_fp32, onednn_fp32, {{mode: onednn_fp32, threads: 2, tolerances: {{cosine_min: 0.999}}}}]
    models:
      tiny_cnn:
        shapes: [[1, 3, 32, 32], [3, 3, 32, 32]]
      tiny_detector:
        shapes: [{{image: [1, 3, 64, 64]}}, {{image: [2, 3, 64, 64]}}]
      strict_cnn:
        source: tiny_cnn
        run_modes: [cpu_fp32, {DIFFERING_AT_ZERO}]   # the second fails on every CPU, in both runs alike
"""


def test_same_cases_outcomes_and_figures_with_and_without_xdist(pytester, run_pytest):
    write_suite(pytester, SUITE)
    serial = run_suite(run_pytest, pytester)
    parallel = run_suite(run_pytest, pytester, "-n", "2")
    assert len(serial.cases) == 14
    assert parallel.outcomes() == serial.outcomes()
    assert serial.ids("failed") == [f"paddle_suite.yaml::strict_cnn[1x3x32x32-{DIFFERING_MODE}]"]
    figures = lambda props: {k: v for k, v in props.items() if k != "paddle_duration"}
    for key, case in serial.cases.items():
        assert figures(parallel.cases[key].properties) == figures(case.properties), key
    assert summary_figures(parallel.text) == summary_figures(serial.text)
    assert len(summary_figures(serial.text)) == 14


def test_cases_carry_their_model_as_xdist_group(pytester, run_pytest):
    write_suite(pytester, SUITE)
    pytester.makeconftest("""
        def pytest_collection_finish(session):
            for item in session.items:
                print("GROUP", item.nodeid, *item.get_closest_marker("xdist_group").args)
    """)
    result = run_pytest("--collect-only", "-q", "-s")
    groups = re.findall(r"GROUP paddle_suite\.yaml::(\w+)\[\S+ (\w+)", result.stdout.str())
    assert len(groups) == 14 and all(model == group for model, group in groups)


TWO_MODELS = """
    defaults:
      run_modes: [cpu_fp32, onednn_fp32]
    models:
      tiny_cnn:
        shapes: [[1, 3, 32, 32], [2, 3, 32, 32]]
      tiny_detector:
        shapes: [{image: [1, 3, 64, 64]}, {image: [2, 3, 64, 64]}]
"""

PLAIN_TESTS = """
import time

import pytest

@pytest.mark.parametrize("n", range(8))
def test_plain(n):
    time.sleep(0.3)
"""


def workers_by_test(text: str):
    """Test id -> the worker that ran it, from -v lines such as
    "[gw1] [ 25%] PASSED paddle_suite.yaml::tiny_cnn[1x3x32x32-cpu_fp32]"."""
    return {m.group(2): m.group(1)
            for m in re.finditer(r"\[(gw\d+)\] \[\s*\d+%\] (?:PASSED|FAILED|ERROR|SKIPPED) (\S+)", text)}


def run_two_models(pytester, run_pytest, paddle_cache, *args):
    """The two-model suite and eight plain 0.3 s tests under -n 2 -v, with a cache of its own:
    no other test's timings reach the scheduler, which then keeps every model whole. The
    models exported in the shared cache are copied in (not exported again), where there."""
    write_suite(pytester, TWO_MODELS)
    pytester.makepyfile(test_plain=PLAIN_TESTS)
    cache = pytester.path / "cache"
    for entry in (Path(paddle_cache) / "models").glob("tiny_*-*-default"):
        if entry.is_dir() and entry.name.split("-")[0] in ("tiny_cnn", "tiny_detector"):
            shutil.copytree(entry, cache / "models" / entry.name)
    run = run_suite(run_pytest, pytester, "-n", "2", "-v", f"--paddle-cache-dir={cache}", *args)
    return run, workers_by_test(run.text), cache


def test_each_model_runs_on_one_worker_and_other_tests_spread(pytester, run_pytest, paddle_cache):
    run, workers, cache = run_two_models(pytester, run_pytest, paddle_cache)
    assert run.result.ret == 0, run.text
    assert "scheduling tests via ModelGroupScheduling" in run.text
    by_model = defaultdict(set)
    for test, worker in workers.items():
        if test.startswith("paddle_suite.yaml::"):
            by_model[test.split("::")[1].split("[")[0]].add(worker)
    assert {m: len(w) for m, w in by_model.items()} == {"tiny_cnn": 1, "tiny_detector": 1}, workers
    assert by_model["tiny_cnn"] != by_model["tiny_detector"], workers  # one model per worker
    plain = {w for t, w in workers.items() if t.startswith("test_plain.py::")}
    assert len([t for t in workers if t.startswith("test_plain.py::")]) == 8
    assert plain == {"gw0", "gw1"}, workers
    # what the next run plans with: seconds per case, by model and run mode
    history = json.loads((cache / "xdist-seconds.json").read_text())
    assert sorted(history) == ["zoo:tiny_cnn", "zoo:tiny_detector"]
    assert sorted(history["zoo:tiny_cnn"]) == [SETUP, "cpu_fp32", "onednn_fp32"]  # its setup: beyond a case
    assert all(s > 0 for modes in history.values() for m, s in modes.items() if m != SETUP), history
    assert all(modes.get(SETUP, 0) >= 0 for modes in history.values()), history


def test_opt_out_gives_xdist_load(pytester, run_pytest, paddle_cache):
    run, workers, cache = run_two_models(pytester, run_pytest, paddle_cache, "-p", "no:paddle_infer_xdist")
    assert run.result.ret == 0, run.text
    assert "scheduling tests via LoadScheduling" in run.text
    assert len(workers) == 16
    assert not (cache / "xdist-seconds.json").exists()


def test_without_cases_tests_spread_as_with_load(pytester, run_pytest):
    pytester.makepyfile(test_plain=PLAIN_TESTS)
    result = run_pytest("-n", "2", "-v")
    assert result.ret == 0
    assert "scheduling tests via ModelGroupScheduling" in result.stdout.str()
    assert set(workers_by_test(result.stdout.str()).values()) == {"gw0", "gw1"}
