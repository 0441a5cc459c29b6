"""localize/prune.py, prune_child.py, program_cut.py, repro.py and static_rung.py: pruning a
failing program to its first bad op (real predictors in the pruning child, both program formats,
on divergences every CPU has: tiny_cnn and pass_divergence under onednn_fp32),
the repro script it leaves (run as a user would run it), and the texts."""
import pickle
import shutil
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pass_divergence
import pytest
from helpers import DIFFERING_MODE

from pytest_paddle_infer.engine.capture import Record, fingerprint
from pytest_paddle_infer.engine.localize import prune, repro, static_rung
from pytest_paddle_infer.modes.run_modes import Call, PassNames, Precision, baseline_recipe, \
    parse_run_mode, recipe
from pytest_paddle_infer.verdict.rows import TensorComparison
from pytest_paddle_infer.protocol import CaseResult, IntermediateRow


def tiny_cnn(paddle_cache, legacy: bool):
    from pytest_paddle_infer.models.cache import resolve
    from pytest_paddle_infer.models.source import parse_source

    model = resolve(parse_source("tiny_cnn"), paddle_cache, legacy=legacy)
    if not legacy and model.format != "pir":
        pytest.skip("this Paddle exports legacy programs only")
    return model


def run_script(folder, *args):
    return subprocess.run([sys.executable, str(folder / repro.SCRIPT), *args],
                          capture_output=True, text=True, timeout=300)


def prune_in_child(model, tmp_path, mode: str, atol: float, hint=None, shape=(1, 3, 32, 32), rtol=None,
                   **more):
    from pytest_paddle_infer.models.cache import run_child

    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, x=np.random.RandomState(0).uniform(-1, 1, shape).astype("float32"))
    folder = tmp_path / "repro"
    folder.mkdir()
    base = baseline_recipe("cpu", None, 0, model.format)
    cand = recipe(parse_run_mode(mode))
    request = {"prog_file": model.prog_file, "inputs_npz": str(inputs), "baseline_calls": base,
               "candidate_calls": cand, "atol": atol, "rtol": atol if rtol is None else rtol, "cosine_min": None,
               "hint": hint, "work_dir": str(tmp_path / "cuts"), "repro_dir": str(folder),
               "budget": 24, **more}
    (tmp_path / "request.pkl").write_bytes(pickle.dumps(request))
    answer = run_child(["prune", str(tmp_path / "request.pkl")], model.format == "legacy",
                       "pruning", module=prune.CHILD)
    return answer, folder, base, cand


@pytest.mark.parametrize("legacy", [False, True], ids=["pir", "legacy"])
def test_pruning_names_the_first_bad_op_and_its_repro_fails_alone(paddle_cache, tmp_path, legacy):
    """onednn_fp32, divergences every CPU has. PIR, tiny_cnn at zero tolerance: the first
    convolution alone, fed the baseline's input, breaks tolerance (oneDNN's convolution sums
    otherwise than the native one). Legacy, pass_divergence at its ATOL (rtol 0), within it
    in every kernel alone: no op alone breaks it, but ops 4..5 do together from the
    baseline's values, and not from op 5 on (op 5 alone passed): the conv + batch norm fold
    that the ladder blames. Either way the repro script fails with plain Paddle."""
    if legacy:
        model, atol = pass_divergence.exported(paddle_cache, legacy=True), pass_divergence.ATOL
    else:
        model, atol = tiny_cnn(paddle_cache, False), 0.0
    answer, folder, base, cand = prune_in_child(model, tmp_path, DIFFERING_MODE, atol, rtol=0.0)
    assert answer["whole"]["passed"] is False
    if legacy:
        conv, bn = pass_divergence.CONV, pass_divergence.BN
        assert answer["first_bad"] is None and answer["run_start"] == conv
        assert answer["repro"]["kind"] == "run" and answer["repro"]["ops"] == [conv, bn]
        assert answer["repro"]["types"] == ["conv2d", "batch_norm"]
        locals_ = [l for l in answer["locals"] if l["op"] <= bn]
        assert len(locals_) == bn + 1 and all(l["passed"] for l in locals_)  # none alone
        # halving over the run's start: from op 0, 2, 3 and 4 it fails (op 5 alone passed)
        assert [(t["start"], t["passed"]) for t in answer["trials"] if t["what"] == "segment"] == [
            (0, False), (2, False), (3, False), (conv, False)]
    else:
        assert answer["first_bad"] == 0 and answer["op_types"][0] == "pd_op.conv2d"
        assert answer["repro"] == {**answer["repro"], "kind": "op", "ops": [0], "inputs": ["x"]}
        assert answer["locals"][0]["max_abs"] > 0
    assert answer["builds"] <= 30
    assert answer["divergent_from"] == "halving"
    lines = prune.prune_lines(answer, "")
    what = prune._repro_what(answer, answer["repro"])
    write_program = answer["repro"]["program"].rsplit("/", 1)[1]
    repro.write_repro(folder, f"m[{DIFFERING_MODE}]", what, write_program, base, cand, atol, 0.0, lines)
    failing = run_script(folder)
    assert failing.returncode == 1, failing.stderr[-2000:]
    assert f"1 of 1 outputs outside atol={atol} rtol=0.0" in failing.stdout


