"""Exceptions that carry a message meant for the person running pytest: a ``PaddleInferError``
is reported as its text alone, with no traceback through the plugin's own code."""
import re
import signal


class PaddleInferError(Exception):
    """A problem with a clear cause and fix, reported without a traceback."""


class OptionError(PaddleInferError):
    """A command-line option, ini key or marker argument that cannot be used."""


class ModelError(PaddleInferError):
    """A model that cannot be found, read or exported."""


class PredictorError(PaddleInferError):
    """Paddle raised while building or running a predictor."""


class CandidateError(PredictorError):
    """A candidate's Paddle error of unknown cause (no hint): --paddle-localize localizes it."""


class InputError(PaddleInferError):
    """Inputs that do not fit the model: wrong names, shapes or dtypes."""


class SuiteError(PaddleInferError):
    """A suite file or ``paddle_case`` marker that cannot be used; the message names file:line."""


class CaseSkipped(Exception):
    """The case cannot run on this installation; the message says what is missing."""


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """Paddle's messages without their ANSI colours, for reports, JUnit and summary.json."""
    return _ANSI.sub("", text)


def _signal_name(number: int):
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def describe_exit(returncode) -> str:
    """``was killed by SIGSEGV`` / ``exited with status 3`` (a shell reports a signal as 128 + N)."""
    if returncode is None:
        return "is still running"
    if returncode < 0:
        return f"was killed by {_signal_name(-returncode) or f'signal {-returncode}'}"
    shell_signal = _signal_name(returncode - 128) if returncode > 128 else None
    return f"exited with status {returncode}" + (f" ({shell_signal})" if shell_signal else "")


# errno values that mean "this disk or directory cannot take the write": the user's to fix
DISK_ERRNOS = {28: "no space left on the device", 122: "the disk quota is exceeded",
               27: "the file size limit (ulimit -f) is reached", 30: "the file system is read-only",
               13: "permission denied", 1: "the operation is not permitted"}


def is_disk_fault(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in DISK_ERRNOS


def disk_fault(error: OSError, doing: str, fix: str = "") -> str:
    """``writing X failed: no space left on the device (path); free space there ...``: one line."""
    where = f" ({error.filename})" if getattr(error, "filename", None) else ""
    why = DISK_ERRNOS.get(error.errno, error.strerror or str(error))
    fix = fix or ("free space there or choose a directory on another disk" if error.errno in (28, 122, 27)
                  else "choose a directory this user can write")
    return f"{doing} failed: {why}{where}; {fix}"
