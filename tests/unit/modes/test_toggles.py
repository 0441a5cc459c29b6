"""modes/toggles.py: the toggle and run-mode tables: everything about a toggle follows from its row, and modes
are asked for traits, not names. Pure data: no paddle, no pytest session."""
from __future__ import annotations

import dataclasses
import fnmatch
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_paddle_infer.modes import run_modes as rm
from pytest_paddle_infer.cases import suite_modes
from pytest_paddle_infer.modes.capabilities import Capabilities
from pytest_paddle_infer.errors import OptionError, SuiteError
from pytest_paddle_infer.modes.run_modes import CPU, RUN_MODES, TOGGLES, RunModeSpec, call, parse_run_mode
from pytest_paddle_infer.cases.suite_nodes import Context, Node, Where
from pytest_paddle_infer.modes.toggles import Flag, Number, Toggle, ToggleTable

ROOT = Path(__file__).resolve().parents[3]  # the repository

# ---------------------------------------------------------------------------------------
# A new toggle is one row: a test-local table with two more rows.
# ---------------------------------------------------------------------------------------
WARMUP = Toggle("warmup", Number(0, 10, what="warm-up run count", note="0 skips warm-up"),
                "runs before the checked one", scope="cpu_*",
                applies=lambda spec: spec.run_mode.device == CPU)
PROFILE = Toggle("profile", Flag(), "enable_profile()",
                 calls=lambda on, mode: (call("enable_profile"),))
TABLE = ToggleTable(TOGGLES.rows + (WARMUP, PROFILE), RUN_MODES, rm.canonical_mode,
                    spec_name="ExtendedSpec")
Spec = TABLE.spec_type
CPU_MODES = [m for m in RUN_MODES if RUN_MODES[m].device == CPU]


def test_an_extra_row_is_a_field_with_a_default():
    assert [f.name for f in dataclasses.fields(Spec)][-2:] == ["warmup", "profile"]
    assert Spec("cpu_fp32") == Spec("cpu_fp32", warmup=None, profile=False)
    assert RunModeSpec is not Spec and not hasattr(RunModeSpec("cpu_fp32"), "warmup")


def test_an_extra_row_is_validated_by_its_scope_and_kind():
    with pytest.raises(OptionError) as e:
        Spec("gpu_fp32", warmup=2)
    assert str(e.value).startswith("run mode gpu_fp32 does not take warmup: ")
    assert str(e.value).endswith("; warmup to cpu_*")
    with pytest.raises(OptionError, match=r"^warmup 11: warm-up run counts are 0\.\.10 \(0 skips warm-up\)$"):
        Spec("onednn_bf16", warmup=11)
    assert TABLE.takers(WARMUP) == CPU_MODES
    assert TABLE.takers(PROFILE) == list(RUN_MODES)


def test_an_extra_row_shows_in_the_id_and_parses_back():
    spec = Spec("onednn_fp32", memory_optim=True, warmup=3, profile=True)
    assert spec.label == "onednn_fp32+memory_optim+warmup=3+profile"
    assert TABLE.parse(spec.label) == spec
    assert TABLE.parse("mkldnn_fp32+profile+warmup=3+memory_optim") == spec  # any order, alias
    assert ("warmup=N", "cpu_*: runs before the checked one") in TABLE.syntax
    with pytest.raises(OptionError, match=r"^--run-mode: warmup needs a number: \+warmup=1$"):
        TABLE.parse("cpu_fp32+warmup")  # a number toggle without its number is not unknown
    with pytest.raises(OptionError) as e:
        TABLE.parse("cpu_fp32+warm")
    assert str(e.value).startswith("--run-mode: unknown toggle 'warm' in 'cpu_fp32+warm'; toggles: ")
    assert str(e.value).endswith(", +warmup=N, +profile")
    with pytest.raises(OptionError, match="does not take warmup"):
        TABLE.parse("trt_fp16+warmup=1")


def test_an_extra_row_adds_its_recipe_calls():
    assert [str(c) for c in rm.recipe(Spec("cpu_fp32", profile=True, threads=2))] == [
        "disable_mkldnn()", "switch_ir_optim(True)", "set_cpu_math_library_num_threads(2)",
        "enable_profile()"]


def _fields(entry: dict) -> dict:
    return Node(entry, Where("paddle_s.yaml", 4), "models.m.run_modes[0]").mapping(
        ("mode",) + TABLE.yaml_keys, "a run mode")


