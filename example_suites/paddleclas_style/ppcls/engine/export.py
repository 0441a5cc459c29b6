"""What ``tools/export_model.py`` exports: the network wrapped for inference (softmax added),
turned into a static program with ``paddle.jit.to_static`` and saved with ``paddle.jit.save``."""
import os

import paddle
import paddle.nn as nn

from ppcls.arch import build_model


class ExportModel(nn.Layer):
    """The network as deployed: eval mode, an optional softmax on every output, and for a
    distillation model either one named sub-model's output or all of them."""

    def __init__(self, config, model):
        super().__init__()
        self.base_model = model
        self.infer_model_name = config["Arch"].get("infer_model_name")
        self.softmax = nn.Softmax(axis=-1) if config["Global"].get("infer_add_softmax", True) else None

    def forward(self, x):
        out = self.base_model(x)
        if isinstance(out, dict):
            if self.infer_model_name is not None:
                out = out[self.infer_model_name]
            elif self.softmax is not None:
                return {name: self.softmax(value) for name, value in out.items()}
        return self.softmax(out) if self.softmax is not None else out


def build_export_model(config):
    """The layer export() saves: built from the config, weights loaded when it names them."""
    model = build_model(config)
    pretrained = config["Global"].get("pretrained_model")
    if pretrained:
        model.set_state_dict(paddle.load(pretrained + ".pdparams"))
    layer = ExportModel(config, model)
    layer.eval()
    return layer


def export(config):
    layer = build_export_model(config)
    image_shape = config["Global"]["image_shape"]
    static = paddle.jit.to_static(
        layer, input_spec=[paddle.static.InputSpec(shape=[None] + image_shape, dtype="float32")])
    save_path = os.path.join(config["Global"]["save_inference_dir"], "inference")
    paddle.jit.save(static, save_path)
    return save_path
