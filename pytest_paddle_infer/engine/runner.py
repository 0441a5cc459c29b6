"""Run a case: inputs -> baseline outputs -> candidate outputs -> comparison rows. ``Runner``
keeps model files, predictors and baseline outputs between cases: a baseline runs once per model."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np

from ..cases.case import Case
from ..errors import (CandidateError, CaseSkipped, InputError, ModelError, OptionError, PredictorError)
from ..models import cache as models
from ..models.inputs import InputSpec, fill_shape, generate_all, inputs_digest
from ..models.memory import check_fits
from ..models.program import choice_text, describe_program, exports_legacy
from ..models.source import ModelFiles, ModelSource
from ..modes import capabilities
from .build_plan import CandidateBuilder, candidate_feeds, fp32_ops_problem as gpu_fp32_ops_problem
from ..modes.run_modes import INT8, QUANTIZED, RUN_MODES, baseline_recipe, fp32_ops_problem, recipe_shows
from . import pir_tensorrt, tf32
from ..modes.trt_marking import FUSION_WARNING, engine_text, fresh_engine_info, int8_engine_problem
from ..verdict.outputs import check_output_names, compare_outputs
from ..protocol import CaseResult
from ..verdict.evidence import Evidence, Tally, broken_rules, converted_program, coverage_note, shipped_fused
from ..verdict.vacuity import OTHER_SEED_OFFSET, SeedPair, judge_outputs
from ..cases.baseline_forms import GOLDEN, kind_of
from .baselines import BaselineOutputs, Baselines, run_meta
from .capture import (selection_problems, BaselineStore, CandidateComparer, HookRouters, Selection, run_with_sink)
from ..goldens import RUN, GoldenPolicy
from .int8_evidence import (DtypeTally, int8_kernels_text, int8_note, no_int8_problem, not_quantized_reason, program_op_types, quantize_ops, wants_int8_kernels)
from .predictor import PredictorCache, describe_recipe, run_predictor
from .recording import hooked_run, needs_warm_up, recorded, warm_up
from .saved_tensors import write_golden
from ..files import atomic_write, file_lock
from .localize.pir_passes import delete_pass_problem

@dataclass
class Prepared:
    """What setup builds for a case; running and comparing happen in the test call."""
    case: Case
    model: ModelFiles
    inputs: Dict[str, np.ndarray]
    baseline_outputs: Mapping[str, np.ndarray]
    baseline_text: str
    candidate: object
    candidate_recipe: str
    baseline_store: Optional[BaselineStore] = None  # the baseline's spilled intermediates
    notes: Tuple[str, ...] = ()  # what building the candidate took (cache dir, calibration)
    int8: str = ""  # which int8 path the candidate took: build_plan.INT8_*
    seeds: Optional[SeedPair] = None  # the plain baseline's outputs for two input seeds
    baseline_evidence: Optional[dict] = None  # what the baseline run executed (evidence.py)
    candidate_inputs: Optional[Mapping[str, np.ndarray]] = None  # cast for the candidate (plan.feed_dtype)
    engines: Tuple[Tuple[str, ...], float] = ((), 0.0)  # legacy TensorRT: engine_info dirs, build time
    converted_program: str = ""  # PIR TensorRT: the program the candidate runs (its evidence)


class Runner:
    def __init__(self, cache_dir: Path, device=None, goldens: Optional[GoldenPolicy] = None,
                 shared_dir: Optional[Path] = None):
        self.cache_dir = Path(cache_dir)
        self.shared_dir = shared_dir  # xdist: baseline outputs the session's workers share
        # dygraph, static and golden baselines, and recording goldens (baselines.py)
        self.baselines = Baselines(self.cache_dir, goldens or GoldenPolicy())
        self.runs_dir = (goldens or GoldenPolicy()).runs_dir  # --paddle-save-runs
        self.predictors = PredictorCache()
        self.candidates = CandidateBuilder(self.predictors, self.cache_dir / "optim", device)
        self._models: Dict[Tuple[ModelSource, bool], ModelFiles] = {}
        self._baselines: Dict[Tuple, Mapping[str, np.ndarray]] = {}
        self._stores: Dict[Tuple, BaselineStore] = {}
        self._evidence: Dict[Tuple, Optional[dict]] = {}  # baseline key -> Evidence.to_dict()
        self.hooks = HookRouters()
        self.predictors.on_evict.append(self.hooks.forget)  # hooked predictors go with the cache's
        self._beside = ThreadPoolExecutor(max_workers=1, thread_name_prefix="paddle-infer-beside")
        self._beside_work: List[Future] = []  # submitted there and not done (beside_note)
        self.spill_dir = self.cache_dir / "spill" / f"pid{os.getpid()}"
        # told where a case's work is (and its recipe), so a crash can be placed
        self.on_phase: Callable[..., None] = lambda name, recipe="": None
        self.candidates.executor.on_phase = lambda name, recipe="": self.on_phase(name, recipe)
        # the executor's settings, for localization trials in a child (localize/trials.py)
        self.trial_init: Optional[dict] = None

    def model_files(self, source: ModelSource, legacy: bool = False) -> ModelFiles:
        key = (source, legacy)
        if key not in self._models:
            self._models[key] = models.resolve(source, self.cache_dir, legacy)
        return self._models[key]

    def input_specs(self, model: ModelFiles, shapes: Mapping[str, Tuple[int, ...]]) -> List[InputSpec]:
        unknown = sorted(set(shapes) - {s.name for s in model.inputs})
        if unknown:
            raise InputError(f"{model.name}: no input named {', '.join(unknown)}; "
                             f"the model's inputs are {', '.join(s.name for s in model.inputs)}")
        return [s.concrete(fill_shape(s.shape, shapes.get(s.name), s.name)) for s in model.inputs]

    def inputs(self, model: ModelFiles, shapes: Mapping[str, Tuple[int, ...]], seed: int) -> Dict[str, np.ndarray]:
        specs = self.input_specs(model, shapes)
        check_fits(model.name, specs)  # an absurd shape errors here, before anything is allocated
        return generate_all(specs, seed)

    def baseline_calls(self, case: Case, model: Optional[ModelFiles] = None):
        """The plain predictor's recipe; a PIR program's turns its passes off for real."""
        mode = RUN_MODES[case.run_mode.mode]
        device = mode.device if case.baseline == "auto" else case.baseline
        return baseline_recipe(device, case.threads, self.candidates.gpu_id() if device == "gpu" else 0,
                               model.format if model is not None else "legacy")

    def check_capabilities(self, case: Case) -> None:
        caps = capabilities.detect()
        reason = caps.missing_for(case.run_mode.run_mode, self.candidates.device_id(case.run_mode))
        if reason is None and case.baseline == "gpu" and not caps.cuda:
            reason = (f"baseline gpu needs Paddle built with CUDA; {caps.distribution} "
                      f"{caps.version} installed here is CPU-only")
        if reason:
            raise CaseSkipped(reason)

    def case_model(self, case: Case) -> ModelFiles:
        """The program a case checks, baseline and candidate alike (models/program.py)."""
        version = capabilities.installed_paddle()[1]
        legacy = exports_legacy(case.model, case.program, case.run_mode.run_mode, version)
        try:
            return self.model_files(case.model, legacy=legacy)
        except ModelError as e:
            if not legacy:
                raise
            why = choice_text(case.model, case.program, case.run_mode.run_mode, version)
            raise ModelError(f"{e}\nthe legacy export was wanted: program {why}") from None

    def prepare(self, case: Case, build_candidate: bool = True) -> Prepared:
        """Everything a case needs before its run; without ``build_candidate`` the candidate is None."""
        self.candidates.check_ranges(case)  # a bad dynamic range errors even where GPUs are missing
        self.check_capabilities(case)
        self.on_phase("exporting the model")
        model = self.case_model(case)  # the same program with or without intermediates
        pir_tensorrt.check_takes(case.run_mode, model.format, model.prog_file,  # before any run
                                 capabilities.detect().trt_compile if case.run_mode.run_mode.tensorrt else ())
        # toggles that would change nothing while the case's id says they did
        problem = fp32_ops_problem(case.run_mode, model.format) \
            or delete_pass_problem(case.run_mode, model, case.threads) \
            or (case.run_mode.fp32_ops and case.run_mode.run_mode.device == "gpu" and gpu_fp32_ops_problem(
                case.run_mode, program_op_types(model.prog_file), model.format))
        if problem:
            raise OptionError(problem)
        program_ops = None
        mode = case.run_mode.run_mode  # oneDNN int8, or TensorRT int8 from quantize ops
        if wants_int8_kernels(mode) or (mode.tensorrt and mode.precision == INT8
                                        and case.run_mode.int8_source == QUANTIZED):
            # a float model: nothing int8 to check
            reason = not_quantized_reason(model.name, model.prog_file, case.run_mode.mode)
            if reason:
                raise CaseSkipped(reason)
            program_ops = program_op_types(model.prog_file)  # decides explicit quantization
        self.on_phase("generating inputs")
        inputs = self.inputs(model, dict(case.shapes), case.seed)
        digest = inputs_digest(inputs)
        self.on_phase("running the baseline", f"{case.baseline}: {describe_recipe(self.baseline_calls(case, model))}"
                      if case.baseline in ("auto", "cpu", "gpu") else case.baseline)
        get_baseline = lambda: self.baselines.get(
            case, model, inputs, digest, lambda kind: self.baseline_device(case, kind),
            lambda kind: self.predictor_baseline(replace(case, baseline=kind), model, inputs, digest))
        if build_candidate and (case.intermediates == "none" or not case.run_mode.run_mode.tensorrt):
            return self._prepare_beside(case, model, inputs, digest, program_ops, get_baseline)
        baseline = get_baseline()
        selection_note = selection_notes(baseline, model)
        marks = marked_tensors(case, baseline.store, model.format)
        specs = self.input_specs(model, dict(case.shapes))
        plan = self.candidates.plan(case.run_mode, model, specs, case.threads, case.seed, marks, program_ops)
        if not build_candidate:
            return Prepared(case, model, inputs, baseline.outputs, baseline.text, None,
                            describe_recipe(plan.final.recipe), baseline.store, (), plan.int8,
                            self.seed_outputs(case, model, inputs, digest),
                            baseline_evidence=baseline.evidence)
        # the baseline's run on other inputs (vacuity.py) goes on beside the candidate's build
        seeds_later = self.beside(self.seed_outputs, case, model, inputs, digest)
        try:
            self.on_phase("building the candidate", describe_recipe(plan.final.recipe))
            built = self.build_candidate(plan, model, inputs)
        finally:
            seeds_later.exception()  # waits: never leave it running on a predictor
        seeds = seeds_later.result()  # raises what the run raised
        extra = ((FUSION_WARNING,) if marks else ()) + selection_note
        return prepared_case(case, model, inputs, baseline, plan, built, seeds, extra)

    def build_candidate(self, plan, model: ModelFiles, inputs: Dict[str, np.ndarray]):
        """The candidate's predictor; a Paddle error without a hint becomes a CandidateError."""
        try:
            return self.candidates.executor.run(plan, model, inputs)
        except PredictorError as e:
            raise candidate_error(e)(str(e)) from None

    def _prepare_beside(self, case: Case, model: ModelFiles, inputs: Dict[str, np.ndarray],
                        digest: str, program_ops, get_baseline) -> Prepared:
        """No baseline tensors to mark: the baseline runs beside the candidate's build (which
        releases the GIL). Both finish before the candidate runs: predictor runs hold the GIL,
        and under xdist a sibling may wait for the shared outputs."""
        baseline_later = self.beside(get_baseline)
        # one thread, in order: the baseline is done when this starts; none after its error
        seeds_later = self.beside(lambda: None if baseline_later.exception() is not None
                                  else self.seed_outputs(case, model, inputs, digest))
        try:
            specs = self.input_specs(model, dict(case.shapes))
            plan = self.candidates.plan(case.run_mode, model, specs, case.threads, case.seed, (), program_ops)
            self.on_phase("building the candidate", describe_recipe(plan.final.recipe))
            built = self.build_candidate(plan, model, inputs)
        except BaseException as e:
            seeds_later.cancel()  # not needed now, if not started
            if not isinstance(e, Exception):  # an interrupt stops the case now, as it is
                raise
            failed = baseline_later.exception()  # waits: never leave it running on a predictor
            wait([seeds_later])
            if failed is not None:  # the baseline comes first: its error is the case's
                raise failed from None
            try:  # then globs that select no tensor, as when the build came after the baseline
                selection_notes(baseline_later.result(), model)
            except InputError as selection:
                raise selection from None
            raise
        baseline = baseline_later.result()  # its error is the case's, in setup as before
        seeds = seeds_later.result()
        return prepared_case(case, model, inputs, baseline, plan, built, seeds,
                             selection_notes(baseline, model))

    def beside(self, fn, *args) -> Future:
        """Run ``fn`` in the thread beside the case's main work (one at a time, in order)."""
        later = self._beside.submit(fn, *args)
        self._beside_work.append(later)
        later.add_done_callback(self._beside_work.remove)
        return later

    def beside_note(self) -> str:
        """For a crash's message: baseline work going on beside the main thread's."""
        busy = any(not later.done() for later in self._beside_work)
        return " (the baseline was being computed beside it)" if busy else ""

    def seed_outputs(self, case: Case, model: ModelFiles, inputs: Dict[str, np.ndarray],
                     digest: str) -> Optional[SeedPair]:
        """The plain baseline's outputs for the case's inputs and another seed's (an output
        equal for both does not depend on the input); None when inputs ignore the seed."""
        other = self.inputs(model, dict(case.shapes), case.seed + OTHER_SEED_OFFSET)
        plain, other_digest = replace(case, baseline="auto", intermediates="none"), inputs_digest(other)
        if other_digest == digest:
            return None
        first = self.predictor_baseline(plain, model, inputs, digest).outputs
        second = self.predictor_baseline(plain, model, other, other_digest).outputs
        return first, second, (case.seed, case.seed + OTHER_SEED_OFFSET)

    def predictor_baseline(self, case: Case, model: ModelFiles, inputs: Dict[str, np.ndarray],
                           digest: str) -> BaselineOutputs:
        """A plain predictor's outputs (and intermediates), once per model, recipe and inputs."""
        if case.baseline == "gpu":
            self.check_capabilities(case)  # a golden being rewritten may name the gpu baseline
        selection = Selection(case.intermediates)
        base_calls = self.baseline_calls(case, model)
        key = (model.prog_file, base_calls, digest)
        store_key = key + (selection.spec,)
        if key not in self._baselines or (selection.active and store_key not in self._stores):
            tally = Tally("baseline", model.prog_file, model.format, recipe_shows(base_calls))
            # fused ops the program ships are no pass's doing (evidence.py NO_FUSED_OPS)
            tally.evidence.shipped = shipped_fused(program_op_types(model.prog_file))
            meta: Dict[str, object] = {}

            def run(sink=None):
                predictor = self.predictors.get(model, base_calls)
                router = self.hooks.for_predictor(predictor)
                try:
                    outputs = true_fp32_run(base_calls, tally, lambda: hooked_run(
                        router, sink, tally, lambda: run_predictor(predictor, inputs),
                        warm=sink is not None and needs_warm_up(base_calls)))
                except PredictorError as e:  # as the candidate's: with the recipe
                    raise PredictorError(f"the baseline ({case.baseline}): {e}\n"
                                         f"recipe: {describe_recipe(base_calls)}") from None
                meta["evidence"] = tally.evidence.to_dict()
                return outputs

            if selection.active:
                store = BaselineStore(self.spill_dir / f"store{len(self._stores)}", selection)
                self._baselines[key] = run(store)
                self._stores[store_key] = store
            else:  # under xdist the evidence travels with the shared outputs
                self._baselines[key] = shared_outputs(self.shared_dir, key, run, meta)
            self._evidence[key] = meta.get("evidence")
        return BaselineOutputs(self._baselines[key], f"{case.baseline}: {describe_recipe(base_calls)}",
                               self._stores.get(store_key), self._evidence.get(key))

    def baseline_device(self, case: Case, kind: str) -> str:
        """Where a baseline of ``kind`` runs for this case: cpu or gpu:N."""
        device = kind if kind in ("cpu", "gpu") else RUN_MODES[case.run_mode.mode].device
        return f"gpu:{self.candidates.gpu_id()}" if device == "gpu" else "cpu"

    def run(self, prepared: Prepared) -> CaseResult:
        start = time.perf_counter()
        case = prepared.case
        self.on_phase("running the candidate", prepared.candidate_recipe)
        feeds = prepared.inputs if prepared.candidate_inputs is None else prepared.candidate_inputs
        run = lambda: run_predictor(prepared.candidate, feeds)
        # the candidate's own run records what it executed (evidence.py)
        shown = Tally(case.run_mode.label, prepared.model.prog_file, prepared.model.format,
                      RUN_MODES[case.run_mode.mode].shows)
        if wants_int8_kernels(case.run_mode.run_mode):  # its figures depend on the CPU's kernels
            shown.evidence.kernels = int8_kernels_text(capabilities.detect())
        if case.run_mode.run_mode.device == "gpu":  # what TF32 the candidate may use
            shown.evidence.tf32 = tf32.candidate_text(case.run_mode.run_mode.tensorrt, tf32.switches(),
                                                      tf32.capability(self.candidates.gpu_id()))
        shown.evidence.shipped = shipped_fused(program_op_types(prepared.model.prog_file))
        if prepared.converted_program:  # PIR TensorRT: the converted program shows the engines
            shown.evidence.converted = converted_program(
                prepared.converted_program, program_op_types(prepared.model.prog_file),
                program_op_types(prepared.converted_program))
        run = recorded(self.hooks.for_predictor(prepared.candidate), shown, run)
        comparer = None if prepared.baseline_store is None else CandidateComparer(
            prepared.baseline_store, Selection(case.intermediates), case.tolerances.for_tensor,
            case.tolerances.names_tensor)
        # oneDNN int8: which dtypes the candidate shows (int8_evidence.py)
        tally = DtypeTally(comparer) if wants_int8_kernels(case.run_mode.run_mode) else None
        sink = tally if tally is not None else comparer
        selection = Selection(case.intermediates)  # --paddle-save-runs: the candidate's own tensors
        saved = (BaselineStore(self.spill_dir / "run", selection)
                 if self.runs_dir is not None and selection.active else None)
        sink = fan_out(sink, saved) if saved is not None else sink
        router = self.hooks.for_predictor(prepared.candidate)
        if comparer is not None and needs_warm_up([prepared.candidate_recipe]):
            warm_up(router, lambda: run_predictor(prepared.candidate, feeds))
        try:
            outputs = run_with_sink(router, sink, run) if sink is not None else run()
        except PredictorError as e:  # reported as building it is: with the recipe
            raise candidate_error(e)(f"the candidate ({case.run_mode.label}): {e}\n"
                                     f"recipe: {prepared.candidate_recipe}") from None
        seconds = time.perf_counter() - start
        check_output_names(case, outputs)
        rows = compare_outputs(outputs, prepared.baseline_outputs, case)
        judge_outputs(rows, outputs, prepared.baseline_outputs, prepared.seeds)
        result = CaseResult(case.id, rows, prepared.baseline_text, prepared.candidate_recipe,
                            inputs_digest(prepared.inputs), seconds, notes=list(prepared.notes))
        if comparer is not None:
            result.intermediates = comparer.rows
            if not prepared.baseline_store.records:
                result.notes.append(empty_store_note(case.intermediates, prepared.baseline_evidence))
        if self.runs_dir is not None:
            self.save_run(prepared, outputs, saved, result)
        result.program, result.program_file = describe_program(prepared.model), prepared.model.prog_file
        result.program_choice = choice_text(case.model, case.program, case.run_mode.run_mode,
                                            capabilities.installed_paddle()[1])
        judge_evidence(result, shown.evidence, prepared.baseline_evidence)
        mode = case.run_mode.run_mode
        if mode.tensorrt and mode.precision != "Float32":  # what the engines left to Paddle
            note = coverage_note(shown.evidence, {"Half": "fp16", "Int8": "int8"}.get(
                mode.precision, mode.precision), program_op_types(prepared.converted_program)
                if prepared.converted_program else None)
            if note:
                result.notes.append(note)
        judge_engines(result, case.run_mode, *prepared.engines)
        if tally is not None:
            quantized = quantize_ops(program_op_types(prepared.model.prog_file))
            problem = no_int8_problem(case.run_mode.mode, tally, quantized)
            if problem:
                result.problems.append(problem)
            else:
                result.notes.append(int8_note(tally, shown.evidence.kernels))
        return result

    def save_run(self, prepared: Prepared, outputs, store: Optional[BaselineStore],
                 result: CaseResult) -> None:
        """The candidate's outputs and tensors, in the goldens' format, for paddle-infer-diff."""
        case = prepared.case
        meta = dict(run_meta(case, prepared.model, prepared.inputs, result.inputs_digest,
                             self.baseline_device(case, "auto")), role=RUN, recipe=prepared.candidate_recipe,
                    model={"name": case.model.name, "kind": case.model.kind, "ref": case.model.ref})
        try:
            path = write_golden(self.runs_dir, case.id, outputs, meta, store, self.baselines.policy.float16)
            result.notes.append(f"run saved as {path}")
        finally:
            if store is not None:
                store.remove()

    def measure_seeds(self, prepared: Prepared, seeds) -> Tuple[List[list], List[int], List[str]]:
        """--paddle-suggest-tolerances: the case on other seeds' inputs: (rows per seed, seeds, notes)."""
        case = prepared.case
        if kind_of(case.baseline) == GOLDEN:
            return [], [], [f"{case.baseline}: goldens hold the recorded seed's outputs only: "
                            f"measured on seed {case.seed}"]
        rows, measured, notes, digests = [], [], [], {inputs_digest(prepared.inputs)}
        for seed in seeds:
            inputs = self.inputs(prepared.model, dict(case.shapes), seed)
            digest = inputs_digest(inputs)
            if digest in digests:  # read from files: every seed feeds the same arrays
                notes.append(f"seed {seed}: the same inputs as another seed (read from files)")
                continue
            digests.add(digest)
            other = replace(case, seed=seed, intermediates="none")
            self.on_phase("running the baseline on other inputs", f"seed {seed}")
            baseline = self.baselines.live_outputs(
                other, prepared.model, inputs, digest, lambda kind: self.baseline_device(other, kind),
                lambda kind: self.predictor_baseline(replace(other, baseline=kind), prepared.model,
                                                     inputs, digest))
            fed = prepared.candidate_inputs
            if fed is not None and fed is not prepared.inputs:  # low_precision_io: the same casts
                inputs = {n: a.astype(fed[n].dtype) if n in fed else a for n, a in inputs.items()}
            self.on_phase("running the candidate", f"seed {seed}: {prepared.candidate_recipe}")
            outputs = run_predictor(prepared.candidate, inputs)
            rows.append(compare_outputs(outputs, baseline.outputs, other))
            measured.append(seed)
        return rows, measured, notes

    def localize(self, prepared: Prepared, failure: str = "fails"):
        """The localization ladder (localize/ladder.py); trials in a child when ``trial_init`` is set."""
        from .localize.ladder import localize_case

        return localize_case(self, prepared, self.trial_init, failure)

    def op_types(self, prepared: Prepared) -> List[str]:
        """The op types the baseline program runs, in first-use order."""
        from .localize.trials import predictor_op_types

        predictor = self.predictors.get(prepared.model, self.baseline_calls(
            replace(prepared.case, baseline="auto"), prepared.model))
        return predictor_op_types(self, predictor, prepared.inputs)

    def close(self) -> None:
        """Remove this process's spilled baseline tensors."""
        self._beside.shutdown(wait=True)
        shutil.rmtree(self.spill_dir, ignore_errors=True)
        self.baselines.close()


