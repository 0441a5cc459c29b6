"""localize/pir_passes.py: the passes a PIR predictor runs, read from Paddle's own lines, and
the names delete_pass takes."""
from pytest_paddle_infer.engine.localize.pir_passes import parse_pir_passes, pass_log
from pytest_paddle_infer.modes.run_modes import parse_run_mode

def passes_run(spec, model, threads):
    """The passes a recipe runs on ``model``, in order (its build must not raise)."""
    names, raised = pass_log(spec, model, threads)
    assert not raised, raised
    return names


# as Paddle 3.3.1 prints them on stderr (colour codes included), glog lines between
LOG = """\x1b[1m\x1b[35m--- Running PIR pass [add_shadow_output_after_dead_parameter_pass]\x1b[0m
\x1b[1m\x1b[35m--- Running PIR pass [conv2d_bn_onednn_fuse_pass]\x1b[0m
I1124 07:21:18.145054 22618 print_statistics.cc:50] --- detected [4] subgraphs!
\x1b[1m\x1b[35m--- Running PIR pass [matmul_add_act_fuse_pass]\x1b[0m
\x1b[1m\x1b[35m--- Running PIR pass [fc_onednn_enable_pass]\x1b[0m
\x1b[1m\x1b[35m--- Running PIR pass [matmul_add_act_fuse_pass]\x1b[0m
\x1b[1m\x1b[35m--- Running PIR pass [add_shadow_output_after_dead_parameter_pass]\x1b[0m
"""


def test_pass_names_in_first_run_order_without_repeats():
    assert parse_pir_passes(LOG) == ["add_shadow_output_after_dead_parameter_pass",
                                     "conv2d_bn_onednn_fuse_pass", "matmul_add_act_fuse_pass",
                                     "fc_onednn_enable_pass"]


def test_a_real_pir_predictor_reports_its_passes_and_delete_pass_removes_one(paddle_cache):
    """tiny_cnn's PIR export under onednn_fp32 (the bf16 passes run only on a CPU with
    bf16): oneDNN's fuse and placement passes run; a pass given to delete_pass is no longer
    among them."""
    import pytest

    from pytest_paddle_infer.models.cache import resolve
    from pytest_paddle_infer.models.source import parse_source

    model = resolve(parse_source("tiny_cnn"), paddle_cache)
    if model.format != "pir":
        pytest.skip("this Paddle exports legacy programs only")
    spec = parse_run_mode("onednn_fp32")
    ran = passes_run(spec, model, 1)
    assert {"conv2d_bn_onednn_fuse_pass", "conv_activation_mkldnn_fuse_pass", "onednn_placement_pass"} <= set(ran)
    fewer = passes_run(parse_run_mode("onednn_fp32+delete_pass=conv2d_bn_onednn_fuse_pass"), model, 1)
    assert "conv2d_bn_onednn_fuse_pass" not in fewer and "onednn_placement_pass" in fewer


# -- names as Paddle logs them and as delete_pass takes them ---------------------------------


def _model(paddle_cache, legacy=False):
    import pytest

    from pytest_paddle_infer.models.cache import resolve
    from pytest_paddle_infer.models.source import parse_source

    model = resolve(parse_source("tiny_cnn"), paddle_cache, legacy=legacy)
    if not legacy and model.format != "pir":
        pytest.skip("this Paddle exports legacy programs only")
    return model


def test_a_logged_pass_name_maps_to_the_name_delete_pass_takes(paddle_cache):
    """Paddle 3.3.1 logs conv_activation_onednn_fuse_pass as conv_activation_mkldnn_fuse_pass
    (and deleting the logged name keeps the pass); the mapping asks Paddle's registry, so a
    pass logged under its own name stays as it is, and one no name deletes is None."""
    from pytest_paddle_infer.engine.localize.pir_passes import deletable_name, deletable_names

    model = _model(paddle_cache)
    logged = passes_run(parse_run_mode("onednn_fp32"), model, 1)
    names, kept = deletable_names(logged, "pir")
    assert "conv_activation_onednn_fuse_pass" in names and "conv_activation_mkldnn_fuse_pass" not in names
    assert "conv2d_bn_onednn_fuse_pass" in names and len(names) + len(kept) >= len(logged) - 1
    assert deletable_name("conv2d_bn_onednn_fuse_pass", "pir") == "conv2d_bn_onednn_fuse_pass"
    assert deletable_name("no_such_fuse_pass", "pir") is None
    # what delete_pass does with each name, on a real predictor
    for name, gone in (("conv_activation_onednn_fuse_pass", True), ("conv_activation_mkldnn_fuse_pass", False)):
        ran = passes_run(parse_run_mode(f"onednn_fp32+delete_pass={name}"), model, 1)
        assert ("conv_activation_mkldnn_fuse_pass" not in ran) is gone, name


