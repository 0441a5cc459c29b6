"""--paddle-baseline=dygraph and the dy2static export check, end to end with real Paddle: the
exported model's predictor against the nn.Layer it was exported from."""
import re
import textwrap

import pytest

from helpers import exported_tiny_cnn, run_suite, summary_rows, write_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

NETS = '''
import os

import paddle
import paddle.nn as nn


class EagerOnlyShift(nn.Layer):
    """Adds 0.5 to its logits only when run eagerly: paddle.jit.to_static traces the other
    branch, so the exported program differs from the layer in one output."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        logits = self.fc(x)
        scores = nn.functional.softmax(logits, axis=-1)
        if paddle.in_dynamic_mode():
            logits = logits + 0.5
        return {"scores": scores, "logits": logits}  # not in sorted order on purpose


class Nested(nn.Layer):
    """Outputs nested in a tuple, a list with a None, and a dict."""

    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(8, width)

    def forward(self, x):
        y = self.fc(x)
        return y * 2, [None, y - 1], {"b": y.sum(axis=-1), "a": nn.functional.relu(y)}


class TwoWayReturn(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = self.fc(x)
        if y.mean() > 0:
            return y
        return y, y


def eager_only_shift():
    return EagerOnlyShift()


def nested(width=4):
    return Nested(width)


def two_way_return():
    return TwoWayReturn()


def unseeded():
    paddle.seed(int.from_bytes(os.urandom(4), "little"))  # new weights on every call
    return nn.Linear(8, 4)
'''


def write_nets(pytester):
    (pytester.path / "nets.py").write_text(NETS)


def test_every_output_is_paired_and_the_differing_one_is_named(pytester, run_pytest, xdist_mode):
    write_nets(pytester)
    write_suite(pytester, """
        defaults:
          baseline: dygraph
          run_modes: [{mode: cpu_fp32, ir_optim: false}, onednn_fp32]
        models:
          tiny_detector:
            shapes: [{image: [2, 3, 64, 64]}]
          nested:
            source: nets:nested
            kwargs: {width: 6}
            inputs: {x: {shape: [-1, 8]}}
          shifted:
            source: nets:eager_only_shift
            inputs: {x: {shape: [-1, 8]}}
    """)
    run = run_suite(run_pytest, pytester, *xdist_mode)
    assert run.outcomes() == {
        "paddle_suite.yaml::tiny_detector[2x3x64x64-cpu_fp32+no_ir_optim]": "passed",
        "paddle_suite.yaml::tiny_detector[2x3x64x64-onednn_fp32]": "passed",
        "paddle_suite.yaml::nested[1x8-cpu_fp32+no_ir_optim]": "passed",
        "paddle_suite.yaml::nested[1x8-onednn_fp32]": "passed",
        "paddle_suite.yaml::shifted[1x8-cpu_fp32+no_ir_optim]": "failed",
        "paddle_suite.yaml::shifted[1x8-onednn_fp32]": "failed",
    }
    # four tensors survive flattening (the None is dropped): 6 + 6 + 1 + 6 values, all compared
    assert run.cases["paddle_suite.yaml::nested[1x8-onednn_fp32]"].properties["paddle_mismatched"] == "0/19"
    message = run.cases["paddle_suite.yaml::shifted[1x8-cpu_fp32+no_ir_optim]"].message
    # dict keys pair in sorted order (logits first), as paddle.jit.save flattens them; the
    # predictor's own names are fetch_name_0... (PIR) or the fetched variables' (legacy)
    assert re.search(r"1 of 2 outputs outside tolerance; first: \S+ \(out\.logits\)", message)
    assert "dygraph: nets:eager_only_shift() in eval mode on cpu; outputs out.logits, out.scores" in message
    row = next(line for line in message.splitlines() if re.match(r"\S+ \(out\.logits\) ", line))
    assert "4/4" in row and "0.5" in row  # exactly the eager-only shift
    scores = next(line for line in message.splitlines() if re.match(r"\S+ \(out\.scores\) ", line))
    assert scores.rstrip().endswith("ok")


