"""modes/toggles.py: the toggle and run-mode tables: everything about a toggle follows from its row, and modes
are asked for traits, not names. Pure data: no paddle, no pytest session."""
from __future__ import annotations

import dataclasses
import fnmatch
from pathlib import Path

import pytest

from pytest_paddle_infer.cases import suite_modes
from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.modes import cpu_threads, run_modes as rm
from pytest_paddle_infer.modes.run_modes import CPU, RUN_MODES, TOGGLES, RunModeSpec, call, parse_run_mode
from pytest_paddle_infer.modes.toggles import Flag, Number, Toggle, ToggleTable

from unit.engine.test_build_plan import PLANS

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


def test_threads_below_one_is_refused():
    with pytest.raises(OptionError, match="threads 0: a predictor needs at least one thread"):
        RunModeSpec("cpu_fp32", threads=0)


def test_docs_name_every_toggle_and_key():
    readme = (ROOT / "README.md").read_text()
    suites = (ROOT / "docs" / "suites.md").read_text()
    for syntax, _ in TOGGLES.syntax:
        written = syntax.split("=")[0] + ("=" if "=" in syntax else "")
        assert "+" + written in readme, syntax
    for key in suite_modes.TOGGLE_KEYS:
        assert f"| `{key}` |" in suites, key


# ---------------------------------------------------------------------------------------
# modes/toggles.py: a '+' with no toggle after it (a trailing '+', or '++') says so instead of
# naming an unknown toggle ''.
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["cpu_fp32+", "cpu_fp32++threads=2", "cpu_fp32+ +no_ir_optim"])
def test_an_empty_toggle_is_named_as_such(text):
    with pytest.raises(OptionError) as e:
        parse_run_mode(text)
    message = str(e.value)
    assert message.startswith(f"--run-mode: {text!r} has a '+' with no toggle after it; ") \
        and "unknown toggle" not in message and "+threads=N" in message, message


# ---------------------------------------------------------------------------------------
# --run-mode labels of every mode engine/test_build_plan.py plans round-trip.
# ---------------------------------------------------------------------------------------
ROUND_TRIP = [text for text, _, _ in PLANS] + [
    "trt_fp16+dynamic_shape=x:1x3x32x32:1x3x224x224:4x3x512x512+dynamic_shape=im_shape:1x2:1x2:4x2"
    "+disable_trt_plugin_fp16",
    "trt_int8+int8_source=quantized+dynamic_shape=x:1x3x224x224:1x3x224x224:8x3x224x224+use_static",
    "cpu_fp32+memory_optim+delete_pass=fc_fuse_pass+delete_pass=conv_bn_fuse_pass+threads=3",
    "trt_fp32+memory_optim+disable_trt_op=pool2d+disable_trt_op=softmax+trt_optimization_level=0",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_label_round_trips(text):
    spec = parse_run_mode(text)
    assert spec.label == text
    assert parse_run_mode(spec.label) == spec


@pytest.mark.parametrize("text, message", [
    ("cpu_fp32+threads=0", "threads 0: a predictor needs at least one thread"),
    ("cpu_fp32+threads=-2", "threads -2: a predictor needs at least one thread"),
    ("cpu_fp32+threads=100000", "threads 100000: more threads than this machine can schedule"),
    ("cpu_fp32+threads=two", "threads='two': give a whole number, e.g. +threads=1"),
    ("trt_int8+calib_batches=0", "calib_batches 0: calibration needs at least one batch"),
    ("cpu_fp32+threads", "threads needs a number: +threads=1"),
])
def test_out_of_range_toggle_numbers_say_why(text, message):
    with pytest.raises(OptionError) as e:
        parse_run_mode(text)
    assert message in str(e.value) and "unknown toggle" not in str(e.value)


def test_threads_within_the_limit_are_taken():
    assert parse_run_mode(f"cpu_fp32+threads={cpu_threads.MAX_THREADS}").threads == cpu_threads.MAX_THREADS
