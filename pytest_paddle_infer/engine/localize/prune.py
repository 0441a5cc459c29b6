"""After the ladder: the static Executor rung, pruning to the first bad op, and the repro folder.
The Paddle work runs in a child (``prune_child.py``), so a crash costs this step, not the case."""
from __future__ import annotations

import math
import shutil
from dataclasses import replace
from pathlib import Path
from typing import List, Optional

from ...errors import PaddleInferError
from ...files import safe_file_stem
from .static_rung import all_off_failed, ask_child, child_work, static_rung
from ..capture import ADDRESS_NAME, nearest
from ...ownership import fresh_folder, record_tree
from .repro import INPUTS, write_repro

LOCAL_BUDGET = 24  # ops measured alone per case, in execution order from the first
MATCH_DISTANCE = 1e-3  # a pruned op's baseline value and a hooked baseline tensor: the same


def prune_step(loc, runner, prepared) -> None:
    """The static Executor rung when every optimization off still fails, then pruning; lines go to
    ``loc.extra``. A crashed candidate has no ``failed_result``."""
    try:
        if all_off_failed(loc):
            loc.extra.extend(static_rung(runner, prepared))
        loc.extra.extend(prune_case(runner, prepared, getattr(prepared, "failed_result", None)))
    except Exception as e:  # never at the cost of the ladder's verdict above
        loc.extra.append(f"pruning: failed: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")


def _calls(runner, prepared):
    """(baseline calls, candidate calls, why not pruned): the case's own recipes."""
    case = prepared.case
    base_case = case if case.baseline in ("auto", "cpu", "gpu") else replace(case, baseline="auto")
    baseline = runner.baseline_calls(base_case, prepared.model)
    specs = runner.input_specs(prepared.model, dict(case.shapes))
    plan = runner.candidates.plan(case.run_mode, prepared.model, specs, case.threads, case.seed)
    why = "" if len(plan.steps) == 1 else (
        f"the candidate takes {len(plan.steps)} steps ({'; '.join(str(s) for s in plan.steps[:-1])}), "
        f"the script builds the last one only, on the model's program")
    return baseline, plan.final.recipe, why


def _tolerance(prepared, result):
    """(atol, rtol, cosine_min) of the first failing output, else of the first output."""
    if result is not None:
        failing = [r for r in result.rows if not r.passed] or \
                  [r.comparison for r in result.divergent if r.judged] or result.rows
        if failing:
            return failing[0].atol, failing[0].rtol, failing[0].bounds.get("cosine_min")
    names = list(prepared.baseline_outputs)
    if not names:
        return 1e-4, 1e-4, None
    rule = prepared.case.tolerances.for_tensor(names[0])
    return rule.atol, rule.rtol, rule.cosine_min


def _hint(prepared, result) -> Optional[dict]:
    """The first divergent intermediate tensor, as the baseline holds it."""
    store = prepared.baseline_store
    divergent = result.divergent if result is not None else []
    if result is not None and all(r.passed for r in result.rows):  # a tensor tolerance failed it
        divergent = [r for r in divergent if r.judged]
    if store is None or not divergent:
        return None
    record = store.by_name.get(divergent[0].baseline_name)
    if record is None:
        return None
    name = "" if ADDRESS_NAME.match(record.name) else record.name
    return {"name": name, "shape": list(record.shape), "fingerprint": record.fingerprint.tolist()}


