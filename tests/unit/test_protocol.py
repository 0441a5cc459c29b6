"""protocol.py: a case's result as the session reads it: its mismatched/total over outputs
judged element-wise and by task comparisons."""
import numpy as np

from pytest_paddle_infer.verdict.task_compare import compare_task, count_row
from pytest_paddle_infer.verdict.tolerances import Rule

from unit.verdict.test_task_compare import BOXES, COUNTS, boxes_rule


def test_a_case_with_a_shape_mismatch_does_not_borrow_another_outputs_count():
    from pytest_paddle_infer.verdict.compare import compare_arrays
    from pytest_paddle_infer.protocol import CaseResult

    boxes = compare_arrays("boxes", BOXES[:3], BOXES)  # a box fewer, compared element-wise
    counts = compare_arrays("counts", np.array([3, 1]), np.array([3, 1]))
    result = CaseResult("c", [boxes, counts], "", "", "")
    assert (result.mismatched, result.total) == (0, 2) and result.mismatched_text == "shape"
    judged = compare_task("boxes", BOXES[:3], BOXES, boxes_rule(), (np.array([3, 0]), COUNTS))
    counted = count_row("counts", np.array([3, 0]), COUNTS, Rule(0, 0), judged)
    assert CaseResult("c", [judged, counted], "", "", "").mismatched_text == "2/6"  # 1 box of 4, 1 image of 2
