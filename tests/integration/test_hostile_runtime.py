"""A catalogue of hostile runtime inputs: model files, suite contents, model code that
misbehaves, Paddle errors and crashes, absurd shapes, damaged caches and goldens, a report
directory whose summary names files outside it (tests/integration/test_hostile_files.py has
the rest of the files the plugin must leave alone).

One row per input. Rows share a few pytest sessions (a "scenario" each: one session, or a
short sequence of them on one cache), run once per module, so the catalogue costs a handful
of sessions. Every row asserts its session's exit code, a message substring at its case
(or its suite file, or the session), no internal traceback (no frame of the plugin, no
INTERNALERROR), and that the scenario's other cases still ran and appear in the summary.
Sessions run the way users run them: ``python -m pytest`` in the scenario's directory.
Only the ``n2`` scenario runs under ``-n 2``."""
from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import pytest

from helpers import read_junit, summary_rows

from pytest_paddle_infer.engine.service import FAULT_ENV
from pytest_paddle_infer.fork_server import SPEC_ENV

pytestmark = pytest.mark.usefixtures("tag")  # no process a test started outlives it (conftest.py)

PLUGIN_DIR = str(Path(__file__).resolve().parents[2] / "pytest_paddle_infer")
OK, CASES_FAILED, USAGE = 0, 1, 4
GOOD = ("tiny_cnn", "1x3x32x32", "cpu_fp32")  # the case every scenario also runs: it must pass


# -- sessions ----------------------------------------------------------------------------


@dataclass
class Session:
    directory: Path
    ret: int
    text: str  # stdout and stderr
    cases: dict  # JUnit: "classname::name" -> CaseReport
    summary: Dict[Tuple[str, str, str], Tuple[str, ...]]  # the paddle-infer summary table

    def case(self, case_id: str):
        """A case's JUnit report; ``case_id`` may be a glob ("m[*-cpu_fp32]": any shape)."""
        found = [c for key, c in self.cases.items()
                 if fnmatch.fnmatchcase(key.rsplit("::", 1)[-1], case_id.replace("[", "[[]"))]
        assert found, f"no case {case_id} in {sorted(self.cases)}\n{self.text}"
        return found[0]

    def collection_error(self, suite_file: str) -> str:
        m = re.search(rf"_ ERROR collecting {re.escape(suite_file)} _+\n(.*?)(?=\n_{{3,}} |\n={{3,}})",
                      self.text, re.S)
        assert m, f"no collection error for {suite_file}\n{self.text}"
        return m.group(1)


def run_session(directory: Path, cache: Path, *args: str, env: Optional[dict] = None) -> Session:
    xml = directory / "junit.xml"
    xml.unlink(missing_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--paddle-cache-dir={cache}",
         f"--junitxml={xml}", *args],
        cwd=directory, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=900)
    text = proc.stdout + "\n" + proc.stderr
    summary = {}
    if "paddle-infer summary" in proc.stdout:
        summary = summary_rows(proc.stdout)
    return Session(directory, proc.returncode, text, read_junit(xml) if xml.exists() else {}, summary)


def tiny_cnn_files(cache: Path) -> Path:
    """An exported tiny_cnn (inference.json + .pdiparams) from the shared test cache."""
    from helpers import exported_tiny_cnn

    return exported_tiny_cnn(cache)


def copy_model(cache: Path, to: Path) -> Path:
    to.mkdir(parents=True, exist_ok=True)
    source = tiny_cnn_files(cache)
    for name in ("inference.json", "inference.pdiparams"):
        shutil.copy(source / name, to / name)
    return to


# -- scenarios: each builds its directory and runs its session(s) -----------------------

