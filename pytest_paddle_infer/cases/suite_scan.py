"""Whether a session will collect a suite, known before collection: the header of a suite
session then shows the same ``paddle-infer:`` lines as one started with ``--paddle-model``.

A walk of the paths pytest was given, the way pytest walks them (hidden directories and
``norecursedirs`` skipped), that stops at the first suite file and after ``LIMIT`` entries.
"""
from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Iterable, Sequence

LIMIT = 20000  # entries looked at before giving up: a huge tree is walked by pytest anyway


def is_suite_name(name: str) -> bool:
    return (name.startswith("paddle_") and name.endswith(".yaml")) or name.endswith(".paddle.yaml")


def suites_ahead(args: Iterable[str], base: Path, norecursedirs: Sequence[str]) -> bool:
    """True when a path in ``args`` (relative to ``base``) is or holds a suite file."""
    seen = 0
    for arg in args:
        path = (base / str(arg).split("::")[0]).resolve()
        if path.is_file():
            if is_suite_name(path.name):
                return True
            continue
        for root, dirs, files in os.walk(path):
            if any(is_suite_name(f) for f in files):
                return True
            seen += len(dirs) + len(files)
            if seen > LIMIT:
                return False
            dirs[:] = [d for d in dirs if not d.startswith(".")
                       and not any(fnmatch.fnmatch(d, p) for p in norecursedirs)]
    return False
