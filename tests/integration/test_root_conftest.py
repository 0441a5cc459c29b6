"""At this project's root, `pytest --paddle-model=NAME` checks that model only: the root
conftest keeps testpaths (tests/) out when no path is given, so a newcomer trying the README's
check from the checkout does not start the whole test suite. Collection only (no case runs),
so without -n 2: what it checks happens before any worker would start."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def collected(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return done.stdout.strip().splitlines()[-1]


def count(line: str) -> int:
    return int(line.split()[0])


def test_a_model_alone_at_the_root_collects_its_case_only():
    assert collected("--paddle-model=tiny_cnn", "--run-mode=cpu_fp32").startswith("1 test collected")


def test_paths_given_are_collected_beside_the_case():
    alone = count(collected("tests/unit/modes/test_cpu_threads.py"))
    assert count(collected("tests/unit/modes/test_cpu_threads.py", "--paddle-model=tiny_cnn",
                           "--run-mode=cpu_fp32")) == alone + 1


def test_without_a_model_testpaths_still_apply():
    assert count(collected()) > 100
