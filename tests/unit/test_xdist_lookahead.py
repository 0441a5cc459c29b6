"""xdist_scheduling.py's look-ahead: the unit a worker about to start its last held test gets is
the one greedy longest-first assignment over the workers' predicted finish times gives it
(pick_unit), and the scheduler, driven on a simulated clock as xdist's controller drives it,
never leaves a worker waiting with nothing sent and keeps every unit on one worker."""
import random
from types import SimpleNamespace

import pytest

from pytest_paddle_infer import xdist_scheduling
from pytest_paddle_infer.xdist_scheduling import case_seconds, filler_units, known_cases, pick_unit, plan

from .test_xdist_scheduling import scheduler  # xdist's controller, with stand-in workers

MODES = ("cpu_fp32", "onednn_fp32", "onednn_bf16")


# -- pick_unit ------------------------------------------------------------------------------


def test_a_worker_busy_longer_than_another_leaves_the_big_unit_to_it():
    """gw0 is about to start its last resnet50 cpu_fp32 case (2.8 s); gw1, 2.7 s into its
    onednn_fp32 unit, is predicted to be free in 2.2 s: resnet50 bf16 is for gw1."""
    units = {"resnet50 onednn_bf16": 1.7, "zoo:mobilenet_v3_small": 1.2, "zoo:tiny_detector": 0.3}
    loads = {"gw0": 2.8, "gw1": 2.2}
    assert pick_unit(units, "gw0", loads) == "zoo:mobilenet_v3_small"
    # and gw1, asking next, gets it
    assert pick_unit({u: s for u, s in units.items() if "mobilenet" not in u}, "gw1",
                     {"gw0": 4.0, "gw1": 0.0}) == "resnet50 onednn_bf16"


def test_a_worker_predicted_to_finish_first_gets_the_costliest():
    units = {"a": 1.0, "b": 5.0, "c": 3.0}
    assert pick_unit(units, "gw1", {"gw0": 4.0, "gw1": 1.0}) == "b"
    assert pick_unit(units, "gw0", {"gw0": 0.0, "gw1": 0.0, "gw2": 0.5}) == "b"


def test_the_largest_unit_that_keeps_the_asker_ahead():
    units = {"huge": 10.0, "mid": 4.0, "small": 1.0}
    # gw1 frees up at 1 s, gw0 at 6 s: huge goes to gw1 (11 s), then gw0 is first again
    assert pick_unit(units, "gw0", {"gw0": 6.0, "gw1": 1.0}) == "mid"
    # three workers: huge and mid go to the two that free up first, gw0 takes small
    assert pick_unit(units, "gw0", {"gw0": 6.0, "gw1": 1.0, "gw2": 2.0}) == "small"


def test_the_asker_always_gets_something():
    # the last unit goes to the asker however long it will still be busy
    assert pick_unit({"last": 9.0}, "gw0", {"gw0": 100.0, "gw1": 0.0}) == "last"
    # greedy assignment would give it nothing: the cheapest, not nothing
    assert pick_unit({"a": 2.0, "b": 1.0, "c": 1.0}, "gw0", {"gw0": 100.0, "gw1": 0.0}) == "c"
    assert pick_unit({}, "gw0", {"gw0": 1.0}) is None
    # an asker the loads do not know (it holds nothing) is free now
    assert pick_unit({"a": 2.0, "b": 1.0}, "gw0", {"gw1": 1.0}) == "a"


def test_ties_go_to_the_asker_and_to_the_unit_handed_out_first():
    assert pick_unit({"a": 2.0, "b": 3.0}, "gw1", {"gw0": 1.0, "gw1": 1.0}) == "b"
    assert pick_unit({"first": 2.0, "second": 2.0}, "gw0", {"gw0": 0.0, "gw1": 0.0}) == "first"
    assert pick_unit({"x": 1.0, "y": 2.0, "z": 2.0}, "gw0", {"gw0": 3.0, "gw1": 1.0}) == "z"


