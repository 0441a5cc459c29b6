"""What supervision costs: a suite run with cases in the supervised executor child against
the same run in the pytest process (``--paddle-executor=inline``).

Warm cache (one run of each first), then alternating runs; prints the medians and the
ratio, and checks that both gave the same summary table.

    python benchmarks/executor_cost.py [--runs 3] [--suite example_suites/cpu_sweep.paddle.yaml]
"""
import argparse
import itertools
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(args, cwd):
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return seconds, summary(proc.stdout)


def summary(stdout: str):
    """The summary table without its time column."""
    lines = stdout.split("paddle-infer summary", 1)[-1].splitlines()[3:]
    table = itertools.takewhile(lambda l: not l.startswith("="), lines)  # the next section
    return [l.rsplit(None, 1)[0] for l in table if l.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--suite", default=str(ROOT / "example_suites" / "cpu_sweep.paddle.yaml"))
    args = parser.parse_args()
    suite = Path(args.suite).resolve()
    with tempfile.TemporaryDirectory() as cwd:
        base = [sys.executable, "-m", "pytest", str(suite), "-p", "no:cacheprovider",
                f"--rootdir={suite.parent}", f"--paddle-cache-dir={Path(cwd) / 'cache'}"]
        commands = {"child": base, "inline": base + ["--paddle-executor=inline"]}
        tables = {name: run(cmd, cwd)[1] for name, cmd in commands.items()}  # warm-up
        if tables["child"] != tables["inline"]:
            sys.exit("the two runs gave different summaries:\n" + "\n".join(tables["child"])
                     + "\n---\n" + "\n".join(tables["inline"]))
        times = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, cmd in commands.items():
                times[name].append(run(cmd, cwd)[0])
    child, inline = statistics.median(times["child"]), statistics.median(times["inline"])
    print(f"{suite.name}: {len(tables['child'])} cases, median of {args.runs} alternating runs")
    print(f"{'supervised executor (child)':<30}{child:>8.2f} s")
    print(f"{'in process (inline)':<30}{inline:>8.2f} s")
    print(f"ratio child/inline {child / inline:.3f}")


if __name__ == "__main__":
    main()
