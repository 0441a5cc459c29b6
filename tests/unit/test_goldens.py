"""goldens.py: goldens on disk: their names (and an earlier version's), a damaged file, a sibling
run mode's golden, and a saved run that is not a golden."""
from collections import OrderedDict

import numpy as np
import pytest

from pytest_paddle_infer.engine.saved_tensors import write_golden
from pytest_paddle_infer.goldens import (GoldenError, case_family, file_name, golden_path, legacy_file_name,
                                         read_golden)


# ---------------------------------------------------------------------------------------
# A saved candidate run (--paddle-save-runs) has a golden's file name: written into a goldens
# directory it replaced the case's golden, and golden:DIR then compared the candidate with its
# own run, a pass that tested nothing. The same directory for both is a usage error, and a
# golden:DIR baseline refuses a file that is a saved run.
# ---------------------------------------------------------------------------------------


CASE = "tiny_cnn[1x3x32x32-onednn_fp32]"


def test_a_golden_baseline_refuses_a_saved_run(tmp_path):
    outputs = OrderedDict(out=np.zeros(3, np.float32))
    meta = {"role": "run", "run_mode": "onednn_fp32", "inputs": {"digest": "d1"}}
    write_golden(tmp_path, CASE, outputs, meta)
    with pytest.raises(GoldenError, match=r"is a saved run of onednn_fp32 \(--paddle-save-runs\), "
                                          r"not a golden"):
        read_golden(tmp_path, CASE, "d1")
    sibling = "tiny_cnn[1x3x32x32-cpu_fp32]"  # no golden of its own: a run is no sibling either
    with pytest.raises(GoldenError, match="no golden for"):
        read_golden(tmp_path, sibling, "d1")


# -- goldens under the earlier names ------------------------------------------------------


def test_a_golden_recorded_under_the_earlier_name_is_read_and_renamed_on_rewrite(tmp_path):
    case = "tiny_cnn[1x3x32x32-cpu_fp32]"
    path = write_golden(tmp_path, case, {"out": np.ones(3, "float32")}, {"baseline": "auto"})
    assert path == golden_path(tmp_path, case) and "[" not in path.name
    legacy = tmp_path / legacy_file_name(case)
    assert legacy.name == "tiny_cnn[1x3x32x32-cpu_fp32].npz"
    path.rename(legacy)  # as an earlier version recorded it
    golden = read_golden(tmp_path, case)
    assert golden.path == legacy and golden.outputs["out"].tolist() == [1, 1, 1]
    write_golden(tmp_path, case, {"out": np.zeros(3, "float32")}, {"baseline": "auto"})
    assert [p.name for p in tmp_path.iterdir()] == [file_name(case)]
    assert read_golden(tmp_path, case).outputs["out"].tolist() == [0, 0, 0]


def test_a_garbage_golden_says_so_without_suggesting_pickle(tmp_path):
    case = "tiny_cnn[1x3x32x32-cpu_fp32]"
    golden_path(tmp_path, case).write_bytes(b"not an archive at all")
    with pytest.raises(GoldenError) as info:
        read_golden(tmp_path, case)
    message = str(info.value)
    assert "is not a valid numpy array file" in message and "--paddle-update-goldens" in message
    assert "pickle" not in message


def test_a_case_without_a_golden_takes_a_sibling_recorded_from_the_same_inputs(tmp_path):
    outputs = OrderedDict(y=np.arange(4, dtype=np.float32))
    write_golden(tmp_path, "m[1x3-cpu_fp32]", outputs, {"inputs": {"digest": "aaaa"}})
    assert case_family("m[1x3-onednn_bf16+no_ir_optim]") == "m[1x3-"
    found = read_golden(tmp_path, "m[1x3-onednn_bf16]", "aaaa")
    assert found.meta["case_id"] == "m[1x3-cpu_fp32]" and np.array_equal(found.outputs["y"], outputs["y"])
    for case_id, digest in (("m[1x3-onednn_bf16]", "bbbb"), ("m[2x3-onednn_bf16]", "aaaa"),
                            ("other[1x3-cpu_fp32]", "aaaa")):
        with pytest.raises(GoldenError, match=r"no golden for"):
            read_golden(tmp_path, case_id, digest)
