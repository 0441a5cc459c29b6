"""Model sources: the export cache (locking, corruption), disk models and their errors."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_paddle_infer.errors import ModelError
from pytest_paddle_infer.models.source import MANIFEST, find_model_files, parse_source
from pytest_paddle_infer.models.cache import export_dir, resolve


def test_concurrent_exports_build_once(tmp_path):
    """Two processes resolving one zoo entry at once: one export, both get the same files."""
    script = textwrap.dedent(f"""
        import json, sys
        from pytest_paddle_infer.models.source import parse_source
        from pytest_paddle_infer.models.cache import resolve
        files = resolve(parse_source("tiny_cnn"), {str(tmp_path)!r})
        print(json.dumps([files.prog_file, files.params_file]))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    assert outs[0] == outs[1]
    entries = [p for p in (tmp_path / "models").iterdir() if not p.name.endswith(".lock")]
    assert len(entries) == 1, entries  # no leftover temporary directories
    manifest = json.loads((entries[0] / MANIFEST).read_text())
    assert set(manifest["files"]) >= {"inference.pdiparams"}


def test_corrupt_entry_is_rebuilt_not_used(tmp_path):
    source = parse_source("tiny_cnn")
    files = resolve(source, tmp_path)
    params = Path(files.params_file)
    good = params.read_bytes()
    params.write_bytes(good[: len(good) // 2])  # a half-written file
    script = ("from pytest_paddle_infer.models.source import parse_source; from pytest_paddle_infer.models.cache import resolve;"
              f"resolve(parse_source('tiny_cnn'), {str(tmp_path)!r})")
    subprocess.run([sys.executable, "-c", script], check=True)  # a fresh process: no memo
    assert params.read_bytes() == good  # deterministic weights: the rebuild is identical


def test_missing_manifest_means_rebuild(tmp_path):
    source = parse_source("tiny_cnn")
    files = resolve(source, tmp_path)
    entry = export_dir(source, tmp_path, legacy=False)
    (entry / MANIFEST).unlink()
    script = ("from pytest_paddle_infer.models.source import parse_source; from pytest_paddle_infer.models.cache import resolve;"
              f"resolve(parse_source('tiny_cnn'), {str(tmp_path)!r})")
    subprocess.run([sys.executable, "-c", script], check=True)
    assert (entry / MANIFEST).exists() and Path(files.prog_file).exists()


def test_legacy_export_when_paddle_can_write_it(paddle_cache):
    files = resolve(parse_source("tiny_detector"), paddle_cache, legacy=True)
    assert files.prog_file.endswith(".pdmodel") and files.format == "legacy"
    assert [i.name for i in files.inputs] == ["im_shape", "image", "scale_factor"]


def _pair(directory: Path, stem: str, ext: str = ".pdmodel", params: bool = True) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{stem}{ext}").write_bytes(b"x")
    if params:
        (directory / f"{stem}.pdiparams").write_bytes(b"x")


def test_disk_model_errors_name_the_path(tmp_path):
    with pytest.raises(ModelError, match=r"model path .*nowhere does not exist"):
        find_model_files(str(tmp_path / "nowhere"))
    _pair(tmp_path / "a", "inference", params=False)
    with pytest.raises(ModelError, match=r"inference.pdmodel has no params file inference.pdiparams"):
        find_model_files(str(tmp_path / "a"))
    _pair(tmp_path / "b", "one")
    _pair(tmp_path / "b", "two", ".json")
    with pytest.raises(ModelError, match=r"holds 2 model pairs \(one.pdmodel, two.json\): name the program file"):
        find_model_files(str(tmp_path / "b"))
    (tmp_path / "c").mkdir()
    with pytest.raises(ModelError, match=r"holds no .pdmodel or .json program file"):
        find_model_files(str(tmp_path / "c"))
    with pytest.raises(ModelError, match=r"has no params file: expected .*lonely.pdiparams"):
        _pair(tmp_path / "d", "lonely", params=False)
        find_model_files(str(tmp_path / "d" / "lonely.pdmodel"))


def test_directory_prefers_inference_pair(tmp_path):
    _pair(tmp_path / "m", "inference", ".json")
    _pair(tmp_path / "m", "other")
    prog, params = find_model_files(str(tmp_path / "m"))
    assert prog.name == "inference.json" and params.name == "inference.pdiparams"
    assert parse_source(str(tmp_path / "m")).name == "m"


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


def test_nan_in_outputs_is_a_clear_failure(run_pytest, pytester, paddle_cache):
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
    result = run_pytest(f"--paddle-model={Path(files.prog_file).parent}", "--run-mode=onednn_fp32")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the baseline has * NaN and 0 Inf: check the model and its inputs*"])
