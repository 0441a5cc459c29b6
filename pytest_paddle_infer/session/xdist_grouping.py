"""Under pytest-xdist, the paddle-infer cases of one model run on one worker, so its export,
program, baselines and candidate predictors are built once per session, not once per worker.

The controller does not collect: each worker writes the model and run mode of every case into
a file the controller named (``workerinput``) before xdist reports its collection. The
scheduler is ``load`` but a unit (a model's cases) goes to a worker whole, units first and the
costliest first (seconds per case in the last run, ``case_seconds``). When models would hold up
the sweep, the costliest are split into one unit per run mode while that takes SPLIT_GAIN
seconds off it: the program is loaded again on each worker, the baselines' outputs are shared
through the cache dir (``SharedBaselines``). With no cases collected the order is ``load``'s.
It replaces ``--dist load`` (``-p no:paddle_infer_xdist`` opts out); imported only with xdist."""
from __future__ import annotations

import json
from collections import defaultdict
from contextlib import suppress
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import pytest

from ..files import atomic_write

PLUGIN_NAME = "paddle_infer_xdist"  # -p no:paddle_infer_xdist opts out
WORKERINPUT_KEY = "paddle_infer_groups_file"
XDIST_PREFIX = "paddle-infer-xdist-"  # the controller's directory in the temp dir
HISTORY_FILE = "xdist-seconds.json"  # in the paddle cache dir: {model: {run mode: s per case}}
SETUP = "(setup)"  # a model's key in it for what a worker pays once for the model (not a mode)
SPLIT_GAIN = 1.0  # seconds a model's split must take off the estimated sweep: it costs a reload

CaseKey = Tuple[str, str]  # (model group, run mode label)
History = Mapping[str, Mapping[str, float]]


def register(config) -> None:
    """The controller's scheduler plugin (with ``--dist load``), or a worker's collection writer."""
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
    """(model source: shares export, program and baselines; run mode: shares a predictor)."""
    model = case.model
    group = f"{model.kind}:{model.ref}"
    if model.kwargs:
        group += "(" + ", ".join(f"{k}={v!r}" for k, v in model.kwargs) + ")"
    return group, case.run_mode.label


# -- the plan: pure, so it is tested without a session ------------------------------------
def plan(collection: Sequence[str], cases: Mapping[str, CaseKey], history: History,
         workers: int) -> Tuple[List[int], Dict[int, str]]:
    """The order to hand out the collection's indices in, and each case index's unit."""
    others = [index for index, nodeid in enumerate(collection) if nodeid not in cases]
    models: Dict[str, List[int]] = {}
    for index, nodeid in enumerate(collection):
        if nodeid in cases:
            models.setdefault(cases[nodeid][0], []).append(index)
    if not models:
        return list(range(len(collection))), {}
    seconds = case_seconds(collection, cases, history)
    setups = [modes[SETUP] for modes in history.values() if SETUP in modes]
    setup_default = sum(setups) / len(setups) if setups else 0.0

    def cost(indices: List[int]) -> float:
        """A unit's cases, and once the model's loading on its worker (each unit pays it)."""
        model = cases[collection[indices[0]]][0] if indices else ""
        return (sum(seconds.get(i, 1.0) for i in indices)
                + (history.get(model, {}).get(SETUP, setup_default) if seconds else 0.0))

    units: Dict[str, List[int]] = dict(models)
    if seconds and workers > 1:  # costs in seconds: worth comparing with SPLIT_GAIN
        units = split_costliest(models, lambda i: cases[collection[i]][1], cost, workers)
    first_seen = {unit: n for n, unit in enumerate(units)}
    ordered = sorted(units, key=lambda unit: (-cost(units[unit]), first_seen[unit]))
    order = [i for unit in ordered for i in units[unit]]
    return order + others, {i: unit for unit in ordered for i in units[unit]}


def split_costliest(models: Dict[str, List[int]], mode_of, cost, workers: int) -> Dict[str, List[int]]:
    """Split the k costliest models into units per run mode, the k that shortens the sweep most
    by SPLIT_GAIN a step (models of about one cost split together: one of two gains nothing)."""
    def by_mode(model):
        found: Dict[str, List[int]] = {}
        for i in models[model]:
            found.setdefault(f"{model} {mode_of(i)}", []).append(i)
        return found

    splittable = [m for m in sorted(models, key=lambda m: -cost(models[m])) if len(by_mode(m)) > 1]
    best_split: List[str] = []
    best_span = makespan([cost(v) for v in models.values()], workers)
    for k in range(1, len(splittable) + 1):
        split = set(splittable[:k])
        span = makespan([cost(v) for m, v in models.items() if m not in split]
                        + [cost(v) for m in split for v in by_mode(m).values()], workers)
        if span <= best_span - SPLIT_GAIN:
            best_split, best_span = splittable[:k], span
    units: Dict[str, List[int]] = {}
    for model in models:  # in the models' collection order
        units.update(by_mode(model) if model in best_split else {model: models[model]})
    return units


