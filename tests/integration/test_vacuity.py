"""End to end: outputs that cannot fail pass with a PaddleInferWarning naming the output and
why (fail under --paddle-strict); every output's baseline value range is in the summary,
JUnit and the reports; the zoo's own outputs are not flagged."""
from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest

from pytest_paddle_infer.modes.run_modes import RUN_MODES

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

NETS = '''
import paddle
import paddle.nn as nn


class Head(nn.Layer):
    def __init__(self, classes, scale, kind):
        super().__init__()
        self.fc = nn.Linear(8, classes)
        self.fc.weight.set_value(self.fc.weight * scale)
        self.kind = kind

    def forward(self, x):
        y = self.fc(x)
        if self.kind == "softmax":
            return nn.functional.softmax(y, axis=-1)
        if self.kind == "small":  # magnitude 4e-4 against atol 1e-4
            return nn.functional.sigmoid(y) * 4e-4
        if self.kind == "boxes":  # scores above 2 after a sigmoid: never, so 0 boxes
            return paddle.masked_select(y, nn.functional.sigmoid(y) > 2.0)
        if self.kind == "constant":  # spread out, but the same whatever the input
            return x.sum() * 0.0 + self.fc.weight[0]
        return y


def build(classes=10, scale=1.0, kind="logits"):
    paddle.seed(3)
    return Head(classes, scale, kind)
'''

SUITE = """
defaults:
  run_modes: [cpu_fp32]
  inputs:
    x: {shape: [-1, 8], dtype: float32}
models:
  onehot: {source: "vac_nets:build", kwargs: {scale: 1000.0, kind: softmax}}
  flat: {source: "vac_nets:build", kwargs: {classes: 1000, scale: 0.001, kind: softmax}}
  small: {source: "vac_nets:build", kwargs: {kind: small}}
  noboxes: {source: "vac_nets:build", kwargs: {kind: boxes}}
  constant: {source: "vac_nets:build", kwargs: {kind: constant}}
  logits: {source: "vac_nets:build", kwargs: {kind: logits}}
"""

WHY = {  # model -> what its warning says
    "onehot": "one-hot: every value is within tolerance of 0 or 1",
    "flat": "flat: probabilities",
    "small": "spread within tolerance",
    "noboxes": "empty: 0 elements (shape [0])",
    "constant": "does not depend on the input: the same for input seeds 0 and 1",
}


def write(pytester, models=None):
    pytester.makepyfile(vac_nets=NETS)
    suite = SUITE if models is None else SUITE.split("models:")[0] + "models:\n" + "".join(
        line + "\n" for line in SUITE.splitlines() if line.strip().split(":")[0] in models)
    (pytester.path / "paddle_vac.yaml").write_text(textwrap.dedent(suite).lstrip())


def junit(pytester, name="junit.xml"):
    cases = {}
    for tc in ET.parse(pytester.path / name).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        failed = tc.find("failure") is not None or tc.find("error") is not None
        cases[props.get("paddle_model")] = ("failed" if failed else "passed", props)
    return cases


