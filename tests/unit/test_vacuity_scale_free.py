"""An output whose spread its atol spans is not flagged as unable to fail when a scale-free
bound it sets (cosine_min, sqnr_min, rel_l2_max) fails a constant candidate, the baseline's
mean (verdict/vacuity.py): the bound judges there, as suites do for bf16 logits."""
from __future__ import annotations

import numpy as np
import pytest

from pytest_paddle_infer.verdict.compare import compare_arrays
from pytest_paddle_infer.verdict.vacuity import constant_caught, reasons

RNG = np.random.default_rng(7)
LOGITS = RNG.normal(0.0, 1.0, size=(4, 1000)).astype(np.float32)  # mean ~0, std ~1
BOXES = RNG.normal(27.0, 6.0, size=(50, 4)).astype(np.float32)  # large mean: a constant is close


def judged(expected, atol, **bounds):
    row = compare_arrays("out", expected, expected, atol, 0.0, **bounds)
    return row, reasons(row, expected)


def constant_fails(expected, atol, **bounds) -> bool:
    """What the bound really does to a candidate that outputs the baseline's mean."""
    constant = np.full_like(expected, expected.astype(np.float64).mean())
    return not compare_arrays("out", constant, expected, atol, 0.0, **bounds).passed


def test_atol_spanning_the_spread_alone_is_flagged():
    _, found = judged(LOGITS, atol=5.0)
    assert found and found[0].startswith("spread within tolerance")
    assert not constant_fails(LOGITS, atol=5.0)


@pytest.mark.parametrize("bound", [{"cosine_min": 0.98}, {"sqnr_min": 15.0}, {"rel_l2_max": 0.2}])
def test_a_scale_free_bound_that_fails_a_constant_is_not_flagged(bound):
    row, found = judged(LOGITS, atol=5.0, **bound)
    assert found == []
    assert constant_caught(row, LOGITS) == list(bound)
    assert constant_fails(LOGITS, atol=5.0, **bound)


@pytest.mark.parametrize("cosine_min, flagged", [(0.9, True), (0.99, False)])
def test_a_bound_a_constant_meets_still_flags(cosine_min, flagged):
    """Boxes around 27 px with std 6: the constant 27 has cosine 0.976."""
    _, found = judged(BOXES, atol=20.0, cosine_min=cosine_min)
    assert bool(found) is flagged
    assert constant_fails(BOXES, atol=20.0, cosine_min=cosine_min) is not flagged


def test_flat_softmax_with_cosine_min_is_still_flagged():
    z = RNG.normal(size=(1, 10)) * 1e-2
    probs = (np.exp(z) / np.exp(z).sum()).astype(np.float32)
    _, found = judged(probs, atol=0.02, cosine_min=0.999)
    assert found and found[0].startswith("flat: probabilities")
