"""Layer diffs across machines: goldens with intermediate tensors, golden:DIR compared tensor
by tensor, --paddle-save-runs, and paddle-infer-diff on two saved runs, end to end."""
import json
import subprocess
import sys
from pathlib import Path

import numpy  # noqa: F401  imported before pytester snapshots sys.modules (numpy loads once)
import pytest

from helpers import DIFFERING_MODE, ZERO_TOLERANCE
from pytest_paddle_infer.goldens import file_name, read_meta

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

RECORDED = "tiny_cnn[1x3x32x32-cpu_fp32]"
CHECKED = f"tiny_cnn[1x3x32x32-{DIFFERING_MODE}]"


def _first_divergence_line(text: str) -> str:
    return next(line.strip() for line in text.splitlines() if "first divergent tensor:" in line)


def test_golden_intermediates_name_the_first_divergence_live_and_offline(run_pytest, pytester, xdist_mode):
    pytest.importorskip("openpyxl")
    gold = pytester.path / "gold"
    # "the GPU machine": the native CPU baseline of cpu_fp32, with every intermediate tensor
    recorded = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32", "--paddle-intermediates=all",
                          f"--paddle-save-goldens={gold}")
    recorded.assert_outcomes(passed=1)
    meta = read_meta(gold / file_name(RECORDED))
    tensors = meta["intermediates"]
    assert len(tensors) > 10 and [t["index"] for t in tensors] == list(range(len(tensors)))
    assert {"name", "op_type", "shape", "dtype"} <= set(tensors[0]) and tensors[0]["op_type"] == "pd_op.conv2d"
    assert meta["program"] == {"format": "pir", "file": "inference.json"}
    env = meta["environment"]
    assert env["paddle"].startswith("paddlepaddle") and env["commit"] and env["device"] == "cpu"
    assert "cpu" in env and "cpu_flags" in env

    # "the CPU machine": onednn_fp32 has no golden of its own; it takes cpu_fp32's (same inputs)
    checked = run_pytest("--paddle-model=tiny_cnn", f"--run-mode={DIFFERING_MODE}", "--paddle-intermediates=all",
                         f"--paddle-baseline=golden:{gold}", *ZERO_TOLERANCE,
                         "--paddle-save-runs=runs", "--paddle-report=rep", *xdist_mode)
    checked.assert_outcomes(failed=1)
    live = checked.stdout.str()
    assert f"recorded for case {RECORDED} (same model, shapes and inputs" in live
    assert f"intermediates: {len(tensors)} tensors recorded in the golden" in live
    first = _first_divergence_line(live)
    # the first tensor oneDNN computes, the fused conv with its batch_norm folded in, paired
    # with the golden by its values
    assert first.startswith("first divergent tensor: #0 onednn_op.fused_conv2d ")
    run_file = pytester.path / "runs" / file_name(CHECKED)
    assert read_meta(run_file)["role"] == "run" and read_meta(run_file)["run_mode"] == DIFFERING_MODE

    # offline, the two saved runs: the same first divergence and the same per-tensor rows
    diff = subprocess.run([sys.executable, "-m", "pytest_paddle_infer.diff", str(gold / file_name(RECORDED)),
                           str(run_file), "--atol=0", "--rtol=0", "--report=drep"],
                          cwd=pytester.path, capture_output=True, text=True)
    assert diff.returncode == 1, diff.stderr
    assert _first_divergence_line(diff.stdout) == first
    assert "B against A: " in diff.stdout and "intermediate tensors and 1 outputs outside tolerance" in diff.stdout
    rows = lambda d: json.loads((pytester.path / d / f"{Path(file_name(CHECKED)).stem}.json").read_text())["rows"]
    assert rows("drep") == rows("rep") and len(rows("rep")) > 1
    index = (pytester.path / "drep" / "index.html").read_text()
    assert f'href="{file_name(CHECKED).replace(".npz", ".xlsx")}"' in index and "paddle-infer-diff" in index

    # within a tolerance that onednn_fp32 meets, the diff passes (exit 0): it judged, it did not just list
    ok = subprocess.run([Path(sys.executable).parent / "paddle-infer-diff", str(gold / file_name(RECORDED)),
                         str(run_file), "--atol=0.1", "--rtol=0.1"], capture_output=True, text=True)
    assert ok.returncode == 0 and "B against A: within tolerance" in ok.stdout
