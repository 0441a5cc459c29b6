"""verdict/rows.py: the comparison table: the seed's columns and value pairs, no nan(nan)."""
import numpy as np

from pytest_paddle_infer import compare_arrays
from pytest_paddle_infer.verdict.rows import comparison_table, range_text, table_rows


def test_table_has_the_seed_columns_and_value_pairs():
    row = compare_arrays("t", np.array([1.0, 2.0]), np.array([1.0, 2.5]), atol=0, rtol=0)
    text = comparison_table([row])
    assert "match, [2]" in text and "1/2" in text
    assert "1(1)" in text and "2(2.5)" in text


def test_all_inf_outputs_show_no_nan():
    inf = np.full((1, 3), np.inf, "float32")
    row = compare_arrays("out", inf, inf)
    name, shape, mismatched, max_abs, max_rel, low, high, cosine = table_rows([row])[0][:8]
    assert (low, high, cosine) == ("-", "-", "-")
    assert range_text(row) == "min - max - std -"
    mixed = compare_arrays("out", np.array([1.0, np.inf]), np.array([1.0, 2.0]))
    assert "1(1)" in comparison_table([mixed])
