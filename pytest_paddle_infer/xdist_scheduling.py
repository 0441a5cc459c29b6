"""Under pytest-xdist, the paddle-infer cases of one model run on one worker, so the model's
export, program, baselines and candidate predictors are built once per session rather than
once per worker (a model that would hold up the whole sweep is split by run mode; a model
history knows to be cheap may be spread, one case at a time, as fillers).

The controller does not collect, so it cannot see which tests are cases: it gives each worker
a file name in a directory it owns (``workerinput``); each worker, once it has collected and
before xdist reports its collection, writes there the model and run mode of every case; the
scheduler reads those files when it schedules.

The scheduler is xdist's ``load`` with these changes: a unit of cases (a model's) goes to a
worker whole, and the units go out first, the costliest first (a case costs its own seconds in
the last run, kept per model and run mode in the paddle cache dir, plus its model's seconds
per case waiting for baselines, kept apart: ``case_seconds``; a case without history costs the mean of those
with one, or 1 when none has). When one model outweighs the rest, so that the
sweep would wait for its worker, it is split into one unit per run mode, if the estimated
sweep gets at least SPLIT_GAIN seconds shorter (history is needed for that): each candidate
predictor, the costly build, is still built once; the model's program is loaded again on
each worker that runs some of its modes, while its baselines' outputs are computed once and
shared through the cache dir (``SharedBaselines``, ``execute/runner.shared_outputs``).
With history the scheduler looks ahead: a worker about to start its last held case gets the
unit that longest-first assignment over the workers' predicted finish times (the history
seconds of the cases each holds, less what its running case has already run) would give it,
so a worker that will be busy longer than another takes a smaller unit and leaves the
costliest to the one that frees up first (``pick_unit``); it is always sent something while
units remain, or it would idle with its last case unrun. Those predictions are rough (a case
that computes a baseline its sibling shares takes seconds more than its mean, one that finds
it computed seconds less), so while cheap cases remain (each at most FILLER_SECONDS in
history: a small model's) the choice waits: the worker gets one cheap case, and chooses when
it starts that one, its costly case done (``find_filler``). Tests that are not cases go out
after the units, as ``load`` sends them; with no cases collected the order is exactly
``load``'s.

It replaces ``--dist load``, which ``-n`` implies; any other ``--dist`` is left alone, and
``-p no:paddle_infer_xdist`` turns it off. Nothing here is imported unless xdist is loaded.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import pytest

PLUGIN_NAME = "paddle_infer_xdist"  # -p no:paddle_infer_xdist opts out
WORKERINPUT_KEY = "paddle_infer_groups_file"
HISTORY_FILE = "xdist-seconds.json"  # in the paddle cache dir: {model: {run mode: s per case}}
# a model's entry there also holds, under this key (no run mode's label has parentheses), the
# seconds per case its cases waited for its baselines; the modes' seconds are each case's own
BASELINES_KEY = "(baselines)"
BASELINE_PROPERTY = "paddle_baseline_seconds"  # a case's, from its executor (report/text.py)
SPLIT_GAIN = 1.0  # seconds a model's split must take off the estimated sweep: it costs a reload
FILLER_SECONDS = 0.25  # a case this cheap may go to a worker alone, deferring its choice (find_filler)

CaseKey = Tuple[str, str]  # (model group, run mode label)
History = Mapping[str, Mapping[str, float]]


def register(config) -> None:
    """From the plugin's pytest_configure, with xdist loaded: on the controller the scheduler
    plugin, when it distributes with ``load``; on a worker the collection writer, when the
    controller asked for it."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        config.pluginmanager.register(SharedBaselines(config), "paddle_infer_shared_baselines")
    if config.pluginmanager.is_blocked(PLUGIN_NAME):
        return
    if workerinput is not None:
        path = workerinput.get(WORKERINPUT_KEY)
        if path:
            config.pluginmanager.register(GroupWriter(Path(path)), PLUGIN_NAME)
    elif config.getoption("dist", "no") == "load" and config.getoption("tx", None):
        config.pluginmanager.register(ModelGroups(config), PLUGIN_NAME)


def case_key(case) -> CaseKey:
    """Cases of one model source share its export, program and baselines; one run mode's
    cases share a candidate predictor."""
    model = case.model
    group = f"{model.kind}:{model.ref}"
    if model.kwargs:
        group += "(" + ", ".join(f"{k}={v!r}" for k, v in model.kwargs) + ")"
    return group, case.run_mode.label


# -- the plan: pure, so it is tested without a session ------------------------------------