# -- find_filler ----------------------------------------------------------------------------

UNITS = {0: "big", 1: "big", 2: "mid", 3: "tiny", 4: "tiny", 5: "tiny"}  # 6, 7: plain tests
COSTS = {0: 3.0, 1: 2.0, 2: 1.0, 3: 0.2, 4: 0.05, 5: 0.1}


KNOWN = set(COSTS)


def test_filler_units_are_those_whose_every_case_is_known_to_be_cheap():
    assert filler_units(UNITS, COSTS, KNOWN) == {"tiny"}
    assert filler_units(UNITS, {**COSTS, 3: 0.3}, KNOWN) == set()  # one case over FILLER_SECONDS
    # a case without history of its own is priced at the others' mean: not known to be cheap
    assert filler_units(UNITS, COSTS, KNOWN - {5}) == set()


def test_a_model_without_history_is_never_a_filler():
    """A new model, priced at the mean of cheap ones, may be costly: it stays one unit."""
    collection = [f"s.yaml::{m}[{s}-cpu_fp32]" for m in ("cheap", "new") for s in ("1x", "4x")]
    cases = {nodeid: (f"zoo:{nodeid.split('::')[1].split('[')[0]}", "cpu_fp32") for nodeid in collection}
    history = {"zoo:cheap": {"cpu_fp32": 0.1}}
    _, unit_of = plan(collection, cases, history, workers=2)
    seconds = case_seconds(collection, cases, history)
    assert seconds == {0: 0.1, 1: 0.1, 2: 0.1, 3: 0.1}  # the new model costs the mean
    assert known_cases(collection, cases, history) == {0, 1}
    assert filler_units(unit_of, seconds, known_cases(collection, cases, history)) == {"zoo:cheap"}


def test_a_worker_holding_a_costly_case_gets_the_cheapest_filler_case():
    from pytest_paddle_infer.xdist_scheduling import find_filler

    fillers = filler_units(UNITS, COSTS, KNOWN)
    assert find_filler([2, 3, 4, 5, 6, 7], UNITS, fillers, COSTS, held=1) == 4
    # ties: the first pending
    assert find_filler([2, 5, 4], UNITS, fillers, {**COSTS, 4: 0.1}, held=1) == 5
    # its choice is due now: it holds a filler, or a plain test
    assert find_filler([2, 4, 5], UNITS, fillers, COSTS, held=3) is None
    assert find_filler([2, 4, 5], UNITS, fillers, COSTS, held=6) is None
    # nothing to choose between: only fillers (and plain tests) left, or no filler left
    assert find_filler([4, 5, 6, 7], UNITS, fillers, COSTS, held=1) is None
    assert find_filler([2, 6], UNITS, fillers, COSTS, held=1) is None


def test_without_history_there_is_nothing_to_look_ahead_with():
    collection = ["s.yaml::a[1x-cpu_fp32]", "s.yaml::b[1x-cpu_fp32]", "test_p.py::test_x"]
    cases = {collection[0]: ("zoo:a", "cpu_fp32"), collection[1]: ("zoo:b", "cpu_fp32")}
    assert case_seconds(collection, cases, {}) == {}
    assert case_seconds(collection, cases, {"zoo:other": {"cpu_fp32": 3.0}}) == {}
    # with some: a case without its own costs the mean of those with one; plain tests nothing
    assert case_seconds(collection, cases, {"zoo:a": {"cpu_fp32": 3.0, "onednn_fp32": 1.0}}) \
        == {0: 3.0, 1: 2.0}


