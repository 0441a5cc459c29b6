"""Recipe -> candidate predictor, as a plan of steps (TensorRT: cache dir, shape collection,
calibration, build). Plans are pure data, so every GPU plan is tested on a CPU-only machine."""
from __future__ import annotations

import gc
import hashlib
import os
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ..modes.devices import MAIN_WORKER, AUTO, DeviceChoice, current_worker, gpu_for_worker
from ..errors import InputError, OptionError, PredictorError
from ..models.inputs import InputSpec, fill_shape, generate_all, numpy_dtype
from ..files import ArrayFileError, WantedArray, file_lock, load_arrays
from ..modes.trt_marking import INSPECTOR, marking_calls
from . import pir_tensorrt
from .predictor import PredictorCache, build_predictor, describe_recipe, run_predictor
from ..modes.run_modes import (GPU, INT8, MATRIX_MULTIPLY_OPS, PIR_FORMAT, QUANTIZED, TRT_MIN_SUBGRAPH_SIZE,
                               Call, DynamicShape, RunModeSpec, calibration_batch_count, calibration_tables,
                               check_shape_in_range, needs_calibration, optim_cache_call, optim_cache_subdir,
                               recipe, shape_collect_recipe)
from ..models.program import paddle_major
from ..modes.capabilities import detect, installed_paddle
from ..verdict.evidence import TENSORRT_ENGINE, base_name, is_fused
from .int8_evidence import program_op_types

if TYPE_CHECKING:  # numpy and the model types are only needed when a plan runs
    import numpy as np

    from ..cases.case import Case
    from ..models.source import ModelFiles

# What the report says about int8 (user property paddle_int8).
INT8_GENERATED = "calibration table generated"
INT8_LOADED = "calibration table loaded"
INT8_QUANTIZED = "quantized model"

# Generated calibration batch i uses seed + OFFSET + i: not the arrays the check compares.
CALIBRATION_SEED_OFFSET = 1_000_000
SHAPE_RANGE_FILE = "shape_range.pbtxt"
# Paddle's calibration predictor writes its table into <model dir>/_opt_cache/ even when
# set_optim_cache_dir names another dir, while the int8 predictor reads from the optim cache
# dir (SaveTrtCalibToDisk vs the tensorrt_subgraph_pass): the executor moves it across.
PADDLE_MODEL_CACHE = "_opt_cache"


@dataclass(frozen=True)
class PrepareCacheDir:
    """The case's TensorRT optim cache dir: emptied, unless ``keep`` (``+use_static``)."""
    path: str
    keep: bool

    def __str__(self) -> str:
        return f"optim cache dir {self.path} ({'kept from earlier runs' if self.keep else 'emptied'})"


# Runs of the shape-collecting predictor: on Paddle 3.x GPU the first run skips the collecting
# hooks (Paddle warns to run several loops; PaddleX feeds min, opt, opt, max).
COLLECT_RUNS = 4


@dataclass(frozen=True)
class CollectShapes:
    """Tuned dynamic shape, first pass: the predictor writes ``shape_file`` when destroyed."""
    recipe: Tuple[Call, ...]
    shape_file: str
    reuse: bool  # +use_static: a file from an earlier run is kept
    runs: int = COLLECT_RUNS

    def __str__(self) -> str:
        return (f"collect shape ranges from the case's inputs ({self.runs} runs): "
                f"{describe_recipe(self.recipe)}")


@dataclass(frozen=True)
class GeneratedBatches:
    """Calibration batches drawn like the case's inputs, one per seed."""
    specs: Tuple[InputSpec, ...]
    seeds: Tuple[int, ...]

    def __str__(self) -> str:
        return (f"{len(self.seeds)} batches generated like the case's inputs "
                f"(seeds {self.seeds[0]}..{self.seeds[-1]})")


@dataclass(frozen=True)
class FileBatches:
    """Calibration batches from a directory (``.npz`` by input name, or ``.npy``); at most ``limit``."""
    directory: str
    limit: Optional[int]
    specs: Tuple[InputSpec, ...]  # the case's inputs: names, dtypes and shapes to match
    dynamic: Optional[DynamicShape] = None  # explicit ranges let batch shapes vary within them

    def __str__(self) -> str:
        most = f"up to {self.limit} " if self.limit is not None else ""
        return f"{most}.npy/.npz batches from {self.directory}"


