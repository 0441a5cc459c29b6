"""modes/devices.py: --paddle-device forms, which GPU each xdist worker uses, the header line."""
import pytest

from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.modes import devices


@pytest.mark.parametrize("text,ids", [("auto", ()), (None, ()), ("gpu:1", (1,)),
                                      ("GPU:2,3", (2, 3)), ("gpu:0, 1", (0, 1))])
def test_parse_device(text, ids):
    assert devices.parse_device(text).ids == ids


@pytest.mark.parametrize("text,extra", [("gpu:x", ""), ("cuda:0", ""), ("gpu:", ""),
                                        ("gpu:1,1", "names a GPU twice"),
                                        ("cpu", "CPU run modes always run on the CPU")])
def test_bad_device_lists_valid_forms(text, extra):
    with pytest.raises(OptionError) as e:
        devices.parse_device(text)
    assert str(e.value).startswith(f"--paddle-device: {text!r} ")
    assert extra in str(e.value)
    assert str(e.value).endswith("valid forms: " + "; ".join(devices.DEVICE_FORMS))


def test_worker_k_uses_gpu_k_mod_count():
    auto = devices.AUTO
    assert [devices.gpu_for_worker(auto, f"gw{k}", 4) for k in range(6)] == [0, 1, 2, 3, 0, 1]
    assert devices.gpu_for_worker(auto, "main", 4) == 0
    assert [devices.gpu_for_worker(devices.parse_device("gpu:1"), f"gw{k}", 4) for k in range(3)] == [1, 1, 1]
    listed = devices.parse_device("gpu:2,3")
    assert [devices.gpu_for_worker(listed, f"gw{k}", 4) for k in range(3)] == [2, 3, 2]
    assert devices.gpu_for_worker(auto, "gw5", 0) == 0  # no GPU: GPU cases skip anyway
    assert devices.gpu_for_worker(devices.parse_device("gpu:7"), "gw0", 2) == 7  # the skip names it
    assert devices.worker_index("gw12") == 12 and devices.worker_index("main") == 0


def test_mapping_line():
    auto = devices.AUTO
    assert devices.mapping_line(auto, 3, 2, ["trt_fp16"]) == (
        "paddle-infer: GPU run modes (trt_fp16) per worker: gw0 -> gpu:0, gw1 -> gpu:1, "
        "gw2 -> gpu:0 (--paddle-device=auto, 2 GPU(s) visible)")
    assert devices.mapping_line(auto, None, 0, ["gpu_fp32"]) == (
        "paddle-infer: GPU run modes (gpu_fp32): no GPU visible here, their cases skip")
