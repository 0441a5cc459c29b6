"""The passes a predictor runs, in order: what the localization ladder searches over.

Legacy programs: the pass builder's list. PIR (.json) programs: the pass builder describes
legacy programs only, so the list comes from what Paddle reports while it builds the
predictor: one ``--- Running PIR pass [NAME]`` line per pass on stderr, printed unless
``disable_glog_info()`` (measured on 3.3.1: 49 lines for tiny_cnn under onednn_bf16; a
pass given to ``delete_pass`` is absent from them).
"""
from __future__ import annotations

import os
import re
import tempfile
from typing import List, Optional

PIR_PASS_LINE = re.compile(r"--- Running PIR pass \[([A-Za-z0-9_]+)\]")


def parse_pir_passes(log: str) -> List[str]:
    """Pass names in the order Paddle first ran them, without repeats."""
    out: List[str] = []
    for name in PIR_PASS_LINE.findall(log):
        if name not in out:
            out.append(name)
    return out


def passes_run(spec, model, threads: Optional[int], extra=()) -> List[str]:
    """The passes a config with this recipe (and ``extra`` calls) runs on ``model``, in
    order, without repeats."""
    from paddle import inference

    from ..execute.predictor import apply_recipe
    from ..modes.run_modes import PIR_FORMAT, recipe

    config = inference.Config(model.prog_file, model.params_file)
    apply_recipe(config, tuple(recipe(spec, threads)) + tuple(extra))
    if getattr(model, "format", "") != PIR_FORMAT:
        passes = list(config.pass_builder().all_passes())
        return [p for i, p in enumerate(passes) if p not in passes[:i]]
    log = stderr_of(lambda: inference.create_predictor(config))
    return parse_pir_passes(log)


def stderr_of(action) -> str:
    """What ``action`` writes to file descriptor 2 (C++ code included), as text."""
    import ctypes

    libc = ctypes.CDLL(None)
    with tempfile.TemporaryFile() as sink:
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


def passes_beyond(spec, model, threads: Optional[int], off_calls=()) -> List[str]:
    """The passes ``spec`` runs that a run with optimizations off does not (IR optimization
    off plus ``off_calls``: on PIR the basic passes that keep the program runnable, and
    oneDNN's placement); those are the ones a ``delete_pass`` search may remove."""
    from dataclasses import replace

    from ..modes.run_modes import PIR_FORMAT

    ran = passes_run(spec, model, threads)
    if getattr(model, "format", "") != PIR_FORMAT or not off_calls:
        return ran
    off = set(passes_run(replace(spec, ir_optim=False, memory_optim=False, delete_passes=()),
                         model, threads, off_calls))
    return [p for p in ran if p not in off]


def listing_builds(model, off_calls=()) -> int:
    """Predictors ``passes_beyond`` builds: none for a legacy program (the pass builder
    lists them), two for a PIR one (as configured, and with optimizations off)."""
    from ..modes.run_modes import PIR_FORMAT

    if getattr(model, "format", "") != PIR_FORMAT:
        return 0
    return 2 if off_calls else 1
