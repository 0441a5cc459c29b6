"""--paddle-localize end to end: the precision-tracing ladder names the pass (or stage) to blame."""


def test_ladder_names_the_pass_on_a_legacy_program(run_pytest, pytester, paddle_cache, xdist_mode):
    """oneDNN bf16 on the legacy export of tiny_cnn: the ladder ends at one pass whose
    deletion alone brings the case within tolerance."""
    from pytest_paddle_infer.models.source import parse_source
    from pytest_paddle_infer.models.cache import resolve

    legacy = resolve(parse_source("tiny_cnn"), paddle_cache, legacy=True)
    result = run_pytest(f"--paddle-model={legacy.prog_file}", "--run-mode=onednn_bf16",
                        "--paddle-atol=1e-3", "--paddle-rtol=1e-3", "--paddle-localize",
                        "--junitxml=out.xml", *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*localization: deleting pass * brings onednn_bf16 within tolerance",
        "*all optimizations off*passes*onednn_bf16+no_ir_optim",
        "*memory optimization on*passes*onednn_bf16+no_ir_optim+memory_optim",
        "*as configured*fails*onednn_bf16",
        "*without 1 pass(es)*passes*delete_pass: *",
    ])
    text = result.stdout.str()
    culprit = text.split("localization: deleting pass ")[1].split(" brings")[0]
    assert f'name="paddle_culprit" value="{culprit}"' in (pytester.path / "out.xml").read_text()


def test_pir_ladder_turns_the_passes_off_for_real(run_pytest, paddle_cache, xdist_mode):
    """A PIR program ignores switch_ir_optim(False): oneDNN's passes, bf16 among them, would
    still run. The ladder's first rung turns them off for real (enable_custom_passes, keeping
    only oneDNN's kernel placement), passes, and the bisection names the bf16 pass."""
    import pytest

    from pytest_paddle_infer.models.source import parse_source
    from pytest_paddle_infer.models.cache import resolve

    if resolve(parse_source("tiny_cnn"), paddle_cache).format != "pir":
        pytest.skip("this Paddle exports legacy programs only")
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=onednn_bf16", "--paddle-atol=1e-3",
                        "--paddle-rtol=1e-3", "--paddle-localize", *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*localization: deleting pass cpu_bfloat16_placement_pass brings onednn_bf16 within tolerance",
        "*all optimizations off*passes*onednn_bf16+no_ir_optim + "
        "enable_custom_passes([[]'onednn_placement_pass'[]], True)",
        "*as configured*fails*onednn_bf16",
    ])