Batches = Union[GeneratedBatches, FileBatches]


@dataclass(frozen=True)
class Calibrate:
    """int8 calibration: destroying the predictor writes ``trt_calib_*``, moved to ``table_dir``."""
    recipe: Tuple[Call, ...]
    batches: Batches
    table_dir: str  # the optim cache dir the int8 predictor loads the table from
    paddle_table_dir: str  # <model dir>/_opt_cache, where Paddle writes it
    lock_file: str  # serializes calibrations of one model across workers (shared dir above)
    reuse: bool  # +use_static: a table from an earlier run is loaded instead

    def __str__(self) -> str:
        return f"int8 calibration on {self.batches}: {describe_recipe(self.recipe)}"


@dataclass(frozen=True)
class ConvertPir:
    """PIR TensorRT: ``calls`` write ``program``, ``params``; ``links`` (link, target) name the weights."""
    calls: Tuple[pir_tensorrt.TrtCall, ...]
    links: Tuple[Tuple[str, str], ...]
    program: str
    params: str
    reuse: bool  # +use_static: a converted program from an earlier run is kept

    def __str__(self) -> str:
        return f"PIR TensorRT conversion: {describe_recipe(self.calls)}"


@dataclass(frozen=True)
class Build:
    """The candidate; ``program`` (program, params): files a step before wrote, not the model's."""
    recipe: Tuple[Call, ...]
    program: Optional[Tuple[str, str]] = None

    def __str__(self) -> str:
        on = f" on {self.program[0]}" if self.program else ""
        return f"build{on}: {describe_recipe(self.recipe)}"


Step = Union[PrepareCacheDir, CollectShapes, Calibrate, ConvertPir, Build]


@dataclass(frozen=True)
class Plan:
    steps: Tuple[Step, ...]  # the last one is the Build of the candidate
    int8: str = ""  # known up front for quantized models; calibration says when it runs
    path: str = ""  # TensorRT modes: which TensorRT path the case takes (pir_tensorrt.*_PATH)
    feed_dtype: str = ""  # "float16": float inputs are fed as float16 (low_precision_io)
    remarks: Tuple[str, ...] = ()  # what the report should know about the recipe (plan_remarks)

    @property
    def final(self) -> Build:
        return self.steps[-1]  # type: ignore[return-value]


def model_key(model: "ModelFiles") -> str:
    """The model's name plus a hash of where its files are: two models of one name differ."""
    where = os.path.abspath(model.prog_file)
    return f"{model.name}-{hashlib.sha1(where.encode()).hexdigest()[:8]}"


# TensorRT versions that brought the builder optimization level and explicit (Q/DQ) quantization.
TRT_OPTIMIZATION_LEVEL_SINCE = (8, 6)
TRT_EXPLICIT_QUANTIZATION_SINCE = (8, 5, 1)


def known_trt(version: Optional[Sequence[int]]) -> Optional[Tuple[int, ...]]:
    """A TensorRT version worth comparing, or None (not known, or no TensorRT: (0, 0, 0))."""
    return tuple(version) if version and any(version) else None


def _dotted(version: Sequence[int]) -> str:
    return ".".join(map(str, version))