def test_export_and_baseline_problems_are_that_cases_error(pytester, run_pytest, xdist_mode, paddle_cache):
    write_nets(pytester)
    model_dir = exported_tiny_cnn(paddle_cache)
    write_suite(pytester, f"""
        defaults:
          baseline: dygraph
          run_modes: [cpu_fp32]
        models:
          broken:
            source: nets:two_way_return
            inputs: {{x: {{shape: [-1, 8]}}}}
          unseeded:
            source: nets:unseeded
            inputs: {{x: {{shape: [-1, 8]}}}}
          on_disk:
            source: {model_dir}
          tiny_cnn: {{}}
    """)
    run = run_suite(run_pytest, pytester, *xdist_mode)
    outcomes = run.outcomes()
    assert outcomes.pop("paddle_suite.yaml::tiny_cnn[1x3x32x32-cpu_fp32]") == "passed"
    assert set(outcomes.values()) == {"error"}
    broken = run.cases["paddle_suite.yaml::broken[1x8-cpu_fp32]"].message
    assert "exporting model 'broken' (paddle.jit.to_static, paddle.jit.save) failed" in broken
    line = NETS.splitlines().index("        if y.mean() > 0:") + 1
    assert "In transformed code" in broken and f'nets.py", line {line}, in forward' in broken
    assert "if y.mean() > 0:" in broken and "<--- HERE" in broken
    unseeded = run.cases["paddle_suite.yaml::unseeded[1x8-cpu_fp32]"].message
    assert "gave other weights in this process than when the model was exported" in unseeded
    on_disk = run.cases["paddle_suite.yaml::on_disk[1x3x32x32-cpu_fp32]"].message
    assert "baseline dygraph needs the nn.Layer" in on_disk and "--paddle-baseline=static" in on_disk
    assert "Traceback" not in run.text


def test_dygraph_layer_fixture_matches_the_exported_model(pytester, run_pytest, xdist_mode):
    write_nets(pytester)
    pytester.makepyfile(test_user=textwrap.dedent('''
        import numpy as np
        import paddle
        from pytest_paddle_infer import assert_tensors_close


        def test_zoo_layer(paddle_dygraph_layer, paddle_baseline_predictor, paddle_inputs):
            layer = paddle_dygraph_layer("tiny_detector")
            assert not layer.training
            inputs = paddle_inputs("tiny_detector")
            boxes, scores = layer(*[paddle.to_tensor(inputs[n]) for n in ("im_shape", "image", "scale_factor")])
            want_boxes, want_scores = paddle_baseline_predictor("tiny_detector").run(inputs).values()
            assert_tensors_close(boxes.numpy(), want_boxes, atol=1e-5, rtol=1e-5)
            assert_tensors_close(scores.numpy(), want_scores, atol=1e-5, rtol=1e-5)


        def test_builder_layer_is_the_same_every_time(paddle_dygraph_layer):
            a, b = paddle_dygraph_layer("nets:nested", width=3), paddle_dygraph_layer("nets:nested", width=3)
            assert a.fc.weight.shape == [8, 3]
            assert np.array_equal(a.fc.weight.numpy(), b.fc.weight.numpy())


        def test_unknown_name_is_a_clear_error(paddle_dygraph_layer):
            import pytest
            with pytest.raises(Exception, match="neither a zoo name .* nor a builder"):
                paddle_dygraph_layer("no_such_model")
    '''))
    result = run_pytest("-p", "pytester", *xdist_mode)  # nets.py beside the test: importable
    result.assert_outcomes(passed=3)


@pytest.mark.resnet50
def test_resnet50_onednn_against_dygraph(run_pytest, xdist_mode):
    result = run_pytest("--paddle-model=resnet50", "--run-mode=onednn_fp32", "--paddle-baseline=dygraph",
                        *xdist_mode)
    result.assert_outcomes(passed=1)
    status, max_abs, _, mismatched = summary_rows(result)[("resnet50", "1x3x224x224", "onednn_fp32")]
    assert status == "passed" and mismatched == "0/1000" and 0 < float(max_abs) < 1e-3
