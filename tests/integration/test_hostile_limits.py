"""Hostile inputs at the session's limits: a check asked for that would not run, children that
hang or are killed, full and unwritable disks, YAML that would expand without end.

Each test checks that no process it started outlives its session: every process whose parent
chain leads to this test, and every process that carries the test's tag in its environment
(children re-parented to init when their parent died carry it too), must be gone once the
session ends. Each keeps sentinel files beside the directories it points the plugin at and
checks them unchanged. Sessions that run no Paddle case run in process
(``pytester.runpytest``); those that hang, are killed or run cases run as ``python -m pytest``.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict

import pytest

from helpers import cmdline, exported_tiny_cnn, leftovers, tagged_with
from pytest_paddle_infer.ownership import write_marker

USAGE = 4

# -- sentinels ---------------------------------------------------------------------------


class Sentinels:
    """Files of the user's beside (and, where it exists, inside) each directory the plugin
    is pointed at; ``check`` fails when one changed or went."""

    def __init__(self) -> None:
        self.files: Dict[Path, bytes] = {}

    def beside(self, *directories: Path, inside: bool = True) -> None:
        """``inside=False`` for a directory the plugin writes into and must find empty (or
        its own): a file of the user's there is refused before anything runs."""
        for directory in directories:
            for place in (directory.parent, directory) if inside else (directory.parent,):
                if not place.is_dir():
                    continue
                path = place / f"user-notes-{directory.name or 'root'}.txt"
                try:
                    data = f"the user's own file beside {directory}\n".encode()
                    path.write_bytes(data)
                except OSError:  # /proc, a read-only or full disk: nothing can be planted there
                    continue
                self.files[path] = data

    def check(self) -> None:
        for path, data in self.files.items():
            assert path.is_file() and path.read_bytes() == data, f"{path} was changed or removed"


@pytest.fixture
def sentinels():
    planted = Sentinels()
    yield planted
    planted.check()


# -- file systems (need mount rights: root in a container, else skipped) -----------------


def _mount(target: Path, options: str) -> None:
    target.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip() or proc.returncode}")