def test_an_extra_row_is_a_suite_key():
    assert TABLE.yaml_keys[-2:] == ("warmup", "profile")
    assert TABLE.restricted_keys[-1] == "warmup"
    ctx = Context(file="paddle_s.yaml", base_dir=ROOT, rootdir=ROOT, cache_dir=ROOT)
    fields = _fields({"mode": "cpu_fp32", "warmup": 3, "profile": True, "ir_optim": False})
    parts = suite_modes.read_toggles(fields, ctx, TABLE)
    assert parts == {"warmup": {"warmup": 3}, "profile": {"profile": True},
                     "ir_optim": {"ir_optim": False}}
    spec = suite_modes.build_spec("cpu_fp32", fields, parts, Node({}, Where("paddle_s.yaml", 4), ""), TABLE)
    assert spec.label == "cpu_fp32+no_ir_optim+warmup=3+profile"
    wrong = _fields({"mode": "gpu_fp16", "warmup": 3})
    with pytest.raises(SuiteError) as e:
        suite_modes.build_spec("gpu_fp16", wrong, suite_modes.read_toggles(wrong, ctx, TABLE),
                               Node({}, Where("paddle_s.yaml", 4), ""), TABLE)
    assert str(e.value).splitlines()[:2] == [
        "paddle_s.yaml:4: models.m.run_modes[0].warmup: warmup does not apply to run mode gpu_fp16",
        f"  expected: warmup only under {', '.join(CPU_MODES)}"]
    with pytest.raises(SuiteError, match="warmup is out of range"):
        suite_modes.read_toggles(_fields({"mode": "cpu_fp32", "warmup": 12}), ctx, TABLE)


def test_rows_that_clash_are_refused_when_the_table_is_made():
    with pytest.raises(ValueError, match="both read \\+memory_optim"):
        ToggleTable(TOGGLES.rows + (Toggle("memory_optim", Flag(), "again"),), RUN_MODES, rm.canonical_mode)
    with pytest.raises(ValueError, match="3 spellings"):
        ToggleTable((Toggle("x", rm.DynamicShapeValue(), ("a", "b")),), RUN_MODES, rm.canonical_mode)


# ---------------------------------------------------------------------------------------
# The real table.
# ---------------------------------------------------------------------------------------
def test_spec_fields_keep_their_order():
    """The order is the id's and the repr's, which names TensorRT cache dirs: keep it."""
    assert [f.name for f in dataclasses.fields(RunModeSpec)] == [
        "mode", "ir_optim", "memory_optim", "delete_passes", "threads", "fp32_ops",
        "low_precision_io", "disable_trt_ops", "int8_source", "dynamic_shape",
        "trt_optimization_level", "use_static", "calib_batches", "calib_data"]
    assert repr(RunModeSpec("trt_int8", use_static=True)) == (
        "RunModeSpec(mode='trt_int8', ir_optim=None, memory_optim=False, delete_passes=(), "
        "threads=None, fp32_ops=(), low_precision_io=False, disable_trt_ops=(), "
        "int8_source='calibration', dynamic_shape=None, trt_optimization_level=None, "
        "use_static=True, calib_batches=None, calib_data=None)")
    assert RunModeSpec.__module__ == "pytest_paddle_infer.modes.run_modes"


@pytest.mark.parametrize("row", TOGGLES.rows, ids=lambda r: r.name)
def test_scope_words_match_the_traits(row):
    """``scope`` is what help and errors say; ``applies`` (on traits) is what holds."""
    takers = TOGGLES.takers(row)
    if not row.scope:
        assert takers == list(RUN_MODES)
    else:
        patterns = row.scope.split(" with ")[0].split(", ")  # "gpu_fp16, onednn_bf16"
        assert takers == [m for m in RUN_MODES if any(fnmatch.fnmatch(m, p) for p in patterns)]


def _one_toggle_specs():
    for mode in RUN_MODES:
        yield RunModeSpec(mode)
        for row in TOGGLES:
            if row.applies(RunModeSpec(mode)):
                probe = row.kind.probe if row.name != "ir_optim" else RUN_MODES[mode].tensorrt
                yield RunModeSpec(mode, **{row.name: probe})


@pytest.mark.parametrize("spec", list(_one_toggle_specs()), ids=lambda s: s.label)
def test_every_label_pasted_back_gives_the_same_spec(spec):
    assert parse_run_mode(spec.label) == spec
    assert parse_run_mode(spec.label.upper().split("+")[0] + spec.label[len(spec.mode):]) == spec


def test_aliases_parse_to_their_mode():
    for alias, mode in rm.ALIASES.items():
        assert parse_run_mode(alias + "+memory_optim") == RunModeSpec(mode, memory_optim=True)


