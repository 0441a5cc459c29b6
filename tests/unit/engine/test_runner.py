"""engine/runner.py: xdist workers of one session share a baseline's outputs; with real
predictors the baseline runs beside the candidate's build; what a case's evidence, engines
and stores say into its result."""
from __future__ import annotations

import json
import os
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from pytest_paddle_infer.cases.case import Case
from pytest_paddle_infer.engine import build_plan as bp
from pytest_paddle_infer.engine.runner import (Runner, empty_store_note, judge_engines, judge_evidence,
                                               shared_outputs)
from pytest_paddle_infer.errors import ModelError
from pytest_paddle_infer.models.inputs import InputSpec
from pytest_paddle_infer.models.source import ModelFiles, parse_source
from pytest_paddle_infer.modes import trt_marking as tm
from pytest_paddle_infer.modes.capabilities import installed_paddle
from pytest_paddle_infer.modes.run_modes import NO_FUSED_OPS, RunModeSpec, parse_run_mode
from pytest_paddle_infer.protocol import CaseResult
from pytest_paddle_infer.report.case_files import case_summary
from pytest_paddle_infer.report.text import failure_message, properties
from pytest_paddle_infer.verdict.evidence import Evidence, broken_rules, tally
from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule

from unit.models.test_program import ZOO
from unit.modes.test_trt_marking import FP16_ENGINE, INT8_LAYER, write_engine_info
from unit.verdict.test_evidence import F32, NO_TRT_STREAM, TRT_STREAM, candidate


def test_the_second_worker_reads_what_the_first_computed(tmp_path):
    key = (str(tmp_path / "inference.json"), ("disable_mkldnn()",), "digest0")
    computed = OrderedDict([("fetch_name_1", np.arange(6, dtype="float32").reshape(2, 3)),
                            ("fetch_name_0", np.array([7], dtype="int64"))])
    calls = []
    first = shared_outputs(tmp_path, key, lambda: calls.append(1) or computed)
    second = shared_outputs(tmp_path, key, lambda: calls.append(2) or {})
    assert calls == [1]
    assert list(second) == ["fetch_name_1", "fetch_name_0"]  # the model's output order
    for name in computed:
        assert second[name].dtype == computed[name].dtype
        np.testing.assert_array_equal(second[name], first[name])
    other = shared_outputs(tmp_path, key[:2] + ("digest1",), lambda: calls.append(3) or computed)
    assert calls == [1, 3] and list(other) == list(computed)  # other inputs: computed again


def test_without_a_shared_dir_every_process_computes(tmp_path):
    assert shared_outputs(None, ("p", (), "d"), lambda: {"x": np.zeros(1)})["x"].shape == (1,)


# ---------------------------------------------------------------------------------------
# execute/runner.py with real predictors: without intermediates the baseline's runs (the
# case's inputs, and other inputs for the vacuity check) go on beside the candidate's build;
# both are in before the candidate runs.
# ---------------------------------------------------------------------------------------


def case_of(mode: str, intermediates: str = "none", shape=(2, 3, 32, 32)) -> Case:
    return Case(model=parse_source("tiny_cnn"), run_mode=parse_run_mode(mode),
                intermediates=intermediates, shapes=(("x", shape),),
                tolerances=CaseTolerances(Rule(1e-4, 1e-4)), program="legacy")


@pytest.fixture
def runner(paddle_cache):
    r = Runner(paddle_cache)
    yield r
    r.close()


def baseline_threads(runner, monkeypatch) -> list:
    """The threads the plain baseline's runs happen in (observed, not replaced)."""
    import threading

    seen, real = [], runner.predictor_baseline
    monkeypatch.setattr(runner, "predictor_baseline", lambda *a: seen.append(
        threading.current_thread().name) or real(*a))
    return seen


def test_the_baseline_runs_beside_the_candidates_build(runner, monkeypatch):
    seen = baseline_threads(runner, monkeypatch)
    prepared = runner.prepare(case_of("onednn_fp32"))
    assert seen and all(name.startswith("paddle-infer-beside") for name in seen)
    assert prepared.baseline_outputs and prepared.seeds is not None  # both in before setup ends
    first, second, seeds = prepared.seeds
    assert seeds == (0, 1)  # the case's seed and the next
    for name, array in first.items():  # the pair is the plain baseline's on two inputs
        np.testing.assert_array_equal(array, prepared.baseline_outputs[name])
        assert not np.array_equal(array, second[name])
    result = runner.run(prepared)
    assert result.passed and not result.vacuous


