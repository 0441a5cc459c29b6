"""What a model is before anything runs: a zoo name, a path or a builder (``ModelSource``),
and the files it resolves to (``ModelFiles``). Light: option parsing imports it."""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from ..errors import ModelError
from .inputs import InputSpec
from .zoo import ZOO

PROGRAM_EXTENSIONS = (".json", ".pdmodel")
FORMATS = {".json": "pir", ".pdmodel": "legacy"}
MANIFEST = "manifest.json"  # the export cache's record of a model directory


@dataclass(frozen=True)
class ModelSource:
    """What the user named: a zoo entry, a path, or a builder."""

    name: str  # the name in test ids
    kind: str  # "zoo" | "path" | "builder"
    ref: str  # zoo name, path, or "package.module:callable"
    kwargs: Tuple[Tuple[str, object], ...] = ()
    inputs: Optional[Tuple[InputSpec, ...]] = None  # declared inputs, when known up front
    search_path: Tuple[str, ...] = ()  # builders: directories the exporter child imports from
    fingerprint: str = ""  # builders: hash of the module's source, so an edit re-exports


@dataclass(frozen=True)
class ModelFiles:
    name: str
    prog_file: str
    params_file: str
    inputs: Tuple[InputSpec, ...]  # in the model's declared order

    @property
    def format(self) -> str:
        return FORMATS[Path(self.prog_file).suffix]


def looks_like_path(ref: str) -> bool:
    return os.sep in ref or "/" in ref or ref.endswith(PROGRAM_EXTENSIONS) or os.path.lexists(ref)


def parse_source(ref: str) -> ModelSource:
    """A ``--paddle-model`` value -> a source; unknown names list the zoo."""
    ref = ref.strip()
    if ref in ZOO:
        return ModelSource(ref, "zoo", ref, inputs=ZOO[ref].inputs)
    if looks_like_path(ref):
        prog, _ = find_model_files(ref)
        return ModelSource(display_name(prog), "path", str(prog))
    raise ModelError(
        f"unknown model {ref!r}: not a zoo entry and no such file or directory; "
        f"zoo entries: {', '.join(ZOO)}; or give a model directory or a .pdmodel/.json file")


def display_name(prog: Path) -> str:
    """``models/resnet50/inference.json`` -> ``resnet50``; ``x/mobilenet.pdmodel`` -> ``mobilenet``."""
    return prog.parent.name if prog.stem in ("inference", "model", "__model__") else prog.stem


def missing_path(given: Path, path: Path) -> str:
    """Why ``path`` cannot be opened: a symlink loop or a dangling symlink is not "missing"."""
    loop = (f"model path {given} is a symlink loop (its links lead back to themselves); point it "
            f"at a model directory or file")
    try:
        path.resolve(strict=True)
    except RuntimeError:  # Python < 3.13: "Symlink loop from ..."
        return loop
    except OSError as e:
        if e.errno == errno.ELOOP:
            return loop
        if os.path.islink(path):
            return (f"model path {given} is a symlink to {os.readlink(path)}, which does not exist; "
                    f"point it at a model directory or file")
        if e.errno in (errno.EACCES, errno.EPERM):
            return f"model path {given} cannot be reached: permission denied on a directory above it"
    return f"model path {given} does not exist"


def find_model_files(ref: str) -> Tuple[Path, Path]:
    """The (program, params) pair a path names, or a ModelError naming the path."""
    given = Path(ref).expanduser()
    path = given.absolute()  # Paddle joins a relative program path onto its prefix
    if not path.exists():
        raise ModelError(missing_path(given, path))
    if path.is_dir():
        programs = sorted(p for p in path.iterdir() if p.suffix in PROGRAM_EXTENSIONS
                          and p.is_file() and p.name != MANIFEST)
        preferred = [p for p in programs if p.stem == "inference"]
        if len(preferred) == 1 and (path / "inference.pdiparams").exists():
            programs = preferred
        paired = [p for p in programs if p.with_suffix(".pdiparams").exists()]
        if not programs:
            raise ModelError(f"model directory {path} holds no .pdmodel or .json program file")
        if len(paired) > 1:
            raise ModelError(
                f"model directory {path} holds {len(paired)} model pairs "
                f"({', '.join(p.name for p in paired)}): name the program file to use")
        if not paired:
            raise ModelError(
                f"model directory {path}: {programs[0].name} has no params file "
                f"{programs[0].with_suffix('.pdiparams').name} beside it")
        prog = paired[0]
    else:
        if path.suffix not in PROGRAM_EXTENSIONS:
            raise ModelError(f"model file {path} is not a .pdmodel or .json program file")
        prog = path
    params = prog.with_suffix(".pdiparams")
    if not params.exists():
        raise ModelError(f"model file {prog} has no params file: expected {params}")
    for p in (prog, params):
        if not os.access(p, os.R_OK):
            raise ModelError(f"model file {p} is not readable")
    return prog, params
