"""verdict/metrics.py: rounding a figure up to a tolerance."""
from pytest_paddle_infer.verdict.rows import ceil_significant


def test_ceil_significant_never_rounds_below():
    for v in (0.0018000000000000017, 9.7e-5, 1.94e-4, 0.5, 123456.0, 1e-12):
        up = ceil_significant(v, 2)
        assert up >= v and up <= v * 1.11
