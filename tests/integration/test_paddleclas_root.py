"""The CI gate of example_suites/paddleclas_style in a repository whose root is itself a
Python package, as PaddleClas's is (its root __init__.py imports ``ppcls`` absolutely):
the example's pytest.ini (``-p no:python``) and builder module (not a conftest) keep pytest
from importing that package, which fails under pytest.

Run as a user runs it: the ``pytest`` console script in the root, with nothing on
PYTHONPATH (``python -m pytest`` and pytester's runners put the working directory on the
path, where ``ppcls`` then imports and the problem hides)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers import EXAMPLES, SuiteRun, read_junit

ROOT_INIT = "from ppcls.arch import build_model  # as PaddleClas's root imports its own code\n"


def make_root(path: Path) -> Path:
    """The repository root: the example's files, plus the root package's __init__.py."""
    shutil.copytree(EXAMPLES / "paddleclas_style", path,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "inference"))
    (path / "__init__.py").write_text(ROOT_INIT)
    return path


def run_console(root: Path, cache: Path, *args: str) -> SuiteRun:
    xml = root / "junit.xml"
    xml.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    script = Path(sys.executable).with_name("pytest")
    proc = subprocess.run([str(script), "-p", "no:cacheprovider", f"--paddle-cache-dir={cache}",
                           f"--junitxml={xml}", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    result = type("Result", (), {"ret": proc.returncode, "stdout": _Text(proc.stdout),
                                 "stderr": _Text(proc.stderr)})()
    return SuiteRun(result, read_junit(xml) if xml.exists() else {})


class _Text(str):
    def str(self) -> str:  # what SuiteRun.text asks of pytester's output
        return str(self)


def test_gate_runs_at_a_root_that_is_a_package(tmp_path, paddle_cache, lend_fork_server):
    root = make_root(tmp_path / "PaddleClas")
    run = run_console(root, paddle_cache, "dy2static.paddle.yaml", "-k", "TinyResNet")
    assert run.result.ret == 0, run.text
    assert run.outcomes() == {f"dy2static.paddle.yaml::TinyResNet[{s}-cpu_fp32+no_ir_optim]": "passed"
                              for s in ("1x3x32x32", "4x3x32x32")}

    # without -p no:python pytest imports the root package before the first case: every case
    # errors, as on a real checkout (the setting is what makes it work)
    ini = root / "pytest.ini"
    ini.write_text(ini.read_text().replace("addopts = -p no:python -rs", "addopts = -rs"))
    broken = run_console(root, paddle_cache, "dy2static.paddle.yaml", "-k", "TinyResNet")
    assert set(broken.outcomes().values()) == {"error"}, broken.text
    assert "No module named 'ppcls'" in broken.text
