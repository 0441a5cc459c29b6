"""Golden outputs: --paddle-save-goldens, --paddle-baseline=golden:DIR, --paddle-update-goldens,
end to end with real Paddle."""
import json

import numpy as np
import pytest

from pytest_paddle_infer.goldens import META, file_name, golden_path, read_meta
from helpers import run_suite, write_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

MODELS = ("--paddle-model=tiny_cnn", "--paddle-model=tiny_detector", "--run-mode=cpu_fp32,onednn_fp32")
CASES = ("tiny_cnn[1x3x32x32-cpu_fp32]", "tiny_cnn[1x3x32x32-onednn_fp32]",
         "tiny_detector[1x3x64x64-cpu_fp32]", "tiny_detector[1x3x64x64-onednn_fp32]")


def edit_golden(path, change_outputs=None, change_meta=None):
    """Rewrite one golden file as someone (or another machine) might have left it."""
    with np.load(path) as data:
        arrays = {k: data[k].copy() for k in data.files}
    meta = json.loads(str(arrays[META]))
    if change_outputs:
        change_outputs(arrays)
    if change_meta:
        change_meta(meta)
    arrays[META] = np.array(json.dumps(meta))
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def test_round_trip_and_one_changed_golden_fails_only_its_case(pytester, run_pytest, xdist_mode):
    goldens = pytester.path / "goldens"
    saved = run_suite(run_pytest, pytester, *MODELS, f"--paddle-save-goldens={goldens}", *xdist_mode)
    assert set(saved.outcomes().values()) == {"passed"} and len(saved.cases) == 4
    assert f"paddle-infer: recording each case's baseline outputs as goldens in {goldens}" in saved.text
    assert sorted(p.name for p in goldens.iterdir() if not p.name.startswith(".paddle-infer")) == sorted(file_name(c) for c in CASES)
    meta = read_meta(golden_path(goldens, "tiny_detector[1x3x64x64-onednn_fp32]"))
    assert meta["baseline"] == "auto" and len(meta["outputs"]) == 2  # boxes, scores
    assert meta["environment"]["paddle"].startswith("paddlepaddle") and meta["environment"]["commit"]
    assert meta["environment"]["device"] == "cpu"
    assert meta["inputs"]["seed"] == 0 and len(meta["inputs"]["digest"]) == 8
    assert meta["tolerances"] == {name: "atol=0.0001 rtol=0.0001" for name in meta["outputs"]}

    compared = run_suite(run_pytest, pytester, *MODELS, f"--paddle-baseline=golden:{goldens}", *xdist_mode)
    assert set(compared.outcomes().values()) == {"passed"} and len(compared.cases) == 4

    def nudge_a_score(arrays):
        arrays["o1"][0, 2] += 0.05

    def from_another_machine(meta):
        meta["environment"].update(paddle="paddlepaddle-gpu 3.0.0", cuda="11.8", cudnn="8.6")

    edit_golden(golden_path(goldens, "tiny_detector[1x3x64x64-onednn_fp32]"), nudge_a_score, from_another_machine)
    run = run_suite(run_pytest, pytester, *MODELS, f"--paddle-baseline=golden:{goldens}", *xdist_mode)
    changed = "::tiny_detector[1x3x64x64-onednn_fp32]"
    assert {k: v for k, v in run.outcomes().items() if v != "passed"} == {changed: "failed"}
    message = run.cases[changed].message
    assert f"1 of 2 outputs outside tolerance; first: {meta['outputs'][1]} (" in message  # the scores
    assert f"golden {golden_path(goldens, 'tiny_detector[1x3x64x64-onednn_fp32]')}" in message
    assert "by paddlepaddle-gpu 3.0.0 (commit " in message and "on cpu, cuda 11.8, cudnn 8.6" in message
    assert "from baseline auto: disable_mkldnn(); switch_ir_optim(False)" in message
    assert f"inputs: seed 0, digest {meta['inputs']['digest']}" in message
    assert "differs from this run: paddle: paddlepaddle-gpu 3.0.0 -> paddlepaddle" in message
    assert "cuda: 11.8 -> -" in message
    # the header sums up what the goldens were recorded with, and what differs
    assert f"paddle-infer: goldens {goldens}: 3 recorded with paddlepaddle" in run.text
    assert (f"paddle-infer: goldens {goldens}: 1 recorded with paddlepaddle-gpu 3.0.0, cuda 11.8, "
            f"cudnn 8.6, device cpu; differs from this run: paddle: paddlepaddle-gpu 3.0.0 -> ") in run.text


