"""TensorRT candidates' hooked tensors, from a recorded hook stream (no TensorRT runs here):
every tensor an engine outputs carries op type tensorrt_engine, so a selection by op type
(--paddle-intermediates=relu) never names it; it is wanted when the baseline tensor of its
name was selected. Engine tensor names may carry RenameVarBeUnique's _subgraph_<id> suffix:
they pair with the baseline's tensor of the stripped name."""
from __future__ import annotations

import numpy as np

from pytest_paddle_infer.cases.tensor_selection import Selection
from pytest_paddle_infer.engine.capture import BaselineStore, CandidateComparer
from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule


class Tensor:
    """What a hook hands over: a paddle Tensor's numpy(), layout and dtype."""

    def __init__(self, array):
        self.array, self.layout, self.dtype = array, "NCHW", "paddle.float32"

    def numpy(self):
        return self.array


def test_engine_tensors_are_selected_through_the_baseline_and_paired_by_stripped_name(tmp_path):
    relu = np.linspace(-1, 1, 24, dtype="float32").reshape(2, 3, 4)
    selection = Selection("relu")  # an op-type glob: the baseline's relu ops
    store = BaselineStore(tmp_path / "store", selection)
    for op, name, array in [("conv2d", "conv2d_0.tmp_0", relu * 3), ("relu", "tmp_7", relu),
                            ("pool2d", "tmp_8", relu[:1])]:
        store(op, name, Tensor(array))
    assert [r.name for r in store.records] == ["tmp_7"]
    tolerances = CaseTolerances(Rule(1e-4, 1e-4))
    comparer = CandidateComparer(store, selection, tolerances.for_tensor, tolerances.names_tensor)
    # the candidate's recorded stream: TensorRT ran conv2d+relu and exposed the marked tensor
    for op, name, array in [("feed", "x", relu), ("tensorrt_engine", "tmp_7_subgraph_3", relu + 1e-6),
                            ("tensorrt_engine", "tmp_9_subgraph_4", relu)]:
        comparer(op, name, Tensor(array))
    assert [(r.comparison.name, r.baseline_name, r.matched_by) for r in comparer.rows] == [
        ("tmp_7_subgraph_3", "tmp_7", "name")]
    assert not comparer.rows[0].comparison.problems and comparer.rows[0].comparison.mismatched == 0
