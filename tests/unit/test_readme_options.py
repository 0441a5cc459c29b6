"""README's Options table lists every option of options.OPTIONS with its ini key, so the table
the text calls complete ("Every option has an ini key") stays so."""
from pathlib import Path

import pytest

from pytest_paddle_infer.session.options import OPTIONS

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
ROWS = [line for line in README.splitlines() if line.startswith("| `--")]


@pytest.mark.parametrize("opt", OPTIONS, ids=lambda o: o.flag)
def test_every_option_has_a_row_with_its_ini_key(opt):
    row = [r for r in ROWS if r.startswith(f"| `{opt.flag}`") or r.startswith(f"| `{opt.flag} ")
           or r.startswith(f"| `{opt.flag}[")]
    assert row, f"README's Options table has no row for {opt.flag}"
    assert f"`{opt.ini}`" in row[0], row[0]
