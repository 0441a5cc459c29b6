"""A catalogue of files the plugin must leave alone: directories that are not its own given as
its report, cache, goldens or saved-runs directory, files planted inside its own
directories, links, two sessions on one report directory, and suites written with
--paddle-suggest-tolerances=write (links, hard links, anchors other models share, cases that
did not pass).

Every test keeps sentinel files beside and inside every directory it points the plugin at
(inside only once the plugin owns it, when the plugin is meant to accept it) and checks them
byte for byte afterwards, with every other file the test made. Sessions that need no Paddle
run in process (``pytester.runpytest``); the others in a subprocess with the shared export
cache (``run_pytest``)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import pytest

from helpers import DIFFERING_MODE, write_suite
from pytest_paddle_infer.files import file_sha256 as sha256
from pytest_paddle_infer.ownership import MANIFEST, MARKER, write_marker

pytestmark = pytest.mark.usefixtures("tag")  # no process a test started outlives it (conftest.py)

USAGE = 4
PLUGIN_DIR = str(Path(__file__).resolve().parents[2] / "pytest_paddle_infer")


# -- sentinels ---------------------------------------------------------------------------------


class Keep:
    """The user's files: each one's bytes (or a link's target), checked unchanged later."""

    def __init__(self, root: Path):
        self.root = root
        self.files: Dict[Path, Tuple[str, object]] = {}

    def file(self, path: Path, text: str = "") -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((text or f"the user's own {path.name}\n").encode())
        self.files[path] = ("file", path.read_bytes())
        return path

    def link(self, path: Path, target: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)
        self.files[path] = ("link", os.readlink(path))
        return path

    def around(self, directory: Path, inside: bool = True) -> Path:
        """Sentinels beside ``directory`` and (``inside``) in it."""
        self.file(directory.parent / f"beside-{directory.name}.txt")
        if inside:
            self.file(directory / "inside-sentinel.txt")
        return directory

    def check(self) -> None:
        for path, (kind, value) in self.files.items():
            if kind == "link":
                assert path.is_symlink() and os.readlink(path) == value, f"{path} changed"
            else:
                assert not path.is_symlink() and path.is_file(), f"{path} was deleted or replaced"
                assert path.read_bytes() == value, f"{path} was overwritten"


@pytest.fixture
def keep(pytester):
    k = Keep(pytester.path)
    yield k
    k.check()


def in_process(pytester, *args: str):
    """An in-process session with a plain test (so it exits 0 when nothing is refused)."""
    if not (pytester.path / "test_plain.py").exists():
        pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def refused(result, *says: str) -> str:
    text = result.stdout.str() + "\n" + result.stderr.str()
    assert result.ret == USAGE, text
    assert "INTERNALERROR" not in text and "Traceback" not in text and f'File "{PLUGIN_DIR}' not in text, text
    for phrase in says:
        assert phrase in text, f"{phrase!r} not in:\n{text}"
    return text


# -- directories that are not the plugin's: refused at start, nothing touched ----------------------


@dataclass
class Row:
    id: str
    setup: Callable[[Path, Keep], List[str]]  # makes the user's files, returns the options
    says: Tuple[str, ...] = ()
    env: Dict[str, str] = field(default_factory=dict)


def _home_report(d: Path, keep: Keep) -> List[str]:
    home = keep.around(d / "home")
    keep.file(home / "index.html", "<html>my home page</html>")
    keep.file(home / "summary.json", '{"my": "summary"}')
    return ["--paddle-report=~"]


def _summary_names_user_files(d: Path, keep: Keep) -> List[str]:
    report = keep.around(d / "report")
    for name in ("data.json", "notes.csv", "photo.png", "index.html"):
        keep.file(report / name)
    keep.file(report / "summary.json", json.dumps({"cases": [{"files": ["data.json", "notes.csv", "photo.png"]}]}))
    return ["--paddle-report=report"]


def _home_cache(d: Path, keep: Keep) -> List[str]:
    home = keep.around(d / "home")
    for name in ("models", "repro", "baselines"):
        keep.file(home / name)
    return ["--paddle-cache-dir=~"]


def _cache_with_users_models(d: Path, keep: Keep) -> List[str]:
    cache = keep.around(d / "work", inside=False)
    keep.file(cache / "models" / "resnet50.pdmodel")
    keep.file(cache / "installation.json", "{}")
    return ["--paddle-cache-dir=work"]


def _cache_with_notes(d: Path, keep: Keep) -> List[str]:
    keep.around(d / "cache")
    return ["--paddle-cache-dir=cache"]


def _goldens_into_user_dir(d: Path, keep: Keep) -> List[str]:
    keep.file(keep.around(d / "g") / "data.csv")
    return ["--paddle-save-goldens=g"]


def _goldens_beside_user_npz(d: Path, keep: Keep) -> List[str]:
    g = keep.around(d / "g")
    keep.file(g / "weights.npz", "not a golden")
    return ["--paddle-save-goldens=g"]


def _runs_into_user_dir(d: Path, keep: Keep) -> List[str]:
    keep.file(keep.around(d / "runs") / "photo.png")
    return ["--paddle-save-runs=runs"]


def _report_is_link_to_user_dir(d: Path, keep: Keep) -> List[str]:
    target = keep.around(d / "mine")
    keep.file(target / "index.html")
    keep.link(d / "report", target)
    return ["--paddle-report=report"]


def _cache_models_is_a_link(d: Path, keep: Keep) -> List[str]:
    mine = keep.around(d / "my-models")
    keep.file(mine / "resnet50.pdiparams")
    cache = keep.around(d / "cache", inside=False)
    keep.link(cache / "models", mine)
    return ["--paddle-cache-dir=cache"]


def _garbage_marker(d: Path, keep: Keep) -> List[str]:
    report = keep.around(d / "report")
    keep.file(report / MARKER, "my own dotfile")
    return ["--paddle-report=report"]


def _marker_is_a_link(d: Path, keep: Keep) -> List[str]:
    real = d / "real"
    real.mkdir()
    (real / MARKER).write_text(json.dumps({"kind": "report"}))
    report = keep.around(d / "report")
    keep.link(report / MARKER, real / MARKER)
    return ["--paddle-report=report"]


def _report_into_a_cache(d: Path, keep: Keep) -> List[str]:
    cache = d / "cache"
    cache.mkdir()
    (cache / MARKER).write_text(json.dumps({"kind": "cache"}))
    keep.around(cache)
    return ["--paddle-report=cache"]


def _report_is_the_cache(d: Path, keep: Keep) -> List[str]:
    keep.around(d / "out", inside=False)
    return ["--paddle-report=out", "--paddle-cache-dir=out"]


def _report_is_the_goldens(d: Path, keep: Keep) -> List[str]:
    keep.around(d / "out", inside=False)
    return ["--paddle-report=out", "--paddle-save-goldens=out"]


def _users_repro_folder(d: Path, keep: Keep) -> List[str]:
    report = keep.around(d / "report", inside=False)
    keep.file(report / "repro" / "README.md")
    return ["--paddle-report=report"]


def _old_report_and_a_user_file(d: Path, keep: Keep) -> List[str]:
    report = keep.around(d / "report")
    keep.file(report / "index.html", "<html><head><title>paddle-infer report</title></head></html>")
    keep.file(report / "summary.json", json.dumps({"environment": {}, "cases": []}))
    keep.file(report / "data.json", '{"mine": 1}')
    return ["--paddle-report=report"]


def _update_goldens_of_a_users_dir(d: Path, keep: Keep) -> List[str]:
    keep.file(keep.around(d / "g") / "weights.npz", "not a golden")
    return ["--paddle-baseline=golden:g", "--paddle-update-goldens"]


def _ini_report(d: Path, keep: Keep) -> List[str]:
    keep.file(keep.around(d / "rep") / "index.html")
    (d / "pytest.ini").write_text("[pytest]\npaddle_report = rep\n")
    return []


ROWS = [
    Row("report_is_home_with_index_and_summary", _home_report,
        ("home/index.html is not a paddle-infer report file", "choose an empty or a paddle-infer report directory")),
    Row("report_summary_names_the_users_files", _summary_names_user_files,
        ("report/index.html is not a paddle-infer report file",)),
    Row("cache_is_home_with_files_named_models_repro_baselines", _home_cache,
        ("--paddle-cache-dir: ", "is not a paddle-infer cache file", "choose an empty or a paddle-infer cache")),
    Row("cache_holds_a_users_models_directory", _cache_with_users_models, ("is not a paddle-infer cache file",)),
    Row("cache_holds_a_users_notes", _cache_with_notes, ("cache/inside-sentinel.txt is not a paddle-infer cache file",)),
    Row("save_goldens_into_a_users_directory", _goldens_into_user_dir,
        ("--paddle-save-goldens: ", "is not a paddle-infer goldens file")),
    Row("save_goldens_beside_a_users_text_and_npz", _goldens_beside_user_npz, ("is not a paddle-infer goldens file",)),
    Row("save_runs_into_a_users_directory", _runs_into_user_dir,
        ("--paddle-save-runs: ", "is not a paddle-infer saved runs file")),
    Row("report_is_a_link_to_a_users_directory", _report_is_link_to_user_dir,
        ("index.html is not a paddle-infer report file",)),
    Row("cache_models_is_a_link_to_the_users_models", _cache_models_is_a_link,
        ("cache/models is not a paddle-infer cache file",)),
    Row("report_holds_a_users_dotfile_named_like_the_marker", _garbage_marker,
        (f"report/{MARKER} is not a paddle-infer report file",)),
    Row("report_marker_is_a_link_to_a_real_marker", _marker_is_a_link, ("is not a paddle-infer report file",)),
    Row("report_into_the_plugins_cache", _report_into_a_cache,
        ("is a paddle-infer cache directory, not a report directory: give each its own directory",)),
    Row("report_and_cache_one_directory", _report_is_the_cache,
        ("--paddle-cache-dir and --paddle-report name the same directory",)),
    Row("report_and_goldens_one_directory", _report_is_the_goldens,
        ("--paddle-save-goldens and --paddle-report name the same directory",)),
    Row("report_holds_a_users_repro_folder", _users_repro_folder, ("report/repro is not a paddle-infer report file",)),
    Row("report_of_an_earlier_version_with_a_users_file_beside", _old_report_and_a_user_file,
        ("is not a paddle-infer report file",)),
    Row("update_goldens_in_a_users_directory", _update_goldens_of_a_users_dir,
        ("--paddle-baseline=golden:", "g/inside-sentinel.txt is not a paddle-infer goldens file")),
    Row("report_from_the_ini_file", _ini_report,
        ("ini key paddle_report: ", "rep/index.html is not a paddle-infer report file")),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_a_directory_that_is_not_the_plugins_is_refused_untouched(row, pytester, keep, monkeypatch):
    monkeypatch.setenv("HOME", str(pytester.path / "home"))
    args = row.setup(pytester.path, keep)
    refused(in_process(pytester, *args), *row.says)
    assert not list(pytester.path.rglob(f"*{MANIFEST}*"))  # nothing of the plugin's written anywhere


# -- directories the plugin takes over, and its own directories with the user's files in them ------


def test_an_earlier_versions_report_is_taken_over_and_replaced(pytester, keep):
    report = keep.around(pytester.path / "report", inside=False)
    report.mkdir()
    (report / "index.html").write_text("<html><head><title>paddle-infer report</title></head></html>")
    (report / "summary.json").write_text(json.dumps({"environment": {}, "cases": []}))
    (report / "m-1.json").write_text(json.dumps({"summary": {}, "columns": [], "rows": []}))
    (report / "m-1.csv").write_text("Operator Type\n")
    result = in_process(pytester, "--paddle-report=report")
    assert result.ret == 0, result.stdout.str()
    assert json.loads((report / MARKER).read_text())["kind"] == "report"
    assert not (report / "m-1.json").exists() and not (report / "index.html").exists()  # an earlier run's
    keep.file(report / "inside-sentinel.txt")  # from now on the user's files in it stay
    assert in_process(pytester, "--paddle-report=report").ret == 0


def test_an_earlier_versions_cache_is_taken_over(pytester, keep):
    cache = keep.around(pytester.path / "cache", inside=False)
    entry = cache / "models" / "tiny_cnn-0123456789ab-default"
    entry.mkdir(parents=True)
    (entry / "manifest.json").write_text("{}")
    (cache / "installation.json").write_text("{}")
    (cache / "executor").mkdir()
    assert in_process(pytester, "--paddle-cache-dir=cache").ret == 0
    assert json.loads((cache / MARKER).read_text())["kind"] == "cache"
    assert (entry / "manifest.json").read_text() == "{}"


def test_the_users_files_in_the_plugins_report_directory_survive_forged_bookkeeping(pytester, keep):
    report = pytester.path / "report"
    assert in_process(pytester, "--paddle-report=report").ret == 0  # made and marked by the plugin
    keep.around(report)
    victim = keep.file(pytester.path / "victim.txt")
    notes = keep.file(report / "notes.csv")
    keep.file(report / "photo.png")
    keep.link(report / "link.json", victim)
    keep.file(report / "summary.json", json.dumps({"cases": [{"files": ["notes.csv", "photo.png", "link.json"]}]}))
    with open(report / MANIFEST, "a") as f:  # names outside, a link, a user's file with another's hash
        for name in ("../victim.txt", str(victim), "link.json", "notes.csv", "photo.png"):
            f.write(json.dumps({"name": name, "sha256": sha256(victim)}) + "\n")
        f.write(json.dumps({"name": "notes.csv", "sha256": "0" * 64}) + "\n")
        f.write("{broken\n")
    assert sha256(notes) != sha256(victim)
    assert in_process(pytester, "--paddle-report=report").ret == 0


WAITER = """
import time
from pathlib import Path

def test_waits():
    Path("started").write_text("1")
    for _ in range(600):
        if Path("go").exists():
            return
        time.sleep(0.1)
"""


def test_a_second_session_on_a_report_directory_in_use_is_refused(pytester, keep):
    """The issue's two sessions 6 s apart: the second, while the first runs, says so and
    writes nothing; after the first has ended it runs."""
    report = pytester.path / "report"
    keep.around(report, inside=False)
    pytester.makepyfile(test_wait=WAITER)
    first = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_wait.py",
                              "--paddle-report=report"], cwd=pytester.path, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(600):
            if (pytester.path / "started").exists() or first.poll() is not None:
                break
            time.sleep(0.1)
        assert (pytester.path / "started").exists(), first.communicate()[0]
        keep.file(report / "inside-sentinel.txt")
        text = refused(in_process(pytester, "test_plain.py", "--paddle-report=report"),
                       f"--paddle-report: another pytest session (pid {first.pid} on ",
                       "is writing its report into", "give this session another directory")
        assert "started " in text
    finally:
        (pytester.path / "go").write_text("1")
        out = first.communicate(timeout=120)[0]
    assert first.returncode == 0, out
    assert in_process(pytester, "test_plain.py", "--paddle-report=report").ret == 0


# -- sessions that run Paddle --------------------------------------------------------------------------


def test_a_users_file_in_place_of_the_summary_is_kept_and_said(pytester, run_pytest, keep):
    report = pytester.path / "report"
    first = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32", "--paddle-report=report")
    assert first.ret == 0, first.stdout.str()
    keep.around(report)
    (report / "summary.json").unlink()
    keep.file(report / "summary.json", '{"the user": "wrote this"}')
    second = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32", "--paddle-report=report")
    text = second.stdout.str()
    assert second.ret == 0, text
    assert f"paddle-infer: the report's index was not written: {report / 'summary.json'} is not a " \
           f"paddle-infer report file" in text
    assert "Traceback" not in text and "INTERNALERROR" not in text


def test_a_users_file_at_a_goldens_name_is_never_rewritten(pytester, run_pytest, keep):
    from pytest_paddle_infer.goldens import file_name

    g = keep.around(pytester.path / "g")
    write_marker(g, "goldens")  # recorded by an earlier session; the user's file came since
    theirs = keep.file(g / file_name("tiny_cnn[1x3x32x32-cpu_fp32]"), "the user's archive, not a golden")
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32", "--paddle-baseline=golden:g",
                        "--paddle-update-goldens")
    text = result.stdout.str()
    assert result.ret == 1, text
    assert f"{theirs} is not a golden or saved run paddle-infer wrote" in text
    assert "Traceback" not in text


