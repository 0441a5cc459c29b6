"""modes/cpu_threads.py: the CPU math threads limit and how its message states it."""
from __future__ import annotations

from pytest_paddle_infer.modes import cpu_threads
from pytest_paddle_infer.modes.cpu_threads import FLOOR, MAX_THREADS, PER_CPU, threads_problem


def test_the_limit_is_the_larger_of_the_floor_and_the_per_cpu_count():
    assert MAX_THREADS == max(FLOOR, PER_CPU * cpu_threads.CPUS)
    assert threads_problem(MAX_THREADS) is None
    assert threads_problem(1) is None


def test_one_more_than_the_limit_says_the_limit_and_how_it_is_made():
    said = threads_problem(MAX_THREADS + 1)
    assert said == (f"more threads than this machine can schedule: at most {MAX_THREADS} "
                    f"(the larger of {FLOOR} and {PER_CPU} per usable CPU; "
                    f"{cpu_threads.CPUS} usable here)")


def test_zero_threads():
    assert threads_problem(0) == "a predictor needs at least one thread"


# -- threads ------------------------------------------------------------------------------


def test_thread_limit_is_generous_but_finite():
    assert cpu_threads.MAX_THREADS >= cpu_threads.FLOOR
    assert cpu_threads.MAX_THREADS >= cpu_threads.PER_CPU * cpu_threads.usable_cpus()
    assert cpu_threads.threads_problem(1) is None
    assert cpu_threads.threads_problem(cpu_threads.MAX_THREADS) is None
    assert "at least one thread" in cpu_threads.threads_problem(0)
    assert f"at most {cpu_threads.MAX_THREADS}" in cpu_threads.threads_problem(cpu_threads.MAX_THREADS + 1)
