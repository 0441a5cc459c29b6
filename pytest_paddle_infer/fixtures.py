"""What the fixtures hand out: predictor and input factories over the per-worker runner."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .inputs import generate_all
from .models import ModelFiles, ModelSource, parse_source
from .predictor import describe_recipe, run_predictor
from .run_modes import RunModeSpec, baseline_recipe, canonical_mode


def as_source(model: Union[str, ModelSource]) -> ModelSource:
    return model if isinstance(model, ModelSource) else parse_source(str(model))


@dataclass
class PredictorHandle:
    model: ModelFiles
    predictor: object
    recipe: str

    @property
    def input_names(self) -> Sequence[str]:
        return list(self.predictor.get_input_names())

    def run(self, inputs: Mapping[str, np.ndarray]):
        return run_predictor(self.predictor, inputs)


class CaseHandle:
    """A declared case for a Python test: prepared (model, inputs, baseline, candidate
    predictor) by the fixture; run and judged when the test asks."""

    def __init__(self, case, runner, record: Optional[list] = None):
        self.case = case
        self.runner = runner
        self.record = record  # the test's user_properties: figures for the summary and JUnit
        self.prepared = None
        self.result = None

    def prepare(self) -> None:
        self.prepared = self.runner.prepare(self.case)

    @property
    def inputs(self):
        return self.prepared.inputs

    @property
    def baseline_outputs(self):
        return self.prepared.baseline_outputs

    def run(self):
        """Run the candidate and compare it with the baseline: a CaseResult."""
        from .report import properties

        self.result = self.runner.run(self.prepared)
        if self.record is not None:
            self.record.extend(properties(self.result))
        return self.result

    def check(self):
        """Run and assert that every output is within tolerance; the failure is the table."""
        __tracebackhide__ = True
        from .report import failure_message

        result = self.run()
        if not result.passed:
            raise AssertionError(failure_message(result))
        return result


def predictor_factory(runner, settings, baseline: bool):
    def make(model, run_mode: str = "onednn_fp32", device: str = "cpu", threads: Optional[int] = None,
             shapes: Optional[Mapping[str, Tuple[int, ...]]] = None, **toggles) -> PredictorHandle:
        files = runner.model_files(as_source(model))
        n = threads if threads is not None else settings.threads
        if baseline:
            calls = baseline_recipe(device, n, runner.candidates.gpu_id() if device == "gpu" else 0)
            return PredictorHandle(files, runner.predictors.get(files, calls), describe_recipe(calls))
        # the cases' own path: TensorRT modes get their cache dir, shape pass and calibration
        spec = RunModeSpec(canonical_mode(run_mode), **toggles)
        specs = runner.input_specs(files, dict(shapes or {}))
        built = runner.candidates.build(spec, files, specs, generate_all(specs, settings.seed), n,
                                        settings.seed)
        return PredictorHandle(files, built.predictor, describe_recipe(built.recipe))

    return make


def inputs_factory(runner, settings):
    def make(model, shapes: Optional[Mapping[str, Tuple[int, ...]]] = None,
             seed: Optional[int] = None):
        files = runner.model_files(as_source(model))
        return runner.inputs(files, dict(shapes or {}), settings.seed if seed is None else seed)

    return make
