"""End to end: --paddle-suggest-tolerances on a copy of example_suites/cpu_sweep.paddle.yaml
made small (ResNet50 and MobileNetV3 replaced by tiny_cnn, one shape each) and the same on
every CPU (its onednn_bf16 entries, which skip on a CPU without bf16, replaced by onednn_fp32
with two threads, tolerances and all): print leaves the file alone and shows the figures;
write rewrites the tolerances in place, comments and anchors kept, and the rewritten suite
passes (also under -n 2, where only the controller writes)."""
import re

import pytest

from pytest_paddle_infer.cases.suite import load_suite
from pytest_paddle_infer.cases.suite_nodes import Context
from helpers import DIFFERING_MODE, EXAMPLES, run_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

CASE_MODE = f"{DIFFERING_MODE}+threads=2"  # what stands in for onednn_bf16


def small_sweep() -> str:
    text = (EXAMPLES / "cpu_sweep.paddle.yaml").read_text()
    head, models = text.split("\nmodels:\n")
    detector = models[models.index("  tiny_detector:"):]
    detector = detector.replace("[{image: [1, 3, 64, 64]}, {image: [4, 3, 64, 64]}]", "[{image: [1, 3, 64, 64]}]")
    # the defaults' third entry needs a model that takes the defaults
    tiny = "  tiny_cnn:                     # stands in for the larger models\n    shapes: [[1, 3, 32, 32]]\n\n"
    text = head + "\nmodels:\n" + tiny + detector
    # in flow style ({mode: onednn_bf16, ...}) and in block style (- mode: onednn_bf16)
    text = text.replace("{mode: onednn_bf16,", f"{{mode: {DIFFERING_MODE}, threads: 2,")
    text, blocks = re.subn(r"^( *- )mode: onednn_bf16$",
                           lambda m: f"{m[1]}mode: {DIFFERING_MODE}\n{' ' * len(m[1])}threads: 2", text, flags=re.M)
    assert "onednn_bf16" not in re.sub(r"#.*", "", text) and blocks == 1, text
    return text


def atols(path):
    ctx = Context(path.name, path.parent, path.parent, path.parent / "cache")
    return {sc.case.id: [sc.case.tolerances.for_tensor(f"fetch_name_{i}", i).atol for i in range(2)]
            for sc in load_suite(path, ctx)}


def test_write_rewrites_the_copy_keeps_comments_and_the_result_passes(pytester, run_pytest, xdist_mode):
    original = small_sweep()
    path = pytester.path / "cpu_sweep.paddle.yaml"
    path.write_text(original)
    before = atols(path)

    if not xdist_mode:  # printing is the same path as writing, without the write: once is enough
        printed = run_suite(run_pytest, pytester, "cpu_sweep.paddle.yaml", "--paddle-suggest-tolerances",
                            "--paddle-suggest-seeds=3")
        assert path.read_text() == original
        assert "paddle-infer suggested tolerances" in printed.text
        assert re.search(rf"tiny_detector\[1x3x64x64-{re.escape(CASE_MODE)}\]\s+fetch_name_0\s+0-2\s+\S+\s+\S+ "
                         r"\(0\.02\)\s+1\s+atol=", printed.text)
        assert len(printed.cases) == 6

    written = run_suite(run_pytest, pytester, "cpu_sweep.paddle.yaml", "--paddle-suggest-tolerances=write",
                        "--paddle-suggest-seeds=3", *xdist_mode)
    text = path.read_text()
    assert f"wrote " in written.text and f"tolerance(s) into {path}:" in written.text
    changes = re.findall(r"^  (\S+): (\S+) -> (\S+)$", written.text, re.M)
    assert changes and len(changes) == len(set(c[0] for c in changes))
    assert any(c[0] == "models.tiny_detector.run_modes[2].tolerances.outputs.#0.atol" for c in changes)
    for line in original.splitlines():  # every comment kept
        if "#" in line and '"#' not in line:
            assert line.split("#", 1)[1].strip() in text
    assert "&cpu_fp32 {mode: cpu_fp32" in text and "- *onednn_fp32" in text
    after = atols(path)
    assert after != before and set(after) == set(before)

    rerun = run_suite(run_pytest, pytester, "cpu_sweep.paddle.yaml", *xdist_mode)
    assert set(rerun.outcomes().values()) == {"passed"} and len(rerun.cases) == 6


def test_bad_values_are_usage_errors(pytester, run_pytest):
    result = run_pytest("--paddle-suggest-tolerances=always", "--paddle-suggest-seeds=0")
    assert result.ret == 4
    assert "--paddle-suggest-tolerances: 'always' is not one of print, write" in result.stderr.str()
