"""The supervised executor: a case whose Paddle work crashes or hangs errors alone, says how,
where and how to reproduce it, and every report lists it; the rest of the session runs.

The faults are injected into the executor child (``PADDLE_INFER_EXECUTOR_FAULT``): a real
signal or exit of the process that holds Paddle's predictors, at a chosen phase. Paddle's own
crashes (a oneDNN fuse pass segfaulting on a detector, 100000 CPU math threads aborting) end
the child the same way, but the ones known here are too big, or exhaust the machine's threads
for every test running beside them.
"""
import json
import shlex

import pytest

from helpers import DIFFERING_MODE, summary_rows
from pytest_paddle_infer.engine.service import FAULT_ENV

pytestmark = [pytest.mark.sessions_in_process,  # run_pytest: sessions in this process (conftest.py)
              pytest.mark.spawned_executors]  # how a spawned executor child lives and dies


def test_a_crash_costs_one_case_and_every_report_lists_it(run_pytest, pytester, monkeypatch, xdist_mode):
    monkeypatch.setenv(FAULT_ENV, "building the candidate:SIGABRT:onednn_fp32")
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32,onednn_fp32,cpu_fp32+no_ir_optim",
                        "--paddle-report=out", "--junitxml=junit.xml", *xdist_mode)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        "*tiny_cnn[[]1x3x32x32-onednn_fp32[]]: the executor process was killed by SIGABRT "
        "while building the candidate*",  # and a baseline running beside it, if one was
        "recipe: enable_mkldnn(); switch_ir_optim(True)",
        "reproduce: pytest --paddle-model=tiny_cnn --run-mode=onednn_fp32 *--paddle-report=out",
    ])
    rows = summary_rows(result)
    assert rows[("tiny_cnn", "1x3x32x32", "onednn_fp32")][0] == "crashed"
    assert rows[("tiny_cnn", "1x3x32x32", "cpu_fp32")][0] == "passed"
    cases = {c["case"]: c for c in json.loads((pytester.path / "out" / "summary.json").read_text())["cases"]}
    crashed = cases["tiny_cnn[1x3x32x32-onednn_fp32]"]
    assert crashed["status"] == "crashed" and "SIGABRT" in crashed["reason"]
    assert "tiny_cnn[1x3x32x32-onednn_fp32]" in (pytester.path / "out" / "index.html").read_text()
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="paddle_crash" value="was killed by SIGABRT while building the candidate' in junit


@pytest.mark.parametrize("fault, how", [("SIGSEGV", "was killed by SIGSEGV"),
                                        ("exit3", "exited with status 3")])
def test_a_child_that_dies_while_running_errors_its_case(run_pytest, monkeypatch, fault, how, xdist_mode):
    monkeypatch.setenv(FAULT_ENV, f"running the candidate:{fault}:onednn_fp32")
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32,onednn_fp32,cpu_fp32+no_ir_optim",
                        *xdist_mode)
    result.assert_outcomes(passed=2, errors=1)  # not a verdict on the outputs: an error, as in setup
    result.stdout.fnmatch_lines([
        f"*tiny_cnn[[]1x3x32x32-onednn_fp32[]]: the executor process {how} while running the candidate",
        "recipe: enable_mkldnn(); switch_ir_optim(True)",
    ])
    assert summary_rows(result)[("tiny_cnn", "1x3x32x32", "onednn_fp32")][0] == "crashed"


def test_a_hung_child_is_killed_at_the_timeout(run_pytest, monkeypatch, xdist_mode):
    monkeypatch.setenv(FAULT_ENV, "running the baseline:hang:tiny_detector")
    result = run_pytest("--paddle-model=tiny_detector", "--paddle-model=tiny_cnn",
                        "--run-mode=cpu_fp32", "--paddle-timeout=20", *xdist_mode)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*tiny_detector[[]*-cpu_fp32[]]: the executor process timed out after 20 s (--paddle-timeout) "
        "and was killed while running the baseline",
    ])
    statuses = {key[0]: value[0] for key, value in summary_rows(result).items()}
    assert statuses == {"tiny_detector": "timeout", "tiny_cnn": "passed"}


def test_the_repro_command_of_a_suite_case_reproduces_just_that_case(run_pytest, pytester, monkeypatch, xdist_mode):
    monkeypatch.setenv(FAULT_ENV, "building the candidate:SIGSEGV:onednn_fp32")
    pytester.makefile(".paddle.yaml", suite="""
        models:
          tiny_cnn:
            run_modes: [cpu_fp32, onednn_fp32]
    """)
    first = run_pytest(*xdist_mode)
    first.assert_outcomes(passed=1, errors=1)
    repro = next(l for l in first.outlines if l.startswith("reproduce: "))[len("reproduce: "):]
    args = shlex.split(repro)
    assert args[:2] == ["pytest", "suite.paddle.yaml::tiny_cnn[1x3x32x32-onednn_fp32]"]
    again = run_pytest(*args[1:])
    again.assert_outcomes(errors=1)
    # its baseline runs beside the candidate's build, and the message says so
    again.stdout.fnmatch_lines(["*was killed by SIGSEGV while building the candidate (the baseline "
                                "was being computed beside it)"])


def test_paddle_case_tests_report_and_localize_like_suite_cases(run_pytest, pytester, xdist_mode):
    pytester.makepyfile(test_marked=f"""
        import pytest

        @pytest.mark.paddle_case(model="tiny_cnn", run_modes=["{DIFFERING_MODE}"], atol=0, rtol=0)
        def test_differs(paddle_case):
            paddle_case.check()
    """)
    result = run_pytest("--paddle-report=out", "--paddle-localize", *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*localization: *", "*all optimizations off*"])
    cases = json.loads((pytester.path / "out" / "summary.json").read_text())["cases"]
    assert len(cases) == 1 and cases[0]["status"] == "failed"
    assert cases[0]["files"], cases[0]
    for name in cases[0]["files"]:
        assert (pytester.path / "out" / name).is_file()


def test_inline_executor_gives_the_same_figures(run_pytest, xdist_mode):
    args = ("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32,onednn_fp32,cpu_fp32+no_ir_optim", *xdist_mode)
    child = run_pytest(*args)
    inline = run_pytest(*args, "--paddle-executor=inline")
    child.assert_outcomes(passed=3)
    inline.assert_outcomes(passed=3)
    assert summary_rows(child) == summary_rows(inline)


