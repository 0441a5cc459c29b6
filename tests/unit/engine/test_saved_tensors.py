"""Saved runs on disk (execute/saved_tensors.py) and how goldens find theirs (goldens.py):
compressed members, float16 storage, a sibling run mode's golden."""
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

from pytest_paddle_infer.engine.saved_tensors import SavedTensors, write_archive
from pytest_paddle_infer.ownership import claim

RNG = np.random.default_rng(0)


def _tensors(*arrays):
    for i, a in enumerate(arrays):
        yield ({"index": i, "name": f"t{i}", "op_type": "pd_op.relu", "shape": list(a.shape),
                "dtype": str(a.dtype)}, lambda a=a: a)


def _archive(tmp_path, arrays, float16):
    path = tmp_path / "run.npz"
    with open(path, "wb") as f:
        write_archive(f, OrderedDict(out=np.ones(3, np.float32)), _tensors(*arrays), {"k": 1}, float16)
    return path


def test_members_are_compressed_and_read_back_exactly(tmp_path):
    smooth = np.repeat(RNG.standard_normal(64).astype(np.float32), 256)  # compressible
    path = _archive(tmp_path, [smooth, np.arange(5, dtype=np.int64)], float16=False)
    with zipfile.ZipFile(path) as zf:
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_DEFLATED}
    assert path.stat().st_size < smooth.nbytes / 4
    with np.load(path) as data:
        import json
        meta = json.loads(str(data["__meta__"]))
    store = SavedTensors(path, meta["intermediates"])
    try:
        assert [r.name for r in store.records] == ["t0", "t1"]
        assert np.array_equal(store.load(store.records[0]), smooth)
        assert store.load(store.records[1]).dtype == np.int64
    finally:
        store.remove()


def test_float16_halves_floats_keeps_their_dtype_and_never_overflows(tmp_path):
    values = RNG.standard_normal(4096).astype(np.float32)
    huge = np.array([1e6, -3.0], np.float32)  # beyond float16: kept as computed
    path = _archive(tmp_path, [values, huge], float16=True)
    with np.load(path) as data:
        import json
        meta = json.loads(str(data["__meta__"]))
        assert data["t00000"].dtype == np.float16 and data["t00001"].dtype == np.float32
        assert data["o0"].dtype == np.float32  # outputs decide the verdict: never rounded
    assert meta["tensor_store"] == "float16"
    assert [e.get("stored") for e in meta["intermediates"]] == ["float16", None]
    store = SavedTensors(path, meta["intermediates"])
    try:
        back = store.load(store.records[0])
        assert back.dtype == np.float32 and np.allclose(back, values, rtol=1e-3, atol=1e-4)
        assert not np.array_equal(back, values)  # it did round
        assert np.array_equal(store.load(store.records[1]), huge)
    finally:
        store.remove()


def test_golden_writes_never_replace_a_file_that_is_not_a_golden(tmp_path):
    import numpy as np

    from pytest_paddle_infer.engine.saved_tensors import write_golden
    from pytest_paddle_infer.goldens import GoldenError, golden_path

    path = golden_path(tmp_path, "m[1x3-cpu_fp32]")
    path.write_bytes(b"the user's own archive")
    with pytest.raises(GoldenError, match="is not a golden or saved run paddle-infer wrote"):
        write_golden(tmp_path, "m[1x3-cpu_fp32]", {"out": np.zeros(3, "float32")}, {})
    assert path.read_bytes() == b"the user's own archive"
    claim(tmp_path / "g", "goldens", "--paddle-save-goldens")  # in the plugin's goldens too:
    theirs = golden_path(tmp_path / "g", "m[1x3-cpu_fp32]")  # a damaged golden is told from nothing else
    theirs.write_bytes(b"the user's own archive")
    with pytest.raises(GoldenError, match="is not a golden or saved run paddle-infer wrote"):
        write_golden(tmp_path / "g", "m[1x3-cpu_fp32]", {"out": np.zeros(3, "float32")}, {})
    assert theirs.read_bytes() == b"the user's own archive"
    theirs.unlink()
    write_golden(tmp_path / "g", "m[1x3-cpu_fp32]", {"out": np.zeros(3, "float32")}, {})
    write_golden(tmp_path / "g", "m[1x3-cpu_fp32]", {"out": np.ones(3, "float32")}, {})  # its own: replaced