def prepared_case(case: Case, model: ModelFiles, inputs: Dict[str, np.ndarray], baseline,
                  plan, built, seeds, extra_notes: Tuple[str, ...] = ()) -> Prepared:
    """A case's baseline and built candidate, with the notes the build leaves."""
    path = (f"TensorRT path: {built.path}",) if built.path else ()
    notes = path + built.notes + extra_notes
    feeds = candidate_feeds(plan, inputs)
    if feeds is not inputs:
        notes += (f"the candidate is fed {plan.feed_dtype} inputs (low_precision_io: the "
                  f"program's feeds and fetches are {plan.feed_dtype})",)
    return Prepared(case, model, inputs, baseline.outputs, baseline.text, built.predictor,
                    describe_recipe(built.recipe), baseline.store, notes, built.int8, seeds,
                    baseline_evidence=baseline.evidence, candidate_inputs=feeds,
                    engines=(built.engine_dirs, built.built_at), converted_program=built.converted)


def selection_notes(baseline, model: ModelFiles) -> Tuple[str, ...]:
    """The note on intermediates globs that matched no tensor; an InputError when none matched."""
    if baseline.store is None:
        return ()
    error, note = selection_problems(baseline.store, model.name)
    if error:
        raise InputError(error)
    return (note,) if note else ()