def test_a_models_baselines_are_shared_equally_by_its_cases():
    """History keeps each run mode's own seconds and the model's baselines apart: whichever
    mode computed them last time, the modes go out by their own cost."""
    collection = [f"s.yaml::r[{shape}-{mode}]" for shape in ("1x", "4x")
                  for mode in ("cpu_fp32", "onednn_fp32", "onednn_bf16")]
    collection.append("s.yaml::t[1x-cpu_fp32]")
    cases = {nodeid: ("zoo:r" if "::r[" in nodeid else "zoo:t", nodeid.split("-")[-1].rstrip("]"))
             for nodeid in collection}
    history = {"zoo:r": {"cpu_fp32": 1.5, "onednn_fp32": 1.0, "onednn_bf16": 1.4, "(baselines)": 1.0},
               "zoo:t": {"cpu_fp32": 0.1}}
    seconds = case_seconds(collection, cases, history)
    assert seconds == {0: 2.5, 1: 2.0, 2: 2.4, 3: 2.5, 4: 2.0, 5: 2.4, 6: 0.1}
    # the key is not a run mode: a mode without history costs the mean of the modes' own
    assert case_seconds(["s.yaml::t[1x-onednn_fp32]"], {"s.yaml::t[1x-onednn_fp32]": ("zoo:r", "x")},
                        history) == {0: pytest.approx(1.3 + 1.0)}
    assert known_cases(collection, cases, history) == set(range(7))
    order, units = plan(collection, cases, history, workers=2)
    assert list(dict.fromkeys(units[i] for i in order if i in units)) == [
        "zoo:r cpu_fp32", "zoo:r onednn_bf16", "zoo:r onednn_fp32", "zoo:t"]


# -- the scheduler on a simulated clock -----------------------------------------------------


def sweep(models, shapes=("1x", "4x")):
    """models: {model: modes}; the collection as a suite declares it."""
    collection, cases = [], {}
    for model, modes in models.items():
        for shape in shapes:
            for mode in modes:
                nodeid = f"s.yaml::{model}[{shape}-{mode}]"
                collection.append(nodeid)
                cases[nodeid] = (f"zoo:{model}", mode)
    return collection, cases


def simulate(collection, cases, history, real, workers=2, look_ahead=True, plain=()):
    """Run the collection as xdist's workers would, each test taking ``real(nodeid)`` seconds
    on a simulated clock: a worker runs its first held test only while it holds another or
    is shutting down. Returns each worker's tests in the order run, and the wall time."""
    collection = list(collection) + list(plain)
    groups = SimpleNamespace(plan=lambda coll, n: plan(coll, cases, history, n))
    if look_ahead:
        groups.case_seconds = lambda coll: case_seconds(coll, cases, history)
        groups.known_cases = lambda coll: known_cases(coll, cases, history)
    now = [0.0]
    sched, nodes = scheduler(collection, cases, history, workers, groups, clock=lambda: now[0])
    ran = {node.gateway.id: [] for node in nodes}
    running = {}  # node -> (index, when it ends)
    while True:
        for node in nodes:
            held = sched.node2pending.get(node, [])
            if node not in running and held and (len(held) >= 2 or node.shutting_down):
                running[node] = (held[0], now[0] + real(collection[held[0]]))
        if not running:
            break
        node = min(running, key=lambda n: running[n][1])
        index, now[0] = running.pop(node)
        ran[node.gateway.id].append(collection[index])
        sched.mark_test_complete(node, index, duration=real(collection[index]))
    stuck = {n.gateway.id: sched.node2pending[n] for n in nodes if sched.node2pending[n]}
    assert not stuck, f"workers left waiting with tests unrun: {stuck}"
    assert sorted(t for tests in ran.values() for t in tests) == sorted(collection)
    return ran, now[0]


def units_run(ran, cases):
    """Worker -> the (model, mode) keys it ran, in order, each once."""
    return {w: list(dict.fromkeys(cases[t] for t in tests if t in cases)) for w, tests in ran.items()}


# the issue's sweep: resnet50's cpu_fp32 cases are the slowest, and its first onednn_fp32
# case (the predictor's build) takes longer than the mean its history keeps
HISTORY = {"zoo:resnet50": {"cpu_fp32": 2.75, "onednn_fp32": 2.45, "onednn_bf16": 0.85},
           "zoo:mobilenet": {m: 0.2 for m in MODES}, "zoo:tiny": {m: 0.05 for m in MODES}}
