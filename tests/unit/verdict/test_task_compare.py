"""Task-aware comparisons (verdict/task_compare.py) on hand-made arrays."""
import numpy as np

from pytest_paddle_infer.verdict.task_compare import compare_task, count_row
from pytest_paddle_infer.verdict.tolerances import Compare, Rule

BOXES = np.array([[0, 0.9, 10, 10, 20, 20], [1, 0.8, 30, 30, 50, 50],
                  [0, 0.5, 60, 60, 70, 70], [2, 0.3, 5, 5, 9, 9]], "float32")
COUNTS = np.array([3, 1], "int32")


def boxes_rule(**kw):
    return Rule(1e-4, 1e-4, compare=Compare("boxes", **kw))


def test_boxes_in_another_order_within_each_image_match():
    row = compare_task("b", BOXES[[1, 2, 0, 3]], BOXES, boxes_rule(), (COUNTS, COUNTS))
    assert row.passed and (row.mismatched, row.total) == (0, 4)
    assert "4 matched, 0 baseline box(es) unmatched, 0 candidate box(es) unmatched" in row.task_figures


def test_a_box_moved_beyond_the_iou_threshold_is_named_on_both_sides():
    moved = BOXES.copy()
    moved[2, [2, 4]] += 6  # IoU 4*10 / (200 - 40) = 0.25
    row = compare_task("b", moved, BOXES, boxes_rule(), (COUNTS, COUNTS))
    assert not row.passed and row.mismatched == 2
    assert ("1 baseline box(es) without a match in the candidate (class equal, IoU >= 0.5): "
            "[class 0, score 0.5, 60, 60, 70, 70] (row 2, image 0) best IoU 0.25") in row.problems[0]
    assert "[class 0, score 0.5, 66, 60, 76, 70] (row 2, image 0)" in row.problems[1]
    looser = compare_task("b", moved, BOXES, boxes_rule(iou=0.2), (COUNTS, COUNTS))
    assert "4 matched" in looser.task_figures and "worst matched coordinate error 6" in looser.task_figures
    assert "would pass with atol >= 6 (at rtol=0.0001)" in looser.needed_text  # matched, 6 px off


def test_matched_boxes_are_checked_element_wise_and_name_the_needed_tolerance():
    shifted = BOXES.copy()
    shifted[:, 2:] += 0.5
    row = compare_task("b", shifted, BOXES, boxes_rule(), (COUNTS, COUNTS))
    assert not row.passed and "4 matched" in row.task_figures
    assert "worst matched coordinate error 0.5" in row.task_figures
    assert "would pass with atol >= 0.5" in row.needed_text
    assert compare_task("b", shifted, BOXES, Rule(0.5, 0, compare=Compare("boxes")), (COUNTS, COUNTS)).passed


def test_images_keep_their_boxes_and_boxes_below_score_min_are_not_missed():
    # the class-2 box moved from image 1 to image 0: no match across images
    counts = np.array([4, 0], "int32")
    row = compare_task("b", BOXES, BOXES, boxes_rule(), (counts, COUNTS))
    assert "1 baseline box(es) without a match" in row.problems[0]
    # a low-scored box the candidate lost is no missing box above score_min
    fewer = BOXES[:3]
    lost = compare_task("b", fewer, BOXES, boxes_rule(score_min=0.4), (np.array([3, 0], "int32"), COUNTS))
    assert lost.passed and "3 matched" in lost.task_figures


def test_count_output_is_judged_with_its_boxes():
    extra = np.concatenate([BOXES, [[1, 0.2, 80, 80, 90, 90]]]).astype("float32")
    more = np.array([3, 2], "int32")
    failing = compare_task("b", extra, BOXES, boxes_rule(), (more, COUNTS))
    row = count_row("n", more, COUNTS, Rule(0, 0), failing)
    assert row.problems == ["box counts differ (baseline [3, 1], candidate [3, 2]): see the boxes "
                            "comparison of b"]
    passing = compare_task("b", extra, BOXES, boxes_rule(score_min=0.25), (more, COUNTS))
    assert passing.passed and count_row("n", more, COUNTS, Rule(0, 0), passing).passed


def test_wrong_box_layout_is_named():
    row = compare_task("b", BOXES[:, :5], BOXES[:, :5], boxes_rule())
    assert "expected rows of 6 columns" in row.problems[-1]
    with_id = np.concatenate([np.arange(4, dtype="float32")[:, None], BOXES], axis=1)
    spec = boxes_rule(columns=("-", "class", "score", "x1", "y1", "x2", "y2"))
    assert compare_task("b", with_id[[3, 2, 1, 0]], with_id, spec).passed


def test_topk_and_argmax_count_samples():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(8, 10))
    cand = base + 1e-3
    swapped = base.copy()
    top = np.argsort(-base[5])
    swapped[5, [top[0], top[1]]] = swapped[5, [top[1], top[0]]]  # rank 1 and 2 trade places
    argmax = Rule(1e-9, 0, compare=Compare("argmax"))
    assert compare_task("p", cand, base, argmax).passed  # element-wise it would fail
    row = compare_task("p", swapped, base, argmax)
    assert not row.passed and (row.mismatched, row.total) == (1, 8)
    assert (f"argmax along axis -1 agrees on 7/8 samples (0.875 < min_agreement 1); first disagreement "
            f"at sample [5]: baseline {top[0]}, candidate {top[1]}") in row.problems[0]
    assert compare_task("p", swapped, base, Rule(1e-9, 0, compare=Compare("argmax", min_agreement=0.8))).passed
    assert compare_task("p", swapped, base, Rule(1e-9, 0, compare=Compare("topk", k=2))).passed  # same set
    third = base.copy()
    third[5, [top[2], top[3]]] = third[5, [top[3], top[2]]]  # rank 3 leaves the top 3
    assert compare_task("p", third.T, base.T, Rule(1e-9, 0, compare=Compare("topk", k=2, axis=0))).passed
    row = compare_task("p", third.T, base.T, Rule(1e-9, 0, compare=Compare("topk", k=3, axis=0)))
    assert not row.passed and "top-3 set along axis 0 agrees on 7/8 samples" in row.problems[0]
    assert "axis 2 does not exist" in compare_task("p", base, base, Rule(0, 0, compare=Compare("argmax", axis=2))).problems[0]


def test_sorted_compares_order_free_values():
    base = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    rule = Rule(1e-6, 0, compare=Compare("sorted"))
    assert compare_task("s", base[:, ::-1], base, rule).passed
    assert not compare_task("s", base[::-1], base, rule).passed
    assert compare_task("s", base[::-1], base, Rule(1e-6, 0, compare=Compare("sorted", axis=0))).passed