def plan_remarks(spec: RunModeSpec, paddle_version: Optional[str] = None, program_format: str = "",
                 trt_version: Optional[Sequence[int]] = None, explicit: bool = False) -> Tuple[str, ...]:
    """Toggles whose Config call Paddle takes but does not act on (read from its source);
    ``explicit``: Q/DQ ops would take explicit quantization."""
    version = installed_paddle()[1] if paddle_version is None else paddle_version
    remarks = []
    if spec.memory_optim and spec.run_mode.device == GPU and paddle_major(version) >= 3:
        remarks.append("memory_optim: on Paddle 3.x GPU the new executor runs with memory "
                       "optimization off whatever enable_memory_optim() asks")
    if spec.run_mode.tensorrt and spec.dynamic_shape is not None \
            and not pir_tensorrt.takes_pir_path(spec.run_mode, program_format) \
            and set(spec.disable_trt_ops) & set(MATRIX_MULTIPLY_OPS):
        remarks.append("disable_trt_op: with a dynamic shape Paddle renames mul/matmul/matmul_v2 "
                       "to matrix_multiply before TensorRT's op teller reads the list, so "
                       "matrix_multiply is disabled too (all three kinds stay in Paddle)")
    fusible = [op for op in spec.fp32_ops if op.rsplit(".", 1)[-1] in FUSIBLE_OPS]
    if fusible and spec.run_mode.device == GPU and not spec.run_mode.tensorrt:
        remarks.append(f"fp32_op: GPU fusion passes may take {', '.join(fusible)} into fused op "
                       f"types (fused_conv2d_add_act, conv2d_fusion, fc, fused_gemm_epilogue, ...) "
                       f"before mixed precision is placed; name those as well to keep them in "
                       f"fp32 (the candidate's evidence lists the fused ops that ran)")
    dyn = spec.dynamic_shape
    if pir_tensorrt.takes_pir_path(spec.run_mode, program_format) and dyn is not None:
        if dyn.tuned:
            remarks.append("dynamic_shape=tuned: paddle.tensorrt (the TensorRT path of .json "
                           "programs) collects no shape ranges: the case's own input shapes are "
                           "min, opt and max, as without a dynamic shape")
        if dyn.disable_trt_plugin_fp16:
            remarks.append("disable_trt_plugin_fp16: paddle.tensorrt (the TensorRT path of .json "
                           "programs) has no such setting: TensorRT's plugins may run in fp16")
    trt = known_trt(trt_version)
    if spec.run_mode.tensorrt and trt is not None:
        if spec.trt_optimization_level is not None and trt < TRT_OPTIMIZATION_LEVEL_SINCE:
            remarks.append(f"trt_optimization_level: TensorRT {_dotted(trt)} here has no builder "
                           f"optimization level (it came in "
                           f"{_dotted(TRT_OPTIMIZATION_LEVEL_SINCE)}): Paddle drops the value, and "
                           f"the engine is built as without it")
        if explicit and trt < TRT_EXPLICIT_QUANTIZATION_SINCE:
            remarks.append(f"int8_source=quantized: TensorRT {_dotted(trt)} here has no explicit "
                           f"quantization (it came in {_dotted(TRT_EXPLICIT_QUANTIZATION_SINCE)}): "
                           f"enable_tensorrt_explicit_quantization is not called, and the quantize "
                           f"ops' scales reach TensorRT the implicit way")
    return tuple(remarks)


# Op types GPU fusion passes take into fused types; mixed-precision placement reads the types
# after fusion, so the unfused name alone may keep nothing in fp32.
FUSIBLE_OPS = frozenset({"conv2d", "depthwise_conv2d", "matmul", "matmul_v2", "mul", "add",
                         "elementwise_add", "layer_norm", "batch_norm", "batch_norm_", "relu"})


def fp32_ops_problem(spec: RunModeSpec, program_ops: Mapping[str, int], program_format: str) -> Optional[str]:
    """The error for ``+fp32_op`` naming ops the program lacks and no fusion makes (GPU mixed precision)."""
    if not spec.fp32_ops or spec.run_mode.device != GPU or spec.run_mode.tensorrt:
        return None
    held = {base_name(t) for t in program_ops}
    unknown = [op for op in spec.fp32_ops if base_name(op) not in held and not is_fused(op)]
    if not unknown:
        return None
    shown = ", ".join(sorted(held)[:30]) + (", ..." if len(held) > 30 else "")
    pir = (" A .json (PIR) program names ops as the file holds them (matmul, not "
           "matmul_v2; add, not elementwise_add)." if program_format == PIR_FORMAT else "")
    return (f"{spec.label}: +fp32_op names {', '.join(unknown)}, which the program holds no "
            f"op of, and no fusion makes: nothing would be kept in fp32.{pir} Its op types: "
            f"{shown}; ops that fusion passes make (fused_*, fc, ...) may be named too")


def table_dir_key(model: "ModelFiles") -> str:
    """One lock per ``<model dir>/_opt_cache``, where Paddle writes tables whatever the program."""
    where = str(Path(model.prog_file).resolve().parent / PADDLE_MODEL_CACHE)
    return f"{PADDLE_MODEL_CACHE.strip('_')}-{hashlib.sha1(where.encode()).hexdigest()[:8]}"


