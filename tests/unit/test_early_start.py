"""Which command lines start the executor while pytest is still starting (early_start.py)."""
import pytest

from pytest_paddle_infer.execute.early_start import wants_early_executor


@pytest.mark.parametrize("argv, early", [
    (["--paddle-model=resnet50", "--run-mode=onednn_fp32"], True),
    (["--paddle-model", "tiny_cnn", "-q"], True),
    (["tests", "-q"], False),                                  # no cases from the command line
    (["--paddle-model=tiny_cnn", "-n", "2"], False),          # xdist: the workers start theirs
    (["--paddle-model=tiny_cnn", "-n2"], False),
    (["--paddle-model=tiny_cnn", "--numprocesses=2"], False),
    (["--paddle-model=tiny_cnn", "--paddle-executor=inline"], False),
    (["--paddle-model=tiny_cnn", "--help"], False),
    (["--paddle-model=tiny_cnn", "--co"], False),
])
def test_early_start_only_for_plain_sessions_with_cases(argv, early):
    assert wants_early_executor(argv) is early
