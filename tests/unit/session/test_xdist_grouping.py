"""xdist_scheduling.py: the xdist scheduler's grouping without a pytest session: the plan, the batches, and the
scheduler driven with stand-in workers as xdist's controller drives it."""
from types import SimpleNamespace

import pytest
from xdist.remote import Producer

from pytest_paddle_infer.session.xdist_grouping import (SETUP, SPLIT_GAIN, case_key, makespan, plan, read_cases, read_history, scheduler_class, take_batch, write_json)

MODES = ("cpu_fp32", "onednn_fp32", "onednn_bf16")


def sweep(*models, modes=MODES, shapes=("1x", "4x"), plain=()):
    """A collection as a suite declares it (model, shape, mode), plain tests after."""
    collection, cases = [], {}
    for model in models:
        for shape in shapes:
            for mode in modes:
                nodeid = f"s.yaml::{model}[{shape}-{mode}]"
                collection.append(nodeid)
                cases[nodeid] = (f"zoo:{model}", mode)
    return collection + [f"test_p.py::{t}" for t in plain], cases


def handed_out(collection, order, units):
    """The units in the order they go out, then the plain tests."""
    return list(dict.fromkeys(units.get(i, collection[i]) for i in order))


def test_without_cases_the_order_is_loads():
    collection = [f"test_p.py::test_{i}" for i in range(5)]
    assert plan(collection, {}, {}, workers=2) == ([0, 1, 2, 3, 4], {})


def test_models_are_units_costliest_first_then_plain_tests_in_order():
    collection, cases = sweep("small", "big", "mid", plain=("test_b", "test_a"))
    history = {"zoo:big": {m: 0.3 for m in MODES}, "zoo:mid": {m: 0.2 for m in MODES},
               "zoo:small": {m: 0.01 for m in MODES}}
    order, units = plan(collection, cases, history, workers=2)
    assert handed_out(collection, order, units) == [
        "zoo:big", "zoo:mid", "zoo:small", "test_p.py::test_b", "test_p.py::test_a"]
    big = [collection[i] for i in order[:6]]
    assert big == [n for n in collection if "::big[" in n]  # collection order inside a unit
    assert sorted(order) == list(range(len(collection)))


def test_without_history_more_cases_go_first_and_ties_keep_collection_order():
    collection, cases = sweep("a", "b", modes=("cpu_fp32",))
    more, more_cases = sweep("c", modes=MODES)
    order, units = plan(collection + more, {**cases, **more_cases}, {}, workers=2)
    assert handed_out(collection + more, order, units) == ["zoo:c", "zoo:a", "zoo:b"]


def test_a_model_without_history_costs_the_mean_of_those_with_one():
    collection, cases = sweep("known", "new")
    order, units = plan(collection, cases, {"zoo:known": {"cpu_fp32": 0.1}}, workers=2)
    assert handed_out(collection, order, units) == ["zoo:known", "zoo:new"]  # a tie: file order


def test_a_model_that_holds_up_the_sweep_is_split_by_run_mode():
    collection, cases = sweep("resnet50", "mobilenet", "tiny")
    history = {"zoo:resnet50": {"cpu_fp32": 1.9, "onednn_fp32": 0.8, "onednn_bf16": 1.0},
               "zoo:mobilenet": {m: 0.2 for m in MODES}, "zoo:tiny": {m: 0.02 for m in MODES}}
    order, units = plan(collection, cases, history, workers=2)
    assert handed_out(collection, order, units) == [
        "zoo:resnet50 cpu_fp32", "zoo:resnet50 onednn_bf16", "zoo:resnet50 onednn_fp32",
        "zoo:mobilenet", "zoo:tiny"]
    # each run mode's cases stay together: its candidate predictor is built once
    first = [collection[i] for i in order[:2]]
    assert first == ["s.yaml::resnet50[1x-cpu_fp32]", "s.yaml::resnet50[4x-cpu_fp32]"]


@pytest.mark.parametrize("workers, seconds, split", [
    (2, 1.0, True),
    (1, 1.0, False),     # one worker: nothing to balance
    (2, 0.05, False),    # less than SPLIT_GAIN to win: not worth loading the model twice
])
def test_a_split_must_pay_for_itself(workers, seconds, split):
    collection, cases = sweep("big", "small")
    history = {"zoo:big": {m: seconds for m in MODES}, "zoo:small": {m: seconds / 10 for m in MODES}}
    _, units = plan(collection, cases, history, workers)
    assert (len(set(units.values())) > 2) is split


