"""modes/build_plan.py: the remarks a PIR TensorRT plan carries into the case's notes. The
converted program runs on a Paddle 3.x GPU predictor (memory_optim is not acted on there, as
on any GPU mode); the matrix_multiply renaming is the legacy subgraph pass's and is not said."""
from pytest_paddle_infer.models.inputs import InputSpec
from pytest_paddle_infer.models.source import ModelFiles
from pytest_paddle_infer.engine import build_plan as bp
from pytest_paddle_infer.engine.pir_tensorrt import PIR_PATH
from pytest_paddle_infer.modes.run_modes import parse_run_mode

X = InputSpec("x", (1, 3, 32, 32))
PIR = ModelFiles("m", "/models/m/inference.json", "/models/m/inference.pdiparams", (X,))


def plan(text):
    return bp.candidate_plan(parse_run_mode(text), PIR, [X], optim_root="/o")


def test_a_pir_tensorrt_plan_remarks_memory_optim():
    p = plan("trt_fp16+memory_optim")
    assert p.path == PIR_PATH
    assert any(r.startswith("memory_optim: on Paddle 3.x GPU") for r in p.remarks), p.remarks


def test_a_pir_tensorrt_plan_does_not_claim_the_legacy_matrix_multiply_renaming():
    p = plan("trt_fp16+dynamic_shape=tuned+disable_trt_op=matmul_v2")
    assert p.path == PIR_PATH and not any("matrix_multiply" in r for r in p.remarks), p.remarks
    disabled = [c for c in p.steps[-2].calls if c.name == "disable_ops"]
    assert [list(c.args[0]) for c in disabled] == [["pd_op.matmul_v2"]]
