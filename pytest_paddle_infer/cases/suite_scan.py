"""Which files are suites, by name: ``paddle_*.yaml`` or ``*.paddle.yaml``."""
from __future__ import annotations


def is_suite_name(name: str) -> bool:
    return (name.startswith("paddle_") and name.endswith(".yaml")) or name.endswith(".paddle.yaml")
