"""A catalogue of hostile option inputs: options, ini values, toggles, shapes and batches,
paths that must be directories. One row per input, each one pytest session: the exit code, a
message that names the problem, no internal traceback, and, where the session goes on, the
cases that still ran. Most rows are usage errors that stop pytest before Paddle runs; a few
rows run again under ``-n 2`` (usage errors found by xdist workers must reach the user too)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Tuple

import pytest

from helpers import summary_rows

pytestmark = [pytest.mark.sessions_in_process,  # run_pytest: sessions in this process (conftest.py)
              pytest.mark.usefixtures("tag")]  # no process a test started outlives it

USAGE, COLLECTION, OK, CASES_FAILED = 4, 2, 0, 1


@dataclass(frozen=True)
class Row:
    id: str
    args: Tuple[str, ...] = ()
    ini: str = ""  # lines under [pytest]
    suite: str = ""  # a suite file paddle_hostile.yaml
    exit: int = USAGE
    says: Tuple[str, ...] = ()  # each is in the output
    never: Tuple[str, ...] = ()  # none is
    ran: Dict[Tuple[str, str, str], Tuple[str, str]] = field(default_factory=dict)
    # (model, shape, mode) -> (status, mismatched) in the paddle-infer summary; "" skips a column


TINY = ("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32")
TINY_SUITE = """
models:
  tiny_cnn:
    {key}
    run_modes: [{modes}]
