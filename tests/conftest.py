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


@pytest.fixture
def cpu_without_bf16(monkeypatch):
    """The sessions this test starts (``run_pytest``) and Paddle's capabilities in this
    process take this CPU as one without bf16, whatever it has: ``onednn_bf16`` skips as on
    an AVX2 CPU. For tests of that skip, which then run on every CPU (the plugin reads
    ``capabilities.NO_BF16_ENV`` for this alone). Tests of bf16 itself take ``bf16_cpu``."""
    from pytest_paddle_infer.modes.capabilities import NO_BF16_ENV, detect

    monkeypatch.setenv(NO_BF16_ENV, "1")
    detect.cache_clear()  # detect() asks Paddle once per process
    yield
    detect.cache_clear()


@pytest.fixture
def bf16_cpu():
    """Skips the test, naming the CPU, unless ``onednn_bf16`` really runs here: for tests
    of bf16 itself (its evidence, its figures). ``helpers.cpu_lacks_bf16`` says why."""
    from helpers import cpu_lacks_bf16

    reason = cpu_lacks_bf16()
    if reason:
        pytest.skip(reason)


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


@pytest.fixture
def run_pytest_inline(pytester, paddle_cache):
    """Run a pytest session in this process (``pytester.runpytest_inprocess``) with the shared
    export cache: for sessions that end before any case runs (usage errors, ``--help``), where
    a process of its own would cost its start-up and nothing else. An executor the session
    starts is still a child process, closed at the session's end."""

    def run(*args: str):
        return pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--paddle-cache-dir={paddle_cache}", *args)

    return run


def pytest_configure(config):
    config.addinivalue_line("markers", "resnet50: runs the full-size ResNet50 (slower)")