def case_seconds(collection: Sequence[str], cases: Mapping[str, CaseKey],
                 history: History) -> Dict[int, float]:
    """Case index -> seconds per case last run (else the mean); empty without any history."""
    keys = {i: cases[nodeid] for i, nodeid in enumerate(collection) if nodeid in cases}
    models = {key[0] for key in keys.values()}
    known = [s for model, modes in history.items() if model in models
             for mode, s in modes.items() if mode != SETUP]
    if not known:
        return {}
    default = sum(known) / len(known)
    return {i: history.get(model, {}).get(mode, default) for i, (model, mode) in keys.items()}


def makespan(costs: Sequence[float], workers: int) -> float:
    """When the last of ``workers`` finishes, the costliest handed first to the least loaded."""
    loads = [0.0] * max(workers, 1)
    for c in sorted(costs, reverse=True):
        loads[loads.index(min(loads))] += c
    return max(loads)


def take_batch(pending: List[int], unit_of: Mapping[int, str], num: int, minimum: int = 0) -> List[int]:
    """At least ``num`` indices from the front of ``pending``, a unit whole and one a batch so
    units spread; more only under ``minimum`` (a worker runs a test once it holds the next)."""
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
        batch.extend(i for i in pending if unit_of.get(i) == unit)
        pending[:] = [i for i in pending if unit_of.get(i) != unit]
    return batch


# -- files ----------------------------------------------------------------------------------
def read_cases(directory: Path) -> Dict[str, CaseKey]:
    """Node id -> (model, run mode) from the files the workers wrote (all collect the same)."""
    cases: Dict[str, CaseKey] = {}
    for path in sorted(directory.glob("*.json")):
        with suppress(OSError, ValueError, TypeError, IndexError, AttributeError):
            cases.update({nodeid: (str(key[0]), str(key[1]))
                          for nodeid, key in json.loads(path.read_text()).items()})
    return cases