@pytest.fixture
def tiny_fs(tmp_path):
    """A 256 KiB tmpfs; ``fill()`` takes its free space (a file of ours inside it)."""
    mounted = []

    class Fs:
        root = tmp_path / "tiny_fs"

        def mount(self, options: str = "size=256k") -> Path:
            _mount(self.root, options)
            mounted.append(self.root)
            return self.root

        def fill(self) -> None:
            fd = os.open(self.root / "filler.bin", os.O_WRONLY | os.O_CREAT)
            try:
                while True:
                    os.write(fd, b"\0" * 4096)
            except OSError:
                pass
            finally:
                os.close(fd)

    yield Fs()
    for root in mounted:
        subprocess.run(["umount", "-l", str(root)], capture_output=True)


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory this user cannot write: a read-only tmpfs when mounting works, else
    ``chmod 555`` (which binds no root)."""
    target = tmp_path / "read_only"
    if os.geteuid() == 0:
        _mount(target, "size=64k,ro")
        yield target
        subprocess.run(["umount", "-l", str(target)], capture_output=True)
    else:
        target.mkdir()
        target.chmod(0o555)
        yield target
        target.chmod(0o755)


# -- sessions ----------------------------------------------------------------------------


def text_of(result) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


def assert_clean(text: str) -> None:
    """No internal traceback: no INTERNALERROR, no frame of the plugin."""
    assert "INTERNALERROR" not in text, text
    assert "Traceback (most recent call last)" not in text, text
    assert "RecursionError" not in text, text


def in_process(pytester, *args: str):
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def subprocess_session(pytester, cache: Path, *args: str, timeout: float = 600):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--paddle-cache-dir={cache}",
                                         *args, timeout=timeout)


def copy_tiny_cnn(cache: Path, to: Path) -> Path:
    source = exported_tiny_cnn(cache)
    to.mkdir(parents=True, exist_ok=True)
    for name in ("inference.json", "inference.pdiparams"):
        shutil.copy(source / name, to / name)
    return to


SUITE = "models:\n  tiny_cnn: {run_modes: [cpu_fp32]}\n"


# -- a check that was asked for runs, or the session fails --------------------------------


def test_model_a_suite_does_not_declare_is_a_usage_error(pytester, paddle_cache, tag, sentinels):
    """The issue's input: a suite and a plain test file; --paddle-model names a model the
    suite lacks. The plain test passing must not make a green run."""
    pytester.makefile(".yaml", paddle_suite=SUITE)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    sentinels.beside(paddle_cache)
    result = in_process(pytester, f"--paddle-cache-dir={paddle_cache}", "--paddle-model=resnet50",
                        "--run-mode=onednn_fp32")
    text = text_of(result)
    assert result.ret == USAGE, text
    assert "--paddle-model resnet50 and --run-mode onednn_fp32 matched none of the 1 cases" in text
    assert "(paddle_suite.yaml)" in text and "or --ignore=paddle_suite.yaml" in text
    assert "1 passed" not in text
    assert_clean(text)


def test_run_mode_a_suite_does_not_declare_is_a_usage_error(pytester, paddle_cache, tag):
    pytester.makefile(".yaml", paddle_suite=SUITE)
    result = in_process(pytester, f"--paddle-cache-dir={paddle_cache}", "--run-mode=onednn_fp32+no_ir_optim")
    text = text_of(result)
    assert result.ret == USAGE, text
    assert "--run-mode onednn_fp32+no_ir_optim matched none of the 1 cases" in text
    assert "run modes cpu_fp32" in text
    assert_clean(text)


def test_two_model_directories_with_one_name_are_a_usage_error(pytester, paddle_cache, tag, sentinels):
    """det/yolov3 and legacy/yolov3: never one of them silently dropped."""
    det = copy_tiny_cnn(paddle_cache, pytester.path / "det" / "yolov3")
    legacy = copy_tiny_cnn(paddle_cache, pytester.path / "legacy" / "yolov3")
    sentinels.beside(det, legacy)
    result = in_process(pytester, f"--paddle-cache-dir={paddle_cache}", "--paddle-model=det/yolov3",
                        "--paddle-model=legacy/yolov3", "--run-mode=cpu_fp32")
    text = text_of(result)
    assert result.ret == USAGE, text
    assert "are both named 'yolov3'" in text, text
    assert str(det / "inference.json") in text and str(legacy / "inference.json") in text
    assert "ln -s" in text
    assert_clean(text)


def test_symlink_loop_as_model_is_named_a_loop(pytester, paddle_cache, tag):
    (pytester.path / "a").symlink_to("b")
    (pytester.path / "b").symlink_to("a")
    result = in_process(pytester, f"--paddle-cache-dir={paddle_cache}", "--paddle-model=a", "--run-mode=cpu_fp32")
    text = text_of(result)
    assert result.ret == USAGE, text
    assert "model path a is a symlink loop" in text, text
    assert_clean(text)


def test_dangling_symlink_as_model_names_its_target(pytester, paddle_cache, tag):
    (pytester.path / "m").symlink_to("models/gone")
    result = in_process(pytester, f"--paddle-cache-dir={paddle_cache}", "--paddle-model=./m", "--run-mode=cpu_fp32")
    text = text_of(result)
    assert result.ret == USAGE, text
    assert "model path m is a symlink to models/gone, which does not exist" in text, text


@pytest.mark.parametrize("flag, bad", [("--paddle-timeout", "soon"), ("--paddle-timeout", "-5"),
                                       ("--paddle-suggest-margin", "wide"), ("--paddle-suggest-margin", "0.5"),
                                       ("--paddle-suggest-seeds", "0")])
def test_example_values_in_messages_are_valid(pytester, tag, flag, bad):
    """The e.g. value a message shows is one the option takes."""
    import re

    result = in_process(pytester, f"{flag}={bad}")
    text = text_of(result)
    assert result.ret == USAGE, text
    example = re.search(rf"e\.g\. {re.escape(flag)}=(\S+?)\)", text)
    assert example, text
    again = in_process(pytester, f"{flag}={example.group(1)}")
    assert again.ret != USAGE, text_of(again)
    if flag == "--paddle-timeout":  # a deadline under a second could not even start the executor
        assert float(example.group(1)) >= 1, text


def test_ini_example_value_is_valid(pytester, tag):
    import re

    pytester.makeini("[pytest]\npaddle_suggest_margin = 1e-4\n")
    text = text_of(in_process(pytester))
    example = re.search(r"e\.g\. paddle_suggest_margin = (\S+?)\)", text)
    assert example, text
    pytester.makeini(f"[pytest]\npaddle_suggest_margin = {example.group(1)}\n")
    assert "paddle_suggest_margin" not in text_of(in_process(pytester))


# -- permissions and disks -----------------------------------------------------------------


@pytest.mark.parametrize("cache", ["/proc", "/proc/paddle-infer-cache", "/sys/kernel/paddle-infer"])
def test_kernel_file_system_cache_dir_is_a_usage_error(pytester, tag, cache):
    result = in_process(pytester, f"--paddle-cache-dir={cache}", "--paddle-model=tiny_cnn", "--run-mode=cpu_fp32")
    text = text_of(result)
    assert result.ret == USAGE, text
    assert cache in text and ("cannot be written" in text or "cannot be made" in text), text
    assert_clean(text)


def test_read_only_cache_dir_is_a_usage_error(pytester, tag, read_only_dir, sentinels):
    sentinels.beside(read_only_dir)
    result = in_process(pytester, f"--paddle-cache-dir={read_only_dir}", "--paddle-model=tiny_cnn",
                        "--run-mode=cpu_fp32")
    text = text_of(result)
    assert result.ret == USAGE, text
    assert f"--paddle-cache-dir {read_only_dir} cannot be written" in text, text
    assert_clean(text)


def test_cache_dir_on_a_full_disk_is_a_usage_error(pytester, tag, tiny_fs, sentinels):
    root = tiny_fs.mount()
    sentinels.beside(root / "cache")
    tiny_fs.fill()
    result = in_process(pytester, f"--paddle-cache-dir={root}", "--paddle-model=tiny_cnn", "--run-mode=cpu_fp32")
    text = text_of(result)
    assert result.ret == USAGE, text
    assert "cannot be written: no space left on the device" in text, text
    assert_clean(text)


def test_read_only_cache_dir_found_by_a_suite_is_its_collection_error(pytester, tag, read_only_dir):
    """No --paddle-model: the cache dir is first needed when a suite is collected."""
    pytester.makefile(".yaml", paddle_suite=SUITE)
    result = in_process(pytester, f"--paddle-cache-dir={read_only_dir}")
    text = text_of(result)
    assert result.ret != 0, text
    assert f"{read_only_dir} cannot be written" in text, text
    assert "INTERNALERROR" not in text and "Traceback" not in text, text


EXECUTORS = pytest.mark.parametrize("executor", ["child", "inline"])


@EXECUTORS
def test_full_disk_under_goldens_errors_the_case_in_a_few_lines(pytester, paddle_cache, tag, tiny_fs, sentinels,
                                                                executor):
    root = tiny_fs.mount()
    goldens = root / "goldens"
    goldens.mkdir()
    write_marker(goldens, "goldens")  # made by an earlier session: the disk fills up since
    sentinels.beside(goldens, inside=False)
    sentinels.beside(paddle_cache)
    tiny_fs.fill()
    pytester.makefile(".yaml", paddle_suite=SUITE)
    result = subprocess_session(pytester, paddle_cache, f"--paddle-save-goldens={goldens}",
                                f"--paddle-executor={executor}")
    text = text_of(result)
    assert result.ret == 1, text
    section = text.split("ERROR at setup of", 1)[-1].split("paddle-infer summary", 1)[0]
    assert "no space left on the device" in section, text
    assert len(section.strip().splitlines()) < 8, section
    assert_clean(text)


@EXECUTORS
def test_full_disk_under_the_report_prints_the_summary_and_one_line(pytester, paddle_cache, tag, tiny_fs,
                                                                    sentinels, executor):
    root = tiny_fs.mount()
    report = root / "report"
    report.mkdir()
    write_marker(report, "report")  # made by an earlier session: the disk fills up since
    sentinels.beside(report, inside=False)
    sentinels.beside(paddle_cache)
    tiny_fs.fill()
    pytester.makefile(".yaml", paddle_suite=SUITE)
    result = subprocess_session(pytester, paddle_cache, f"--paddle-report={report}",
                                f"--paddle-executor={executor}")
    text = text_of(result)
    assert result.ret == 1, text
    assert "paddle-infer summary" in text, text
    assert "writing the case's report files under --paddle-report" in text, text
    lines = [l for l in text.splitlines() if l.startswith("paddle-infer: writing the report")]
    assert len(lines) == 1 and "no space left on the device" in lines[0], text
    assert_clean(text)


# -- huge and deep suites -----------------------------------------------------------------


def _collect_suite(pytester, text: str):
    pytester.makefile(".yaml", paddle_suite=text)
    started = time.monotonic()
    result = in_process(pytester, "--collect-only")
    return text_of(result), time.monotonic() - started, result.ret


def test_yaml_alias_bomb_errors_within_seconds(pytester, tag):
    """The issue's input: 10^8 leaves from a few lines of anchors, in builder kwargs."""
    lines = ["models:", "  m:", "    source: tiny_cnn_builder:build", "    inputs: {x: {shape: [-1, 4]}}",
             "    kwargs:", "      l0: &l0 [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]"]
    for i in range(1, 8):
        lines.append(f"      l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]")
    text, seconds, ret = _collect_suite(pytester, "\n".join(lines) + "\n")
    assert ret != 0 and seconds < 60, text
    assert "paddle_suite.yaml:10: YAML aliases expand this value to more than 100,000 values" in text, text
    assert_clean(text)


