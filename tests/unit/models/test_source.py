"""models/source.py: model files on disk, found in a directory or named, and their errors."""
from pathlib import Path

import pytest

from pytest_paddle_infer.errors import ModelError
from pytest_paddle_infer.models.source import find_model_files, parse_source


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
