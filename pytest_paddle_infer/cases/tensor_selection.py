"""Which intermediate tensors to capture: ``none``, ``all`` or globs (numpy-free, so the
options can validate it at start-up)."""
from __future__ import annotations

import fnmatch
import re
from typing import Tuple

from ..errors import OptionError


def op_label(op_type: str) -> str:
    """``pd_op.conv2d:12`` -> ``pd_op.conv2d``: PIR appends the op's index."""
    return op_type.rsplit(":", 1)[0] if re.search(r":\d+$", op_type) else op_type


class Selection:
    """``none``, ``all`` or globs over tensor names and op types."""

    def __init__(self, spec: str = "none"):
        text = (spec or "none").strip()
        self.spec = text
        self.globs: Tuple[str, ...] = ()
        if text not in ("none", "all"):
            self.globs = tuple(g.strip() for g in text.split(",") if g.strip())
            if not self.globs:
                raise OptionError("--paddle-intermediates: give none, all, or globs such as 'conv2d_*,relu_*'")

    @property
    def active(self) -> bool:
        return self.spec != "none"

    def wants(self, name: str, op_type: str) -> bool:
        return self.spec == "all" or any(self.glob_matches(g, name, op_type) for g in self.globs)

    @staticmethod
    def glob_matches(glob: str, name: str, op_type: str) -> bool:
        return fnmatch.fnmatchcase(name, glob) or fnmatch.fnmatchcase(op_label(op_type), glob)