def test_deeply_nested_list_is_an_error_not_a_recursion_error(pytester, tag):
    text, _, ret = _collect_suite(pytester, "models: " + "[" * 20000 + "]" * 20000 + "\n")
    assert ret != 0, text
    assert "paddle_suite.yaml:1: lists and mappings nested more than 64 deep" in text, text
    assert_clean(text)


def test_nesting_multiplied_through_aliases_is_bounded(pytester, tag):
    lines = ["a0: &a0 [[[[[[[[1]]]]]]]]"]
    for i in range(1, 12):
        lines.append(f"a{i}: &a{i} [[[[[[[[*a{i - 1}]]]]]]]]")
    text, _, ret = _collect_suite(pytester, "\n".join(lines) + "\nmodels: {}\n")
    assert ret != 0, text
    assert "YAML aliases nest this value more than 64 deep" in text, text
    assert_clean(text)


def test_anchor_that_contains_itself_is_an_error(pytester, tag):
    text, _, ret = _collect_suite(pytester, "loop: &loop\n  - 1\n  - *loop\nmodels: {}\n")
    assert ret != 0, text
    assert "paddle_suite.yaml:1: a YAML anchor that contains an alias of itself" in text, text
    assert_clean(text)


def test_huge_flat_list_is_bounded(pytester, tag):
    text, _, ret = _collect_suite(pytester, "models:\n  m:\n    source: tiny_cnn\n    tags: ["
                                  + ", ".join(["0"] * 100_500) + "]\n")
    assert ret != 0, text
    assert "more than 100,000 values" in text, text
    assert_clean(text)


