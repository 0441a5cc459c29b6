"""Export entries are hashed against their manifest once; later sessions trust the files'
stat stamps (size, mtime, ctime, inode) while nothing touched them (models/cache.py)."""
import os

from pytest_paddle_infer.models import cache
from pytest_paddle_infer.models.source import MANIFEST


def entry(tmp_path):
    d = tmp_path / "entry"
    d.mkdir()
    (d / "inference.pdiparams").write_bytes(b"weights" * 1000)
    (d / "inference.json").write_text("{}")
    cache._write_manifest(d, {})
    return d


def fresh(d):
    cache._verified.clear()  # a new session
    return cache._valid_manifest(d)


def test_untouched_files_are_not_hashed_again(tmp_path, monkeypatch):
    d = entry(tmp_path)
    assert fresh(d) is not None and (d / cache.VERIFIED).is_file()
    hashed = []
    monkeypatch.setattr(cache, "file_sha256", lambda p: hashed.append(p) or "x")
    assert fresh(d) is not None and hashed == []


def test_an_edit_that_keeps_size_and_mtime_is_still_caught(tmp_path):
    d = entry(tmp_path)
    assert fresh(d) is not None
    params = d / "inference.pdiparams"
    st = params.stat()
    params.write_bytes(b"WEIGHTS" * 1000)  # same size
    os.utime(params, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back; ctime moved
    assert fresh(d) is None


def test_a_damaged_stamp_file_means_hashing(tmp_path):
    d = entry(tmp_path)
    (d / cache.VERIFIED).write_text("not json")
    assert fresh(d) is not None
    (d / MANIFEST).write_text("{}")
    assert fresh(d) is None