def test_missing_golden_other_inputs_and_update(pytester, run_pytest, xdist_mode):
    goldens = pytester.path / "goldens"
    run_suite(run_pytest, pytester, "--paddle-model=tiny_cnn", "--run-mode=cpu_fp32",
              f"--paddle-save-goldens={goldens}", *xdist_mode)
    both = ("--paddle-model=tiny_cnn", "--paddle-model=tiny_detector", "--run-mode=cpu_fp32",
            f"--paddle-baseline=golden:{goldens}")
    run = run_suite(run_pytest, pytester, *both, "--paddle-seed=1", *xdist_mode)
    assert set(run.outcomes().values()) == {"error"}
    other_inputs = run.cases["::tiny_cnn[1x3x32x32-cpu_fp32]"].message
    assert "the golden was recorded with other inputs (seed 0, digest" in other_inputs
    assert "shapes x 1x3x32x32); this run's inputs: seed 1, digest" in other_inputs
    missing = run.cases["::tiny_detector[1x3x64x64-cpu_fp32]"].message
    assert "no golden for tiny_detector[1x3x64x64-cpu_fp32] in" in missing and "--paddle-save-goldens=" in missing
    assert "Traceback" not in run.text

    run = run_suite(run_pytest, pytester, *both, "--paddle-seed=1", "--paddle-update-goldens", *xdist_mode)
    assert set(run.outcomes().values()) == {"passed"} and len(run.cases) == 2
    for case in ("tiny_cnn[1x3x32x32-cpu_fp32]", "tiny_detector[1x3x64x64-cpu_fp32]"):
        meta = read_meta(golden_path(goldens, case))
        assert meta["inputs"]["seed"] == 1 and meta["baseline"] == "auto"
    run = run_suite(run_pytest, pytester, *both, "--paddle-seed=1", *xdist_mode)
    assert set(run.outcomes().values()) == {"passed"} and len(run.cases) == 2


def test_a_suites_golden_dir_is_relative_to_the_suite(pytester, run_pytest, xdist_mode):
    write_suite(pytester, """
        defaults:
          baseline: golden:goldens
          run_modes: [onednn_fp32]
        models:
          tiny_cnn: {}
    """, name="gate/paddle_goldens.yaml")
    run = run_suite(run_pytest, pytester, "gate", *xdist_mode)
    assert run.outcomes() == {"gate.paddle_goldens.yaml::tiny_cnn[1x3x32x32-onednn_fp32]": "error"}
    assert f"no golden for tiny_cnn[1x3x32x32-onednn_fp32] in {pytester.path / 'gate' / 'goldens'}" in run.text
    run = run_suite(run_pytest, pytester, "gate", "--paddle-update-goldens", *xdist_mode)
    assert set(run.outcomes().values()) == {"passed"}
    assert golden_path(pytester.path / "gate" / "goldens", "tiny_cnn[1x3x32x32-onednn_fp32]").is_file()
    run = run_suite(run_pytest, pytester, "gate", *xdist_mode)
    assert set(run.outcomes().values()) == {"passed"}


@pytest.mark.parametrize("args, message", [
    (["--paddle-baseline=golden"], "--paddle-baseline: unknown baseline 'golden'; valid baselines: "
                                   "auto, cpu, gpu, dygraph, static, golden:DIR"),
    (["--paddle-baseline=golden:"], "--paddle-baseline: golden: needs a directory, e.g. golden:tests/goldens"),
    (["--paddle-baseline=golden:nowhere"], "*golden:*nowhere: no such directory; record goldens first*"),
    (["--paddle-baseline=golden:.", "--paddle-save-goldens=out"],
     "--paddle-save-goldens records live baselines, but --paddle-baseline is golden:*; to rewrite those "
     "goldens use --paddle-update-goldens instead"),
    (["--paddle-save-goldens=out", "--paddle-update-goldens"],
     "--paddle-save-goldens and --paddle-update-goldens exclude each other*"),
])
def test_bad_golden_options_stop_the_session(pytester, run_pytest, xdist_mode, args, message):
    result = run_pytest("--paddle-model=tiny_cnn", *args, *xdist_mode)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_golden_options_from_the_ini_file(pytester, run_pytest, xdist_mode):
    pytester.makeini("""
        [pytest]
        paddle_model = tiny_cnn
        run_mode = cpu_fp32
        paddle_baseline = dygraph
        paddle_save_goldens = recorded
    """)
    result = run_pytest(*xdist_mode)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["paddle-infer: baseline dygraph, *",
                                 "paddle-infer: recording each case's baseline outputs as goldens in *recorded"])
    meta = read_meta(golden_path(pytester.path / "recorded", "tiny_cnn[1x3x32x32-cpu_fp32]"))
    assert meta["baseline"] == "dygraph" and meta["outputs"] == ["out"]