BUILDERS = '''
import os
import signal

import paddle
from paddle import nn


class AllInf(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x) * 0 + float("inf")


class BadReshape(nn.Layer):
    def forward(self, x):  # exports with a dynamic batch; 3 elements cannot become [2, -1]
        return paddle.reshape(x, [2, -1])


class ExitsInDygraph(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        if paddle.in_dynamic_mode():  # the dygraph baseline's child, not the export
            os._exit(3)
        return self.fc(x)


def all_inf():
    return AllInf()


def bad_reshape():
    return BadReshape()


def exits_in_dygraph():
    return ExitsInDygraph()


def segfaults():
    os.kill(os.getpid(), signal.SIGSEGV)


def exits():
    os._exit(7)


def raises():
    raise RuntimeError("the config names a backbone that does not exist: ResNet999")
'''

RUNTIME_SUITE = """
defaults:
  run_modes: [cpu_fp32]
models:
  tiny_cnn:
    run_modes: [cpu_fp32, cpu_fp32+memory_optim]
  all_inf: {source: "hostile_builders:all_inf", inputs: {x: {shape: [-1, 4]}}}
  bad_reshape: {source: "hostile_builders:bad_reshape", inputs: {x: {shape: [-1, 3]}}}
  segfaults: {source: "hostile_builders:segfaults", inputs: {x: {shape: [-1, 4]}}}
  exits: {source: "hostile_builders:exits", inputs: {x: {shape: [-1, 4]}}}
  raises: {source: "hostile_builders:raises", inputs: {x: {shape: [-1, 4]}}}
  huge:
    source: pytest_paddle_infer.models.zoo:build_tiny_cnn
    inputs: {x: {shape: [-1, 3, -1, -1]}}
    shapes: [[100000, 3, 2048, 2048]]
  crashes: {source: tiny_cnn}
"""


def runtime(d: Path, cache: Path) -> List[Session]:
    (d / "hostile_builders.py").write_text(BUILDERS)
    (d / "paddle_runtime.yaml").write_text(RUNTIME_SUITE)
    (d / "paddle_dygraph.yaml").write_text(
        "defaults: {baseline: dygraph, run_modes: [cpu_fp32]}\n"
        "models:\n  exits_in_dygraph: {source: \"hostile_builders:exits_in_dygraph\", "
        "inputs: {x: {shape: [-1, 4]}}}\n")
    (d / "paddle_globs.yaml").write_text(
        "defaults: {intermediates: \"no_such_tensor_*\", run_modes: [cpu_fp32]}\n"
        "models:\n  glob_cnn: {source: tiny_cnn}\n")
    return [run_session(d, cache, env={FAULT_ENV: "building the candidate:SIGSEGV:crashes"})]


def n2(d: Path, cache: Path) -> List[Session]:
    (d / "paddle_n2.yaml").write_text("""
models:
  tiny_cnn:
    run_modes: [cpu_fp32, cpu_fp32+memory_optim, onednn_fp32]
  huge:
    source: pytest_paddle_infer.models.zoo:build_tiny_cnn
    inputs: {x: {shape: [-1, 3, -1, -1]}}
    shapes: [[100000, 3, 2048, 2048]]
    run_modes: [cpu_fp32]
""")
    return [run_session(d, cache, "-n", "2", "--paddle-localize",
                        env={FAULT_ENV: "building the candidate:SIGSEGV:onednn_fp32"})]


def model_files(d: Path, cache: Path) -> List[Session]:
    """Damaged model files given on the command line, beside a good model."""
    garbage = copy_model(cache, d / "garbage_program")
    (garbage / "inference.json").write_text("not json {")
    truncated = copy_model(cache, d / "truncated_params")
    params = truncated / "inference.pdiparams"
    params.write_bytes(params.read_bytes()[:100])
    return [run_session(d, cache, "--paddle-model=tiny_cnn", "--paddle-model=garbage_program",
                        "--paddle-model=truncated_params", "--run-mode=cpu_fp32")]


