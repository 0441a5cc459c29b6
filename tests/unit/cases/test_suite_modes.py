"""cases/suite_modes.py: the GPU and TensorRT keys of a suite's run-mode mapping: the
RunModeSpec and id each makes (the same as the run-mode string syntax), the message each
mistake gives. End to end: tests/integration/test_suite_gpu_keys.py."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_paddle_infer.cases import suite_modes
from pytest_paddle_infer.cases.suite import Context, SuiteError, load_suite
from pytest_paddle_infer.cases.suite_nodes import Node, Where
from pytest_paddle_infer.modes.run_modes import DynamicShape, RunModeSpec, parse_run_mode

from unit.modes.test_toggles import CPU_MODES, ROOT, TABLE

X_RANGE = "{x: {min: [1, 3, 32, 32], opt: [2, 3, 32, 32], max: [4, 3, 32, 32]}}"
X_LABEL = "dynamic_shape=x:1x3x32x32:2x3x32x32:4x3x32x32"


def x_range(no_plugin_fp16: bool = False) -> DynamicShape:
    return DynamicShape.explicit({"x": ((1, 3, 32, 32), (2, 3, 32, 32), (4, 3, 32, 32))}, no_plugin_fp16)


def load(directory: Path, text: str, name: str = "paddle_s.yaml"):
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip())
    return load_suite(path, Context(file=name, base_dir=directory, rootdir=directory,
                                    cache_dir=directory / "cache"))


def one_mode(tmp_path: Path, entry: str) -> RunModeSpec:
    cases = load(tmp_path, f"models:\n  tiny_cnn:\n    run_modes:\n      - {entry}\n")
    return cases[0].case.run_mode


KEYS = [
    ("{mode: gpu_fp16, fp32_ops: [softmax, layer_norm]}",
     RunModeSpec("gpu_fp16", fp32_ops=("softmax", "layer_norm")), "gpu_fp16+fp32_op=softmax+fp32_op=layer_norm"),
    ("{mode: gpu_fp16, low_precision_io: true}",
     RunModeSpec("gpu_fp16", low_precision_io=True), "gpu_fp16+low_precision_io"),
    ("{mode: trt_fp16, disable_trt_ops: [pool2d]}",
     RunModeSpec("trt_fp16", disable_trt_ops=("pool2d",)), "trt_fp16+disable_trt_op=pool2d"),
    ("{mode: trt_int8, int8_source: quantized}",
     RunModeSpec("trt_int8", int8_source="quantized"), "trt_int8+int8_source=quantized"),
    ("{mode: trt_fp32, trt_optimization_level: 0}",
     RunModeSpec("trt_fp32", trt_optimization_level=0), "trt_fp32+trt_optimization_level=0"),
    ("{mode: trt_fp16, use_static: true}", RunModeSpec("trt_fp16", use_static=True), "trt_fp16+use_static"),
    ("{mode: trt_fp16, dynamic_shape: tuned}",
     RunModeSpec("trt_fp16", dynamic_shape=DynamicShape(tuned=True)), "trt_fp16+dynamic_shape=tuned"),
    (f"{{mode: trt_fp32, dynamic_shape: {X_RANGE}}}",
     RunModeSpec("trt_fp32", dynamic_shape=x_range()), f"trt_fp32+{X_LABEL}"),
    (f"{{mode: trt_fp16, dynamic_shape: {X_RANGE}, disable_trt_plugin_fp16: true}}",
     RunModeSpec("trt_fp16", dynamic_shape=x_range(True)), f"trt_fp16+{X_LABEL}+disable_trt_plugin_fp16"),
    ("{mode: trt_int8, calibration: {batches: 16}}",
     RunModeSpec("trt_int8", calib_batches=16), "trt_int8+calib_batches=16"),
]


@pytest.mark.parametrize("entry, spec, label", KEYS, ids=[label for _, _, label in KEYS])
def test_each_key_makes_the_spec_the_string_syntax_makes(tmp_path, entry, spec, label):
    got = one_mode(tmp_path, entry)
    assert got == spec and got.label == label
    assert parse_run_mode(label) == spec


def test_calibration_data_is_relative_to_the_suite_and_stored_absolute(tmp_path, monkeypatch):
    suite_dir = tmp_path / "suites"
    (suite_dir / "calib").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)  # not the suite's directory
    cases = load(suite_dir, """
        models:
          tiny_cnn:
            run_modes:
              - {mode: trt_int8, dynamic_shape: tuned, calibration: {batches: 4, data: calib}}
              - trt_int8+calib_data=calib
    """)
    data = str((suite_dir / "calib").resolve())
    assert [c.case.run_mode for c in cases] == [
        RunModeSpec("trt_int8", dynamic_shape=DynamicShape(tuned=True), calib_batches=4, calib_data=data),
        RunModeSpec("trt_int8", calib_data=data)]
    assert cases[0].case.run_mode.label == f"trt_int8+dynamic_shape=tuned+calib_batches=4+calib_data={data}"


def test_ranges_of_a_multi_input_model(tmp_path):
    cases = load(tmp_path, """
        models:
          tiny_detector:
            shapes: [{image: [2, 3, 64, 64]}]
            run_modes:
              - mode: trt_fp16
                dynamic_shape:
                  image: {min: [1, 3, 64, 64], opt: [2, 3, 64, 64], max: [4, 3, 64, 64]}
                  im_shape: {min: [1, 2], opt: [2, 2], max: [4, 2]}
    """)
    assert cases[0].case.run_mode.dynamic_shape == DynamicShape.explicit({
        "image": ((1, 3, 64, 64), (2, 3, 64, 64), (4, 3, 64, 64)), "im_shape": ((1, 2), (2, 2), (4, 2))})


# (suite text, lines the message holds). Block-style entries show that a message points at
# the key's own line, not the run mode's.
ERRORS = {
    "fp32_ops_not_a_list": ("""
        models:
          tiny_cnn:
            run_modes:
              - {mode: gpu_fp16, fp32_ops: softmax}
        """, [
        "paddle_s.yaml:4: models.tiny_cnn.run_modes[0].fp32_ops: fp32_ops must be a list",
        "  found:    the string 'softmax'",
        "  fix:      write it as a list: [softmax]",
    ]),
    "low_precision_io_not_a_bool": ("""
        models:
          tiny_cnn:
            run_modes:
              - mode: gpu_fp16
                low_precision_io: "yes"
        """, [
        "paddle_s.yaml:5: models.tiny_cnn.run_modes[0].low_precision_io: low_precision_io must be true or false",
        "  expected: true or false",
        "  found:    the string 'yes'",
        "  fix:      write true or false (no quotes)",
    ]),
    "unknown_int8_source": ("""
        models:
          tiny_cnn:
            run_modes:
              - mode: trt_int8
                int8_source: calibrated
        """, [
        "paddle_s.yaml:5: models.tiny_cnn.run_modes[0].int8_source: unknown int8_source",
        "  expected: one of calibration, quantized",
        "  found:    the string 'calibrated'",
        "  fix:      did you mean 'calibration'?",
    ]),
    "optimization_level_out_of_range": ("""
        models:
          tiny_cnn:
            run_modes:
              - {mode: trt_fp16, trt_optimization_level: 7}
        """, [
        "paddle_s.yaml:4: models.tiny_cnn.run_modes[0].trt_optimization_level: trt_optimization_level is out of range",
        "  expected: a whole number 0..5 (TensorRT builder levels; 3 is its default)",
        "  found:    the number 7",
        "  fix:      use a level from 0 to 5",
    ]),
    "optimization_level_not_whole": ("""
        models:
          tiny_cnn:
            run_modes:
              - {mode: trt_fp16, trt_optimization_level: "3"}
        """, [
        "paddle_s.yaml:4: models.tiny_cnn.run_modes[0].trt_optimization_level: "
        "trt_optimization_level must be a whole number >= 0",
        "  found:    the string '3'",
        "  fix:      write a bare whole number such as 1 (no quotes, no decimal point)",
    ]),
    "dynamic_shape_misspelled": ("""
        models:
          tiny_cnn:
            run_modes:
              - {mode: trt_fp16, dynamic_shape: tune}
        """, [
        "paddle_s.yaml:4: models.tiny_cnn.run_modes[0].dynamic_shape: dynamic_shape must be tuned or ranges per input",
        "  found:    the string 'tune'",
        "  fix:      did you mean 'tuned'?",
    ]),
    "range_without_opt": ("""
        models:
          tiny_cnn:
            run_modes:
              - mode: trt_fp16
                dynamic_shape:
                  x: {min: [1, 3, 32, 32], max: [4, 3, 32, 32]}
        """, [
        "paddle_s.yaml:6: models.tiny_cnn.run_modes[0].dynamic_shape.x: the range of input 'x' has no opt",
        "  expected: min, opt and max, each a shape",
        "  fix:      add opt: [...]",
    ]),
    "range_min_above_max": ("""
        models:
          tiny_cnn:
            run_modes:
              - mode: trt_fp16
                dynamic_shape:
                  x: {min: [8, 3, 32, 32], opt: [2, 3, 32, 32], max: [4, 3, 32, 32]}
        """, [
        "paddle_s.yaml:6: models.tiny_cnn.run_modes[0].dynamic_shape.x: bad range for input 'x'",
        "  expected: min <= opt <= max in every dim, one rank for all three",
        "  found:    dynamic shape of input 'x': need 0 < min <= opt <= max in every dim; dims [0] break it "
        "(min [8, 3, 32, 32], opt [2, 3, 32, 32], max [4, 3, 32, 32])",
        "  fix:      reorder or fix the dims",
    ]),
    "range_for_an_input_the_model_lacks": ("""
        models:
          tiny_cnn:
            run_modes:
              - mode: trt_fp16
                dynamic_shape:
                  image: {min: [1, 3, 32, 32], opt: [2, 3, 32, 32], max: [4, 3, 32, 32]}
        """, [
        "paddle_s.yaml:6: models.tiny_cnn.run_modes[0].dynamic_shape.image: model 'tiny_cnn' has no input 'image'",
        "  expected: one of its inputs: x",
        "  found:    'image'",
        "  fix:      use the model's input names",
    ]),
    "range_in_a_dim_the_model_fixes": ("""
        defaults:
          run_modes:
            - mode: trt_fp16
              dynamic_shape:
                x: {min: [1, 3, 16, 16], opt: [2, 3, 32, 32], max: [4, 3, 32, 32]}
        models:
          tiny_cnn: {}
        """, [
        "paddle_s.yaml:5: defaults.run_modes[0].dynamic_shape.x.min: dim 2 of input 'x' is fixed by 'tiny_cnn'",
        "  expected: 32 at position 2 (the model declares [-1, 3, 32, 32])",
        "  found:    [1, 3, 16, 16]",
    ]),
    "plugin_fp16_with_tuned": ("""
        models:
          tiny_cnn:
            run_modes:
              - mode: trt_fp16
                dynamic_shape: tuned
                disable_trt_plugin_fp16: true
        """, [
        "paddle_s.yaml:6: models.tiny_cnn.run_modes[0].disable_trt_plugin_fp16: "
        "disable_trt_plugin_fp16 needs explicit ranges",
        "  found:    dynamic_shape: tuned",
        "  fix:      give dynamic_shape ranges, or remove disable_trt_plugin_fp16",
    ]),
    "calibration_key_misspelled": ("""
        models:
          tiny_cnn:
            run_modes:
              - {mode: trt_int8, calibration: {batch: 16}}
        """, [
        "paddle_s.yaml:4: models.tiny_cnn.run_modes[0].calibration: unknown key 'batch' in calibration",
        "  expected: one of batches, data",
        "  fix:      did you mean 'batches'?",
    ]),
    "calibration_batches_zero": ("""
        models:
          tiny_cnn:
            run_modes:
              - {mode: trt_int8, calibration: {batches: 0}}
        """, [
        "paddle_s.yaml:4: models.tiny_cnn.run_modes[0].calibration.batches: "
        "calibration.batches must be a whole number >= 1",
        "  found:    the number 0",
    ]),
    "calibration_dir_missing": ("""
        models:
          tiny_cnn:
            run_modes:
              - mode: trt_int8
                calibration:
                  data: calib/
        """, [
        "paddle_s.yaml:6: models.tiny_cnn.run_modes[0].calibration.data: calibration data directory not found",
        "  found:    'calib/' (no such directory: */calib)",
        "  fix:      create it, or fix the path",
    ]),
    "string_syntax_spelling_in_a_mapping": ("""
        models:
          tiny_cnn:
            run_modes:
              - {mode: trt_int8, calib_batches: 16}
        """, [
        "paddle_s.yaml:4: models.tiny_cnn.run_modes[0]: unknown key 'calib_batches' in a run mode",
        "  fix:      write calibration: {batches: N}",
    ]),
    "run_mode_key_under_a_model": ("""
        models:
          tiny_cnn:
            dynamic_shape: tuned
            run_modes: [trt_fp16]
        """, [
        "paddle_s.yaml:3: models.tiny_cnn: unknown key 'dynamic_shape' in model 'tiny_cnn'",
        "  fix:      dynamic_shape is a run-mode key: write it beside 'mode:' in a run_modes entry, "
        "e.g. run_modes: [{mode: trt_fp16, dynamic_shape: ...}]",
    ]),
    "trt_key_under_a_cpu_mode": ("""
        models:
          tiny_cnn:
            run_modes:
              - mode: onednn_fp32
                ir_optim: false
                dynamic_shape: tuned
        """, [
        "paddle_s.yaml:6: models.tiny_cnn.run_modes[0].dynamic_shape: dynamic_shape does not apply to run mode onednn_fp32",
        "  expected: dynamic_shape only under trt_fp32, trt_fp16, trt_int8",
        "  found:    dynamic_shape under mode onednn_fp32",
        "  fix:      remove dynamic_shape, or move it to a run mode that takes it",
    ]),
    "fp16_key_under_trt": ("""
        models:
          tiny_cnn:
            run_modes:
              - {mode: trt_fp16, fp32_ops: [softmax]}
        """, [
        "paddle_s.yaml:4: models.tiny_cnn.run_modes[0].fp32_ops: fp32_ops does not apply to run mode trt_fp16",
        "  expected: fp32_ops only under onednn_bf16, gpu_fp16",
        "  fix:      remove fp32_ops, or move it to a run mode that takes it",
    ]),
    "calibration_under_trt_fp16": ("""
        models:
          tiny_cnn:
            run_modes:
              - {mode: trt_fp16, calibration: {batches: 4}}
        """, [
        "paddle_s.yaml:4: models.tiny_cnn.run_modes[0].calibration: calibration does not apply to run mode trt_fp16",
        "  expected: calibration only under trt_int8",
    ]),
    "int8_source_under_trt_fp32": ("""
        models:
          tiny_cnn:
            run_modes:
              - {mode: trt_fp32, int8_source: calibration}
        """, [
        "paddle_s.yaml:4: models.tiny_cnn.run_modes[0].int8_source: int8_source does not apply to run mode trt_fp32",
        "  expected: int8_source only under trt_int8",
    ]),
    "calibration_of_a_quantized_model": ("""
        models:
          tiny_cnn:
            run_modes:
              - mode: trt_int8
                int8_source: quantized
                calibration: {batches: 4}
        """, [
        "paddle_s.yaml:6: models.tiny_cnn.run_modes[0].calibration: calibration conflicts with int8_source "
        "in run mode trt_int8",
        "  expected: settings that apply together",
        "  found:    run mode trt_int8 does not take calib_batches: *",
        "  fix:      remove calibration or int8_source",
    ]),
    "trt_without_ir_optim": ("""
        models:
          tiny_cnn:
            run_modes:
              - mode: trt_fp32
                use_static: true
                ir_optim: false
        """, [
        "paddle_s.yaml:6: models.tiny_cnn.run_modes[0].ir_optim: ir_optim does not fit run mode trt_fp32",
        "  expected: settings trt_fp32 takes",
        "  found:    trt_fp32 with IR optimization off would run no TensorRT subgraph at all *",
        "  fix:      remove ir_optim",
    ]),
    "string_syntax_toggle_misspelled": ("""
        models:
          tiny_cnn:
            run_modes: [trt_fp16+dynamic_shap=tuned]
        """, [
        "paddle_s.yaml:3: models.tiny_cnn.run_modes[0]: bad run-mode toggle",
        "  expected: toggles: +ir_optim, +no_ir_optim, * +dynamic_shape=tuned, * +calib_batches=N, *",
        "  found:    'trt_fp16+dynamic_shap=tuned' (unknown toggle 'dynamic_shap=tuned' in "
        "'trt_fp16+dynamic_shap=tuned')",
        "  fix:      fix the toggle, or write the run mode as a mapping (see docs/suites.md)",
    ]),
}


@pytest.mark.parametrize("text, expected", list(ERRORS.values()), ids=list(ERRORS))
def test_mistakes_name_the_line_the_key_and_the_fix(tmp_path, text, expected):
    with pytest.raises(SuiteError) as info:
        load(tmp_path, text)
    message = str(info.value).splitlines()
    for pattern in expected:
        assert any(fnmatch_line(line, pattern) for line in message), (pattern, message)


def fnmatch_line(line: str, pattern: str) -> bool:
    import fnmatch

    return line == pattern or ("*" in pattern and fnmatch.fnmatchcase(line, pattern))


# ---------------------------------------------------------------------------------------
# cases/suite_modes.py: a key under a run mode that does not take it points at the modes
# that do; with a single such mode the fix names it.
# ---------------------------------------------------------------------------------------


def load_takers(directory, text):
    (directory / "paddle_s.yaml").write_text(text)
    return load_suite(directory / "paddle_s.yaml", Context(file="paddle_s.yaml", base_dir=directory,
                                                           rootdir=directory, cache_dir=directory / "cache"))


@pytest.mark.parametrize("entry, expected, fix", [
    ("{mode: trt_fp16, low_precision_io: true}", "low_precision_io only under gpu_fp16",
     "remove low_precision_io, or move it to a run mode with mode: gpu_fp16"),
    ("{mode: trt_fp16, fp32_ops: [softmax]}", "fp32_ops only under onednn_bf16, gpu_fp16",
     "remove fp32_ops, or move it to a run mode that takes it"),
])
def test_a_key_of_other_modes_names_the_modes_that_take_it(tmp_path, entry, expected, fix):
    with pytest.raises(SuiteError) as info:
        load_takers(tmp_path, f"models:\n  tiny_cnn:\n    run_modes:\n      - {entry}\n")
    lines = [line.strip() for line in str(info.value).splitlines()]
    assert f"expected: {expected}" in lines and f"fix:      {fix}" in lines, lines


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