def candidate_error(e: PredictorError) -> type:
    """An error with a hint keeps its class; any other becomes a CandidateError (localized)."""
    return type(e) if "\nhint: " in str(e) else CandidateError


def fan_out(*sinks):
    """One hook sink that hands each tensor to every sink given (None: skipped)."""
    live = [s for s in sinks if s is not None]

    def sink(op_type, name, tensor):
        for s in live:
            s(op_type, name, tensor)
    return sink


def shared_outputs(shared_dir: Optional[Path], key: Tuple, run,
                   meta: Optional[Dict[str, object]] = None) -> Mapping[str, np.ndarray]:
    """Under xdist the first worker to need a baseline's outputs runs it and leaves them in
    ``shared_dir`` for the others, with the JSON facts ``run`` fills into ``meta``."""
    if shared_dir is None:
        return run()
    stamps = [os.stat(f).st_mtime_ns for f in key[0:1] if os.path.exists(f)]  # the program's
    path = shared_dir / f"{hashlib.sha1(repr((key, stamps)).encode()).hexdigest()}.npz"
    with file_lock(path.with_suffix(".lock")):
        if path.is_file():
            with np.load(path, allow_pickle=False) as data:  # written by a sibling just now
                names = [str(n) for n in data["__names__"]]
                if meta is not None and "__meta__" in data.files:
                    meta.update(json.loads(str(data["__meta__"])))
                return OrderedDict((n, data[f"o{i}"]) for i, n in enumerate(names))
        outputs = run()
        extra = {"__meta__": np.array(json.dumps(meta))} if meta else {}
        atomic_write(path, lambda f: np.savez(f, __names__=np.array(list(outputs)), **extra,
                                              **{f"o{i}": a for i, a in enumerate(outputs.values())}))
        return outputs