"""


def suite(key: str = "", modes: str = "cpu_fp32") -> str:
    return TINY_SUITE.format(key=key, modes=modes)


ROWS = [
    # -- resources: absurd thread counts are refused before anything runs -------------------
    Row("threads_beyond_machine", TINY + ("--paddle-threads=100000",),
        says=("--paddle-threads: '100000': more threads than this machine can schedule: at most",)),
    Row("threads_zero", TINY + ("--paddle-threads=0",),
        says=("--paddle-threads: '0': a predictor needs at least one thread",)),
    Row("threads_not_a_number", TINY + ("--paddle-threads=four",),
        says=("--paddle-threads: 'four' is not a whole number (e.g. --paddle-threads=4)",)),
    Row("toggle_threads_beyond_machine", ("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32+threads=100000"),
        says=("threads 100000: more threads than this machine can schedule: at most",)),
    Row("toggle_threads_zero", ("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32+threads=0"),
        says=("threads 0: a predictor needs at least one thread",), never=("unknown toggle",)),
    Row("toggle_threads_not_a_number", ("--paddle-model=tiny_cnn", "--run-mode=onednn_fp32+threads=x"),
        says=("threads='x': give a whole number, e.g. +threads=1",), never=("unknown toggle",)),
    Row("toggle_calib_batches_zero", ("--paddle-model=tiny_cnn", "--run-mode=trt_int8+calib_batches=0"),
        says=("calib_batches 0: calibration needs at least one batch",), never=("unknown toggle",)),
    Row("toggle_unknown", ("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32+turbo"),
        says=("--run-mode: unknown toggle 'turbo' in 'cpu_fp32+turbo'; toggles: +ir_optim",)),
    Row("run_mode_unknown", ("--paddle-model=tiny_cnn", "--run-mode=bogus"),
        says=("unknown run mode 'bogus'; valid run modes: cpu_fp32",)),
    Row("run_mode_empty_list", ("--paddle-model=tiny_cnn", "--run-mode=,"),
        says=("--run-mode: no run mode given",)),
    # -- numbers and choices ----------------------------------------------------------------
    Row("atol_nan", TINY + ("--paddle-atol=nan",), says=("--paddle-atol: 'nan' must be a finite number >= 0",)),
    Row("rtol_negative", TINY + ("--paddle-rtol=-1",), says=("--paddle-rtol: '-1' must be a finite number >= 0",)),
    Row("seed_negative", TINY + ("--paddle-seed=-3",), says=("--paddle-seed: '-3' must be a finite number >= 0",)),
    Row("timeout_zero", TINY + ("--paddle-timeout=0",),
        says=("--paddle-timeout: '0' must be a number of seconds above 0 (e.g. --paddle-timeout=600)",)),
    Row("executor_unknown", TINY + ("--paddle-executor=thread",),
        says=("--paddle-executor: 'thread' is not one of child, inline",)),
    Row("program_unknown", TINY + ("--paddle-program=pir",),
        says=("--paddle-program: 'pir' is not one of default, legacy",)),
    Row("baseline_unknown", TINY + ("--paddle-baseline=nope",),
        says=("--paddle-baseline: unknown baseline 'nope'; valid baselines: auto",)),
    Row("baseline_golden_missing", TINY + ("--paddle-baseline=golden:no_goldens",),
        says=("no_goldens: no such directory; record goldens first with --paddle-save-goldens=DIR",)),
    Row("baseline_golden_is_a_file", TINY + ("--paddle-baseline=golden:{file}",),
        says=("a_file.txt: that is a file, but goldens are a directory of them",)),
    Row("device_malformed", TINY + ("--paddle-device=gpu:x",),
        says=("--paddle-device: 'gpu:x' is not a device; valid forms: auto",)),
    Row("suite_file_missing", TINY + ("--paddle-suite=missing.yaml",),
        says=("--paddle-suite: no such file 'missing.yaml'",)),
    Row("model_unknown", ("--paddle-model=no_such_model",),
        says=("--paddle-model: unknown model 'no_such_model': not a zoo entry",)),
    Row("save_and_update_goldens", TINY + ("--paddle-save-goldens=g", "--paddle-update-goldens"),
        says=("--paddle-save-goldens and --paddle-update-goldens exclude each other",)),
    # -- paths that must be directories -----------------------------------------------------
    Row("report_is_a_file", TINY + ("--paddle-report={file}",),
        says=("--paddle-report: 'a_file.txt' is a file (", "), but it must be a directory")),
    Row("cache_dir_is_a_file", TINY + ("--paddle-cache-dir={file}",),
        says=("--paddle-cache-dir: 'a_file.txt' is a file (", "must be a directory")),
    Row("save_goldens_is_a_file", TINY + ("--paddle-save-goldens={file}",),
        says=("--paddle-save-goldens: 'a_file.txt' is a file (", "must be a directory")),
    Row("report_below_a_file", TINY + ("--paddle-report={file}/reports",),
        says=("--paddle-report: 'a_file.txt/reports' cannot be made a directory:", "a_file.txt is a file")),
    # -- ini values are blamed on their ini key ---------------------------------------------
    Row("ini_atol_garbage", TINY, ini="paddle_atol = abc",
        says=("ini key paddle_atol: 'abc' is not a number (e.g. paddle_atol = 1e-4)",), never=("--paddle-atol",)),
    Row("ini_threads_beyond_machine", TINY, ini="paddle_threads = 100000",
        says=("ini key paddle_threads: '100000': more threads than this machine can schedule",)),
    Row("ini_report_is_a_file", TINY, ini="paddle_report = {file}",
        says=("ini key paddle_report: ", "is a file", "must be a directory"), never=("--paddle-report",)),
    Row("ini_run_mode_toggle_zero", ("--paddle-model=tiny_cnn",), ini="run_mode = cpu_fp32+threads=0",
        says=("ini key run_mode: 'cpu_fp32+threads=0': threads 0: a predictor needs at least one thread",)),
    Row("ini_shape_garbage", ("--paddle-model=tiny_cnn",), ini="paddle_shape = x:4x3x32x32",
        says=("ini key paddle_shape: 'x:4x3x32x32' is not NAME=DIMS", "e.g. paddle_shape = x=4x3x224x224")),
    Row("ini_batch_a_word", ("--paddle-model=tiny_cnn",), ini="paddle_batch = four",
        says=("ini key paddle_batch: 'four' is not a whole number (e.g. paddle_batch = 4)",)),
    # -- shapes and batches -----------------------------------------------------------------
    Row("batch_sets_first_dim", TINY + ("--paddle-batch=4",), exit=OK, ran={("tiny_cnn", "4x3x32x32", "cpu_fp32"): ("passed", "0/40")}),
    Row("shape_sets_input", TINY + ("--paddle-shape=x=2x3x32x32",), exit=OK,
        ran={("tiny_cnn", "2x3x32x32", "cpu_fp32"): ("passed", "0/20")}),
    Row("shape_not_name_equals_dims", TINY + ("--paddle-shape=4x3x32x32",),
        says=("--paddle-shape: '4x3x32x32' is not NAME=DIMS", "e.g. --paddle-shape=x=4x3x224x224")),
    Row("shape_zero_dim", TINY + ("--paddle-shape=x=2x0x32x32",),
        says=("--paddle-shape: 'x=2x0x32x32': every dim must be 1 or more",)),
    Row("shape_unknown_input", TINY + ("--paddle-shape=image=1x3x32x32",),
        says=("no model of this session has an input named 'image'; tiny_cnn takes x [-1, 3, 32, 32]",)),
    Row("shape_static_dim", TINY + ("--paddle-shape=x=1x3x64x64",),
        says=("model tiny_cnn: input 'x': dim 2 is 64, but the model fixes it to 32",)),
    Row("shape_wrong_rank", TINY + ("--paddle-shape=x=1x3x32",),
        says=("input 'x': shape [1, 3, 32] has rank 3, but the model declares rank 4",)),
    Row("shape_given_twice", TINY + ("--paddle-shape=x=1x3x32x32", "--paddle-shape=x=2x3x32x32"),
        says=("input 'x' is given two shapes (1x3x32x32 and 2x3x32x32); give one",)),
    Row("shape_and_batch_disagree", TINY + ("--paddle-shape=x=2x3x32x32", "--paddle-batch=4"),
        says=("gives batch 2, but --paddle-batch is 4; give one batch",)),
    Row("batch_zero", TINY + ("--paddle-batch=0",), says=("--paddle-batch: '0' must be a finite number >= 1",)),
    Row("dynamic_dims_need_shape", ("--paddle-model={dynamic}", "--paddle-model=tiny_cnn", "--run-mode=cpu_fp32"),
        exit=CASES_FAILED, says=("--paddle-shape x=1x3x224x224 on the command line",),
        ran={("tiny_cnn_dynamic_hw", "1x3x?x?", "cpu_fp32"): ("error", ""),
             ("tiny_cnn", "1x3x32x32", "cpu_fp32"): ("passed", "0/10")}),
    Row("dynamic_dims_shaped", ("--paddle-model={dynamic}", "--run-mode=cpu_fp32", "--paddle-shape=x=3x3x40x48"),
        exit=OK, ran={("tiny_cnn_dynamic_hw", "3x3x40x48", "cpu_fp32"): ("passed", "0/30")}),
    Row("batch_for_dynamic_dims", ("--paddle-model={dynamic}", "--run-mode=cpu_fp32", "--paddle-batch=2"),
        says=("--paddle-batch=2: input 'x' of model tiny_cnn_dynamic_hw has dynamic dims besides the batch",
              "--paddle-shape x=2x3x224x224")),
    Row("batch_with_suite", ("--paddle-batch=2",), suite=suite(),
        says=("--paddle-shape and --paddle-batch give the shapes of the cases --paddle-model adds",)),
    # -- suites: what the option grammar shares with them -----------------------------------
    Row("suite_shape_as_on_command_line", suite=suite('shapes: "1x3x32x32"'), exit=COLLECTION,
        says=("shapes must be a list of shape sets", "fix:      write shapes: [{x: [1, 3, 32, 32]}]")),
    Row("suite_shape_as_the_fix_says", suite=suite("shapes: [{x: [1, 3, 32, 32]}]"), exit=OK,
        ran={("tiny_cnn", "1x3x32x32", "cpu_fp32"): ("passed", "0/10")}),
    Row("suite_threads_beyond_machine", suite=suite(modes="{mode: cpu_fp32, threads: 100000}"),
        exit=COLLECTION, says=("threads is out of range: more threads than this machine can schedule",)),
    Row("suite_toggle_threads_zero", suite=suite(modes="cpu_fp32+threads=0"), exit=COLLECTION,
        says=("threads 0: a predictor needs at least one thread",), never=("unknown toggle",)),
    # -- what a newcomer reads --------------------------------------------------------------
    Row("help_shows_what_options_take", ("--help",), exit=OK,
        says=("--paddle-model=NAME|PATH", "--run-mode=MODE[+TOGGLE...][,MODE...]", "--paddle-threads=N",
              "--paddle-timeout=SECONDS", "--paddle-report=DIR", "--paddle-shape=NAME=DIMS",
              "--paddle-batch=N", "cpu_fp32: CPU, native kernels, fp32", "+threads=N: CPU math library threads"),
        never=("=VALUE",)),
    Row("suite_session_header", suite=suite(), exit=OK,
        says=("paddle-infer: paddlepaddle ", "paddle-infer: baseline auto, ", "paddle-infer: program default"),
        ran={("tiny_cnn", "1x3x32x32", "cpu_fp32"): ("passed", "0/10")}),
    Row("model_session_counts_its_cases", ("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32,onednn_fp32"),
        exit=OK, says=("collected 2 items", "paddle-infer: 2 of the items collected are cases from --paddle-model"),
        never=("collected 0 items",)),
]
XDIST_ROWS = ("threads_beyond_machine", "shape_unknown_input", "batch_sets_first_dim", "dynamic_dims_need_shape")


@pytest.fixture(scope="session")
def dynamic_model(paddle_cache) -> Path:
    """tiny_cnn exported with dynamic height and width ([-1, 3, -1, -1]), once per cache."""
    from pytest_paddle_infer.models.cache import cached_build, run_child

    entry = Path(paddle_cache) / "suite-tests" / "tiny_cnn_dynamic_hw"
    entry.parent.mkdir(parents=True, exist_ok=True)

    def build(tmp: Path) -> dict:
        spec = [{"name": "x", "shape": [-1, 3, -1, -1], "dtype": "float32"}]
        run_child(["export", "pytest_paddle_infer.models.zoo:build_tiny_cnn", "{}", json.dumps(spec),
                   str(tmp / "inference")], False, "exporting tiny_cnn with dynamic height and width")
        return {}

    cached_build(entry, build)
    return entry


def run_row(row: Row, pytester, run_pytest, request, extra=()):
    a_file = pytester.path / "a_file.txt"
    a_file.write_text("not a directory\n")
    values = {"file": a_file.name}
    if any("{dynamic}" in a for a in row.args):
        values["dynamic"] = str(request.getfixturevalue("dynamic_model"))
    if row.ini:
        pytester.makeini("[pytest]\n" + row.ini.format(**values) + "\n")
    if row.suite:
        (pytester.path / "paddle_hostile.yaml").write_text(row.suite.lstrip())
    result = run_pytest(*(a.format(**values) for a in row.args), *extra)
    text = result.stdout.str() + "\n" + result.stderr.str()
    assert result.ret == row.exit, text
    for part in row.says:
        assert part in text, f"{part!r} not in:\n{text}"
    # pytest's own --help mentions "Traceback print mode"; a traceback itself says more
    internal = ("Traceback (most recent call last)",) if "--help" in row.args else ("Traceback",)
    for part in row.never + internal + ("INTERNALERROR",):
        assert part not in text, f"{part!r} in:\n{text}"
    if row.ran:
        rows = summary_rows(result)
        for key, (status, mismatched) in row.ran.items():
            assert key in rows, f"{key} not in the summary: {sorted(rows)}"
            assert rows[key][0] == status, (key, rows[key])
            assert not mismatched or rows[key][3] == mismatched, (key, rows[key])
    assert a_file.read_text() == "not a directory\n"  # a file given as a directory is left alone


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_hostile_option(row, pytester, run_pytest, request):
    run_row(row, pytester, run_pytest, request)


@pytest.mark.parametrize("row", [r for r in ROWS if r.id in XDIST_ROWS],
                         ids=[r.id for r in ROWS if r.id in XDIST_ROWS])
def test_hostile_option_under_xdist(row, pytester, run_pytest, request):
    run_row(row, pytester, run_pytest, request, extra=("-n", "2"))


def test_row_ids_are_unique():
    assert len({r.id for r in ROWS}) == len(ROWS)