REAL = {"s.yaml::resnet50[1x-onednn_fp32]": 3.0, "s.yaml::resnet50[4x-onednn_fp32]": 1.9}


def timer(history, real):
    """A case's real seconds: ``real``'s, else its history's."""
    def seconds(nodeid):
        if nodeid in real:
            return real[nodeid]
        model, mode = nodeid.split("::")[1].split("[")[0], nodeid.split("-")[-1].rstrip("]")
        return history[f"zoo:{model}"][mode]
    return seconds


real_time = timer(HISTORY, REAL)


def test_the_worker_that_frees_up_first_gets_the_big_unit(monkeypatch):
    monkeypatch.setattr(xdist_scheduling, "FILLER_SECONDS", 0.0)  # the look-ahead alone
    collection, cases = sweep({"resnet50": MODES, "mobilenet": MODES, "tiny": MODES})
    ran, wall = simulate(collection, cases, HISTORY, real_time)
    units = units_run(ran, cases)
    # gw0 asks at 2.75 s, holding 2.75 s of resnet50 cpu_fp32; gw1 is due at 4.9 s: gw0 takes
    # mobilenet and bf16 waits for gw1
    assert units["gw0"][:2] == [("zoo:resnet50", "cpu_fp32"), ("zoo:mobilenet", "cpu_fp32")]
    assert units["gw1"][:2] == [("zoo:resnet50", "onednn_fp32"), ("zoo:resnet50", "onednn_bf16")]
    # without looking ahead gw0 takes bf16 and the sweep ends later
    ran_load, wall_load = simulate(collection, cases, HISTORY, real_time, look_ahead=False)
    assert units_run(ran_load, cases)["gw0"][1] == ("zoo:resnet50", "onednn_bf16")
    assert wall < wall_load - 0.3, (wall, wall_load)


def test_without_history_the_sends_are_the_plans_order():
    collection, cases = sweep({"a": MODES, "b": MODES, "c": MODES, "d": MODES})
    slow_b = lambda nodeid: 3.0 if "::b[" in nodeid else 0.5
    ours = simulate(collection, cases, {}, slow_b)
    assert ours == simulate(collection, cases, {}, slow_b, look_ahead=False)


# resnet50 split by run mode: its two first units share its baselines' work, and which case
# computes a baseline (or finds it computed) is decided at run time: this time the onednn_fp32
# worker computed the batch-4 one, so its cases take longer than their history and the
# cpu_fp32 cases less. tiny's cases (0.05 s) are fillers.
SHARED_HISTORY = {"zoo:resnet50": {"cpu_fp32": 3.0, "onednn_fp32": 2.0, "onednn_bf16": 1.6},
                  "zoo:mobilenet": {m: 0.4 for m in MODES}, "zoo:tiny": {m: 0.05 for m in MODES}}
SHARED_REAL = {"s.yaml::resnet50[1x-cpu_fp32]": 1.5, "s.yaml::resnet50[4x-cpu_fp32]": 2.0,
               "s.yaml::resnet50[1x-onednn_fp32]": 2.0, "s.yaml::resnet50[4x-onednn_fp32]": 3.5}
shared_time = timer(SHARED_HISTORY, SHARED_REAL)


def test_a_cheap_case_defers_the_choice_until_the_worker_is_free(monkeypatch):
    collection, cases = sweep({"resnet50": MODES, "mobilenet": MODES, "tiny": MODES})
    ran, wall = simulate(collection, cases, SHARED_HISTORY, shared_time)
    units = units_run(ran, cases)
    # gw0 starts its last cpu_fp32 case at 1.5 s: history has it busy for 3 s more, gw1 for
    # 2.5, so looking ahead it would leave bf16 to gw1; it takes one tiny case instead, and
    # asks again at 3.5 s, free, while gw1 still runs its batch-4 case until 5.5 s: bf16 is
    # gw0's, mobilenet gw1's
    assert units["gw0"][:3] == [("zoo:resnet50", "cpu_fp32"), ("zoo:tiny", "cpu_fp32"),
                                ("zoo:resnet50", "onednn_bf16")], units
    assert ("zoo:mobilenet", "cpu_fp32") in units["gw1"], units
    monkeypatch.setattr(xdist_scheduling, "FILLER_SECONDS", 0.0)
    ran_ahead, wall_ahead = simulate(collection, cases, SHARED_HISTORY, shared_time)
    assert units_run(ran_ahead, cases)["gw0"][1] == ("zoo:mobilenet", "cpu_fp32")
    assert wall < wall_ahead - 0.5, (wall, wall_ahead)


