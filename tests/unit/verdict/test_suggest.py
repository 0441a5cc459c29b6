"""verdict/suggest.py: tolerances suggested from the worst figures over seeds."""
import pytest

from pytest_paddle_infer.verdict.suggest import MIN_ATOL, suggest, worst


def test_suggestions_from_worst_figures():
    seeds = [[{"name": "o", "position": 0, "atol_needed": 0.0, "max_abs": 0.1, "cosine": 0.999,
               "sqnr_db": "inf", "rel_l2": 0.01, "p99_abs": 0.05, "agreement": None, "unmatched": False,
               "comparable": True, "bounds": {"cosine_min": 0.9, "sqnr_min": 10.0}}],
             [{"name": "o", "position": 0, "atol_needed": 0.02, "max_abs": 0.3, "cosine": 0.998,
               "sqnr_db": 40.0, "rel_l2": 0.02, "p99_abs": 0.04, "agreement": None, "unmatched": False,
               "comparable": True, "bounds": {"cosine_min": 0.9, "sqnr_min": 10.0}}]]
    merged = worst(seeds)[0]
    assert (merged["max_abs"], merged["cosine"], merged["sqnr_db"], merged["atol_needed"]) == (0.3, 0.998, 40.0, 0.02)
    found = suggest(merged, 2.0)
    assert found == {"atol": 0.6, "cosine_min": 0.996, "sqnr_min": pytest.approx(33.9)}
    same = dict(merged, max_abs=0.0, atol_needed=0.0, bounds={})
    assert suggest(same, 2.0) == {"atol": MIN_ATOL}
    assert suggest(dict(merged, atol_needed="inf"), 2.0).get("atol") is None  # a NaN: no tolerance
