"""options.py: reading the settings (the device)."""
import pytest

from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.modes import devices
from pytest_paddle_infer.session.options import read_settings


def test_settings_read_device(tmp_path):
    def settings(**given):
        return read_settings(lambda key: given.get(key), lambda key: "", lambda: tmp_path)

    assert settings().device == devices.AUTO
    assert settings(paddle_device="gpu:3").device.ids == (3,)
    with pytest.raises(OptionError, match="--paddle-device: 'gpu3' is not a device; valid forms: auto"):
        settings(paddle_device="gpu3")
