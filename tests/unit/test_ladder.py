"""localize/ladder.py: the bisection that narrows the passes to blame."""
from pytest_paddle_infer.localize.ladder import bisect


def test_bisect_finds_a_single_culprit_in_log_steps():
    passes = [f"pass_{i}" for i in range(52)]
    trials = []

    def fixes(deleted):
        trials.append(list(deleted))
        return "pass_37" in deleted

    assert bisect(passes, fixes) == ["pass_37"]
    assert len(trials) <= 2 * 6  # two halves per level at most, log2(52) < 6 levels


def test_bisect_keeps_both_halves_when_it_takes_both():
    def fixes(deleted):  # only deleting both pass_1 and pass_6 together helps
        return "pass_1" in deleted and "pass_6" in deleted

    assert bisect([f"pass_{i}" for i in range(8)], fixes) == [f"pass_{i}" for i in range(8)]