def test_does_not_take_lists_every_scope():
    with pytest.raises(OptionError) as e:
        RunModeSpec("cpu_fp32", use_static=True, dynamic_shape=rm.DynamicShape(tuned=True))
    assert str(e.value) == (
        "run mode cpu_fp32 does not take dynamic_shape, use_static: fp32_ops apply to "
        "gpu_fp16, onednn_bf16; low_precision_io to gpu_fp16; disable_trt_ops, dynamic_shape, "
        "trt_optimization_level and use_static to trt_*; int8_source to trt_int8; "
        "calib_batches and calib_data to trt_int8 with int8_source calibration")


def test_suite_keys_and_hints_follow_from_the_rows():
    assert suite_modes.TOGGLE_KEYS == (
        "ir_optim", "memory_optim", "delete_passes", "threads", "fp32_ops", "low_precision_io",
        "disable_trt_ops", "int8_source", "dynamic_shape", "disable_trt_plugin_fp16",
        "trt_optimization_level", "use_static", "calibration")
    assert list(suite_modes.MODE_KEY_HINTS) == list(suite_modes.TOGGLE_KEYS[4:])
    assert suite_modes.SPELLING_HINTS == {
        "no_ir_optim": "write ir_optim: false",
        "delete_pass": "write delete_passes: [NAME]",
        "fp32_op": "write fp32_ops: [OP]",
        "disable_trt_op": "write disable_trt_ops: [OP]",
        "calib_batches": "write calibration: {batches: N}",
        "calib_data": "write calibration: {data: DIR}  (relative to the suite)"}


def test_threads_below_one_is_refused():
    with pytest.raises(OptionError, match="threads 0: a predictor needs at least one thread"):
        RunModeSpec("cpu_fp32", threads=0)


# ---------------------------------------------------------------------------------------
# Modes: traits, not names.
# ---------------------------------------------------------------------------------------
def test_needs_follow_from_traits():
    assert {m.name: m.needs for m in RUN_MODES.values()} == {
        "cpu_fp32": (), "onednn_fp32": ("onednn",), "onednn_bf16": ("onednn", "bf16"),
        "onednn_int8": ("onednn", "int8"), "gpu_fp32": ("cuda",), "gpu_fp16": ("cuda",),
        "trt_fp32": ("cuda", "tensorrt"), "trt_fp16": ("cuda", "tensorrt"),
        "trt_int8": ("cuda", "tensorrt")}
    assert [m for m in RUN_MODES if RUN_MODES[m].tensorrt] == ["trt_fp32", "trt_fp16", "trt_int8"]


def test_a_paddle_without_onednn_skips_onednn_modes_only():
    caps = Capabilities("paddlepaddle", "3.3.1", "abc", False, 0, (0,), (0,), onednn=False)
    assert caps.missing_for(RUN_MODES["onednn_bf16"]) == (
        "onednn_bf16 needs Paddle built with oneDNN; paddlepaddle 3.3.1 installed here was built "
        "without it")
    assert caps.missing_for(RUN_MODES["cpu_fp32"]) is None


def test_gpu_rows_show_their_slots():
    engine = RUN_MODES["trt_int8"].template[-1]
    assert str(engine) == (
        "enable_tensorrt_engine(workspace_size=1073741824, max_batch_size=<max_batch_size>, "
        "min_subgraph_size=3, precision_mode=PrecisionType.Int8, use_static=<use_static>, "
        "use_calib_mode=<use_calib_mode>, use_cuda_graph=False)")
    assert "use_calib_mode=False" in str(rm.recipe(RunModeSpec("trt_int8", int8_source="quantized"))[2])


# ---------------------------------------------------------------------------------------
# Imports point one way; the docs name every toggle.
# ---------------------------------------------------------------------------------------
def _loaded_after(module: str) -> set:
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_option_parsing_imports_no_runtime_module():
    loaded = _loaded_after("pytest_paddle_infer.session.options")
    assert not loaded & {"numpy", "paddle", "yaml", "pytest_paddle_infer.models.cache",
                         "pytest_paddle_infer.engine.baselines", "pytest_paddle_infer.models.inputs"}


def test_suite_parsing_does_not_import_option_parsing():
    assert "pytest_paddle_infer.session.options" not in _loaded_after("pytest_paddle_infer.cases.suite")


def test_docs_name_every_toggle_and_key():
    readme = (ROOT / "README.md").read_text()
    suites = (ROOT / "docs" / "suites.md").read_text()
    for syntax, _ in TOGGLES.syntax:
        written = syntax.split("=")[0] + ("=" if "=" in syntax else "")
        assert "+" + written in readme, syntax
    for key in suite_modes.TOGGLE_KEYS:
        assert f"| `{key}` |" in suites, key
