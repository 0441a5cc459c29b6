"""Localization: re-run a failing case with recipe variations and name the culprit."""
