"""A saved candidate run (--paddle-save-runs) has a golden's file name: written into a goldens
directory it replaced the case's golden, and golden:DIR then compared the candidate with its
own run, a pass that tested nothing. The same directory for both is a usage error, and a
golden:DIR baseline refuses a file that is a saved run."""
from collections import OrderedDict

import numpy as np
import pytest

from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.engine.saved_tensors import write_golden
from pytest_paddle_infer.goldens import GoldenError, read_golden
from pytest_paddle_infer.session.options import read_settings

LISTS = ("paddle_model", "run_mode", "paddle_suite", "paddle_shape")
CASE = "tiny_cnn[1x3x32x32-onednn_fp32]"


def read(tmp_path, **cli):
    return read_settings(lambda key: cli.get(key), lambda key: [] if key in LISTS else "",
                         lambda: tmp_path / "cache")


def test_runs_and_goldens_in_one_directory_is_a_usage_error(tmp_path):
    with pytest.raises(OptionError, match=r"--paddle-save-runs: .* is where --paddle-save-goldens "
                                          r"writes goldens"):
        read(tmp_path, paddle_model=["tiny_cnn"], paddle_save_goldens=str(tmp_path / "g"),
             paddle_save_runs=str(tmp_path / "g" / "." ))
    (tmp_path / "g").mkdir()
    with pytest.raises(OptionError, match=r"--paddle-save-runs: .* holds the goldens of "
                                          r"--paddle-baseline=golden:"):
        read(tmp_path, paddle_model=["tiny_cnn"], paddle_baseline=f"golden:{tmp_path / 'g'}",
             paddle_save_runs=str(tmp_path / "g"))
    read(tmp_path, paddle_model=["tiny_cnn"], paddle_save_goldens=str(tmp_path / "g"),
         paddle_save_runs=str(tmp_path / "runs"))  # apart: fine


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
