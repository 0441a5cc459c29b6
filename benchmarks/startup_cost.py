"""What the installed plugin costs a pytest session that does not use it.

Times ``pytest --version`` and a one-test session with the plugin loaded and with
``-p no:paddle_infer``, best of N runs each, and prints the figures.

    python benchmarks/startup_cost.py [--runs 7]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time


def best_time(args, cwd, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as cwd:
        with open(os.path.join(cwd, "test_plain.py"), "w") as f:
            f.write("def test_plain():\n    assert True\n")
        print(f"best of {runs} runs, seconds")
        print(f"{'command':<36}{'plugin on':>12}{'plugin off':>12}{'cost':>10}")
        for label, args in (("pytest --version", ["--version"]),
                            ("pytest (one plain test)", ["-q", "-p", "no:cacheprovider"])):
            on = best_time(args, cwd, runs)
            off = best_time(args + ["-p", "no:paddle_infer"], cwd, runs)
            print(f"{label:<36}{on:>12.3f}{off:>12.3f}{on - off:>+10.3f}")


if __name__ == "__main__":
    main()
