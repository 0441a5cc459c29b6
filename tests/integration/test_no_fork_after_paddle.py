"""No process forks after it imported paddle: a GPU build's ``import paddle`` initialises CUDA,
and a child forked after that gets CUDA_ERROR_NOT_INITIALIZED from every CUDA call. Children
are started by fork+exec (subprocess), which is safe: the exec replaces the image.

A stand-in records the order in every Python process of a session (the pytest process, xdist
workers, executor children, trial children): a ``sitecustomize`` on PYTHONPATH registers an
at-fork hook that writes whether paddle had been imported when the process forked. The
recorder is shown to catch a fork after ``import paddle``.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from helpers import DIFFERING_AT_ZERO, write_suite

pytestmark = pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="needs os.register_at_fork")

RECORDER = """
    import json, os, sys

    _LOG = os.environ.get("PADDLE_INFER_TEST_FORK_LOG")


    def _record(event):
        with open(_LOG, "a") as f:
            f.write(json.dumps({"event": event, "pid": os.getpid(), "argv": getattr(sys, "orig_argv", sys.argv)[:4],
                                "paddle_imported": "paddle" in sys.modules}) + "\\n")


    if _LOG:
        _record("start")
        os.register_at_fork(before=lambda: _record("fork"))
"""


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(RECORDER))
    log = tmp_path / "forks.jsonl"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PADDLE_INFER_TEST_FORK_LOG", str(log))

    def forks():
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]

    return forks


def test_the_recorder_catches_a_fork_after_import_paddle(recorded):
    code = "import os, paddle\npid = os.fork()\nos._exit(0) if pid == 0 else os.waitpid(pid, 0)"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
    assert [f["paddle_imported"] for f in recorded() if f["event"] == "fork"] == [True]


def test_no_process_of_a_session_forks_after_importing_paddle(pytester, recorded, paddle_cache):
    """Two workers, their executor children, and a failing case localized with its trials in
    a child of the executor."""
    pytester.makeconftest("")
    write_suite(pytester, f"""
        models:
          tiny_cnn:
            run_modes: [cpu_fp32, {DIFFERING_AT_ZERO}]
          tiny_detector:
            run_modes: [cpu_fp32]
    """, "sweep.paddle.yaml")
    result = pytester.runpytest_subprocess("-n", "2", f"--paddle-cache-dir={paddle_cache}",
                                           "--paddle-localize", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*localization*"])
    records = recorded()
    started = [" ".join(r["argv"]) for r in records if r["event"] == "start"]
    # the recorder ran in the executor children (two workers, a trial child) too
    assert sum("pytest_paddle_infer.engine.service" in argv for argv in started) >= 3, started
    assert [r for r in records if r["event"] == "fork" and r["paddle_imported"]] == []
