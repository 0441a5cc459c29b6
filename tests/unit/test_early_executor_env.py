"""An executor child started early (before pytest_configure) is adopted only when the
environment and cwd it was started with are still the session's: a conftest or a plugin
such as pytest-env may set FLAGS_*, OMP_NUM_THREADS... in between, and the child must see them."""
from pytest_paddle_infer.execute import executor as ex


def _adopt(tmp_path):
    ex.start_early()
    early = ex._EARLY[-1][1]
    return early, ex.Executor({}, tmp_path / "logs", timeout=30)


def test_an_unchanged_environment_adopts_the_early_child(tmp_path):
    early, executor = _adopt(tmp_path)
    try:
        executor.start()
        assert executor.proc is early and not ex._EARLY
    finally:
        executor.close()
    assert early.poll() is not None


def test_a_changed_environment_starts_a_new_child(tmp_path, monkeypatch):
    early, executor = _adopt(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", "1" if ex.os.environ.get("OMP_NUM_THREADS") != "1" else "2")
    try:
        executor.start()
        assert executor.proc is not early and not ex._EARLY
        assert early.poll() is not None  # the early child was killed, not left running
    finally:
        executor.close()
        ex.discard_early()
