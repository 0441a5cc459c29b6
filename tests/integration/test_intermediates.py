"""--paddle-intermediates end to end: the first divergent tensor, the report files' cells
(against an independent computation), complete reports under xdist."""
import json
import shlex

import numpy as np
import pytest

from helpers import DIFFERING_MODE, ZERO_TOLERANCE, hooked_run
from pytest_paddle_infer.files import safe_file_stem
from pytest_paddle_infer.models.cache import resolve
from pytest_paddle_infer.models.source import parse_source
from pytest_paddle_infer.ownership import OWN_NAMES

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

SEED_COLUMNS = ["Operator Type", "Tensor Name", "Shape", "Mismatched Elements", "Max Atol",
                "Max Rtol", "Min Val(base)", "Max Val(base)"]


def _independent_rows(files):
    """The seed's procedure written out in the test: hook both predictors, pair by name."""
    from pytest_paddle_infer.models.inputs import InputSpec, generate

    x = generate(InputSpec("x", (1, 3, 32, 32), "float32", low=-1, high=1), 0)

    def collect(onednn):
        seen = []

        def hook(op_type, name, tensor):
            if "ONEDNN" in str(tensor.layout):
                tensor = tensor.clone()
            seen.append((op_type, name, np.array(tensor.numpy())))

        hooked_run(files, x, onednn, hook)
        return seen

    base = {name: a for _, name, a in collect(False)}
    return [(op, name, a, base[name]) for op, name, a in collect(True) if name in base]


def test_xlsx_cells_match_an_independent_computation(run_pytest, pytester, paddle_cache, paddle_in_process,
                                                      xdist_mode):
    openpyxl = pytest.importorskip("openpyxl")
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=onednn_fp32", "--paddle-program=legacy",
                        "--paddle-intermediates=all", "--paddle-report=out", *xdist_mode)
    result.assert_outcomes(passed=1)
    xlsx = pytester.path / "out" / f"{safe_file_stem('tiny_cnn[1x3x32x32-onednn_fp32]')}.xlsx"
    sheet = openpyxl.load_workbook(xlsx).active
    header = [c.value for c in sheet[1]]
    assert header[:8] == SEED_COLUMNS
    assert sheet.freeze_panes == "A2"
    cells = [[c.value for c in row] for row in sheet.iter_rows(min_row=2)]
    expected = _independent_rows(resolve(parse_source("tiny_cnn"), paddle_cache, legacy=True))
    intermediates = [row for row in cells if row[0] != "(output)"]
    assert [(r[0], r[1]) for r in intermediates] == [(op, name) for op, name, _, _ in expected]
    for row, (op, name, a, e) in zip(intermediates, expected):
        a64, e64 = a.astype(np.float64), e.astype(np.float64)
        mismatched = int((~np.isclose(a64, e64, rtol=1e-4, atol=1e-4)).sum())
        assert row[2] == f"match, {list(e.shape)}"
        assert row[3] == mismatched and row[header.index("Elements")] == e.size  # numbers, sortable
        assert row[4] == pytest.approx(np.abs(a64 - e64).max(), abs=1e-12)
        assert row[5] == pytest.approx((np.abs(a64 - e64) / (np.abs(e64) + 1e-7)).max(), rel=1e-9)
        assert row[6] == f"{a64.min():.6f}({e64.min():.6f})"
        assert row[7] == f"{a64.max():.6f}({e64.max():.6f})"


def test_zero_tolerance_names_the_first_divergent_tensor(run_pytest, pytester, xdist_mode):
    # the first conv, with its batch_norm folded in and its relu fused, already differs
    result = run_pytest("--paddle-model=tiny_cnn", f"--run-mode={DIFFERING_MODE}", *ZERO_TOLERANCE,
                        "--paddle-intermediates=all", "--paddle-program=legacy",
                        "--junitxml=out.xml", *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*first divergent tensor: #0 fused_conv2d relu_0.tmp_0 (*elements outside atol=0 rtol=0); "
        "* of * intermediate tensors break tolerance",
    ])
    xml = (pytester.path / "out.xml").read_text()
    assert 'name="paddle_first_divergent" value="fused_conv2d relu_0.tmp_0"' in xml


def test_reports_are_complete_under_xdist(run_pytest, pytester, xdist_mode):
    pytest.importorskip("openpyxl")
    result = run_pytest("--paddle-model=tiny_cnn", "--paddle-model=tiny_detector",
                        "--run-mode=cpu_fp32,onednn_fp32,trt_fp16", "--paddle-intermediates=all",
                        "--paddle-report=out", *xdist_mode)
    result.assert_outcomes(passed=4, skipped=2)
    out = pytester.path / "out"
    summary = json.loads((out / "summary.json").read_text())["cases"]
    assert sorted(c["case"] for c in summary) == sorted(
        f"{m}[{s}-{mode}]" for m, s in (("tiny_cnn", "1x3x32x32"), ("tiny_detector", "1x3x64x64"))
        for mode in ("cpu_fp32", "onednn_fp32", "trt_fp16"))
    for case in summary:
        if case["status"] == "passed":
            assert {f.rsplit(".", 1)[1] for f in case["files"]} >= {"json", "csv", "xlsx"}
            for f in case["files"]:
                assert (out / f).stat().st_size > 0
        else:
            assert case["status"] == "skipped" and "needs Paddle built with CUDA" in case["reason"]
    index = (out / "index.html").read_text()
    assert index.count("<tr class=") == 6
    assert f'href="{safe_file_stem("tiny_detector[1x3x64x64-onednn_fp32]")}.png"' in index
    # no temporary file left; the dot files are the plugin's own bookkeeping (ownership.py)
    assert not list(out.glob("*.tmp")) and {p.name for p in out.glob(".*")} <= set(OWN_NAMES)
    assert all(shlex.quote(p.name) == p.name for p in out.iterdir())  # no quoting in a shell