def test_a_suites_goldens_to_update_in_a_users_directory_is_the_suites_error(pytester, keep):
    """Found when the suite is read, before any case runs: file and line of the baseline."""
    keep.around(pytester.path / "g")
    pytester.makefile(".yaml", paddle_suite="defaults: {run_modes: [cpu_fp32], baseline: 'golden:g'}\n"
                                            "models:\n  tiny_cnn: {}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--paddle-update-goldens")
    text = result.stdout.str() + "\n" + result.stderr.str()
    assert result.ret not in (0, 1), text
    assert "paddle_suite.yaml:1" in text and "g/inside-sentinel.txt is not a paddle-infer goldens file" in text, text
    assert "Traceback" not in text and "INTERNALERROR" not in text, text


SUITE = """\
defaults:
  run_modes:
    - &fp32 {mode: cpu_fp32, tolerances: {atol: 5e-4}}   # shared by both models
models:
  first: {source: tiny_cnn, shapes: [[1, 3, 32, 32]]}
  second: {source: tiny_cnn, shapes: [[2, 3, 32, 32]]}
"""


def suggest(run_pytest, *args: str):
    result = run_pytest("--paddle-suggest-tolerances=write", "--paddle-suggest-seeds=2", *args)
    return result, result.stdout.str()


def test_writing_a_suite_that_is_a_link_writes_its_target_and_keeps_the_link(pytester, run_pytest, keep):
    shared = pytester.path / "shared" / "team.yaml"
    shared.parent.mkdir()
    shared.write_text(SUITE)
    keep.around(shared.parent, inside=False)
    keep.link(pytester.path / "paddle_team.yaml", shared)
    result, text = suggest(run_pytest, "paddle_team.yaml")
    assert result.ret == 0, text
    assert f"wrote 1 tolerance(s) into {shared} (through the link {pytester.path / 'paddle_team.yaml'}):" in text
    assert "atol: 5e-4}   # shared by both models" not in shared.read_text()
    assert "# shared by both models" in shared.read_text()