def test_with_intermediates_outside_tensorrt_the_baseline_runs_beside_the_build(runner, monkeypatch):
    """Only TensorRT's plan depends on the baseline's tensors (it marks them as engine
    outputs); elsewhere the baseline and its spill run beside the candidate's build, as
    without intermediates, and the case still gets every tensor."""
    seen = baseline_threads(runner, monkeypatch)
    prepared = runner.prepare(case_of("onednn_fp32", intermediates="all"))
    assert seen[0].startswith("paddle-infer-beside") and prepared.seeds is not None
    assert prepared.baseline_store is not None and prepared.baseline_store.records
    assert runner.run(prepared).intermediates


def test_a_failing_baseline_is_the_cases_error_in_setup(runner, monkeypatch):
    from pytest_paddle_infer.errors import PredictorError

    def broken(*args, **kwargs):
        raise PredictorError("running the predictor failed: injected")

    seeds = []
    real_seeds = runner.seed_outputs
    monkeypatch.setattr(runner.baselines, "get", broken)
    monkeypatch.setattr(runner, "seed_outputs", lambda *a: seeds.append(a) or real_seeds(*a))
    with pytest.raises(PredictorError, match="injected"):
        runner.prepare(case_of("onednn_fp32"))
    runner._beside.submit(lambda: None).result()  # what was queued beside has run
    assert not runner._beside_work and not seeds  # no second-seed run after a failed baseline


