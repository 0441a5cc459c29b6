"""Localization: re-run a failing case with recipe variations and name the culprit."""

from . import prune  # noqa: F401,E402 (registers the steps after the ladder: prune.py)
