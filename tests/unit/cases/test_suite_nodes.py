"""cases/suite_nodes.py: dims written as on the command line."""
from pytest_paddle_infer.cases.suite_nodes import dims_in_text


def test_dims_written_as_on_the_command_line():
    assert dims_in_text("1x3x32x32") == [1, 3, 32, 32]
    assert dims_in_text(" 1 x 3 ") == [1, 3]
    assert dims_in_text("x=1x3") is None and dims_in_text([1, 3]) is None