def model_path(setup: Callable[[Path, Path], None], model: str):
    """A model path that cannot be used at all: a usage error before anything runs."""
    def scenario(d: Path, cache: Path) -> List[Session]:
        setup(d, cache)
        return [run_session(d, cache, "--paddle-model=tiny_cnn", f"--paddle-model={model}",
                            "--run-mode=cpu_fp32")]
    return scenario


def _params_missing(d: Path, cache: Path) -> None:
    (copy_model(cache, d / "m") / "inference.pdiparams").unlink()


def _empty_dir(d: Path, cache: Path) -> None:
    (d / "m").mkdir()


def _not_a_program(d: Path, cache: Path) -> None:
    (d / "model.txt").write_text("a text file")


def suites(d: Path, cache: Path) -> List[Session]:
    """Suite files with bad contents beside a good one; --continue-on-collection-errors keeps
    the good one running (without it pytest stops after collection, exit 2)."""
    data = d / "data"
    data.mkdir()
    (data / "garbage.npy").write_bytes(b"garbage bytes, not numpy")
    np.save(data / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.save(data / "wrong_dtype.npy", np.zeros((1, 3, 32, 32), "float64"))
    (data / "truncated.npy").write_bytes((data / "wrong_dtype.npy").read_bytes()[:100])
    np.savez(data / "wrong_name.npz", y=np.zeros((1, 3, 32, 32), "float32"))
    for name, file in (("garbage", "garbage.npy"), ("objects", "objects.npy"),
                       ("wrong_dtype", "wrong_dtype.npy"), ("truncated", "truncated.npy"),
                       ("wrong_name", "wrong_name.npz")):
        (d / f"paddle_in_{name}.yaml").write_text(
            f"models:\n  in_{name}:\n    source: tiny_cnn\n    inputs: {{x: {{file: data/{file}}}}}\n"
            f"    run_modes: [cpu_fp32]\n")
    (d / "paddle_no_builder.yaml").write_text(
        "models:\n  nobuilder:\n    source: no_such_module:build\n    inputs: {x: {shape: [-1, 4]}}\n")
    (d / "paddle_broken_yaml.yaml").write_text("models:\n  tiny_cnn: {run_modes: [cpu_fp32]\n")
    (copy_model(cache, d / "garbage_program") / "inference.json").write_text("not json {")
    (d / "paddle_bad_program.yaml").write_text("models:\n  bad: {source: garbage_program, run_modes: [cpu_fp32]}\n")
    (d / "paddle_good.yaml").write_text("models:\n  tiny_cnn: {run_modes: [cpu_fp32]}\n")
    return [run_session(d, cache, "--continue-on-collection-errors")]


GOLDEN_MODES = "cpu_fp32,onednn_fp32,cpu_fp32+no_ir_optim,onednn_fp32+no_ir_optim,cpu_fp32+ir_optim"


SWAPPED = '''
import paddle
from paddle import nn


class Doubles(nn.Layer):
    def forward(self, x):
        return x * 2


class BadReshape(nn.Layer):
    def forward(self, x):  # 3 elements cannot become [2, -1]: fails when the predictor runs
        return paddle.reshape(x, [2, -1])


def doubles():
    return Doubles()


def bad_reshape():
    return BadReshape()
'''


def goldens(d: Path, cache: Path) -> List[Session]:
    """Goldens recorded, then damaged one per case; a batch-2 shape has none at all. The
    model "swapped" is recorded from a working builder and then checked with one whose
    predictor fails when it runs: against a golden (and inputs from a file) only the
    candidate runs, so the Paddle error comes while running the case, not preparing it."""
    (d / "swapped_builders.py").write_text(SWAPPED)
    # inputs from a file: no second input seed, so no plain predictor runs in preparation
    (d / "data").mkdir()
    np.save(d / "data" / "x.npy", np.ones((1, 3), "float32"))
    swapped = ("  swapped: {{source: 'swapped_builders:{}', inputs: {{x: {{shape: [-1, 3], file: data/x.npy}}}}, "
               "run_modes: [cpu_fp32]}}\n")
    (d / "paddle_record.yaml").write_text(
        f"defaults: {{run_modes: [{', '.join(GOLDEN_MODES.split(','))}]}}\n"
        f"models:\n  tiny_cnn: {{}}\n" + swapped.format("doubles"))
    record = run_session(d, cache, "paddle_record.yaml", "--paddle-save-goldens=g")
    assert record.ret == OK, record.text
    (d / "paddle_record.yaml").unlink()
    files = {p.name.split("-")[2]: p for p in (d / "g").glob("tiny_cnn-*.npz")}  # mode part of the name
    files["onednn_fp32"].write_bytes(b"garbage")
    half = files["cpu_fp32+no_ir_optim"].read_bytes()
    files["cpu_fp32+no_ir_optim"].write_bytes(half[:len(half) // 2])
    other = files["cpu_fp32+ir_optim"]
    with np.load(other) as data:
        arrays = dict(data)
    meta = json.loads(str(arrays["__meta__"]))
    meta["inputs"]["digest"] = "deadbeef"  # recorded from other inputs
    arrays["__meta__"] = np.array(json.dumps(meta))
    np.savez(other, **arrays)
    shutil.copy(files["cpu_fp32"], files["onednn_fp32+no_ir_optim"])  # another case's golden
    modes = ", ".join(GOLDEN_MODES.split(","))
    (d / "paddle_goldens.yaml").write_text(
        f"defaults: {{baseline: 'golden:g', run_modes: [{modes}]}}\n"
        f"models:\n  tiny_cnn: {{}}\n  tiny_cnn_b2: {{source: tiny_cnn, shapes: [[2, 3, 32, 32]], "
        f"run_modes: [cpu_fp32]}}\n" + swapped.format("bad_reshape"))
    return [record, run_session(d, cache, "paddle_goldens.yaml")]


def cache_damage(d: Path, cache: Path) -> List[Session]:
    """A private cache, filled, then damaged twice; each damaged entry is rebuilt."""
    own = d / "cache"
    copy_model(cache, d / "disk_model")
    (d / "paddle_cache.yaml").write_text("""
defaults: {run_modes: [cpu_fp32]}
models:
  tiny_cnn: {}
  disk: {source: disk_model}
  built:
    source: pytest_paddle_infer.models.zoo:build_tiny_cnn
    inputs: {x: {shape: [-1, 3, 32, 32]}}
""")
    args = ("paddle_cache.yaml", f"--paddle-cache-dir={own}")
    prime = run_session(d, cache, *args)
    assert prime.ret == OK, prime.text
    models = own / "models"
    zoo_entry = next(p for p in models.glob("tiny_cnn-*-default") if p.is_dir())
    # damage 1: an entry replaced by a file, a stale temporary export, edited records
    shutil.rmtree(zoo_entry)
    zoo_entry.write_text("not a directory")
    stale = models / "tiny_cnn-000000000000-default.tmp-killed"
    stale.mkdir()
    (stale / "inference.pdiparams").write_bytes(b"\0" * 4096)
    for record in (own / "inspect").glob("*.json"):
        sealed = json.loads(record.read_text())
        sealed["data"]["inputs"][0]["shape"] = [1, 3, 99, 99]  # the digest no longer matches
        record.write_text(json.dumps(sealed))
    for record in (own / "signatures").glob("*.json"):
        record.write_text("{garbage")
    first = run_session(d, cache, *args)
    # damage 2: a truncated manifest, a truncated params file, a cache directory replaced by a file
    manifest = next(p for p in models.glob("tiny_cnn-*-default") if p.is_dir()) / "manifest.json"
    manifest.write_text(manifest.read_text()[:40])
    built = next(p for p in models.glob("built-*-default") if p.is_dir()) / "inference.pdiparams"
    built.write_bytes(built.read_bytes()[:200])
    for name in ("inspect", "executor"):
        shutil.rmtree(own / name, ignore_errors=True)
        (own / name).write_text("not a directory")
    second = run_session(d, cache, *args)
    return [prime, first, second]


def report_dir(d: Path, cache: Path) -> List[Session]:
    """A report directory not the plugin's, whose summary.json (planted) lists files outside
    it, a directory, and an absolute path: refused, nothing touched. Then a fresh report with
    openpyxl blocked; --paddle-update-goldens with no golden baseline."""
    report = d / "report"
    (report / "listed_dir").mkdir(parents=True)
    (d / "victim.txt").write_text("keep me")
    (d / "absolute_victim.txt").write_text("keep me too")
    (report / "summary.json").write_text(json.dumps({"cases": [{"files": [
        "../victim.txt", str(d / "absolute_victim.txt"), "listed_dir", "../../victim.txt"]}]}))
    (d / "no_openpyxl.py").write_text(
        "import sys\n\n\nclass Block:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'openpyxl':\n"
        "            raise ImportError('openpyxl is blocked for this test')\n\n\n"
        "sys.meta_path.insert(0, Block())\n")
    tiny = ("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32")
    return [run_session(d, cache, *tiny, "--paddle-report=report"),
            run_session(d, cache, "-p", "no_openpyxl", *tiny, "--paddle-report=fresh", "--paddle-update-goldens")]


SCENARIOS: Dict[str, Callable[[Path, Path], List[Session]]] = {
    "runtime": runtime, "n2": n2, "model_files": model_files, "suites": suites,
    "goldens": goldens, "cache": cache_damage, "report": report_dir,
    "params_missing": model_path(_params_missing, "m"), "empty_dir": model_path(_empty_dir, "m"),
    "not_a_program": model_path(_not_a_program, "model.txt"),
    "missing_path": model_path(lambda d, c: None, "models/nowhere"),
}

# scenario -> the exit code of its (last) session, and whether its good case runs
EXITS = {"runtime": CASES_FAILED, "n2": CASES_FAILED, "model_files": CASES_FAILED,
         "suites": CASES_FAILED, "goldens": CASES_FAILED, "cache": OK, "report": OK,
         "params_missing": USAGE, "empty_dir": USAGE, "not_a_program": USAGE, "missing_path": USAGE}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory, paddle_cache, fork_server_to_lend):
    """Each scenario's sessions, run once per test run: under xdist the first worker that
    needs a scenario runs it (under a lock, in the directory the workers' temporary
    directories share) and the others read its results. The sessions' children fork from the
    test process's fork server (conftest.py), as a crash or hang in one is what is tested."""
    import pickle

    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # pytest-N/, shared by popen-gw0, popen-gw1, ...
    base = base / "hostile-runtime"
    base.mkdir(exist_ok=True)
    done: Dict[str, List[Session]] = {}

    def get(name: str) -> List[Session]:
        if name not in done:
            results = base / f"{name}.pickle"
            with FileLock(str(base / f"{name}.lock")):
                if results.exists():
                    done[name] = pickle.loads(results.read_bytes())
                else:
                    directory = base / name
                    directory.mkdir()
                    with pytest.MonkeyPatch.context() as lent:
                        if fork_server_to_lend:
                            lent.setenv(SPEC_ENV, fork_server_to_lend)
                        done[name] = SCENARIOS[name](directory, paddle_cache)
                    results.write_bytes(pickle.dumps(done[name]))
        return done[name]

    return get


# -- rows --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    id: str
    scenario: str
    case: str = ""  # a case id (its JUnit message), "suite:FILE" (its collection error) or "" (the session)
    status: str = ""  # its status in the paddle-infer summary
    says: Tuple[str, ...] = ()
    never: Tuple[str, ...] = ()
    check: Optional[Callable[[Session], None]] = None  # anything else the row needs seen
    session: int = -1  # which session of the scenario


def shape_of(model: str, shape: str, mode: str = "cpu_fp32"):
    def check(s: Session) -> None:
        assert s.summary[(model, shape, mode)][0] == "passed", s.text
    return check


def errored_in_call(s: Session, case_id: str) -> None:
    """pytest reports it as an ERROR (not FAILED), as when building fails; JUnit marks it."""
    assert re.search(rf"(?m)^ERROR \S*{re.escape(case_id)}", s.text), s.text
    assert not re.search(rf"(?m)^FAILED \S*{re.escape(case_id)}", s.text), s.text
    assert s.case(case_id).properties.get("paddle_error") == "1"


def kept(*names: str):
    def check(s: Session) -> None:
        for name in names:
            assert (s.directory / name).exists(), f"{name} was deleted"
    return check


def gone(path: str):
    def check(s: Session) -> None:
        assert not (s.directory / path).exists(), f"{path} is still there"
    return check


ROWS = [
    # -- model code and Paddle at run time -------------------------------------------------
    Row("builder_segfaults", "runtime", "segfaults[1x4-cpu_fp32]", "error",
        ("exporting model 'segfaults'", "failed: the child process was killed by SIGSEGV"),
        never=("failed:\n\n",)),
    Row("builder_os_exit", "runtime", "exits[1x4-cpu_fp32]", "error",
        ("failed: the child process exited with status 7",)),
    Row("builder_raises", "runtime", "raises[1x4-cpu_fp32]", "error",
        ("hostile_builders.py", "RuntimeError: the config names a backbone that does not exist: ResNet999"),
        never=("exporter.py", "Traceback (most recent call last)")),
    Row("dygraph_forward_exits", "runtime", "exits_in_dygraph[1x4-cpu_fp32]", "error",
        ("as a dygraph nn.Layer failed: the child process exited with status 3",)),
    Row("predictor_run_fails", "runtime", "bad_reshape[1x3-cpu_fp32]", "error",
        ("the baseline (auto): running the predictor failed", "ReshapeOp",
         "recipe: disable_mkldnn(); switch_ir_optim(False)")),
    Row("memory_optim_on_pir", "runtime", "tiny_cnn[1x3x32x32-cpu_fp32+memory_optim]", "error",
        ("memory_optimize_pass", "recipe: disable_mkldnn(); switch_ir_optim(True); enable_memory_optim()",
         "hint: this Paddle does not run enable_memory_optim() on a PIR (.json) program: drop +memory_optim",
         "--paddle-program=legacy"), never=("\x1b[",)),
    Row("outputs_all_inf", "runtime", "all_inf[1x4-cpu_fp32]", "failed",
        ("the baseline has 0 NaN and 3 Inf",), never=("nan(nan)", "nan  ")),
    Row("shape_beyond_memory", "runtime", "huge[100000x3x2048x2048-cpu_fp32]", "error",
        ("the inputs (x 100000x3x2048x2048 float32) take 4.6 TiB", "times over", "available (",
         "nothing was allocated")),
    Row("executor_segfault", "runtime", "crashes[1x3x32x32-cpu_fp32]", "crashed",
        ("the executor process was killed by SIGSEGV while building the candidate", "reproduce: pytest")),
    Row("intermediates_glob_selects_nothing", "runtime", "glob_cnn[1x3x32x32-cpu_fp32]", "error",
        ("intermediates 'no_such_tensor_*' select no tensor of glob_cnn", "the op types hooked: pd_op.conv2d")),
    # -- the same under -n 2, with --paddle-localize -----------------------------------------
    Row("n2_localize_on_an_error", "n2", "tiny_cnn[1x3x32x32-cpu_fp32+memory_optim]", "error",
        ("hint: this Paddle does not run enable_memory_optim()", "--paddle-localize: not run")),
    Row("n2_executor_segfault", "n2", "tiny_cnn[1x3x32x32-onednn_fp32]", "crashed",
        ("killed by SIGSEGV while building the candidate",)),
    Row("n2_shape_beyond_memory", "n2", "huge[100000x3x2048x2048-cpu_fp32]", "error",
        ("take 4.6 TiB", "nothing was allocated")),
    # -- model files -------------------------------------------------------------------------
    Row("program_file_garbage", "model_files", "garbage_program[*-cpu_fp32]", "error",
        ("reading the inputs of", "garbage_program/inference.json failed: the child process exited",
         "parse error")),
    Row("params_file_truncated", "model_files", "truncated_params[*-cpu_fp32]", "error",
        ("truncated_params/inference.json failed", "Cannot read tensor desc size")),
    Row("params_file_missing", "params_missing", says=("has no params file inference.pdiparams beside it",)),
    Row("model_dir_empty", "empty_dir", says=("holds no .pdmodel or .json program file",)),
    Row("model_file_not_a_program", "not_a_program", says=("is not a .pdmodel or .json program file",)),
    Row("model_path_missing", "missing_path", says=("--paddle-model: model path models/nowhere does not exist",)),
    # -- suite contents ------------------------------------------------------------------------
    Row("input_npy_garbage", "suites", "suite:paddle_in_garbage.yaml",
        says=("input file garbage.npy is not a valid numpy array file",), never=("allow_pickle",)),
    Row("input_npy_object_array", "suites", "suite:paddle_in_objects.yaml",
        says=("objects.npy is not a valid numpy array file", "Python objects"), never=("allow_pickle",)),
    Row("input_npy_truncated", "suites", "suite:paddle_in_truncated.yaml",
        says=("truncated.npy is not a valid numpy array file",), never=("allow_pickle",)),
    Row("input_npy_wrong_dtype", "suites", "suite:paddle_in_wrong_dtype.yaml",
        says=("holds array 'x' with the wrong dtype", "float32", "float64")),
    Row("input_npz_wrong_name", "suites", "suite:paddle_in_wrong_name.yaml",
        says=("has no array named 'x'", "'y'")),
    Row("builder_module_missing", "suites", "suite:paddle_no_builder.yaml",
        says=("builder module 'no_such_module' cannot be imported",)),
    Row("suite_yaml_broken", "suites", "suite:paddle_broken_yaml.yaml", says=("not valid YAML",)),
    Row("suite_model_program_garbage", "suites", "suite:paddle_bad_program.yaml",
        says=("models.bad.source: model files cannot be used", "garbage_program/inference.json failed",
              "parse error")),
    # -- goldens -------------------------------------------------------------------------------
    Row("golden_garbage", "goldens", "tiny_cnn[1x3x32x32-onednn_fp32]", "error",
        ("is not a valid numpy array file", "rewrite it with --paddle-update-goldens"), never=("allow_pickle",)),
    Row("golden_truncated", "goldens", "tiny_cnn[1x3x32x32-cpu_fp32+no_ir_optim]", "error",
        ("is not a valid numpy array file", "damaged or incomplete content")),
    Row("golden_of_other_inputs", "goldens", "tiny_cnn[1x3x32x32-cpu_fp32+ir_optim]", "error",
        ("the golden was recorded with other inputs", "digest deadbeef")),
    Row("golden_of_another_case", "goldens", "tiny_cnn[1x3x32x32-onednn_fp32+no_ir_optim]", "error",
        ("belongs to case 'tiny_cnn[1x3x32x32-cpu_fp32]'",)),
    Row("predictor_fails_while_running_the_case", "goldens", "swapped[1x3-cpu_fp32]", "error",
        ("the candidate (cpu_fp32): running the predictor failed", "ReshapeOp",
         "recipe: disable_mkldnn(); switch_ir_optim(True)"), check=lambda s: errored_in_call(s, "swapped[1x3-cpu_fp32]")),
    Row("golden_missing", "goldens", "tiny_cnn_b2[2x3x32x32-cpu_fp32]", "error",
        ("no golden for tiny_cnn_b2[2x3x32x32-cpu_fp32]", "--paddle-save-goldens=")),
    # -- the cache -------------------------------------------------------------------------------
    Row("cache_entry_replaced_by_a_file", "cache", "tiny_cnn[1x3x32x32-cpu_fp32]", "passed", session=1),
    Row("cache_stale_temporary_export", "cache", session=1,
        check=gone("cache/models/tiny_cnn-000000000000-default.tmp-killed")),
    Row("cache_inspection_record_edited", "cache", "disk[1x3x32x32-cpu_fp32]", "passed", session=1,
        never=("99x99",)),
    Row("cache_signature_record_garbage", "cache", "built[1x3x32x32-cpu_fp32]", "passed", session=1),
    Row("cache_manifest_truncated", "cache", "tiny_cnn[1x3x32x32-cpu_fp32]", "passed", session=2),
    Row("cache_params_truncated", "cache", "built[1x3x32x32-cpu_fp32]", "passed", session=2),
    Row("cache_directory_replaced_by_a_file", "cache", "disk[1x3x32x32-cpu_fp32]", "passed", session=2),
    Row("cache_executor_directory_replaced_by_a_file", "cache", "tiny_cnn[1x3x32x32-cpu_fp32]", "passed",
        session=2, check=lambda s: (s.directory / "cache" / "executor").is_dir() or pytest.fail("not healed")),
    # -- the report directory and silent options -------------------------------------------------
    Row("report_summary_lists_parent_path", "report", check=kept("victim.txt"), session=0,
        says=("report/summary.json is not a paddle-infer report file", "choose an empty or a paddle-infer")),
    Row("report_summary_lists_absolute_path", "report", check=kept("absolute_victim.txt"), session=0),
    Row("report_summary_lists_a_directory", "report", check=kept("report/listed_dir"), never=("INTERNALERROR",),
        session=0),
    Row("report_xlsx_without_openpyxl", "report",
        says=("PaddleInferWarning: openpyxl is not installed, so no .xlsx files are written",),
        check=lambda s: not list((s.directory / "fresh").glob("*.xlsx")) or pytest.fail("an .xlsx was written")),
    Row("update_goldens_without_golden_baseline", "report",
        says=("--paddle-update-goldens rewrote nothing: no case of this session compares against goldens",)),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_hostile_runtime_input(row: Row, scenario):
    sessions = scenario(row.scenario)
    session = sessions[row.session]
    last = sessions[-1]
    assert last.ret == EXITS[row.scenario], last.text
    for s in sessions:  # no internal traceback in any session of the scenario
        assert "INTERNALERROR" not in s.text and f'File "{PLUGIN_DIR}' not in s.text, s.text
        assert not re.search(r"(?m)^Traceback \(most recent call last\)", s.text), s.text
    if row.case.startswith("suite:"):
        text = session.collection_error(row.case[len("suite:"):])
    elif row.case:
        case = session.case(row.case)
        text = case.message
        model, _, rest = row.case.partition("[")
        shape, _, mode = rest.rstrip("]").partition("-")
        statuses = [v[0] for (m, sh, mo), v in session.summary.items()
                    if m == model and mo == mode and fnmatch.fnmatchcase(sh, shape)]
        assert statuses == [row.status], session.text
        if row.status == "passed":
            assert case.outcome == "passed", text
    else:
        text = session.text
    for phrase in row.says:
        assert phrase in text, f"{phrase!r} not in:\n{text}"
    for phrase in row.never:
        assert phrase not in text, f"{phrase!r} in:\n{text}"
    if row.check is not None:
        row.check(session)
    if EXITS[row.scenario] != USAGE and session.ret != USAGE:  # the session went on: its good case passed
        assert session.summary[GOOD][0] == "passed", session.text
