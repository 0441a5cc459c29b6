"""Localization: re-run a failing case with variations of its recipe and name the culprit. The
ladder: every graph optimization off, memory optimization, a delta-debugging search (``ddmin``)
over the passes applied, then over op types kept out (``+fp32_op``, ``+disable_trt_op``; where
TensorRT's ladder starts). A fix offered is a run mode a trial ran within tolerance."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ...errors import PaddleInferError
from ...modes.run_modes import BF16, FP16, INT8, PIR_FORMAT, RunModeSpec, passes_off
from .op_blame import OpKnob, knob_for
from .trials import CRASHED, RAISED, TrialServer, judge_trial
from .pir_passes import list_passes, pass_log
from .. import pir_tensorrt
from .prune import prune_step


@dataclass
class Rung:
    name: str
    change: str  # the variation of the recipe, in --run-mode toggle syntax
    passed: Optional[bool]  # False also when the trial crashed or raised (see detail)
    max_abs: float = float("nan")
    detail: str = ""
    built: bool = True  # False: a rung the ladder could not try on this program (detail says why)

    @property
    def state(self) -> str:
        if not self.built:
            return "not tried"
        if self.passed is None:
            return "error"
        if self.passed:
            return "passes"
        for word in (CRASHED, RAISED):
            if self.detail.startswith(word):
                return word
        return "fails"


@dataclass
class Localization:
    rungs: List[Rung] = field(default_factory=list)
    verdict: str = ""  # one sentence naming the culprit
    culprit: str = ""  # the pass, op types, or stage to blame
    fix: str = ""  # a run mode (toggle syntax) that a trial ran within tolerance
    search_builds: int = 0  # the builds of the last search (passes or op types)
    listing_builds: int = 0  # predictors built to list the passes and op types (no trials)
    alternatives: List[str] = field(default_factory=list)  # other run modes trials passed
    extra: List[str] = field(default_factory=list)  # lines the steps after the ladder add
    failure: str = "fails"  # how the case failed: fails (diverged), crashed, raised

    @property
    def builds(self) -> int:
        """Predictors built: one per rung tried."""
        return sum(r.built for r in self.rungs)

    def lines(self) -> List[str]:
        listing = (f"; {self.listing_builds} more to list passes and op types" if self.listing_builds else "")
        out = [f"localization: {self.verdict} ({self.builds} builds{listing})"]
        if self.fix:
            out.append(f"  suggested run mode: {self.fix}  (checked: a trial of it passes)")
        out.extend(f"  also within tolerance: {a}" for a in self.alternatives)
        for r in self.rungs:
            figure = "" if r.passed is None or r.max_abs != r.max_abs else f" (max abs {r.max_abs:.3g})"
            out.append(f"  {r.name:<28} {r.state}{figure}  {r.change}" + (f"  {r.detail}" if r.detail else ""))
        return out + self.extra


# Paddle 3.3.1: a PIR predictor with custom passes and enable_memory_optim() fails to build,
# and memory_optimize_pass cannot be listed: memory optimization cannot be tried with passes off.
PIR_MEMORY_NOTE = ("not tried: a PIR program's custom pass list takes no memory_optimize_pass "
                   "(Paddle 3.3.1)")

# (varied spec, Config calls added after its recipe) -> (passed, max abs, detail)
Trial = Callable[..., Tuple[Optional[bool], float, str]]


def _span(names: Sequence[str]) -> str:
    """A short description of a run of names: all of them when few, else the ends."""
    return ", ".join(names) if len(names) <= 3 else f"{names[0]} ... {names[-1]} ({len(names)})"


def _chunks(items: Sequence[str], n: int) -> List[List[str]]:
    """``items`` cut into ``n`` contiguous runs as even as possible, in order."""
    out, start = [], 0
    for i in range(n):
        end = start + (len(items) - start) // (n - i)
        out.append(list(items[start:end]))
        start = end
    return [c for c in out if c]


def ddmin(items: Sequence[str], fixes: Callable[[Sequence[str]], Optional[bool]]) -> Optional[List[str]]:
    """Delta debugging (Zeller): a 1-minimal run of ``items`` whose removal ``fixes`` the case;
    None when removing all does not. A single culprit takes at most 2*ceil(log2 n)+1 trials."""
    seen: Dict[Tuple[str, ...], bool] = {}

    def test(subset: Sequence[str]) -> bool:
        key = tuple(subset)
        if key not in seen:
            seen[key] = fixes(list(subset)) is True
        return seen[key]

    if not items or not test(items):
        return None
    current, n = list(items), 2
    while len(current) > 1:
        chunks = _chunks(current, n)
        hit = next((c for c in chunks if test(c)), None)
        if hit is not None:
            current, n = hit, 2
            continue
        if len(chunks) > 2:
            rests = ([x for x in current if x not in c] for c in chunks)
            complement = next((r for r in rests if test(r)), None)
            if complement is not None:
                current, n = complement, max(n - 1, 2)
                continue
        if n >= len(current):
            break
        n = min(2 * n, len(current))
    return current


# Passes that put a mode in its low precision: deleting them makes it fp32, so they blame the
# precision, never a run mode to suggest.
PRECISION_PASS_WORDS = {
    BF16: ("bfloat16", "bf16"),
    FP16: ("mixed_precision",),
    INT8: ("quant", "propagate_scales", "int8"),  # cpu_quantize_*, quant_dequant_onednn_pass
}
PRECISION_WORDS = {BF16: "bf16", FP16: "fp16", INT8: "int8"}


def is_precision_pass(name: str, precision: str) -> bool:
    return any(w in name for w in PRECISION_PASS_WORDS.get(precision, ()))


# how the case itself failed: its outputs diverged, its candidate crashed, or it raised
FAILS = "fails"


def localize(spec: RunModeSpec, trial: Trial, passes: Callable[[], List[str]],
             op_types: Callable[[], List[str]], off_calls: Sequence = (),
             program_format: str = "legacy", failure: str = FAILS) -> Localization:
    """``off_calls``: what turns optimizations off beyond ``switch_ir_optim(False)``; ``passes``:
    a PassList; ``failure`` (FAILS, CRASHED or RAISED): a rung failing otherwise blames nothing."""
    loc = Localization(failure=failure)
    off_passed = False

    def rung(name: str, varied: RunModeSpec, change: str = "", extra: Sequence = ()) -> Optional[bool]:
        passed, max_abs, detail = trial(varied, extra) if extra else trial(varied)
        change = change or varied.label + "".join(f" + {c}" for c in extra)
        loc.rungs.append(Rung(name, change, passed, max_abs, detail))
        return passed

    knob, no_knob = knob_for(spec, program_format)
    trt = spec.run_mode.tensorrt
    if not trt:  # TensorRT needs IR optimization: its ladder starts at the engine
        plain = replace(spec, ir_optim=False, memory_optim=False, delete_passes=())
        off_passed = rung("all optimizations off", plain, extra=off_calls) is True
        # only the case's own failure, reproduced with every optimization off, clears the passes
        if not off_passed and loc.rungs[-1].state == failure:
            why = _outcome_words(loc.rungs[-1])
            if knob is not None and _blame_ops(loc, spec, knob, op_types, rung):
                return loc
            loc.verdict = (f"{spec.mode} {why} with every graph optimization off: the "
                           f"backend's kernels, not a pass, make the difference"
                           + (f" ({no_knob})" if no_knob else ""))
            loc.culprit = "kernels"
            return loc
        memory = replace(plain, memory_optim=True)
        if off_passed and program_format == PIR_FORMAT:
            loc.rungs.append(Rung("memory optimization on", memory.label, None, detail=PIR_MEMORY_NOTE,
                                  built=False))
        # only against a run that passes; an error here is the ladder's own combination failing
        elif off_passed and rung("memory optimization on", memory, extra=off_calls) is not True \
                and loc.rungs[-1].state == failure != RAISED:
            loc.verdict = "enable_memory_optim() makes the difference: buffer reuse is to blame"
            loc.culprit = "memory_optim"
            return loc
    if rung("as configured", spec) is True:
        what = {CRASHED: "crash", RAISED: "error"}.get(failure, "divergence")
        loc.verdict = f"the {what} did not reproduce: nothing to localize"
        return loc
    if trt:
        if not _blame_ops(loc, spec, knob, op_types, rung):
            loc.verdict = "the divergence stays with every op type kept out of TensorRT"
        return loc
    names = passes()
    problem, by_hand = getattr(names, "problem", ""), getattr(names, "by_hand", "")
    before = loc.builds

    def without(deleted: Sequence[str]) -> Optional[bool]:
        return rung(f"without {len(deleted)} pass(es)",
                    replace(spec, delete_passes=spec.delete_passes + tuple(deleted)),
                    f"delete_pass: {_span(deleted)}")

    # the passes a build of the candidate crashed or raised in are tried first
    suspects = getattr(names, "stopped_in", [])
    found = (ddmin(suspects, without) if suspects else None) or ddmin(names, without)
    loc.search_builds = loc.builds - before
    pass_fix = replace(spec, delete_passes=spec.delete_passes + tuple(found)).label if found else ""
    pass_words = (f"deleting {'pass ' if len(found) == 1 else 'passes '}{', '.join(found)}" if found else "")
    # a low-precision mode: the op types to keep out are the fix (the passes an alternative)
    if knob is not None and _blame_ops(loc, spec, knob, op_types, rung):
        if found:
            loc.verdict += f"; so does {pass_words}"
            if not all(is_precision_pass(p, spec.run_mode.precision) for p in found):
                loc.alternatives.append(pass_fix)  # else it would run fp32: no alternative
        return loc
    if found:
        loc.culprit = ", ".join(found)
        loc.verdict = f"{pass_words} brings {spec.mode} within tolerance"
        precision = spec.run_mode.precision
        if all(is_precision_pass(p, precision) for p in found):
            them = "that pass is" if len(found) == 1 else "those passes are"
            loc.verdict += (f", but {them} what puts {spec.mode} in {PRECISION_WORDS[precision]}: "
                            f"without {'it' if len(found) == 1 else 'them'} the mode computes "
                            f"fp32, so the precision itself is to blame"
                            + (f" ({no_knob})" if no_knob else ""))
        else:
            loc.fix = pass_fix
        return loc
    loc.verdict, loc.culprit = _no_pass_verdict(spec, loc.rungs[0], off_passed, names, problem, by_hand)
    if loc.culprit == "ir_optim" and not off_calls:  # the rung's run mode, as a trial ran it
        loc.fix = loc.rungs[0].change
    return loc


def _no_pass_verdict(spec: RunModeSpec, off: Rung, off_passed: bool, names: Sequence[str],
                     problem: str, by_hand: str) -> Tuple[str, str]:
    """(verdict, culprit) when deleting passes fixed nothing, never contradicting the rungs."""
    if problem:
        return (f"the passes {spec.mode} runs could not be read: {problem}; list them by hand: "
                f"{by_hand}"), ""
    if off_passed and not names:
        return (f"{spec.mode} passes with every graph optimization off and runs no pass "
                f"beyond those that run then: IR optimization itself makes the difference", "ir_optim")
    if off_passed:
        return (f"{spec.mode} passes with every graph optimization off, but deleting all "
                f"{len(names)} passes it runs beyond those does not: IR optimization makes the "
                f"difference beyond its passes", "ir_optim")
    return (f"no set of IR passes brings {spec.mode} within tolerance; with every graph "
            f"optimization off it {_outcome_words(off)}, a failure other than the case's, so "
            f"the kernels are not shown to blame either"), ""


def _outcome_words(r: Rung) -> str:
    return {CRASHED: "crashes", RAISED: "errors"}.get(r.state, "diverges")


def _blame_ops(loc: Localization, spec: RunModeSpec, knob: OpKnob,
               op_types: Callable[[], List[str]], rung) -> bool:
    """Search the op types to keep out; True (and the verdict set) when some set fixes it."""
    names = knob.names(op_types(), spec)
    before = loc.builds
    found = ddmin(names, lambda kept: rung(
        f"{len(kept)} op type(s) {knob.kept}", knob.vary(spec, kept),
        f"{knob.call}: {_span(kept)}"))
    loc.search_builds = loc.builds - before
    if not found:
        return False
    loc.culprit = ", ".join(found)
    loc.fix = knob.vary(spec, found).label
    loc.verdict = (f"op type{'s' if len(found) > 1 else ''} {loc.culprit} {knob.kept} "
                   f"bring{'' if len(found) > 1 else 's'} {spec.mode} within tolerance")
    return True


# The legacy pass that hands subgraphs to TensorRT; its op teller reads the disabled list
TRT_SUBGRAPH_PASS = "tensorrt_subgraph_pass"


def search_op_types(spec: RunModeSpec, program_format: str, baseline: List[str],
                    ran: Optional[Callable[[RunModeSpec], List[str]]]) -> List[str]:
    """The op types after the fusion passes (what placement or the TensorRT teller sees; legacy
    TensorRT: without the subgraph pass), then the program's own; ``ran``: None, none here."""
    if ran is None or pir_tensorrt.takes_pir_path(spec.run_mode, program_format):
        return baseline
    fused = ran(replace(spec, delete_passes=tuple(spec.delete_passes) + (TRT_SUBGRAPH_PASS,))
                if spec.run_mode.tensorrt else spec)
    return fused + [t for t in baseline if t not in fused]


