"""localize/repro.py: the repro script a localized case leaves, run as a user would run it,
and its Config calls as Python."""
import shutil
import subprocess
import sys

import numpy as np

from pytest_paddle_infer.engine.localize import repro
from pytest_paddle_infer.modes.run_modes import (Call, PassNames, Precision, baseline_recipe, parse_run_mode,
                                                 recipe)

from unit.engine.localize.test_prune import tiny_cnn


def run_script(folder, *args):
    return subprocess.run([sys.executable, str(folder / repro.SCRIPT), *args],
                          capture_output=True, text=True, timeout=300)


def test_a_repro_of_a_passing_configuration_exits_0(paddle_cache, tmp_path):
    """The counter-check: the whole-model repro of a configuration that matches its
    baseline (cpu_fp32) passes at the default tolerance."""
    model = tiny_cnn(paddle_cache, legacy=False)
    folder = tmp_path / "repro"
    (folder / "model").mkdir(parents=True)
    shutil.copyfile(model.prog_file, folder / "model" / "inference.json")
    shutil.copyfile(model.params_file, folder / "model" / "inference.pdiparams")
    np.savez(folder / repro.INPUTS, x=np.random.RandomState(0).uniform(-1, 1, (1, 3, 32, 32)).astype("float32"))
    repro.write_repro(folder, "tiny_cnn[cpu_fp32]", "the whole program", "inference.json",
                      baseline_recipe("cpu", None, 0, "pir"), recipe(parse_run_mode("cpu_fp32")),
                      1e-4, 1e-4)
    passing = run_script(folder)
    assert passing.returncode == 0, passing.stdout + passing.stderr[-2000:]
    assert "all 1 outputs within atol=0.0001 rtol=0.0001" in passing.stdout


def test_call_source_is_python_on_config():
    assert repro.call_source(Call("enable_mkldnn")) == "config.enable_mkldnn()"
    assert (repro.call_source(Call("enable_use_gpu", (256, 0, Precision("Half"))))
            == "config.enable_use_gpu(256, 0, PrecisionType.Half)")
    assert (repro.call_source(Call("enable_custom_passes", (PassNames(["a"]), True)))
            == "config.enable_custom_passes(['a'], True)")
    assert (repro.call_source(Call("set_optim_cache_dir", ("/ci/cache/optim/x",)))
            == 'config.set_optim_cache_dir(os.path.join(HERE, "optim_cache", ""))')
    guarded = repro.call_source(Call("set_tensorrt_optimization_level", (3,), optional=True))
    assert guarded.startswith("if hasattr(config, 'set_tensorrt_optimization_level'):")
    compile(repro.script_text("c", "w", "inference.json", [Call("disable_mkldnn")],
                              [Call("x", optional=True)], 1e-4, 1e-4), "repro.py", "exec")
