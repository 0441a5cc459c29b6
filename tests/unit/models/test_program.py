"""Which program a case checks: the model's own format unless the legacy export is asked for
(``program: legacy``) or a TensorRT mode on Paddle 3.x needs it; never a user's file re-exported."""
from pathlib import Path

import pytest

from pytest_paddle_infer.cases.case import Case
from pytest_paddle_infer.cases.suite import Context, load_suite
from pytest_paddle_infer.errors import ModelError, SuiteError
from pytest_paddle_infer.models.program import describe_program, exports_legacy
from pytest_paddle_infer.models.source import ModelSource, parse_source
from pytest_paddle_infer.modes.capabilities import installed_paddle
from pytest_paddle_infer.modes.run_modes import RUN_MODES, RunModeSpec
from pytest_paddle_infer.report.case_files import case_summary
from pytest_paddle_infer.report.text import properties
from pytest_paddle_infer.protocol import CaseResult
from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule

PADDLE_3 = int((installed_paddle()[1] or "0").split(".")[0]) >= 3
ZOO = parse_source("tiny_cnn")
BUILDER = ModelSource("net", "builder", "nets:build")
ON_DISK = ModelSource("mine", "path", "/models/mine/inference.json")


@pytest.mark.parametrize("source, program, mode, version, legacy", [
    (ZOO, "default", "cpu_fp32", "3.3.1", False),
    (ZOO, "default", "onednn_bf16", "3.0.0", False),
    (ZOO, "default", "trt_fp16", "3.3.1", True),  # enable_tensorrt_engine reads legacy programs only
    (BUILDER, "default", "trt_int8", "3.0.0", True),
    (ZOO, "default", "trt_fp32", "2.6.2", False),  # 2.6 exports legacy programs anyway
    (ZOO, "legacy", "cpu_fp32", "3.3.1", True),
    (BUILDER, "legacy", "onednn_fp32", "2.6.2", True),
    (ON_DISK, "default", "trt_fp16", "3.3.1", False),  # a user's file is checked as given
])
def test_which_export_a_case_checks(source, program, mode, version, legacy):
    assert exports_legacy(source, program, RUN_MODES[mode], version) is legacy


def test_a_model_file_is_never_re_exported():
    with pytest.raises(ModelError, match=r"model 'mine' is a model file on disk \(/models/mine/inference.json\), "
                                         r"checked as it is and never re-exported"):
        exports_legacy(ON_DISK, "legacy", RUN_MODES["cpu_fp32"], "3.3.1")


def test_program_is_described_by_format_and_file():
    from pytest_paddle_infer.models.source import ModelFiles

    files = ModelFiles("m", "/c/models/m-1-default/inference.json", "/c/inference.pdiparams", ())
    assert describe_program(files) == "pir inference.json"
    assert describe_program(ModelFiles("m", "/x/model.pdmodel", "/x/model.pdiparams", ())) == "legacy model.pdmodel"


def test_reports_carry_the_program():
    result = CaseResult("tiny_cnn[1x3x32x32-cpu_fp32]", [], "auto", "recipe", "d",
                        program="pir inference.json", program_file="/c/inference.json",
                        program_choice="default: the model's own format")
    assert ("paddle_program", "pir inference.json") in properties(result)
    summary = case_summary(result)
    assert summary["program"] == "pir inference.json" and summary["program_file"] == "/c/inference.json"
    assert summary["program_choice"] == "default: the model's own format"


@pytest.mark.skipif(not PADDLE_3, reason="Paddle 2.x exports legacy programs for every mode")
def test_trt_cases_check_the_legacy_export_baseline_and_candidate(paddle_cache, monkeypatch):
    """On Paddle 3.x, enable_tensorrt_engine never reaches a .json program: a trt_* case of a zoo
    entry runs its legacy export, in its baseline and in its candidate's plan."""
    from pytest_paddle_infer.engine.runner import Runner

    runner = Runner(paddle_cache)
    monkeypatch.setattr(runner, "check_capabilities", lambda case: None)  # as on a TensorRT machine
    planned = []

    def run(plan, model, inputs):  # TensorRT itself cannot run here: record what was planned
        planned.append((plan, model))
        raise ModelError("stop after planning")

    monkeypatch.setattr(runner.candidates.executor, "run", run)
    used = []
    monkeypatch.setattr(runner, "predictor_baseline",
                        lambda case, model, inputs, digest: used.append(model) or (_ for _ in ()).throw(
                            ModelError("stop after the baseline")))
    tolerances = CaseTolerances(Rule(1e-2, 1e-2))
    try:
        for mode in ("trt_fp16", "cpu_fp32"):
            with pytest.raises(ModelError, match="stop after the baseline"):
                runner.prepare(Case(model=ZOO, run_mode=RunModeSpec(mode), tolerances=tolerances))
        assert [Path(m.prog_file).name for m in used] == ["inference.pdmodel", "inference.json"]
        monkeypatch.undo()
        monkeypatch.setattr(runner, "check_capabilities", lambda case: None)
        monkeypatch.setattr(runner.candidates.executor, "run", run)
        monkeypatch.setattr(runner, "baseline_calls", lambda *args: ())  # a plain CPU baseline
        with pytest.raises(ModelError, match="stop after planning"):
            runner.prepare(Case(model=ZOO, run_mode=RunModeSpec("trt_fp16"), tolerances=tolerances))
        plan, model = planned[0]
        assert Path(model.prog_file).name == "inference.pdmodel"
        assert plan.final.recipe[-1].method in ("enable_tensorrt_engine", "set_optim_cache_dir")
    finally:
        runner.close()


def load(tmp_path: Path, text: str):
    (tmp_path / "paddle_s.yaml").write_text(text)
    return load_suite(tmp_path / "paddle_s.yaml", Context("paddle_s.yaml", tmp_path, tmp_path, tmp_path / "c"))


def test_suite_program_per_model_and_default(tmp_path):
    cases = load(tmp_path, "defaults:\n  run_modes: [cpu_fp32]\n  program: legacy\nmodels:\n"
                           "  tiny_cnn: {}\n  det:\n    source: tiny_detector\n    program: default\n")
    assert {c.case.model.name: c.case.program for c in cases} == {"tiny_cnn": "legacy", "det": "default"}
    cases = load(tmp_path, "models:\n  tiny_cnn:\n    run_modes: [cpu_fp32]\n")
    assert [c.case.program for c in cases] == ["default"]


def test_suite_program_mistakes_name_the_line(tmp_path, paddle_cache):
    from helpers import exported_tiny_cnn

    with pytest.raises(SuiteError) as e:
        load(tmp_path, "models:\n  tiny_cnn:\n    run_modes: [cpu_fp32]\n    program: Legacy\n")
    assert str(e.value).splitlines()[0] == "paddle_s.yaml:4: models.tiny_cnn.program: unknown program"
    assert "did you mean 'legacy'?" in str(e.value)
    with pytest.raises(SuiteError) as e:
        load(tmp_path, f"models:\n  mine:\n    source: {exported_tiny_cnn(paddle_cache)}\n"
                       "    run_modes: [cpu_fp32]\n    program: legacy\n")
    first = str(e.value).splitlines()[0]
    assert first.startswith("paddle_s.yaml:5: models.mine.program: model 'mine' is a model file on disk (")
    assert "never re-exported" in first
