"""End to end: every suite mistake is a collection error that names file:line, the key, what
was expected, what was found and the fix, with no traceback from the plugin's code."""
import pytest

from helpers import exported_tiny_cnn, run_suite, write_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

MLP = "import paddle.nn as nn\n\n\ndef build_mlp(width=8):\n    return nn.Linear(8, width)\n"

# (suite text, the message lines in order: fnmatch patterns)
COLLECTION_ERRORS = {
    "typo_in_a_key": ("""
        models:
          tiny_cnn:
            shapes: [[1, 3, 32, 32]]
            run_mode: [cpu_fp32]
        """, [
        "paddle_suite.yaml:4: models.tiny_cnn: unknown key 'run_mode' in model 'tiny_cnn'",
        "  expected: one of source, kwargs, inputs, shapes, run_modes, tolerances, skip, xfail, program",
        "  found:    'run_mode'",
        "  fix:      did you mean 'run_modes'?",
    ]),
    "suite_wide_key_at_the_top": ("""
        run_modes: [cpu_fp32]
        models:
          tiny_cnn: {}
        """, [
        "paddle_suite.yaml:1: unknown key 'run_modes' in a suite",
        "  expected: one of defaults, models",
        "  found:    'run_modes'",
        "  fix:      suite-wide run_modes go under 'defaults:'",
    ]),
    "unknown_dtype": ("""
        models:
          mlp:
            source: nets:build_mlp
            inputs:
              x: {shape: [-1, 8], dtype: float}
            run_modes: [cpu_fp32]
        """, [
        "paddle_suite.yaml:5: models.mlp.inputs.x.dtype: unknown dtype",
        "  expected: one of float32, float16, bfloat16, float64, int8, uint8, int16, int32, int64, bool",
        "  found:    the string 'float'",
        "  fix:      did you mean 'float32'?",
    ]),
    "dtype_the_model_does_not_take": ("""
        models:
          tiny_cnn:
            inputs:
              x: {dtype: int32}
            run_modes: [cpu_fp32]
        """, [
        "paddle_suite.yaml:4: models.tiny_cnn.inputs.x.dtype: wrong dtype for input 'x' of 'tiny_cnn'",
        "  expected: 'float32', the dtype the model declares",
        "  found:    the string 'int32'",
        "  fix:      write dtype: float32 or remove 'dtype'",
    ]),
    "missing_builder_module": ("""
        models:
          mlp:
            source: no_such_nets:build_mlp
            inputs: {x: {shape: [-1, 8]}}
            run_modes: [cpu_fp32]
        """, [
        "paddle_suite.yaml:3: models.mlp.source: builder module 'no_such_nets' cannot be imported",
        "  expected: a module importable from the suite's directory (*), the rootdir (*) or the environment",
        "  found:    'no_such_nets:build_mlp'",
        "  fix:      put no_such_nets.py beside the suite file, fix the module name, or install its package",
    ]),
    "missing_builder_function": ("""
        models:
          mlp:
            source: nets:build_mpl
            inputs: {x: {shape: [-1, 8]}}
            run_modes: [cpu_fp32]
        """, [
        "paddle_suite.yaml:3: models.mlp.source: builder module 'nets' has no 'build_mpl'",
        "  expected: a callable defined in *nets.py",
        "  found:    'build_mpl'; the module defines build_mlp, nn",
        "  fix:      did you mean 'build_mlp'?",
    ]),
    "number_of_the_wrong_type": ("""
        defaults:
          tolerances: {atol: tight}
        models:
          tiny_cnn: {run_modes: [cpu_fp32]}
        """, [
        "paddle_suite.yaml:2: defaults.tolerances.atol: atol must be a finite number",
        "  expected: a number >= 0",
        "  found:    the string 'tight'",
    ]),
    "name_where_a_list_belongs": ("""
        models:
          tiny_cnn:
            run_modes: cpu_fp32
        """, [
        "paddle_suite.yaml:3: models.tiny_cnn.run_modes: run_modes must be a list",
        "  expected: a list, e.g. *",
        "  found:    the string 'cpu_fp32'",
        "  fix:      write it as a list: [[]cpu_fp32[]]",
    ]),
    "shape_of_the_wrong_rank": ("""
        models:
          tiny_cnn:
            shapes:
              - [2, 3, 32, 32]
              - [2, 3, 32]
            run_modes: [cpu_fp32]
        """, [
        "paddle_suite.yaml:5: models.tiny_cnn.shapes[[]1[]]: shape of input 'x' has rank 3, but 'tiny_cnn' declares rank 4",
        "  expected: rank 4, like the model's [[]-1, 3, 32, 32[]] (-1: any size)",
        "  found:    [[]2, 3, 32[]]",
        "  fix:      give 4 dims, e.g. [[]2, 3, 32, 32[]]",
    ]),
    "dim_the_model_fixes": ("""
        models:
          tiny_cnn:
            shapes: [{x: [1, 3, 64, 64]}]
            run_modes: [cpu_fp32]
        """, [
        "paddle_suite.yaml:3: models.tiny_cnn.shapes[[]0[]].x: dim 2 of input 'x' is fixed by 'tiny_cnn'",
        "  expected: 32 at position 2 (the model declares [[]-1, 3, 32, 32[]])",
    ]),
    "unknown_run_mode": ("""
        models:
          tiny_cnn:
            run_modes: [cpu_fp32, onednn_f32]
        """, [
        "paddle_suite.yaml:3: models.tiny_cnn.run_modes[[]1[]]: unknown run mode",
        "  expected: one of cpu_fp32, onednn_fp32, *",
        "  found:    'onednn_f32'",
        "  fix:      did you mean 'onednn_fp32'?",
    ]),
    "skip_without_a_reason": ("""
        models:
          tiny_cnn:
            run_modes: [cpu_fp32]
            skip: true
        """, [
        "paddle_suite.yaml:4: models.tiny_cnn.skip: skip must be a non-empty string",
        "  expected: a string, e.g. skip: \"needs a GPU\"  (the reason is required)",
        "  found:    the boolean true",
    ]),
    "key_given_twice": ("""
        models:
          tiny_cnn:
            run_modes: [cpu_fp32]
            run_modes: [onednn_fp32]
        """, [
        "paddle_suite.yaml:4: key 'run_modes' appears twice in one mapping",
        "  expected: each key once",
        "  found:    'run_modes' again, first on line 3",
    ]),
    "defaults_no_model_uses": ("""
        defaults:
          shapes: [[4, 3, 32, 32]]
        models:
          tiny_cnn: {shapes: [[1, 3, 32, 32]], run_modes: [cpu_fp32]}
        """, [
        "paddle_suite.yaml:2: defaults.shapes: defaults.shapes is used by no model: every model sets its own",
    ]),
    "not_yaml": ("""
        models:
          tiny_cnn:
            shapes: [[1, 3, 32, 32]
          run_modes: [cpu_fp32]
        """, [
        "paddle_suite.yaml:4: not valid YAML",
        "  expected: a YAML document",
        "  found:    expected ',' or ']', but got *",
    ]),
}


