"""--paddle-localize past the ladder, end to end: the static Executor rung, pruning to the
first bad op with its local error in the per-tensor table, and the repro folder whose script
fails with plain Paddle as the case did."""
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)


def test_localize_prunes_to_the_first_bad_op_and_leaves_a_repro(run_pytest, pytester, paddle_cache,
                                                                  xdist_mode):
    """tiny_cnn (the default program: PIR on Paddle 3.x) under onednn_fp32 at zero tolerance,
    a divergence every CPU has: even with every optimization off oneDNN's fp32 convolution
    sums otherwise than the native one (max abs 3e-7 on an AMD EPYC with avx2, 1.2e-7 on a
    Xeon with AMX; op 0 alone 7.2e-7 on both), and so does the static Executor with oneDNN
    kernels: the framework's kernels, not inference. The first convolution alone, fed the
    baseline's input, breaks tolerance; its repro script fails."""
    import pytest
    from helpers import DIFFERING_MODE, ZERO_TOLERANCE

    from pytest_paddle_infer.models.cache import resolve
    from pytest_paddle_infer.models.source import parse_source

    if resolve(parse_source("tiny_cnn"), paddle_cache).format != "pir":
        pytest.skip("this Paddle exports legacy programs only")
    result = run_pytest("--paddle-model=tiny_cnn", f"--run-mode={DIFFERING_MODE}", *ZERO_TOLERANCE,
                        "--paddle-localize", "--paddle-intermediates=all",
                        "--paddle-report=rep", "--junitxml=out.xml", *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*all optimizations off*fails*",
        "*static Executor*fails (max abs *)  paddle.static.Executor on the CPU (oneDNN kernels, FLAGS_use_mkldnn)",
        "*-> the static Executor * diverges from the baseline too: the framework's op implementations*",
        "first bad op: op 0 pd_op.conv2d (*) breaks tolerance on its own, fed the baseline's inputs: local max abs *",
        "*first divergent tensor: op * (found by the intermediates)",
        f"repro: */rep/repro/tiny_cnn-1x3x32x32-{DIFFERING_MODE}-* (python *repro.py: plain paddle.inference and numpy)",
    ])
    folder = next((pytester.path / "rep" / "repro").iterdir())
    junit = (pytester.path / "out.xml").read_text()
    assert 'name="paddle_first_bad_op" value="op 0 pd_op.conv2d (op0:conv2d:0)"' in junit
    assert f'name="paddle_repro" value="{folder}"' in junit
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".paddle-infer")) == ["README.md", "inputs.npz", "model", "repro.py"]
    doc = json.loads(next((pytester.path / "rep").glob("tiny_cnn-*.json")).read_text())
    assert doc["summary"]["repro"] == str(folder)
    index = (pytester.path / "rep" / "index.html").read_text()
    assert f'href="repro/{folder.name}/README.md"' in index and "first bad op: op 0 pd_op.conv2d" in index
    local = doc["columns"].index("Local Atol")
    measured = [row for row in doc["rows"] if row[local] is not None]
    assert measured and all(row[local] >= 0 for row in measured)
    run = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr[-2000:]
    assert "1 of 1 outputs outside atol=0.0 rtol=0.0" in run.stdout
    # the same way: the script's difference is the local error the localization measured
    local_max_abs = float(result.stdout.str().split("local max abs ")[1].split()[0])
    script_max_abs = float(run.stdout.split(" max abs ")[1].split()[0])
    assert script_max_abs == pytest.approx(local_max_abs, rel=1e-2)
