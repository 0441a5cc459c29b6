"""--paddle-localize end to end: the precision-tracing ladder names the pass or op types to
blame and a run mode that a trial saw within tolerance, on both program formats; a crashing
candidate is localized like a diverging one."""
import re

import pytest

from helpers import single_culprit_bound

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)


def _suggested(text: str) -> str:
    return re.search(r"suggested run mode: (\S+)", text).group(1)


def test_legacy_bf16_names_op_types_to_keep_in_fp32(run_pytest, pytester, paddle_cache, xdist_mode,
                                                    bf16_cpu):
    """oneDNN bf16 on the legacy export of tiny_cnn: the op types whose bf16 kernels break
    the tolerance (set_bfloat16_op with every other type), the run mode that keeps them in
    fp32, and the pass whose deletion also helps; the suggested run mode, run as a case of
    its own, passes. bf16 itself (keeping op types in fp32 is onednn_bf16's switch on the
    CPU): only where bf16 runs. The legacy ladder, its report and its checked fix on every
    CPU: test_legacy_ladder_names_the_pass_and_reports_it."""
    from pytest_paddle_infer.models.source import parse_source
    from pytest_paddle_infer.models.cache import resolve

    legacy = resolve(parse_source("tiny_cnn"), paddle_cache, legacy=True)
    tolerance = ("--paddle-atol=1e-3", "--paddle-rtol=1e-3")
    result = run_pytest(f"--paddle-model={legacy.prog_file}", "--run-mode=onednn_bf16", *tolerance,
                        "--paddle-localize", "--junitxml=out.xml", "--paddle-report=report",
                        *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*localization: op type* kept in fp32 bring* onednn_bf16 within tolerance* builds; "
        "1 more to list passes and op types)",
        "*suggested run mode: onednn_bf16+fp32_op=*(checked: a trial of it passes)",
        "*all optimizations off*passes*onednn_bf16+no_ir_optim",
        "*as configured*fails*onednn_bf16",
        "*op type(s) kept in fp32*passes*set_bfloat16_op (every other op type): *",
    ])
    text = result.stdout.str()
    fix = _suggested(text)
    builds = int(re.search(r"localization: .* \((\d+) builds", text).group(1))
    junit = (pytester.path / "out.xml").read_text()
    culprit = re.search(r'name="paddle_culprit" value="([^"]+)"', junit).group(1)
    assert fix == "onednn_bf16+" + "+".join(f"fp32_op={op}" for op in culprit.split(", "))
    assert f'name="paddle_localization_builds" value="{builds}"' in junit
    import json

    (case,) = json.loads((pytester.path / "report" / "summary.json").read_text())["cases"]
    assert case["localization_builds"] == builds and case["culprit"] == culprit
    assert case["suggested_run_mode"] == fix
    assert f'name="paddle_suggested_run_mode" value="{fix}"' in junit
    again = run_pytest(f"--paddle-model={legacy.prog_file}", f"--run-mode={fix}", *tolerance)
    again.assert_outcomes(passed=1)


