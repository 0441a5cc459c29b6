"""How a sweep scales with cores: one suite serially and under ``-n 2/4/8/16``, warm cache.

Runs ``pytest SUITE -p no:cacheprovider --paddle-cache-dir=CACHE -n N`` for each N, after one
untimed run at the largest N (exports, and the per-case seconds the grouping plans with, land
in CACHE). Rounds alternate over all N so a machine's drift spreads over every figure; prints
each N's median wall time and its speed-up over serial, and checks every N gives the same
outcome for every case (JUnit) and the same figures in the paddle-infer summary table.

    python benchmarks/scale_sweep.py [--suite ../shared/device/scale.paddle.yaml]
        [--workers 0,2,4,8,16] [--runs 1] [--cache-dir DIR] [--no-warm] [--serial SECONDS]
        [--timeline 16]   # then one more run at -n 16: each worker's start-up, busy and idle time
"""
import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from xdist_sweep import run  # noqa: E402  (one pytest run: wall, outcomes, summary figures)

TARGET = 4.0  # -n 16 against serial on 16 cores (the redesign issue's figure)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="example_suites/cpu_sweep.paddle.yaml")
    parser.add_argument("--workers", default="0,2,4,8,16",
                        help="comma-separated -n values; 0 is serial")
    parser.add_argument("--serial", type=float, default=None,
                        help="serial seconds measured before (when --workers leaves 0 out)")
    parser.add_argument("--runs", type=int, default=1, help="timed rounds (median)")
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "paddle-infer-scale-sweep-cache")
    parser.add_argument("--no-warm", action="store_true", help="the cache is warm already")
    parser.add_argument("--timeline", type=int, default=None, metavar="N",
                        help="after the rounds, one run at -n N with benchmarks/timeline.py")
    opts = parser.parse_args()
    counts = sorted({int(n) for n in opts.workers.split(",") if n.strip()})
    if 0 not in counts and opts.serial is None:
        parser.error("--workers leaves out 0: give the serial seconds with --serial")
    suite = str(Path(opts.suite).resolve())
    opts.cache_dir.mkdir(parents=True, exist_ok=True)
    print(f"{opts.suite}, cache {opts.cache_dir}, {os.cpu_count()} CPUs, Python "
          f"{sys.version.split()[0]}; median of {opts.runs} alternating round(s)")
    times = {n: [] for n in counts}
    seen = {}
    with tempfile.TemporaryDirectory() as scratch:
        if not opts.no_warm:
            wall, cases, _ = run(suite, opts.cache_dir, counts[-1], Path(scratch))
            print(f"  warm-up -n {counts[-1]}: {wall:.1f}s, {len(cases)} cases", flush=True)
        for i in range(opts.runs):
            for n in (counts if i % 2 == 0 else counts[::-1]):
                wall, cases, figures = run(suite, opts.cache_dir, n, Path(scratch))
                times[n].append(wall)
                seen.setdefault(n, (cases, figures))
                print(f"  round {i + 1}  -n {n:<2}  wall {wall:7.2f}s  {len(cases)} cases", flush=True)
    serial = statistics.median(times[0]) if 0 in counts else opts.serial
    print(f"{'workers':>7}  {'wall':>8}  speed-up")
    for n in counts:
        wall = statistics.median(times[n])
        print(f"{n:>7}  {wall:7.2f}s  {serial / wall:5.2f}x")
    first = seen[counts[0]]
    differing = [n for n in counts if seen[n] != first]
    outcome_counts = {o: list(first[0].values()).count(o) for o in sorted(set(first[0].values()))}
    print(f"outcomes and summary figures: "
          f"{'same for every -n' if not differing else f'DIFFERENT under -n {differing}'} "
          f"({outcome_counts})")
    if counts[-1] >= 16:
        print(f"-n {counts[-1]} speed-up {serial / statistics.median(times[counts[-1]]):.2f}x "
              f"(target {TARGET}x on 16 cores)")
    if opts.timeline is not None:
        print_timeline(suite, opts.cache_dir, opts.timeline)
    if differing:
        sys.exit(1)


def print_timeline(suite: str, cache: Path, workers: int) -> None:
    """One more run, each process logging its tests' start and end (benchmarks/timeline.py)."""
    from timeline import summarize

    here = str(Path(__file__).resolve().parent)
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "timeline.jsonl"
        os.environ["PADDLE_INFER_TIMELINE"] = str(log)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
        wall, _, _ = run(suite, cache, workers, Path(scratch), extra=("-p", "timeline"))
        print(f"timeline, -n {workers}: wall {wall:.2f}s (seconds from the first process's start)")
        print(summarize(log))


if __name__ == "__main__":
    main()
