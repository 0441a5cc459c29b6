"""The built-in model zoo: architectures with deterministic weights, built offline.

``calibrate_batchnorm`` re-estimates BatchNorm statistics on seeded inputs: left at mean 0 /
variance 1, ResNet50's activations grow to ~3e3 (a trained model's are ~1-10), and tolerances
would not mean what they mean on real models. Builders import paddle; this module does not."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable, Mapping, Tuple

from .inputs import InputSpec, generate

WEIGHT_SEED = 2024
ZOO_VERSION = "1"  # bump when a builder changes, so cached exports are rebuilt


@dataclass(frozen=True)
class ZooEntry:
    name: str
    inputs: Tuple[InputSpec, ...]  # in the model's declared order
    builder: str  # "module:function" returning an eval-mode paddle.nn.Layer
    summary: str
    quantized: bool = False  # quantize/dequantize ops: a legacy export, int8 weights (quantized.py)


def _image(name: str, size: int) -> InputSpec:
    return InputSpec(name, (-1, 3, size, size), "float32", low=-1.0, high=1.0)


_QUANTIZED = __name__.rsplit(".", 1)[0] + ".quantized"
ZOO: Mapping[str, ZooEntry] = {e.name: e for e in (
    ZooEntry("resnet50", (_image("x", 224),), f"{__name__}:build_resnet50",
             "paddle.vision ResNet50, 1000 classes"),
    ZooEntry("mobilenet_v3_small", (_image("x", 224),), f"{__name__}:build_mobilenet_v3_small",
             "paddle.vision MobileNetV3-small, 1000 classes"),
    ZooEntry("tiny_cnn", (_image("x", 32),), f"{__name__}:build_tiny_cnn",
             "4 conv-BN-ReLU blocks and a classifier: fast, for tests"),
    ZooEntry("tiny_detector", (InputSpec("im_shape", (-1, 2), "int32", low=32, high=64), _image("image", 64),
                               InputSpec("scale_factor", (-1, 2), "float32", low=0.5, high=2.0)),
             f"{__name__}:build_tiny_detector",
             "detection-style inputs (im_shape int32, image, scale_factor) and two heads"),
    # quantized: legacy program only (quantized.py)
    ZooEntry("tiny_cnn_int8", (_image("x", 32),), f"{_QUANTIZED}:build_tiny_cnn_int8",
             "tiny_cnn post-training quantized (paddle.quantization, int8)", quantized=True),
    ZooEntry("resnet18_int8", (_image("x", 224),), f"{_QUANTIZED}:build_resnet18_int8",
             "paddle.vision ResNet18 post-training quantized (paddle.quantization, int8)", quantized=True),
)}


def calibrate_batchnorm(layer, inputs: Tuple[InputSpec, ...], batch: int = 8, seed: int = 7):
    """One train-mode forward with momentum 0 sets BatchNorm statistics from seeded inputs."""
    import paddle

    for sub in layer.sublayers():
        if isinstance(sub, paddle.nn.layer.norm._BatchNormBase):
            sub._momentum = 0.0
    layer.train()
    feed = [paddle.to_tensor(generate(s.concrete((batch,) + s.shape[1:]), seed)) for s in inputs]
    # a train-mode BatchNorm warns that it tracks global statistics: that is what is wanted
    with paddle.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="When training, we now always track global mean")
        layer(*feed)
    layer.eval()
    return layer


def _seeded(build: Callable[[], object], entry: str):
    import paddle

    paddle.seed(WEIGHT_SEED)
    return calibrate_batchnorm(build(), ZOO[entry].inputs)


def build_resnet50():
    from paddle.vision.models import resnet50

    return _seeded(lambda: resnet50(pretrained=False), "resnet50")


def build_mobilenet_v3_small():
    from paddle.vision.models import mobilenet_v3_small

    return _seeded(lambda: mobilenet_v3_small(pretrained=False), "mobilenet_v3_small")


def build_tiny_cnn():
    import paddle.nn as nn

    def block(cin, cout, stride):
        return [nn.Conv2D(cin, cout, 3, stride=stride, padding=1, bias_attr=False),
                nn.BatchNorm2D(cout), nn.ReLU()]

    def build():
        return nn.Sequential(*block(3, 16, 1), *block(16, 32, 2), *block(32, 32, 1), *block(32, 64, 2),
                             nn.AdaptiveAvgPool2D(1), nn.Flatten(), nn.Linear(64, 10))

    return _seeded(build, "tiny_cnn")


def build_tiny_detector():
    return _seeded(_tiny_detector_class(), "tiny_detector")


def _tiny_detector_class():
    import paddle
    import paddle.nn as nn

    class TinyDetector(nn.Layer):
        """Backbone on ``image``; boxes scaled by ``scale_factor`` and sized by ``im_shape``."""

        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(
                nn.Conv2D(3, 16, 3, stride=2, padding=1), nn.BatchNorm2D(16), nn.ReLU(),
                nn.Conv2D(16, 32, 3, stride=2, padding=1), nn.BatchNorm2D(32), nn.ReLU(),
                nn.AdaptiveAvgPool2D(1), nn.Flatten(),
            )
            self.box_head = nn.Linear(32, 4 * 4)
            self.score_head = nn.Linear(32, 4)

        def forward(self, im_shape, image, scale_factor):
            feat = self.backbone(image)
            boxes = paddle.nn.functional.hardsigmoid(self.box_head(feat)).reshape([-1, 4, 4])
            size = im_shape.astype("float32")
            scale = paddle.concat([scale_factor, scale_factor], axis=1).unsqueeze(1)
            limit = paddle.concat([size, size], axis=1).unsqueeze(1)
            boxes = boxes * limit * scale
            scores = paddle.nn.functional.softmax(self.score_head(feat), axis=-1)
            return boxes, scores

    return TinyDetector