def test_legacy_ladder_names_the_pass_and_reports_it(run_pytest, pytester, paddle_cache, xdist_mode):
    """The legacy ladder on a divergence every CPU has: pass_divergence's legacy export under
    onednn_fp32 at its ATOL (rtol 0) is within it with every optimization off and with memory
    optimization (max abs 0 on AVX2), fails as configured, and the search over the pass builder's
    passes names conv_bn_fuse_pass, which folds the batch norms into the convolutions'
    weights. The verdict, the culprit, the build count and the checked run mode reach JUnit
    and summary.json, and that run mode, run as a case of its own, passes."""
    import json

    import pass_divergence

    model = pass_divergence.exported(paddle_cache, legacy=True)
    culprit = pass_divergence.FOLD_PASS["legacy"]
    fix = f"onednn_fp32+delete_pass={culprit}"
    tolerance = pass_divergence.TOLERANCE
    result = run_pytest(f"--paddle-model={model.prog_file}", "--run-mode=onednn_fp32", *tolerance,
                        "--paddle-localize", "--junitxml=out.xml", "--paddle-report=report",
                        *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*localization: deleting pass {culprit} brings onednn_fp32 within tolerance (* builds)",
        f"*suggested run mode: {fix}  (checked: a trial of it passes)",
        "*all optimizations off*passes (max abs *)  onednn_fp32+no_ir_optim",
        "*memory optimization on*passes (max abs *)  onednn_fp32+no_ir_optim+memory_optim",
        "*as configured*fails*onednn_fp32",
        f"*without 1 pass(es)*passes (max abs *)  delete_pass: {culprit}",
    ])
    text = result.stdout.str().split("short test summary info")[0]
    assert _suggested(text) == fix
    builds = int(re.search(r"localization: .* \((\d+) builds\)", text).group(1))
    assert builds <= single_culprit_bound(int(re.search(r"without (\d+) pass\(es\)", text).group(1))) + 3
    junit = (pytester.path / "out.xml").read_text()
    assert f'name="paddle_culprit" value="{culprit}"' in junit
    assert f'name="paddle_localization_builds" value="{builds}"' in junit
    assert f'name="paddle_suggested_run_mode" value="{fix}"' in junit
    (case,) = json.loads((pytester.path / "report" / "summary.json").read_text())["cases"]
    assert case["localization_builds"] == builds and case["culprit"] == culprit
    assert case["suggested_run_mode"] == fix
    again = run_pytest(f"--paddle-model={model.prog_file}", f"--run-mode={fix}", *tolerance)
    again.assert_outcomes(passed=1)


def test_legacy_int8_ladder_names_the_passes_that_fix_it_together(run_pytest, pytester, xdist_mode):
    """onednn_int8 on the zoo's quantized tiny_cnn_int8 (a legacy program) at 1e-3, which every
    CPU with int8 kernels fails (seed 0: max abs 0.53 on avx2 without VNNI, 0.013 with AMX:
    the README, int8 on the CPU). With every optimization off it matches (max abs 0: the fake
    quantization on fp32 kernels); the search finds the two passes of the int8 rewrite that
    only fix it together (deleting quant_dequant_onednn_pass alone raises, deleting
    compute_propagate_scales_onednn_pass alone stays int8 and fails): a 1-minimal set of two,
    found through trials that Paddle cannot build. Every failing trial is int8 (0.01 or more
    on either kernel family), every passing one fp32 (1e-7 or less): the same search on every
    CPU."""
    passes = ["quant_dequant_onednn_pass", "compute_propagate_scales_onednn_pass"]
    fix = "onednn_int8+" + "+".join(f"delete_pass={p}" for p in passes)
    result = run_pytest("--paddle-model=tiny_cnn_int8", "--run-mode=onednn_int8", "--paddle-atol=1e-3",
                        "--paddle-rtol=1e-3", "--paddle-localize", "--junitxml=out.xml", *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*localization: deleting passes {', '.join(passes)} brings onednn_int8 within tolerance, "
        "but those passes are what puts onednn_int8 in int8: without them the mode computes fp32, "
        "so the precision itself is to blame (* builds)",
        "*all optimizations off*passes (max abs 0)  onednn_int8+no_ir_optim",
        "*as configured*fails*onednn_int8",
        f"*without 1 pass(es)*raised  delete_pass: {passes[0]}  raised: building the predictor*",
        f"*without 1 pass(es)*fails (max abs *)  delete_pass: {passes[1]}",
        "*without 2 pass(es)*passes (max abs *)  delete_pass: " + ", ".join(passes),
    ])
    text = result.stdout.str().split("short test summary info")[0]
    # no run mode is suggested: deleting the int8 rewrite runs fp32 kernels, which
    # onednn_int8's evidence check fails (a trial judges outputs only)
    assert "suggested run mode" not in text and fix not in text.split("as configured")[0]
    junit = (pytester.path / "out.xml").read_text()
    assert f'name="paddle_culprit" value="{", ".join(passes)}"' in junit


