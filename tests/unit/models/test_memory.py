"""Inputs that cannot fit in memory error with the figures before anything is allocated
(models/memory.py)."""
import pytest

from pytest_paddle_infer.errors import InputError
from pytest_paddle_infer.models import memory
from pytest_paddle_infer.models.inputs import InputSpec

GIB = 1 << 30


def test_an_absurd_shape_errors_with_what_was_computed():
    specs = [InputSpec("x", (64, 3, 2048, 2048), "float32")]
    with pytest.raises(InputError) as e:
        memory.check_fits("tiny_cnn", specs, available=lambda: (20 * GIB, "MemAvailable in /proc/meminfo"))
    text = str(e.value)
    assert "x 64x3x2048x2048 float32" in text and "3.0 GiB" in text  # the inputs
    assert f"about {memory.HELD_COPIES} times over" in text and "24.0 GiB" in text  # the estimate
    assert "20.0 GiB available (MemAvailable in /proc/meminfo)" in text


def test_shapes_that_fit_and_unknown_memory_pass():
    specs = [InputSpec("x", (1, 3, 224, 224), "float32")]
    memory.check_fits("m", specs, available=lambda: (GIB, "test"))
    memory.check_fits("m", [InputSpec("x", (10 ** 6, 3, 2048, 2048))], available=lambda: None)


def test_bytes_count_dtypes_and_skip_file_inputs():
    assert memory.input_bytes([InputSpec("a", (2, 3), "float16"), InputSpec("b", (4,), "int64")]) == 12 + 32
    assert memory.input_bytes([InputSpec("f", (10 ** 9,), "float32", file="x.npy")]) == 0
    assert memory.input_bytes([InputSpec("d", (-1, 3), "float32")]) == 0


def test_meminfo_and_cgroup_figures(tmp_path):
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:       24684084 kB\nMemAvailable:    1000 kB\n")
    assert memory._meminfo_available(info) == 1000 * 1024
    assert memory._meminfo_available(tmp_path / "missing") is None
    limit, usage = tmp_path / "limit", tmp_path / "usage"
    limit.write_text("max\n")
    usage.write_text("100\n")
    assert memory._cgroup_available(((limit, usage),)) is None  # no limit
    limit.write_text(f"{GIB}\n")
    assert memory._cgroup_available(((limit, usage),)) == GIB - 100
    assert memory.size_text(3 * GIB) == "3.0 GiB" and memory.size_text(12) == "12 bytes"