# -- hangs and signals ---------------------------------------------------------------------

BUILDERS = '''
import os
import signal
import subprocess
import sys
import time

import paddle
from paddle import nn


def hangs():
    """A constructor that never returns, with a process of its own that would outlive it."""
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    time.sleep(3600)


class SlowInDygraph(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        if paddle.in_dynamic_mode():  # the dygraph baseline's child, not the export
            time.sleep(3600)
        return self.fc(x)


def slow_in_dygraph():
    return SlowInDygraph()


def sigkilled():
    os.kill(os.getpid(), signal.SIGKILL)
'''


def test_builder_that_hangs_obeys_the_timeout(pytester, paddle_cache, tag, sentinels):
    """The issue's input: the collection-time probe of a builder that hangs in its
    constructor; it (and what it started) is killed at --paddle-timeout."""
    pytester.makepyfile(hostile_builders=BUILDERS)
    pytester.makefile(".yaml", paddle_suite="models:\n  hangs: {source: 'hostile_builders:hangs', "
                                            "inputs: {x: {shape: [-1, 4]}}, run_modes: [cpu_fp32]}\n")
    sentinels.beside(paddle_cache)
    started = time.monotonic()
    result = subprocess_session(pytester, paddle_cache, "--paddle-timeout=20", timeout=300)
    text = text_of(result)
    assert time.monotonic() - started < 200, text
    assert result.ret != 0, text
    assert "timed out after 20 s (--paddle-timeout) and was killed" in text, text
    assert "paddle_suite.yaml:2" in text, text
    assert_clean(text)