# Ops of explicit (Q/DQ) quantization; older PaddleSlim models keep scales as attributes.
QDQ_OPS = frozenset({"quantize_linear", "dequantize_linear"})


def explicit_quantization(program_ops: Optional[Mapping[str, int]]) -> bool:
    """``enable_tensorrt_explicit_quantization`` only for a program holding Q/DQ ops: with the
    flag, ``FreezeNetwork`` sets no dynamic ranges, and scales kept as attributes are lost."""
    return program_ops is None or any(program_ops.get(op) for op in QDQ_OPS)


def candidate_feeds(plan: Plan, inputs: Mapping[str, "np.ndarray"]) -> Mapping[str, "np.ndarray"]:
    """The candidate's inputs: float32 arrays cast to the plan's ``feed_dtype``, if any."""
    if not plan.feed_dtype:
        return inputs
    return {name: a.astype(plan.feed_dtype) if a.dtype.kind == "f" else a for name, a in inputs.items()}


def max_batch_size(shapes: Mapping[str, Sequence[int]], dynamic: Optional[DynamicShape]) -> int:
    """Static-shape TensorRT: the largest leading dim of the inputs or the ranges' max."""
    dims = [int(s[0]) for s in shapes.values() if len(s)]
    if dynamic is not None:
        dims += [r.max[0] for _, r in dynamic.ranges if r.max]
    return max(dims, default=1)


def calibration_shapes(specs: Sequence[InputSpec], dynamic: Optional[DynamicShape]) -> Tuple[InputSpec, ...]:
    """One shape for every calibration batch (the calibrator sizes buffers from the first)."""
    ranges = dict(dynamic.ranges) if dynamic is not None and not dynamic.tuned else {}
    return tuple(replace(s, shape=tuple(ranges[s.name].opt)) if s.name in ranges else s for s in specs)


def calibration_batches(spec: RunModeSpec, specs: Sequence[InputSpec], seed: int) -> Batches:
    specs = calibration_shapes(specs, spec.dynamic_shape)
    if spec.calib_data is not None:
        directory = str(Path(spec.calib_data).expanduser().resolve())
        return FileBatches(directory, spec.calib_batches, tuple(specs), spec.dynamic_shape)
    first = seed + CALIBRATION_SEED_OFFSET
    return GeneratedBatches(tuple(specs), tuple(range(first, first + calibration_batch_count(spec))))


def candidate_plan(spec: RunModeSpec, model: "ModelFiles", specs: Sequence[InputSpec], *,
                   optim_root: Union[str, Path], threads: Optional[int] = None, seed: int = 0,
                   device_id: int = 0, worker: str = MAIN_WORKER, mark_outputs: Sequence[str] = (),
                   program_ops: Optional[Mapping[str, int]] = None,
                   trt_version: Optional[Sequence[int]] = None) -> Plan:
    """The steps that build the candidate of ``spec`` for inputs ``specs`` (concrete shapes);
    ``program_ops`` (op type -> count) decides explicit quantization (None: explicit)."""
    shapes = {s.name: tuple(s.shape) for s in specs}
    check_shape_in_range(shapes, spec.dynamic_shape)
    wants_explicit = spec.int8_source == QUANTIZED and explicit_quantization(program_ops)
    trt = known_trt(trt_version)
    explicit = wants_explicit and (trt is None or trt >= TRT_EXPLICIT_QUANTIZATION_SINCE)
    pir = pir_tensorrt.takes_pir_path(spec.run_mode, model.format)
    remarks = plan_remarks(spec, program_format=model.format, trt_version=trt,
                           explicit=wants_explicit and not pir)
    if not spec.run_mode.tensorrt:
        return Plan((Build(recipe(spec, threads, device_id)),),
                    feed_dtype="float16" if spec.low_precision_io else "", remarks=remarks)
    cache = Path(optim_root) / optim_cache_subdir(model_key(model), spec, worker, shapes)
    steps: List[Step] = [PrepareCacheDir(str(cache), keep=spec.use_static)]
    if pir:
        if device_id != 0:  # paddle.tensorrt's convert hard-codes CUDAPlace(0)
            remarks += (f"PIR TensorRT: paddle.tensorrt converts on GPU 0 (its convert uses "
                        f"CUDAPlace(0)), whatever this worker's GPU {device_id}: the engines are "
                        f"built on GPU 0's card and run on GPU {device_id}; pin workers with "
                        f"CUDA_VISIBLE_DEVICES to build each on its own",)
        return replace(pir_plan(spec, model, specs, cache, steps, threads, device_id), remarks=remarks)
    check_static_shape(spec, model)
    shape_file = None
    if spec.dynamic_shape is not None and spec.dynamic_shape.tuned:
        shape_file = str(cache / SHAPE_RANGE_FILE)
        steps.append(CollectShapes(shape_collect_recipe(spec, shape_file, device_id), shape_file,
                                   reuse=spec.use_static))
    calls = recipe(spec, threads, device_id, shape_file, max_batch_size(shapes, spec.dynamic_shape),
                   explicit_quantization=explicit) \
        + (optim_cache_call(str(cache)),)
    if mark_outputs:
        calls += marking_calls(mark_outputs)
    elif spec.run_mode.precision == INT8:
        calls += (INSPECTOR,)  # engine_info_*.json shows whether int8 layers were built
    if needs_calibration(spec):
        steps.append(Calibrate(
            calls, calibration_batches(spec, specs, seed), table_dir=str(cache), reuse=spec.use_static,
            paddle_table_dir=str(Path(model.prog_file).resolve().parent / PADDLE_MODEL_CACHE),
            lock_file=str(Path(optim_root) / "locks" / f"{table_dir_key(model)}.lock")))
    steps.append(Build(calls))
    int8 = INT8_QUANTIZED if spec.int8_source == QUANTIZED else ""  # only TensorRT int8 takes it
    return Plan(tuple(steps), int8, pir_tensorrt.LEGACY_PATH, remarks=remarks)


