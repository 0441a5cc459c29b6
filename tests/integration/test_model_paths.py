"""A model on disk given by a relative path works on a fresh cache, whatever form the path
takes (the program path handed to Paddle is absolute: Paddle joins a relative one onto the
params prefix)."""
import shutil

import pytest

from helpers import exported_tiny_cnn, summary_rows

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)


@pytest.mark.parametrize("ref", ["models/x", "./models/x", "models/x/inference.json"])
def test_relative_model_paths_on_a_fresh_cache(run_pytest, pytester, paddle_cache, ref, xdist_mode):
    source = exported_tiny_cnn(paddle_cache)
    shutil.copytree(source, pytester.path / "models" / "x",
                    ignore=shutil.ignore_patterns("manifest.json"))
    result = run_pytest(f"--paddle-model={ref}", "--run-mode=cpu_fp32",
                        f"--paddle-cache-dir={pytester.path / 'fresh-cache'}", *xdist_mode)
    result.assert_outcomes(passed=1)
    assert summary_rows(result)[("x", "1x3x32x32", "cpu_fp32")][0] == "passed"
