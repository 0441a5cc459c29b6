"""The program under test never changes silently: every case checks its model's own program
format, with or without --paddle-intermediates; the legacy export of zoo entries and builders
only when asked for (--paddle-program=legacy, a suite's ``program`` key). The format and file
are in the header, in JUnit (``paddle_program``) and in the reports."""
import json

import pytest
from helpers import run_suite, write_suite

from pytest_paddle_infer.modes.capabilities import installed_paddle

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

PADDLE_3 = int((installed_paddle()[1] or "0").split(".")[0]) >= 3
# what zoo entries and builders export by default: PIR on Paddle 3.x, legacy before
DEFAULT_PROGRAM = "pir inference.json" if PADDLE_3 else "legacy inference.pdmodel"
FIGURES = ("paddle_max_abs", "paddle_max_rel", "paddle_mismatched", "paddle_program")


def figures(run):
    return {case: tuple(report.properties.get(k) for k in FIGURES) for case, report in run.cases.items()}


def check_figures_unchanged(run_pytest, pytester, models, modes, *extra):
    args = [*(f"--paddle-model={m}" for m in models), f"--run-mode={','.join(modes)}", *extra]
    plain = run_suite(run_pytest, pytester, *args)
    hooked = run_suite(run_pytest, pytester, *args, "--paddle-intermediates=all", "--paddle-report=out")
    assert len(plain.cases) == len(models) * len(modes)
    assert set(plain.outcomes().values()) == {"passed"}, plain.text
    assert hooked.outcomes() == plain.outcomes(), hooked.text
    assert figures(hooked) == figures(plain)
    assert {f[-1] for f in figures(plain).values()} == {DEFAULT_PROGRAM}
    summary = json.loads((pytester.path / "out" / "summary.json").read_text())["cases"]
    for case in summary:  # the tensors were really captured and compared
        assert case["intermediates"] > 0 and case["program"] == DEFAULT_PROGRAM, case
    return figures(plain)


def test_intermediates_leave_the_figures_unchanged(run_pytest, pytester, xdist_mode):
    check_figures_unchanged(run_pytest, pytester, ("tiny_cnn", "tiny_detector"),
                            ("cpu_fp32", "onednn_fp32", "onednn_fp32+threads=2"), *xdist_mode)


def test_intermediates_leave_the_bf16_figures_unchanged(run_pytest, pytester, bf16_cpu):
    """bf16 tensors in oneDNN layout, hooked: only where bf16 runs."""
    check_figures_unchanged(run_pytest, pytester, ("tiny_cnn", "tiny_detector"), ("onednn_bf16",))


def test_intermediates_of_onednn_bf16_skip_on_a_cpu_without_bf16(run_pytest, pytester, cpu_without_bf16):
    run = run_suite(run_pytest, pytester, "--paddle-model=tiny_cnn", "--run-mode=onednn_bf16",
                    "--paddle-intermediates=all", "--paddle-report=out")
    cases = {key.split("::")[-1]: case for key, case in run.cases.items()}
    assert {k: c.outcome for k, c in cases.items()} == {"tiny_cnn[1x3x32x32-onednn_bf16]": "skipped"}, run.text
    assert "onednn_bf16" in cases["tiny_cnn[1x3x32x32-onednn_bf16]"].message


@pytest.mark.resnet50
def test_intermediates_leave_the_full_size_figures_unchanged(run_pytest, pytester):
    found = check_figures_unchanged(run_pytest, pytester, ("resnet50", "mobilenet_v3_small"),
                                    ("cpu_fp32", "onednn_fp32"))
    print(found)


TRANSFORMER = '''
import paddle
import paddle.nn as nn


class Encoder(nn.Layer):
    def __init__(self, width=16, heads=2, layers=2):
        super().__init__()
        block = nn.TransformerEncoderLayer(width, heads, dim_feedforward=2 * width, dropout=0.0)
        self.encoder = nn.TransformerEncoder(block, layers)
        self.head = nn.Linear(width, 4)

    def forward(self, tokens):
        return self.head(self.encoder(tokens))


def build_encoder(**kwargs):
    paddle.seed(5)
    return Encoder(**kwargs)
'''

TRANSFORMER_SUITE = """
defaults:
  intermediates: all
models:
  encoder:
    source: transformer_nets:build_encoder
    inputs:
      tokens: {shape: [-1, 8, 16], dtype: float32}
    run_modes: [cpu_fp32, onednn_fp32]
"""