def test_hung_dygraph_baseline_is_a_timeout_and_dies(pytester, paddle_cache, tag, sentinels,
                                                     lend_fork_server):
    """The issue's input: a dygraph baseline's child that hangs; the case is a timeout, and
    the child does not outlive the session. Its children fork from the test process's fork
    server (conftest.py): the hang, not paddle's imports, takes the session's time."""
    pytester.makepyfile(hostile_builders=BUILDERS)
    pytester.makefile(".yaml", paddle_suite="defaults: {baseline: dygraph, run_modes: [cpu_fp32]}\n"
                                            "models:\n  slow: {source: 'hostile_builders:slow_in_dygraph', "
                                            "inputs: {x: {shape: [-1, 4]}}}\n")
    sentinels.beside(paddle_cache)
    result = subprocess_session(pytester, paddle_cache, "--paddle-timeout=20", timeout=400)
    text = text_of(result)
    assert result.ret == 1, text
    assert "timed out after 20 s (--paddle-timeout)" in text, text
    assert any(line.split()[3:4] == ["timeout"] for line in text.splitlines() if line.startswith("slow ")), text
    assert_clean(text)


def signal_once_a_baseline_hangs(pytester, tag: str, sig: int, *args: str) -> None:
    """A pytest session on a suite whose dygraph baseline hangs, sent ``sig`` once that
    baseline's child runs."""
    pytester.makepyfile(hostile_builders=BUILDERS)
    pytester.makefile(".yaml", paddle_suite="defaults: {baseline: dygraph, run_modes: [cpu_fp32]}\n"
                                            "models:\n  slow: {source: 'hostile_builders:slow_in_dygraph', "
                                            "inputs: {x: {shape: [-1, 4]}}}\n")
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                            cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not tagged_with(tag, "baseline_child") and time.monotonic() < deadline:
            assert proc.poll() is None, "the session ended before its dygraph child started"
            time.sleep(0.5)
        assert tagged_with(tag, "baseline_child"), "no dygraph child started"
    finally:
        proc.send_signal(sig)
        proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killed_pytest_takes_its_children(pytester, paddle_cache, tag, sig):
    """pytest killed while the executor waits on a dygraph child that hangs: neither the
    executor nor the child is left running."""
    signal_once_a_baseline_hangs(pytester, tag, sig, f"--paddle-cache-dir={paddle_cache}")
    deadline = time.monotonic() + 20
    while leftovers(tag) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not leftovers(tag), [cmdline(p) for p in leftovers(tag)]


