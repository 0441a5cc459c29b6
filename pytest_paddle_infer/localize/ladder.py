"""Localization: re-run a failing case with variations of its recipe and name the culprit.

The ladder follows the precision-tracing procedure: every graph optimization off (does the
backend's kernels alone diverge?), then memory optimization (does buffer reuse?), then IR
optimization on and a bisection over the passes it applies (``delete_pass``), and for
TensorRT modes a bisection over op types kept out of TensorRT (``exp_disable_tensorrt_ops``).
Each rung builds a real predictor through the same path as the case itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, List, Optional, Sequence, Tuple

from ..errors import PaddleInferError
from ..execute.predictor import run_predictor
from ..modes.run_modes import RunModeSpec


@dataclass
class Rung:
    name: str
    change: str  # the variation of the recipe, in --run-mode toggle syntax
    passed: Optional[bool]  # None: the variation could not be built or run
    max_abs: float = float("nan")
    detail: str = ""


@dataclass
class Localization:
    rungs: List[Rung] = field(default_factory=list)
    verdict: str = ""  # one sentence naming the culprit
    culprit: str = ""  # the pass, op type, or stage to blame

    def lines(self) -> List[str]:
        out = [f"localization: {self.verdict}"]
        for r in self.rungs:
            state = {True: "passes", False: "fails", None: "error"}[r.passed]
            figure = "" if r.passed is None else f" (max abs {r.max_abs:.3g})"
            out.append(f"  {r.name:<28} {state}{figure}  {r.change}" + (f"  {r.detail}" if r.detail else ""))
        return out


# (varied spec, Config calls added after its recipe) -> (passed, max abs, detail)
Trial = Callable[..., Tuple[Optional[bool], float, str]]


def make_trial(runner, prepared) -> Trial:
    """Build the varied candidate like the case's own, run it on the case's inputs and judge
    its outputs with the case's tolerances."""
    from ..verdict.outputs import compare_outputs

    case = prepared.case

    def trial(spec: RunModeSpec, extra: Sequence = ()):
        from ..modes.build_plan import Build, Plan

        try:
            plan = runner.candidates.plan(spec, prepared.model,
                                          runner.input_specs(prepared.model, dict(case.shapes)),
                                          case.threads, case.seed)
            if extra:  # e.g. the passes a PIR program runs whatever switch_ir_optim says
                plan = Plan(plan.steps[:-1] + (Build(plan.final.recipe + tuple(extra)),), plan.int8)
            built = runner.candidates.executor.run(plan, prepared.model, prepared.inputs)
            outputs = run_predictor(built.predictor, prepared.inputs)
        except PaddleInferError as e:
            return None, float("nan"), str(e).splitlines()[0][:160]
        rows = compare_outputs(outputs, prepared.baseline_outputs, replace(case, run_mode=spec))
        return all(r.passed for r in rows), max((r.max_abs for r in rows), default=0.0), ""

    return trial


def applied_passes(spec: RunModeSpec, model, threads: Optional[int]) -> List[str]:
    """The passes a config with this recipe would run, in order, without repeats."""
    from paddle import inference

    from ..execute.predictor import apply_recipe
    from ..modes.run_modes import recipe

    config = inference.Config(model.prog_file, model.params_file)
    apply_recipe(config, recipe(spec, threads))
    passes = list(config.pass_builder().all_passes())
    return [p for i, p in enumerate(passes) if p not in passes[:i] and p not in spec.delete_passes]


def _span(names: Sequence[str]) -> str:
    """A short description of a run of names: all of them when few, else the ends."""
    return ", ".join(names) if len(names) <= 3 else f"{names[0]} ... {names[-1]} ({len(names)})"


def bisect(items: Sequence[str], fixes: Callable[[Sequence[str]], Optional[bool]]) -> List[str]:
    """The smallest run of ``items`` found by halving whose removal ``fixes`` the case; a single
    culprit is found in about log2(n) trials. Returns ``items`` when no half alone fixes it."""
    suspects = list(items)
    while len(suspects) > 1:
        half = len(suspects) // 2
        first, second = suspects[:half], suspects[half:]
        if fixes(first):
            suspects = first
        elif fixes(second):
            suspects = second
        else:  # it takes items from both halves together
            break
    return suspects


def localize(spec: RunModeSpec, trial: Trial, passes: Callable[[], List[str]],
             op_types: Callable[[], List[str]], off_calls: Sequence = ()) -> Localization:
    """``off_calls``: what turns optimizations off beyond ``switch_ir_optim(False)`` for this
    program (run_modes.passes_off: a PIR program's custom passes); the first two rungs take it."""
    loc = Localization()

    def rung(name: str, varied: RunModeSpec, change: str = "", extra: Sequence = ()) -> Optional[bool]:
        passed, max_abs, detail = trial(varied, extra) if extra else trial(varied)
        change = change or varied.label + "".join(f" + {c}" for c in extra)
        loc.rungs.append(Rung(name, change or varied.label, passed, max_abs, detail))
        return passed

    trt = spec.run_mode.tensorrt
    if not trt:  # TensorRT needs IR optimization: its ladder starts at the engine
        plain = replace(spec, ir_optim=False, memory_optim=False, delete_passes=())
        if rung("all optimizations off", plain, extra=off_calls) is False:
            loc.verdict = (f"{spec.mode} diverges with every graph optimization off: the "
                           f"backend's kernels, not a pass, make the difference")
            loc.culprit = "kernels"
            return loc
        if rung("memory optimization on", replace(plain, memory_optim=True), extra=off_calls) is False:
            loc.verdict = "enable_memory_optim() makes the difference: buffer reuse is to blame"
            loc.culprit = "memory_optim"
            return loc
    if rung("as configured", spec) is not False:
        loc.verdict = "the divergence did not reproduce: nothing to localize"
        return loc
    if not trt:
        names = passes()
        fixes = lambda deleted: rung(f"without {len(deleted)} pass(es)",
                                     replace(spec, delete_passes=spec.delete_passes + tuple(deleted)),
                                     f"delete_pass: {_span(deleted)}")
        if names and fixes(names):
            found = bisect(names, fixes)
            loc.culprit = ", ".join(found)
            loc.verdict = (f"deleting {'pass ' if len(found) == 1 else 'passes '}{loc.culprit} "
                           f"brings {spec.mode} within tolerance")
        else:
            loc.verdict = "no set of IR passes explains it: the optimized kernels do"
            loc.culprit = "kernels"
        return loc
    ops = op_types()
    fixes = lambda excluded: rung(f"{len(excluded)} op type(s) out of TensorRT",
                                  replace(spec, disable_trt_ops=tuple(spec.disable_trt_ops) + tuple(excluded)),
                                  f"exp_disable_tensorrt_ops: {_span(excluded)}")
    if ops and fixes(ops):
        found = bisect(ops, fixes)
        loc.culprit = ", ".join(found)
        loc.verdict = f"keeping {loc.culprit} out of TensorRT brings {spec.mode} within tolerance"
    else:
        loc.verdict = "the divergence stays with every op type kept out of TensorRT"
    return loc
