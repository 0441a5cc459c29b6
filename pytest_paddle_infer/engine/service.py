"""The executor child's service: what each request of the pytest process does, with a runner
that keeps models, predictors and baselines between cases (supervise.py starts the child)."""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Callable

# testing only: make the executor child die or hang at a phase, to exercise supervision
FAULT_ENV = "PADDLE_INFER_EXECUTOR_FAULT"
# fault injection, testing only: the fault above fires only at a build whose recipe runs this
# IR pass (no delete_pass of it, IR optimization on), as a crash inside a pass would
FAULT_PASS_ENV = "PADDLE_INFER_FAULT_WITH_PASS"


def _fault(phase: str, recipe: str = "") -> None:
    """``PADDLE_INFER_EXECUTOR_FAULT=PHASE:HOW[:CASE-SUBSTRING]`` (testing only): at PHASE, for cases
    whose id contains CASE-SUBSTRING, die by signal HOW (SIGSEGV, SIGABRT...), ``exit3`` or ``hang``."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    at, how, *which = spec.split(":", 2)
    if at != phase or (which and which[0] not in _CURRENT.get("case", "")):
        return
    with_pass = os.environ.get(FAULT_PASS_ENV)
    if with_pass and (f"delete_pass({with_pass!r})" in recipe or "switch_ir_optim(False)" in recipe):
        return
    sys.stdout.flush()
    if how == "hang":
        while True:
            time.sleep(60)
    if how.startswith("exit"):
        os._exit(int(how[4:] or 1))
    os.kill(os.getpid(), getattr(signal, how))


_CURRENT: dict = {}


class Service:
    """What the child does: a runner, and the prepared cases between prepare and run."""
    def __init__(self, init: dict, send: Callable):
        from ..fork_server import serve_children_from
        from ..goldens import GoldenPolicy
        from .runner import Runner

        serve_children_from(init.get("fork_server", ""))  # its command children and trials fork
        self.send = send
        shared, runs = init.get("shared_dir"), init.get("save_runs")
        self.runner = Runner(Path(init["cache_dir"]), init["device"],
                             GoldenPolicy(init["save_goldens"], init["update_goldens"],
                                          bool(init.get("goldens_float16")), Path(runs) if runs else None),
                             Path(shared) if shared else None)
        self.runner.repro_dir = init.get("repro_dir")  # where --paddle-localize writes repro folders
        self.runner.on_phase = self.phase
        self.runner.trial_init = init  # localization trials run in a child like this one
        self.prepared: dict = {}

    def phase(self, name: str, recipe: str = "") -> None:
        self.send(("phase", name + self.runner.beside_note(), recipe))
        _fault(name, recipe)

    def prepare(self, key: str, case) -> dict:
        _CURRENT["case"] = case.id
        self.prepared.pop(key, None)
        prepared = self.runner.prepare(case)
        self.prepared[key] = prepared
        return {"int8": prepared.int8, "recipe": prepared.candidate_recipe}

    def run(self, key: str, localize: bool):
        prepared = self.prepared[key]  # kept until released: a test may still ask for tensors
        _CURRENT["case"] = prepared.case.id
        result = self.runner.run(prepared)  # then, on a failure, the localization ladder
        if result.failures and localize:  # the tensors diverge (not: a mode that did not run)
            self.runner.on_phase("localizing", prepared.candidate_recipe)
            prepared.failed_result = result  # the steps after the ladder read it (localize/prune.py)
            found = self.runner.localize(prepared)
            result.localization, result.culprit = found.lines(), found.culprit
            result.localization_builds, result.suggested_run_mode = found.builds, found.fix
        return result

    def measure(self, key: str, seeds):
        """--paddle-suggest-tolerances: the prepared case on other seeds' inputs."""
        return self.runner.measure_seeds(self.prepared[key], seeds)

    def about(self):
        """The installed Paddle's capabilities and software environment."""
        from ..goldens import environment
        from ..modes.capabilities import detect

        return detect(), environment("")

    def selfcheck(self):
        """--paddle-selfcheck: each run mode's positive and negative control (selfcheck.py)."""
        from .selfcheck import run_selfcheck

        return run_selfcheck(self.runner, self.phase)

    def trial(self, op: str, *args):
        """A localization trial's request, in a trial child (localize/trials.py)."""
        from .localize.trials import serve

        if op == "setup":  # (case, model, inputs, baseline outputs)
            _CURRENT["case"] = args[0].id
        return serve(self.runner, op, *args)

    def localize_crash(self, key: str, case, failure: str = "crashed"):
        """Localize a case whose candidate killed the executor (or raised: ``failure``): the
        case again without its candidate, then the ladder with every trial in a child."""
        _CURRENT["case"] = case.id
        prepared = self.runner.prepare(case, build_candidate=False)
        self.runner.on_phase("localizing", prepared.candidate_recipe)
        found = self.runner.localize(prepared, failure)
        return {"lines": found.lines(), "culprit": found.culprit, "builds": found.builds, "fix": found.fix}

    def tensors(self, key: str, which: str) -> dict:
        prepared = self.prepared[key]
        return dict(prepared.inputs if which == "inputs" else prepared.baseline_outputs)

    def release(self, key: str) -> None:
        self.prepared.pop(key, None)

    def close(self) -> None:
        self.prepared.clear()
        self.runner.close()


def main() -> int:
    from ..children import hold_to_parent
    from ..modes.capabilities import import_paddle
    from ..supervise import serve

    hold_to_parent()  # a pytest killed by SIGKILL takes its executor with it
    import_paddle()  # every request needs it: import while the pytest process goes on
    return serve(Service)


if __name__ == "__main__":
    sys.exit(main())