def test_start_past_the_timeout_is_a_timeout_not_a_crash(pytester, tmp_path, tag, sentinels):
    """--paddle-timeout=1 on a cache that does not know the installation yet: the header's
    question to the executor times out; the session says so and ends (no INTERNALERROR)."""
    cache = tmp_path / "fresh-cache"
    sentinels.beside(cache)
    result = subprocess_session(pytester, cache, "--paddle-model=tiny_cnn", "--run-mode=cpu_fp32",
                                "--paddle-timeout=1", timeout=120)
    text = text_of(result)
    assert result.ret == USAGE, text
    assert "timed out after 1 s (--paddle-timeout) and was killed" in text, text
    assert "SIGKILL" not in text, text
    assert_clean(text)


def test_case_past_the_timeout_has_status_timeout(pytester, paddle_cache, tag):
    """The installation known (a first session asked): the case itself times out."""
    subprocess_session(pytester, paddle_cache, "--paddle-model=tiny_cnn", "--run-mode=cpu_fp32",
                       "--collect-only")
    result = subprocess_session(pytester, paddle_cache, "--paddle-model=tiny_cnn", "--run-mode=cpu_fp32",
                                "--paddle-timeout=1", timeout=120)
    text = text_of(result)
    assert result.ret == 1, text
    assert "timed out after 1 s (--paddle-timeout)" in text and "SIGKILL" not in text, text
    assert any(line.split()[3:4] == ["timeout"] for line in text.splitlines()
               if line.startswith("tiny_cnn ")), text


def test_sigkill_nobody_here_sent_names_memory(pytester, paddle_cache, tag):
    """An export child killed by SIGKILL from outside (as the out-of-memory killer does)."""
    pytester.makepyfile(hostile_builders=BUILDERS)
    pytester.makefile(".yaml", paddle_suite="models:\n  killed: {source: 'hostile_builders:sigkilled', "
                                            "inputs: {x: {shape: [-1, 4]}}, run_modes: [cpu_fp32]}\n")
    result = subprocess_session(pytester, paddle_cache, timeout=300)
    text = text_of(result)
    assert result.ret == 1, text
    assert "was killed by SIGKILL" in text and "out-of-memory killer" in text, text
    assert_clean(text)


def test_killed_xdist_controller_leaves_nothing_past_the_next_session(pytester, tmp_path, tag, sentinels,
                                                                    monkeypatch):
    """The issue's input: an xdist controller killed by SIGKILL mid-run leaves its directories
    in $TMPDIR and the cache's shared baselines; the next session sweeps them, and neither
    session leaves multiprocessing's ``pymp-*`` dirs. Look-alike dirs of the user's stay."""
    temp, cache = tmp_path / "tmp", tmp_path / "cache"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # for the sessions it starts, and restored after
    for name in ("paddle-infer-xdist-users", "pymp-users"):  # no lock of the plugin's: not swept
        (temp / name).mkdir()
    sentinels.beside(temp / "paddle-infer-xdist-users", temp / "pymp-users", cache)
    signal_once_a_baseline_hangs(pytester, tag, signal.SIGKILL, "-n", "2", f"--paddle-cache-dir={cache}")
    deadline = time.monotonic() + 30
    while leftovers(tag) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = sorted(p.name for p in temp.iterdir() if p.name.startswith("paddle-infer-xdist-"))
    assert len(left) == 2, left  # the killed session's, and the user's

    (pytester.path / "paddle_suite.yaml").write_text(
        "models:\n  tiny: {source: 'hostile_builders:slow_in_dygraph', inputs: {x: {shape: [-1, 4]}}, "
        "run_modes: [cpu_fp32]}\n")
    result = subprocess_session(pytester, cache, "-n", "2", timeout=400)
    assert result.ret == 0, text_of(result)
    assert sorted(p.name for p in temp.iterdir() if p.is_dir()) == ["paddle-infer-xdist-users", "pymp-users"]
    assert not any((cache / "shared-baselines").glob("*")), list((cache / "shared-baselines").iterdir())