def plan(collection: Sequence[str], cases: Mapping[str, CaseKey], history: History,
         workers: int) -> Tuple[List[int], Dict[int, str]]:
    """The order in which to hand out the collection's indices, and the unit (cases that go
    to one worker together) of each case's index; see the module's docstring."""
    models: Dict[str, List[int]] = {}
    others: List[int] = []
    for index, nodeid in enumerate(collection):
        key = cases.get(nodeid)
        if key is None:
            others.append(index)
        else:
            models.setdefault(key[0], []).append(index)
    if not models:
        return list(range(len(collection))), {}
    seconds = case_seconds(collection, cases, history)

    def cost(indices: List[int]) -> float:
        return sum(seconds.get(i, 1.0) for i in indices)

    units: Dict[str, List[int]] = dict(models)
    if seconds and workers > 1:  # costs in seconds: worth comparing with SPLIT_GAIN
        for model in sorted(models, key=lambda m: -cost(models[m])):
            by_mode: Dict[str, List[int]] = {}
            for i in models[model]:
                by_mode.setdefault(f"{model} {cases[collection[i]][1]}", []).append(i)
            if len(by_mode) < 2:
                continue
            split = {u: v for u, v in units.items() if u != model}
            split.update(by_mode)
            before = makespan([cost(v) for v in units.values()], workers)
            if before - makespan([cost(v) for v in split.values()], workers) >= SPLIT_GAIN:
                units = split
    first_seen = {unit: n for n, unit in enumerate(units)}
    ordered = sorted(units, key=lambda unit: (-cost(units[unit]), first_seen[unit]))
    order = [i for unit in ordered for i in units[unit]]
    return order + others, {i: unit for unit in ordered for i in units[unit]}


def case_seconds(collection: Sequence[str], cases: Mapping[str, CaseKey],
                 history: History) -> Dict[int, float]:
    """Each case's index -> its seconds in the last run (its model and run mode's own, plus its
    model's baselines' seconds per case), or the mean of those with history when it has none;
    empty when no collected model has history.

    A model's baselines are computed once, by whichever of its cases (under a split, on
    whichever worker) gets there first; priced on those cases, they would make that run mode
    look costly the next time and go first again, whatever its own cost."""
    keys = {i: cases[nodeid] for i, nodeid in enumerate(collection) if nodeid in cases}
    models = {key[0] for key in keys.values()}
    known = [s for model, modes in history.items() if model in models
             for mode, s in modes.items() if mode != BASELINES_KEY]
    if not known:
        return {}
    default = sum(known) / len(known)
    return {i: history.get(model, {}).get(mode, default) + history.get(model, {}).get(BASELINES_KEY, 0.0)
            for i, (model, mode) in keys.items()}


def known_cases(collection: Sequence[str], cases: Mapping[str, CaseKey], history: History) -> Set[int]:
    """The indices of the cases whose model and run mode have seconds in history."""
    return {i for i, nodeid in enumerate(collection) if nodeid in cases
            and cases[nodeid][1] in history.get(cases[nodeid][0], {})}


def pick_unit(units: Mapping[str, float], asker, loads: Mapping) -> Optional[str]:
    """The unit to send the worker ``asker``, which is about to start its last held test:
    the one it would get if the remaining ``units`` (unit -> seconds, in handout order) were
    handed out costliest first, each to the worker predicted to finish first (``loads``: each
    worker's predicted remaining seconds; the asker wins ties). So a worker that will be busy
    longer than another leaves the big unit to the one that frees up first and takes a smaller
    one. When that would give it nothing, the cheapest: it must get something, or it idles
    (and xdist asks again only for a worker that completes a test). None when none remain."""
    if not units:
        return None
    finish = {worker: float(load) for worker, load in loads.items()}
    finish.setdefault(asker, 0.0)
    workers = [asker] + [w for w in finish if w != asker]  # min() keeps the first of equals
    order = sorted(units, key=lambda unit: -units[unit])  # stable: handout order among equals
    for unit in order:
        first = min(workers, key=finish.__getitem__)
        if first == asker:
            return unit
        finish[first] += units[unit]
    return order[-1]


def filler_units(unit_of: Mapping[int, str], seconds: Mapping[int, float], known: Set[int]) -> Set[str]:
    """The units whose every case is ``known`` from history to take at most FILLER_SECONDS (a
    case without history is priced at the others' mean: that says nothing of its own cost)."""
    cheap: Dict[str, bool] = {}
    for index, unit in unit_of.items():
        fits = index in known and seconds.get(index, FILLER_SECONDS + 1) <= FILLER_SECONDS
        cheap[unit] = cheap.get(unit, True) and fits
    return {unit for unit, yes in cheap.items() if yes}