def test_models_of_the_same_cost_that_hold_up_the_sweep_are_split_together():
    """Splitting one of two equally costly models leaves the other holding up the sweep: the
    scale sweep's shape (12 models, 16 workers), where the two costliest must both split."""
    names = [f"m{n}" for n in range(12)]
    collection, cases = sweep(*names)
    history = {f"zoo:{n}": {m: (1.5 if n in ("m0", "m1") else 0.3) for m in MODES} for n in names}
    _, units = plan(collection, cases, history, workers=16)
    split = {unit.split(" ")[0] for unit in units.values() if " " in unit}
    assert split == {"zoo:m0", "zoo:m1"}


def test_a_model_with_one_run_mode_is_never_split():
    collection, cases = sweep("big", "small", modes=("onednn_fp32",), shapes=("1x", "2x", "4x", "8x"))
    history = {"zoo:big": {"onednn_fp32": 5.0}, "zoo:small": {"onednn_fp32": 0.1}}
    _, units = plan(collection, cases, history, workers=2)
    assert set(units.values()) == {"zoo:big", "zoo:small"}


def test_makespan_hands_the_costliest_to_the_least_loaded():
    assert makespan([3, 3, 2, 2, 2], 2) == 7
    assert makespan([5, 1, 1], 3) == 5
    assert SPLIT_GAIN > 0


def test_a_batch_takes_a_unit_whole_and_at_most_one_unit():
    units = {0: "a", 1: "a", 2: "b", 3: "a", 4: "b"}
    pending = [0, 1, 2, 3, 4, 5, 6]
    assert take_batch(pending, units, 2) == [0, 1, 3]
    assert take_batch(pending, units, 1) == [2, 4]
    assert take_batch(pending, units, 5) == [5, 6]
    assert pending == []


def test_a_batch_of_plain_tests_is_loads_slice():
    pending = list(range(10))
    assert take_batch(pending, {}, 3) == [0, 1, 2]
    assert take_batch(pending, {8: "a", 9: "a"}, 10) == [3, 4, 5, 6, 7, 8, 9]  # a unit ends it


def test_cases_of_one_model_source_share_a_unit():
    def case(name, kind, ref, mode, kwargs=()):
        return SimpleNamespace(model=SimpleNamespace(name=name, kind=kind, ref=ref, kwargs=kwargs),
                               run_mode=SimpleNamespace(label=mode))
    # a suite's "strict_cnn: {source: tiny_cnn}" shares tiny_cnn's export and baselines
    assert case_key(case("strict_cnn", "zoo", "tiny_cnn", "cpu_fp32")) == ("zoo:tiny_cnn", "cpu_fp32")
    assert case_key(case("tiny_cnn", "zoo", "tiny_cnn", "onednn_bf16")) == ("zoo:tiny_cnn", "onednn_bf16")
    wide = case("wide", "builder", "nets:build", "cpu_fp32", kwargs=(("width", 16),))
    assert case_key(wide) == ("builder:nets:build(width=16)", "cpu_fp32")


