"""engine/recording.py: hook streams whose first run is empty or partial (Paddle 3.x GPU: the
new executor's first run executes ops without calling the output hooks), replayed from a
recorded stream: a GPU recipe gets a warm-up run before the recorded one, so the store of
intermediate tensors holds every tensor once, and a run whose hooks saw nothing runs once
more."""
from __future__ import annotations

import numpy as np

from pytest_paddle_infer.cases.tensor_selection import Selection
from pytest_paddle_infer.engine.capture import BaselineStore, HookRouter
from pytest_paddle_infer.engine.recording import hooked_run, needs_warm_up, recorded
from pytest_paddle_infer.modes.run_modes import RUN_MODES, baseline_recipe
from pytest_paddle_infer.verdict.evidence import Tally, broken_rules


class Tensor:
    def __init__(self, array):
        self.array, self.layout, self.dtype = array, "NCHW", "paddle.float32"

    def numpy(self):
        return self.array


# a legacy program's stream on GPU: (op type, output name)
STREAM = [("conv2d", "conv2d_0.tmp_0"), ("batch_norm", "batch_norm_0.tmp_2"),
          ("relu", "relu_0.tmp_0"), ("pool2d", "pool2d_0.tmp_0")]


class RecordedGpuPredictor:
    """Replays STREAM through the registered hook; its first run calls the hook for the last
    op only, as recorded on the new executor's first run."""

    def __init__(self, first_run=STREAM[-1:]):
        self.first_run, self.runs, self.hook = first_run, 0, None

    def register_output_hook(self, hook):
        self.hook = hook

    def run(self):
        self.runs += 1
        for i, (op, name) in enumerate(self.first_run if self.runs == 1 else STREAM):
            self.hook(op, name, Tensor(np.full((1, 2), i, "float32")))
        return {"out": np.zeros(1)}


def baseline_run(predictor, tmp_path, calls):
    router = HookRouter(predictor)
    store = BaselineStore(tmp_path / "store", Selection("all"))
    tally = Tally("baseline", "m/inference.pdmodel", "legacy")
    hooked_run(router, store, tally, predictor.run, warm=needs_warm_up(calls))
    return store, tally.evidence


def test_gpu_baselines_record_after_a_warm_up_run(tmp_path):
    gpu = baseline_recipe("gpu", device_id=0)
    assert needs_warm_up(gpu) and not needs_warm_up(baseline_recipe("cpu"))
    assert needs_warm_up(["enable_use_gpu(256, 0, PrecisionType.Float32); switch_ir_optim(True)"])
    predictor = RecordedGpuPredictor()
    store, evidence = baseline_run(predictor, tmp_path, gpu)
    assert [r.name for r in store.records] == [name for _, name in STREAM]  # each once
    assert predictor.runs == 2 and evidence.ops == {op: 1 for op, _ in STREAM}


def test_without_the_warm_up_the_partial_first_run_is_all_the_store_gets(tmp_path):
    """What the warm-up prevents: a CPU recipe takes no warm-up, and a partial first run is
    recorded as it is."""
    predictor = RecordedGpuPredictor()
    store, _ = baseline_run(predictor, tmp_path, baseline_recipe("cpu"))
    assert [r.name for r in store.records] == ["pool2d_0.tmp_0"]


# -- recording --------------------------------------------------------------------------------


class FakeTensor:
    dtype, layout = "paddle.float16", "NCHW"


class FakePredictor:
    """Calls no hook on its first run, like Paddle 3.x's new executor on GPU."""

    def __init__(self):
        self.runs = 0
        self.hooks = []

    def register_output_hook(self, fn):
        self.hooks.append(fn)

    def run(self):
        self.runs += 1
        if self.runs > 1:
            for fn in self.hooks:
                fn("pd_op.conv2d:0", "t", FakeTensor())
        return self.runs


def test_a_run_whose_hooks_saw_nothing_runs_once_more():
    predictor = FakePredictor()
    router = HookRouter(predictor)
    seen = []
    router.sink = lambda *call: seen.append(call[0])
    shown = Tally("gpu_fp16", "m.pdmodel", "legacy", RUN_MODES["gpu_fp16"].shows)
    assert recorded(router, shown, predictor.run)() == 1  # the first run's result
    assert predictor.runs == 2 and shown.evidence.runs == 2 and seen == ["pd_op.conv2d:0"]
    assert shown.evidence.dtypes == {"float16": 1} and broken_rules("gpu_fp16", shown.evidence) == []
    assert router.recorder is None
    recorded(router, Tally("c", "m", "legacy"), predictor.run)()
    assert predictor.runs == 3  # hooks seen: one run
