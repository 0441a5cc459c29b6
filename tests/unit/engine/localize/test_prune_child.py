"""localize/prune_child.py: pruning a failing program to its first bad op, in the pruning
child with real predictors (both program formats, on divergences every CPU has: tiny_cnn and
pass_divergence under onednn_fp32), and the repro script it leaves."""
import pickle
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from helpers import DIFFERING_MODE
import pass_divergence
from pytest_paddle_infer.engine.localize import prune, repro, static_rung
from pytest_paddle_infer.modes.run_modes import baseline_recipe, parse_run_mode, recipe

from unit.engine.localize.test_prune import tiny_cnn
from unit.engine.localize.test_repro import run_script


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
                       "pruning", module=static_rung.CHILD)
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