def test_files_round_trip_and_unreadable_ones_are_ignored(tmp_path):
    write_json(tmp_path / "gw0.json", {"s.yaml::a[1x-cpu_fp32]": ["zoo:a", "cpu_fp32"]})
    (tmp_path / "gw1.json").write_text("{not json")
    assert read_cases(tmp_path) == {"s.yaml::a[1x-cpu_fp32]": ("zoo:a", "cpu_fp32")}
    assert read_history(tmp_path / "missing.json") == {}
    (tmp_path / "h.json").write_text('["a list"]')
    assert read_history(tmp_path / "h.json") == {}
    write_json(tmp_path / "h.json", {"zoo:a": {"cpu_fp32": 0.5}})
    assert read_history(tmp_path / "h.json") == {"zoo:a": {"cpu_fp32": 0.5}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gw0.json", "gw1.json", "h.json"]


# -- the scheduler, driven as xdist's controller drives it --------------------------------


class Worker:
    def __init__(self, name):
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent = []

    def send_runtest_some(self, indices):
        self.sent.extend(indices)

    def shutdown(self):
        self.shutting_down = True


def scheduler(collection, cases, history=None, workers=2, groups=None):
    cls = scheduler_class()
    config = SimpleNamespace(getvalue=lambda name: {"tx": ["popen"] * workers}[name],
                             getoption=lambda name: {"maxschedchunk": None}[name])
    groups = groups or SimpleNamespace(plan=lambda coll, n: plan(coll, cases, history or {}, n))
    sched = cls(config, Producer("test", enabled=False), groups)
    nodes = [Worker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
    for node in nodes:
        sched.add_node_collection(node, collection)
    sched.schedule()
    return sched, nodes


def run_all(sched, nodes, collection):
    """Complete tests as workers do, taking turns (each keeps its last test until more come
    or it shuts down); every test must run once."""
    ran = []
    turn = 0
    while not sched.tests_finished:
        busy = [n for n in nodes if len(sched.node2pending[n]) > (0 if n.shutting_down else 1)]
        assert busy, "the scheduler stalled"
        node = busy[turn % len(busy)]  # the workers take turns
        turn += 1
        index = sched.node2pending[node][0]
        ran.append((node.gateway.id, collection[index]))
        sched.mark_test_complete(node, index, duration=0.01)
    for node in nodes:  # shut down: each runs what it holds
        ran += [(node.gateway.id, collection[i]) for i in sched.node2pending[node]]
    assert sorted(t for _, t in ran) == sorted(collection)
    return ran


def test_the_scheduler_keeps_each_model_on_one_worker_and_spreads_the_rest():
    collection, cases = sweep("a", "b", "c", plain=[f"test_{i}" for i in range(20)])
    sched, nodes = scheduler(collection, cases)
    # first sends: one model per worker, whole
    assert [collection[i].split("[")[0] for i in nodes[0].sent] == ["s.yaml::a"] * 6
    assert [collection[i].split("[")[0] for i in nodes[1].sent] == ["s.yaml::b"] * 6
    ran = run_all(sched, nodes, collection)
    workers_of = {}
    for worker, test in ran:
        workers_of.setdefault(test.split("[")[0], set()).add(worker)
    assert all(len(workers_of[f"s.yaml::{m}"]) == 1 for m in "abc")
    assert {w for w, t in ran if t.startswith("test_p.py")} == {"gw0", "gw1"}


def test_without_cases_the_scheduler_sends_what_load_sends():
    from xdist.scheduler import LoadScheduling

    collection = [f"test_p.py::test_{i}" for i in range(40)]
    ours, our_nodes = scheduler(collection, {})
    config = SimpleNamespace(getvalue=lambda name: {"tx": ["popen"] * 2}[name],
                             getoption=lambda name: {"maxschedchunk": None}[name])
    load = LoadScheduling(config, Producer("test", enabled=False))
    load_nodes = [Worker("gw0"), Worker("gw1")]
    for node in load_nodes:
        load.add_node(node)
    for node in load_nodes:
        load.add_node_collection(node, collection)
    load.schedule()
    assert [n.sent for n in our_nodes] == [n.sent for n in load_nodes]
    for _ in range(12):  # the same refills as tests complete
        for sched, nodes in ((ours, our_nodes), (load, load_nodes)):
            node = nodes[0]
            sched.mark_test_complete(node, sched.node2pending[node][0], duration=0.01)
        assert [n.sent for n in our_nodes] == [n.sent for n in load_nodes]


def test_a_crashed_workers_unit_goes_to_another_worker_whole():
    collection, cases = sweep("a", "b")
    sched, (gw0, gw1) = scheduler(collection, cases)
    first = sched.node2pending[gw0][0]
    sched.mark_test_complete(gw0, first)
    crashed = sched.remove_node(gw0)  # while running its second case
    assert crashed == collection[gw0.sent[1]]
    replacement = Worker("gw2")
    sched.add_node(replacement)
    sched.add_node_collection(replacement, collection)
    sched.schedule()
    assert sorted(replacement.sent) == sorted(gw0.sent[2:])


def test_a_worker_holding_nothing_gets_two_tests_even_across_units():
    """An xdist worker runs a test only once it holds the next one (or is told to stop):
    one single-case unit alone would leave it waiting forever."""
    pending = [0, 1, 2, 3]
    unit_of = {0: "a", 1: "b", 2: "c", 3: "d"}
    assert take_batch(pending, unit_of, 2, minimum=2) == [0, 1]
    assert take_batch(pending, unit_of, 1, minimum=1) == [2]
    assert take_batch(pending, unit_of, 2, minimum=0) == [3]


def test_history_keeps_each_model_and_run_modes_mean_seconds_per_case(tmp_path, monkeypatch):
    """The controller writes each model and run mode's mean seconds per case (setup, call and
    teardown); a worker's first case, which also waited for Paddle to load, counts only where
    nothing else prices its model and mode; entries of models and modes that did not run stay."""
    import json

    from pytest_paddle_infer.session.xdist_grouping import ModelGroups

    path = tmp_path / "xdist-seconds.json"
    path.write_text(json.dumps({"zoo:old": {"cpu_fp32": 9.0}, "zoo:r": {"onednn_bf16": 7.0}}))
    groups = ModelGroups(SimpleNamespace())
    monkeypatch.setattr(groups, "history_path", lambda: path)
    groups.cases = {f"s.yaml::r[{s}-{m}]": ("zoo:r", m) for s in ("1x", "4x")
                    for m in ("cpu_fp32", "onednn_fp32")}

    def reports(nodeid, worker, seconds):
        node = SimpleNamespace(gateway=SimpleNamespace(id=worker))
        for when, part in (("setup", 0.1 * seconds), ("call", 0.9 * seconds), ("teardown", 0.0)):
            groups.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, when=when, duration=part,
                                                            node=node))

    reports("s.yaml::r[1x-cpu_fp32]", "gw0", 8.0)  # gw0's first: priced by the other cpu_fp32 case
    reports("s.yaml::r[4x-cpu_fp32]", "gw0", 3.0)
    reports("s.yaml::r[1x-onednn_fp32]", "gw1", 4.0)  # gw1's first, and only case of its mode
    groups.pytest_sessionfinish(None)
    groups.pytest_unconfigure(None)
    history = json.loads(path.read_text())
    assert history == {"zoo:old": {"cpu_fp32": 9.0},  # r's setup: its first case's 8 s less the mode's 3
                       "zoo:r": {"cpu_fp32": 3.0, "onednn_fp32": 4.0, "onednn_bf16": 7.0, SETUP: 5.0}}

    groups = ModelGroups(SimpleNamespace())  # the next run: each figure averaged with the last
    monkeypatch.setattr(groups, "history_path", lambda: path)
    groups.cases = {"s.yaml::r[1x-cpu_fp32]": ("zoo:r", "cpu_fp32")}
    reports("s.yaml::r[1x-cpu_fp32]", "gw0", 2.0)
    groups.pytest_sessionfinish(None)
    groups.pytest_unconfigure(None)
    assert json.loads(path.read_text())["zoo:r"]["cpu_fp32"] == 2.5