def test_pir_ladder_searches_the_passes_paddle_ran(run_pytest, paddle_cache, xdist_mode):
    """A PIR program ignores switch_ir_optim(False): the first rung turns its passes off for
    real (enable_custom_passes, keeping oneDNN's placement) and passes; the search runs over
    the PIR passes Paddle reported running beyond those, and names the one that makes the
    divergence. pass_divergence under onednn_fp32 at its ATOL (rtol 0), on every CPU: within
    it with the passes off (max abs 0 on AVX2, an ulp on avx512), and
    conv2d_bn_onednn_fuse_pass, folding the batch norm into the convolution's weights, puts
    it out by far; the suggested run mode passes as a case of its own."""
    import pass_divergence

    model = pass_divergence.exported(paddle_cache)
    if model.format != "pir":
        pytest.skip("this Paddle exports legacy programs only")
    culprit = pass_divergence.FOLD_PASS["pir"]
    tolerance = pass_divergence.TOLERANCE
    result = run_pytest(f"--paddle-model={model.prog_file}", "--run-mode=onednn_fp32", *tolerance,
                        "--paddle-localize", *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*localization: deleting pass {culprit} brings onednn_fp32 within tolerance "
        "(* builds; 2 more to list passes and op types)",
        f"*suggested run mode: onednn_fp32+delete_pass={culprit}  (checked: a trial of it passes)",
        "*all optimizations off*passes (max abs *)  onednn_fp32+no_ir_optim + "
        "enable_custom_passes([[]'onednn_placement_pass'[]], True)",
        "*memory optimization on*not tried*onednn_fp32+no_ir_optim+memory_optim*not tried: *",
        "*as configured*fails*onednn_fp32",
        f"*without 1 pass(es)*passes*delete_pass: {culprit}",
    ])
    # the failure section only: under CI pytest repeats the whole message in the short summary
    text = result.stdout.str().split("short test summary info")[0]
    first = re.search(r"without (\d+) pass\(es\)", text).group(1)
    assert 20 < int(first) < 43  # PIR's own passes, not the legacy builder's 52 nor the basics
    search = len(re.findall(r"without \d+ pass\(es\)", text))
    assert search <= 2 * 6 + 2  # one culprit among < 64 passes
    again = run_pytest(f"--paddle-model={model.prog_file}", f"--run-mode={_suggested(text)}", *tolerance)
    again.assert_outcomes(passed=1)


def test_pir_bf16_ladder_names_the_placement_pass_and_why_no_op_types(run_pytest, paddle_cache,
                                                                       xdist_mode, bf16_cpu):
    """onednn_bf16 on a PIR program (tiny_cnn at 1e-3): the pass search names the bf16
    placement pass, and the verdict says why no op types (PIR's bf16 placement takes no op
    list). bf16 itself: only where bf16 runs; the PIR pass search on every CPU:
    test_pir_ladder_searches_the_passes_paddle_ran."""
    from pytest_paddle_infer.models.source import parse_source
    from pytest_paddle_infer.models.cache import resolve

    if resolve(parse_source("tiny_cnn"), paddle_cache).format != "pir":
        pytest.skip("this Paddle exports legacy programs only")
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=onednn_bf16", "--paddle-atol=1e-3",
                        "--paddle-rtol=1e-3", "--paddle-localize", *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*localization: deleting pass cpu_bfloat16_placement_pass brings onednn_bf16 within "
        "tolerance, but that pass is what puts onednn_bf16 in bf16*precision itself is to blame "
        "(op types cannot be kept in fp32 on a PIR program*) (* builds; 2 more to list "
        "passes and op types)",
        "*all optimizations off*passes*onednn_bf16+no_ir_optim + "
        "enable_custom_passes([[]'onednn_placement_pass'[]], True)",
        "*memory optimization on*not tried*onednn_bf16+no_ir_optim+memory_optim*not tried: *",
        "*as configured*fails*onednn_bf16",
        "*without 1 pass(es)*passes*delete_pass: cpu_bfloat16_placement_pass",
    ])
    # the failure section only: under CI pytest repeats the whole message in the short summary
    text = result.stdout.str().split("short test summary info")[0]
    first = re.search(r"without (\d+) pass\(es\)", text).group(1)
    assert 20 < int(first) < 43  # PIR's own passes, not the legacy builder's 52 nor the basics
    search = len(re.findall(r"without \d+ pass\(es\)", text))
    assert search <= 2 * 6 + 2  # one culprit among < 64 passes


