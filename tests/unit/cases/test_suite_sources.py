"""cases/suite_sources.py: which defaults inputs a builder takes."""
from pytest_paddle_infer.cases.suite_sources import builder_input_names

from unit.models.test_binding import sig


def test_defaults_inputs_go_only_to_builders_whose_forward_takes_them():
    defaults = {"im_shape": None, "scale_factor": None, "x": None}
    assert builder_input_names(sig("im_shape", "scale_factor"), {}, defaults) == ["im_shape", "scale_factor"]
    assert builder_input_names(sig("x"), {}, defaults) == ["x"]
    # a model's own entry of a defaults name is taken (and then checked against forward)
    assert builder_input_names(sig("x"), {"im_shape": None}, defaults) == ["im_shape", "x"]
    # one parameter to give, one defaults input: taken whatever its name
    assert builder_input_names(sig("input"), {}, {"image": None}) == ["image"]
    assert builder_input_names(sig("input"), {}, defaults) == []
    # forward unknown (the builder could not be built at collection): every defaults input
    assert builder_input_names(None, {"y": None}, defaults) == ["im_shape", "scale_factor", "x", "y"]
