"""The baselines a case can name (what each one runs is execute/baselines.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..errors import OptionError

PREDICTOR_KINDS = ("auto", "cpu", "gpu")
REFERENCE_KINDS = ("dygraph", "static")
GOLDEN = "golden"
GOLDEN_PREFIX = "golden:"
BASELINE_FORMS = PREDICTOR_KINDS + REFERENCE_KINDS + ("golden:DIR",)


def parse_baseline(text: str, base_dir: Optional[Path] = None) -> str:
    """A baseline as given -> its canonical text; ``golden:DIR`` made absolute (from ``base_dir``)."""
    value = str(text).strip()
    if value in PREDICTOR_KINDS + REFERENCE_KINDS:
        return value
    if value.startswith(GOLDEN_PREFIX):
        directory = value[len(GOLDEN_PREFIX):].strip()
        if not directory:
            raise OptionError("golden: needs a directory, e.g. golden:tests/goldens")
        path = Path(directory).expanduser()
        if not path.is_absolute():
            path = Path(base_dir or Path.cwd()) / path
        return GOLDEN_PREFIX + str(path.resolve())
    raise OptionError(f"unknown baseline {value!r}; valid baselines: {', '.join(BASELINE_FORMS)}")


def kind_of(baseline: str) -> str:
    return GOLDEN if baseline.startswith(GOLDEN_PREFIX) else baseline


def golden_dir(baseline: str) -> Path:
    return Path(baseline[len(GOLDEN_PREFIX):])
