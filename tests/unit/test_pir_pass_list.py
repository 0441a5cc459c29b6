"""localize/pir_passes.py: the passes a PIR predictor runs, read from Paddle's own lines, and
the +fp32_op recipe of onednn_bf16 (set_bfloat16_op with every other op type)."""
from pytest_paddle_infer.execute.predictor import _resolve_arg, apply_recipe
from pytest_paddle_infer.localize.pir_passes import parse_pir_passes, passes_run
from pytest_paddle_infer.modes.run_modes import EveryOpTypeExcept, parse_run_mode, recipe

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
    """tiny_cnn's PIR export under onednn_bf16: oneDNN's fuse passes and the bf16 passes run;
    a pass given to delete_pass is no longer among them."""
    import pytest

    from pytest_paddle_infer.models.cache import resolve
    from pytest_paddle_infer.models.source import parse_source

    model = resolve(parse_source("tiny_cnn"), paddle_cache)
    if model.format != "pir":
        pytest.skip("this Paddle exports legacy programs only")
    spec = parse_run_mode("onednn_bf16")
    ran = passes_run(spec, model, 1)
    assert {"conv2d_bn_onednn_fuse_pass", "cpu_bfloat16_placement_pass", "onednn_placement_pass"} <= set(ran)
    fewer = passes_run(parse_run_mode("onednn_bf16+delete_pass=conv2d_bn_onednn_fuse_pass"), model, 1)
    assert "conv2d_bn_onednn_fuse_pass" not in fewer and "cpu_bfloat16_placement_pass" in fewer


def test_fp32_op_on_onednn_bf16_is_every_other_op_type_in_bf16():
    from paddle.base import core

    calls = recipe(parse_run_mode("onednn_bf16+fp32_op=fused_conv2d"))
    (bf16,) = [c for c in calls if c.method == "set_bfloat16_op"]
    (arg,) = bf16.args
    assert isinstance(arg, EveryOpTypeExcept) and str(bf16) == \
        "set_bfloat16_op(<every op type except {'fused_conv2d'}>)"
    resolved = _resolve_arg(arg)
    assert "fused_conv2d" not in resolved and {"pool2d", "fc", "conv2d"} <= resolved
    assert len(resolved) == len(set(core.get_all_op_names())) - 1
    from paddle import inference

    apply_recipe(inference.Config(), calls)  # the installed binding takes it


def test_fp32_op_on_a_pir_bf16_program_is_an_error_not_a_silent_no_op():
    from pytest_paddle_infer.modes.run_modes import fp32_ops_problem

    spec = parse_run_mode("onednn_bf16+fp32_op=fused_conv2d")
    assert "legacy programs only" in fp32_ops_problem(spec, "pir")
    assert fp32_ops_problem(spec, "legacy") is None
    assert fp32_ops_problem(parse_run_mode("gpu_fp16+fp32_op=softmax"), "pir") is None
    assert fp32_ops_problem(parse_run_mode("onednn_bf16"), "pir") is None
