"""models/program.py: which program a case checks: the model's own format unless the legacy
export is asked for (``program: legacy``) or a TensorRT mode on Paddle 3.x needs it; never a
user's file re-exported; and why, as the failure message's ``program:`` line says it."""
import pytest

from pytest_paddle_infer.errors import ModelError
from pytest_paddle_infer.models.program import choice_text, describe_program, exports_legacy
from pytest_paddle_infer.models.source import ModelSource, parse_source
from pytest_paddle_infer.modes.run_modes import RUN_MODES


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


# ---------------------------------------------------------------------------------------
# Why a case checks its program, as the failure message's ``program:`` line says it
# (models/program.py ``choice_text``).
# ---------------------------------------------------------------------------------------


CPU = RUN_MODES["onednn_bf16"]


def test_legacy_asked_for_names_where_it_is_asked():
    assert choice_text(ZOO, "legacy", CPU, "3.3.1") == \
        "legacy: asked for by --paddle-program or the suite's program key"


def test_default_is_the_models_own_format():
    assert choice_text(ZOO, "default", CPU, "3.3.1") == "default: the model's own format"
