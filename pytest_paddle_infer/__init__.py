"""pytest-paddle-infer: check that PaddlePaddle models give the same answers under every
inference configuration. The pytest plugin lives in ``plugin.py``; importing this package
does not import paddle."""
from .compare import assert_tensors_close, compare_arrays

__all__ = ["assert_tensors_close", "compare_arrays"]
__version__ = "0.1.0"