def test_intermediates_on_a_transformer_builder(run_pytest, pytester, xdist_mode):
    """Paddle 3.3.1 cannot write a TransformerEncoder as a legacy program; its own PIR program
    pairs by structure."""
    pytester.makepyfile(transformer_nets=TRANSFORMER)
    write_suite(pytester, TRANSFORMER_SUITE, "encoder.paddle.yaml")
    run = run_suite(run_pytest, pytester, "--paddle-report=out", *xdist_mode)
    assert set(run.outcomes().values()) == {"passed"} and len(run.cases) == 2, run.text
    assert {c.properties["paddle_program"] for c in run.cases.values()} == {DEFAULT_PROGRAM}
    for case in json.loads((pytester.path / "out" / "summary.json").read_text())["cases"]:
        assert case["intermediates"] >= 20, case
        if case["case"].endswith("cpu_fp32]"):  # no fusion: every tensor has its partner
            assert case["unmatched"] == 0, case
        else:
            assert case["unmatched"] <= case["intermediates"] // 4, case


def test_legacy_program_on_request(run_pytest, pytester, xdist_mode):
    run = run_suite(run_pytest, pytester, "--paddle-model=tiny_cnn", "--run-mode=cpu_fp32,onednn_fp32",
                    "--paddle-program=legacy", "--paddle-intermediates=relu_*", *xdist_mode)
    assert set(run.outcomes().values()) == {"passed"}, run.text
    assert {c.properties["paddle_program"] for c in run.cases.values()} == {"legacy inference.pdmodel"}
    run.result.stdout.fnmatch_lines(["paddle-infer: program legacy (--paddle-program): *inference.pdmodel*"])


def test_header_names_the_default_program(run_pytest):
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"paddle-infer: program default: *{DEFAULT_PROGRAM}*"])


def test_ini_key(pytester, run_pytest):
    pytester.makeini("[pytest]\npaddle_program = legacy\n")
    run = run_suite(run_pytest, pytester, "--paddle-model=tiny_cnn", "--run-mode=cpu_fp32")
    assert [c.properties["paddle_program"] for c in run.cases.values()] == ["legacy inference.pdmodel"]
    run = run_suite(run_pytest, pytester, "--paddle-model=tiny_cnn", "--run-mode=cpu_fp32",
                    "--paddle-program=default")  # the command line wins
    assert [c.properties["paddle_program"] for c in run.cases.values()] == [DEFAULT_PROGRAM]


def test_bad_program_value_is_a_usage_error(run_pytest):
    result = run_pytest("--paddle-model=tiny_cnn", "--paddle-program=pdmodel")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --paddle-program: 'pdmodel' is not one of default, legacy"])


def test_model_files_are_never_re_exported(run_pytest, pytester, paddle_cache):
    from helpers import exported_tiny_cnn

    directory = exported_tiny_cnn(paddle_cache)
    result = run_pytest(f"--paddle-model={directory}", "--paddle-program=legacy")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --paddle-program=legacy: model 'tiny_cnn_on_disk' is a model "
                                 "file on disk (*inference.json), checked as it is and never re-exported*"])


PROGRAM_SUITE = """
defaults:
  run_modes: [cpu_fp32]
  program: legacy
models:
  tiny_cnn: {}
  detector:
    source: tiny_detector
    program: default
"""


def test_suite_program_key(pytester, run_pytest, xdist_mode):
    write_suite(pytester, PROGRAM_SUITE, "programs.paddle.yaml")
    run = run_suite(run_pytest, pytester, *xdist_mode)
    assert {k.split("::")[1]: c.properties["paddle_program"] for k, c in run.cases.items()} == {
        "tiny_cnn[1x3x32x32-cpu_fp32]": "legacy inference.pdmodel",
        "detector[1x3x64x64-cpu_fp32]": DEFAULT_PROGRAM}
    run = run_suite(run_pytest, pytester, "--paddle-program=default")  # the command line wins
    assert {c.properties["paddle_program"] for c in run.cases.values()} == {DEFAULT_PROGRAM}


@pytest.mark.parametrize("text, message", [
    ("models:\n  tiny_cnn:\n    run_modes: [cpu_fp32]\n    program: pir\n",
     ["*bad.paddle.yaml:4: models.tiny_cnn.program: unknown program", "*expected: default *or legacy *", "*found:    'pir'"]),
    ("defaults:\n  program: legacy\nmodels:\n  mine:\n    source: DIR\n    run_modes: [cpu_fp32]\n",
     ["*bad.paddle.yaml:2: defaults.program: model 'mine' is a model file on disk (*inference.json), checked as "
      "it is and never re-exported*", "*fix:*program: default*"]),
])
def test_bad_suite_program(pytester, run_pytest, paddle_cache, text, message):
    from helpers import exported_tiny_cnn

    write_suite(pytester, text.replace("DIR", str(exported_tiny_cnn(paddle_cache))), "bad.paddle.yaml")
    result = run_pytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(message)
