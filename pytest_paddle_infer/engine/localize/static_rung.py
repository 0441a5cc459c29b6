"""The static Executor rung: when the candidate diverges with every optimization off, the program
under ``paddle.static.Executor``. Diverging too points at the framework's ops; agreeing at inference."""
from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path
from typing import List, Optional, Tuple

from ...errors import PaddleInferError
from ...models.cache import run_child
from ...verdict.outputs import compare_outputs
from ...modes.run_modes import ONEDNN

RUNG = "static Executor"
ALL_OFF = "all optimizations off"

CHILD = "pytest_paddle_infer.engine.localize.prune_child"
# seconds the pruning child may take: a hang there must not cost the case its ladder verdict
CHILD_TIMEOUT = 300.0


def all_off_failed(found) -> bool:
    """Did the ladder's rung with every optimization off fail the way the case did?"""
    failure = getattr(found, "failure", None)
    return any(getattr(r, "name", "").startswith(ALL_OFF) and getattr(r, "passed", None) is False
               and (failure is None or r.state == failure) for r in getattr(found, "rungs", ()))


def verdict(executor_passed: Optional[bool], backend: str) -> str:
    if executor_passed is None:
        return "the static Executor could not run the program: no verdict on framework or inference"
    if executor_passed:
        return (f"the static Executor ({backend}) agrees with the baseline while the predictor "
                f"with every optimization off does not: an inference issue (its kernels' "
                f"precision or placement), not the framework's op implementations")
    return (f"the static Executor ({backend}) diverges from the baseline too: the framework's "
            f"op implementations (kernels), not inference, make the difference")


def rung_line(passed: Optional[bool], max_abs: float, change: str, detail: str = "") -> str:
    """Formatted like the ladder's rungs."""
    state = {True: "passes", False: "fails", None: "error"}[passed]
    figure = "" if passed is None else f" (max abs {max_abs:.3g})"
    return f"  {RUNG:<28} {state}{figure}  {change}" + (f"  {detail}" if detail else "")


def child_work(runner, name: str) -> Path:
    """This process's fresh work folder under the cache dir, for a request to the child."""
    work = Path(runner.cache_dir) / name / f"pid{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


def ask_child(command: str, work: Path, request: dict, prepared, what: str) -> dict:
    """``request`` pickled into ``work``, answered by prune_child.py's ``command``."""
    with open(work / "request.pkl", "wb") as f:
        pickle.dump(request, f)
    return run_child([command, str(work / "request.pkl")], prepared.model.format == "legacy", what,
                     module=CHILD, timeout=CHILD_TIMEOUT)


def run_static(runner, prepared, onednn: bool, device: str = "cpu") -> Tuple[Optional[bool], float, str]:
    """(within the case's tolerances?, max abs, error) of the Executor's outputs."""
    import numpy as np

    work = child_work(runner, "static-rung")
    try:
        with open(work / "inputs.npz", "wb") as f:
            np.savez(f, **prepared.inputs)
        try:
            answer = ask_child("static", work, {
                "prog_file": prepared.model.prog_file, "inputs_npz": str(work / "inputs.npz"),
                "onednn": onednn, "device": device, "out_npz": str(work / "out.npz")},
                prepared, "the static Executor rung")
        except PaddleInferError as e:
            return None, float("nan"), str(e).splitlines()[0][:160]
        with np.load(work / "out.npz", allow_pickle=False) as data:
            outputs = {name: data[f"o{i}"] for i, name in enumerate(answer["names"])}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    try:
        rows = compare_outputs(outputs, prepared.baseline_outputs, prepared.case)
    except PaddleInferError as e:  # outputs that do not pair
        return None, float("nan"), str(e).splitlines()[0][:160]
    return all(r.passed for r in rows), max((r.max_abs for r in rows), default=0.0), ""


def static_rung(runner, prepared) -> List[str]:
    case = prepared.case
    if case.baseline == "static":
        return [f"  {RUNG:<28} not run: the case's baseline is the static Executor already"]
    runner.on_phase("localizing", "the static Executor rung")
    onednn = case.run_mode.run_mode.engine == ONEDNN
    device = runner.baseline_device(case, "auto")  # the mode's device: cpu or gpu:N
    backend = ("oneDNN kernels, FLAGS_use_mkldnn" if onednn else "native kernels")
    passed, max_abs, error = run_static(runner, prepared, onednn, device)
    change = f"paddle.static.Executor on {'the CPU' if device == 'cpu' else device} ({backend})"
    return [rung_line(passed, max_abs, change, error), f"  -> {verdict(passed, backend)}"]