def read_history(path: Path) -> Dict[str, Dict[str, float]]:
    """{model: {run mode: seconds per case}} from earlier runs; empty when absent or unreadable."""
    try:
        data = json.loads(path.read_text())
        return {str(model): {str(mode): float(s) for mode, s in modes.items()}
                for model, modes in data.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def write_json(path: Path, data) -> None:
    atomic_write(path, json.dumps(data, indent=1, sort_keys=True))


# -- the controller -------------------------------------------------------------------------
def scheduler_class():
    """xdist's LoadScheduling with units sent whole; None for an xdist without ``_send_tests``."""
    try:
        from xdist.scheduler import LoadScheduling
    except ImportError:
        return None
    if not callable(getattr(LoadScheduling, "_send_tests", None)):
        return None

    class ModelGroupScheduling(LoadScheduling):
        """``load``, with the paddle-infer cases of a unit sent to one worker together."""

        def __init__(self, config, log, groups: "ModelGroups"):
            super().__init__(config, log)
            self.groups = groups
            self.unit_of: Optional[Dict[int, str]] = None

        def _send_tests(self, node, num: int) -> None:
            if self.unit_of is None:  # the first send: the collection is known now
                self._order_pending()
            held = len(self.node2pending[node])
            batch = take_batch(self.pending, self.unit_of, num, minimum=2 - held)
            if batch:
                self.node2pending[node].extend(batch)
                node.send_runtest_some(batch)

        def _order_pending(self) -> None:
            order, self.unit_of = self.groups.plan(self.collection, len(self.node2pending))
            position = {index: n for n, index in enumerate(order)}
            self.pending.sort(key=position.__getitem__)
            if self.unit_of:
                self.log("paddle-infer units, in the order handed out:",
                         list(dict.fromkeys(self.unit_of[i] for i in order if i in self.unit_of)))

    return ModelGroupScheduling


class ModelGroups:
    """The controller's side: the workers' files, the scheduler, and the seconds for next time."""

    def __init__(self, config):
        from .. import scratch

        self.config = config
        scratch.sweep(prefix=XDIST_PREFIX)  # what a killed session left in the temp dir
        self.directory = scratch.make(XDIST_PREFIX)
        self.cases: Dict[str, CaseKey] = {}
        self.history: Dict[str, Dict[str, float]] = {}
        self.seconds: Dict[str, float] = defaultdict(float)  # node id -> setup + call + teardown
        self.units_seen: set = set()  # (worker, model) pairs
        self.firsts: set = set()  # each model's first case on a worker: it also loaded the model

    def history_path(self) -> Optional[Path]:
        from .state import SETTINGS

        settings = self.config.stash.get(SETTINGS, None)
        return None if settings is None else Path(settings.cache_dir) / HISTORY_FILE

    def plan(self, collection: Sequence[str], workers: int) -> Tuple[List[int], Dict[int, str]]:
        self.cases = read_cases(self.directory)
        path = self.history_path()
        self.history = read_history(path) if self.cases and path is not None else {}
        return plan(collection, self.cases, self.history, workers)

    def pytest_configure_node(self, node) -> None:
        if getattr(node.gateway.spec, "popen", False):  # a worker on this machine: it sees the dir
            node.workerinput[WORKERINPUT_KEY] = str(self.directory / f"{node.gateway.id}.json")

    def pytest_xdist_make_scheduler(self, config, log):
        cls = scheduler_class()
        return None if cls is None else cls(config, log, self)

    def pytest_runtest_logreport(self, report) -> None:
        if report.nodeid in self.cases:
            self.seconds[report.nodeid] += report.duration
            worker = getattr(getattr(report, "node", None), "gateway", None)
            pair = (getattr(worker, "id", None), self.cases[report.nodeid][0])
            if worker is not None and pair not in self.units_seen:
                self.units_seen.add(pair)
                self.firsts.add(report.nodeid)

    def pytest_sessionfinish(self, session) -> None:
        """Mean seconds per case by model and mode (-k or -x still price the rest right) and each model's
        setup (its first case beyond the mean), averaged with the last run's so one noisy run does not."""
        path = self.history_path()
        if not self.seconds or path is None:
            return
        runs: Dict[CaseKey, List[float]] = defaultdict(list)
        for nodeid, seconds in self.seconds.items():  # each model's first case on a worker last
            if nodeid not in self.firsts:
                runs[self.cases[nodeid]].append(seconds)
        setups: Dict[str, List[float]] = defaultdict(list)
        for nodeid in self.firsts:
            key = self.cases[nodeid]
            if key in runs:
                setups[key[0]].append(max(0.0, self.seconds[nodeid] - sum(runs[key]) / len(runs[key])))
        for nodeid in self.firsts:  # counted only where nothing else prices its model and mode
            runs.setdefault(self.cases[nodeid], [self.seconds[nodeid]])
        history = read_history(path)
        measured = {key: sum(v) / len(v) for key, v in runs.items()}
        measured.update({(model, SETUP): sum(v) / len(v) for model, v in setups.items()})
        for (model, mode), seconds in measured.items():
            old = history.get(model, {}).get(mode)
            history.setdefault(model, {})[mode] = round(seconds if old is None else (old + seconds) / 2, 4)
        with suppress(OSError):
            write_json(path, history)

    def pytest_unconfigure(self, config) -> None:
        from ..scratch import remove

        remove(self.directory)


class SharedBaselines:
    """The directory of the baseline outputs the workers share, and sweeping killed sessions'."""

    def __init__(self, config):
        self.config = config
        self.directory: Optional[Path] = None

    def pytest_configure_node(self, node) -> None:
        from .. import scratch
        from .state import SETTINGS, SHARED_DIR, expects_cases

        settings = self.config.stash.get(SETTINGS, None)
        testrun = node.workerinput.get("testrunuid")
        if self.directory is not None or settings is None or not testrun:
            return
        parent = Path(settings.cache_dir) / SHARED_DIR
        self.directory = parent / testrun
        if not expects_cases(self.config, settings):  # no cache dir made for a session without cases
            return
        scratch.sweep(parent)
        with suppress(OSError):  # the workers say what is wrong with the cache dir
            parent.mkdir(parents=True, exist_ok=True)
            scratch.make(parent=parent, name=testrun)

    def pytest_unconfigure(self, config) -> None:
        from ..scratch import remove

        if self.directory is not None:  # made by the workers where it was not made above
            remove(self.directory)


# -- a worker -------------------------------------------------------------------------------
class GroupWriter:
    """A worker's side: the model and run mode of every case, before xdist reports collection."""

    def __init__(self, path: Path):
        self.path = path

    @pytest.hookimpl(tryfirst=True)  # xdist sends the collection from its own (plain) impl
    def pytest_collection_finish(self, session) -> None:
        from .items import declared_case

        cases = {item.nodeid: case_key(case) for item in session.items
                 if (case := declared_case(item)) is not None}
        with suppress(OSError):  # no file: the scheduler sends these tests as load does
            write_json(self.path, cases)
