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


def test_ladder_blames_kernels_when_nothing_is_optimized(run_pytest, paddle_cache, xdist_mode):
    """On a PIR program oneDNN bf16 runs bf16 kernels even with IR optimization off."""
    import pytest

    from pytest_paddle_infer.models.source import parse_source
    from pytest_paddle_infer.models.cache import resolve

    if resolve(parse_source("tiny_cnn"), paddle_cache).format != "pir":
        pytest.skip("this Paddle exports legacy programs only")
    result = run_pytest("--paddle-model=tiny_cnn", "--run-mode=onednn_bf16", "--paddle-atol=1e-3",
                        "--paddle-rtol=1e-3", "--paddle-localize", *xdist_mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*localization: onednn_bf16 diverges with every graph optimization off: the backend's kernels*",
    ])
