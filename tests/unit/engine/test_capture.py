"""execute/capture.py with real predictors: capturing intermediate tensors, oneDNN layouts,
pairing by name (legacy programs) and by structure (PIR), selection by glob."""
from pathlib import Path

import numpy as np
import pytest

from helpers import hooked_run
from pytest_paddle_infer.cases.case import Case
from pytest_paddle_infer.cases.tensor_selection import Selection
from pytest_paddle_infer.engine.capture import (BaselineStore, CandidateComparer, SeenTensors, plain_numpy,
                                                selection_problems)
from pytest_paddle_infer.engine.runner import Runner
from pytest_paddle_infer.models.cache import resolve
from pytest_paddle_infer.models.source import parse_source
from pytest_paddle_infer.modes.run_modes import RunModeSpec
from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule


def run_case(runner, source, mode="onednn_fp32", intermediates="all", atol=1e-4):
    """Zoo entries in their legacy export (names pair), model files as they are."""
    case = Case(model=source, run_mode=RunModeSpec(mode), intermediates=intermediates,
                tolerances=CaseTolerances(Rule(atol, atol)),
                program="default" if source.kind == "path" else "legacy")
    return runner.run(runner.prepare(case))


@pytest.fixture
def runner(paddle_cache):
    r = Runner(paddle_cache)
    yield r
    r.close()


def test_legacy_programs_pair_by_name_and_onednn_layout_is_converted(runner):
    result = run_case(runner, parse_source("tiny_cnn"))
    rows = result.intermediates
    assert rows and all(r.matched_by == "name" and r.baseline_name == r.comparison.name for r in rows)
    # fused oneDNN convolutions report the fused pattern's last output, as in the baseline
    assert [r.comparison.name for r in rows[:4]] == [f"relu_{i}.tmp_0" for i in range(4)]
    assert {r.comparison.op_type for r in rows[:4]} == {"fused_conv2d"}
    # converted to the plain layout, oneDNN fp32 agrees with the native baseline everywhere
    assert all(r.comparison.passed and r.comparison.max_abs < 1e-4 for r in rows)


def test_raw_onednn_memory_would_read_as_mismatch(paddle_cache):
    """Why the conversion matters: numpy() of a oneDNN tensor is its blocked memory."""
    files = resolve(parse_source("tiny_cnn"), paddle_cache, legacy=True)
    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    base, raw, plain = {}, {}, {}
    hooked_run(files, x, False, lambda op, name, t: base.__setitem__(name, plain_numpy(t)))

    def candidate_hook(op_type, name, tensor):
        raw[name] = np.array(tensor.numpy())
        plain[name] = plain_numpy(tensor)

    hooked_run(files, x, True, candidate_hook)
    name = "relu_1.tmp_0"  # 32 channels: a blocked layout differs from NCHW
    assert np.allclose(plain[name], base[name], atol=1e-4, rtol=1e-4)
    assert not np.allclose(raw[name], base[name], atol=1e-4, rtol=1e-4)


def test_sinks_read_hooked_tensors_without_a_copy(paddle_cache):
    """The spill and the comparison read a CPU tensor where it lies (DLPack), the values a
    copy has; a oneDNN tensor through its plain-layout clone."""
    files = resolve(parse_source("tiny_cnn"), paddle_cache, legacy=True)
    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    seen = []

    def hook(op_type, name, tensor):
        view, copy = plain_numpy(tensor, view=True), plain_numpy(tensor)
        if name.startswith(("conv2d_", "relu_")) and hasattr(tensor, "__dlpack__"):  # Paddle 2.6: none
            assert not view.flags.owndata, name  # the tensor's memory, or its plain clone's
        seen.append(name)
        assert np.array_equal(view, copy) and not np.shares_memory(view, copy), name

    hooked_run(files, x, False, hook)
    hooked_run(files, x, True, hook)
    assert any(n.startswith("relu_") for n in seen)


def _value_index(store: BaselineStore):
    return [(r, store.load(r)) for r in store.records]


def test_pir_programs_pair_by_structure_and_agree_with_legacy_names(runner, paddle_cache):
    """PIR names are per-predictor addresses: pairs come from structure and values, and each
    agrees with the name-based pairing of the same model's legacy export."""
    from dataclasses import replace

    zoo = parse_source("tiny_detector")
    pir_files = resolve(zoo, paddle_cache)
    if pir_files.format != "pir":
        pytest.skip("this Paddle exports legacy programs only: there is no PIR program to align")
    # the same inputs as the zoo entry (its int32 im_shape range is not in the model file)
    pir_source = replace(parse_source(str(Path(pir_files.prog_file).parent)), inputs=zoo.inputs)
    pir = run_case(runner, pir_source)
    legacy = run_case(runner, parse_source("tiny_detector"))
    _assert_pir_agrees_with_legacy(runner, pir, legacy, minimum_share=1.0)