def find_filler(pending: Sequence[int], unit_of: Mapping[int, str], fillers: Set[str],
                seconds: Mapping[int, float], held: int) -> Optional[int]:
    """What a worker about to start its last held test (``held``) gets instead of a unit:
    one case of a filler unit, the cheapest pending; None when the held test is not a case
    of a costlier unit or no costlier unit is pending (nothing to choose between).

    Which unit a worker should take next depends on when it frees up, which history predicts
    badly: a case that computes a baseline its sibling shares, or waits for one, takes
    seconds more or less than its mean. With a filler the worker asks again when it starts
    that case, its held test done, and chooses knowing it is free. The filler unit so spread
    over the workers costs a cheap model's reload on each."""
    held_unit = unit_of.get(held)
    if held_unit is None or held_unit in fillers:
        return None
    choice = [i for i in pending if unit_of.get(i) is not None]
    cheap = [i for i in choice if unit_of[i] in fillers]
    if not cheap or len(cheap) == len(choice):
        return None
    return min(cheap, key=lambda i: seconds.get(i, FILLER_SECONDS))  # first of equals: pending order


def makespan(costs: Sequence[float], workers: int) -> float:
    """When the last of ``workers`` finishes, handing out the costliest first to the least
    loaded (what the scheduler does, give or take the order workers ask in)."""
    loads = [0.0] * max(workers, 1)
    for c in sorted(costs, reverse=True):
        loads[loads.index(min(loads))] += c
    return max(loads)


def take_batch(pending: List[int], unit_of: Mapping[int, str], num: int, minimum: int = 0,
               pick: Optional[Callable[[List[int]], Optional[str]]] = None) -> List[int]:
    """Take from the front of ``pending`` at least ``num`` indices (fewer when it runs out):
    a unit's every pending index comes along with its first, and a batch holds one unit, so
    the units spread over the workers; more only while the batch is under ``minimum`` (an
    xdist worker runs a test only once it holds the next one, or has been told to stop).
    When a unit is at the front, ``pick`` (given the batch so far) may name another pending
    unit to take instead."""
    batch: List[int] = []
    took_unit = False
    while pending and len(batch) < max(num, minimum):
        unit = unit_of.get(pending[0])
        if unit is None:
            batch.append(pending.pop(0))
            continue
        if took_unit and len(batch) >= minimum:
            break
        took_unit = True
        unit = (pick(batch) if pick is not None else None) or unit
        batch.extend(i for i in pending if unit_of.get(i) == unit)
        pending[:] = [i for i in pending if unit_of.get(i) != unit]
    return batch


# -- files ----------------------------------------------------------------------------------


def read_cases(directory: Path) -> Dict[str, CaseKey]:
    """Node id -> (model, run mode) from the files the workers wrote (all collect the same)."""
    cases: Dict[str, CaseKey] = {}
    for path in sorted(directory.glob("*.json")):
        try:
            cases.update({nodeid: (str(key[0]), str(key[1]))
                          for nodeid, key in json.loads(path.read_text()).items()})
        except (OSError, ValueError, TypeError, IndexError, AttributeError):
            continue
    return cases


