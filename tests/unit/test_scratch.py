"""scratch.py: a session's shared directories are swept only when a dead session left them."""
from __future__ import annotations

import subprocess
import sys

from pytest_paddle_infer import scratch


def _made_by_a_dead_process(parent) -> str:
    code = ("import os, sys; from pytest_paddle_infer import scratch; "
            "print(scratch.make('paddle-infer-t-', parent=sys.argv[1]).name, flush=True); os._exit(0)")
    return subprocess.run([sys.executable, "-c", code, str(parent)], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_live_sessions_directory_is_kept_and_a_dead_ones_swept(tmp_path):
    live = scratch.make("paddle-infer-t-", parent=tmp_path)
    dead = _made_by_a_dead_process(tmp_path)
    assert (tmp_path / dead / scratch.LOCK).is_file()
    assert scratch.sweep(tmp_path, "paddle-infer-t-") == 1
    assert live.is_dir() and not (tmp_path / dead).exists()
    scratch.remove(live)
    assert not live.exists()


def test_what_the_plugin_did_not_make_is_kept(tmp_path):
    plain = tmp_path / "paddle-infer-t-users"  # no lock file: the user's
    plain.mkdir()
    (tmp_path / "paddle-infer-t-file").write_text("a file of the user's")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / scratch.LOCK).write_text("")
    (tmp_path / "paddle-infer-t-link").symlink_to(target)  # a link is never followed into
    assert scratch.sweep(tmp_path, "paddle-infer-t-") == 0
    assert plain.is_dir() and target.is_dir() and (tmp_path / "paddle-infer-t-file").is_file()


def test_a_named_directory_that_holds_files_is_an_error_and_kept(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "notes.txt").write_text("the user's")
    try:
        scratch.make(parent=tmp_path, name="run")
    except OSError:
        pass
    else:
        raise AssertionError("made over an existing directory")
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # nothing half-made left
    assert (tmp_path / "run" / "notes.txt").read_text() == "the user's"


def test_another_live_sessions_directory_is_kept_until_it_ends(tmp_path):
    code = ("import sys; from pytest_paddle_infer import scratch; "
            "print(scratch.make('paddle-infer-t-', parent=sys.argv[1]).name, flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        name = holder.stdout.readline().strip()
        assert scratch.sweep(tmp_path, "paddle-infer-t-") == 0 and (tmp_path / name).is_dir()
    finally:
        holder.stdin.close()
        holder.wait()
    assert scratch.sweep(tmp_path, "paddle-infer-t-") == 1 and not (tmp_path / name).exists()


def test_where_nothing_can_be_locked_the_directory_is_made_and_never_swept(tmp_path, monkeypatch):
    import filelock

    def refuse(self, *args, **kwargs):
        raise NotImplementedError("no flock on this file system")

    monkeypatch.setattr(filelock.FileLock, "acquire", refuse)
    made = scratch.make("paddle-infer-t-", parent=tmp_path)
    assert made.is_dir() and not (made / scratch.LOCK).exists()
    assert scratch.sweep(tmp_path, "paddle-infer-t-") == 0
    scratch.remove(made)
    assert not made.exists()


def test_a_directory_another_host_made_is_kept(tmp_path):
    """On a network file system that locks per host, another host's live lock looks free."""
    dead = _made_by_a_dead_process(tmp_path)
    (tmp_path / dead / scratch.HOST).write_text("another-host")
    assert scratch.sweep(tmp_path, "paddle-infer-t-") == 0 and (tmp_path / dead).is_dir()
