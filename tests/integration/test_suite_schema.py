"""End to end: each part of the suite schema, run through pytest with and without -n 2."""
import numpy as np
import pytest

from pytest_paddle_infer.modes.run_modes import RunModeSpec
from helpers import exported_tiny_cnn, run_suite, write_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

FEATURES = """
    defaults:
      seed: 3
      threads: 1
      tolerances: {atol: 1e-4, rtol: 1e-4}
      run_modes: [cpu_fp32, onednn_fp32]
    models:
      cnn:                              # a name of our own for a zoo entry
        source: tiny_cnn
        inputs:
          x: {normal: {mean: 0.5, std: 2.0}}
        shapes:
          - [1, 3, 32, 32]              # one input: a bare shape
          - {x: [3, 3, 32, 32]}         # or input name -> shape
        run_modes:
          - cpu_fp32+no_ir_optim        # the command line's spelling
          - {mode: onednn_fp32, ir_optim: false, threads: 2}
          - {mode: onednn_fp32, delete_passes: [conv2d_bn_onednn_fuse_pass]}
          - mode: onednn_fp32
            tolerances: {atol: 0.05, rtol: 0.05, cosine_min: 0.999}
      tiny_detector:                    # run modes and tolerances from defaults
        inputs:
          im_shape: {values: [48, 64]}
          image: {range: [0.0, 1.0]}
          scale_factor: {file: data/scale.npz}
        shapes: [{image: [2, 3, 64, 64]}]   # im_shape takes the batch; scale_factor the file's
      parked:
        source: tiny_cnn
        skip: "waiting for the new export"
      drifting:
        source: tiny_cnn
        run_modes:
          - {mode: onednn_fp32, tolerances: {atol: 0, rtol: 0}, xfail: "folding batch_norm is not exact"}
          - mode: cpu_fp32
            xfail: {reason: "claims a failure that does not happen", strict: true}
"""


def test_every_schema_feature_makes_its_cases(pytester, run_pytest, xdist_mode):
    (pytester.path / "data").mkdir()
    np.savez(pytester.path / "data" / "scale.npz", scale_factor=np.array([[1.0, 1.0], [0.5, 2.0]], "float32"))
    write_suite(pytester, FEATURES)
    run = run_suite(run_pytest, pytester, "-rsx", *xdist_mode)

    label = lambda mode, **toggles: RunModeSpec(mode, **toggles).label
    cnn_modes = {label("cpu_fp32", ir_optim=False): "passed",
                 label("onednn_fp32", ir_optim=False, threads=2): "passed",
                 label("onednn_fp32", delete_passes=("conv2d_bn_onednn_fuse_pass",)): "passed",
                 "onednn_fp32": "passed"}
    expected = {f"paddle_suite.yaml::cnn[{shape}-{mode}]": outcome
                for shape in ("1x3x32x32", "3x3x32x32") for mode, outcome in cnn_modes.items()}
    expected.update({
        "paddle_suite.yaml::tiny_detector[2x3x64x64-cpu_fp32]": "passed",
        "paddle_suite.yaml::tiny_detector[2x3x64x64-onednn_fp32]": "passed",
        "paddle_suite.yaml::parked[1x3x32x32-cpu_fp32]": "skipped",
        "paddle_suite.yaml::parked[1x3x32x32-onednn_fp32]": "skipped",
        "paddle_suite.yaml::drifting[1x3x32x32-onednn_fp32]": "xfailed",  # on every CPU (helpers.DIFFERING_MODE)
        "paddle_suite.yaml::drifting[1x3x32x32-cpu_fp32]": "failed",  # strict xfail that passed
    })
    assert run.outcomes() == expected
    assert "waiting for the new export" in run.text
    assert "folding batch_norm is not exact" in run.text
    assert "[XPASS(strict)] claims a failure that does not happen" in run.text
    detector = run.cases["paddle_suite.yaml::tiny_detector[2x3x64x64-cpu_fp32]"]
    assert detector.properties["paddle_mismatched"] == "0/40"  # boxes 2x4x4 + scores 2x4


BUILDER = """
    defaults:
      run_modes: [cpu_fp32, {mode: onednn_fp32, tolerances: {atol: 0.05, rtol: 0.05}}]
    models:
      mlp:
        source: nets.mlp:build_mlp          # a package beside the suite file
        kwargs: {width: 24, classes: 3}
        inputs:
          features: {shape: [-1, 8], dtype: float32, range: [-2, 2]}
        shapes: [[1, 8], [6, 8]]
"""

MLP = """
import paddle
import paddle.nn as nn


def build_mlp(width=16, classes=4):
    paddle.seed(5)
    return nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, classes))
"""


def test_builder_beside_the_suite_is_exported_with_its_kwargs(pytester, run_pytest, xdist_mode):
    (pytester.path / "nets").mkdir()
    (pytester.path / "nets" / "mlp.py").write_text(MLP)
    write_suite(pytester, BUILDER)
    run = run_suite(run_pytest, pytester, *xdist_mode)
    assert run.outcomes() == {f"paddle_suite.yaml::mlp[{s}-{m}]": "passed"
                              for s in ("1x8", "6x8") for m in ("cpu_fp32", "onednn_fp32")}
    # classes=3 reached the builder: each row of the output has 3 logits
    assert run.cases["paddle_suite.yaml::mlp[6x8-cpu_fp32]"].properties["paddle_mismatched"] == "0/18"


def test_model_directory_relative_to_the_suite(pytester, run_pytest, xdist_mode, paddle_cache):
    (pytester.path / "models").mkdir()
    (pytester.path / "models" / "tiny").symlink_to(exported_tiny_cnn(paddle_cache), target_is_directory=True)
    write_suite(pytester, """
        models:
          on_disk:
            source: models/tiny
            shapes: [[2, 3, 32, 32]]
            run_modes: [cpu_fp32, onednn_fp32]
    """, name="suites/paddle_disk.yaml")
    (pytester.path / "suites" / "models").symlink_to(pytester.path / "models", target_is_directory=True)
    run = run_suite(run_pytest, pytester, *xdist_mode)
    assert run.outcomes() == {"suites.paddle_disk.yaml::on_disk[2x3x32x32-cpu_fp32]": "passed",
                              "suites.paddle_disk.yaml::on_disk[2x3x32x32-onednn_fp32]": "passed"}


def test_suite_named_by_option_is_collected_whatever_its_name(pytester, run_pytest, xdist_mode):
    write_suite(pytester, """
        models:
          tiny_cnn: {run_modes: [cpu_fp32]}
    """, name="ci/models.yml")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_plain.py").write_text("def test_plain():\n    pass\n")
    run = run_suite(run_pytest, pytester, "tests", "--paddle-suite", "ci/models.yml", *xdist_mode)
    assert run.outcomes() == {"ci.models.yml::tiny_cnn[1x3x32x32-cpu_fp32]": "passed",
                              "tests.test_plain::test_plain": "passed"}


def test_suite_named_in_the_ini_file(pytester, run_pytest, xdist_mode):
    write_suite(pytester, """
        models:
          tiny_cnn: {run_modes: [onednn_fp32]}
    """, name="ci/models.yml")
    pytester.makeini("[pytest]\npaddle_suite = ci/models.yml\n")
    run = run_suite(run_pytest, pytester, *xdist_mode)
    assert run.outcomes() == {"ci.models.yml::tiny_cnn[1x3x32x32-onednn_fp32]": "passed"}
