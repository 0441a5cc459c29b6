"""errors.py: messages a person can act on: colour codes removed."""
from pytest_paddle_infer.engine.predictor import trim_paddle_error
from pytest_paddle_infer.errors import strip_ansi
from pytest_paddle_infer.models.cache import _trim_child_error


def test_colour_codes_are_removed():
    coloured = "\x1b[1m\x1b[35m--- Running PIR pass [fc_fuse_pass]\x1b[0m"
    assert strip_ansi(coloured) == "--- Running PIR pass [fc_fuse_pass]"
    assert "\x1b" not in trim_paddle_error(ValueError(coloured))
    assert "\x1b" not in _trim_child_error(coloured)
