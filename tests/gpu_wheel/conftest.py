"""The GPU-wheel tier: the plugin's GPU and TensorRT plans applied to a real GPU
``paddle.inference.Config`` of paddlepaddle-gpu 2.6.2, which installs and imports on a machine
without a GPU (its TensorRT runtime is missing there: nothing builds a predictor).

Runs in its own venv (``.ci/run`` makes one): ``pip install paddlepaddle-gpu==2.6.2`` and the
project, then ``pytest tests/gpu_wheel``. The main suite does not collect this directory
(``collect_ignore`` in tests/conftest.py). Where another Paddle is installed every test here
skips, saying so. The PIR loader check also needs a Paddle 3.x CPU venv: its python is
``PADDLE_INFER_PIR_PYTHON`` (``.ci/run`` sets it to the main venv's).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_paddle_infer.modes.capabilities import installed_paddle

WHEEL = ("paddlepaddle-gpu", "2.6.2")
PIR_PYTHON_ENV = "PADDLE_INFER_PIR_PYTHON"
HERE = Path(__file__).resolve().parent


def wheel_problem() -> str:
    """Why this tier cannot run in this venv, or ""."""
    found = installed_paddle()
    if found == WHEEL:
        return ""
    what = f"{found[0]} {found[1]}" if found[0] else "no paddle"
    return (f"the GPU-wheel tier needs {WHEEL[0]}=={WHEEL[1]} installed, and this venv has {what}: "
            f"python -m venv v && v/bin/pip install {WHEEL[0]}=={WHEEL[1]} -e . "
            f"&& v/bin/pytest tests/gpu_wheel (.ci/run does this)")


def pytest_collection_modifyitems(config, items):
    problem = wheel_problem()
    if not problem:
        return
    mark = pytest.mark.skip(reason=problem)
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(mark)


@pytest.fixture(scope="session")
def gpu_paddle():
    """The GPU wheel's paddle, imported once."""
    from pytest_paddle_infer.modes.capabilities import import_paddle

    paddle = import_paddle()
    assert paddle.is_compiled_with_cuda(), "the GPU wheel says it was built without CUDA"
    return paddle


@pytest.fixture(scope="session")
def pir_run(pir_python):
    """``run(code, *args)``: ``python -c code args`` in the Paddle 3.x venv."""
    def run(code: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([pir_python, "-c", code, *args], capture_output=True, text=True,
                              env=pir_env(), timeout=300)

    return run


@pytest.fixture(scope="session")
def pir_python() -> str:
    """A python whose paddle is 3.x (the PIR loader), from PADDLE_INFER_PIR_PYTHON."""
    path = os.environ.get(PIR_PYTHON_ENV, "")
    if not path:
        pytest.skip(f"set {PIR_PYTHON_ENV} to the python of a venv with paddlepaddle 3.x (CPU) "
                    f"to check the PIR TensorRT path's files against its loader")
    if not (shutil.which(path) or Path(path).is_file()):
        pytest.fail(f"{PIR_PYTHON_ENV}={path!r}: no such python")
    version = subprocess.run([path, "-c", "from importlib import metadata; "
                              "print(metadata.version('paddlepaddle'))"],
                             capture_output=True, text=True, env=pir_env())
    if version.returncode or not version.stdout.strip().startswith("3."):
        pytest.fail(f"{PIR_PYTHON_ENV}={path!r} has no paddlepaddle 3.x: "
                    f"{(version.stdout + version.stderr).strip()[-300:]}")
    return path


def pir_env() -> dict:
    """The PIR python's environment: this venv's PYTHONPATH does not leak paddle 2.6 in."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["GLOG_minloglevel"] = "2"
    return env
