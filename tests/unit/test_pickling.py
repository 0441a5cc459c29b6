"""What crosses to the executor child is pickled: every spec and case type must round-trip,
on every Python the project supports. Python 3.12 changed ``dataclasses.make_dataclass`` to
set ``__module__`` to its caller's module over the namespace's; the spec type is made that way
(modes/toggles.py), and a spec pickle cannot find then fails every case."""
from __future__ import annotations

import dataclasses
import pickle
import sys

import pytest

from pytest_paddle_infer.cases.case import Case
from pytest_paddle_infer.errors import CaseSkipped, InputError, ModelError, OptionError, SuiteError
from pytest_paddle_infer.models.source import parse_source
from pytest_paddle_infer.modes import run_modes as rm
from pytest_paddle_infer.modes.run_modes import RUN_MODES, RunModeSpec, parse_run_mode
from pytest_paddle_infer.modes.toggles import ToggleTable
from pytest_paddle_infer.protocol import CaseResult, IntermediateRow
from pytest_paddle_infer.verdict.rows import TensorComparison
from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule


def round_trip(value):
    return pickle.loads(pickle.dumps(value))


@pytest.mark.parametrize("mode", sorted(RUN_MODES))
def test_every_run_mode_spec_round_trips(mode):
    spec = RunModeSpec(mode)
    assert type(spec).__module__ == rm.__name__
    assert round_trip(spec) == spec


def test_specs_with_toggles_and_the_case_carrying_them_round_trip():
    for text in ("cpu_fp32+no_ir_optim+delete_pass=fc_fuse_pass+threads=2",
                 "trt_fp16+dynamic_shape=x:1x3x32x32:1x3x224x224:8x3x224x224+use_static",
                 "trt_int8+calib_batches=16", "gpu_fp16+fp32_op=softmax+low_precision_io"):
        spec = parse_run_mode(text)
        assert round_trip(spec) == spec and round_trip(spec).label == spec.label
    case = Case(parse_source("tiny_cnn"), parse_run_mode("onednn_fp32+threads=1"),
                CaseTolerances(base=Rule(1e-3, 1e-3), override=Rule(None, None)),
                shapes=(("x", (2, 3, 32, 32)),), seed=3, origin="suite.yaml:12")
    assert round_trip(case) == case and round_trip(case).id == case.id


def test_results_and_errors_round_trip():
    row = TensorComparison(name="out", expected_shape=(1, 10), actual_shape=(1, 10),
                           expected_dtype="float32", actual_dtype="float32", atol=1e-4, rtol=1e-4,
                           total=10, max_abs=2e-5, cosine=0.9999, problems=["p"])
    result = CaseResult(case_id="tiny_cnn[1x3x32x32-cpu_fp32]", rows=[row], baseline="auto",
                        recipe="disable_mkldnn()", inputs_digest="ab", notes=["n"],
                        intermediates=[IntermediateRow(0, row, "out", "name", True)],
                        evidence={"candidate": {"ops": 3}})
    assert repr(round_trip(result)) == repr(result)  # NaN fields: never ==
    for error in (OptionError("bad"), ModelError("m"), InputError("i"), SuiteError("s"),
                  CaseSkipped("why")):
        assert str(round_trip(error)) == str(error) and type(round_trip(error)) is type(error)


# a table whose spec type lives here, made the way Python 3.12 makes it
Simulated = None


def test_a_spec_type_made_as_python_312_makes_it_still_pickles(monkeypatch):
    """On 3.11, imitate 3.12: make_dataclass sets __module__ to its caller's module (toggles),
    whatever the namespace says. The table must still put its spec where pickle looks."""
    real = dataclasses.make_dataclass

    def as_312(cls_name, fields, *, namespace=None, **kwargs):
        kwargs.pop("module", None)
        made = real(cls_name, fields, namespace=namespace, **kwargs)
        made.__module__ = sys._getframe(1).f_globals["__name__"]  # the caller's, as 3.12 does
        return made

    monkeypatch.setattr(dataclasses, "make_dataclass", as_312)
    table = ToggleTable(rm.TOGGLES.rows, RUN_MODES, rm.canonical_mode, spec_name="Simulated",
                        module=__name__)
    monkeypatch.setitem(globals(), "Simulated", table.spec_type)
    spec = table.spec_type("onednn_fp32", threads=2)
    assert round_trip(spec) == spec