def check_static_shape(spec: RunModeSpec, model: "ModelFiles") -> None:
    """-1 beyond the batch dim under static-shape legacy TensorRT: Paddle's error names neither
    the input nor the fix; say both."""
    loose = [s for s in model.inputs if any(d < 0 for d in tuple(s.shape)[1:])]
    if spec.dynamic_shape is None and loose:
        shapes = ", ".join(f"{s.name} {list(s.shape)}" for s in loose)
        raise OptionError(
            f"{spec.label}: {model.name} declares input dims other than the batch as -1 "
            f"({shapes}); static-shape TensorRT needs them fixed. Add +dynamic_shape=tuned "
            f"(ranges from the case's inputs) or +dynamic_shape={loose[0].name}:MIN:OPT:MAX per "
            f"input (suite key dynamic_shape)")


def pir_plan(spec: RunModeSpec, model: "ModelFiles", specs: Sequence[InputSpec], cache: Path,
             steps: List[Step], threads: Optional[int], device_id: int) -> Plan:
    """A ``.json`` program under TensorRT: converted by ``paddle.tensorrt``, run by a GPU predictor."""
    pir_tensorrt.check_takes(spec, model.format, model.prog_file)
    prog = Path(model.prog_file).resolve()
    params = Path(model.params_file).resolve()
    links: Tuple[Tuple[str, str], ...] = ()
    if params != prog.with_suffix(".pdiparams"):  # convert reads <prefix>.pdiparams
        staged = cache / pir_tensorrt.SOURCE_DIR / "inference.json"
        links = ((str(staged), str(prog)), (str(staged.with_suffix(".pdiparams")), str(params)))
        prog = staged
    prefix = cache / pir_tensorrt.CONVERTED_PREFIX
    # convert takes the path prefix: under PIR load_inference_model appends '.json' again
    calls = pir_tensorrt.conversion_calls(spec, str(prog.with_suffix("")), str(prefix),
                                          [(s.name, tuple(s.shape), s.dtype) for s in specs])
    out = (str(prefix.with_suffix(".json")), str(prefix.with_suffix(".pdiparams")))
    steps.append(ConvertPir(calls, links, out[0], out[1], reuse=spec.use_static))
    full = recipe(spec, threads, device_id, str(cache / SHAPE_RANGE_FILE))  # tuned: dropped below
    steps.append(Build(pir_tensorrt.predictor_recipe(full), out))
    return Plan(tuple(steps), INT8_QUANTIZED if spec.int8_source == QUANTIZED else "", pir_tensorrt.PIR_PATH)


