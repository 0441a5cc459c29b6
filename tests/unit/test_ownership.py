"""Which directories and files are the plugin's (ownership.py): markers, the manifest of
files it wrote, earlier versions' directories taken over, repro folders, the one session
per report directory. Every test keeps the user's files and checks them byte for byte."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_paddle_infer import ownership
from pytest_paddle_infer.files import file_sha256
from pytest_paddle_infer.ownership import (MANIFEST, MARKER, OwnershipError, check_writable, claim,
                                           fresh_folder, marker_kind, record, record_tree,
                                           recognise_cache, recognise_goldens, recognise_report,
                                           remove_recorded)


def snapshot(root: Path) -> dict:
    """Every file and link under ``root`` with its bytes (or link target)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(root))] = ("link", os.readlink(p))
        elif p.is_file():
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


def user_files(d: Path, *names: str) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for name in names:
        (d / name).write_bytes(f"the user's {name}\n".encode())


def test_a_missing_or_empty_directory_is_made_and_marked(tmp_path):
    claim(tmp_path / "a" / "b", "report", "--paddle-report")
    (tmp_path / "empty").mkdir()
    claim(tmp_path / "empty", "goldens", "--paddle-save-goldens")
    assert marker_kind(tmp_path / "a" / "b") == "report" and marker_kind(tmp_path / "empty") == "goldens"


def test_a_directory_with_files_and_no_marker_is_refused_untouched(tmp_path):
    user_files(tmp_path / "home", "index.html", "summary.json", "notes.txt")
    before = snapshot(tmp_path)
    with pytest.raises(OwnershipError) as e:
        claim(tmp_path / "home", "report", "--paddle-report", ownership.recognise_report,
              first=("index.html", "summary.json"))
    assert str(e.value).startswith(f"--paddle-report: {tmp_path / 'home' / 'index.html'} is not a "
                                   f"paddle-infer report file")
    assert "choose an empty or a paddle-infer report directory" in str(e.value)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("marker", ["garbage", "link", "directory", "other kind"])
def test_a_marker_not_the_plugins_own_is_no_marker(tmp_path, marker):
    d = tmp_path / "d"
    user_files(d, "data.csv")
    elsewhere = tmp_path / "elsewhere"
    claim(elsewhere, "report", "--paddle-report")
    if marker == "garbage":
        (d / MARKER).write_text("{not json")
    elif marker == "link":
        (d / MARKER).symlink_to(elsewhere / MARKER)
    elif marker == "directory":
        (d / MARKER).mkdir()
    else:
        (d / MARKER).write_text(json.dumps({"kind": "cache"}))
    before = snapshot(tmp_path)
    with pytest.raises(OwnershipError) as e:
        claim(d, "report", "--paddle-report")
    assert ("not a report directory" if marker == "other kind" else "is not a paddle-infer report file") in str(e.value)
    assert snapshot(tmp_path) == before


def test_an_earlier_versions_cache_is_taken_over_a_users_directory_is_not(tmp_path):
    old = tmp_path / "old"
    (old / "models" / "tiny_cnn-0123456789ab-default").mkdir(parents=True)
    (old / "models" / "tiny_cnn-0123456789ab-default.lock").write_text("")
    (old / "inspect").mkdir()
    (old / "inspect" / "0123456789abcdef.json").write_text("{}")
    (old / "installation.json").write_text("{}")
    assert recognise_cache(old, sorted(os.listdir(old)))
    claim(old, "cache", "--paddle-cache-dir", recognise_cache)
    assert marker_kind(old) == "cache"
    # the home directory: files named like the cache's directories, and others
    home = tmp_path / "home"
    user_files(home, "models", "repro", "baselines", ".bashrc")
    mine = tmp_path / "mine"
    (mine / "models").mkdir(parents=True)
    user_files(mine / "models", "resnet.pdmodel")  # a directory of the user's own models
    for d in (home, mine):
        before = snapshot(d)
        with pytest.raises(OwnershipError):
            claim(d, "cache", "--paddle-cache-dir", recognise_cache)
        assert snapshot(d) == before and marker_kind(d) is None


