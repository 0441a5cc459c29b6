"""End to end: ``compare: boxes`` on a builder whose outputs are detection rows
[class, score, x1, y1, x2, y2] and their count, against goldens edited the way another
machine's NMS may leave them: rows in another order (passes; the element-wise check of the
same golden fails), a box moved beyond the IoU threshold (fails naming it), one box fewer in
the baseline with its count (fails naming the extra box; the count is judged with the boxes,
and the summary row does not borrow the other output's 0/N)."""
import json

import numpy as np
import pytest

from pytest_paddle_infer.goldens import META, golden_path
from helpers import run_suite, summary_rows, write_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

NETS = '''
import paddle
import paddle.nn as nn
import paddle.nn.functional as F


class BoxRows(nn.Layer):
    """Rows [class, score, x1, y1, x2, y2] from a [6, 4] input, 20 px apart so no two
    overlap, and the number of rows."""

    def forward(self, x):
        idx = paddle.arange(6, dtype="float32").unsqueeze(1)
        score = F.sigmoid(x[:, 0:1])
        x1 = idx * 20.0 + x[:, 1:2] * 2.0
        y1 = idx * 20.0 + x[:, 2:3] * 2.0
        boxes = paddle.concat([paddle.floor(idx / 2.0), score, x1, y1, x1 + 12.0 + x[:, 3:4],
                               y1 + 12.0], axis=1)
        count = paddle.cast(paddle.sum(paddle.ones_like(x[:, 0:1])), "int32").reshape([1])
        return boxes, count


def build_box_rows():
    return BoxRows()
'''
BOXES = '{compare: {boxes: [class, score, x1, y1, x2, y2], iou: 0.5}}'
SUITE = f"""
    defaults:
      run_modes: [cpu_fp32]
      inputs:
        x: {{shape: [6, 4]}}
    models:
      reordered:
        source: box_nets:build_box_rows
        tolerances: {{outputs: {{"#0": {BOXES}}}}}
      reordered_plain:            # the same golden, compared element by element
        source: box_nets:build_box_rows
      moved:
        source: box_nets:build_box_rows
        tolerances: {{outputs: {{"#0": {BOXES}}}}}
      one_less:
        source: box_nets:build_box_rows
        tolerances: {{outputs: {{"#0": {BOXES}}}}}
"""


def edit(path, change):
    with np.load(path) as data:
        arrays = {k: data[k].copy() for k in data.files}
    change(arrays)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def test_boxes_match_in_any_order_and_name_the_unmatched_box(pytester, run_pytest, xdist_mode):
    (pytester.path / "box_nets.py").write_text(NETS)
    write_suite(pytester, SUITE)
    goldens = pytester.path / "goldens"
    saved = run_suite(run_pytest, pytester, "--paddle-baseline=auto", f"--paddle-save-goldens={goldens}",
                      *xdist_mode)
    assert set(saved.outcomes().values()) == {"passed"} and len(saved.cases) == 4
    case = lambda name: f"{name}[6x4-cpu_fp32]"
    with np.load(golden_path(goldens, case("moved"))) as data:
        rows = data["o0"].copy()
    order = [3, 0, 5, 1, 4, 2]

    def reorder(arrays):
        arrays["o0"] = arrays["o0"][order]

    def move_one(arrays):  # row 4 by 8 px right: IoU about 0.2 with where it was
        arrays["o0"] = arrays["o0"][order]
        arrays["o0"][4, [2, 4]] += 8.0

    def drop_one(arrays):  # the baseline found one box fewer
        arrays["o0"] = np.delete(arrays["o0"], 2, axis=0)
        arrays["o1"] = arrays["o1"] - 1

    for name, change in (("reordered", reorder), ("reordered_plain", reorder), ("moved", move_one),
                         ("one_less", drop_one)):
        edit(golden_path(goldens, case(name)), change)

    run = run_suite(run_pytest, pytester, f"--paddle-baseline=golden:{goldens}", *xdist_mode)
    key = lambda name: f"paddle_suite.yaml::{case(name)}"
    assert run.outcomes() == {key("reordered"): "passed", key("reordered_plain"): "failed",
                              key("moved"): "failed", key("one_less"): "failed"}
    # the pass compared something: all six boxes matched, in the summary's task section and JUnit
    task = run.cases[key("reordered")].properties["paddle_task"]
    assert "6 matched, 0 baseline box(es) unmatched, 0 candidate box(es) unmatched" in task
    assert f"{case('reordered')}: fetch_name_0: boxes (" in run.text
    plain = run.cases[key("reordered_plain")].message
    assert "elements outside atol=0.0001 rtol=0.0001" in plain
    assert "smallest passing tolerance: fetch_name_0: would pass with atol >= " in plain

    moved = run.cases[key("moved")].message
    box = rows[order[4]]  # the golden's row 4 after reordering
    width, height = box[4] - box[2], box[5] - box[3]
    iou = (width - 8.0) * height / (2 * width * height - (width - 8.0) * height)
    shown = ", ".join(f"{v:.4g}" for v in (box[2] + 8.0, box[3], box[4] + 8.0, box[5]))
    assert (f"1 baseline box(es) without a match in the candidate (class equal, IoU >= 0.5): "
            f"[class {box[0]:g}, score {box[1]:.4g}, {shown}] (row 4, image 0) best IoU {iou:.3g}") in moved
    assert "1 candidate box(es) without a match in the baseline" in moved
    assert "smallest passing tolerance: fetch_name_0: none for the unmatched boxes" in moved
    assert "5 matched, 1 baseline box(es) unmatched, 1 candidate box(es) unmatched" in moved

    one_less = run.cases[key("one_less")].message
    extra = rows[2]
    assert (f"1 candidate box(es) without a match in the baseline (class equal, IoU >= 0.5): "
            f"[class {extra[0]:g}, score {extra[1]:.4g}") in one_less
    assert "fetch_name_0  expect [5, 6], but got [6, 6]" in one_less
    assert ("box counts differ (baseline [5], candidate [6]): see the boxes comparison of "
            "fetch_name_0") in one_less
    # the summary counts the unmatched box and the differing count (1 of 6 boxes, 1 of 1
    # images), not the count output's 0/1 alone
    assert summary_rows(run.result)[("one_less", "6x4", "cpu_fp32")][3] == "2/7"
    assert run.cases[key("one_less")].properties["paddle_mismatched"] == "2/7"
