"""The warning class of the plugin's own notices (pytest's warnings summary, relayed from xdist
workers like any warning)."""
import pytest


class PaddleInferWarning(pytest.PytestWarning):
    """Something about the session's paddle-infer cases worth reading."""
