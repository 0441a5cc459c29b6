"""cases/suite.py: suite reading: load_suite and marker_cases called directly (no pytest run,
no paddle), for what the end-to-end tests do not show case by case."""
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pytest_paddle_infer.cases.suite import Context, SuiteError, Where, load_suite, marker_cases, marker_rule
from pytest_paddle_infer.verdict.tolerances import Rule

from unit.session.test_options import _loaded_after


def load(tmp_path: Path, text: str, name: str = "paddle_s.yaml", **context):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    ctx = Context(file=name, base_dir=tmp_path, rootdir=tmp_path, cache_dir=tmp_path / "cache", **context)
    return load_suite(path, ctx)


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(SuiteError) as info:
        load(tmp_path, text)
    return str(info.value)


def by_id(cases):
    return {c.case.id: c for c in cases}


def test_cases_come_in_file_order_model_shape_mode(tmp_path):
    cases = load(tmp_path, """
        defaults:
          run_modes: [cpu_fp32, onednn_bf16]
        models:
          tiny_cnn:
            shapes: [[1, 3, 32, 32], [2, 3, 32, 32]]
          tiny_detector: {}
    """)
    assert [c.case.id for c in cases] == [
        "tiny_cnn[1x3x32x32-cpu_fp32]", "tiny_cnn[1x3x32x32-onednn_bf16]",
        "tiny_cnn[2x3x32x32-cpu_fp32]", "tiny_cnn[2x3x32x32-onednn_bf16]",
        "tiny_detector[1x3x64x64-cpu_fp32]", "tiny_detector[1x3x64x64-onednn_bf16]",
    ]
    # inputs a shape set leaves out take its batch: here the declared shapes at batch 1
    assert cases[-1].case.shapes == (("im_shape", (1, 2)), ("image", (1, 3, 64, 64)), ("scale_factor", (1, 2)))


def test_scientific_numbers_are_numbers_and_quoted_ones_are_an_error(tmp_path):
    cases = load(tmp_path, """
        defaults:
          tolerances: {atol: 1e-4, rtol: 5E-3}
        models:
          tiny_cnn: {run_modes: [cpu_fp32]}
    """)
    assert cases[0].case.tolerances.base == Rule(1e-4, 5e-3)
    message = error_of(tmp_path, """
        defaults:
          tolerances: {atol: "1e-4"}
        models:
          tiny_cnn: {run_modes: [cpu_fp32]}
    """)
    assert "fix:      write it as a bare number, e.g. 1e-4 (no quotes)" in message


def test_every_tolerance_layer_lands_where_precedence_says(tmp_path):
    case = load(tmp_path, """
        defaults:
          tolerances:
            atol: 1.0
            rtol: 0.1
            outputs: {out_a: {atol: 0.5}}
            tensors: {'conv*': {rtol: 0.25}}
        models:
          tiny_cnn:
            tolerances: {atol: 2.0, cosine_min: 0.9, outputs: {out_a: {rtol: 0.75}}}
            run_modes:
              - {mode: onednn_bf16, tolerances: {atol: 3.0, outputs: {out_b: {atol: 4.0}}}}
    """)[0].case
    t = case.tolerances
    assert t.for_tensor("other") == Rule(3.0, 0.1, 0.9)          # run mode > model > suite
    assert t.for_tensor("out_a") == Rule(0.5, 0.75, 0.9)         # output rules beat the run mode
    assert t.for_tensor("out_b") == Rule(4.0, 0.1, 0.9)
    assert t.for_tensor("conv_out_a") == Rule(3.0, 0.25, 0.9)    # globs
    assert t.with_override(Rule(atol=9.0)).for_tensor("out_a") == Rule(9.0, 0.75, 0.9)


def test_built_in_mode_default_is_the_lowest_layer(tmp_path):
    cases = by_id(load(tmp_path, """
        defaults:
          tolerances: {rtol: 1e-3}
        models:
          tiny_cnn: {run_modes: [cpu_fp32, onednn_bf16]}
    """))
    assert cases["tiny_cnn[1x3x32x32-cpu_fp32]"].case.tolerances.base == Rule(1e-4, 1e-3)
    assert cases["tiny_cnn[1x3x32x32-onednn_bf16]"].case.tolerances.base == Rule(5e-2, 1e-3)


