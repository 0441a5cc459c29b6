"""Suites: the compare: key and the metric keys of a tolerance entry (cases/suite_compare.py),
read into Rules, and their mistakes named with file:line."""
import textwrap

import pytest

from pytest_paddle_infer.cases.suite import load_suite
from pytest_paddle_infer.cases.suite_nodes import Context
from pytest_paddle_infer.errors import SuiteError
from pytest_paddle_infer.verdict.tolerances import Compare

HEAD = """\
models:
  tiny_detector:
    run_modes: [cpu_fp32]
    tolerances:
"""


def load(tmp_path, body):
    path = tmp_path / "s.paddle.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(body), "      "))
    return load_suite(path, Context("s.paddle.yaml", tmp_path, tmp_path, tmp_path / "cache"))


def test_compare_and_metric_keys_become_rules(tmp_path):
    (case,) = load(tmp_path, """\
        sqnr_min: 30
        p99_abs_max: 0.5
        outputs:
          "#0": {compare: {boxes: ["-", class, score, x1, y1, x2, y2], iou: 0.7, score_min: 0.3, count: "#1"}}
          "#1": {compare: {topk: 5, min_agreement: 0.99, axis: 1}, rel_l2_max: 0.01}
    """)
    boxes = case.case.tolerances.for_tensor("fetch_name_0", 0)
    assert boxes.compare == Compare("boxes", iou=0.7, score_min=0.3, count="#1",
                                    columns=("-", "class", "score", "x1", "y1", "x2", "y2"))
    assert (boxes.sqnr_min, boxes.p99_abs_max) == (30.0, 0.5)
    scores = case.case.tolerances.for_tensor("fetch_name_1", 1)
    assert scores.compare == Compare("topk", k=5, min_agreement=0.99, axis=1) and scores.rel_l2_max == 0.01
    for text, kind in (("argmax", Compare("argmax")), ("{argmax: 1}", Compare("argmax", axis=1)),
                       ("sorted", Compare("sorted")), ("{sorted: 0}", Compare("sorted", axis=0))):
        (case,) = load(tmp_path, f'outputs: {{"#1": {{compare: {text}}}}}\n')
        assert case.case.tolerances.for_tensor("x", 1).compare == kind


@pytest.mark.parametrize("body,line,problem,fix", [
    ("compare: boxes\n", 5, "unknown key 'compare' in tolerances", "compare is per output"),
    ('tensors: {"fetch_*": {compare: argmax}}\n', 5, "unknown key 'compare' in the tolerance of 'fetch_*'",
     "compare applies to outputs"),
    ('outputs: {"#0": {compare: topk}}\n', 5, "compare topk needs k", "write compare: {topk: 5}"),
    ('outputs: {"#0": {compare: boxs}}\n', 5, "unknown comparison", "did you mean 'boxes'?"),
    ('outputs: {"#0": {compare: {topk: 2, argmax: 1}}}\n', 5, "compare names one comparison",
     "keep one comparison per output"),
    ('outputs: {"#0": {compare: {sorted: 1, iou: 0.5}}}\n', 5, "unknown key 'iou' in compare sorted", ""),
    ('outputs:\n  "#0":\n    compare: {boxes: [class, score, x1, y1, x2]}\n', 7,
     "box columns must name class, score, x1, y1, x2 and y2 once each", "check y2"),
    ('outputs: {"#0": {compare: {topk: 3, min_agreement: 1.5}}}\n', 5, "min_agreement is out of range", ""),
    ('outputs: {"#0": {compare: {argmax: "1"}}}\n', 5, "argmax must be an axis", "no quotes"),
    ("sqnr_min: loud\n", 5, "sqnr_min must be a finite number", ""),
    ("rel_l2_max: -1\n", 5, "rel_l2_max is out of range", ""),
])
def test_mistakes_name_the_line(tmp_path, body, line, problem, fix):
    with pytest.raises(SuiteError) as e:
        load(tmp_path, body)
    text = str(e.value)
    assert text.startswith(f"s.paddle.yaml:{line}: ") and problem in text.splitlines()[0]
    assert fix in text
