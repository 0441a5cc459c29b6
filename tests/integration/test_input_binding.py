"""Builder inputs bind to forward's parameters by name, whatever order a suite lists them in
(issue 12, item 1); defaults.inputs go to the builders whose forward takes them, and an input
forward does not use is named in the export's error (item 5)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import run_suite, write_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

# Both inputs are [N, 2] float32 and used asymmetrically: swapping them changes every box.
DET = '''
import paddle
import paddle.nn as nn


class Det(nn.Layer):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(2, 2)

    def forward(self, im_shape, scale_factor):
        boxes = paddle.nn.functional.sigmoid(self.head(scale_factor)) * 100.0 * scale_factor
        return paddle.minimum(boxes, im_shape)


class TwoIn(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x, y):
        return self.fc(x)  # y is taken but not used


def build_det():
    paddle.seed(3)
    return Det()


def build_two_in():
    paddle.seed(3)
    return TwoIn()


def build_mlp():
    paddle.seed(3)
    return nn.Sequential(nn.Linear(4, 3))
'''

# the suite lists scale_factor first; forward takes im_shape first
SWAPPED = """
    defaults:
      baseline: dygraph
    models:
      det:
        source: det_nets:build_det
        inputs:
          scale_factor: {shape: [-1, 2], range: [0.5, 2.0]}
          im_shape: {shape: [-1, 2], range: [32.0, 64.0]}
        shapes: [{scale_factor: [2, 2]}]
        run_modes: [cpu_fp32, onednn_fp32]
"""

# What the test checks with Paddle directly, no plugin code past the export: the exported
# program fed by name gives what the layer gives when called with keywords; fed the other
# way round it does not (a wrong binding is visible).
CHECK = r'''
import json, sys
from pathlib import Path
import numpy as np
import paddle
from paddle import inference
from pytest_paddle_infer.cases.suite import Context, load_suite
from pytest_paddle_infer.models.cache import resolve

here, cache = Path(sys.argv[1]), Path(sys.argv[2])
source = load_suite(here / "paddle_suite.yaml", Context("paddle_suite.yaml", here, here, cache))[0].case.model
files = resolve(source, cache)
sys.path.insert(0, str(here))
import det_nets
paddle.seed(3)
layer = det_nets.build_det()
layer.eval()
im_shape = np.array([[40.0, 50.0], [60.0, 33.0]], "float32")
scale_factor = np.array([[0.5, 1.5], [2.0, 1.0]], "float32")
expected = layer(im_shape=paddle.to_tensor(im_shape), scale_factor=paddle.to_tensor(scale_factor)).numpy()
predictor = inference.create_predictor(inference.Config(files.prog_file, files.params_file))

def run(feed):
    for name, array in feed.items():
        predictor.get_input_handle(name).copy_from_cpu(array)
    predictor.run()
    return predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()

by_name = run({"im_shape": im_shape, "scale_factor": scale_factor})
swapped = run({"im_shape": scale_factor, "scale_factor": im_shape})
print(json.dumps({"inputs": sorted(predictor.get_input_names()),
                  "by_name": float(np.abs(by_name - expected).max()),
                  "swapped": float(np.abs(swapped - expected).max())}))
'''


def test_inputs_listed_out_of_forward_order_bind_by_name(pytester, run_pytest, xdist_mode, paddle_cache):
    (pytester.path / "det_nets.py").write_text(DET)
    write_suite(pytester, SWAPPED)
    run = run_suite(run_pytest, pytester, *xdist_mode)
    assert run.outcomes() == {f"paddle_suite.yaml::det[2x2-{m}]": "passed" for m in ("cpu_fp32", "onednn_fp32")}, run.text
    out = subprocess.run([sys.executable, "-c", CHECK, str(pytester.path), str(paddle_cache)],
                         capture_output=True, text=True, cwd=pytester.path)
    assert out.returncode == 0, out.stderr[-3000:]
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["inputs"] == ["im_shape", "scale_factor"]
    assert figures["by_name"] <= 1e-5, figures  # the program fed by name == forward(**inputs)
    assert figures["swapped"] > 1.0, figures  # and the wrong binding would show


def test_an_input_forward_does_not_take_is_a_collection_error(pytester, run_pytest):
    (pytester.path / "det_nets.py").write_text(DET)
    write_suite(pytester, """
        models:
          det:
            source: det_nets:build_det
            inputs:
              scale: {shape: [-1, 2]}
              im_shape: {shape: [-1, 2]}
            run_modes: [cpu_fp32]
    """)
    run = run_suite(run_pytest, pytester)
    text = run.text
    assert "paddle_suite.yaml:5: models.det.inputs.scale: model 'det': input 'scale' is not a parameter of Det.forward" in text, text
    assert "expected: inputs named after forward's parameters: im_shape, scale_factor " \
           "(Det.forward(self, im_shape, scale_factor))" in text
    assert "found:    inputs scale, im_shape" in text
    assert "fix:      did you mean 'scale_factor'?" in text
    assert "Traceback" not in text


def test_a_forward_parameter_without_input_or_default_is_a_collection_error(pytester, run_pytest):
    (pytester.path / "det_nets.py").write_text(DET)
    write_suite(pytester, """
        models:
          det:
            source: det_nets:build_det
            inputs:
              im_shape: {shape: [-1, 2]}
            run_modes: [cpu_fp32]
    """)
    text = run_suite(run_pytest, pytester).text
    assert "paddle_suite.yaml:4: models.det.inputs: model 'det': Det.forward's parameter " \
           "'scale_factor' has no input and no default" in text, text
    assert "found:    inputs im_shape" in text
    assert "fix:      declare an input 'scale_factor' (shape and dtype)" in text


def test_defaults_inputs_go_to_the_builders_whose_forward_takes_them(pytester, run_pytest, xdist_mode):
    """det's inputs, written once under defaults, do not reach the Sequential beside it,
    whose forward takes neither (given to it, its export would fail)."""
    (pytester.path / "det_nets.py").write_text(DET)
    write_suite(pytester, """
        defaults:
          run_modes: [cpu_fp32]
          inputs:
            im_shape: {shape: [-1, 2], range: [32.0, 64.0]}
            scale_factor: {shape: [-1, 2], range: [0.5, 2.0]}
        models:
          det: {source: 'det_nets:build_det'}
          mlp:
            source: det_nets:build_mlp
            inputs: {x: {shape: [-1, 4]}}
    """)
    run = run_suite(run_pytest, pytester, *xdist_mode)
    assert run.outcomes() == {"paddle_suite.yaml::det[1x2-cpu_fp32]": "passed",
                              "paddle_suite.yaml::mlp[1x4-cpu_fp32]": "passed"}, run.text


def test_an_input_forward_does_not_use_is_named(pytester, run_pytest):
    (pytester.path / "det_nets.py").write_text(DET)
    write_suite(pytester, """
        models:
          two_in:
            source: det_nets:build_two_in
            inputs: {x: {shape: [-1, 4]}, y: {shape: [-1, 4]}}
            run_modes: [cpu_fp32]
    """)
    run = run_suite(run_pytest, pytester)
    assert run.outcomes() == {"paddle_suite.yaml::two_in[1x4-cpu_fp32]": "error"}, run.text
    message = run.cases["paddle_suite.yaml::two_in[1x4-cpu_fp32]"].message + run.text
    assert "input 'y' is not used by TwoIn.forward: no output depends on it" in message, message
    assert "the inputs: x, y" in message
