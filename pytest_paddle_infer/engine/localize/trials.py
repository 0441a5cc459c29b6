"""Localization trials in a child of the executor: a trial whose predictor crashes, hangs or
raises is a bad outcome and the search goes on (the next trial starts a fresh child)."""
from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path
from typing import List, Mapping, Optional, Sequence, Tuple

from ...errors import PaddleInferError
from ..predictor import describe_recipe, run_predictor, trim_paddle_error
from ..build_plan import candidate_feeds
from ...verdict.outputs import compare_outputs
from ..capture import run_with_sink
from .pir_passes import list_passes, pass_log, read_pass_log
from ...supervise import Executor, ExecutorBug, ExecutorDied
from ...fork_server import for_children
from ...modes.run_modes import PIR_FORMAT

TRIAL_TIMEOUT = 300.0  # seconds one trial (build and run) may take before it counts as hung
CRASHED, RAISED = "crashed", "raised"  # ladder.Rung.detail prefixes


def build_trial(runner, case, model, inputs, spec, extra: Sequence = ()):
    """(plan, built) of ``spec`` (plus ``extra`` Config calls) like the case's candidate."""
    plan = runner.candidates.plan(spec, model, runner.input_specs(model, dict(case.shapes)),
                                  case.threads, case.seed)
    plan = with_extra_calls(plan, extra)  # e.g. the passes a PIR program runs whatever switch_ir_optim says
    runner.on_phase("building the candidate", describe_recipe(plan.final.recipe))
    return plan, runner.candidates.executor.run(plan, model, inputs)


def judge_trial(runner, case, model, inputs, baseline_outputs, spec, extra: Sequence = ()):
    """A trial judged with the case's tolerances on its inputs: (passed, max abs, "")."""
    plan, built = build_trial(runner, case, model, inputs, spec, extra)
    runner.on_phase("running the candidate", describe_recipe(plan.final.recipe))
    outputs = run_predictor(built.predictor, candidate_feeds(plan, inputs))  # as the case feeds it
    rows = compare_outputs(outputs, baseline_outputs, replace(case, run_mode=spec))
    return all(r.passed for r in rows), max((r.max_abs for r in rows), default=0.0), ""


def with_extra_calls(plan, extra: Sequence):
    """``plan`` with ``extra`` Config calls after its candidate's recipe; the rest stays."""
    if not extra:
        return plan
    final = replace(plan.final, recipe=plan.final.recipe + tuple(extra))
    return replace(plan, steps=plan.steps[:-1] + (final,))


def predictor_op_types(runner, predictor, inputs) -> List[str]:
    """The op types a predictor runs, in first-use order (from its output hooks)."""
    seen: List[str] = []
    record = lambda op_type, name, tensor: seen.append(op_type.rsplit(":", 1)[0])  # noqa: E731
    run_with_sink(runner.hooks.for_predictor(predictor), record, lambda: run_predictor(predictor, inputs))
    return list(dict.fromkeys(seen))


_STATE: dict = {}


def serve(runner, op: str, *args):
    """One request of the trial child: setup, run, pass_log or op_types."""
    try:
        if op == "setup":
            _STATE["case"], _STATE["model"], _STATE["inputs"], _STATE["baseline"] = args
            return None
        case, model, inputs = _STATE["case"], _STATE["model"], _STATE["inputs"]
        if op == "run":
            spec, extra = args
            return judge_trial(runner, case, model, inputs, _STATE["baseline"], spec, extra)
        if op == "pass_log":
            spec, extra, path = args
            runner.on_phase("listing the passes", spec.label)
            return pass_log(spec, model, case.threads, extra, path)
        if op == "op_types":
            plan, built = build_trial(runner, case, model, inputs, *args)
            return predictor_op_types(runner, built.predictor, candidate_feeds(plan, inputs))
    except PaddleInferError:
        raise
    except Exception as e:
        raise PaddleInferError(trim_paddle_error(e)) from None
    raise PaddleInferError(f"unknown trial request {op!r}")


class TrialServer:
    """Trials of one case in a supervised child; one child while none crashes."""
    def __init__(self, init: dict, case, model, inputs: Mapping, baseline_outputs: Mapping,
                 timeout: float = TRIAL_TIMEOUT):
        log_dir = Path(init["cache_dir"]) / "executor" / "trials"
        self.executor = Executor(dict(init), log_dir, timeout, for_children())
        self.payload = (case, model, dict(inputs), dict(baseline_outputs))
        self.ready = -1  # which child (Executor.started) holds the case
        self.listing_builds = 0  # predictors built to list passes and op types, not trials

    def _call(self, op: str, *args):
        if self.executor.proc is None or self.ready != self.executor.started:
            self.executor.call("trial", "setup", *self.payload)
            self.ready = self.executor.started
        return self.executor.call("trial", op, *args)

    def trial(self, spec, extra: Sequence = ()) -> Tuple[Optional[bool], float, str]:
        try:
            return self._call("run", spec, tuple(extra))
        except ExecutorDied as died:
            return False, math.nan, f"{CRASHED}: the trial's process {died.how} while {died.phase}"
        except (PaddleInferError, ExecutorBug) as e:
            return False, math.nan, f"{RAISED}: {str(e).strip().splitlines()[0][:160]}"

    def passes(self, spec, off_calls: Sequence = ()):
        """pir_passes.list_passes, each listing build in the child."""
        case, model = self.payload[:2]
        return list_passes(spec, model, case.threads, off_calls, self._pass_log)

    def _pass_log(self, spec, extra: Sequence = ()) -> Tuple[List[str], str]:
        """(passes named building ``spec``; "" or how it stopped), after a crash from the child's log."""
        if self.payload[1].format == PIR_FORMAT:
            self.listing_builds += 1  # a legacy program's list is the pass builder's: no build
        path = self.executor.log_dir / f"passes-{os.getpid()}-{self.listing_builds}.log"
        try:
            return self._call("pass_log", spec, tuple(extra), str(path))
        except ExecutorDied as died:
            return read_pass_log(path), f"crashed (the process {died.how})"
        except (PaddleInferError, ExecutorBug) as e:
            return read_pass_log(path), f"raised: {str(e).strip().splitlines()[0][:160]}"
        finally:
            path.unlink(missing_ok=True)

    def op_types(self, spec) -> List[str]:
        """The op types ``spec``'s predictor runs; none when it crashes or raises."""
        self.listing_builds += 1
        try:
            return list(self._call("op_types", spec))
        except (ExecutorDied, ExecutorBug, PaddleInferError):
            return []

    def close(self) -> None:
        self.executor.close()
