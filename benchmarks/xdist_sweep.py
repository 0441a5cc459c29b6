"""What ``-n`` buys a sweep: the example CPU sweep serially and under xdist, warm cache.

Runs ``pytest example_suites/cpu_sweep.paddle.yaml -p no:cacheprovider
--paddle-cache-dir=CACHE`` with ``-n 0`` and ``-n 2`` alternately, after one untimed run of
each (exports, and the per-case seconds the scheduler plans with, land in CACHE), checks that
both give the same outcome for every case (JUnit) and the same figures in the paddle-infer
summary table, and prints the median wall times and their ratio (serial / parallel).

    python benchmarks/xdist_sweep.py [--runs 3] [--workers 2] [--cache-dir DIR] [--suite FILE]
        [--xdist-args "-p no:paddle_infer_xdist"]   # e.g. compare with xdist's own load
"""
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.3  # at least this much faster under -n 2 on a 2-core machine


def outcomes(junit: Path) -> dict:
    """Test id -> passed | failed | error | skipped, from a JUnit file."""
    result = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        name = f"{case.get('classname')}::{case.get('name')}"
        result[name] = {"failure": "failed"}.get(kinds[0], kinds[0]) if kinds else "passed"
    return result


def summary_figures(text: str) -> list:
    """The paddle-infer summary's rows without the time column, sorted."""
    rows, inside = [], False
    for line in text.splitlines():
        if "paddle-infer summary" in line:
            inside = True
        elif inside and line.startswith("="):
            break
        elif inside and line.strip() and not line.startswith(("model ", "---")):
            rows.append(tuple(re.split(r"\s{2,}", line.strip())[:-1]))
    return sorted(rows)


def run(suite: str, cache: Path, workers: int, scratch: Path, extra=()):
    junit = scratch / f"junit-n{workers}.xml"
    args = [sys.executable, "-m", "pytest", suite, "-p", "no:cacheprovider",
            f"--paddle-cache-dir={cache}", "-n", str(workers), f"--junitxml={junit}", *extra]
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1) or not junit.is_file():  # 1: some case failed, still comparable
        sys.exit(f"pytest -n {workers} exited {proc.returncode}:\n{proc.stdout[-3000:]}")
    return wall, outcomes(junit), summary_figures(proc.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each (median)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--suite", default="example_suites/cpu_sweep.paddle.yaml")
    parser.add_argument("--xdist-args", default="", help="more pytest arguments for the -n run")
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "paddle-infer-xdist-sweep-cache")
    opts = parser.parse_args()
    opts.cache_dir.mkdir(parents=True, exist_ok=True)
    extra = {0: (), opts.workers: tuple(shlex.split(opts.xdist_args))}
    print(f"{opts.suite} {opts.xdist_args}".rstrip() + f", cache {opts.cache_dir}, {os.cpu_count()} CPUs; "
          f"median of {opts.runs} alternating runs after one untimed run of each")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):  # each process compiles uncached modules
        print("PYTHONDONTWRITEBYTECODE is set: every pytest process compiles the modules it imports "
              "without cached bytecode, which costs -n 2 (three processes) more than -n 0 (one)")
    times = {0: [], opts.workers: []}
    seen = {}
    with tempfile.TemporaryDirectory() as scratch:
        for n in (0, opts.workers):  # warm: exports, and the per-case seconds the scheduler plans with
            run(opts.suite, opts.cache_dir, n, Path(scratch), extra[n])
        for i in range(opts.runs):
            for n in (0, opts.workers):
                wall, cases, figures = run(opts.suite, opts.cache_dir, n, Path(scratch), extra[n])
                times[n].append(wall)
                print(f"  run {i + 1}  -n {n}  wall {wall:6.2f}s  {len(cases)} cases")
                if n in seen and seen[n] != (cases, figures):
                    sys.exit(f"-n {n} gave different outcomes or figures from one run to the next")
                seen[n] = (cases, figures)
    serial, parallel = seen[0], seen[opts.workers]
    same_outcomes = serial[0] == parallel[0]
    same_figures = serial[1] == parallel[1] and len(serial[1]) == len(serial[0])
    s, p = statistics.median(times[0]), statistics.median(times[opts.workers])
    counts = {o: list(serial[0].values()).count(o) for o in sorted(set(serial[0].values()))}
    print(f"outcomes: {'same' if same_outcomes else 'DIFFERENT'} ({counts}); "
          f"summary figures: {'same' if same_figures else 'DIFFERENT'} ({len(serial[1])} rows)")
    print(f"median wall: -n 0 {s:.2f}s, -n {opts.workers} {p:.2f}s")
    print(f"ratio (serial / -n {opts.workers}): {s / p:.2f}  (target {TARGET})")
    if not (same_outcomes and same_figures):
        sys.exit(1)


if __name__ == "__main__":
    main()
