"""Intermediate tensors from a suite: the YAML key, and a tensor-glob tolerance that plants a
divergence the failure names."""
import pytest

from helpers import DIFFERING_MODE

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

# DIFFERING_MODE's fused convs differ from the baseline's conv + batch_norm on every CPU: the
# second one's output (relu_1) fails at zero, the outputs pass at the mode's default
SUITE = f"""
defaults:
  intermediates: all
  program: legacy
models:
  tiny_cnn:
    run_modes:
      - {DIFFERING_MODE}
    tolerances:
      tensors:
        "relu_1*": {{atol: 0, rtol: 0}}
"""


def test_tensor_glob_plants_the_first_divergence(pytester, run_pytest, xdist_mode):
    pytester.makefile(".paddle.yaml", planted=SUITE)
    result = run_pytest("--paddle-report=out", *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*tiny_cnn[[]1x3x32x32-{DIFFERING_MODE}[]]: 1 intermediate tensors outside the tolerance a tensor rule sets for them; outputs within tolerance",
        "*first divergent tensor: #1 fused_conv2d * (*elements outside atol=0 rtol=0); 1 of * intermediate tensors break tolerance*",
    ])
    import json

    from pytest_paddle_infer.files import safe_file_stem

    stem = safe_file_stem(f"planted.paddle.yaml::tiny_cnn[1x3x32x32-{DIFFERING_MODE}]")
    assert stem.startswith(f"planted.paddle.yaml__tiny_cnn-1x3x32x32-{DIFFERING_MODE}-")
    doc = json.loads((pytester.path / "out" / f"{stem}.json").read_text())
    column = {name: i for i, name in enumerate(doc["columns"])}  # by name: columns get added
    failing = [r for r in doc["rows"] if r[column["Result"]] != "ok"]
    assert len(failing) == 1
    assert failing[0][column["Baseline Tensor"]] == "relu_1.tmp_0"  # the paired baseline tensor


def test_bad_intermediates_key_names_file_and_line(pytester, run_pytest):
    pytester.makefile(".paddle.yaml", bad="defaults:\n  intermediates: ','\nmodels:\n  tiny_cnn: {}\n")
    result = run_pytest()
    result.stdout.fnmatch_lines(["*bad.paddle.yaml:2*intermediates*"])
    assert result.ret != 0