def _assert_pir_agrees_with_legacy(runner, pir, legacy, minimum_share):
    stores = list(runner._stores.values())
    pir_store = next(s for s in stores if any(r.name.startswith("0x") for r in s.records))
    legacy_store = next(s for s in stores if s is not pir_store)
    legacy_values = _value_index(legacy_store)
    legacy_rows = {r.baseline_name: r for r in legacy.intermediates if r.matched}
    matched = [r for r in pir.intermediates if r.matched]
    assert len(matched) >= minimum_share * len(pir.intermediates)
    for row in matched:
        if row.matched_by != "structure":
            continue
        record = next(r for r in pir_store.records if r.name == row.baseline_name)
        values = pir_store.load(record)
        # the legacy baseline tensors holding these values (to float rounding: the two
        # formats' baselines run different executors)
        names = {r.name for r, v in legacy_values
                 if v.shape == values.shape and np.allclose(v, values, rtol=1e-5, atol=1e-6)}
        assert names, f"{row.comparison.name}: paired with a tensor the legacy baseline never held"
        partners = [legacy_rows[n] for n in names if n in legacy_rows]
        assert partners, f"{row.comparison.name}: the legacy export pairs none of {sorted(names)}"
        # both candidates approximate that tensor: their errors are of one order of magnitude
        assert any(_same_order(p.comparison.max_abs, row.comparison.max_abs) for p in partners), (
            row.comparison.name, [p.comparison.max_abs for p in partners], row.comparison.max_abs)


def _same_order(a, b, floor=1e-5):
    a, b = max(a, floor), max(b, floor)
    return max(a, b) / min(a, b) <= 10


@pytest.mark.resnet50
def test_resnet50_pir_alignment(runner, paddle_cache):
    pir_files = resolve(parse_source("resnet50"), paddle_cache)
    if pir_files.format != "pir":
        pytest.skip("this Paddle exports legacy programs only: there is no PIR program to align")
    pir = run_case(runner, parse_source(str(Path(pir_files.prog_file).parent)))
    legacy = run_case(runner, parse_source("resnet50"))
    assert sum(r.matched for r in pir.intermediates) >= 50
    _assert_pir_agrees_with_legacy(runner, pir, legacy, minimum_share=50 / 58)


def test_ambiguous_structure_is_left_unmatched(tmp_path):
    """Two baseline tensors of one shape with different values, and a candidate between them:
    it is listed as unmatched rather than compared with either."""
    from pytest_paddle_infer.engine.capture import Aligner, fingerprint

    class T:
        def __init__(self, a):
            self.a = a
            self.layout = "NCHW"
            self.dtype = "paddle.float32"

        def numpy(self):
            return self.a

    store = BaselineStore(tmp_path / "s", Selection("all"))
    store("pd_op.relu:1", "0x1_inner_var_1", T(np.ones((2, 3), "float32")))
    store("pd_op.relu:2", "0x1_inner_var_2", T(np.ones((2, 3), "float32") * 1.02))
    aligner = Aligner(store)
    record, why = aligner.match("0x2_inner_var_1", (2, 3), "float32", fingerprint(np.ones((2, 3)) * 1.01))
    assert record is None and why.startswith("ambiguous: 2 baseline tensors fit")
    record, why = aligner.match("0x2_inner_var_2", (2, 3), "float32", fingerprint(np.ones((2, 3)) * 1.02))
    assert record.name == "0x1_inner_var_2" and why == "structure"
    record, why = aligner.match("0x2_inner_var_3", (3, 2), "float32", fingerprint(np.ones((3, 2))))
    assert record is None and why == "no baseline tensor of this shape and dtype"


def test_glob_selection_captures_only_named_tensors(runner):
    result = run_case(runner, parse_source("tiny_cnn"), intermediates="relu_1*,pool2d")
    names = [r.comparison.name for r in result.intermediates]
    assert names == ["relu_1.tmp_0", "pool2d_0.tmp_0"]


# ---------------------------------------------------------------------------------------
# TensorRT candidates' hooked tensors, from a recorded hook stream (no TensorRT runs here):
# every tensor an engine outputs carries op type tensorrt_engine, so a selection by op type
# (--paddle-intermediates=relu) never names it; it is wanted when the baseline tensor of its
# name was selected. Engine tensor names may carry RenameVarBeUnique's _subgraph_<id> suffix:
# they pair with the baseline's tensor of the stripped name.
# ---------------------------------------------------------------------------------------


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


def test_globs_that_select_nothing_are_named():
    class Store:
        selection = Selection("nomatch_*")
        records = []
        seen = SeenTensors()

    for name, op in (("conv2d_0.tmp_0", "conv2d"), ("relu_0.tmp_0", "relu")):
        Store.seen.add(name, op, Store.selection)
    error, note = selection_problems(Store, "m")
    assert "'nomatch_*' select no tensor of m" in error and "conv2d, relu" in error and not note
    Store.selection, Store.records, Store.seen = Selection("relu*,nomatch"), [object()], SeenTensors()
    Store.seen.add("relu_0.tmp_0", "relu", Store.selection)
    error, note = selection_problems(Store, "m")
    assert not error and "'nomatch' matched no tensor of m" in note
