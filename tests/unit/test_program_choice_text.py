"""Why a case checks its program, as the failure message's ``program:`` line says it
(models/program.py ``choice_text``)."""
from pytest_paddle_infer.models.program import choice_text
from pytest_paddle_infer.models.source import parse_source
from pytest_paddle_infer.modes.run_modes import RUN_MODES

CPU = RUN_MODES["onednn_bf16"]
ZOO = parse_source("tiny_cnn")


def test_legacy_asked_for_names_where_it_is_asked():
    assert choice_text(ZOO, "legacy", CPU, "3.3.1") == \
        "legacy: asked for by --paddle-program or the suite's program key"


def test_default_is_the_models_own_format():
    assert choice_text(ZOO, "default", CPU, "3.3.1") == "default: the model's own format"