def test_a_hinted_tensor_the_cut_program_does_not_reproduce_is_passed_over(paddle_cache, tmp_path):
    """Legacy pass_divergence, onednn_fp32 at its ATOL: the hint names the convolution's
    output (op 4), but the program cut there computes it exactly (integers; the divergence
    needs the batch norm after it folded in, which fetching the convolution's output
    prevents): halving from there finds the batch norm (op 5) and the run of ops 4..5 that
    fails. The baseline's values come in runs of at most 64 KiB here (spilled to disk), with
    the same outcome."""
    model = pass_divergence.exported(paddle_cache, legacy=True)
    conv, bn = pass_divergence.CONV, pass_divergence.BN
    answer, *_ = prune_in_child(model, tmp_path, DIFFERING_MODE, pass_divergence.ATOL, rtol=0.0,
                                chunk_bytes=64 << 10,
                                hint={"name": "conv2d_0.tmp_0", "shape": [1, 16, 32, 32], "fingerprint": []})
    assert answer["builds"] - len(answer["trials"]) >= 4  # baseline runs beside the trials
    assert answer["first_divergent"] == bn
    assert answer["divergent_from"] == "halving past the intermediates' first divergent tensor"
    assert answer["run_start"] == conv and answer["repro"]["ops"] == [conv, bn]


def test_a_repro_of_a_passing_configuration_exits_0(paddle_cache, tmp_path):
    """The counter-check: the whole-model repro of a configuration that matches its
    baseline (cpu_fp32) passes at the default tolerance."""
    model = tiny_cnn(paddle_cache, legacy=False)
    folder = tmp_path / "repro"
    (folder / "model").mkdir(parents=True)
    shutil.copyfile(model.prog_file, folder / "model" / "inference.json")
    shutil.copyfile(model.params_file, folder / "model" / "inference.pdiparams")
    np.savez(folder / repro.INPUTS, x=np.random.RandomState(0).uniform(-1, 1, (1, 3, 32, 32)).astype("float32"))
    repro.write_repro(folder, "tiny_cnn[cpu_fp32]", "the whole program", "inference.json",
                      baseline_recipe("cpu", None, 0, "pir"), recipe(parse_run_mode("cpu_fp32")),
                      1e-4, 1e-4)
    passing = run_script(folder)
    assert passing.returncode == 0, passing.stdout + passing.stderr[-2000:]
    assert "all 1 outputs within atol=0.0001 rtol=0.0001" in passing.stdout


