"""End to end: tightening one output's tolerance fails exactly the cases that have that output,
and in each of them only that output."""
from helpers import run_suite, write_suite

SUITE = """
    defaults:
      run_modes: [onednn_bf16]
    models:
      tiny_cnn:
        shapes: [[1, 3, 32, 32], [2, 3, 32, 32]]
      tiny_detector:
        shapes: [{image: [1, 3, 64, 64]}, {image: [2, 3, 64, 64]}]
"""
TIGHTENED = SUITE + """
        tolerances:
          outputs:
            "#1": {atol: 1e-9, rtol: 0}   # the detector's second output: class scores
"""


def test_tightening_one_output_fails_exactly_its_cases(pytester, run_pytest, xdist_mode):
    write_suite(pytester, SUITE)
    before = run_suite(run_pytest, pytester, *xdist_mode)
    assert set(before.outcomes().values()) == {"passed"} and len(before.cases) == 4

    write_suite(pytester, TIGHTENED)
    after = run_suite(run_pytest, pytester, *xdist_mode)
    assert after.ids("failed") == ["paddle_suite.yaml::tiny_detector[1x3x64x64-onednn_bf16]",
                                   "paddle_suite.yaml::tiny_detector[2x3x64x64-onednn_bf16]"]
    assert after.ids("passed") == ["paddle_suite.yaml::tiny_cnn[1x3x32x32-onednn_bf16]",
                                   "paddle_suite.yaml::tiny_cnn[2x3x32x32-onednn_bf16]"]
    for key in after.ids("failed"):
        message = after.cases[key].message
        assert "1 of 2 outputs outside tolerance; first: " in message
        # the table's rows, in output order (names differ between PIR and legacy programs)
        rows = [line for line in message.splitlines() if "  match, [" in line]
        assert len(rows) == 2 and rows[0].endswith(" ok")
        assert "FAIL:" in rows[1] and "atol=1e-09 rtol=0" in rows[1]
