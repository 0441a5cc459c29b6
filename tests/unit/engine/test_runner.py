"""execute/runner.py: xdist workers of one session compute a baseline's outputs once and share them."""
from collections import OrderedDict

import numpy as np

from pytest_paddle_infer.engine.runner import shared_outputs


def test_the_second_worker_reads_what_the_first_computed(tmp_path):
    key = (str(tmp_path / "inference.json"), ("disable_mkldnn()",), "digest0")
    computed = OrderedDict([("fetch_name_1", np.arange(6, dtype="float32").reshape(2, 3)),
                            ("fetch_name_0", np.array([7], dtype="int64"))])
    calls = []
    first = shared_outputs(tmp_path, key, lambda: calls.append(1) or computed)
    second = shared_outputs(tmp_path, key, lambda: calls.append(2) or {})
    assert calls == [1]
    assert list(second) == ["fetch_name_1", "fetch_name_0"]  # the model's output order
    for name in computed:
        assert second[name].dtype == computed[name].dtype
        np.testing.assert_array_equal(second[name], first[name])
    other = shared_outputs(tmp_path, key[:2] + ("digest1",), lambda: calls.append(3) or computed)
    assert calls == [1, 3] and list(other) == list(computed)  # other inputs: computed again


def test_without_a_shared_dir_every_process_computes(tmp_path):
    assert shared_outputs(None, ("p", (), "d"), lambda: {"x": np.zeros(1)})["x"].shape == (1,)
