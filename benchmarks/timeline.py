"""Where a sweep's wall time goes, per process: a pytest plugin for the benchmarks (not the
product). Load it with ``-p timeline`` and ``benchmarks`` on PYTHONPATH, and set
PADDLE_INFER_TIMELINE=FILE: every pytest process (the xdist controller and each worker) appends
one JSON line per event: its start, each test's setup/call/teardown start and end, its end.
``summarize(FILE)`` turns them into one line per worker: when its first test began, busy and
idle seconds, when it finished, and the session's wall time."""
import json
import os
import time

import pytest


def _emit(config, event: str, **fields) -> None:
    path = os.environ.get("PADDLE_INFER_TIMELINE")
    if not path:
        return
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    with open(path, "a") as f:
        f.write(json.dumps({"t": time.time(), "worker": worker, "event": event, **fields}) + "\n")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    _emit(config, "start")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.time()
    result = yield
    _emit(item.config, "test", nodeid=item.nodeid, start=start, end=time.time())
    return result


def pytest_unconfigure(config):
    _emit(config, "end")


def summarize(path) -> str:
    events = [json.loads(line) for line in open(path) if line.strip()]
    t0 = min(e["t"] for e in events if e["event"] == "start")
    t_end = max(e["t"] for e in events if e["event"] == "end")
    lines = [f"{'worker':>8}  {'started':>7}  {'1st test':>8}  {'1st took':>8}  {'tests':>5}  "
             f"{'busy':>6}  {'last end':>8}  {'idle at end':>11}"]
    for worker in sorted({e["worker"] for e in events if e["event"] == "test"}):
        mine = [e for e in events if e["worker"] == worker]
        tests = sorted((e for e in mine if e["event"] == "test"), key=lambda e: e["start"])
        started = min(e["t"] for e in mine if e["event"] == "start") - t0
        busy = sum(e["end"] - e["start"] for e in tests)
        last = tests[-1]["end"] - t0
        lines.append(f"{worker:>8}  {started:7.2f}  {tests[0]['start'] - t0:8.2f}  "
                     f"{tests[0]['end'] - tests[0]['start']:8.2f}  {len(tests):5}  {busy:6.2f}  "
                     f"{last:8.2f}  {t_end - t0 - last:11.2f}")
    lines.append(f"session wall (first start to last end): {t_end - t0:.2f}s")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(summarize(sys.argv[1]))
