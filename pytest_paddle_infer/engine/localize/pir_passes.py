"""The passes a predictor runs, in order, by the names ``delete_pass`` takes. Legacy programs: the
pass builder's list; PIR (.json): the ``--- Running PIR pass [NAME]`` lines on stderr while building.
A pass may be logged under another name than it is deleted by (3.3.1 logs
``conv_activation_mkldnn_fuse_pass`` for ``conv_activation_onednn_fuse_pass``): ask the registry."""
from __future__ import annotations

import ctypes
import difflib
import functools
import os
import re
import shlex
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

from ..predictor import apply_recipe, trim_paddle_error
from ...modes.run_modes import PIR_FORMAT, recipe
from ...modes.capabilities import installed_paddle
from .repro import call_source

PIR_PASS_LINE = re.compile(r"--- Running PIR pass \[([A-Za-z0-9_]+)\]")
MAX_RELISTS = 6  # builds that stop inside a pass, listed again without it, before giving up


def parse_pir_passes(log: str) -> List[str]:
    """Pass names in the order Paddle first ran them, without repeats."""
    return list(dict.fromkeys(PIR_PASS_LINE.findall(log)))


def _config(spec, model, threads: Optional[int], extra=()):
    from paddle import inference

    config = inference.Config(model.prog_file, model.params_file)
    apply_recipe(config, tuple(recipe(spec, threads)) + tuple(extra))
    return config


def pass_log(spec, model, threads: Optional[int], extra=(), path=None) -> Tuple[List[str], str]:
    """(the passes this recipe and ``extra`` run on ``model``; "" or "raised: ..."); a PIR build's
    log goes to ``path`` as printed, for a parent to read when the build kills this process."""
    config = _config(spec, model, threads, extra)
    if getattr(model, "format", "") != PIR_FORMAT:
        return list(dict.fromkeys(config.pass_builder().all_passes())), ""
    from paddle import inference

    raised: List[str] = []

    def build():
        try:
            inference.create_predictor(config)
        except Exception as e:  # the passes before it are still named
            raised.append("raised: " + trim_paddle_error(e).strip().splitlines()[0][:200])

    log = stderr_of(build, path)
    return parse_pir_passes(log), (raised[0] if raised else "")


def stderr_of(action, path=None) -> str:
    """What ``action`` writes to file descriptor 2 (C++ code included); into ``path`` if given."""
    libc = ctypes.CDLL(None)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    with (open(path, "w+b") if path is not None else tempfile.TemporaryFile()) as sink:
        libc.fflush(None)
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            action()
        finally:
            libc.fflush(None)
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        return sink.read().decode("utf-8", "replace")


def read_pass_log(path) -> List[str]:
    """The passes named in a log ``pass_log`` was writing (after its process died)."""
    try:
        return parse_pir_passes(Path(path).read_bytes().decode("utf-8", "replace"))
    except OSError:
        return []


# passes every Paddle with that registry has: asking for them tells whether it can be asked
PIR_PROBE, LEGACY_PROBE = "dead_code_elimination_pass", "fc_fuse_pass"


@functools.lru_cache(maxsize=1)
def _pir_registry() -> Optional[Callable[[str], Optional[str]]]:
    """registered name -> the name the PIR pass is logged under; None: no PIR pass registry."""
    try:
        from paddle.base import libpaddle

        manager_type = libpaddle.pir.PassManager
    except (ImportError, AttributeError):
        return None

    def logged_as(name: str) -> Optional[str]:
        manager = manager_type()
        try:
            manager.add_pass(name, {})
        except Exception:  # "has not been registered"
            return None
        ran = manager.passes()
        return ran[0] if ran else None

    return logged_as if logged_as(PIR_PROBE) else None


@functools.lru_cache(maxsize=1)
def _legacy_registry() -> Optional[Callable[[str], Optional[str]]]:
    """registered name -> itself for a legacy IR pass, None when none is registered so."""
    from paddle.base import core

    if not hasattr(core, "get_pass"):
        return None

    def known(name: str) -> Optional[str]:
        try:
            core.get_pass(name)
        except Exception:
            return None
        return name

    return known if known(LEGACY_PROBE) else None


def _registry(program_format: str):
    return _pir_registry() if program_format == PIR_FORMAT else _legacy_registry()


def _spellings(name: str) -> List[str]:
    """``name`` and its other spelling: Paddle renamed passes from mkldnn to onednn."""
    swaps = (("mkldnn", "onednn"), ("onednn", "mkldnn"))
    return list(dict.fromkeys([name] + [name.replace(old, new) for old, new in swaps if old in name]))


def deletable_name(logged: str, program_format: str) -> Optional[str]:
    """The ``delete_pass`` name of the pass logged as ``logged`` (None: none; as logged: no registry)."""
    registry = _registry(program_format)
    if registry is None:
        return logged
    return next((n for n in _spellings(logged) if registry(n) == logged), None)


def deletable_names(logged: Iterable[str], program_format: str) -> Tuple[List[str], List[str]]:
    """(the ``delete_pass`` names of the passes logged, in order; those no name deletes)."""
    out, kept = [], []
    for name in logged:
        found = deletable_name(name, program_format)
        if found is None:
            kept.append(name)
        elif found not in out:
            out.append(found)
    return out, kept