def declared_shapes(case: "Case") -> Optional[Dict[str, Tuple[int, ...]]]:
    """The case's input shapes from the declared inputs, without exporting; None if unknown."""
    if not case.model.inputs:
        return None
    given = dict(case.shapes)
    try:
        return {s.name: fill_shape(s.shape, given.get(s.name), s.name) for s in case.model.inputs}
    except InputError:
        return None  # the case reports its shape problem when it builds its inputs


@dataclass
class Built:
    predictor: object
    recipe: Tuple[Call, ...]
    notes: Tuple[str, ...] = ()  # what the steps before the build did, for the report
    int8: str = ""  # INT8_GENERATED | INT8_LOADED | INT8_QUANTIZED | ""
    path: str = ""  # TensorRT modes: the TensorRT path taken (Plan.path)
    built_at: float = 0.0  # time.time() when the plan's steps started
    engine_dirs: Tuple[str, ...] = ()  # where its TensorRT engines write engine_info_*.json
    converted: str = ""  # PIR TensorRT: the program paddle.tensorrt.convert wrote


class PlanExecutor:
    """Runs plans; the steps before the cached final predictor only run when it is built."""
    def __init__(self, predictors: PredictorCache, build: Callable = build_predictor):
        self.predictors = predictors
        self.build = build
        self._outcomes: Dict[Tuple, Tuple[Tuple[str, ...], str, float]] = {}
        self.on_phase: Callable[..., None] = lambda name, recipe="": None  # where a crash happened

    def run(self, plan: Plan, model: "ModelFiles", inputs: Mapping[str, "np.ndarray"]) -> Built:
        if plan.final.program is not None:  # a converted program (ConvertPir) runs instead
            model = replace(model, prog_file=plan.final.program[0], params_file=plan.final.program[1])
        key = (model.prog_file, model.params_file, plan.final.recipe)

        def make(files, calls):
            started = time.time()
            notes: List[str] = []
            int8 = plan.int8
            for step in plan.steps[:-1]:
                note, int8 = self._run_step(step, files, inputs, int8)
                notes.append(note)
            if int8 == INT8_QUANTIZED:
                notes.append(f"int8: {INT8_QUANTIZED}: scales come from the model's quantize "
                             f"ops, no calibration (use_calib_mode=False)")
            if len(plan.steps) > 1:
                self.on_phase("building the candidate", describe_recipe(calls))
            predictor = self.build(files, calls)
            self._outcomes[key] = (tuple(notes), int8, started)
            return predictor

        predictor = self.predictors.get(model, plan.final.recipe, build=make)
        notes, int8, when = self._outcomes.get(key, ((), plan.int8, 0.0))
        return Built(predictor, plan.final.recipe, notes + plan.remarks, int8, plan.path, when,
                     engine_dirs(plan, model), model.prog_file if plan.final.program else "")

    def _run_step(self, step: Step, model, inputs, int8: str) -> Tuple[str, str]:
        if isinstance(step, PrepareCacheDir):
            return prepare_cache_dir(step), int8
        if isinstance(step, CollectShapes):
            self.on_phase("collecting shape ranges", describe_recipe(step.recipe))
            return self._collect_shapes(step, model, inputs), int8
        if isinstance(step, Calibrate):
            self.on_phase("calibration", describe_recipe(step.recipe))
            return self._calibrate(step, model)
        if isinstance(step, ConvertPir):
            self.on_phase("converting to TensorRT (paddle.tensorrt)", str(step))
            return convert_pir(step, inputs), int8
        raise TypeError(f"a Build step may only come last in a plan: {step}")

    def _run_and_destroy(self, model, calls, batches: Sequence[Mapping[str, "np.ndarray"]]) -> None:
        """Paddle writes shape ranges and calibration tables in the predictor's destructor."""
        predictor = self.build(model, calls)
        for batch in batches:
            run_predictor(predictor, batch)
        del predictor
        gc.collect()

    def _collect_shapes(self, step: CollectShapes, model, inputs) -> str:
        path = Path(step.shape_file)
        if step.reuse and path.is_file() and path.stat().st_size:
            return f"tuned dynamic shape: shape ranges reused from {path} (+use_static)"
        path.unlink(missing_ok=True)
        self._run_and_destroy(model, step.recipe, [inputs] * step.runs)
        if not (path.is_file() and path.stat().st_size):
            raise PredictorError(f"collecting shape ranges wrote nothing to {path}; "
                                 f"recipe: {describe_recipe(step.recipe)}")
        return f"tuned dynamic shape: shape ranges collected from the case's inputs into {path}"

    def _calibrate(self, step: Calibrate, model) -> Tuple[str, str]:
        table_dir = Path(step.table_dir)
        found = calibration_tables(table_dir)
        if step.reuse and found:
            return (f"int8: {INT8_LOADED}: {_names(found)} in {table_dir}, kept from an earlier "
                    f"run (+use_static)", INT8_LOADED)
        batches = load_batches(step.batches)  # every batch checked before an engine is built
        paddle_dir = Path(step.paddle_table_dir)
        writable = paddle_dir if paddle_dir.is_dir() else paddle_dir.parent
        if not os.access(writable, os.W_OK):
            raise PredictorError(
                f"trt_int8 calibration: Paddle writes the table into {paddle_dir} (next to the "
                f"model, whatever the optim cache dir), and {writable} is not writable; copy the "
                f"model to a writable directory, or use int8_source=quantized")
        with file_lock(Path(step.lock_file)):
            before = _stamps(paddle_dir)
            self._run_and_destroy(model, step.recipe, batches)
            tables = calibration_tables(table_dir) or _move_new_tables(paddle_dir, before, table_dir)
        if not tables:
            raise PredictorError(
                f"trt_int8 calibration ran {len(batches)} batches but no trt_calib_* table "
                f"appeared in {table_dir} or {paddle_dir}: no part of the model ran in TensorRT "
                f"(subgraphs need {TRT_MIN_SUBGRAPH_SIZE}+ supported ops), so there is nothing int8 to check; "
                f"recipe: {describe_recipe(step.recipe)}")
        return (f"int8: {INT8_GENERATED}: {_names(tables)} in {table_dir} from {step.batches}",
                INT8_GENERATED)


