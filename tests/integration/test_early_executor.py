"""The executor started before pytest_configure (execute/early_start.py) is adopted by a
session with cases, and leaves nothing behind when the session turns out to run none: no
process, no log file. Subprocess sessions: the early start reads the process's own argv."""
import glob
import os
import shutil
import tempfile

import pytest

from helpers import summary_rows


@pytest.fixture
def private_tmp(monkeypatch):
    """The session's temp dir, where its early executor's log lands, and only its own (other
    sessions run beside it under xdist); short: the executor's socket lives there too."""
    tmp = tempfile.mkdtemp(prefix="pi-early-")
    monkeypatch.setenv("TMPDIR", tmp)
    yield tmp
    shutil.rmtree(tmp, ignore_errors=True)


def leftovers(tmp):
    return glob.glob(os.path.join(tmp, "paddle-infer-executor-*.log"))


def test_an_early_executor_runs_the_cases(pytester, private_tmp):
    result = pytester.runpytest_subprocess("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32", "-p",
                                           "no:cacheprovider", "--paddle-cache-dir=cache")
    result.assert_outcomes(passed=1)
    assert summary_rows(result)[("tiny_cnn", "1x3x32x32", "cpu_fp32")][0] == "passed"
    assert not leftovers(private_tmp)  # the log moved into the cache dir, removed after a clean close


def test_an_early_executor_of_a_usage_error_leaves_nothing(pytester, private_tmp):
    result = pytester.runpytest_subprocess("--paddle-model=tiny_cnn", "--paddle-threads=100000",
                                           "-p", "no:cacheprovider", "--paddle-cache-dir=cache")
    assert result.ret == 4
    assert not leftovers(private_tmp)
