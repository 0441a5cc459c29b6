"""paddle-infer-diff's usage errors: each is its message and exit status 2, never a traceback,
and a --tensors selection that compares nothing is not a pass. Saved runs written here as in
test_diff.py (no Paddle)."""
import pytest

from pytest_paddle_infer import diff
from unit.test_diff import TENSORS, save


@pytest.fixture
def runs(tmp_path):
    return save(tmp_path / "a" / "m.npz", TENSORS), save(tmp_path / "b" / "m.npz", TENSORS)


@pytest.mark.parametrize("extra, says", [
    (["--tensors", "nomatch_*"], "--tensors 'nomatch_*' selects none of the 4 intermediate tensors of"),
    (["--tensors", ","], "--tensors: give none, all, or globs"),
    (["--atol", "-1"], "--atol: -1 must be a finite number >= 0"),
    (["--rtol", "nan"], "--rtol: nan must be a finite number >= 0"),
])
def test_options_that_compare_nothing_or_make_no_sense_are_usage_errors(runs, capsys, extra, says):
    a, b = runs
    assert diff.main([str(a), str(b), *extra]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err, err


def test_a_report_path_that_is_a_file_is_a_usage_error(runs, tmp_path, capsys):
    a, b = runs
    (tmp_path / "report").write_text("")
    assert diff.main([str(a), str(b), "--report", str(tmp_path / "report")]) == 2
    assert "--report: " in capsys.readouterr().err and (tmp_path / "report").read_text() == ""


def test_a_directory_and_a_file_are_told_apart(runs, capsys):
    a, b = runs
    assert diff.main([str(a.parent), str(b)]) == 2
    assert f"{a.parent} is a directory and {b} a file: give two files, or two directories" \
        in capsys.readouterr().err


def test_tensors_none_compares_the_outputs_only(runs, capsys):
    a, b = runs
    assert diff.main([str(a), str(b), "--tensors", "none"]) == 0
    assert "B against A: within tolerance" in capsys.readouterr().out


def test_a_saved_run_missing_a_tensor_is_named_not_a_traceback(runs, tmp_path, capsys):
    import zipfile

    from pytest_paddle_infer.goldens import GoldenError, load_golden
    from pytest_paddle_infer.engine.saved_tensors import saved_tensors

    a, b = runs
    damaged = tmp_path / "damaged.npz"
    with zipfile.ZipFile(b) as src, zipfile.ZipFile(damaged, "w") as out:
        for name in src.namelist():
            if name != "t00002.npy":
                out.writestr(name, src.read(name))
    with pytest.raises(GoldenError, match=r"intermediate tensor #2 \(conv2d_2.tmp_0\) cannot be read"):
        saved_tensors(damaged, load_golden(damaged).meta)  # a golden baseline's store, as a case reads it
    assert diff.main([str(a), str(damaged)]) == 2
    err = capsys.readouterr().err
    assert f"{damaged}: intermediate tensor #2 (conv2d_2.tmp_0) cannot be read" in err and "Traceback" not in err
