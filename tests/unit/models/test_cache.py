"""models/cache.py: the export cache (locking, corruption, manifest, its stat stamps, self
healing), legacy exports, and its child processes' failures named."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from filelock import FileLock

from pytest_paddle_infer.errors import describe_exit
from pytest_paddle_infer.models import cache
from pytest_paddle_infer.models.cache import (_trim_child_error, cache_subdir, cached_build, child_failure,
                                              export_dir, read_record, remove_stale_builds, resolve,
                                              write_record)
from pytest_paddle_infer.models.source import MANIFEST, parse_source

from unit.test_ownership import snapshot, user_files


def test_concurrent_exports_build_once(tmp_path):
    """Two processes resolving one zoo entry at once: one export, both get the same files."""
    script = textwrap.dedent(f"""
        import json, sys
        from pytest_paddle_infer.models.source import parse_source
        from pytest_paddle_infer.models.cache import resolve
        files = resolve(parse_source("tiny_cnn"), {str(tmp_path)!r})
        print(json.dumps([files.prog_file, files.params_file]))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    assert outs[0] == outs[1]
    entries = [p for p in (tmp_path / "models").iterdir() if not p.name.endswith(".lock")]
    assert len(entries) == 1, entries  # no leftover temporary directories
    manifest = json.loads((entries[0] / MANIFEST).read_text())
    assert set(manifest["files"]) >= {"inference.pdiparams"}


def test_corrupt_entry_is_rebuilt_not_used(tmp_path):
    source = parse_source("tiny_cnn")
    files = resolve(source, tmp_path)
    params = Path(files.params_file)
    good = params.read_bytes()
    params.write_bytes(good[: len(good) // 2])  # a half-written file
    script = ("from pytest_paddle_infer.models.source import parse_source; from pytest_paddle_infer.models.cache import resolve;"
              f"resolve(parse_source('tiny_cnn'), {str(tmp_path)!r})")
    subprocess.run([sys.executable, "-c", script], check=True)  # a fresh process: no memo
    assert params.read_bytes() == good  # deterministic weights: the rebuild is identical


def test_missing_manifest_means_rebuild(tmp_path):
    source = parse_source("tiny_cnn")
    files = resolve(source, tmp_path)
    entry = export_dir(source, tmp_path, legacy=False)
    (entry / MANIFEST).unlink()
    script = ("from pytest_paddle_infer.models.source import parse_source; from pytest_paddle_infer.models.cache import resolve;"
              f"resolve(parse_source('tiny_cnn'), {str(tmp_path)!r})")
    subprocess.run([sys.executable, "-c", script], check=True)
    assert (entry / MANIFEST).exists() and Path(files.prog_file).exists()


def test_legacy_export_when_paddle_can_write_it(paddle_cache):
    files = resolve(parse_source("tiny_detector"), paddle_cache, legacy=True)
    assert files.prog_file.endswith(".pdmodel") and files.format == "legacy"
    assert [i.name for i in files.inputs] == ["im_shape", "image", "scale_factor"]


# ---------------------------------------------------------------------------------------
# The cache heals itself: an entry replaced by a file, stale temporary builds, edited or
# truncated records (models/cache.py). No Paddle: builds here write plain files.
# ---------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------
# Export entries are hashed against their manifest once; later sessions trust the files'
# stat stamps (size, mtime, ctime, inode) while nothing touched them (models/cache.py).
# ---------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------
# Runtime messages a person can act on: a child's death named, the user's frames only.
# ---------------------------------------------------------------------------------------


TRACEBACK = """Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "{plugin}/models/exporter.py", line 55, in build_layer
    layer = load_builder(builder)(**kwargs)
  File "/home/me/repo/my_models.py", line 12, in build
    raise RuntimeError("no such backbone: ResNet999")
RuntimeError: no such backbone: ResNet999
"""


def test_a_child_that_dies_silently_names_its_signal_or_status():
    assert child_failure("exporting model 'm'", -11, "") == \
        "exporting model 'm' failed: the child process was killed by SIGSEGV"
    assert child_failure("x", 7, "\n").endswith("failed: the child process exited with status 7")
    assert describe_exit(134) == "exited with status 134 (SIGABRT)"


def test_a_child_traceback_keeps_the_users_frames_and_the_exception():
    from pytest_paddle_infer.models import cache

    text = _trim_child_error(TRACEBACK.format(plugin=cache.PLUGIN_DIR))
    assert text.splitlines() == ['  File "/home/me/repo/my_models.py", line 12, in build',
                                 '    raise RuntimeError("no such backbone: ResNet999")',
                                 "RuntimeError: no such backbone: ResNet999"]


def test_a_child_that_exits_cleanly_without_an_answer_says_so():
    import pytest

    from pytest_paddle_infer.errors import ModelError
    from pytest_paddle_infer.models.cache import run_child

    with pytest.raises(ModelError, match="exporting x failed: the child process exited without an answer"):
        run_child([], False, "exporting x", module="this")  # prints a poem, exits 0, no JSON


def test_the_caches_self_healing_deletes_nothing_in_a_directory_without_its_marker(tmp_path):
    from pytest_paddle_infer.models.cache import heal_cache_dirs

    user_files(tmp_path, "models", "repro", "baselines", "executor")
    (tmp_path / "spill").symlink_to(tmp_path / "models")
    before = snapshot(tmp_path)
    heal_cache_dirs(tmp_path)
    assert snapshot(tmp_path) == before


def test_a_child_past_its_timeout_is_killed_with_a_message():
    from pytest_paddle_infer.errors import ModelError
    from pytest_paddle_infer.models.cache import run_child

    with pytest.raises(ModelError, match="timed out after 0.5 s and was killed"):
        # timeit times the statement (its "-c" is gone in Python 3.12: the child would exit 2 at once)
        run_child(["-n", "1", "-r", "1", "import time; time.sleep(30)"], False, "sleeping", module="timeit",
                  timeout=0.5)
