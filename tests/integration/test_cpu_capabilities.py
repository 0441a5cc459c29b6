"""Run modes this CPU cannot run skip, naming it (modes/capabilities.py ``missing_for``):
onednn_bf16 on a CPU without bf16, tested on every CPU through conftest's
``cpu_without_bf16``; ``--paddle-strict`` leaves such skips skips; the header names the CPU,
the CPU modes that run here and the int8 kernel family."""
from helpers import cpu_lacks_bf16, int8_kernels_here, run_suite
from pytest_paddle_infer.host import VNNI_FAMILIES, cpu_description

PREFIX = "onednn_bf16 needs a CPU with avx512 (bf16); this one ("


def test_onednn_bf16_skips_naming_the_cpu_and_strict_keeps_the_skip(run_pytest, pytester,
                                                                      cpu_without_bf16, xdist_mode):
    # before: every onednn_bf16 case failed on such a CPU ("no bfloat16 tensor ran")
    cpu = cpu_description()["cpu"]
    run = run_suite(run_pytest, pytester, "--paddle-model=tiny_cnn", "--run-mode=onednn_bf16,cpu_fp32",
                    "--paddle-strict", "-rs", *xdist_mode)
    assert run.result.ret == 0, run.text
    cases = {key.split("::")[-1]: case for key, case in run.cases.items()}
    assert {k: c.outcome for k, c in cases.items()} == {
        "tiny_cnn[1x3x32x32-onednn_bf16]": "skipped", "tiny_cnn[1x3x32x32-cpu_fp32]": "passed"}
    message = cases["tiny_cnn[1x3x32x32-onednn_bf16]"].message
    assert f"{PREFIX}{cpu}: " in message, message
    run.result.stdout.fnmatch_lines([
        f"paddle-infer: CPU {cpu} (*): cpu_fp32, onednn_fp32, onednn_int8 run*; onednn_bf16 skips (*)",
        f"SKIPPED * {PREFIX}{cpu}: *"])


def test_the_predictor_fixture_skips_as_a_case_does(run_pytest, pytester, cpu_without_bf16):
    pytester.makepyfile(test_bf16="""
        def test_bf16(paddle_predictor):
            paddle_predictor("tiny_cnn", run_mode="onednn_bf16")
            raise AssertionError("a onednn_bf16 predictor was built: it would run fp32")
    """)
    result = run_pytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([f"SKIPPED * {PREFIX}{cpu_description()['cpu']}: *"])


def test_the_header_names_the_cpu_and_its_cpu_modes(run_pytest):
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32", "--collect-only")
    line = next(l for l in result.outlines if l.startswith("paddle-infer: CPU "))
    assert line.startswith(f"paddle-infer: CPU {cpu_description()['cpu']} ("), line
    # what runs here: bf16 as Paddle's supports_bfloat16() says (helpers.cpu_lacks_bf16 agrees)
    assert ("onednn_bf16 skips (no avx512 (bf16): Paddle would run fp32)" in line) == bool(cpu_lacks_bf16())
    family = int8_kernels_here()
    assert f"; onednn_int8's int8 kernels: {family}" in line, line
    # int8 without VNNI runs, and the header says what that costs
    assert ("(slower, and larger differences than with VNNI" in line) == (family not in VNNI_FAMILIES)
