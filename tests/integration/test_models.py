"""--paddle-model end to end with models on disk: directories and program files, a corrupt
model that errors only its cases, a builder whose outputs are NaN."""
from pathlib import Path

import pytest

from pytest_paddle_infer.models.cache import resolve
from pytest_paddle_infer.models.source import parse_source

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)


def test_disk_models_run_end_to_end(run_pytest, paddle_cache, xdist_mode):
    """A directory with a PIR export and a .pdmodel file path, as a team would point at them."""
    pir = resolve(parse_source("tiny_detector"), paddle_cache)
    legacy = resolve(parse_source("tiny_detector"), paddle_cache, legacy=True)
    result = run_pytest(f"--paddle-model={Path(pir.prog_file).parent}",
                        f"--paddle-model={legacy.prog_file}", "--run-mode=onednn_fp32", "-v", *xdist_mode)
    result.assert_outcomes(passed=2)
    # the ids show the declared primary input's shape, read from the model files
    result.stdout.fnmatch_lines(["*PASSED*tiny_detector-*-default[[]1x3x64x64-onednn_fp32[]]*"
                                 if xdist_mode else "*tiny_detector-*-default[[]1x3x64x64-onednn_fp32[]] PASSED*"])


def test_corrupt_model_file_errors_its_case_only(run_pytest, tmp_path, xdist_mode):
    bad = tmp_path / "broken"
    bad.mkdir()
    (bad / "inference.json").write_text("{ not json")
    (bad / "inference.pdiparams").write_bytes(b"\0" * 16)
    result = run_pytest(f"--paddle-model={bad}", "--paddle-model=tiny_cnn", "--run-mode=cpu_fp32", *xdist_mode)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 1 and outcomes.get("errors") == 1
    result.stdout.fnmatch_lines(["*broken[[]default-cpu_fp32[]]: *"])
    assert "Traceback" not in result.stdout.str()


NAN_BUILDER = '''
import paddle


class LogModel(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.scale = paddle.nn.Linear(8, 8)

    def forward(self, x):
        return paddle.log(self.scale(x))


def build():
    return LogModel()
'''


def test_nan_in_outputs_is_a_clear_failure(run_pytest, pytester, paddle_cache, xdist_mode):
    """log of inputs in [-1, 1]: NaN in the baseline too; the case says so instead of passing."""
    pytester.makepyfile(nanmodel=NAN_BUILDER)
    from pytest_paddle_infer.models.inputs import InputSpec
    from pytest_paddle_infer.models.source import ModelSource

    source = ModelSource("nanmodel", "builder", "nanmodel:build",
                         inputs=(InputSpec("x", (-1, 8), "float32"),))
    import os
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{pytester.path}{os.pathsep}{env_path}"
    try:
        files = resolve(source, pytester.path / "cache")
    finally:
        os.environ["PYTHONPATH"] = env_path
    result = run_pytest(f"--paddle-model={Path(files.prog_file).parent}", "--run-mode=onednn_fp32", *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the baseline has * NaN and 0 Inf: check the model and its inputs*"])
