"""End to end: tightening one output's tolerance fails exactly the cases that have that output,
and in each of them only that output."""
import pytest

from helpers import run_suite, write_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

# Against the dygraph baseline, the scores of the exported program differ from the layer's
# by 1e-5 on every CPU (paddle.jit.to_static traces the branch that is not eager); its boxes
# and tiny_cnn's logits differ by no more than fp32 rounding, if at all.
NETS = '''
import paddle
import paddle.nn as nn


class TwoHeads(nn.Layer):
    def __init__(self):
        super().__init__()
        self.features = nn.Linear(8, 16)
        self.boxes = nn.Linear(16, 4)
        self.scores = nn.Linear(16, 3)

    def forward(self, x):
        feat = nn.functional.relu(self.features(x))
        scores = nn.functional.softmax(self.scores(feat), axis=-1)
        if paddle.in_dynamic_mode():
            scores = scores + 1e-5
        return self.boxes(feat), scores


def two_heads():
    paddle.seed(11)
    return TwoHeads()
'''

SUITE = """
    defaults:
      baseline: dygraph
      run_modes: [cpu_fp32]
    models:
      tiny_cnn:
        shapes: [[1, 3, 32, 32], [2, 3, 32, 32]]
      two_heads:
        source: heads:two_heads
        inputs: {x: {shape: [-1, 8]}}
        shapes: [[1, 8], [2, 8]]
"""
TIGHTENED = SUITE + """
        tolerances:
          outputs:
            "#1": {atol: 1e-9, rtol: 0}   # the second output: the scores
"""


def test_tightening_one_output_fails_exactly_its_cases(pytester, run_pytest, xdist_mode):
    pytester.makepyfile(heads=NETS)
    write_suite(pytester, SUITE)
    before = run_suite(run_pytest, pytester, *xdist_mode)
    assert set(before.outcomes().values()) == {"passed"} and len(before.cases) == 4, before.text

    write_suite(pytester, TIGHTENED)
    after = run_suite(run_pytest, pytester, *xdist_mode)
    assert after.ids("failed") == ["paddle_suite.yaml::two_heads[1x8-cpu_fp32]",
                                   "paddle_suite.yaml::two_heads[2x8-cpu_fp32]"]
    assert after.ids("passed") == ["paddle_suite.yaml::tiny_cnn[1x3x32x32-cpu_fp32]",
                                   "paddle_suite.yaml::tiny_cnn[2x3x32x32-cpu_fp32]"]
    for key in after.ids("failed"):
        message = after.cases[key].message
        assert "1 of 2 outputs outside tolerance; first: " in message
        # the table's rows, in output order (names differ between PIR and legacy programs)
        rows = [line for line in message.splitlines() if "  match, [" in line]
        assert len(rows) == 2 and rows[0].endswith(" ok")
        assert "FAIL:" in rows[1] and "atol=1e-09 rtol=0" in rows[1]
