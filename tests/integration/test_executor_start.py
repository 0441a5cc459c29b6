"""A suite's collection starts the executor child (it imports paddle while pytest collects):
a session that runs cases uses that one child; one that ends up with no case (-k deselects
every case) stops it at the collection's end. Nothing is left behind either way: no executor
process, no log file. Subprocess sessions; a conftest records, at the session's end, the
executor's process and the executor children the pytest process has (from /proc)."""
import json
import sys
import time

import pytest

from helpers import write_suite

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

SUITE = """
    models:
      tiny_cnn:
        run_modes: [cpu_fp32]
      tiny_cnn_again:
        source: tiny_cnn
        run_modes: [cpu_fp32]
"""

PROBE = """
    import json, os
    from pathlib import Path

    from pytest_paddle_infer import plugin


    def executor_children():
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                cmdline = (stat.parent / "cmdline").read_bytes()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and b"pytest_paddle_infer.engine.service" in cmdline \\
                    and fields[0] != "Z":
                found.append(int(stat.parent.name))
        return found


    def pytest_sessionfinish(session):
        executor = getattr(session.config.stash.get(plugin.CASE_PATH, None), "executor", None)
        proc = getattr(executor, "proc", None)
        Path("probe.json").write_text(json.dumps({
            "pid": os.getpid(), "executor": proc.pid if proc is not None else None, "children": executor_children()}))
"""


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def run(pytester, paddle_cache, *args):
    write_suite(pytester, SUITE)
    pytester.makeconftest(PROBE)
    result = pytester.runpytest_subprocess("paddle_suite.yaml", "-p", "no:cacheprovider",
                                           f"--paddle-cache-dir={paddle_cache}", *args)
    probe = json.loads((pytester.path / "probe.json").read_text())
    pids = {p for p in [probe["executor"], *probe["children"]] if p}
    deadline = time.monotonic() + 30  # a closed child's exit is not waited for: give it time
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in pids if running(p)], "executor processes left running"
    # the log of a child closed cleanly is removed
    assert not list((paddle_cache / "executor").glob(f"executor-{probe['pid']}-*.log"))
    return result, probe


def test_a_suite_session_runs_its_cases_in_one_executor(pytester, paddle_cache):
    result, probe = run(pytester, paddle_cache)
    result.assert_outcomes(passed=2)
    assert probe["executor"] and probe["children"] == [probe["executor"]]  # no second child


def test_a_suite_session_without_cases_stops_its_executor(pytester, paddle_cache):
    result, probe = run(pytester, paddle_cache, "-k", "no_such_case")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert probe["executor"] is None and probe["children"] == []  # stopped at collection's end
