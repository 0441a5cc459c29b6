"""Quantized zoo entries: ``paddle.quantization.PTQ`` with 8-bit absmax observers on every
``Conv2D`` and ``Linear``, calibrated on seeded data, converted to quantize/dequantize ops.

On Paddle 3.3.1 their PIR export does not load ("Tensor holds no memory"): they export the
legacy ``.pdmodel`` only. ``convert`` leaves weights as float32 integers, which oneDNN's
``quant_dequant_onednn_pass`` reads as int8 memory (garbage): ``store_int8_weights`` stores
them as int8 (``dequantize_linear`` takes either). Builders import paddle; this module does not."""
from __future__ import annotations

from typing import Tuple

from .inputs import InputSpec, generate
from .zoo import WEIGHT_SEED, ZOO, build_tiny_cnn, calibrate_batchnorm

QUANT_BITS = 8
CALIBRATION_BATCHES = 4  # forward passes that set the observers' scales
CALIBRATION_BATCH = 4
CALIBRATION_SEED = 11


def post_training_quantize(layer, inputs: Tuple[InputSpec, ...]):
    """``layer`` quantized by ``paddle.quantization.PTQ``, calibrated on seeded batches."""
    import paddle
    from paddle.quantization import PTQ, QuantConfig
    from paddle.quantization.observers import AbsmaxObserver

    config = QuantConfig(activation=None, weight=None)
    config.add_type_config([paddle.nn.Conv2D, paddle.nn.Linear],
                           activation=AbsmaxObserver(quant_bits=QUANT_BITS),
                           weight=AbsmaxObserver(quant_bits=QUANT_BITS))
    ptq = PTQ(config)
    observed = ptq.quantize(layer, inplace=False)
    with paddle.no_grad():
        for i in range(CALIBRATION_BATCHES):
            feed = [paddle.to_tensor(generate(s.concrete((CALIBRATION_BATCH,) + tuple(s.shape[1:])),
                                              CALIBRATION_SEED + i)) for s in inputs]
            observed(*feed)
    converted = ptq.convert(observed, inplace=False)
    converted.eval()
    return converted


def store_int8_weights(prefix: str) -> int:
    """Store the weights ``dequantize_linear`` ops read as int8 in legacy ``prefix``; returns how many."""
    import numpy as np
    import paddle

    paddle.enable_static()
    try:
        place = paddle.CPUPlace()
        exe = paddle.static.Executor(place)
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            program, feeds, fetches = paddle.static.load_inference_model(prefix, exe)
            block = program.global_block()
            converted = 0
            for op in block.ops:
                if op.type != "dequantize_linear":
                    continue
                name = op.input("X")[0]
                var = block.var(name)
                if not var.persistable:
                    continue
                tensor = scope.find_var(name).get_tensor()
                values = np.array(tensor)
                if values.dtype == np.int8:
                    continue
                if not (np.array_equal(values, np.round(values)) and np.abs(values).max() <= 127):
                    raise ValueError(f"weight {name} of a dequantize_linear op does not hold int8 values")
                var.desc.set_dtype(paddle.base.core.VarDesc.VarType.INT8)
                tensor.set(values.astype(np.int8), place)
                converted += 1
            paddle.static.save_inference_model(prefix, [block.var(f) for f in feeds], fetches,
                                               exe, program=program)
    finally:
        paddle.disable_static()
    return converted


def build_tiny_cnn_int8():
    """tiny_cnn (same weights), post-training quantized."""
    return post_training_quantize(build_tiny_cnn(), ZOO["tiny_cnn_int8"].inputs)


def build_resnet18_int8():
    """paddle.vision ResNet18 (seeded, BatchNorm re-estimated), post-training quantized."""
    import paddle
    from paddle.vision.models import resnet18

    inputs = ZOO["resnet18_int8"].inputs
    paddle.seed(WEIGHT_SEED)
    return post_training_quantize(calibrate_batchnorm(resnet18(pretrained=False), inputs), inputs)