@pytest.mark.parametrize("seed", range(40))
def test_never_stalls_and_keeps_units_whole(seed):
    """Any history, any real times (unrelated to it), 2 or 3 workers, plain tests after; only
    filler units (every case known to be cheap) may be spread over the workers."""
    rng = random.Random(seed)
    models = {f"m{i}": rng.sample(MODES, rng.randint(1, 3)) for i in range(rng.randint(1, 5))}
    collection, cases = sweep(models, shapes=("1x", "4x", "8x")[:rng.randint(1, 3)])
    history = {f"zoo:{m}": {mode: rng.choice([0.01, 0.2, 1.0, 5.0]) for mode in modes}
               for m, modes in models.items() if rng.random() < 0.8}
    times = {t: rng.choice([0.01, 0.05, 0.3, 2.0, 6.0]) for t in collection}
    plain = [f"test_p.py::test_{i}" for i in range(rng.choice([0, 0, 3, 12]))]
    times.update({t: 0.02 for t in plain})
    workers = rng.choice([2, 3])
    ran, _ = simulate(collection, cases, history, times.__getitem__, workers=workers, plain=plain)
    everything = collection + plain
    _, unit_of = plan(everything, cases, history, workers)
    # spread only: a unit whose every case has history of its own, at most 0.25 s
    own = lambda i: history.get(cases[everything[i]][0], {}).get(cases[everything[i]][1], 1.0)
    fillers = {unit for unit in unit_of.values()
               if all(own(i) <= 0.25 for i, u in unit_of.items() if u == unit)}
    where = {}
    for worker, tests in ran.items():
        for test in tests:
            if test in cases:
                where.setdefault(unit_of[everything.index(test)], set()).add(worker)
    assert where and all(len(ws) == 1 for unit, ws in where.items() if unit not in fillers), where


def test_a_worker_that_crashes_holding_a_filler_leaves_it_to_the_others():
    collection, cases = sweep({"resnet50": MODES, "mobilenet": MODES, "tiny": MODES})
    groups = SimpleNamespace(plan=lambda coll, n: plan(coll, cases, SHARED_HISTORY, n),
                             case_seconds=lambda coll: case_seconds(coll, cases, SHARED_HISTORY),
                             known_cases=lambda coll: known_cases(coll, cases, SHARED_HISTORY))
    sched, (gw0, gw1) = scheduler(collection, cases, SHARED_HISTORY, 2, groups)
    sched.mark_test_complete(gw0, sched.node2pending[gw0][0])  # starts its last resnet50 case
    held = [collection[i] for i in sched.node2pending[gw0]]
    assert len(held) == 2 and "::tiny[" in held[1], held  # and got a filler
    assert sched.remove_node(gw0) == held[0]  # crashed on the resnet50 case
    ran = {collection[i] for i in gw0.sent[:1]} | {held[0]}  # what gw0 ran or crashed on
    while not sched.tests_finished:
        pending = sched.node2pending[gw1]
        assert len(pending) > (0 if gw1.shutting_down else 1), "gw1 was left waiting"
        ran.add(collection[pending[0]])
        sched.mark_test_complete(gw1, pending[0])
    ran |= {collection[i] for i in sched.node2pending[gw1]}  # run as it shuts down
    assert ran == set(collection)  # the filler gw0 held among them
