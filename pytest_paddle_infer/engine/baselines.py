"""Baselines: what a case's candidate is compared with: a plain predictor (auto, cpu, gpu: runner.py),
the exported ``nn.Layer`` (dygraph) or the program under ``paddle.static.Executor`` (static), both
in a child (``baseline_child.py``), or goldens. A dygraph layer's outputs are flattened as
``paddle.jit.save`` does, named by path (``out.feats[0]``), paired with the program's by position."""
from __future__ import annotations

import json
import os
import shutil
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Mapping, Tuple

from ..cases.baseline_forms import GOLDEN, PREDICTOR_KINDS, golden_dir, kind_of
from ..errors import ModelError, OptionError
from ..goldens import GoldenError, GoldenPolicy, describe, environment, golden_path, input_mismatch, \
    read_golden, read_meta
from ..models.zoo import ZOO
from ..models.exporter import build_layer
from ..models.source import MANIFEST, ModelSource
from ..cases.suite_sources import BUILDER_PATTERN
from ..models.cache import run_child
from .saved_tensors import saved_tensors, write_golden

if TYPE_CHECKING:  # numpy and the model types only when a baseline is computed
    import numpy as np

    from ..cases.case import Case
    from ..models.source import ModelFiles

BUILDER_PATTERN_TEXT = "'package.module:callable'"
INPUTS, OUTPUTS = "<inputs.npz>", "<outputs.npz>"  # placeholders in a child's arguments