def true_fp32_run(calls, tally: Tally, run):
    """A GPU baseline's run in true fp32: TF32 off around it (engine/tf32.py), said in its
    evidence. The switches are the process's: a calibration beside it runs in fp32 too."""
    if not any(getattr(c, "method", "") == "enable_use_gpu" for c in calls):
        return run()
    with tf32.true_fp32() as what:
        tally.evidence.tf32 = what
        return run()


def judge_evidence(result: CaseResult, candidate: Evidence, baseline: Optional[dict]) -> None:
    """What the candidate and the baseline really ran, into the result; a broken rule fails it."""
    result.evidence["candidate"] = candidate.to_dict()
    broken = broken_rules(candidate.role, candidate)
    if baseline is not None:  # a predictor baseline (not dygraph, static or a golden)
        result.evidence["baseline"] = baseline
        broken += broken_rules("baseline", Evidence.from_dict(baseline))
    said = {p.split(":")[1].strip() for p in result.problems if p.count(":") > 1}
    result.problems += [b for b in broken if b.split(":")[1].strip() not in said]
    if candidate.format == "pir" and "switch_ir_optim(False)" in result.recipe and candidate.created:
        result.notes.append(f"switch_ir_optim(False) does not turn a PIR program's passes off: "
                            f"fused ops ran ({candidate.ops_text(candidate.created, 6)})")


