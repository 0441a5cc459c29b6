"""A model that differs from its baseline on every CPU, through one pass alone: for the
localization tests (the ladder's pass search, pruning to the ops that diverge together).

``build`` (the builder; ``exported`` exports it through the plugin's cache): the input times
4, truncated to integers in [-4, 4], each channel twice (concat), then a convolution with
integer weights, a batch norm and relu. The convolution's weights cancel: those of the
second copy of each channel are minus those of the first (up to 30000) plus a small integer,
so each output is a small integer (here up to 87) summed from terms up to 1.2e5. Every sum
is an integer below 2**24, which float32 holds exactly in any order, with or without FMA:
oneDNN's convolution and the native one agree to the bit on every instruction set. The batch
norm (mean 0, beta 0, variance + epsilon exactly 1) multiplies by gamma: one rounding, or
within an ulp of it (on a Xeon with avx512 oneDNN's batch norm and the native one differ by an
ulp, where on AVX2 they agree to the bit). So with the passes off the case is within ATOL on
every CPU.

The pass that folds the batch norm into the convolution (``FOLD_PASS``) scales the weights
instead: gamma (not a power of two) times weights up to 30000 rounds by up to 1e-3, and the
folded convolution sums those non-integers through partial sums up to 6.5e6, rounding at each
step, before they cancel: outputs off by up to 0.04 (the weights' rounding alone, in any
order) to 0.17 (the sums' rounding, by order), 1000 times ATOL; about half of them out of
ATOL in a simulation in numpy of three summation orders. This is arithmetic, not the
instruction set. Measured with Paddle 3.3.1, input seed 0, ``onednn_fp32`` at ATOL, rtol 0
(all optimizations off / as configured, outputs out of 16384 / without ``FOLD_PASS``):

- AMD EPYC, avx2 (no avx512): PIR 0 / 0.0548, 7549 / 0; legacy 0 / 0.0548, 7549 / 0.
- Intel Xeon with AMX (avx512_bf16, avx512_vnni), Python 3.12: PIR 1.5e-5 / 0.0548, 7549 /
  1.5e-5; legacy 0 / 0.0609, 7537 / 1.5e-5.

Either way the ladder names ``FOLD_PASS`` (PIR 10 builds, legacy 12) and pruning finds no op
alone out of ATOL, and CONV..BN together.

Builders run in the exporter's child: paddle is imported inside them, never at this module's
import (the tests import it for ``exported``)."""
from __future__ import annotations

import hashlib
from pathlib import Path

NAME = "pass_divergence"
SHAPE = (1, 3, 32, 32)
ATOL = 1e-3  # with rtol 0: far above an ulp of the outputs, far below the fold's error
TOLERANCE = (f"--paddle-atol={ATOL}", "--paddle-rtol=0")  # on the command line
EPSILON = 2.0 ** -17  # variance + epsilon == 1 exactly
BIG = 30000  # the largest weight: sums stay below 2**24 (6.5e6)
# the pass that folds the batch norm into its convolution, by program format
FOLD_PASS = {"pir": "conv2d_bn_onednn_fuse_pass", "legacy": "conv_bn_fuse_pass"}
# legacy op indices: scale, cast, cast, concat, then these, then relu
CONV, BN = 4, 5


def build():
    import numpy as np
    import paddle
    import paddle.nn as nn
    import paddle.nn.functional as F

    class CancellingConvBN(nn.Layer):
        def __init__(self):
            super().__init__()
            rng = np.random.RandomState(5)
            big = rng.randint(-BIG, BIG + 1, (16, 3, 3, 3))
            small = rng.randint(-3, 4, (16, 3, 3, 3))
            self.conv = nn.Conv2D(6, 16, 3, padding=1, bias_attr=False)
            self.conv.weight.set_value(np.concatenate([big, small - big], axis=1).astype("float32"))
            # an epsilon this small lets Paddle's folding passes match (0.25 does not)
            self.bn = nn.BatchNorm2D(16, epsilon=EPSILON)
            self.bn.weight.set_value(rng.uniform(0.5, 1.5, 16).astype("float32"))
            self.bn.bias.set_value(np.zeros(16, "float32"))
            self.bn._mean.set_value(np.zeros(16, "float32"))
            self.bn._variance.set_value(np.full(16, 1 - EPSILON, "float32"))

        def forward(self, x):
            x = (x * 4).astype("int32").astype("float32")  # integers in [-4, 4]
            return F.relu(self.bn(self.conv(paddle.concat([x, x], axis=1))))

    return CancellingConvBN()


def exported(cache_dir: Path, legacy: bool = False):
    """The exported model (``ModelFiles``; PIR by default, ``legacy=True`` the .pdmodel), in
    the plugin's export cache, re-exported when this file changes."""
    from pytest_paddle_infer.models.cache import resolve
    from pytest_paddle_infer.models.inputs import InputSpec
    from pytest_paddle_infer.models.source import ModelSource

    here = Path(__file__).resolve()
    source = ModelSource(NAME, "builder", f"{here.stem}:build",
                         inputs=(InputSpec("x", (-1,) + SHAPE[1:], "float32", low=-1.0, high=1.0),),
                         search_path=(str(here.parent),),
                         fingerprint=hashlib.sha256(here.read_bytes()).hexdigest()[:12])
    return resolve(source, cache_dir, legacy=legacy)
