"""The self-check, in the executor child: the machine's facts, and per run mode a positive control
(the candidate as a case builds it) and a negative one (less the call that engages the mode)."""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..models.program import exports_legacy, paddle_major
from ..models.source import parse_source
from ..modes.capabilities import detect, import_paddle, installed_paddle
from ..modes.run_modes import (FP16, FP32, GPU, INT8, ONEDNN, RUN_MODES, TENSORRT, Call,
                               Precision, RunMode, parse_run_mode)
from ..protocol import CANNOT_RUN, ENGAGED, NOT_ENGAGED, UNTELLABLE, CaseResult  # noqa: F401 (statuses)
from ..verdict.evidence import RULES, Evidence, Tally, broken_rules
from .build_plan import candidate_feeds
from .capture import run_with_sink
from .int8_evidence import program_op_types, wants_int8_kernels
from .pir_tensorrt import predictor_recipe
from .predictor import describe_recipe, run_predictor, trim_paddle_error
from .recording import recorded
from .runner import judge_engines

FORMAT = 1  # of the JSON: bump when its keys change

# Evidence of modes whose row in the mode table requires none (RunMode.shows is empty):
ONEDNN_LAYOUT = "tensors in oneDNN's layout"
NATIVE_LAYOUT = "no tensor in oneDNN's layout"
GPU_TENSORS = "tensors on a GPU"

PIR_MODE = "trt_fp16"  # checked on the PIR TensorRT path too
MODEL = "tiny_cnn"
QUANTIZED_MODEL = "tiny_cnn_int8"  # onednn_int8 needs quantize ops


@dataclass
class Seen:
    """What one control's run showed: the case's Evidence, and where its tensors were."""
    evidence: Evidence
    gpu_tensors: int = 0

    def to_dict(self) -> dict:
        return dict(self.evidence.to_dict(), gpu_tensors=self.gpu_tensors)


# Signals of the modes the evidence rules have no row for: (holds, what it means)
OWN_RULES: Dict[str, Tuple[Callable[[Seen], bool], str]] = {
    ONEDNN_LAYOUT: (lambda s: s.evidence.onednn_tensors > 0, "oneDNN's kernels"),
    NATIVE_LAYOUT: (lambda s: s.evidence.seen and s.evidence.onednn_tensors == 0,
                    "Paddle's native CPU kernels"),
    GPU_TENSORS: (lambda s: s.gpu_tensors > 0, "GPU kernels"),
}


def rule_of(mode: RunMode) -> str:
    """The evidence the self-check asks of ``mode``: its own rule, else a signal here."""
    if mode.shows:
        return mode.shows[0]
    if mode.device == GPU:
        return GPU_TENSORS
    return ONEDNN_LAYOUT if mode.engine == ONEDNN else NATIVE_LAYOUT


def rule_problems(mode: RunMode, seen: Seen) -> List[str]:
    """Why ``seen`` fails the mode's self-check rule; [] when it holds."""
    rule = rule_of(mode)
    if rule in RULES:
        return broken_rules(mode.name, seen.evidence, (rule,))
    holds, meaning = OWN_RULES[rule]
    if holds(seen):
        return []
    if not seen.evidence.seen:
        return [f"{mode.name}: the output hooks saw no op: nothing shows {rule}"]
    return [f"{mode.name}: {rule} does not hold ({meaning} would show them): "
            f"{seen.evidence.tensors} tensors, {seen.evidence.onednn_tensors} in oneDNN's "
            f"layout, {seen.gpu_tensors} on a GPU"]


def negative_recipe(mode: RunMode, calls: Sequence[Call]) -> Tuple[Tuple[Call, ...], str]:
    """The recipe without what engages ``mode``, and what was taken out, in words."""
    calls = tuple(calls)
    if mode.engine == TENSORRT:
        return predictor_recipe(calls), "without enable_tensorrt_engine() (plain GPU fp32)"
    if mode.device == GPU and mode.precision == FP16:
        fp32 = tuple(replace(c, args=tuple(Precision(FP32) if isinstance(a, Precision) else a
                                           for a in c.args))
                     if c.method == "enable_use_gpu" else c for c in calls)
        return fp32, "enable_use_gpu(..., PrecisionType.Float32) instead of Half"
    if mode.device == GPU:
        return tuple(c for c in calls if c.method != "enable_use_gpu"), "without enable_use_gpu()"
    swap = {"enable_mkldnn": "disable_mkldnn", "disable_mkldnn": "enable_mkldnn"}
    if mode.engine == ONEDNN and mode.precision != FP32:
        enabling = "enable_mkldnn_bfloat16" if mode.precision != INT8 else "enable_mkldnn_int8"
        return tuple(c for c in calls if c.method != enabling), f"without {enabling}()"
    first = next(c.method for c in calls if c.method in swap)
    return (tuple(replace(c, method=swap[c.method], args=()) if c.method in swap else c
                  for c in calls), f"{swap[first]}() instead of {first}()")