def test_a_delete_pass_paddle_does_not_know_is_an_error_with_the_name_it_knows(paddle_cache):
    """Per program format: the logged spelling gets the registered one, a misspelt name its
    close matches, a legacy pass on a PIR program says so; known names pass."""
    from pytest_paddle_infer.engine.localize.pir_passes import delete_pass_problem

    pir, legacy = _model(paddle_cache), _model(paddle_cache, legacy=True)
    problem = lambda text, model: delete_pass_problem(parse_run_mode(text), model, 1)  # noqa: E731
    said = problem("onednn_fp32+delete_pass=conv_activation_mkldnn_fuse_pass", pir)
    assert said.splitlines()[0].startswith("onednn_fp32+delete_pass=conv_activation_mkldnn_fuse_pass: Paddle ")
    assert said.splitlines()[0].endswith(
        " has no pass conv_activation_mkldnn_fuse_pass for a PIR (.json) program, so deleting it would change nothing; "
        "Paddle logs pass conv_activation_onednn_fuse_pass as conv_activation_mkldnn_fuse_pass: use "
        "+delete_pass=conv_activation_onednn_fuse_pass")
    assert "list the passes this run mode runs with: python -c " in said and "Running PIR pass" in said
    assert "close matches: conv_activation_onednn_fuse_pass" in problem(
        "onednn_fp32+delete_pass=conv_activation_onednn_fuse_pas", pir)
    assert "; conv_bn_fuse_pass is a pass of legacy (.pdmodel) programs;" in problem(
        "onednn_fp32+delete_pass=conv_bn_fuse_pass", pir)
    assert "close matches: conv_bn_fuse_pass" in problem("onednn_fp32+delete_pass=conv_bn_fuse_pas", legacy)
    assert "this Paddle names it conv_activation_onednn_fuse_pass" in problem(
        "onednn_fp32+delete_pass=conv_activation_mkldnn_fuse_pass", legacy)
    assert "print(config.pass_builder().all_passes())" in problem("cpu_fp32+delete_pass=nope_pass", legacy)
    assert problem("onednn_fp32+delete_pass=conv_activation_onednn_fuse_pass+delete_pass=conv2d_bn_onednn_fuse_pass", pir) is None
    assert problem("onednn_fp32+delete_pass=conv_bn_fuse_pass", legacy) is None
    assert problem("onednn_fp32", pir) is None


def test_a_listing_that_stops_inside_a_pass_is_listed_again_without_it(paddle_cache):
    """list_passes on a scripted log: the build stops (crash or raise) in the pass logged as
    conv_activation_mkldnn_fuse_pass until conv_activation_onednn_fuse_pass is deleted; the
    passes after it are listed too, by their delete_pass names, those of optimizations off
    left out."""
    from pytest_paddle_infer.engine.localize.pir_passes import list_passes
    from pytest_paddle_infer.modes.run_modes import call

    order = ["onednn_placement_pass", "conv2d_bn_onednn_fuse_pass", "conv_activation_mkldnn_fuse_pass",
             "conv_concat_activation_mkldnn_fuse_pass", "inplace_pass"]
    asked = []

    def log(spec, extra=()):
        asked.append((spec.delete_passes, tuple(extra)))
        if extra:  # optimizations off
            return ["onednn_placement_pass", "inplace_pass"], ""
        if "conv_activation_onednn_fuse_pass" in spec.delete_passes:
            return [p for p in order if p != "conv_activation_mkldnn_fuse_pass"], ""
        return order[:3], "crashed (the process was killed by SIGSEGV)"

    model = _model(paddle_cache)
    off = (call("enable_custom_passes", ["onednn_placement_pass"], True),)
    listed = list_passes(parse_run_mode("onednn_fp32"), model, 1, off, log)
    assert list(listed) == ["conv2d_bn_onednn_fuse_pass", "conv_activation_onednn_fuse_pass",
                            "conv_concat_activation_onednn_fuse_pass"]
    assert not listed.problem and "Running PIR pass" in listed.by_hand
    assert listed.stopped_in == ["conv_activation_onednn_fuse_pass"]  # the first suspect
    assert asked == [((), off), ((), ()), (("conv_activation_onednn_fuse_pass",), ())]
    # nothing named before the crash: the list could not be read, and says why
    empty = list_passes(parse_run_mode("onednn_fp32"), model, 1, off,
                        lambda spec, extra=(): ([], "") if extra else ([], "crashed (the process was killed by SIGSEGV)"))
    assert list(empty) == [] and empty.problem == (
        "building the candidate to list them crashed (the process was killed by SIGSEGV) before "
        "Paddle named any pass")
    # a pass no delete_pass name removes stops the listing there
    stuck = list_passes(parse_run_mode("onednn_fp32"), model, 1, (),
                        lambda spec, extra=(): (["conv2d_bn_onednn_fuse_pass", "remove_shadow_feed_pass"],
                                                "raised: RuntimeError: (NotFound) ..."))
    assert list(stuck) == ["conv2d_bn_onednn_fuse_pass"]
    assert "in pass remove_shadow_feed_pass, which no delete_pass name removes" in stuck.problem