def localize_case(runner, prepared, init: Optional[dict] = None, failure: str = FAILS) -> Localization:
    """The ladder for a failing case, then the steps after; ``init``: trials in a supervised child."""
    case, model = prepared.case, prepared.model
    spec = case.run_mode
    server = None
    off = passes_off(model.format, spec.run_mode.engine)
    if init is not None:
        server = TrialServer(init, case, model, prepared.inputs, prepared.baseline_outputs)
        trial, listed = server.trial, lambda: server.passes(spec, off)
    else:  # in this process: an error building or running the varied candidate is a bad outcome
        def trial(varied: RunModeSpec, extra: Sequence = ()):
            try:
                return judge_trial(runner, case, model, prepared.inputs, prepared.baseline_outputs,
                                   varied, extra)
            except PaddleInferError as e:
                return False, float("nan"), f"{RAISED}: {str(e).splitlines()[0][:160]}"

        listed = lambda: list_passes(spec, model, case.threads, off,  # noqa: E731
                                     lambda varied, extra=(): pass_log(varied, model, case.threads, extra))

    def op_types() -> List[str]:
        return search_op_types(spec, model.format, runner.op_types(prepared),
                               server.op_types if server is not None else None)

    try:
        loc = localize(spec, trial, listed, op_types, off, model.format, failure)
        loc.listing_builds = server.listing_builds if server is not None else 0
        prune_step(loc, runner, prepared)
        return loc
    finally:
        if server is not None:
            server.close()