def test_call_source_is_python_on_config():
    assert repro.call_source(Call("enable_mkldnn")) == "config.enable_mkldnn()"
    assert (repro.call_source(Call("enable_use_gpu", (256, 0, Precision("Half"))))
            == "config.enable_use_gpu(256, 0, PrecisionType.Half)")
    assert (repro.call_source(Call("enable_custom_passes", (PassNames(["a"]), True)))
            == "config.enable_custom_passes(['a'], True)")
    assert (repro.call_source(Call("set_optim_cache_dir", ("/ci/cache/optim/x",)))
            == 'config.set_optim_cache_dir(os.path.join(HERE, "optim_cache", ""))')
    guarded = repro.call_source(Call("set_tensorrt_optimization_level", (3,), optional=True))
    assert guarded.startswith("if hasattr(config, 'set_tensorrt_optimization_level'):")
    compile(repro.script_text("c", "w", "inference.json", [Call("disable_mkldnn")],
                              [Call("x", optional=True)], 1e-4, 1e-4), "repro.py", "exec")


def test_static_rung_runs_only_when_everything_off_fails_and_says_which_side():
    rung = lambda name, passed: SimpleNamespace(name=name, passed=passed)
    assert static_rung.all_off_failed(SimpleNamespace(rungs=[rung("all optimizations off", False)]))
    assert not static_rung.all_off_failed(SimpleNamespace(rungs=[rung("all optimizations off", True),
                                                                 rung("as configured", False)]))
    # a case that crashed: a raise with everything off is another failure, no kernels' verdict
    from pytest_paddle_infer.engine.localize.ladder import Localization, Rung

    off = lambda detail: [Rung("all optimizations off", "x", False, detail=detail)]  # noqa: E731
    assert not static_rung.all_off_failed(Localization(off("raised: (NotFound) ..."), failure="crashed"))
    assert static_rung.all_off_failed(Localization(off("crashed: the trial's process ..."), failure="crashed"))
    assert "framework's op implementations" in static_rung.verdict(False, "native kernels")
    assert "an inference issue" in static_rung.verdict(True, "native kernels")
    assert "no verdict" in static_rung.verdict(None, "native kernels")
    assert static_rung.rung_line(False, 3e-7, "Executor").startswith("  static Executor              fails (max abs 3e-07)")


def test_prune_lines_say_what_was_found():
    answer = {"op_types": ["conv2d", "batch_norm", "relu"], "ops": 3, "builds": 7, "seconds": 1.0,
              "first_bad": None, "run_start": 0, "first_divergent": 2, "divergent_from": "halving",
              "locals": [{"op": i, "passed": True, "max_abs": 0.0, "tensor": "t", "shape": [1]}
                         for i in range(3)]}
    text = "\n".join(prune.prune_lines(answer, ""))
    assert "no op alone up to op 2 relu breaks tolerance; from op 0 (conv2d) on they do together" in text
    assert "first divergent tensor: op 2 relu (found by halving)" in text
    assert "7 predictor builds" in text
    answer.update(first_bad=1, run_start=None)
    answer["locals"][1].update(passed=False, max_abs=0.5)
    assert prune.prune_lines(answer, "")[0].startswith("first bad op: op 1 batch_norm (t, shape [1])")
    assert "not done: the candidate takes 3 steps" in prune.prune_lines({}, "the candidate takes 3 steps")[0]


def test_local_errors_go_to_the_rows_of_their_tensor_by_name_or_by_values(tmp_path):
    """Legacy tensors pair by name; PIR ones (address names) by the baseline's values."""
    values = {"conv_out": np.arange(16, dtype=np.float32), "0x1_inner_var_3": -np.arange(16, dtype=np.float32)}
    records = [Record(i, "op", n, (16,), "float32", tmp_path / f"{i}.npy", fingerprint(a))
               for i, (n, a) in enumerate(values.items())]
    store = SimpleNamespace(records=records, by_name={r.name: r for r in records})
    row = lambda name: IntermediateRow(0, TensorComparison(name, (16,), (16,), "float32", "float32", 0, 0),
                                       name, "name", False)
    result = CaseResult("c", [], "", "", "", intermediates=[row("conv_out"), row("0x1_inner_var_3"), row("other")])
    answer = {"locals": [
        {"tensor": "conv_out", "shape": [16], "fingerprint": [], "max_abs": 0.25, "passed": False},
        {"tensor": "op7:relu:0", "shape": [16], "max_abs": 0.0, "passed": True,
         "fingerprint": fingerprint(values["0x1_inner_var_3"]).tolist()},
    ]}
    prune.mark_local_errors(result, answer, store)
    assert [(r.local_max_abs, r.local_passed) for r in result.intermediates] == [
        (0.25, False), (0.0, True), (None, None)]


