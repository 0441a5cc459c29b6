"""cases/cli_shapes.py: --paddle-shape and --paddle-batch against a model's inputs."""
import pytest

from pytest_paddle_infer.cases.cli_shapes import model_shapes, shapes_by_model
from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.models.inputs import InputSpec
from pytest_paddle_infer.models.source import ModelSource, parse_source


DYNAMIC_HW = ModelSource("dyn", "path", "dyn/inference.json",
                         inputs=(InputSpec("x", (-1, 3, -1, -1)), InputSpec("scale", (-1, 2))))
FIXED = ModelSource("fixed", "path", "fixed/inference.json", inputs=(InputSpec("x", (1, 3, 8, 8)),))


def test_batch_sets_every_dynamic_first_dim():
    tiny = parse_source("tiny_cnn")
    assert model_shapes(tiny, (), 4) == (("x", (4, 3, 32, 32)),)
    assert model_shapes(tiny, (("x", (2, 3, 32, 32)),), None) == (("x", (2, 3, 32, 32)),)
    assert model_shapes(tiny, (), None) == ()  # the declared shape at batch 1 when it runs
    assert model_shapes(DYNAMIC_HW, (("x", (2, 3, 9, 7)),), 2) == (("x", (2, 3, 9, 7)), ("scale", (2, 2)))


@pytest.mark.parametrize("source, given, batch, message", [
    ("tiny_cnn", (("x", (1, 3, 64, 64)),), None, "dim 2 is 64, but the model fixes it to 32"),
    ("tiny_cnn", (("x", (1, 3, 32)),), None, "has rank 3, but the model declares rank 4"),
    ("tiny_cnn", (("x", (2, 3, 32, 32)),), 4, "gives batch 2, but --paddle-batch is 4"),
    (DYNAMIC_HW, (), 2, "input 'x' of model dyn has dynamic dims besides the batch ([-1, 3, -1, -1]); "
                        "give its whole shape, e.g. --paddle-shape x=2x3x224x224"),
    (FIXED, (), 2, "--paddle-batch=2: model fixed fixes its batch"),
])
def test_shapes_a_model_cannot_take(source, given, batch, message):
    source = parse_source(source) if isinstance(source, str) else source
    with pytest.raises(OptionError) as e:
        model_shapes(source, given, batch)
    assert message in str(e.value)


def test_a_name_no_model_takes_lists_every_models_inputs():
    with pytest.raises(OptionError) as e:
        shapes_by_model([parse_source("tiny_cnn"), DYNAMIC_HW], (("image", (1, 3, 32, 32)),), None)
    assert str(e.value) == ("--paddle-shape image=1x3x32x32: no model of this session has an input named "
                            "'image'; tiny_cnn takes x [-1, 3, 32, 32]; dyn takes x [-1, 3, -1, -1], "
                            "scale [-1, 2]")
    # a name one model takes applies to that model; an unreadable model is not second-guessed
    unread = ModelSource("unread", "path", "u/inference.json")
    assert shapes_by_model([unread], (("image", (1, 3)),), None) == {"unread": ()}
