"""A plain session whose command line names a suite starts its executor early too
(early_start.py): a suite file, a directory holding one, --paddle-suite; not a directory of
Python tests, nor a suite path given as an option's value."""
import pytest

from pytest_paddle_infer.execute.early_start import wants_early_executor, wants_early_workers


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "cpu.paddle.yaml").write_text("models: {}\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("")
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("argv, early", [
    (["suites/cpu.paddle.yaml"], True),
    (["suites/cpu.paddle.yaml::tiny_cnn[1x3x32x32-cpu_fp32]", "-q"], True),
    (["suites"], True),                                     # a directory holding a suite
    (["--paddle-suite=suites/cpu.paddle.yaml"], True),
    (["suites/cpu.paddle.yaml", "-n", "0"], True),          # -n 0: no workers, a plain session
    (["tests"], False),                                     # Python tests only
    (["tests", "--ignore", "suites"], False),               # an option's value names no suite
    (["suites/cpu.paddle.yaml", "--co"], False),
    (["suites/cpu.paddle.yaml", "-n", "2"], False),         # xdist: the workers start theirs
])
def test_plain_sessions_that_name_suites_start_early(tree, argv, early):
    assert wants_early_executor(argv) is early
    if early:
        assert not wants_early_workers(argv)  # never both