def prune_case(runner, prepared, result) -> List[str]:
    import numpy as np

    case = prepared.case
    runner.on_phase("localizing", "pruning the program")
    root = getattr(runner, "repro_dir", None)  # else the cache dir's repro/
    root = Path(root) if root else Path(runner.cache_dir) / "repro"
    folder = fresh_folder(root / safe_file_stem(case.id))  # only the plugin's own
    baseline, candidate, why_not = _calls(runner, prepared)
    if result is None and not why_not:  # the cut programs would crash or raise the same way
        why_not = "the candidate crashed or raised before any output was compared: no divergence to prune to"
    atol, rtol, cosine_min = _tolerance(prepared, result)
    work = child_work(runner, "prune")
    lines: List[str] = []
    answer: dict = {}
    try:
        with open(work / "inputs.npz", "wb") as f:
            np.savez(f, **prepared.inputs)
        if not why_not:
            request = {"prog_file": prepared.model.prog_file, "inputs_npz": str(work / "inputs.npz"),
                       "baseline_calls": baseline, "candidate_calls": candidate, "atol": atol,
                       "rtol": rtol, "cosine_min": cosine_min, "hint": _hint(prepared, result),
                       "work_dir": str(work / "cuts"), "repro_dir": str(folder), "budget": LOCAL_BUDGET,
                       # False: only an intermediate a tensor tolerance names fails the case
                       "outputs_fail": result is None or any(not r.passed for r in result.rows)}
            try:
                answer = ask_child("prune", work, request, prepared, "pruning the program")
            except PaddleInferError as e:
                why_not = str(e).splitlines()[0][:200]
        lines += prune_lines(answer, why_not)
        if result is not None:
            mark_local_errors(result, answer, prepared.baseline_store)
        repro = answer.get("repro") or {}
        if repro:
            what = _repro_what(answer, repro)
            program = Path(repro["program"]).name
        else:  # the whole model, on the case's inputs
            model = folder / "model"
            model.mkdir(exist_ok=True)
            suffix = Path(prepared.model.prog_file).suffix
            shutil.copyfile(prepared.model.prog_file, model / f"inference{suffix}")
            shutil.copyfile(prepared.model.params_file, model / "inference.pdiparams")
            shutil.copyfile(work / "inputs.npz", folder / INPUTS)
            what = f"the whole program {Path(prepared.model.prog_file).name} diverges"
            program = f"inference{suffix}"
        script = write_repro(folder, case.id, what, program, baseline, candidate, atol, rtol, lines)
        record_tree(folder)  # what a later run of the case may delete (ownership.py)
        lines.append(f"repro: {folder} (python {script}: plain paddle.inference and numpy)")
        if result is not None:
            result.notes.append(f"repro: {folder}")
            result.repro_dir = str(folder)
            result.first_bad_op = first_bad_text(answer)
    except OSError as e:
        lines.append(f"repro: not written: {e}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return lines


def first_bad_text(answer: dict) -> str:
    """``op 3 pd_op.conv2d (op3:conv2d:0)``, or the run of ops that fails together."""
    if answer.get("first_bad") is not None:
        local = _local(answer, answer["first_bad"]) or {}
        return f"{_op_text(answer, answer['first_bad'])} ({local.get('tensor', '')})"
    if answer.get("run_start") is not None and answer.get("repro"):
        ops = answer["repro"]["ops"]
        return f"ops {ops[0]}..{ops[-1]} together ({', '.join(answer['repro']['types'])})"
    return ""


def _op_text(answer: dict, index: int) -> str:
    return f"op {index} {answer['op_types'][index]}"


def _repro_what(answer: dict, repro: dict) -> str:
    if repro["kind"] == "op":
        return f"{_op_text(answer, repro['ops'][0])} alone, fed the baseline's values, breaks tolerance"
    return (f"ops {repro['ops'][0]}..{repro['ops'][-1]} ({', '.join(repro['types'])}), fed the "
            f"baseline's values at op {repro['ops'][0]}, break tolerance")


def _local(answer: dict, index: int) -> Optional[dict]:
    return next((l for l in answer.get("locals", []) if l["op"] == index), None)


def prune_lines(answer: dict, why_not: str) -> List[str]:
    """What pruning found, for the failure message."""
    if why_not:
        return [f"pruning: not done: {why_not}; the repro holds the whole program"]
    if answer.get("note"):
        return [f"pruning: {answer['note']}; the repro holds the whole program"]
    lines = []
    first_bad, run_start = answer.get("first_bad"), answer.get("run_start")
    divergent = answer.get("first_divergent")
    if first_bad is not None:
        local = _local(answer, first_bad)
        lines.append(f"first bad op: {_op_text(answer, first_bad)} ({local['tensor']}, shape "
                     f"{local['shape']}) breaks tolerance on its own, fed the baseline's inputs: "
                     f"local max abs {local['max_abs']:.3g}")
    if run_start is not None:
        end = "the outputs" if divergent is None else _op_text(answer, divergent)
        lines.append(f"no op alone up to {end} breaks tolerance; from op {run_start} "
                     f"({answer['op_types'][run_start]}) on they do together, fed the baseline's "
                     f"values there (from op {run_start + 1} on they do not): a fused pattern or "
                     f"accumulated rounding starting at op {run_start}")
    if first_bad is None and run_start is None:
        lines.append("pruning: no cut of the program reproduces the failure; the repro holds the whole program")
    if answer.get("repro_error"):
        lines.append(f"pruning: the cut program could not be written ({answer['repro_error']}); "
                     f"the repro holds the whole program")
    if divergent is not None:
        source = answer.get("divergent_from", "halving")
        source = "the intermediates" if source == "intermediates" else source
        lines.append(f"  first divergent tensor: {_op_text(answer, divergent)} (found by {source})")
    own = [l for l in answer.get("locals", []) if l["passed"] is False]
    lines.append(f"  local errors measured for {len(answer.get('locals', []))} op(s), {len(own)} "
                 f"out of tolerance on their own; {answer.get('builds', 0)} predictor builds, "
                 f"{answer.get('seconds', 0.0):.1f} s ({answer.get('ops', 0)} ops in the program)")
    return lines


def mark_local_errors(result, answer: dict, store) -> None:
    """Each measured op's local error onto the intermediate rows of its tensor (by name, else values)."""
    locals_ = answer.get("locals", [])
    if not locals_ or store is None:
        return
    by_baseline = {}
    for local in locals_:
        record = store.by_name.get(local["tensor"]) or nearest(
            local["fingerprint"], ((r, r.fingerprint) for r in store.records
                                   if list(r.shape) == list(local["shape"])), MATCH_DISTANCE)
        if record is not None:
            by_baseline[record.name] = local
    for row in result.intermediates:
        local = by_baseline.get(row.baseline_name)
        if local is not None and not math.isnan(local["max_abs"]):
            row.local_max_abs = local["max_abs"]
            row.local_passed = local["passed"]
