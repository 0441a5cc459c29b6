"""models/inputs.py: an input read from a file names the input in its error."""
import numpy as np
import pytest

from pytest_paddle_infer.errors import InputError
from pytest_paddle_infer.models.inputs import InputSpec, generate


def test_an_input_file_error_names_the_input(tmp_path):
    (tmp_path / "x.npy").write_bytes(b"\x80\x04garbage")
    spec = InputSpec("x", (1, 3), file=str(tmp_path / "x.npy"))
    with pytest.raises(InputError) as info:
        generate(spec, 0)
    assert str(info.value).startswith(f"input 'x': {tmp_path / 'x.npy'} is not a valid numpy array file")
    assert "pickle" not in str(info.value)
    np.save(tmp_path / "x.npy", np.arange(3, dtype="float32").reshape(1, 3))
    assert generate(spec, 0).tolist() == [[0, 1, 2]]
