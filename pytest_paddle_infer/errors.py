"""Exceptions that carry a message meant for the person running pytest.

Anything derived from ``PaddleInferError`` is reported as its text alone: no traceback
through the plugin's own code.
"""


class PaddleInferError(Exception):
    """A problem with a clear cause and fix, reported without a traceback."""


class OptionError(PaddleInferError):
    """A command-line option, ini key or marker argument that cannot be used."""


class ModelError(PaddleInferError):
    """A model that cannot be found, read or exported."""


class PredictorError(PaddleInferError):
    """Paddle raised while building or running a predictor."""


class InputError(PaddleInferError):
    """Inputs that do not fit the model: wrong names, shapes or dtypes."""


class SuiteError(PaddleInferError):
    """A suite file or ``paddle_case`` marker that cannot be used; the message names
    file:line, the key, what was expected, what was found and the fix."""


class CaseSkipped(Exception):
    """The case cannot run on this installation; the message says what is missing."""