def delete_pass_problem(spec, model, threads: Optional[int] = None) -> Optional[str]:
    """The error for ``+delete_pass=NAME`` naming no pass Paddle knows for this program's format."""
    if not spec.delete_passes:
        return None
    program_format = getattr(model, "format", "legacy")
    registry = _registry(program_format)
    if registry is None:
        return None  # nothing to ask: this Paddle cannot tell
    unknown = [p for p in spec.delete_passes if registry(p) is None]
    if not unknown:
        return None
    version = installed_paddle()[1] or "installed"
    lines = []
    for name in unknown:
        line = (f"{spec.label}: Paddle {version} has no pass {name} for "
                f"{'a PIR (.json)' if program_format == PIR_FORMAT else 'a legacy (.pdmodel)'} program, "
                f"so deleting it would change nothing")
        spelt = [n for n in _spellings(name)[1:] if registry(n) is not None]
        other = _legacy_registry() if program_format == PIR_FORMAT else _pir_registry()
        if spelt and registry(spelt[0]) == name:
            line += f"; Paddle logs pass {spelt[0]} as {name}: use +delete_pass={spelt[0]}"
        elif spelt:
            line += f"; this Paddle names it {spelt[0]}: use +delete_pass={spelt[0]}"
        else:
            if other is not None and other(name) is not None:
                fmt = "legacy (.pdmodel)" if program_format == PIR_FORMAT else "PIR (.json)"
                line += f"; {name} is a pass of {fmt} programs"
            close = difflib.get_close_matches(name, _known_names(spec, model, threads, registry), n=3)
            line += f"; close matches: {', '.join(close)}" if close else "; no close match"
        lines.append(line)
    command = by_hand_command(replace(spec, delete_passes=()), model, threads)
    lines.append(f"list the passes this run mode runs with: {command}")
    return "\n".join(lines)


def _known_names(spec, model, threads, registry) -> List[str]:
    """The pass builder's names for this recipe, in each spelling the registry knows."""
    try:
        config = _config(replace(spec, delete_passes=()), model, threads)
        listed = list(config.pass_builder().all_passes())
    except Exception:
        listed = []
    return list(dict.fromkeys(n for name in listed for n in _spellings(name) if registry(n) is not None))


def by_hand_command(spec, model, threads: Optional[int] = None, extra=()) -> str:
    """A shell command that prints the passes ``spec`` runs on ``model``, with Paddle alone."""
    calls = []
    for c in tuple(recipe(spec, threads)) + tuple(extra):
        line = call_source(replace(c, optional=False))
        calls.append(f"hasattr(config, {c.method!r}) and {line}" if c.optional else line)
    head = (f"from paddle import inference; from paddle.inference import PrecisionType; "
            f"config = inference.Config({os.path.abspath(model.prog_file)!r}, "
            f"{os.path.abspath(model.params_file)!r}); ")
    body = "; ".join(calls)
    if getattr(model, "format", "") == PIR_FORMAT:
        code = f"{head}{body}; inference.create_predictor(config)"
        return f"python -c {_quoted(code)} 2>&1 | grep 'Running PIR pass'"
    return f"python -c {_quoted(f'{head}{body}; print(config.pass_builder().all_passes())')}"


def _quoted(code: str) -> str:
    """``code`` for a shell: in double quotes when nothing in it is special there, else shlex's."""
    return f'"{code}"' if not any(c in code for c in '"$`\\!') else shlex.quote(code)


class PassList(list):
    """Pass names (as ``delete_pass`` takes them), why the list may be incomplete, and how to list it."""
    def __init__(self, names: Sequence[str] = (), problem: str = "", by_hand: str = "",
                 stopped_in: Sequence[str] = ()):
        super().__init__(names)
        self.problem, self.by_hand, self.stopped_in = problem, by_hand, list(stopped_in)


def list_passes(spec, model, threads: Optional[int], off_calls: Sequence,
                log: Callable[..., Tuple[List[str], str]]) -> PassList:
    """The passes ``spec`` runs beyond those of optimizations off, by ``delete_pass`` name; a build
    that stops inside a pass is listed again without it, until one builds or no new pass shows.
    ``log(spec, extra calls)``: (passes logged, in order; "" or how the build stopped)."""
    program_format = getattr(model, "format", "legacy")
    by_hand = by_hand_command(spec, model, threads)
    if program_format != PIR_FORMAT:
        names, stopped = log(spec, ())
        if stopped:
            return PassList([], f"reading the pass builder's list {stopped}", by_hand)
        return PassList([p for p in names if p not in spec.delete_passes])
    off: List[str] = []
    if off_calls:
        off_spec = replace(spec, ir_optim=False, memory_optim=False, delete_passes=())
        off, stopped = log(off_spec, tuple(off_calls))
        if stopped:
            return PassList([], f"building it with optimizations off to tell Paddle's basic passes "
                                f"apart {stopped}", by_hand)
    ran: List[str] = []
    deleted: List[str] = []
    problem = ""
    for _ in range(MAX_RELISTS):
        names, stopped = log(replace(spec, delete_passes=spec.delete_passes + tuple(deleted)), ())
        new = [n for n in names if n not in ran]
        ran += new
        if not stopped or not new:  # built, or stopped where it stopped before: all listed
            problem = "" if ran else (f"building the candidate to list them {stopped} before "
                                      f"Paddle named any pass")
            break
        culprit = deletable_name(names[-1], program_format)
        problem = (f"building the candidate to list them {stopped} in pass {names[-1]}, "
                   + ("which no delete_pass name removes" if culprit is None else
                      f"and still after deleting {', '.join(deleted + [culprit])}")
                   + ": the passes after it are not listed")
        if culprit is None or culprit in deleted or culprit in spec.delete_passes:
            break
        deleted.append(culprit)  # the build stopped in it: list what runs after it
    found, _ = deletable_names([p for p in ran if p not in off], program_format)
    found = [p for p in found if p not in spec.delete_passes]
    return PassList(found, problem, by_hand, [p for p in deleted if p in found])