def summary_status(result, section="paddle-infer summary"):
    """model -> status in the terminal summary table."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if section in line)
    rows = {}
    for line in lines[start + 3:]:
        if line.startswith(("=", "passed*:")):  # the next section, the warned cases
            break
        cells = line.split()
        rows[cells[0]] = cells[3]
    return rows


def test_outputs_that_cannot_fail_warn(pytester, run_pytest, xdist_mode):
    write(pytester)
    result = run_pytest("--junitxml=junit.xml", "--paddle-report=out", *xdist_mode)
    result.assert_outcomes(passed=6, warnings=5)
    text = result.stdout.str()
    for model, why in WHY.items():  # in pytest's warnings summary, also under -n 2
        line = next(l for l in result.stdout.lines if f"PaddleInferWarning: {model}[1x8-cpu_fp32]" in l)
        assert "fetch_name_0: " + why in line, line
    assert "PaddleInferWarning: logits[" not in text
    status = summary_status(result)
    assert status == {**{m: "passed*" for m in WHY}, "logits": "passed"}
    # the value ranges, each output once, and the warned cases with why
    ranges = summary_status(result, "paddle-infer outputs")
    assert set(ranges) == set(WHY) | {"logits"}
    result.stdout.fnmatch_lines(["noboxes*1x8*fetch_name_0*empty*",
                                 "onehot*1x8*fetch_name_0*1.6*e-28*1*0.3*",
                                 "passed[*]: passed, but an output cannot fail under its tolerance*",
                                 "  onehot[[]1x8-cpu_fp32[]]: fetch_name_0: one-hot*"])
    cases = junit(pytester)
    assert cases["logits"][0] == "passed" and "paddle_vacuous" not in cases["logits"][1]
    assert cases["logits"][1]["paddle_ranges"].startswith("fetch_name_0: min -1.69")
    assert cases["noboxes"][1]["paddle_ranges"] == "fetch_name_0: empty"
    assert cases["onehot"][1]["paddle_vacuous"].startswith("fetch_name_0: one-hot")
    summary = {c["case"]: c for c in json.loads((pytester.path / "out" / "summary.json").read_text())["cases"]}
    onehot = summary["onehot[1x8-cpu_fp32]"]
    assert onehot["status"] == "passed" and onehot["warnings"][0].startswith(
        "fetch_name_0 cannot fail under its tolerance: one-hot")
    assert onehot["outputs"][0]["cannot_fail"] and onehot["outputs"][0]["max"] == 1.0
    assert summary["logits[1x8-cpu_fp32]"]["warnings"] == []
    assert summary["noboxes[1x8-cpu_fp32]"]["outputs"][0]["elements"] == 0


def test_strict_fails_a_one_hot_softmax(pytester, run_pytest, xdist_mode):
    write(pytester, ["onehot", "logits"])
    result = run_pytest("--junitxml=junit.xml", "--paddle-strict", *xdist_mode)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*onehot[[]1x8-cpu_fp32[]]: 1 of 1 outputs cannot fail under their tolerance (--paddle-strict); "
        "first: fetch_name_0 (cannot fail under its tolerance: one-hot*"])
    assert "PaddleInferWarning" not in result.stdout.str()
    assert summary_status(result) == {"onehot": "failed", "logits": "passed"}
    assert junit(pytester)["onehot"][1]["paddle_vacuous"].startswith("fetch_name_0: one-hot")


def test_strict_from_the_ini_file(pytester, run_pytest):
    write(pytester, ["noboxes"])
    pytester.makeini("[pytest]\npaddle_strict = true\n")
    result = run_pytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*noboxes*cannot fail*empty: 0 elements*"])


# The zoo's float models at the fp32 modes' default tolerance and at onednn_bf16's (5e-2, the
# widest a CPU mode gives them, where an output is likeliest to be flagged); the latter on a
# mode that runs on every CPU: onednn_bf16 itself skips where the CPU has no bf16
BF16_DEFAULT = RUN_MODES["onednn_bf16"].tolerance
ZOO_SUITE = f"""
defaults:
  run_modes:
    - cpu_fp32
    - onednn_fp32
    - {{mode: onednn_fp32, threads: 2, tolerances: {{atol: {BF16_DEFAULT.atol}, rtol: {BF16_DEFAULT.rtol}}}}}
models:
  tiny_cnn: {{}}
  tiny_detector: {{}}
  mobilenet_v3_small: {{}}
"""


def test_zoo_outputs_are_not_flagged(pytester, run_pytest, xdist_mode):
    (pytester.path / "paddle_zoo.yaml").write_text(ZOO_SUITE)
    result = run_pytest("--paddle-strict", "--junitxml=junit.xml", *xdist_mode)
    result.assert_outcomes(passed=9)
    assert "PaddleInferWarning" not in result.stdout.str()
    ranges = summary_status(result, "paddle-infer outputs")
    assert set(ranges) == {"tiny_cnn", "tiny_detector", "mobilenet_v3_small"}
    props = junit(pytester)["tiny_detector"][1]
    assert props["paddle_ranges"].count("std") == 2 and "paddle_vacuous" not in props


@pytest.mark.resnet50
def test_resnet50_outputs_are_not_flagged(run_pytest):
    # (onednn_bf16 fails ResNet50 at its default tolerance: 550 of 1000 logits, flag or not)
    result = run_pytest("--paddle-strict", "--paddle-model=resnet50", "--run-mode=cpu_fp32,onednn_fp32")
    result.assert_outcomes(passed=2)
    assert "PaddleInferWarning" not in result.stdout.str()