def test_an_interrupt_while_building_is_not_turned_into_the_baselines_error(runner, monkeypatch):
    """Ctrl-C during the candidate's build stops the case at once, even when the baseline
    beside it fails (its error would otherwise be the case's, and the session go on)."""
    import time

    from pytest_paddle_infer.errors import PredictorError

    def failing_baseline(*args, **kwargs):
        time.sleep(0.3)
        raise PredictorError("running the predictor failed: injected")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner.baselines, "get", failing_baseline)
    monkeypatch.setattr(runner.candidates.executor, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner.prepare(case_of("onednn_fp32"))


def test_judge_engines_reads_the_case_dirs_and_fails_an_int8_case(tmp_path):
    optim, model_cache = tmp_path / "optim", tmp_path / "model" / "_opt_cache"
    optim.mkdir()
    model_cache.mkdir(parents=True)
    old = write_engine_info(model_cache / "engine_info_9.json", FP16_ENGINE + [INT8_LAYER])
    os.utime(old, (time.time() - 3600,) * 2)  # an earlier run's: not this engine's
    write_engine_info(optim / "engine_info_1.json", FP16_ENGINE)
    result = CaseResult("m[trt_int8]", [], "", "", "", 0.0)
    judge_engines(result, parse_run_mode("trt_int8"), (str(optim), str(model_cache)), time.time())
    assert result.notes == ["TensorRT engine info: 1 engine(s), 2 layers; layer output precisions: "
                            "FP16 x1, FP32 x1"]
    assert result.problems and "no int8 layer in the TensorRT engine" in result.problems[0]
    fp16 = CaseResult("m[trt_fp16]", [], "", "", "", 0.0)
    judge_engines(fp16, parse_run_mode("trt_fp16"), (str(optim), str(model_cache)), time.time())
    assert fp16.problems == [] and len(fp16.notes) == 1
    nothing = CaseResult("m[trt_int8]", [], "", "", "", 0.0)
    judge_engines(nothing, parse_run_mode("trt_int8"), (str(tmp_path / "none"),), time.time())
    assert nothing.problems == [] and "whether int8 layers were built is not known" in nothing.notes[0]


def paddle_engine_info_path(opt_cache_dir: str, key: str) -> str:
    """Where Paddle 2.6.2 writes the inspector's file (read in its libpaddle.so): the optim
    cache dir and the name concatenated, no separator between."""
    return opt_cache_dir + "engine_info_" + key + ".json"


def test_the_int8_guard_finds_the_file_where_paddle_writes_it(tmp_path):
    """The recipe's optim cache dir ends in a separator, so Paddle's concatenation lands inside
    the case's dir and the int8 guard fires on an engine built in float; a file beside the dir
    (<dir>engine_info_*.json, an optim cache dir given without the separator) is found too."""
    model = ModelFiles("m", str(tmp_path / "m" / "inference.pdmodel"),
                       str(tmp_path / "m" / "inference.pdiparams"), (InputSpec("x", (1, 3, 8, 8)),))
    p = bp.candidate_plan(parse_run_mode("trt_int8"), model, [InputSpec("x", (1, 3, 8, 8))],
                          optim_root=tmp_path / "optim")
    bp.prepare_cache_dir(p.steps[0])
    [given] = [c.args[0] for c in p.final.recipe if c.method == "set_optim_cache_dir"]
    written = write_engine_info(paddle_engine_info_path(given, "1234"), FP16_ENGINE)
    assert os.path.dirname(written) == p.steps[0].path
    start = time.time() - 1
    result = CaseResult("m[trt_int8]", [], "", "", "", 0.0)
    judge_engines(result, parse_run_mode("trt_int8"), bp.engine_dirs(p, model), start)
    assert result.problems and "no int8 layer in the TensorRT engine" in result.problems[0]
    os.remove(written)  # the dir as Paddle would take it without the separator
    beside = write_engine_info(paddle_engine_info_path(given.rstrip(os.sep), "5678"), FP16_ENGINE)
    assert os.path.dirname(beside) == os.path.dirname(p.steps[0].path)
    assert tm.engine_info_files(p.steps[0].path) == [Path(beside)]
    again = CaseResult("m[trt_int8]", [], "", "", "", 0.0)
    judge_engines(again, parse_run_mode("trt_int8"), bp.engine_dirs(p, model), start)
    assert again.problems and "no int8 layer in the TensorRT engine" in again.problems[0]


# -- into the result and the reports --------------------------------------------------------


def _result(recipe: str = "enable_use_gpu(...); enable_tensorrt_engine(...)") -> CaseResult:
    return CaseResult("m[1x3-trt_fp16]", [], "auto: ...", recipe, "d")


def test_judged_evidence_fails_the_case_with_the_message_and_reports_it():
    result = _result()
    baseline = tally("baseline", "/m/inference.pdmodel", "legacy",
                     [("conv2d", "c", F32, "NCHW")], requires=(NO_FUSED_OPS,))
    judge_evidence(result, candidate("trt_fp16", NO_TRT_STREAM), baseline.to_dict())
    assert not result.passed and result.failures == []
    assert result.problems == [broken_rules("trt_fp16", candidate("trt_fp16", NO_TRT_STREAM))[0]]
    message = failure_message(result)
    assert message.splitlines()[0].startswith(
        "m[1x3-trt_fp16]: trt_fp16: no tensorrt_engine op ran: TensorRT took no part in this model")
    assert "ran: trt_fp16: legacy inference.pdmodel: 4 ops of 3 types" in message
    assert "ran: baseline: legacy inference.pdmodel: 1 ops of 1 types (conv2d)" in message
    props = dict(properties(result))
    assert props["paddle_evidence"].startswith("trt_fp16: legacy inference.pdmodel:")
    assert " | baseline: legacy inference.pdmodel:" in props["paddle_evidence"]
    summary = json.loads(json.dumps(case_summary(result)))  # JSON as summary.json holds it
    assert summary["evidence"]["candidate"]["tensorrt_engine_ops"] == 0
    assert summary["evidence"]["baseline"]["ops"] == {"conv2d": 1}
    assert summary["problems"] == result.problems


def test_evidence_that_shows_its_mode_passes():
    result = _result()
    judge_evidence(result, candidate("trt_fp16", TRT_STREAM), None)
    assert result.passed and result.evidence["candidate"]["tensorrt_engine_ops"] == 1
    assert "baseline" not in result.evidence  # a dygraph, static or golden baseline


def test_a_problem_said_already_is_not_repeated():
    """onednn_int8's own check (int8_evidence.py) may have said it first."""
    result = _result("enable_mkldnn(); enable_mkldnn_int8()")
    result.problems.append("onednn_int8: no int8 kernel ran: the candidate's output hooks saw ...")
    judge_evidence(result, candidate("onednn_int8", [("conv2d", "c", F32, "NCHW")]), None)
    assert len(result.problems) == 1


def test_pir_candidate_with_ir_optim_off_notes_its_fusions():
    result = _result("enable_mkldnn(); switch_ir_optim(False)")
    fused = tally("onednn_fp32+no_ir_optim", "m/inference.json", "pir",
                  [("onednn_op.fused_conv2d:0", "a", F32, "ONEDNN")])
    judge_evidence(result, fused, None)
    assert result.passed
    assert result.notes == ["switch_ir_optim(False) does not turn a PIR program's passes off: "
                            "fused ops ran (onednn_op.fused_conv2d)"]


def test_shared_baselines_carry_their_evidence(tmp_path):
    outputs = {"out": np.arange(3.0)}
    written = {}

    def run():
        written["evidence"] = {"role": "baseline", "ops": {"pd_op.conv2d": 1}}
        return outputs

    shared_outputs(tmp_path, ("p", (), "d"), run, written)
    read: dict = {}
    again = shared_outputs(tmp_path, ("p", (), "d"), lambda: pytest.fail("computed twice"), read)
    assert read == written and list(again) == ["out"]


def test_an_empty_store_is_said_so():
    note = empty_store_note("conv*", {"runs": 2})
    assert note == ("intermediates 'conv*': the baseline's output hooks gave no selected tensor in "
                    "2 run(s) (GPU baselines run once before recording): no intermediate tensor "
                    "was compared")


def _converted(path: Path, engines: int) -> Path:
    """A converted program as paddle.tensorrt writes it (dialect 1 is pd_op): ``engines``
    tensorrt_engine ops between the feed and the fetch, the model's other ops gone."""
    ops = [{"#": "p"}, {"#": "1.data"}] + [{"#": "1.tensorrt_engine"}] * engines + [{"#": "1.fetch"}]
    path.write_text(json.dumps({"program": {"regions": [{"#": "region_0", "blocks": [{"ops": ops}]}]}}))
    return path


@pytest.mark.parametrize("engines", [1, 0])
def test_pir_tensorrt_evidence_is_the_converted_program_not_the_output_hook(paddle_cache, tmp_path,
                                                                            engines):
    """Paddle's PIR output hook reports DenseTensor outputs only; a tensorrt_engine op's output
    is a VariableRefArray, so the hooks never show the engine on the PIR path. The case's
    evidence is the converted program: its tensorrt_engine ops and the ops they replaced.
    Driven through Runner.run with a real predictor (CPU here: its hooks show no engine, as
    the GPU's would not) and a converted program file."""
    from pytest_paddle_infer.cases.case import Case
    from pytest_paddle_infer.engine.predictor import run_predictor
    from pytest_paddle_infer.engine.runner import Prepared, Runner
    from pytest_paddle_infer.models.source import parse_source
    from pytest_paddle_infer.modes.run_modes import baseline_recipe
    from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule

    runner = Runner(paddle_cache)
    case = Case(parse_source("tiny_cnn"), parse_run_mode("trt_fp16"),
                CaseTolerances(base=Rule(1e-2, 1e-2), override=Rule(None, None)))
    model = runner.model_files(case.model, legacy=False)
    inputs = runner.inputs(model, {}, 0)
    predictor = runner.predictors.get(model, baseline_recipe("cpu", 1, 0, model.format))
    outputs = run_predictor(predictor, inputs)
    converted = _converted(tmp_path / "inference.json", engines)
    result = runner.run(Prepared(case, model, inputs, outputs, "cpu", predictor, "recipe",
                                 converted_program=str(converted)))
    record = result.evidence["candidate"]
    assert record["tensorrt_engine_ops"] == engines
    assert record["converted"]["replaced"]["conv2d"] >= 1  # the ops the engines took over
    if engines:
        assert result.problems == []
    else:
        assert result.problems == [
            f"trt_fp16: the converted program holds no tensorrt_engine op: paddle.tensorrt.convert "
            f"left every op to Paddle, TensorRT took no part in this model ({converted})"]


PADDLE_3 = int((installed_paddle()[1] or "0").split(".")[0]) >= 3


@pytest.mark.skipif(not PADDLE_3, reason="Paddle 2.x exports legacy programs for every mode")
def test_trt_cases_check_the_legacy_export_baseline_and_candidate(paddle_cache, monkeypatch):
    """On Paddle 3.x, enable_tensorrt_engine never reaches a .json program: a trt_* case of a zoo
    entry runs its legacy export, in its baseline and in its candidate's plan."""
    from pytest_paddle_infer.engine.runner import Runner

    runner = Runner(paddle_cache)
    monkeypatch.setattr(runner, "check_capabilities", lambda case: None)  # as on a TensorRT machine
    planned = []

    def run(plan, model, inputs):  # TensorRT itself cannot run here: record what was planned
        planned.append((plan, model))
        raise ModelError("stop after planning")

    monkeypatch.setattr(runner.candidates.executor, "run", run)
    used = []
    monkeypatch.setattr(runner, "predictor_baseline",
                        lambda case, model, inputs, digest: used.append(model) or (_ for _ in ()).throw(
                            ModelError("stop after the baseline")))
    tolerances = CaseTolerances(Rule(1e-2, 1e-2))
    try:
        for mode in ("trt_fp16", "cpu_fp32"):
            with pytest.raises(ModelError, match="stop after the baseline"):
                runner.prepare(Case(model=ZOO, run_mode=RunModeSpec(mode), tolerances=tolerances))
        assert [Path(m.prog_file).name for m in used] == ["inference.pdmodel", "inference.json"]
        monkeypatch.undo()
        monkeypatch.setattr(runner, "check_capabilities", lambda case: None)
        monkeypatch.setattr(runner.candidates.executor, "run", run)
        monkeypatch.setattr(runner, "baseline_calls", lambda *args: ())  # a plain CPU baseline
        with pytest.raises(ModelError, match="stop after planning"):
            runner.prepare(Case(model=ZOO, run_mode=RunModeSpec("trt_fp16"), tolerances=tolerances))
        plan, model = planned[0]
        assert Path(model.prog_file).name == "inference.pdmodel"
        assert plan.final.recipe[-1].method in ("enable_tensorrt_engine", "set_optim_cache_dir")
    finally:
        runner.close()


def save_program_with_fc(prefix: str) -> None:
    """A PIR program whose first op is ``pd_op.fc`` (built in static mode, as an export of a
    fused layer holds it), then a relu."""
    import paddle

    paddle.enable_static()
    try:
        with paddle.pir_utils.IrGuard():
            main, startup = paddle.static.Program(), paddle.static.Program()
            with paddle.static.program_guard(main, startup):
                x = paddle.static.data("x", [2, 4], "float32")
                w = paddle.create_parameter([4, 3], "float32")
                b = paddle.create_parameter([3], "float32")
                y = paddle.nn.functional.relu(paddle._C_ops.fc(x, w, b, 1, "", False))
            exe = paddle.static.Executor(paddle.CPUPlace())
            exe.run(startup)
            paddle.static.save_inference_model(prefix, [x], [y], exe, program=main)
    finally:
        paddle.disable_static()


def test_a_program_that_ships_a_fused_op_passes_its_baseline_rule(paddle_cache, tmp_path):
    from pytest_paddle_infer.cases.case import Case
    from pytest_paddle_infer.engine.runner import Runner
    from pytest_paddle_infer.models.source import parse_source
    from pytest_paddle_infer.modes.run_modes import parse_run_mode
    from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule

    save_program_with_fc(str(tmp_path / "m" / "inference"))
    runner = Runner(tmp_path / "cache")
    case = Case(parse_source(str(tmp_path / "m")), parse_run_mode("cpu_fp32"),
                CaseTolerances(base=Rule(1e-4, 1e-4), override=Rule(None, None)))
    try:
        result = runner.run(runner.prepare(case))
    finally:
        runner.close()
    assert result.problems == []
    baseline = Evidence.from_dict(result.evidence["baseline"])
    assert baseline.requires == (NO_FUSED_OPS,)  # the plain baseline: optimizations off
    assert baseline.fused == {"pd_op.fc": 1} and baseline.shipped == ("fc",)
    assert broken_rules("baseline", baseline) == []