def test_a_suite_with_hard_links_is_not_written(pytester, run_pytest, keep):
    suite = keep.file(pytester.path / "paddle_team.yaml", SUITE)
    os.link(suite, pytester.path / "team-copy.yaml")
    keep.files[pytester.path / "team-copy.yaml"] = ("file", SUITE.encode())
    result, text = suggest(run_pytest, "paddle_team.yaml")
    assert result.ret == 0, text
    assert f"not written: {suite} has 2 hard links" in text


def test_an_anchor_that_models_narrowed_away_share_is_not_rewritten(pytester, run_pytest, keep):
    """The issue's --paddle-model narrowing: the anchor &fp32 also sets the deselected
    model's tolerance, so it keeps its value and the line says which anchor and why."""
    suite = keep.file(pytester.path / "paddle_team.yaml", SUITE)
    result, text = suggest(run_pytest, "paddle_team.yaml", "--paddle-model=first")
    assert result.ret == 0, text
    assert "1 passed" in text
    assert ("not written: defaults.run_modes[0].tolerances.atol (0.0005 -> " in text
            and "anchor &fp32 also sets the tolerance of second (defaults.run_modes[0])" in text), text
    assert suite.read_text() == SUITE


def test_only_cases_that_passed_are_learned_from(pytester, run_pytest, keep):
    """A case that failed (here outside atol 0; a bf16 case that computed no bfloat16 fails
    its evidence the same way) teaches nothing: its tolerance stays as written."""
    text = f"""\
    models:
      tiny_cnn:
        shapes: [[1, 3, 32, 32]]
        run_modes:
          - {{mode: cpu_fp32, tolerances: {{atol: 5e-4}}}}
          - {{mode: {DIFFERING_MODE}, tolerances: {{atol: 0, rtol: 0}}}}
    """
    suite = write_suite(pytester, text, "paddle_team.yaml")
    keep.around(pytester.path / "shared-dir", inside=False)
    result, out = suggest(run_pytest, "paddle_team.yaml")
    assert result.ret == 1, out
    assert f"not learned from (only cases that passed are): tiny_cnn[1x3x32x32-{DIFFERING_MODE}] (failed)" in out
    written = suite.read_text()
    assert f"{{mode: {DIFFERING_MODE}, tolerances: {{atol: 0, rtol: 0}}}}" in written
    assert "{mode: cpu_fp32, tolerances: {atol: 5e-4}}" not in written  # the passing case's was written