def test_anchors_and_merge_keys_reuse_run_modes(tmp_path):
    cases = load(tmp_path, """
        defaults:
          run_modes:
            - &bf16 {mode: onednn_bf16, tolerances: {atol: 0.1}}
        models:
          tiny_cnn:
            run_modes:
              - *bf16
              - {<<: *bf16, ir_optim: false}
          tiny_detector: {}           # takes the defaults
    """)
    assert [c.case.run_mode.ir_optim for c in cases] == [None, False, None]
    assert all(c.case.tolerances.base.atol == 0.1 for c in cases)


def test_skip_and_xfail_reasons_reach_their_cases(tmp_path):
    cases = by_id(load(tmp_path, """
        defaults:
          run_modes: [cpu_fp32, {mode: onednn_bf16, xfail: {reason: drifts, strict: true}}]
        models:
          tiny_cnn: {}
          tiny_detector: {skip: "no detector today"}
    """))
    assert (cases["tiny_cnn[1x3x32x32-cpu_fp32]"].skip, cases["tiny_cnn[1x3x32x32-cpu_fp32]"].xfail) == (None, None)
    bf16 = cases["tiny_cnn[1x3x32x32-onednn_bf16]"]
    assert (bf16.xfail, bf16.xfail_strict) == ("drifts", True)
    assert cases["tiny_detector[1x3x64x64-cpu_fp32]"].skip == "no detector today"


def test_input_data_sources_replace_the_zoo_hints(tmp_path):
    np.save(tmp_path / "image.npy", np.zeros((2, 3, 64, 64), "float32"))
    case = load(tmp_path, """
        models:
          tiny_detector:
            run_modes: [cpu_fp32]
            inputs:
              im_shape: {values: [32, 64]}
              image: {file: image.npy}
              scale_factor: {normal: {mean: 1.0, std: 0.1}}
    """)[0].case
    specs = {s.name: s for s in case.model.inputs}
    assert specs["im_shape"].values == (32.0, 64.0) and specs["im_shape"].low is None
    assert specs["image"].file == str(tmp_path / "image.npy")
    assert (specs["scale_factor"].mean, specs["scale_factor"].std) == (1.0, 0.1)
    # the file fixes the image's shape and, through it, the batch of the other inputs
    assert case.shapes == (("im_shape", (2, 2)), ("image", (2, 3, 64, 64)), ("scale_factor", (2, 2)))


def test_builder_source_records_where_to_import_it_from(tmp_path):
    (tmp_path / "nets.py").write_text("def build(width=4):\n    pass\n")
    text = """
        models:
          net:
            source: nets:build
            kwargs: {width: 8, dims: [1, 2]}
            inputs: {x: {shape: [-1, null, 4], dtype: float16}}
            shapes: [[2, 5, 4]]
            run_modes: [cpu_fp32]
    """
    model = load(tmp_path, text)[0].case.model
    assert (model.kind, model.ref, model.kwargs) == ("builder", "nets:build", (("width", 8), ("dims", (1, 2))))
    assert model.inputs[0].shape == (-1, -1, 4) and model.inputs[0].dtype == "float16"
    assert model.search_path == (str(tmp_path),)
    (tmp_path / "nets.py").write_text("def build(width=4):\n    return None\n")
    assert load(tmp_path, text)[0].case.model.fingerprint != model.fingerprint  # an edit re-exports


def test_command_line_seed_wins_over_the_suite(tmp_path):
    text = """
        defaults: {seed: 7, threads: 2}
        models:
          tiny_cnn: {run_modes: [cpu_fp32]}
    """
    assert (load(tmp_path, text)[0].case.seed, load(tmp_path, text)[0].case.threads) == (7, 2)
    assert load(tmp_path, text, forced=(("seed", 3),))[0].case.seed == 3