def flatten_named(value: Any, is_tensor: Callable[[Any], bool], prefix: str = "out") -> Iterator[Tuple[str, Any]]:
    """(path, tensor) pairs in ``paddle.utils.flatten`` order, non-tensors left out (as jit.save does)."""
    if is_tensor(value):
        yield prefix, value
    elif isinstance(value, dict):
        try:
            keys = sorted(value)
        except TypeError:
            keys = list(value)
        for key in keys:
            yield from flatten_named(value[key], is_tensor, f"{prefix}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from flatten_named(item, is_tensor, f"{prefix}[{i}]")


def layer_builder(source: "ModelSource") -> Tuple[str, Dict[str, Any]]:
    """The ``module:callable`` and kwargs that build a source's ``nn.Layer``."""
    if source.kind == "zoo":
        return ZOO[source.ref].builder, {}
    if source.kind == "builder":
        return source.ref, dict(source.kwargs)
    raise ModelError(
        f"baseline dygraph needs the nn.Layer the model was exported from, but {source.name!r} "
        f"is model files on disk ({source.ref}); give a zoo name or a builder "
        f"{BUILDER_PATTERN_TEXT}, or use --paddle-baseline=static to check the program with "
        f"the framework's executor")


def build_dygraph_layer(model: Any, **kwargs):
    """The eval-mode layer of a zoo name, builder or ModelSource in this process, seeded as exported."""
    if isinstance(model, ModelSource):
        ref, given = layer_builder(model)
        return build_layer(ref, {**given, **kwargs})
    ref = str(model)
    if ref in ZOO:
        if kwargs:
            raise OptionError(f"zoo model {ref!r} takes no builder arguments; got {sorted(kwargs)}")
        return build_layer(ZOO[ref].builder, {})
    if not BUILDER_PATTERN.match(ref):
        raise OptionError(f"paddle_dygraph_layer: {ref!r} is neither a zoo name ({', '.join(ZOO)}) "
                          f"nor a builder {BUILDER_PATTERN_TEXT}")
    return build_layer(ref, kwargs)


@dataclass
class BaselineOutputs:
    outputs: Mapping[str, "np.ndarray"]
    text: str  # what the failure message prints as "baseline:"
    store: object = None  # a predictor baseline's spilled intermediate tensors
    evidence: object = None  # a predictor baseline's run: Evidence.to_dict() (evidence.py)


PredictorBaseline = Callable[[str], BaselineOutputs]  # kind (auto|cpu|gpu) -> outputs


class Baselines:
    """Per worker: every case's baseline outputs; records goldens as ``policy`` asks."""
    def __init__(self, cache_dir: Path, policy: GoldenPolicy = GoldenPolicy()):
        self.work_dir = Path(cache_dir) / "baselines" / f"pid{os.getpid()}"
        self.policy = policy
        self._references: Dict[Tuple, object] = {}  # BaselineOutputs, or the ModelError it gave

    def get(self, case: "Case", model: "ModelFiles", inputs: Mapping[str, "np.ndarray"], digest: str,
            device_of: Callable[[str], str], predictor_baseline: PredictorBaseline) -> BaselineOutputs:
        """``device_of(kind)``: the device a baseline of that kind runs on (cpu, gpu:N)."""
        kind = kind_of(case.baseline)
        if kind != GOLDEN:
            result = self._live(kind, case, model, inputs, digest, device_of, predictor_baseline)
            if self.policy.save_dir is not None:
                path = self._record(self.policy.save_dir, kind, result, case, model, inputs, digest,
                                    device_of)
                result = replace(result, text=f"{result.text}\n(recorded as golden {path})")
            return result
        directory = golden_dir(case.baseline)
        if not self.policy.update:
            if self.policy.save_dir is not None:
                raise GoldenError(
                    f"this case compares with goldens ({case.baseline}); --paddle-save-goldens "
                    f"records live baselines only: use --paddle-update-goldens to rewrite these")
            return self._from_golden(case, directory, digest, device_of, model)
        live = self._recorded_kind(directory, case.id)
        result = self._live(live, case, model, inputs, digest, device_of, predictor_baseline)
        path = self._record(directory, live, result, case, model, inputs, digest, device_of)
        return replace(result, text=f"{result.text}\n(golden {path} rewritten by --paddle-update-goldens)")

    def live_outputs(self, case: "Case", model: "ModelFiles", inputs: Mapping[str, "np.ndarray"],
                     digest: str, device_of: Callable[[str], str],
                     predictor_baseline: PredictorBaseline) -> BaselineOutputs:
        """The case's live baseline for these inputs, recording nothing (other seeds' inputs)."""
        return self._live(kind_of(case.baseline), case, model, inputs, digest, device_of, predictor_baseline)

    def _live(self, kind: str, case: "Case", model: "ModelFiles", inputs, digest: str,
              device_of: Callable[[str], str], predictor_baseline: PredictorBaseline) -> BaselineOutputs:
        if kind in PREDICTOR_KINDS:
            return predictor_baseline(kind)
        device = device_of(kind)
        key = (kind, model.prog_file, digest, device)
        if key not in self._references:
            run = self._dygraph if kind == "dygraph" else self._static
            try:
                self._references[key] = run(case.model, model, inputs, device)
            except ModelError as e:  # the other run modes of these inputs fail alike: once
                self._references[key] = e
        result = self._references[key]
        if isinstance(result, ModelError):
            raise result
        if case.intermediates != "none":
            result = replace(result, text=f"{result.text}\n(intermediate tensors are not compared: "
                                          f"a {kind} baseline has no predictor to hook)")
        return result

    def _dygraph(self, source: "ModelSource", model: "ModelFiles", inputs, device: str) -> BaselineOutputs:
        builder, kwargs = layer_builder(source)
        outputs = self._run_child(
            ["dygraph", builder, json.dumps(kwargs), INPUTS, OUTPUTS, device, exported_weights(model)],
            [s.name for s in model.inputs], inputs, legacy=False, search_path=source.search_path,
            what=f"running {source.name!r} as a dygraph nn.Layer")
        call = f"{builder}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
        return BaselineOutputs(outputs, (
            f"dygraph: {call} in eval mode on {device}; outputs {', '.join(outputs)} "
            f"(flattened as paddle.jit.save does), paired by position with the predictor's outputs"))

    def _static(self, source: "ModelSource", model: "ModelFiles", inputs, device: str) -> BaselineOutputs:
        outputs = self._run_child(
            ["static", model.prog_file, INPUTS, OUTPUTS, device],
            [s.name for s in model.inputs], inputs, legacy=model.format == "legacy", search_path=(),
            what=f"running {source.name!r} with paddle.static.Executor")
        return BaselineOutputs(outputs, (
            f"static: paddle.static.Executor on {device} running {Path(model.prog_file).name} "
            f"(the framework's kernels, no inference passes)"))

    def _run_child(self, args, order, inputs, legacy: bool, search_path, what: str):
        """Inputs to an .npz, the child's outputs back from one, in the child's order."""
        import numpy as np

        self.work_dir.mkdir(parents=True, exist_ok=True)
        in_path = self.work_dir / "inputs.npz"
        out_path = self.work_dir / "outputs.npz"
        with open(in_path, "wb") as f:
            np.savez(f, __order__=np.array(order), **{n: inputs[n] for n in order})
        try:
            args = [str({INPUTS: in_path, OUTPUTS: out_path}.get(a, a)) for a in args]
            result = run_child(args, legacy, what, tuple(search_path),
                               module="pytest_paddle_infer.engine.baseline_child")
            with np.load(out_path, allow_pickle=False) as data:
                return OrderedDict((name, data[f"o{i}"]) for i, name in enumerate(result["names"]))
        finally:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def _from_golden(self, case: "Case", directory: Path, digest: str,
                     device_of: Callable[[str], str], model: "ModelFiles") -> BaselineOutputs:
        golden = read_golden(directory, case.id, digest)
        current = environment(device_of("auto"))
        mismatch = input_mismatch(golden.meta, case.seed, digest)
        if mismatch:
            raise GoldenError(f"{mismatch}\n{describe(golden, current)}")
        text = describe(golden, current)
        if golden.meta.get("case_id") != case.id:
            text += (f"\n  recorded for case {golden.meta.get('case_id')} (same model, shapes and "
                     f"inputs; this case has no golden of its own)")
        store = None
        if case.intermediates != "none":
            store = saved_tensors(golden.path, golden.meta)
            if store is None:
                text += ("\n  (the golden holds no intermediate tensors: record it with "
                         "--paddle-intermediates to compare them)")
            else:
                stored = golden.meta.get("tensor_store", "")
                text += (f"\n  intermediates: {len(store.records)} tensors recorded in the golden"
                         + (" (stored as float16)" if stored == "float16" else ""))
                recorded = golden.meta.get("program") or {}
                checked = {"format": model.format, "file": Path(model.prog_file).name}
                if recorded and recorded != checked:  # e.g. a GPU machine's legacy TensorRT export
                    text += (f"\n  the golden's program is {recorded.get('format')} {recorded.get('file')}, "
                             f"this case's {checked['format']} {checked['file']}: tensors pair by "
                             f"structure and values where names differ")
        return BaselineOutputs(golden.outputs, text, store)

    @staticmethod
    def _recorded_kind(directory: Path, case_id: str) -> str:
        """The live baseline a golden was made with (auto for one not recorded yet)."""
        path = golden_path(directory, case_id)
        try:
            return read_meta(path).get("baseline", "auto") if path.is_file() else "auto"
        except (OSError, ValueError, KeyError):
            return "auto"

    def _record(self, directory: Path, kind: str, result: BaselineOutputs, case: "Case",
                model: "ModelFiles", inputs, digest: str, device_of: Callable[[str], str]) -> Path:
        source = case.model
        meta = dict(run_meta(case, model, inputs, digest, device_of(kind)), baseline=kind,
                    baseline_text=result.text, model={"name": source.name, "kind": source.kind,
                                                      "ref": source.ref, "kwargs": dict(source.kwargs)},
                    tolerances={n: case.tolerances.for_tensor(n).describe() for n in result.outputs})
        return write_golden(directory, case.id, result.outputs, meta, result.store, self.policy.float16)

    def close(self) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)


def run_meta(case: "Case", model: "ModelFiles", inputs, digest: str, device: str) -> dict:
    """What a golden or a saved run records of its case, program and inputs."""
    return {"run_mode": case.run_mode.label, "environment": environment(device),
            "inputs": {"seed": case.seed, "digest": digest,
                       "shapes": {n: list(a.shape) for n, a in inputs.items()}},
            "program": {"format": model.format, "file": Path(model.prog_file).name},
            "intermediates_selected": case.intermediates}


def exported_weights(model: "ModelFiles") -> str:
    """The weights digest the exporter recorded for a zoo or builder export ('' if none)."""
    try:
        return json.loads((Path(model.prog_file).parent / MANIFEST).read_text()).get("weights", "")
    except (OSError, ValueError):
        return ""
