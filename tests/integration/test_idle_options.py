"""Options that act on cases only, given to a session that has none (no --paddle-model, suite
or paddle_case test), say that they do nothing instead of passing silently."""
import pytest

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

IDLE = "no paddle-infer case was collected, so they do nothing: name models with --paddle-model NAME"


@pytest.fixture
def plain_tests(pytester):
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")


def test_case_options_without_cases_warn(run_pytest, plain_tests, xdist_mode):
    result = run_pytest("--run-mode=onednn_bf16", "--paddle-report=rep", "--paddle-localize", *xdist_mode)
    result.assert_outcomes(passed=1, warnings=1 if not xdist_mode else 2)
    text = result.stdout.str()
    assert "PaddleInferWarning: paddle-infer: --run-mode, --paddle-localize, --paddle-report given, but " \
           + IDLE in text


def test_a_plain_session_says_nothing(run_pytest, plain_tests, xdist_mode):
    result = run_pytest(*xdist_mode)
    result.assert_outcomes(passed=1)
    assert "PaddleInferWarning" not in result.stdout.str()
