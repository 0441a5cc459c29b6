"""End to end, through the paddle_case marker: tiny_cnn under a mode that differs from the
baseline on every CPU (helpers.DIFFERING_MODE), at zero tolerance, fails element by element,
while its top-3 classes and arg-max agree with the baseline; the task figures reach JUnit and
the terminal."""
import pytest

from helpers import DIFFERING_MODE, run_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

TEST = '''
import pytest

ZERO = dict(model="tiny_cnn", run_modes=["%s"], atol=0, rtol=0)


@pytest.mark.paddle_case(**ZERO)
def test_elementwise(paddle_case):
    paddle_case.check()


@pytest.mark.paddle_case(**ZERO, tolerances={"outputs": {"#0": {"compare": {"topk": 3}}}})
def test_top3(paddle_case):
    paddle_case.check()


# fp32 rounding differences leave the cosine within 1e-13 of 1; their relative L2 (about
# 2e-7) is what a bound beside the arg-max can catch
@pytest.mark.paddle_case(**ZERO, tolerances={"outputs": {"#0": {"compare": "argmax", "rel_l2_max": 1e-9}}})
def test_argmax_and_rel_l2(paddle_case):
    paddle_case.check()
''' % DIFFERING_MODE


def test_rank_comparisons_decide_where_set(pytester, run_pytest, xdist_mode):
    pytester.makepyfile(test_ranks=TEST)
    run = run_suite(run_pytest, pytester, *xdist_mode)
    key = lambda name: f"test_ranks::{name}[tiny_cnn-1x3x32x32-{DIFFERING_MODE}]"
    assert run.outcomes() == {key("test_elementwise"): "failed", key("test_top3"): "passed",
                              key("test_argmax_and_rel_l2"): "failed"}
    assert "would pass with atol >= " in run.cases[key("test_elementwise")].message
    top3 = run.cases[key("test_top3")].properties["paddle_task"]
    assert top3.startswith("fetch_name_0: top-3 along axis -1 (min_agreement 1): top-3 set agrees on 1/1 samples")
    assert "paddle-infer task comparisons" in run.text and "]: fetch_name_0: top-3 along axis -1" in run.text
    # the arg-max agrees, but a bound set beside it still judges the values
    message = run.cases[key("test_argmax_and_rel_l2")].message
    assert "above rel_l2_max 1e-09" in message
    assert "argmax agrees on 1/1 samples" in message
    assert "smallest passing tolerance: fetch_name_0: none: the ranks decide" in message