def cannot_run(caps, mode: RunMode, device_id: Optional[int]) -> Optional[Tuple[str, str]]:
    """(short, full) reason ``mode`` cannot run here, or None (capabilities' own rule)."""
    full = caps.missing_for(mode, device_id)
    if full is None:
        return None
    return next((short for lacks, short in SHORT_REASONS if lacks(mode, caps)), full), full


# (what the mode lacks here, in the order the first that holds names it; the words)
SHORT_REASONS = (
    (lambda mode, caps: "cuda" in mode.needs and not caps.cuda, "CPU-only Paddle"),
    (lambda mode, caps: mode.tensorrt and not any(caps.trt_compile), "Paddle built without TensorRT"),
    (lambda mode, caps: "cuda" in mode.needs and caps.gpu_count == 0, "no GPU visible"),
    (lambda mode, caps: mode.tensorrt and not any(caps.trt_runtime),
     "no TensorRT runtime (libnvinfer) found"),
    (lambda mode, caps: "bf16" in mode.needs and caps.bf16 is False,
     "no avx512 (bf16) on this CPU: Paddle would run fp32"),
    (lambda mode, caps: "int8" in mode.needs and caps.int8_kernels == "",
     "no avx2/avx512 int8 kernels on this CPU"),
    (lambda mode, caps: "onednn" in mode.needs and not caps.onednn, "Paddle built without oneDNN"),
)


def machine_facts(caps) -> dict:
    """Paddle, CUDA, cuDNN and TensorRT versions, the GPUs, TF32, the CPU."""
    paddle = import_paddle()
    cuda = str(paddle.version.cuda())
    built_cuda = cuda not in ("False", "", "None")
    facts = {
        "paddle": f"{caps.distribution} {caps.version}", "commit": caps.commit,
        "cuda": cuda if built_cuda else "",
        "cudnn": str(paddle.version.cudnn()) if built_cuda else "",
        "tensorrt_compile": ".".join(map(str, caps.trt_compile)) if any(caps.trt_compile) else "",
        "tensorrt_runtime": ".".join(map(str, caps.trt_runtime)) if any(caps.trt_runtime) else "",
        "gpu_count": caps.gpu_count, "gpus": [], "onednn": caps.onednn,
        "cpu": caps.cpu_text, "bf16": caps.bf16, "int8_kernels": caps.int8_kernels,
    }
    for i in range(caps.gpu_count):
        gpu = {"id": i}
        try:
            gpu["name"] = str(paddle.device.cuda.get_device_name(i))
            major, minor = paddle.device.cuda.get_device_capability(i)
            gpu["compute_capability"] = f"{major}.{minor}"
        except Exception as e:  # a driver problem: say it, the check goes on
            gpu["error"] = f"{type(e).__name__}: {e}"
        facts["gpus"].append(gpu)
    facts["tf32"] = tf32_state(facts["gpus"])
    return facts


def tf32_state(gpus: Sequence[dict]) -> dict:
    """Paddle's TF32 switches for cuBLAS and cuDNN, and the GPUs with TF32 (8.0 and up)."""
    from paddle.base import core

    def switch(name: str) -> Optional[bool]:
        fn = getattr(core, name, None)
        try:
            return bool(fn()) if fn is not None else None
        except Exception:
            return None

    capable = [g["id"] for g in gpus if float(g.get("compute_capability", "0") or 0) >= 8.0]
    return {"cublas": switch("get_cublas_switch"), "cudnn": switch("get_cudnn_switch"),
            "gpus_with_tf32": capable}


