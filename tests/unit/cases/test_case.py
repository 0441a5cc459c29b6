"""cases/case.py: a case's id shows the shapes it runs, never invented dims."""
from pytest_paddle_infer.cases.case import default_label
from pytest_paddle_infer.models.source import parse_source

from unit.cases.test_cli_shapes import DYNAMIC_HW


def test_ids_show_real_shapes_only():
    assert default_label(DYNAMIC_HW, ()) == "1x3x?x?"
    assert default_label(DYNAMIC_HW, (("x", (2, 3, 9, 7)),)) == "2x3x9x7"
    assert default_label(parse_source("tiny_cnn"), ()) == "1x3x32x32"
