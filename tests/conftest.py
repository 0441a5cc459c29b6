"""Fixtures for tests/unit and tests/integration: one model export cache for the whole test
session (and every xdist worker), and a runner for end-to-end pytest sessions that can add
``-n 2``. Helper functions live in helpers.py (``import helpers``)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import List

import pytest

TEST_CACHE = Path(os.environ.get(
    "PADDLE_INFER_TEST_CACHE", Path(__file__).resolve().parent.parent / ".pytest_cache" / "paddle-infer-tests"))


@pytest.fixture(scope="session")
def paddle_cache() -> Path:
    TEST_CACHE.mkdir(parents=True, exist_ok=True)
    return TEST_CACHE


@pytest.fixture(scope="session")
def paddle_in_process():
    """Paddle imported into the test process itself, for end-to-end tests that also call Paddle
    directly: a session fixture is set up before ``pytester`` snapshots ``sys.modules``, so
    pytester does not drop paddle at the test's end (a second import of its C extension in
    one process fails: "'paddle.base.libpaddle' is not a package")."""
    import paddle

    return paddle


@pytest.fixture(params=["n0", "n2"])
def xdist_mode(request) -> List[str]:
    """Every end-to-end test runs without and with ``-n 2``."""
    return [] if request.param == "n0" else ["-n", "2"]


@pytest.fixture
def run_pytest(pytester, paddle_cache):
    """Run a pytest session in a subprocess with the shared export cache."""

    def run(*args: str):
        return pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", f"--paddle-cache-dir={paddle_cache}", *args)

    return run


def pytest_configure(config):
    config.addinivalue_line("markers", "resnet50: runs the full-size ResNet50 (slower)")