def engine_dirs(plan: Plan, model: "ModelFiles") -> Tuple[str, ...]:
    """Legacy TensorRT: the optim cache dir, and ``<model dir>/_opt_cache`` (Paddle writes there too)."""
    if plan.path != pir_tensorrt.LEGACY_PATH or not isinstance(plan.steps[0], PrepareCacheDir):
        return ()
    return (plan.steps[0].path, str(Path(model.prog_file).resolve().parent / PADDLE_MODEL_CACHE))


def convert_pir(step: ConvertPir, inputs: Optional[Mapping[str, "np.ndarray"]] = None) -> str:
    """Run a PIR TensorRT conversion (or keep one); says how many tensorrt_engine ops it holds."""
    out = [Path(step.program), Path(step.params)]
    if step.reuse and all(p.is_file() for p in out):
        how = f"kept from an earlier run (+use_static): {step.program}"
    else:
        for p in out:
            p.unlink(missing_ok=True)
        for link, target in step.links:
            Path(link).parent.mkdir(parents=True, exist_ok=True)
            Path(link).unlink(missing_ok=True)
            os.symlink(target, link)
        out[0].parent.mkdir(parents=True, exist_ok=True)
        skipped = pir_tensorrt.run_calls(step.calls, inputs)
        missing = [str(p) for p in out if not p.is_file()]
        if missing:
            raise PredictorError(f"paddle.tensorrt.convert wrote no {', '.join(missing)}; "
                                 f"calls: {describe_recipe(step.calls)}")
        lacked = f" (this Paddle's TensorRTConfig lacks {', '.join(skipped)})" if skipped else ""
        how = f"paddle.tensorrt.convert wrote {step.program}{lacked}"
    engines = sum(n for t, n in program_op_types(step.program).items() if base_name(t) == TENSORRT_ENGINE)
    return f"PIR TensorRT: {how}; the program holds {engines} tensorrt_engine op(s)"


def prepare_cache_dir(step: PrepareCacheDir) -> str:
    path = Path(step.path)
    if not step.keep and path.exists():
        shutil.rmtree(path)  # this worker's own dir: no other process uses it
    path.mkdir(parents=True, exist_ok=True)
    return f"TensorRT optim cache dir: {path}" + (" (kept from earlier runs: +use_static)"
                                                 if step.keep else "")