def test_a_crashing_candidate_is_localized_to_the_pass(run_pytest, monkeypatch, xdist_mode):
    """Fault injection (testing only): the candidate's build dies by SIGSEGV whenever its
    recipe runs conv2d_bn_onednn_fuse_pass, as a crash inside that pass would. The case
    errors with the crash, and the ladder, its trials in a child process, records each
    crashing trial and names the pass whose deletion runs."""
    from pytest_paddle_infer.engine.service import FAULT_ENV, FAULT_PASS_ENV

    monkeypatch.setenv(FAULT_ENV, "building the candidate:SIGSEGV:onednn_fp32")
    monkeypatch.setenv(FAULT_PASS_ENV, "conv2d_bn_onednn_fuse_pass")
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=onednn_fp32", "--paddle-localize",
                        *xdist_mode)
    result.assert_outcomes(errors=1)  # the candidate is built at setup
    result.stdout.fnmatch_lines([
        "*was killed by SIGSEGV while building the candidate*",
        "*localization: deleting pass conv2d_bn_onednn_fuse_pass brings onednn_fp32 within "
        "tolerance (* builds*)",
        "*suggested run mode: onednn_fp32+delete_pass=conv2d_bn_onednn_fuse_pass*",
        "*as configured*crashed*crashed: the trial's process was killed by SIGSEGV*",
    ])


def test_a_crashing_candidate_of_a_legacy_program_is_localized_to_the_pass(run_pytest, monkeypatch):
    """The same fault injection on the legacy export, whose pass list is the pass builder's:
    the crash follows conv_bn_fuse_pass and the ladder names it."""
    from pytest_paddle_infer.engine.service import FAULT_ENV, FAULT_PASS_ENV

    monkeypatch.setenv(FAULT_ENV, "building the candidate:SIGSEGV:onednn_fp32")
    monkeypatch.setenv(FAULT_PASS_ENV, "conv_bn_fuse_pass")
    result = run_pytest("--paddle-model=tiny_cnn", "--paddle-program=legacy",
                        "--run-mode=onednn_fp32", "--paddle-localize")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*was killed by SIGSEGV while building the candidate*",
        "*localization: deleting pass conv_bn_fuse_pass brings onednn_fp32 within tolerance (* builds)",
        "*memory optimization on*passes*onednn_fp32+no_ir_optim+memory_optim",
        "*as configured*crashed*",
    ])


# Small builders Paddle 3.3.1 cannot build or run under oneDNN on a PIR program: a
# convolution followed by leaky_relu kills the process in conv_activation_onednn_fuse_pass
# (logged as conv_activation_mkldnn_fuse_pass); one whose output feeds a concat and relu
# raises in conv_concat_activation_onednn_fuse_pass; an interpolate raises in oneDNN's
# kernel with or without passes. None of these fail with every optimization off but the last.
PADDLE_FAILURES = '''
import paddle
import paddle.nn as nn
import paddle.nn.functional as F


def build_conv_leaky(channels=8):
    paddle.seed(1)
    return nn.Sequential(nn.Conv2D(3, channels, 3, padding=1), nn.LeakyReLU(0.1),
                         nn.Conv2D(channels, channels, 3, padding=1), nn.LeakyReLU(0.1))


class ConcatRelu(nn.Layer):
    def __init__(self, channels):
        super().__init__()
        self.a = nn.Conv2D(3, channels, 3, padding=1)
        self.b = nn.Conv2D(3, channels, 3, padding=1)

    def forward(self, x):
        return F.relu(paddle.concat([self.a(x), self.b(x)], axis=1))


def build_concat_relu(channels=8):
    paddle.seed(1)
    return ConcatRelu(channels)


class Upsample(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 8, 3, padding=1, stride=2)

    def forward(self, x):
        return F.interpolate(self.conv(x), scale_factor=2, mode="nearest")


def build_upsample():
    paddle.seed(1)
    return Upsample()
'''

PADDLE_FAILURES_SUITE = """
defaults:
  run_modes: [onednn_fp32]
models:
  conv_leaky:
    source: paddle_failures:build_conv_leaky
    inputs: {x: {shape: [-1, 3, -1, -1]}}
    shapes: [[1, 3, 16, 16]]
  concat_relu:
    source: paddle_failures:build_concat_relu
    inputs: {x: {shape: [-1, 3, -1, -1]}}
    shapes: [[1, 3, 16, 16]]
  upsample:
    source: paddle_failures:build_upsample
    inputs: {x: {shape: [-1, 3, -1, -1]}}
    shapes: [[1, 3, 16, 16]]
  tiny_cnn:
    run_modes: [onednn_fp32+delete_pass=conv_activation_mkldnn_fuse_pass]
"""