SESSIONS = {}  # xdist mode -> the one session (per test process) over every scenario's suite


def every_mistake(pytester, run_pytest, xdist_mode):
    """One pytest session collects every scenario's suite, each in a directory of its own
    beside nets.py (``<scenario>/paddle_suite.yaml``): a collection error each, asserted one
    scenario per test. Run once per test process and xdist mode, in the first test's directory."""
    key = tuple(xdist_mode)
    if key not in SESSIONS:
        for scenario, (text, _) in COLLECTION_ERRORS.items():
            (pytester.path / scenario).mkdir()
            (pytester.path / scenario / "nets.py").write_text(MLP)
            write_suite(pytester, text, f"{scenario}/paddle_suite.yaml")
        SESSIONS[key] = run_suite(run_pytest, pytester, *xdist_mode)
    return SESSIONS[key]


@pytest.mark.parametrize("scenario", sorted(COLLECTION_ERRORS))
def test_mistake_is_a_collection_error_with_file_line_and_fix(pytester, run_pytest, xdist_mode, scenario):
    _, message = COLLECTION_ERRORS[scenario]
    suite = f"{scenario}/paddle_suite.yaml"
    message = [suite + line[len("paddle_suite.yaml"):] if line.startswith("paddle_suite.yaml") else line
               for line in message]
    run = every_mistake(pytester, run_pytest, xdist_mode)
    # collection errors interrupt the session (xdist reports them as failures)
    assert run.result.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED)
    # an error for each suite file, no case
    assert list(run.outcomes().values()) == ["error"] * len(COLLECTION_ERRORS), run.outcomes()
    assert [o for k, o in run.outcomes().items() if k.rsplit("::", 1)[-1].startswith(f"{scenario}.")] == ["error"]
    run.result.stdout.fnmatch_lines([f"*ERROR collecting {suite}*"])
    run.result.stdout.fnmatch_lines(message, consecutive=True)
    assert "Traceback" not in run.text
    assert "pytest_paddle_infer" not in run.text  # nothing of the plugin's own code


def test_shape_rank_is_checked_against_a_model_file(pytester, run_pytest, xdist_mode, paddle_cache):
    (pytester.path / "tiny").symlink_to(exported_tiny_cnn(paddle_cache), target_is_directory=True)
    write_suite(pytester, """
        models:
          on_disk:
            source: tiny
            shapes: [[2, 3, 32]]
            run_modes: [cpu_fp32]
    """)
    run = run_suite(run_pytest, pytester, *xdist_mode)
    run.result.stdout.fnmatch_lines([
        "paddle_suite.yaml:4: models.on_disk.shapes[[]0[]]: shape of input 'x' has rank 3, but 'on_disk' declares rank 4",
        "  expected: rank 4, like the model's [[]-1, 3, 32, 32[]] (-1: any size)",
    ], consecutive=True)


def test_tolerance_for_an_output_the_model_lacks_fails_its_cases(pytester, run_pytest, xdist_mode):
    write_suite(pytester, """
        models:
          tiny_cnn:
            run_modes: [cpu_fp32]
            tolerances:
              outputs:
                logits: {atol: 1e-3}
    """)
    run = run_suite(run_pytest, pytester, *xdist_mode)
    assert run.outcomes() == {"paddle_suite.yaml::tiny_cnn[1x3x32x32-cpu_fp32]": "failed"}
    run.result.stdout.fnmatch_lines([
        "*paddle_suite.yaml:2: tolerances.outputs names 'logits', which tiny_cnn does not produce",
        "  expected: one of its outputs: *",
        "  found:    'logits'",
        "  fix:      use an output name, its position (#0 .. #0), or a tensors: glob to match several",
    ], consecutive=True)
