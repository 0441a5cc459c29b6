"""modes/toggles.py: a '+' with no toggle after it (a trailing '+', or '++') says so instead of
naming an unknown toggle ''."""
import pytest

from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.modes.run_modes import parse_run_mode


@pytest.mark.parametrize("text", ["cpu_fp32+", "cpu_fp32++threads=2", "cpu_fp32+ +no_ir_optim"])
def test_an_empty_toggle_is_named_as_such(text):
    with pytest.raises(OptionError) as e:
        parse_run_mode(text)
    message = str(e.value)
    assert message.startswith(f"--run-mode: {text!r} has a '+' with no toggle after it; ") \
        and "unknown toggle" not in message and "+threads=N" in message, message