def read_history(path: Path) -> Dict[str, Dict[str, float]]:
    """{model: {run mode: own seconds per case, BASELINES_KEY: the model's baselines' seconds
    per case}} from earlier runs; empty when absent or unreadable."""
    try:
        data = json.loads(path.read_text())
        return {str(model): {str(mode): float(s) for mode, s in modes.items()}
                for model, modes in data.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def write_json(path: Path, data) -> None:
    """Whole or not at all: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- the controller -------------------------------------------------------------------------


def scheduler_class():
    """xdist's LoadScheduling with units sent whole; None for an xdist without the method it
    refines (then ``load`` itself schedules)."""
    try:
        from xdist.scheduler import LoadScheduling
    except ImportError:
        return None
    if not callable(getattr(LoadScheduling, "_send_tests", None)):
        return None

    class ModelGroupScheduling(LoadScheduling):
        """``load``, with the paddle-infer cases of a unit sent to one worker together."""

        clock = staticmethod(time.monotonic)

        def __init__(self, config, log, groups: "ModelGroups"):
            super().__init__(config, log)
            self.groups = groups
            self.unit_of: Optional[Dict[int, str]] = None
            self.seconds: Dict[int, float] = {}  # a case's index -> its seconds in history
            self.fillers: Set[str] = set()  # units cheap enough to defer a choice (find_filler)
            self.started: Dict[object, float] = {}  # a worker -> when its first held test began

        def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
            self.started[node] = self.clock()  # its next test starts now (once it holds two)
            super().mark_test_complete(node, item_index, duration)

        def _send_tests(self, node, num: int) -> None:
            if self.unit_of is None:  # the first send: the collection is known now
                self._order_pending()
            held = len(self.node2pending[node])
            if held < 2:  # it runs its first held test only from now on
                self.started[node] = self.clock()
            filler = self._filler(node) if held == 1 else None
            if filler is not None:  # the choice of a unit waits until the worker is nearly free
                self.pending.remove(filler)
                batch = [filler]
                self.log("filler:", self.collection[filler], "to", node.gateway.id,
                         "(it chooses its next unit when it starts this)")
            else:
                pick = (lambda batch: self._pick_unit(node, batch)) if self.seconds else None
                batch = take_batch(self.pending, self.unit_of, num, minimum=2 - held, pick=pick)
            if batch:
                self.node2pending[node].extend(batch)
                node.send_runtest_some(batch)

        def _filler(self, node) -> Optional[int]:
            """A cheap case that defers the worker's choice of a unit (find_filler)."""
            if not self.fillers or len(self.node2pending) < 2:
                return None
            return find_filler(self.pending, self.unit_of, self.fillers, self.seconds,
                               self.node2pending[node][0])

        def _pick_unit(self, node, batch: List[int]) -> Optional[str]:
            """Look ahead: the unit greedy assignment over the workers' predicted finish
            times would give ``node`` (pick_unit)."""
            units: Dict[str, float] = {}
            for index in self.pending:
                unit = self.unit_of.get(index)
                if unit is not None:
                    units[unit] = units.get(unit, 0.0) + self.seconds.get(index, 0.0)
            loads = {worker: self._remaining(worker) for worker in self.node2pending}
            loads[node] += sum(self.seconds.get(index, 0.0) for index in batch)
            unit = pick_unit(units, node, loads)
            if unit is not None and self.unit_of.get(self.pending[0]) != unit:
                self.log("look-ahead:", unit, "to", node.gateway.id, "predicted seconds left:",
                         {w.gateway.id: round(s, 2) for w, s in loads.items()})
            return unit

        def _remaining(self, worker) -> float:
            """The history seconds of the worker's held tests, less what its first has run."""
            costs = [self.seconds.get(index, 0.0) for index in self.node2pending[worker]]
            if not costs:
                return 0.0
            ran = self.clock() - self.started.get(worker, self.clock())
            return sum(costs) - min(costs[0], max(ran, 0.0))

        def _order_pending(self) -> None:
            order, self.unit_of = self.groups.plan(self.collection, len(self.node2pending))
            # no history, no look-ahead (a stand-in without case_seconds neither)
            seconds = getattr(self.groups, "case_seconds", None)
            self.seconds = seconds(self.collection) if self.unit_of and seconds else {}
            known = getattr(self.groups, "known_cases", None)
            self.fillers = filler_units(self.unit_of, self.seconds, known(self.collection)) \
                if known and self.seconds else set()
            position = {index: n for n, index in enumerate(order)}
            self.pending.sort(key=position.__getitem__)
            if self.unit_of:
                self.log("paddle-infer units, in the order handed out:",
                         list(dict.fromkeys(self.unit_of[i] for i in order if i in self.unit_of)))

    return ModelGroupScheduling


class ModelGroups:
    """The controller's side: a directory for the workers' files, the scheduler, and each
    case's seconds, kept per model and run mode for the next run's plan."""

    def __init__(self, config):
        self.config = config
        self.directory = Path(tempfile.mkdtemp(prefix="paddle-infer-xdist-"))
        self.cases: Dict[str, CaseKey] = {}
        self.history: Dict[str, Dict[str, float]] = {}
        self.seconds: Dict[str, float] = defaultdict(float)  # node id -> setup + call + teardown
        self.baseline_seconds: Dict[str, float] = {}  # node id -> its part spent on baselines
        self.workers_seen: set = set()
        self.firsts: set = set()  # each worker's first case: it also waited for Paddle to load

    def history_path(self) -> Optional[Path]:
        from .plugin import SETTINGS

        settings = self.config.stash.get(SETTINGS, None)
        return None if settings is None else Path(settings.cache_dir) / HISTORY_FILE

    def plan(self, collection: Sequence[str], workers: int) -> Tuple[List[int], Dict[int, str]]:
        self.cases = read_cases(self.directory)
        path = self.history_path()
        self.history = read_history(path) if self.cases and path is not None else {}
        return plan(collection, self.cases, self.history, workers)

    def case_seconds(self, collection: Sequence[str]) -> Dict[int, float]:
        """After plan: each case's seconds as the plan costed it (empty without history)."""
        return case_seconds(collection, self.cases, self.history)

    def known_cases(self, collection: Sequence[str]) -> Set[int]:
        """After plan: the cases history prices with their own seconds."""
        return known_cases(collection, self.cases, self.history)

    def pytest_configure_node(self, node) -> None:
        if getattr(node.gateway.spec, "popen", False):  # a worker on this machine: it sees the dir
            node.workerinput[WORKERINPUT_KEY] = str(self.directory / f"{node.gateway.id}.json")

    def pytest_xdist_make_scheduler(self, config, log):
        cls = scheduler_class()
        return None if cls is None else cls(config, log, self)

    def pytest_runtest_logreport(self, report) -> None:
        if report.nodeid in self.cases:
            self.seconds[report.nodeid] += report.duration
            if report.when == "call":
                spent = dict(getattr(report, "user_properties", ())).get(BASELINE_PROPERTY)
                try:
                    self.baseline_seconds[report.nodeid] = max(float(spent), 0.0)
                except (TypeError, ValueError):
                    pass
            worker = getattr(getattr(report, "node", None), "gateway", None)
            if worker is not None and worker.id not in self.workers_seen:
                self.workers_seen.add(worker.id)
                self.firsts.add(report.nodeid)

    def pytest_sessionfinish(self, session) -> None:
        """Each model and run mode's mean seconds per case that ran, without the time the
        case waited for baselines, and each model's mean of that time per case that ran
        (means: a run of part of a suite, -k or -x, still prices the rest right)."""
        path = self.history_path()
        if not self.seconds or path is None:
            return
        runs: Dict[CaseKey, List[float]] = defaultdict(list)
        baselines: Dict[str, List[float]] = defaultdict(list)
        own = {nodeid: max(seconds - self.baseline_seconds.get(nodeid, 0.0), 0.0)
               for nodeid, seconds in self.seconds.items()}
        for nodeid, seconds in own.items():  # each worker's first case last
            baselines[self.cases[nodeid][0]].append(self.baseline_seconds.get(nodeid, 0.0))
            if nodeid not in self.firsts:
                runs[self.cases[nodeid]].append(seconds)
        for nodeid in self.firsts:  # counted only where nothing else prices its model and mode
            runs.setdefault(self.cases[nodeid], [own[nodeid]])
        history = read_history(path)
        for (model, mode), seconds in runs.items():
            history.setdefault(model, {})[mode] = round(sum(seconds) / len(seconds), 4)
        for model, seconds in baselines.items():
            history.setdefault(model, {})[BASELINES_KEY] = round(sum(seconds) / len(seconds), 4)
        try:
            write_json(path, history)
        except OSError:
            pass

    def pytest_unconfigure(self, config) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


class SharedBaselines:
    """The controller removes the baseline outputs its workers shared (check.shared_outputs)."""

    def __init__(self, config):
        self.config = config
        self.testrun: Optional[str] = None

    def pytest_configure_node(self, node) -> None:
        self.testrun = node.workerinput.get("testrunuid")

    def pytest_unconfigure(self, config) -> None:
        from .execute import SHARED_DIR
        from .plugin import SETTINGS

        settings = config.stash.get(SETTINGS, None)
        if self.testrun and settings is not None:
            shutil.rmtree(Path(settings.cache_dir) / SHARED_DIR / self.testrun, ignore_errors=True)


# -- a worker -------------------------------------------------------------------------------


class GroupWriter:
    """A worker's side: once it has collected, and before xdist reports the collection to the
    controller, write the model and run mode of every paddle-infer case."""

    def __init__(self, path: Path):
        self.path = path

    @pytest.hookimpl(tryfirst=True)  # xdist sends the collection from its own (plain) impl
    def pytest_collection_finish(self, session) -> None:
        from .plugin import declared_case

        cases = {}
        for item in session.items:
            case = declared_case(item)
            if case is not None:
                cases[item.nodeid] = case_key(case)
        try:
            write_json(self.path, cases)
        except OSError:  # no file: the scheduler sends these tests as load does
            pass
