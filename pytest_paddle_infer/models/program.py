"""Which program a case checks (no paddle: option and suite parsing import it).

``default``: every model in its own format (zoo entries and builders in the installed Paddle's
export format), except that ``trt_*`` cases of zoo entries and builders check their legacy
export on Paddle 3.x (``enable_tensorrt_engine`` reaches legacy programs only). ``legacy``: zoo
entries and builders exported as ``.pdmodel``. A user's model file is never re-exported."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ModelError

if TYPE_CHECKING:
    from ..modes.run_modes import RunMode
    from .source import ModelFiles, ModelSource

DEFAULT, LEGACY = "default", "legacy"
PROGRAMS = (DEFAULT, LEGACY)
PROGRAM_HELP = ("default (each model's own format: zoo entries and builders in the installed "
                "Paddle's export format, model files as given) or legacy (zoo entries and builders "
                "re-exported as .pdmodel)")
TRT_REASON = "TensorRT on Paddle 3.x reads legacy programs only (enable_tensorrt_engine)"


def paddle_major(version: str) -> int:
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return 0


def never_re_exported(source: "ModelSource") -> str:
    return (f"model {source.name!r} is a model file on disk ({source.ref}), checked as it is and "
            f"never re-exported; program legacy applies to zoo entries and builders only")


def exports_legacy(source: "ModelSource", program: str, mode: "RunMode", paddle_version: str) -> bool:
    """Whether the case checks a zoo entry's or builder's legacy export (legacy on a file: ModelError)."""
    if source.kind == "path":
        if program == LEGACY:
            raise ModelError(never_re_exported(source))
        return False
    return program == LEGACY or (mode.tensorrt and paddle_major(paddle_version) >= 3)


def choice_text(source: "ModelSource", program: str, mode: "RunMode", paddle_version: str) -> str:
    """Why the case checks the program it checks, for the reports."""
    if source.kind == "path":
        return f"{program}: the model file as given"
    if program == LEGACY:
        return "legacy: asked for by --paddle-program or the suite's program key"
    if exports_legacy(source, program, mode, paddle_version):
        return f"default, {mode.name}: {TRT_REASON}"
    return "default: the model's own format"


def describe_program(files: "ModelFiles") -> str:
    """``pir inference.json``: the format and the file a case checks."""
    return f"{files.format} {Path(files.prog_file).name}"


def header_line(program: str, paddle_version: str) -> str:
    """The session's choice, for the report header."""
    if program == LEGACY:
        return ("paddle-infer: program legacy (--paddle-program): zoo entries and builders checked "
                "in their legacy inference.pdmodel export; model files cannot be re-exported")
    own = "pir inference.json" if paddle_major(paddle_version) >= 3 else "legacy inference.pdmodel"
    trt = "; trt_* modes: legacy inference.pdmodel" if paddle_major(paddle_version) >= 3 else ""
    return (f"paddle-infer: program default: each model's own format (zoo entries and builders: "
            f"{own}{trt}; model files as given); --paddle-program=legacy for the legacy export")
