"""verdict/vacuity.py: outputs that cannot fail under their tolerance, and the scale-free
bounds that judge where atol alone cannot."""
from __future__ import annotations

import numpy as np
import pytest

from pytest_paddle_infer.protocol import CaseResult
from pytest_paddle_infer.report.text import failure_message
from pytest_paddle_infer.verdict.compare import compare_arrays
from pytest_paddle_infer.verdict.vacuity import constant_caught, judge_outputs, mark_strict, reasons


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def judged(expected, seeds=None, atol=1e-4, rtol=1e-4):
    row = compare_arrays("out", expected, expected, atol, rtol)
    return reasons(row, expected, seeds)


RNG = np.random.default_rng(0)


def test_one_hot_softmax_is_flagged():
    found = judged(softmax(RNG.normal(size=(2, 1000)) * 1000))
    assert len(found) == 1 and found[0].startswith("one-hot")


def test_flat_softmax_is_flagged():
    found = judged(softmax(RNG.normal(size=(1, 1000)) * 1e-3))
    assert found[0].startswith("flat: probabilities") and "within the tolerance 0.0001" in found[0]


def test_magnitude_within_tolerance_is_flagged():
    found = judged((RNG.uniform(0.4, 0.6, size=(1, 100)) * 4e-4).astype(np.float32))
    assert found[0].startswith("spread within tolerance: values")


def test_empty_output_is_flagged():
    assert judged(np.zeros((0, 6), np.float32)) == ["empty: 0 elements (shape [0, 6])"]


def test_output_the_same_for_two_seeds_is_flagged():
    out = RNG.normal(size=(1, 10)).astype(np.float32)
    found = judged(out, (out, out.copy(), (0, 1)))
    assert found == ["does not depend on the input: the same for input seeds 0 and 1 within a "
                     "tenth of the tolerance (max abs 0)"]
    assert judged(out, (out, out + 1e-2, (0, 1))) == []


@pytest.mark.parametrize("expected", [
    RNG.normal(size=(1, 1000)).astype(np.float32),  # logits
    softmax(RNG.normal(size=(2, 4))),  # an uncertain softmax over few classes
    RNG.uniform(0, 64, size=(1, 4, 4)).astype(np.float32),  # boxes
    np.array([3], np.int64),  # one element: the seed check judges it
])
def test_outputs_that_can_fail_are_not_flagged(expected):
    assert judged(expected) == []


def test_a_failing_output_is_not_judged():
    a = np.zeros((0, 6), np.float32)
    row = compare_arrays("out", np.ones((1, 6), np.float32), a)
    assert reasons(row, a) == []


def result_with(expected):
    rows = [compare_arrays("fetch_name_0", expected, expected)]
    judge_outputs(rows, {"fetch_name_0": expected}, {"fetch_name_0": expected})
    return CaseResult("m[1x8-cpu_fp32]", rows, "auto", "recipe", "digest")


def test_strict_fails_the_output():
    result = result_with(np.zeros((0, 6), np.float32))
    assert result.passed and result.vacuous
    mark_strict(result.vacuous)
    assert not result.passed
    assert failure_message(result).startswith(
        "m[1x8-cpu_fp32]: 1 of 1 outputs cannot fail under their tolerance (--paddle-strict); "
        "first: fetch_name_0 (cannot fail under its tolerance: empty: 0 elements")


# ---------------------------------------------------------------------------------------
# An output whose spread its atol spans is not flagged as unable to fail when a scale-free
# bound it sets (cosine_min, sqnr_min, rel_l2_max) fails a constant candidate, the baseline's
# mean (verdict/vacuity.py): the bound judges there, as suites do for bf16 logits.
# ---------------------------------------------------------------------------------------


SCALE_FREE_RNG = np.random.default_rng(7)
LOGITS = SCALE_FREE_RNG.normal(0.0, 1.0, size=(4, 1000)).astype(np.float32)  # mean ~0, std ~1
BOXES = SCALE_FREE_RNG.normal(27.0, 6.0, size=(50, 4)).astype(np.float32)  # large mean: a constant is close


def judged_with_bounds(expected, atol, **bounds):
    row = compare_arrays("out", expected, expected, atol, 0.0, **bounds)
    return row, reasons(row, expected)


def constant_fails(expected, atol, **bounds) -> bool:
    """What the bound really does to a candidate that outputs the baseline's mean."""
    constant = np.full_like(expected, expected.astype(np.float64).mean())
    return not compare_arrays("out", constant, expected, atol, 0.0, **bounds).passed


def test_atol_spanning_the_spread_alone_is_flagged():
    _, found = judged_with_bounds(LOGITS, atol=5.0)
    assert found and found[0].startswith("spread within tolerance")
    assert not constant_fails(LOGITS, atol=5.0)


@pytest.mark.parametrize("bound", [{"cosine_min": 0.98}, {"sqnr_min": 15.0}, {"rel_l2_max": 0.2}])
def test_a_scale_free_bound_that_fails_a_constant_is_not_flagged(bound):
    row, found = judged_with_bounds(LOGITS, atol=5.0, **bound)
    assert found == []
    assert constant_caught(row, LOGITS) == list(bound)
    assert constant_fails(LOGITS, atol=5.0, **bound)


@pytest.mark.parametrize("cosine_min, flagged", [(0.9, True), (0.99, False)])
def test_a_bound_a_constant_meets_still_flags(cosine_min, flagged):
    """Boxes around 27 px with std 6: the constant 27 has cosine 0.976."""
    _, found = judged_with_bounds(BOXES, atol=20.0, cosine_min=cosine_min)
    assert bool(found) is flagged
    assert constant_fails(BOXES, atol=20.0, cosine_min=cosine_min) is not flagged


def test_flat_softmax_with_cosine_min_is_still_flagged():
    z = SCALE_FREE_RNG.normal(size=(1, 10)) * 1e-2
    probs = (np.exp(z) / np.exp(z).sum()).astype(np.float32)
    _, found = judged_with_bounds(probs, atol=0.02, cosine_min=0.999)
    assert found and found[0].startswith("flat: probabilities")