def test_a_cut_never_feeds_a_list_value():
    """A PIR builtin.combine makes a list, not a tensor: a cut after it pulls the combine in
    and feeds the tensors it combines; ops whose output is a list are not cut points."""
    from pytest_paddle_infer.engine.localize.program_cut import Op, Program

    prog = Program("p.json", "pir", inputs=["x"], outputs=["c"])
    prog.ops = [Op(0, "pd_op.relu", ["x"], ["a"]), Op(1, "pd_op.relu", ["x"], ["b"]),
                Op(2, "builtin.combine", ["a", "b"], ["v"]), Op(3, "pd_op.concat", ["v"], ["c"])]
    prog.producer = {"a": 0, "b": 1, "v": 2, "c": 3}
    prog.dense = {"x", "a", "b", "c"}
    assert prog.segment(3, ["c"]) == [2, 3]
    assert prog.crossing(3, ["c"]) == ["a", "b"]
    assert prog.crossing(1, ["c"]) == ["x", "a"]  # relu b runs, a comes from before the cut
    assert [prog.cuttable(i) for i in range(4)] == [True, True, False, True]


LATE_CONV = '''
import sys, paddle
class Net(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = paddle.nn.Conv2D(4, 8, 3)
    def forward(self, x):
        y = paddle.nn.functional.dropout(x, 0.5, training=self.training)  # an optional operand
        y = paddle.nn.functional.max_pool2d(paddle.nn.functional.relu(y), 2)
        return self.conv(y * 2.0)
paddle.seed(0)
net = Net()
net.eval()
spec = [paddle.static.InputSpec([None, 4, 16, 16], "float32", "x")]
paddle.jit.save(paddle.jit.to_static(net, input_spec=spec), sys.argv[1] + "/inference")
'''


def test_the_first_bad_op_is_the_first_that_errs_on_its_own_not_the_first_op(tmp_path):
    """dropout (eval), relu, max pool and a scale by 2 are exact under oneDNN fp32; the
    convolution after them is not (1e-6): at zero tolerance pruning names op 4 conv2d, the
    ops before it measured exact on their own. (The dropout's seed tensor is an optional
    operand PIR leaves empty.)"""
    (tmp_path / "net.py").write_text(LATE_CONV)
    (tmp_path / "model").mkdir()
    subprocess.run([sys.executable, str(tmp_path / "net.py"), str(tmp_path / "model")], check=True,
                   capture_output=True, timeout=300)
    prog = tmp_path / "model" / "inference.json"
    if not prog.exists():
        pytest.skip("this Paddle exports legacy programs only")
    model = SimpleNamespace(prog_file=str(prog), format="pir")
    answer, *_ = prune_in_child(model, tmp_path, "onednn_fp32", 0.0, shape=(1, 4, 16, 16))
    assert answer["op_types"][:5] == ["pd_op.dropout", "pd_op.relu", "pd_op.pool2d", "pd_op.scale",
                                      "pd_op.conv2d"]
    assert answer["first_bad"] == 4 and answer["first_divergent"] == 4
    assert [(l["op"], l["passed"]) for l in answer["locals"]][:5] == [
        (0, True), (1, True), (2, True), (3, True), (4, False)]
    assert [l["max_abs"] for l in answer["locals"]][:4] == [0.0, 0.0, 0.0, 0.0]


def test_a_child_past_its_timeout_is_killed_with_a_message():
    from pytest_paddle_infer.errors import ModelError
    from pytest_paddle_infer.models.cache import run_child

    with pytest.raises(ModelError, match="timed out after 0.5 s and was killed"):
        # timeit times the statement (its "-c" is gone in Python 3.12: the child would exit 2 at once)
        run_child(["-n", "1", "-r", "1", "import time; time.sleep(30)"], False, "sleeping", module="timeit",
                  timeout=0.5)