@pytest.mark.parametrize("text, expected", [
    ("""
        models:
          tiny_cnn:
            run_modes: [cpu_fp32]
            inputs: {x: {range: [1, 0]}}
     """, ["paddle_s.yaml:4: models.tiny_cnn.inputs.x.range: range is reversed"]),
    ("""
        models:
          tiny_cnn:
            run_modes: [cpu_fp32]
            inputs: {x: {range: [0, 1], values: [1]}}
     """, ["paddle_s.yaml:4: models.tiny_cnn.inputs.x: input 'x' has more than one data source",
           "  fix:      keep one of range, values"]),
    ("""
        models:
          tiny_cnn:
            run_modes: [cpu_fp32]
            inputs: {image: {range: [0, 1]}}
     """, ["paddle_s.yaml:4: models.tiny_cnn.inputs.image: model 'tiny_cnn' has no input 'image'",
           "  expected: one of its inputs: x"]),
    ("""
        models:
          tiny_cnn:
            kwargs: {width: 2}
            run_modes: [cpu_fp32]
     """, ["paddle_s.yaml:3: models.tiny_cnn.kwargs: kwargs is only for builder sources"]),
    ("""
        defaults:
          inputs: {imgae: {range: [0, 1]}}
        models:
          tiny_detector: {run_modes: [cpu_fp32]}
     """, ["paddle_s.yaml:2: defaults.inputs.imgae: defaults input 'imgae' matches no model's input"]),
    ("""
        models:
          tiny_cnn:
            run_modes: [cpu_fp32, {mode: cpu_fp32, tolerances: {atol: 1}}]
     """, ["paddle_s.yaml:2: two cases have the id 'tiny_cnn[1x3x32x32-cpu_fp32]'"]),
    ("""
        models:
          tiny_cnn:
            run_modes: [{mode: onednn_bf16, tolerances: {cosine_min: 1.5}}]
     """, ["paddle_s.yaml:3: models.tiny_cnn.run_modes[0].tolerances.cosine_min: cosine_min is out of range",
           "  expected: a number between -1 and 1"]),
    ("""
        models:
          resnet:
            run_modes: [cpu_fp32]
     """, ["paddle_s.yaml:2: models.resnet: model 'resnet' has no source and is not a zoo entry",
           "  fix:      add source: under models.resnet (did you mean 'resnet50'?)"]),
    ("""
        models:
          tiny_detector:
            shapes: [{image: [2, 3, 64, 64], im_shape: [3, 2]}]
            run_modes: [cpu_fp32]
     """, ["paddle_s.yaml:3: models.tiny_detector.shapes[0]: the shapes given disagree on the batch "
           "that input 'scale_factor' takes"]),
    ("""
        models:
          tiny_cnn:
            run_modes:
              - onednn_bf16: {tolerances: {atol: 1}}
     """, ["paddle_s.yaml:4: models.tiny_cnn.run_modes[0]: run mode mapping without 'mode'",
           "  fix:      write it as '- mode: onednn_bf16' with its settings beside 'mode'"]),
    ("- just a list\n", ["paddle_s.yaml:1: a suite must be a mapping"]),
    ("", ["paddle_s.yaml:1: a suite must be a mapping"]),
])
def test_mistakes_name_the_line_and_the_fix(tmp_path, text, expected):
    message = error_of(tmp_path, text).splitlines()
    for line in expected:
        assert line in message


def test_marker_takes_the_model_schema(tmp_path):
    ctx = Context(file="test_x.py", base_dir=tmp_path, rootdir=tmp_path, cache_dir=tmp_path)
    cases = marker_cases((), {"model": "tiny_cnn", "shapes": [(2, 3, 32, 32)], "run_modes": ["cpu_fp32"],
                              "atol": 1e-3, "tolerances": {"outputs": {"fetch_name_0": {"rtol": 0}}}},
                         Where("test_x.py", 5), ctx)
    assert [c.case.id for c in cases] == ["tiny_cnn[2x3x32x32-cpu_fp32]"]
    assert cases[0].case.tolerances.for_tensor("fetch_name_0") == Rule(1e-3, 0.0)
    with pytest.raises(SuiteError, match=r"test_x.py:5: paddle_case: atol given twice"):
        marker_cases((), {"model": "tiny_cnn", "run_modes": ["cpu_fp32"], "atol": 1, "tolerances": {"atol": 2}},
                     Where("test_x.py", 5), ctx)
    with pytest.raises(SuiteError, match=r"paddle_case takes keyword arguments only"):
        marker_cases(("tiny_cnn",), {}, Where("test_x.py", 5), ctx)