def check_mode(runner, caps, mode: RunMode, on_phase: Callable[..., None], pir: bool = False) -> dict:
    """One mode's row; ``pir``: a TensorRT mode on the model's ``.json`` export."""
    spec = parse_run_mode(mode.name)
    device_id = runner.candidates.device_id(spec) if mode.device == GPU else None
    row: dict = {"mode": mode.name, "label": f"{mode.name} (PIR)" if pir else mode.name,
                 "path": "pir" if pir else "", "device": mode.device, "rule": rule_of(mode)}
    blocked = cannot_run(caps, mode, device_id)
    if blocked is None and pir and paddle_major(caps.version) < 3:
        blocked = ("Paddle 2.x has no PIR TensorRT path",
                   f"the PIR TensorRT path (paddle.tensorrt.convert on a .json program) is "
                   f"Paddle 3.x's; {caps.distribution} {caps.version} is installed here")
    if blocked:
        row.update(status=CANNOT_RUN, why=blocked[0], detail=blocked[1])
        return row
    started = time.perf_counter()
    try:
        model, recipe, seen, built = positive(runner, spec, on_phase, pir)
        row.update(model=model.name, program=model.prog_file, recipe=describe_recipe(recipe),
                   notes=list(built.notes), positive=seen.to_dict())
        problems = rule_problems(mode, seen) + engine_problems(row, spec, built)
        if problems:
            row.update(status=NOT_ENGAGED, why="; ".join(problems))
            return row
        calls, taken = negative_recipe(mode, recipe)
        on_phase(f"self-check {mode.name}: negative control", describe_recipe(calls))
        negative_seen = run_recorded(runner, model, calls, f"{mode.name} negative control",
                                     runner.inputs(model, {}, 0))
        negative_problems = rule_problems(mode, negative_seen)
        row["negative"] = dict(negative_seen.to_dict(), recipe=describe_recipe(calls), taken=taken,
                               fails_rule=bool(negative_problems), why="; ".join(negative_problems))
        if negative_problems:
            row.update(status=ENGAGED, why=f"{rule_of(mode)}; negative control ({taken}): "
                                           f"{negative_problems[0]}")
        else:
            row.update(status=UNTELLABLE,
                       why=f"the recipe {taken} still shows {rule_of(mode)}: this check cannot "
                           f"tell {mode.name} ran")
    except Exception as e:  # the mode errors here: not engaged, with Paddle's words
        row.update(status=NOT_ENGAGED, why=f"error: {trim_paddle_error(e)}",
                   traceback=traceback.format_exc(limit=6))
    finally:
        row["seconds"] = round(time.perf_counter() - started, 2)
    return row


def positive(runner, spec, on_phase, pir: bool = False):
    """The self-check model's candidate, built by the plugin's own plan, run and recorded."""
    mode = spec.run_mode
    source = parse_source(QUANTIZED_MODEL if wants_int8_kernels(mode) else MODEL)
    on_phase(f"self-check {mode.name}: exporting {source.name}")
    legacy = False if pir else exports_legacy(source, "default", mode, installed_paddle()[1])
    model = runner.model_files(source, legacy=legacy)
    specs = runner.input_specs(model, {})
    inputs = runner.inputs(model, {}, 0)
    ops = program_op_types(model.prog_file) if mode.precision == INT8 else None
    plan = runner.candidates.plan(spec, model, specs, program_ops=ops)
    on_phase(f"self-check {mode.name}: positive control", describe_recipe(plan.final.recipe))
    built = runner.build_candidate(plan, model, inputs)
    seen = run_recorded(runner, model, plan.final.recipe, mode.name, candidate_feeds(plan, inputs),
                        predictor=built.predictor, program=plan.final.program)
    return model, plan.final.recipe, seen, built


def engine_problems(row: dict, spec, built) -> List[str]:
    """Legacy TensorRT engines' records into ``row["engines"]``; int8 ones without int8 layers: problems."""
    if not built.engine_dirs:
        return []
    judged = CaseResult(spec.label, [], "", "", "")
    judge_engines(judged, spec, built.engine_dirs, built.built_at)
    row["engines"] = list(judged.notes)
    return list(judged.problems)


def run_recorded(runner, model, calls, role: str, inputs, predictor=None, program=None) -> Seen:
    """Run ``predictor`` (else one built from ``calls``) once, recording what its hooks saw."""
    if predictor is None:
        predictor = runner.predictors.get(model, tuple(calls))
    prog = program[0] if program else model.prog_file
    tally = Tally(role, prog, "pir" if prog.endswith(".json") else "legacy")
    seen = Seen(tally.evidence)

    def on_gpu(op_type, name, tensor) -> None:
        place = str(getattr(tensor, "place", "")).lower()
        if "gpu" in place or "cuda" in place:
            seen.gpu_tensors += 1

    router = runner.hooks.for_predictor(predictor)
    run_with_sink(router, on_gpu, recorded(router, tally, lambda: run_predictor(predictor, inputs)))
    return seen


def run_selfcheck(runner, on_phase: Callable[..., None] = lambda name, recipe="": None) -> dict:
    """The JSON the report prints and writes: the machine, then one row per run mode."""
    caps = detect()
    started = time.time()
    rows = [check_mode(runner, caps, mode, on_phase) for mode in RUN_MODES.values()]
    # the PIR TensorRT path, which only a user's .json model takes in a case
    rows.append(check_mode(runner, caps, RUN_MODES[PIR_MODE], on_phase, pir=True))
    return {"format": FORMAT, "machine": machine_facts(caps), "modes": rows,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "seconds": round(time.time() - started, 2)}
