"""paddle-infer-diff given a file that is no saved run names it as a saved run and says how
to record it again, not the session's --paddle-update-goldens (diff.py, goldens.load_golden)."""
import pytest

from pytest_paddle_infer.diff import main


@pytest.mark.parametrize("content", [b"garbage", b"PK\x03\x04 truncated zip"])
def test_a_damaged_file_is_named_a_saved_run(tmp_path, capsys, content):
    bad = tmp_path / "run.npz"
    bad.write_bytes(content)
    assert main([str(bad), str(bad)]) == 2
    said = capsys.readouterr().err
    assert f"saved run {bad} " in said
    assert "record it again (--paddle-save-goldens or --paddle-save-runs)" in said
    assert "--paddle-update-goldens" not in said
