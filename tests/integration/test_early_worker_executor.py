"""Under xdist, each worker starts its executor child at its plugin import when the
controller's command line shows cases (execute/early_start.py): the worker's suite collection
adopts that child, and a worker that ends up with no case (here -k deselects every case)
kills it. Either way nothing is left behind: no executor process, no log file.

Subprocess sessions (the controller decides from its own argv); a conftest in the session's
directory records, in each worker, the early child's pid at conftest import (before
pytest_configure) and, at the session's end, whether the executor adopted it and which
executor processes the worker has."""
import glob
import json
import os
import shutil
import sys
import tempfile
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
    from pytest_paddle_infer.execute import executor as ex

    EARLY = ex._EARLY[-1][1].pid if ex._EARLY else None  # conftests load before pytest_configure


    def executor_children():
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                cmdline = (stat.parent / "cmdline").read_bytes()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and b"pytest_paddle_infer.execute.executor" in cmdline:
                found.append(int(stat.parent.name))
        return found


    def pytest_sessionfinish(session):
        worker = getattr(session.config, "workerinput", {}).get("workerid")
        if worker is None:  # the controller (PYTEST_XDIST_WORKER may be an outer session's)
            return
        path = session.config.stash.get(plugin.CASE_PATH, None)
        executor = getattr(path, "executor", None)
        proc = getattr(executor, "proc", None)
        Path(f"probe-{worker}.json").write_text(json.dumps({
            "pid": os.getpid(), "early": EARLY, "adopted": getattr(executor, "adopted_early", False),
            "executor": proc.pid if proc is not None else None, "children": executor_children(),
            # asked beside (fork_server.LaterChild), forked by the server
            "forked": type(getattr(proc, "child", lambda: proc)()).__name__ == "ForkedChild"}))
"""


def executor_running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    # a worker's child is forked from the controller's fork server on Linux (fork_server.py)
    return b"pytest_paddle_infer.execute." in cmdline and state != "Z"


def assert_nothing_left(probes, tmp, cache):
    pids = {p for probe in probes for p in [probe["early"], probe["executor"], *probe["children"]] if p}
    deadline = time.monotonic() + 30  # a closed child's exit is not waited for: give it time
    while any(executor_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in pids if executor_running(p)], "executor processes left running"
    assert not glob.glob(os.path.join(tmp, "paddle-infer-executor-*.log"))  # early logs
    assert not glob.glob(os.path.join(tmp, "paddle-infer-fork-*"))  # the fork server's address
    for probe in probes:  # the early log, moved into the cache, removed after a clean close
        assert not glob.glob(str(cache / "executor" / f"executor-{probe['pid']}-*.log"))


@pytest.fixture
def private_tmp(monkeypatch):
    """The session's temp dir, where the early children's logs land, and only theirs (short:
    the executor's socket lives there too)."""
    tmp = tempfile.mkdtemp(prefix="pi-early-")
    monkeypatch.setenv("TMPDIR", tmp)
    yield tmp
    shutil.rmtree(tmp, ignore_errors=True)


def run_workers(pytester, tmp, paddle_cache, *args):
    write_suite(pytester, SUITE)
    pytester.makeconftest(PROBE)
    result = pytester.runpytest_subprocess("paddle_suite.yaml", "-n", "2", "-p", "no:cacheprovider",
                                           f"--paddle-cache-dir={paddle_cache}", *args)
    probes = [json.loads(p.read_text()) for p in sorted(pytester.path.glob("probe-gw*.json"))]
    assert len(probes) == 2, result.stdout.str()
    return result, probes


def test_workers_adopt_their_early_executors(pytester, private_tmp, paddle_cache):
    result, probes = run_workers(pytester, private_tmp, paddle_cache)
    result.assert_outcomes(passed=2)
    for probe in probes:
        assert probe["early"], "the worker's executor did not start before pytest_configure"
        assert probe["adopted"] and probe["executor"] == probe["early"]
        # no second child was started; on Linux the one it has was forked by the fork server
        assert probe["forked"] == sys.platform.startswith("linux")
        assert probe["children"] == ([] if probe["forked"] else [probe["early"]])
    assert_nothing_left(probes, private_tmp, paddle_cache)


def test_workers_without_cases_kill_their_early_executors(pytester, private_tmp, paddle_cache):
    result, probes = run_workers(pytester, private_tmp, paddle_cache, "-k", "no_such_case")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    for probe in probes:
        assert probe["early"], "the worker's executor did not start before pytest_configure"
        assert probe["executor"] is None and probe["children"] == []  # stopped at collection's end
    assert_nothing_left(probes, private_tmp, paddle_cache)