def test_an_earlier_versions_report_is_recognised_by_content_not_by_name(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    (old / "index.html").write_text("<!doctype html>\n<html><head><title>paddle-infer report</title>")
    (old / "summary.json").write_text(json.dumps({"environment": {}, "cases": []}))
    (old / "m-1.json").write_text(json.dumps({"summary": {}, "columns": [], "rows": []}))
    (old / "m-1.csv").write_text("a,b\n")
    assert recognise_report(old, sorted(os.listdir(old)))
    (old / "data.json").write_text("{}")  # the user's, beside it: not a case file
    assert not recognise_report(old, sorted(os.listdir(old)))
    (old / "data.json").unlink()
    (old / "index.html").write_text("<html><title>My page</title></html>")
    assert not recognise_report(old, sorted(os.listdir(old)))


def test_only_recorded_unchanged_regular_files_inside_are_removed(tmp_path):
    report = tmp_path / "report"
    claim(report, "report", "--paddle-report")
    for name in ("a.json", "b.csv", "edited.json"):
        (report / name).write_text(f"written by the plugin: {name}")
    record(report, ["a.json", "b.csv", "edited.json"])
    (report / "edited.json").write_text("the user edited this")
    user_files(tmp_path, "victim.txt")
    user_files(report, "notes.txt", "photo.png")
    (report / "link.json").symlink_to(tmp_path / "victim.txt")
    # a manifest edited by hand: names outside, a link, a user's file with a wrong hash
    with open(report / MANIFEST, "a") as f:
        for name in ("../victim.txt", str(tmp_path / "victim.txt"), "link.json", "notes.txt"):
            f.write(json.dumps({"name": name, "sha256": file_sha256(tmp_path / "victim.txt")}) + "\n")
        f.write("not json\n")
    # a summary.json naming the user's files decides nothing
    (report / "summary.json").write_text(json.dumps({"cases": [{"files": ["notes.txt", "photo.png"]}]}))
    before = {k: v for k, v in snapshot(tmp_path).items() if k not in ("report/a.json", "report/b.csv")}
    assert sorted(remove_recorded(report)) == ["a.json", "b.csv"]
    after = snapshot(tmp_path)
    after.pop(f"report/{MANIFEST}"), before.pop(f"report/{MANIFEST}")
    assert after == before
    assert ownership.recorded(report) == {}  # the edited file is no longer the plugin's


def test_a_file_in_the_way_is_written_over_only_when_the_plugin_wrote_it(tmp_path):
    claim(tmp_path, "report", "--paddle-report")
    (tmp_path / "ours.json").write_text("1")
    record(tmp_path, ["ours.json"])
    check_writable(tmp_path, ["ours.json", "absent.json"], "a paddle-infer report")
    user_files(tmp_path, "index.html")
    with pytest.raises(OwnershipError, match=r"index.html is not a paddle-infer report file"):
        check_writable(tmp_path, ["index.html"], "a paddle-infer report")
    (tmp_path / "ours.json").write_text("2")
    with pytest.raises(OwnershipError, match=r"ours.json was changed since paddle-infer wrote it"):
        check_writable(tmp_path, ["ours.json"], "a paddle-infer report")
    (tmp_path / "link.json").symlink_to(tmp_path / "index.html")
    with pytest.raises(OwnershipError, match=r"link.json is not"):
        check_writable(tmp_path, ["link.json"], "a paddle-infer report")


def test_a_repro_folder_is_emptied_only_of_what_the_plugin_wrote(tmp_path):
    folder = fresh_folder(tmp_path / "repro" / "case")
    (folder / "model").mkdir()
    (folder / "model" / "inference.json").write_text("{}")
    (folder / "README.md").write_text("# Repro")
    record_tree(folder)
    assert fresh_folder(folder) == folder and set(os.listdir(folder)) <= set(ownership.OWN_NAMES)
    (folder / "README.md").write_text("# Repro")
    record_tree(folder)
    user_files(folder, "my-notes.txt")
    before = snapshot(tmp_path)
    with pytest.raises(OwnershipError, match="my-notes.txt is not a file paddle-infer wrote"):
        fresh_folder(folder)
    assert set(snapshot(tmp_path)) == set(before) - {"repro/case/README.md"}
    theirs = tmp_path / "repro" / "theirs"
    user_files(theirs, "README.md", "data.bin")
    before = snapshot(theirs)
    with pytest.raises(OwnershipError, match="is not a paddle-infer repro folder"):
        fresh_folder(theirs)
    assert snapshot(theirs) == before
    old = tmp_path / "repro" / "old"  # an earlier version's: taken over
    (old / "model").mkdir(parents=True)
    for name in ("README.md", "repro.py", "inputs.npz", "model/inference.pdmodel"):
        (old / name).write_text("old")
    assert fresh_folder(old) == old and marker_kind(old) == "repro"


HOLD = """
import sys, time
from pathlib import Path
from pytest_paddle_infer.ownership import claim, hold_session
claim(Path(sys.argv[1]), "report", "--paddle-report")
lock = hold_session(Path(sys.argv[1]), "--paddle-report")
print("held", flush=True)
sys.stdin.readline()
"""


def test_a_second_session_on_one_report_directory_is_refused_while_the_first_holds_it(tmp_path):
    report = tmp_path / "report"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(ownership.__file__).parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(report)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OwnershipError) as e:
            ownership.hold_session(report, "--paddle-report")
        assert f"another pytest session (pid {holder.pid} on " in str(e.value)
        assert "give this session another directory" in str(e.value)
    finally:
        holder.communicate("\n", timeout=30)
    ownership.release(ownership.hold_session(report, "--paddle-report"))  # free again once it ended


def test_a_marker_another_process_is_writing_is_not_a_users_file(tmp_path):
    """xdist workers read one suite at once: one may see another's marker half-written."""
    goldens = tmp_path / "g"
    goldens.mkdir()
    (goldens / f".{MARKER}.4242-0a1b2c3d.tmp").write_text("")  # files.atomic_write's name for it
    claim(goldens, "goldens", "baseline golden:g", recognise_goldens)
    assert marker_kind(goldens) == "goldens"
