"""report/plots.py: the plot people read, from real comparisons (compare_arrays on
arrays); nothing runs Paddle."""
import numpy as np
import pytest

from pytest_paddle_infer.report.plots import tensor_label, thinned
from pytest_paddle_infer.verdict.compare import compare_arrays
from pytest_paddle_infer.protocol import CaseResult, IntermediateRow

RNG = np.random.default_rng(0)
CASE = "m[1x3-onednn_bf16]"


def _result(intermediates: int, drift_from: int = 3) -> CaseResult:
    rows = []
    for i in range(intermediates):
        base = RNG.standard_normal((2, 3, 4)).astype(np.float32)
        cand = base + (np.float32(0.01) if i >= drift_from else 0)
        c = compare_arrays(f"0x55aa{i:04d}_inner_var_{i}", cand, base, 1e-3, 1e-3, op_type="pd_op.conv2d")
        rows.append(IntermediateRow(i, c, c.name, "structure", False))
    out = RNG.standard_normal((2, 5)).astype(np.float32)
    outputs = [compare_arrays("logits", out + 0.5, out, 1e-3, 1e-2),
               compare_arrays("boxes", out, out, 1e-3, 1e-2)]
    return CaseResult(CASE, outputs, "auto", "enable_mkldnn()", "abcd", intermediates=rows)


def test_labels_are_names_thinned_evenly():
    assert tensor_label("0x55bb6f0a0c601795505103235712089_inner_var_24") == "inner_var_24"
    assert tensor_label("conv2d_0.tmp_0") == "conv2d_0.tmp_0"
    assert len(tensor_label("x" * 80)) == 28
    picks = thinned(284)
    assert len(picks) == 40 and picks[0] == 0 and picks[-1] == 283
    assert thinned(5) == [0, 1, 2, 3, 4]


def test_the_plot_keeps_atol_and_rtol_apart_names_tensors_and_bars_outputs():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    from pytest_paddle_infer.report.plots import figure

    fig = figure(_result(60))
    top, bottom = fig.axes
    assert top.get_ylabel() == "Max Atol" and bottom.get_ylabel() == "Max Rtol"  # one tolerance each
    assert [t.get_text() for t in top.get_legend().get_texts()] == ["Max Atol", "atol 0.001"]
    assert [t.get_text() for t in bottom.get_legend().get_texts()] == ["Max Rtol", "rtol 0.001"]
    labels = [t.get_text() for t in bottom.get_xticklabels()]
    assert len(labels) == 40 and labels[0] == "inner_var_0" and labels[-1] == "inner_var_59"
    assert any("first divergence: #3 inner_var_3" in t.get_text() for t in top.texts)
    plt.close(fig)

    fig = figure(_result(0))  # outputs only: one bar per output, not a lone dot
    top, bottom = fig.axes
    assert len(top.patches) == 2 and len(bottom.patches) == 2
    assert [t.get_text() for t in bottom.get_xticklabels()] == ["logits", "boxes"]
    heights = [p.get_height() for p in top.patches]
    assert heights[0] == pytest.approx(0.5, rel=1e-6) and heights[1] == 1e-12  # zero: at the floor
    plt.close(fig)
