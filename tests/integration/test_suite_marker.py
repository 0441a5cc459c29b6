"""End to end: @pytest.mark.paddle_case declares a suite's cases from Python, the paddle_case
fixture runs them, and paddle_tolerance sits between the command line and the case's own."""
import pytest

from helpers import DIFFERING_MODE, run_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

DETECTOR_TEST = """
import pytest

@pytest.mark.paddle_case(
    model="tiny_detector",
    shapes=[{"image": [2, 3, 64, 64]}],
    run_modes=["cpu_fp32", {"mode": "onednn_fp32",
                            "tolerances": {"atol": 0.05, "outputs": {"#0": {"atol": 1.0}}}}],
    inputs={"scale_factor": {"values": [1.0]}},
    atol=1e-4,
)
def test_detector(paddle_case):
    assert paddle_case.inputs["im_shape"].shape == (2, 2)   # took the image's batch
    assert (paddle_case.inputs["scale_factor"] == 1.0).all()
    result = paddle_case.check()
    # the "#0" rule (the first output, by position) holds under onednn_fp32 only
    onednn = paddle_case.case.run_mode.mode == "onednn_fp32"
    assert [row.atol for row in result.rows] == ([1.0, 0.05] if onednn else [1e-4, 1e-4])
"""


def test_marker_parametrizes_the_test_over_its_cases(pytester, run_pytest, xdist_mode):
    pytester.makepyfile(test_marked=DETECTOR_TEST)
    run = run_suite(run_pytest, pytester, *xdist_mode)
    assert run.outcomes() == {
        "test_marked::test_detector[tiny_detector-2x3x64x64-cpu_fp32]": "passed",
        "test_marked::test_detector[tiny_detector-2x3x64x64-onednn_fp32]": "passed",
    }
    props = run.cases["test_marked::test_detector[tiny_detector-2x3x64x64-onednn_fp32]"].properties
    assert props["paddle_model"] == "tiny_detector" and props["paddle_mismatched"] == "0/40"


# DIFFERING_MODE differs from the baseline on every CPU: it fails at zero, passes at 1
TOLERANCE_TEST = f"""
import pytest

@pytest.mark.paddle_tolerance(atol=0, rtol=0)
@pytest.mark.paddle_case(model="tiny_cnn", run_modes=["{DIFFERING_MODE}"], atol=1.0)
def test_tight(paddle_case):
    paddle_case.check()
"""


def test_tolerance_marker_beats_the_case_and_loses_to_the_command_line(pytester, run_pytest, xdist_mode):
    pytester.makepyfile(test_tol=TOLERANCE_TEST)
    marked = run_suite(run_pytest, pytester, *xdist_mode)
    key = f"test_tol::test_tight[tiny_cnn-1x3x32x32-{DIFFERING_MODE}]"
    assert marked.outcomes() == {key: "failed"}
    assert "elements outside atol=0 rtol=0" in marked.cases[key].message
    overridden = run_suite(run_pytest, pytester, "--paddle-atol=1", *xdist_mode)
    assert overridden.outcomes() == {key: "passed"}


def test_tolerance_marker_arguments_are_checked(pytester, run_pytest, xdist_mode):
    pytester.makepyfile(test_typo=TOLERANCE_TEST.replace("atol=0, rtol=0", "atl=0"))
    run = run_suite(run_pytest, pytester, *xdist_mode)
    assert run.outcomes() == {f"test_typo::test_tight[tiny_cnn-1x3x32x32-{DIFFERING_MODE}]": "error"}
    run.result.stdout.fnmatch_lines([
        "*test_typo.py:3: paddle_tolerance: unknown key 'atl' in paddle_tolerance",
        "  expected: one of atol, rtol, cosine_min, sqnr_min, rel_l2_max, p99_abs_max",
        "  found:    'atl'",
        "  fix:      did you mean 'atol'?",
    ], consecutive=True)


def test_marker_mistakes_are_collection_errors(pytester, run_pytest, xdist_mode):
    pytester.makepyfile(test_bad_shape="""
        import pytest

        @pytest.mark.paddle_case(model="tiny_cnn", shapes=[[2, 3, 32]], run_modes=["cpu_fp32"])
        def test_rank(paddle_case):
            pass
    """, test_no_fixture="""
        import pytest

        @pytest.mark.paddle_case(model="tiny_cnn", run_modes=["cpu_fp32"])
        def test_forgot():
            pass
    """)
    run = run_suite(run_pytest, pytester, *xdist_mode)
    run.result.stdout.fnmatch_lines([
        "test_bad_shape.py:3: paddle_case.shapes[[]0[]]: shape of input 'x' has rank 3, but 'tiny_cnn' declares rank 4",
    ])
    run.result.stdout.fnmatch_lines([
        "test_no_fixture.py:3: test_forgot is marked paddle_case but does not take the paddle_case fixture; "
        "fix: def test_forgot(paddle_case): paddle_case.check()",
    ])
    assert "Traceback" not in run.text


def test_fixture_without_the_marker_says_what_is_missing(pytester, run_pytest, xdist_mode):
    pytester.makepyfile(test_unmarked="def test_x(paddle_case):\n    pass\n")
    run = run_suite(run_pytest, pytester, *xdist_mode)
    assert run.outcomes() == {"test_unmarked::test_x": "error"}
    assert "the paddle_case fixture needs @pytest.mark.paddle_case(model=..., run_modes=[...])" in run.text


def test_run_mode_option_narrows_marked_tests(pytester, run_pytest, xdist_mode):
    pytester.makepyfile(test_marked=DETECTOR_TEST, test_plain="def test_plain():\n    pass\n")
    run = run_suite(run_pytest, pytester, "--run-mode=onednn_fp32", *xdist_mode)
    assert run.outcomes() == {"test_marked::test_detector[tiny_detector-2x3x64x64-onednn_fp32]": "passed",
                              "test_plain::test_plain": "passed"}