@pytest.mark.parametrize("setup, split", [(0.0, True), (6.0, False)])
def test_each_unit_pays_its_models_setup(setup, split):
    """A model split by run mode loads on each worker that runs a part: where that costs more
    than the split saves, the model stays whole."""
    collection, cases = sweep("big", "small")
    history = {"zoo:big": {**{m: 1.0 for m in MODES}, SETUP: setup},
               "zoo:small": {**{m: 0.1 for m in MODES}, SETUP: setup}}
    _, units = plan(collection, cases, history, workers=3)
    assert (len(set(units.values())) > 2) is split


@pytest.mark.parametrize("seed", range(20))
def test_never_stalls_and_keeps_units_whole(seed):
    """Any history, 2 or 3 workers, plain tests after: every test runs once, no worker waits
    with tests unrun, and each unit (a model's, or one run mode's of a split model) runs on
    one worker."""
    import random

    rng = random.Random(seed)
    models = [f"m{i}" for i in range(rng.randint(1, 5))]
    collection, cases = sweep(*models, modes=rng.sample(MODES, rng.randint(1, 3)),
                              shapes=("1x", "4x", "8x")[:rng.randint(1, 3)],
                              plain=[f"test_{i}" for i in range(rng.choice([0, 3, 12]))])
    history = {f"zoo:{m}": {mode: rng.choice([0.01, 0.2, 1.0, 5.0]) for mode in MODES}
               for m in models if rng.random() < 0.8}
    workers = rng.choice([2, 3])
    sched, nodes = scheduler(collection, cases, history, workers)
    ran = run_all(sched, nodes, collection)
    _, unit_of = plan(collection, cases, history, workers)
    where = {}
    for worker, test in ran:
        if test in cases:
            where.setdefault(unit_of[collection.index(test)], set()).add(worker)
    assert where and all(len(w) == 1 for w in where.values()), where
