"""paddle-infer-diff (pytest_paddle_infer/diff.py) on saved runs written here: which tensor it
names, its exit status, directories, runs it refuses to compare. No Paddle: the files are
what a session writes (saved_tensors.write_archive), the comparison is the session's own."""
from collections import OrderedDict

import numpy as np
import pytest

from pytest_paddle_infer import diff
from pytest_paddle_infer.diff import main
from pytest_paddle_infer.engine.saved_tensors import write_archive

RNG = np.random.default_rng(0)
TENSORS = [RNG.standard_normal((2, 8, 4, 4)).astype(np.float32) for _ in range(4)]
OUT = RNG.standard_normal((2, 10)).astype(np.float32)


def save(path, tensors, out=OUT, digest="d1", case="m[2x8-cpu_fp32]", names=None):
    entries = [({"index": i, "name": (names or [f"conv2d_{i}.tmp_0" for i in range(len(tensors))])[i],
                 "op_type": "conv2d", "shape": list(t.shape), "dtype": str(t.dtype)}, lambda t=t: t)
               for i, t in enumerate(tensors)]
    meta = {"case_id": case, "outputs": ["out"], "inputs": {"digest": digest},
            "environment": {"paddle": "paddlepaddle 3.3.1", "device": "cpu"},
            "program": {"format": "legacy", "file": "inference.pdmodel"}}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        write_archive(f, OrderedDict(out=out), entries, meta)
    return path


def test_names_the_first_tensor_that_moved_and_fails(tmp_path, capsys):
    a = save(tmp_path / "a.npz", TENSORS)
    moved = [t.copy() for t in TENSORS]
    moved[2][0, 3, 1, 1] += 0.5  # the third tensor drifts, and everything after it
    moved[3] += 0.01
    b = save(tmp_path / "b.npz", moved, OUT + 0.01, case="m[2x8-onednn_bf16]")
    assert diff.main([str(a), str(b)]) == 1
    text = capsys.readouterr().out
    assert "first divergent tensor: #2 conv2d conv2d_2.tmp_0 (1/256 elements outside" in text
    assert "B against A: 2 intermediate tensors and 1 outputs outside tolerance" in text
    assert diff.main([str(a), str(b), "--atol=1", "--rtol=0"]) == 0  # within a looser tolerance
    assert "B against A: within tolerance" in capsys.readouterr().out


def test_pairs_by_values_where_names_differ_and_by_file_name_in_directories(tmp_path, capsys):
    save(tmp_path / "a" / "m.npz", TENSORS)
    save(tmp_path / "b" / "m.npz", TENSORS, names=[f"0x55ab{i}_inner_var_{i}" for i in range(4)])
    assert diff.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    text = capsys.readouterr().out
    assert "intermediates: 0 of 4 intermediate tensors break tolerance" in text
    assert "without a baseline pair" not in text  # all four paired, by their values


def test_refuses_runs_of_other_inputs_and_missing_files(tmp_path, capsys):
    a = save(tmp_path / "a.npz", TENSORS)
    b = save(tmp_path / "b.npz", TENSORS, digest="d2")
    assert diff.main([str(a), str(b)]) == 2
    assert "recorded from other inputs (digest d1 and d2)" in capsys.readouterr().err
    assert diff.main([str(a), str(tmp_path / "nowhere.npz")]) == 2
    assert "nowhere.npz: no such file" in capsys.readouterr().err


def test_runs_whose_tensors_pair_nowhere_are_not_a_verdict(tmp_path, capsys):
    a = save(tmp_path / "a.npz", TENSORS)
    other = [RNG.standard_normal(t.shape).astype(np.float32) for t in TENSORS]  # another program
    b = save(tmp_path / "b.npz", other, names=[f"0x55ab{i}_inner_var_{i}" for i in range(4)])
    assert diff.main([str(a), str(b)]) == 2  # the outputs agree, but no tensor was compared
    assert "none of the 4 intermediate tensors of" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------
# paddle-infer-diff given a file that is no saved run names it as a saved run and says how
# to record it again, not the session's --paddle-update-goldens (diff.py, goldens.load_golden).
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"garbage", b"PK\x03\x04 truncated zip"])
def test_a_damaged_file_is_named_a_saved_run(tmp_path, capsys, content):
    bad = tmp_path / "run.npz"
    bad.write_bytes(content)
    assert main([str(bad), str(bad)]) == 2
    said = capsys.readouterr().err
    assert f"saved run {bad} " in said
    assert "record it again (--paddle-save-goldens or --paddle-save-runs)" in said
    assert "--paddle-update-goldens" not in said


# ---------------------------------------------------------------------------------------
# paddle-infer-diff's usage errors: each is its message and exit status 2, never a traceback,
# and a --tensors selection that compares nothing is not a pass. Saved runs written here as in
# test_diff.py (no Paddle).
# ---------------------------------------------------------------------------------------


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
