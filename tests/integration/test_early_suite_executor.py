"""A plain session whose command line names a suite starts its executor child at plugin
import, as a --paddle-model session does (execute/early_start.py): the suite's collection
adopts it; a session that collects no case from it (-k deselects every case) kills it.
Nothing is left behind either way. Subprocess sessions: the decision reads the process's argv."""
import json

import pytest

from helpers import write_suite
from .test_early_worker_executor import PROBE, SUITE, assert_nothing_left, private_tmp  # noqa: F401

from .test_early_worker_executor import pytestmark  # noqa: F401,E402  (reads /proc)

# the workers' probe, for the one process of a plain session
PLAIN_PROBE = PROBE.replace('''        worker = getattr(session.config, "workerinput", {}).get("workerid")
        if worker is None:  # the controller (PYTEST_XDIST_WORKER may be an outer session's)
            return''', '''        worker = "plain"''')


def run_plain(pytester, paddle_cache, *args):
    assert PLAIN_PROBE != PROBE
    write_suite(pytester, SUITE)
    pytester.makeconftest(PLAIN_PROBE)
    result = pytester.runpytest_subprocess("paddle_suite.yaml", "-p", "no:cacheprovider",
                                           f"--paddle-cache-dir={paddle_cache}", *args)
    return result, json.loads((pytester.path / "probe-plain.json").read_text())


def test_a_suite_session_adopts_its_early_executor(pytester, private_tmp, paddle_cache):
    result, probe = run_plain(pytester, paddle_cache)
    result.assert_outcomes(passed=2)
    assert probe["early"], "the executor did not start before pytest_configure"
    assert probe["adopted"] and probe["executor"] == probe["early"]
    assert probe["children"] == [probe["early"]]  # no second child was started
    assert_nothing_left([probe], private_tmp, paddle_cache)


def test_a_suite_session_without_cases_kills_its_early_executor(pytester, private_tmp, paddle_cache):
    result, probe = run_plain(pytester, paddle_cache, "-k", "no_such_case")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert probe["early"], "the executor did not start before pytest_configure"
    assert probe["executor"] is None and probe["children"] == []  # stopped at collection's end
    assert_nothing_left([probe], private_tmp, paddle_cache)