def _stamps(directory: Path) -> Dict[str, Tuple[int, int]]:
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in calibration_tables(directory)}


def _move_new_tables(source: Path, before: Mapping[str, Tuple[int, int]], target: Path) -> List[Path]:
    """Tables Paddle wrote into ``source`` during this calibration, moved into ``target``."""
    moved = []
    for table in calibration_tables(source):
        if before.get(table.name) != (table.stat().st_mtime_ns, table.stat().st_size):
            destination = target / table.name
            shutil.move(str(table), str(destination))
            moved.append(destination)
    return moved


def _names(paths: Sequence[Path]) -> str:
    return ", ".join(p.name for p in paths)


def load_batches(source: Batches) -> List[Dict[str, "np.ndarray"]]:
    if isinstance(source, GeneratedBatches):
        return [generate_all(source.specs, seed) for seed in source.seeds]
    directory = Path(source.directory)
    if not directory.is_dir():
        raise InputError(f"calib_data: no such directory {directory}")
    files = sorted(p for p in directory.iterdir() if p.suffix in (".npy", ".npz"))
    if not files:
        raise InputError(f"calib_data: {directory} holds no .npy or .npz calibration batches")
    files = files[:source.limit] if source.limit is not None else files
    # one shape for every batch: the specs carry the opt shape of ranged inputs
    wanted = [WantedArray(s.name, str(numpy_dtype(s.dtype)), s.shape) for s in source.specs]
    fix = ("every calibration batch has one shape (Paddle's calibrator sizes its buffers from "
           "the first): the case's shape, or the opt shape of a dynamic range")
    try:
        return [load_arrays(path, wanted, exact=True, shape_fix=fix) for path in files]
    except ArrayFileError as e:
        raise InputError(f"calib_data: {e}") from None


class CandidateBuilder:
    """A worker's GPU, optim cache root and plan executor."""
    def __init__(self, predictors: PredictorCache, optim_root: Union[str, Path],
                 device: Optional[DeviceChoice] = None, worker: Optional[str] = None,
                 gpu_count: Optional[Callable[[], int]] = None):
        self.optim_root = Path(optim_root)
        self.device = device or AUTO
        self.worker = worker or current_worker()
        self.executor = PlanExecutor(predictors)
        self._gpu_count = gpu_count or (lambda: detect().gpu_count)

    def trt_version(self) -> Optional[Tuple[int, ...]]:  # the runtime found, else the one built with
        caps = detect()
        return known_trt(caps.trt_runtime) or known_trt(caps.trt_compile)

    def gpu_id(self) -> int:
        return gpu_for_worker(self.device, self.worker, self._gpu_count())

    def device_id(self, spec: RunModeSpec) -> int:  # CPU modes take no device id (0, unused)
        return self.gpu_id() if spec.run_mode.device == GPU else 0

    def check_ranges(self, case: "Case") -> None:
        """A shape outside its dynamic range errors before anything is built or skipped."""
        shapes = declared_shapes(case)
        if shapes is None:
            return
        try:
            check_shape_in_range(shapes, case.run_mode.dynamic_shape)
        except OptionError as e:  # name the suite line (or marker) that declared the case
            raise OptionError(f"{case.origin}: {e}" if case.origin else str(e)) from None

    def plan(self, spec: RunModeSpec, model: "ModelFiles", specs: Sequence[InputSpec],
             threads: Optional[int] = None, seed: int = 0, mark_outputs: Sequence[str] = (),
             program_ops: Optional[Mapping[str, int]] = None) -> Plan:
        return candidate_plan(spec, model, specs, optim_root=self.optim_root, threads=threads,
                              seed=seed, device_id=self.device_id(spec), worker=self.worker,
                              mark_outputs=mark_outputs, program_ops=program_ops,
                              trt_version=self.trt_version() if spec.run_mode.tensorrt else None)

    def build(self, spec: RunModeSpec, model: "ModelFiles", specs: Sequence[InputSpec],
              inputs: Mapping[str, "np.ndarray"], threads: Optional[int] = None,
              seed: int = 0, mark_outputs: Sequence[str] = ()) -> Built:
        return self.executor.run(self.plan(spec, model, specs, threads, seed, mark_outputs), model, inputs)
