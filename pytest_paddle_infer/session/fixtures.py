"""What the fixtures hand out: a declared case's handle (through the case path), and factories
of Paddle objects for the test's own process: the one place the session side uses the engine."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Tuple, Union

from ..models.source import ModelFiles, ModelSource, parse_source
from ..modes.run_modes import RunModeSpec, baseline_recipe, canonical_mode
from .items import check_case, prepare_case
from .state import RUNNER, case_path_of, settings_of
from .case_path import CaseFailed


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

    def run(self, inputs: Mapping[str, object]):
        from ..engine.predictor import run_predictor

        return run_predictor(self.predictor, inputs)


class CaseHandle:
    """A declared case for a Python test, prepared by the fixture, run and judged on request."""

    def __init__(self, node, case):
        self.node = node  # the test item: its node id names the case's files and records figures
        self.case = case
        self.result = None
        self._tensors = {}

    def prepare(self) -> None:
        prepare_case(self.node, self.case, from_cli=False)

    def _get(self, which: str):
        if which not in self._tensors:
            self._tensors[which] = case_path_of(self.node.config).tensors(self.node.nodeid, which)
        return self._tensors[which]

    @property
    def inputs(self):
        """The inputs the case feeds, by input name."""
        return self._get("inputs")

    @property
    def baseline_outputs(self):
        """The baseline's outputs, by output name."""
        return self._get("baseline_outputs")

    def run(self):
        """Run and compare: a CaseResult, recorded; a failing comparison does not raise."""
        try:
            self.result = check_case(self.node, self.case, from_cli=False)
        except CaseFailed as failed:
            self.result = failed.result
        return self.result

    def check(self):
        """Run and assert that every output is within tolerance; the failure is the table."""
        __tracebackhide__ = True
        try:
            self.result = check_case(self.node, self.case, from_cli=False)
        except CaseFailed as failed:
            self.result = failed.result
            raise AssertionError(str(failed)) from None
        return self.result

    def release(self) -> None:
        case_path_of(self.node.config).release(self.node.nodeid)


def runner_of(config):
    """The per-process runner the fixtures' Paddle objects come from."""
    if RUNNER not in config.stash:
        from ..engine.runner import Runner
        from ..goldens import GoldenPolicy
        from ..modes.capabilities import import_paddle

        import_paddle()  # in this process: without Paddle's start-up warnings (a missing ccache)
        settings = settings_of(config)
        config.stash[RUNNER] = Runner(settings.cache_dir, settings.device,
                                      GoldenPolicy(settings.save_goldens, settings.update_goldens,
                                                   settings.goldens_float16, settings.save_runs))
    return config.stash[RUNNER]


def dygraph_layer_factory():
    from ..engine.baselines import build_dygraph_layer
    from ..modes.capabilities import import_paddle

    import_paddle()  # without Paddle's start-up warnings
    return build_dygraph_layer


def predictor_factory(runner, settings, baseline: bool):
    from ..engine.predictor import describe_recipe
    from ..models.inputs import generate_all
    from ..modes import capabilities

    def make(model, run_mode: str = "onednn_fp32", device: str = "cpu", threads: Optional[int] = None,
             shapes: Optional[Mapping[str, Tuple[int, ...]]] = None, **toggles) -> PredictorHandle:
        files = runner.model_files(as_source(model))
        n = threads if threads is not None else settings.threads
        if baseline:
            calls = baseline_recipe(device, n, runner.candidates.gpu_id() if device == "gpu" else 0,
                                   files.format)
            return PredictorHandle(files, runner.predictors.get(files, calls), describe_recipe(calls))
        # the cases' own path: TensorRT modes get their cache dir, shape pass and calibration
        spec = RunModeSpec(canonical_mode(run_mode), **toggles)
        reason = capabilities.detect().missing_for(spec.run_mode)  # as a case would skip
        if reason:
            import pytest

            pytest.skip(reason)
        specs = runner.input_specs(files, dict(shapes or {}))
        built = runner.candidates.build(spec, files, specs, generate_all(specs, settings.seed), n,
                                        settings.seed)
        return PredictorHandle(files, built.predictor, describe_recipe(built.recipe))

    return make


def inputs_factory(runner, settings):
    def make(model, shapes: Optional[Mapping[str, Tuple[int, ...]]] = None, seed: Optional[int] = None):
        files = runner.model_files(as_source(model))
        return runner.inputs(files, dict(shapes or {}), settings.seed if seed is None else seed)

    return make
