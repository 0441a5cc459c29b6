"""verdict/compare.py: the comparison in pure numpy: the seed's formulas, non-finite values, shapes, dtypes."""
import numpy as np
import pytest

from pytest_paddle_infer import assert_tensors_close, compare_arrays
from pytest_paddle_infer.verdict.rows import comparison_table


def test_figures_follow_the_seed_formulas():
    rng = np.random.default_rng(0)
    expected = rng.normal(size=(4, 5)).astype("float32")
    actual = expected + rng.normal(scale=1e-3, size=expected.shape).astype("float32")
    row = compare_arrays("out", actual, expected, atol=1e-3, rtol=1e-3)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    assert row.mismatched == int((~np.isclose(a, e, rtol=1e-3, atol=1e-3)).sum())
    assert row.max_abs == pytest.approx(np.abs(a - e).max())
    assert row.max_rel == pytest.approx((np.abs(a - e) / (np.abs(e) + 1e-7)).max())
    assert (row.min_actual, row.max_actual) == (pytest.approx(a.min()), pytest.approx(a.max()))
    assert (row.min_expected, row.max_expected) == (pytest.approx(e.min()), pytest.approx(e.max()))
    assert row.cosine == pytest.approx(np.dot(a.ravel(), e.ravel()) / np.linalg.norm(a) / np.linalg.norm(e))
    assert row.total == 20
    excess = np.abs(a - e) - (1e-3 + 1e-3 * np.abs(e))
    assert row.worst_index == np.unravel_index(np.argmax(excess), a.shape)


def test_identical_tensors_pass():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    row = assert_tensors_close(x, x.copy(), name="same")
    assert row.passed and row.mismatched == 0 and row.max_abs == 0 and row.cosine == pytest.approx(1.0)


def test_failure_message_is_a_table():
    expected = np.zeros((2, 2), dtype="float32")
    actual = expected.copy()
    actual[1, 0] = 0.5
    with pytest.raises(AssertionError) as info:
        assert_tensors_close(actual, expected, atol=1e-4, rtol=1e-4, name="logits")
    text = str(info.value)
    assert "logits differs (atol=0.0001, rtol=0.0001)" in text
    assert "Mismatched" in text and "Max Atol" in text and "1/4" in text and "0.5" in text


def test_nan_in_candidate_where_baseline_is_finite_is_named():
    expected = np.ones(5, dtype="float32")
    actual = expected.copy()
    actual[2] = np.nan
    actual[3] = np.inf
    row = compare_arrays("out", actual, expected)
    assert not row.passed
    assert row.nan_actual == 1 and row.inf_actual == 1 and row.new_nonfinite == 2
    assert any("1 NaN and 1 Inf in the candidate, 2 where the baseline is finite" in p for p in row.problems)
    assert row.mismatched == 2


def test_nan_in_the_baseline_is_reported_not_hidden():
    expected = np.array([1.0, np.nan], dtype="float32")
    row = compare_arrays("out", expected.copy(), expected)
    assert not row.passed
    assert any("baseline has 1 NaN" in p for p in row.problems)


def test_shape_mismatch():
    row = compare_arrays("out", np.zeros((2, 3)), np.zeros((3, 2)))
    assert not row.passed
    assert row.shape_text == "expect [3, 2], but got [2, 3]"
    assert "shape: expected [3, 2], got [2, 3]" in row.problems


def test_dtype_kind_mismatch_fails_and_width_change_does_not():
    ints = np.array([1, 2, 3], dtype="int64")
    row = compare_arrays("ids", ints.astype("float32"), ints)
    assert any(p.startswith("dtype: expected int64, got float32") for p in row.problems)
    half = compare_arrays("h", np.ones(3, dtype="float16"), np.ones(3, dtype="float32"))
    assert half.passed


def test_cosine_min_is_an_extra_criterion():
    expected = np.array([1.0, 0.0], dtype="float32")
    actual = np.array([1.0, 0.01], dtype="float32")
    assert compare_arrays("x", actual, expected, atol=0.1, rtol=0).passed
    row = compare_arrays("x", actual, expected, atol=0.1, rtol=0, cosine_min=0.99999)
    assert not row.passed and "below cosine_min" in row.problems[-1]


def test_table_has_the_seed_columns_and_value_pairs():
    row = compare_arrays("t", np.array([1.0, 2.0]), np.array([1.0, 2.5]), atol=0, rtol=0)
    text = comparison_table([row])
    assert "match, [2]" in text and "1/2" in text
    assert "1(1)" in text and "2(2.5)" in text


def test_chunked_figures_equal_whole_array_figures(monkeypatch):
    import pytest_paddle_infer.verdict.compare as compare

    rng = np.random.default_rng(1)
    expected = rng.normal(size=(3, 1000)).astype("float32")
    actual = expected + rng.normal(scale=1e-3, size=expected.shape).astype("float32")
    actual[2, 7] = np.nan
    whole = compare.compare_arrays("t", actual, expected, atol=1e-3, rtol=1e-3)
    monkeypatch.setattr(compare, "CHUNK", 97)  # many uneven chunks
    chunked = compare.compare_arrays("t", actual, expected, atol=1e-3, rtol=1e-3)
    for field in ("mismatched", "max_abs", "max_rel", "min_actual", "max_actual", "worst_index",
                  "nan_actual", "new_nonfinite"):
        assert getattr(chunked, field) == getattr(whole, field), field
    assert chunked.cosine == pytest.approx(whole.cosine, rel=1e-12)
