"""localize/op_blame.py: op types named as the Config calls that take them spell them."""
from pytest_paddle_infer.engine.localize.op_blame import plain_op_type


def test_op_type_names_as_config_calls_spell_them():
    assert plain_op_type("pd_op.conv2d") == "conv2d"
    assert plain_op_type("onednn_op.fused_conv2d:out") == "fused_conv2d"
    assert plain_op_type("relu") == "relu"
