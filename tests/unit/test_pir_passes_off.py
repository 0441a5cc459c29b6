"""Optimizations really off on a PIR (.json) program, shown by the evidence of real runs on
CPU with oneDNN on: ``switch_ir_optim(False)`` alone still fuses convolutions;
``passes_off`` leaves plain ops (or unfused oneDNN ops, for the ladder's oneDNN rung)."""
from __future__ import annotations

import pytest

from pytest_paddle_infer.engine.capture import HookRouter
from pytest_paddle_infer.engine.predictor import build_predictor, run_predictor
from pytest_paddle_infer.engine.recording import recorded
from pytest_paddle_infer.models.cache import resolve
from pytest_paddle_infer.models.inputs import generate_all
from pytest_paddle_infer.models.source import parse_source
from pytest_paddle_infer.modes.run_modes import ONEDNN, call, passes_off, recipe_shows
from pytest_paddle_infer.verdict.evidence import Tally, broken_rules

ONEDNN_IR_OFF = (call("enable_mkldnn"), call("switch_ir_optim", False))


@pytest.fixture(scope="module")
def pir_model(paddle_cache):
    model = resolve(parse_source("tiny_cnn"), paddle_cache)
    if model.format != "pir":
        pytest.skip("this Paddle exports legacy programs only (no PIR: nothing to turn off)")
    return model


def evidence_of(model, calls):
    predictor = build_predictor(model, calls)
    shown = Tally("baseline", model.prog_file, model.format, recipe_shows(calls))
    inputs = generate_all([s.concrete((1, 3, 32, 32)) for s in model.inputs], 0)
    recorded(HookRouter(predictor), shown, lambda: run_predictor(predictor, inputs))()
    return shown.evidence


def test_ir_optim_off_alone_still_fuses(pir_model):
    ev = evidence_of(pir_model, ONEDNN_IR_OFF)
    assert ev.fused.get("onednn_op.fused_conv2d") == 4
    [message] = broken_rules("baseline", ev)
    assert message.startswith("baseline: its recipe turns optimizations off, yet fused ops ran: "
                              "onednn_op.fused_conv2d x4")


def test_custom_passes_leave_plain_ops(pir_model):
    ev = evidence_of(pir_model, ONEDNN_IR_OFF + passes_off("pir"))
    assert ev.fused == {} and broken_rules("baseline", ev) == []
    assert ev.ops["pd_op.conv2d"] == 4 and ev.ops["pd_op.batch_norm_"] == 4
    assert ev.onednn_tensors == 0


def test_the_onednn_rung_keeps_onednn_kernels_unfused(pir_model):
    ev = evidence_of(pir_model, ONEDNN_IR_OFF + passes_off("pir", ONEDNN))
    assert ev.fused == {} and ev.ops["onednn_op.conv2d"] == 4 and ev.onednn_tensors > 0
