"""options.py: --paddle-suggest-tolerances[=print|write], --paddle-suggest-seeds, --paddle-suggest-margin."""
import pytest

from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.session.options import read_settings


def settings(tmp_path, **given):
    return read_settings(lambda key: given.get(key), lambda key: "", lambda: tmp_path)


def test_defaults_and_values(tmp_path):
    plain = settings(tmp_path)
    assert (plain.suggest, plain.suggest_seeds, plain.suggest_margin) == ("", 5, 2.0)
    chosen = settings(tmp_path, paddle_suggest_tolerances="write", paddle_suggest_seeds="3",
                      paddle_suggest_margin="1.5")
    assert (chosen.suggest, chosen.suggest_seeds, chosen.suggest_margin) == ("write", 3, 1.5)


@pytest.mark.parametrize("key,value,message", [
    ("paddle_suggest_tolerances", "tests/", "'tests/' is not one of print, write (a path right after the bare flag"),
    ("paddle_suggest_seeds", "0", "must be a finite number >= 1"),
    ("paddle_suggest_margin", "0.5", "must be a finite number >= 1"),
])
def test_bad_values(tmp_path, key, value, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(")):
        settings(tmp_path, **{key: value})
