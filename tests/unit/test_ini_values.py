"""Ini values named by their key in usage errors: a switch pytest cannot read as true or false,
and a --paddle-suggest-tolerances value from the ini file (whose fix is not the command line's)."""
import pytest

from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.session.options import read_settings

LISTS = ("paddle_model", "run_mode", "paddle_suite", "paddle_shape")


def read(tmp_path, ini):
    def getini(key):
        value = ini.get(key, [] if key in LISTS else "")
        if isinstance(value, Exception):  # pytest's getini raises for a bool it cannot read
            raise value
        return value

    return read_settings(lambda key: None, getini, lambda: tmp_path / "cache")


@pytest.mark.parametrize("raised", [ValueError, pytest.UsageError])  # pytest 8 raises the latter
def test_a_switch_that_is_not_true_or_false_names_its_key(tmp_path, raised):
    with pytest.raises(OptionError) as e:
        read(tmp_path, {"paddle_model": ["tiny_cnn"],
                        "paddle_localize": raised("invalid truth value 'maybe'")})
    assert str(e.value) == ("ini key paddle_localize: invalid truth value 'maybe'; "
                            "write paddle_localize = true or false")


def test_a_suggest_value_from_the_ini_file_gets_an_ini_fix(tmp_path):
    with pytest.raises(OptionError) as e:
        read(tmp_path, {"paddle_model": ["tiny_cnn"], "paddle_suggest_tolerances": "x"})
    assert str(e.value) == ("ini key paddle_suggest_tolerances: 'x' is not one of print, write "
                            "(e.g. paddle_suggest_tolerances = print)")
