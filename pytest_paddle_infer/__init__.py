"""pytest-paddle-infer: check that PaddlePaddle models give the same answers under every
inference configuration. The pytest plugin lives in ``plugin.py``; importing this package
imports neither paddle nor numpy, so an unused plugin costs pytest nothing."""

__all__ = ["assert_tensors_close", "compare_arrays"]
__version__ = "0.1.0"


def __getattr__(name):
    if name in __all__:
        from .verdict import compare

        return getattr(compare, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