def test_a_failing_step_after_the_ladder_keeps_the_ladder_and_says_so():
    from pytest_paddle_infer.engine.localize.ladder import Localization

    loc = Localization()
    loc.verdict = "deleting pass x brings onednn_bf16 within tolerance"
    prune.prune_step(loc, runner=None, prepared=None)  # nothing to prune with: an internal error
    assert loc.lines()[0].startswith("localization: deleting pass x")
    assert loc.extra and loc.extra[0].startswith("pruning: failed: AttributeError")


def test_a_case_failed_by_an_intermediate_alone_is_pruned_to_that_tensor(paddle_cache, tmp_path):
    """The outputs pass, a tensor tolerance fails batch_norm_0.tmp_2 (legacy pass_divergence
    at its ATOL, onednn_fp32): pruning starts there and does not ask the whole program to
    fail."""
    model = pass_divergence.exported(paddle_cache, legacy=True)
    conv, bn = pass_divergence.CONV, pass_divergence.BN
    answer, *_ = prune_in_child(model, tmp_path, DIFFERING_MODE, pass_divergence.ATOL, rtol=0.0,
                                outputs_fail=False,
                                hint={"name": "batch_norm_0.tmp_2", "shape": [1, 16, 32, 32], "fingerprint": []})
    assert "whole" not in answer and answer["first_divergent"] == bn
    assert answer["divergent_from"] == "intermediates"
    assert answer["repro"]["ops"] == [conv, bn]


@pytest.mark.parametrize("mode, steps", [("onednn_bf16", 1), ("trt_fp16", 2), ("trt_int8", 3)])
def test_the_repro_takes_the_cases_own_recipes_and_prunes_one_build_plans_only(paddle_cache, tmp_path,
                                                                               mode, steps):
    """The Config calls come from the case's plan (the final build) and its baseline; a plan
    of more steps (TensorRT: its cache dir, a calibration) is not pruned and says why."""
    from pytest_paddle_infer.cases.case import Case
    from pytest_paddle_infer.engine.runner import Runner
    from pytest_paddle_infer.models.source import parse_source
    from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule

    model = tiny_cnn(paddle_cache, legacy=True)
    case = Case(parse_source("tiny_cnn"), parse_run_mode(mode),
                CaseTolerances(base=Rule(1e-3, 1e-3), override=Rule(None, None)))
    runner = Runner(tmp_path / "cache")
    baseline, candidate, why_not = prune._calls(runner, SimpleNamespace(case=case, model=model))
    assert [c.method for c in baseline][:2] == ["disable_mkldnn", "switch_ir_optim"] or \
        baseline[0].method == "enable_use_gpu"
    if steps == 1:
        assert candidate == recipe(parse_run_mode(mode)) and why_not == ""
    else:
        assert any(c.method == "enable_tensorrt_engine" for c in candidate)
        assert why_not.startswith(f"the candidate takes {steps} steps (")
        text = repro.script_text(case.id, "w", "inference.pdmodel", baseline, candidate, 1e-2, 1e-2)
        assert 'config.set_optim_cache_dir(os.path.join(HERE, "optim_cache", ""))' in text
        compile(text, "repro.py", "exec")


def test_pruning_judges_by_the_tolerance_the_case_failed_by():
    comparison = lambda name, atol, passed: SimpleNamespace(name=name, atol=atol, rtol=atol / 10,
                                                              bounds={}, passed=passed)
    ok, bad = comparison("out0", 1e-4, True), comparison("out1", 5e-2, False)
    result = SimpleNamespace(rows=[ok, bad], divergent=[])
    assert prune._tolerance(None, result) == (5e-2, 5e-3, None)
    judged = SimpleNamespace(comparison=comparison("conv_out", 1e-3, False), judged=True)
    assert prune._tolerance(None, SimpleNamespace(rows=[ok], divergent=[judged])) == (1e-3, 1e-4, None)
