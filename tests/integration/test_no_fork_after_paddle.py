"""No process forks after importing a paddle that can use a GPU: a CUDA build's ``import
paddle`` initialises CUDA, and a child forked after that gets CUDA_ERROR_NOT_INITIALIZED from
every CUDA call. Spawned children (fork+exec) are safe: the exec replaces the image. With a
CPU-only paddle the fork server (fork_server.py) forks the workers' executor children after
one import, on purpose.

A recorder runs in every Python process of a session (the pytest process, xdist workers, the
fork server, executor and trial children): a ``sitecustomize`` on PYTHONPATH that writes each
process's start and, at every fork, whether paddle had been imported and whether that paddle
says it can use CUDA. The recorder is shown to catch a fork after ``import paddle``. A stand-in
paddle package (first on PYTHONPATH) plays a CUDA build whose version file says CPU-only, so
that only the fork server's own check after its import stands between it and a fork.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from helpers import DIFFERING_AT_ZERO, write_suite

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux's")

RECORDER = """
    import json, os, sys

    _LOG = os.environ.get("PADDLE_INFER_TEST_FORK_LOG")


    def _record(event):
        paddle = sys.modules.get("paddle")
        cuda = bool(getattr(paddle, "is_compiled_with_cuda", lambda: False)()) if paddle else None
        with open(_LOG, "a") as f:
            f.write(json.dumps({"event": event, "pid": os.getpid(), "argv": sys.orig_argv[:4],
                                "paddle_imported": paddle is not None, "cuda": cuda}) + "\\n")


    if _LOG:
        _record("start")
        os.register_at_fork(before=lambda: _record("fork"))
"""

# a CUDA build whose version file says CPU-only: only the server's check after import catches it
CUDA_PADDLE = {
    "paddle/__init__.py": """
        __version__ = "0.0.0"

        def is_compiled_with_cuda():
            return True

        def is_compiled_with_rocm():
            return False

        def is_compiled_with_xpu():
            return False
    """,
    "paddle/version/__init__.py": """
        full_version = "0.0.0"
        cuda_version = 'False'
    """,
}


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(RECORDER))
    log = tmp_path / "forks.jsonl"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PADDLE_INFER_TEST_FORK_LOG", str(log))
    monkeypatch.delenv("PADDLE_INFER_NO_FORK_SERVER", raising=False)

    def records():
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]

    records.site = site
    return records


def started(records, module):
    return [r for r in records if r["event"] == "start" and module in " ".join(r["argv"])]


def test_the_recorder_catches_a_fork_after_import_paddle(recorded):
    code = "import os, paddle\npid = os.fork()\nos._exit(0) if pid == 0 else os.waitpid(pid, 0)"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
    assert [(r["paddle_imported"], r["cuda"]) for r in recorded() if r["event"] == "fork"] == [(True, False)]


def sweep(pytester, paddle_cache, *args):
    pytester.makeconftest("")
    write_suite(pytester, f"""
        models:
          tiny_cnn:
            run_modes: [cpu_fp32, {DIFFERING_AT_ZERO}]
          tiny_detector:
            run_modes: [cpu_fp32]
    """, "sweep.paddle.yaml")
    return pytester.runpytest_subprocess("-n", "2", f"--paddle-cache-dir={paddle_cache}",
                                         "-p", "no:cacheprovider", *args)


def test_with_cpu_only_paddle_only_the_fork_server_forks_after_importing_it(pytester, recorded,
                                                                              paddle_cache):
    """Two workers, their executor children forked from the server, and a failing case
    localized with its trials in a spawned child of the executor."""
    result = sweep(pytester, paddle_cache, "--paddle-localize")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*localization*"])
    records = recorded()
    server = {r["pid"] for r in started(records, "pytest_paddle_infer.fork_server")}
    assert len(server) == 1, records
    forks = [r for r in records if r["event"] == "fork" and r["paddle_imported"]]
    assert len(forks) >= 2 and {r["pid"] for r in forks} == server  # one fork per worker
    assert not any(r["cuda"] for r in forks)


def test_a_paddle_that_can_use_cuda_is_never_forked_after_import(pytester, recorded, paddle_cache):
    """The stand-in's version file says CPU-only, so the server starts and imports it; its
    check after the import refuses, and every worker spawns its own executor child."""
    for name, text in CUDA_PADDLE.items():
        path = recorded.site / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    sweep(pytester, paddle_cache)  # the stand-in cannot run a case: only the order matters here
    records = recorded()
    assert started(records, "pytest_paddle_infer.fork_server"), "the server was not started"
    assert len(started(records, "pytest_paddle_infer.engine.service")) >= 2  # spawned instead
    assert [r for r in records if r["event"] == "fork" and r["paddle_imported"]] == []


LENT_NETS = '''
import paddle
import paddle.nn as nn

MADE_FOR = "{token}"  # a fresh builder each run: its export is not in the cache


class Head(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(x)


def head():
    paddle.seed(5)
    return Head()
'''


def test_a_lent_fork_server_forks_the_sessions_children(pytester, run_pytest, fork_server_to_lend,
                                                        xdist_mode):
    """A session lent the test process's server (conftest.py) imports paddle in no child of
    its own: its executors, the signature probe, the export and the dygraph baseline all fork
    from the server, which records each one's exit status in its directory."""
    import time
    import uuid
    from pathlib import Path

    if not fork_server_to_lend:
        pytest.skip("no fork server runs here (paddle is not CPU-only)")
    directory = Path(json.loads(fork_server_to_lend)["directory"])
    before = set(directory.glob("*.status"))
    pytester.makepyfile(lent_head=LENT_NETS.format(token=uuid.uuid4().hex))
    write_suite(pytester, """
        defaults: {baseline: dygraph, run_modes: [cpu_fp32]}
        models:
          head: {source: "lent_head:head", inputs: {x: {shape: [-1, 8]}}, shapes: [[1, 8], [2, 8]]}
    """)
    result = run_pytest(*xdist_mode)
    result.assert_outcomes(passed=2)
    wanted = 4 + (1 if xdist_mode else 0)  # executor(s), signature probe, export, dygraph baseline
    deadline = time.monotonic() + 20  # the executors' statuses come as they exit
    while len(set(directory.glob("*.status")) - before) < wanted and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(set(directory.glob("*.status")) - before) >= wanted