def judge_engines(result: CaseResult, spec, directories: Tuple[str, ...], built_at: float) -> None:
    """What legacy TensorRT engines recorded, into the notes; an int8 engine without int8 layers fails."""
    if not directories:
        return
    files = fresh_engine_info(directories[:1], 0.0) + fresh_engine_info(directories[1:], built_at)
    if not files:
        if spec.run_mode.precision == INT8:
            result.notes.append(f"TensorRT engine info: no engine_info_*.json in or beside "
                                f"{', '.join(directories)} (the inspector writes it with TensorRT "
                                f"8.2+): whether int8 layers were built is not known")
        return
    result.notes.append(engine_text(files))
    problem = int8_engine_problem(spec.mode, files) if spec.run_mode.precision == INT8 else ""
    if problem:
        result.problems.append(problem)


def empty_store_note(selected: str, baseline_evidence: Optional[dict]) -> str:
    """Intermediates asked for and none hooked: said, not a comparison of nothing that passes."""
    runs = (baseline_evidence or {}).get("runs", 1)
    return (f"intermediates {selected!r}: the baseline's output hooks gave no selected tensor in "
            f"{runs} run(s) (GPU baselines run once before recording): no intermediate tensor "
            f"was compared")


def marked_tensors(case: Case, store: Optional[BaselineStore],
                   program_format: str = "legacy") -> Tuple[str, ...]:
    """Selected baseline tensors to mark as TensorRT engine outputs (legacy path only)."""
    if store is None or not case.run_mode.run_mode.tensorrt \
            or pir_tensorrt.takes_pir_path(case.run_mode.run_mode, program_format):
        return ()
    return tuple(dict.fromkeys(r.name for r in store.records))
