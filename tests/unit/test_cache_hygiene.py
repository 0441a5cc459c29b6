"""The cache heals itself: an entry replaced by a file, stale temporary builds, edited or
truncated records (models/cache.py). No Paddle: builds here write plain files."""
import json

from filelock import FileLock

from pytest_paddle_infer.models.cache import (cache_subdir, cached_build, read_record,
                                              remove_stale_builds, write_record)


def writes(content: str):
    def build(tmp):
        (tmp / "inference.json").write_text(content)
        return {"built": content}
    return build


def test_an_entry_replaced_by_a_file_is_rebuilt(tmp_path):
    entry = tmp_path / "models" / "m-1-default"
    entry.parent.mkdir()
    entry.write_text("not a directory")
    manifest = cached_build(entry, writes("program"))
    assert manifest["built"] == "program"
    assert (entry / "inference.json").read_text() == "program"


def test_a_truncated_manifest_is_rebuilt(tmp_path):
    entry = tmp_path / "models" / "m-2-default"
    cached_build(entry, writes("first"))
    manifest = entry / "manifest.json"
    manifest.write_text(manifest.read_text()[:10])
    from pytest_paddle_infer.models import cache

    cache._verified.clear()  # a later process: nothing verified yet
    assert cached_build(entry, writes("second"))["built"] == "second"


def test_a_models_directory_replaced_by_a_file_is_made_again(tmp_path):
    (tmp_path / "models").write_text("junk")
    entry = tmp_path / "models" / "m-3-default"
    assert cached_build(entry, writes("p"))["built"] == "p"


def test_stale_temporary_builds_are_removed_unless_their_lock_is_held(tmp_path):
    models = tmp_path / "models"
    entry = models / "m-4-default"
    mine = models / "m-4-default.tmp-dead1"  # the same entry: its lock is the caller's
    free = models / "other-1-default.tmp-dead2"  # another entry, nobody building it
    busy = models / "busy-1-default.tmp-live3"  # another entry being built right now
    for d in (mine, free, busy):
        d.mkdir(parents=True)
        (d / "inference.pdiparams").write_bytes(b"\0" * 1024)
    with FileLock(str(models / "busy-1-default.lock")):
        remove_stale_builds(models, held=entry.name)
    assert not mine.exists() and not free.exists()
    assert busy.exists()


def test_stale_builds_go_even_when_every_entry_is_cached(tmp_path):
    entry = tmp_path / "models" / "m-6-default"
    cached_build(entry, writes("p"))
    stale = tmp_path / "models" / "other-2-default.tmp-killed"
    stale.mkdir()
    from pytest_paddle_infer.models import cache

    cache._swept.clear()  # a later session
    assert cached_build(entry, writes("never built"))["built"] == "p"
    assert not stale.exists()


def test_an_export_sweeps_stale_builds(tmp_path):
    stale = tmp_path / "models" / "gone-1-default.tmp-x"
    stale.mkdir(parents=True)
    cached_build(tmp_path / "models" / "m-5-default", writes("p"))
    assert not stale.exists()


def test_records_carry_a_digest_and_an_edited_one_is_not_trusted(tmp_path):
    path = tmp_path / "inspect" / "k.json"
    data = {"inputs": [{"name": "x", "shape": [-1, 3, 32, 32], "dtype": "float32"}]}
    write_record(path, "k", data)
    assert read_record(path, "k") == data
    assert read_record(path, "another key") is None
    sealed = json.loads(path.read_text())
    sealed["data"]["inputs"][0]["shape"] = [1, 3, 99, 99]  # the edit the issue describes
    path.write_text(json.dumps(sealed))
    assert read_record(path, "k") is None
    path.write_text(path.read_text()[:20])  # truncated
    assert read_record(path, "k") is None
    path.write_text(json.dumps(data))  # an unsealed record of an older version
    assert read_record(path, "k") is None


def test_a_directory_in_place_of_a_record_or_a_file_in_place_of_a_directory(tmp_path):
    path = tmp_path / "inspect" / "k.json"
    path.mkdir(parents=True)
    write_record(path, "k", {"a": 1})
    assert read_record(path, "k") == {"a": 1}
    (tmp_path / "signatures").write_text("junk")
    assert cache_subdir(tmp_path / "signatures").is_dir()


def test_the_caches_own_directories_replaced_by_files_are_removed(tmp_path):
    from pytest_paddle_infer.models.cache import heal_cache_dirs
    from pytest_paddle_infer.ownership import write_marker

    write_marker(tmp_path, "cache")
    (tmp_path / "executor").write_text("junk")
    (tmp_path / "spill").symlink_to(tmp_path / "nowhere")
    (tmp_path / "installation.json").write_text("{}")  # a file of the cache, kept
    (tmp_path / "models").mkdir()
    heal_cache_dirs(tmp_path)
    assert not (tmp_path / "executor").exists() and not (tmp_path / "spill").is_symlink()
    assert (tmp_path / "installation.json").is_file() and (tmp_path / "models").is_dir()