def test_real_crashes_and_paddle_errors_are_localized_without_contradicting_the_rungs(
        run_pytest, pytester, paddle_cache, xdist_mode):
    """Paddle's own failures, no injection. With every optimization off passing, the ladder
    names the pass the candidate's build dies or raises in, by the name delete_pass takes,
    and the suggested run mode passes; an error that stays with every optimization off is
    the kernels'; a delete_pass of the name Paddle logs (a silent no-op in Paddle) errors
    the case with the name to use."""
    from helpers import run_suite, write_suite

    from pytest_paddle_infer.host import cpu_description
    from pytest_paddle_infer.models.cache import resolve
    from pytest_paddle_infer.models.source import parse_source

    if resolve(parse_source("tiny_cnn"), paddle_cache).format != "pir":
        pytest.skip("this Paddle exports legacy programs only")
    pytester.makepyfile(paddle_failures=PADDLE_FAILURES)
    write_suite(pytester, PADDLE_FAILURES_SUITE, "failures.paddle.yaml")
    run = run_suite(run_pytest, pytester, "--paddle-localize", *xdist_mode)
    case = lambda name: next(c for k, c in run.cases.items() if f"::{name}[" in k)  # noqa: E731

    raised = case("concat_relu")
    assert raised.outcome == "error", run.text
    assert "RuntimeError: (NotFound) Not found attr" in raised.message
    assert "--paddle-localize: not run" not in raised.message
    assert ("localization: deleting pass conv_concat_activation_onednn_fuse_pass brings onednn_fp32 "
            "within tolerance") in raised.message
    assert re.search(r"all optimizations off +passes", raised.message)
    assert re.search(r"as configured +raised +onednn_fp32", raised.message)
    assert raised.properties["paddle_culprit"] == "conv_concat_activation_onednn_fuse_pass"
    assert "pruning: not done: the candidate crashed or raised before any output was compared" in raised.message

    kernels = case("upsample")
    # raised while running, not building: JUnit records an error in a test's call as a failure
    assert kernels.outcome == "failed" and "ConvertPirAttribute2RuntimeAttribute" in kernels.message
    assert ("localization: onednn_fp32 errors with every graph optimization off: the backend's "
            "kernels, not a pass, make the difference") in kernels.message
    assert kernels.properties["paddle_culprit"] == "kernels"

    unknown = case("tiny_cnn")
    assert unknown.outcome == "error"
    assert ("has no pass conv_activation_mkldnn_fuse_pass for a PIR (.json) program, so deleting it "
            "would change nothing; Paddle logs pass conv_activation_onednn_fuse_pass as "
            "conv_activation_mkldnn_fuse_pass: use +delete_pass=conv_activation_onednn_fuse_pass") in unknown.message

    crashed = case("conv_leaky")
    if crashed.outcome == "passed":  # the crash is Paddle's; where it does not happen, say where
        cpu = cpu_description()
        pytest.skip(f"Paddle builds conv_leaky under onednn_fp32 on this CPU ({cpu['cpu']}: "
                    f"{cpu['cpu_flags']}): no crash to localize")
    assert "the executor process was killed by SIGSEGV while building the candidate" in crashed.message
    assert ("localization: deleting pass conv_activation_onednn_fuse_pass brings onednn_fp32 within "
            "tolerance") in crashed.message
    assert re.search(r"all optimizations off +passes", crashed.message)
    assert re.search(r"as configured +crashed", crashed.message)
    assert "no set of IR passes explains it" not in crashed.message
    assert crashed.properties["paddle_culprit"] == "conv_activation_onednn_fuse_pass"
    fix = crashed.properties["paddle_suggested_run_mode"]
    assert fix == "onednn_fp32+delete_pass=conv_activation_onednn_fuse_pass"
    write_suite(pytester, PADDLE_FAILURES_SUITE.split("  concat_relu:")[0].replace(
        "[onednn_fp32]", f"[{fix}]"), "failures.paddle.yaml")
    again = run_suite(run_pytest, pytester, "failures.paddle.yaml")
    assert again.outcomes() and set(again.outcomes().values()) == {"passed"}, again.text