def test_tolerance_marker_is_checked(tmp_path):
    assert marker_rule((), {"atol": 1e-3}, Where("t.py", 1)) == Rule(atol=1e-3)
    with pytest.raises(SuiteError, match="did you mean 'rtol'"):
        marker_rule((), {"rtl": 1e-3}, Where("t.py", 1))
    with pytest.raises(SuiteError, match="paddle_tolerance sets nothing"):
        marker_rule((), {}, Where("t.py", 1))
    with pytest.raises(SuiteError, match="atol must be a finite number"):
        marker_rule((), {"atol": "loose"}, Where("t.py", 1))


def test_reading_a_suite_imports_neither_paddle_nor_the_builder(tmp_path):
    (tmp_path / "nets.py").write_text("raise RuntimeError('imported')\ndef build():\n    pass\n")
    (tmp_path / "paddle_s.yaml").write_text(
        "models:\n  net: {source: 'nets:build', inputs: {x: {shape: [-1, 4]}}, run_modes: [cpu_fp32]}\n")
    script = (
        "import sys; from pathlib import Path\n"
        "from pytest_paddle_infer.cases.suite import Context, load_suite\n"
        f"p = Path({str(tmp_path)!r})\n"
        "cases = load_suite(p / 'paddle_s.yaml', Context('paddle_s.yaml', p, p, p))\n"
        "print(len(cases), 'paddle' in sys.modules, 'nets' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "False", "False"]


def load_program_suite(tmp_path: Path, text: str):
    (tmp_path / "paddle_s.yaml").write_text(text)
    return load_suite(tmp_path / "paddle_s.yaml", Context("paddle_s.yaml", tmp_path, tmp_path, tmp_path / "c"))


def test_suite_program_per_model_and_default(tmp_path):
    cases = load_program_suite(tmp_path, "defaults:\n  run_modes: [cpu_fp32]\n  program: legacy\nmodels:\n"
                                         "  tiny_cnn: {}\n  det:\n    source: tiny_detector\n    program: default\n")
    assert {c.case.model.name: c.case.program for c in cases} == {"tiny_cnn": "legacy", "det": "default"}
    cases = load_program_suite(tmp_path, "models:\n  tiny_cnn:\n    run_modes: [cpu_fp32]\n")
    assert [c.case.program for c in cases] == ["default"]


def test_suite_program_mistakes_name_the_line(tmp_path, paddle_cache):
    from helpers import exported_tiny_cnn

    with pytest.raises(SuiteError) as e:
        load_program_suite(tmp_path, "models:\n  tiny_cnn:\n    run_modes: [cpu_fp32]\n    program: Legacy\n")
    assert str(e.value).splitlines()[0] == "paddle_s.yaml:4: models.tiny_cnn.program: unknown program"
    assert "did you mean 'legacy'?" in str(e.value)
    with pytest.raises(SuiteError) as e:
        load_program_suite(tmp_path, f"models:\n  mine:\n    source: {exported_tiny_cnn(paddle_cache)}\n"
                                     "    run_modes: [cpu_fp32]\n    program: legacy\n")
    first = str(e.value).splitlines()[0]
    assert first.startswith("paddle_s.yaml:5: models.mine.program: model 'mine' is a model file on disk (")
    assert "never re-exported" in first


def test_suite_parsing_does_not_import_option_parsing():
    assert "pytest_paddle_infer.session.options" not in _loaded_after("pytest_paddle_infer.cases.suite")
