"""models/binding.py: which suite input goes to which forward parameter (no paddle), and
which defaults inputs a builder takes."""
from __future__ import annotations

import pytest

from pytest_paddle_infer.models.binding import (KEYWORD, POSITIONAL, VAR_POSITIONAL, BindingError,
                                                Parameter, Signature, bind)


def sig(*params, first="self"):
    """``"x"`` a required parameter, ``"x="`` one with a default, ``"*x"`` keyword-only."""
    out = []
    for p in params:
        kind = KEYWORD if p.startswith("*") else POSITIONAL
        name = p.strip("*=")
        out.append(Parameter(name, kind, not p.endswith("=")))
    return Signature(tuple(out), "Det.forward", first)


def test_inputs_bind_by_name_in_forwards_order():
    binding = bind(sig("im_shape", "image", "scale_factor"), ["scale_factor", "image", "im_shape"])
    assert binding.input_order() == ["im_shape", "image", "scale_factor"]
    assert binding.by_parameter() == {"im_shape": "im_shape", "image": "image", "scale_factor": "scale_factor"}


def test_a_parameter_left_to_its_default_before_a_given_one_keeps_its_slot():
    binding = bind(sig("x", "mask=", "y=", "z="), ["y", "x"])
    assert binding.slots == (("x", "x"), ("mask", None), ("y", "y"))


def test_one_input_and_one_required_parameter_bind_whatever_their_names():
    assert bind(sig("input"), ["x"]).by_parameter() == {"input": "x"}  # nn.Sequential
    assert bind(sig("x", "mask="), ["image"]).slots == (("x", "image"),)


def test_an_input_forward_does_not_take_names_both_lists():
    with pytest.raises(BindingError) as e:
        bind(sig("im_shape", "scale_factor"), ["scale", "im_shape"])
    assert e.value.problem == "input 'scale' is not a parameter of Det.forward"
    assert e.value.expected == ("inputs named after forward's parameters: im_shape, scale_factor "
                                "(Det.forward(self, im_shape, scale_factor))")
    assert e.value.found == "inputs scale, im_shape"
    assert e.value.fix.startswith("did you mean 'scale_factor'?")
    assert e.value.input_name == "scale"


def test_a_required_parameter_without_input_names_both_lists():
    with pytest.raises(BindingError) as e:
        bind(sig("im_shape", "image", "scale_factor="), ["image"])
    assert e.value.problem == "Det.forward's parameter 'im_shape' has no input and no default"
    assert e.value.found == "inputs image"


def test_keyword_only_and_unnamed_self_cannot_be_exported():
    with pytest.raises(BindingError, match="keyword-only parameter"):
        bind(sig("x", "*scale"), ["x", "scale"])
    with pytest.raises(BindingError, match="first parameter is named 'this', not 'self'"):
        bind(sig("x", first="this"), ["x"])


def test_varargs_take_no_input_by_name():
    signature = Signature((Parameter("x", POSITIONAL, True), Parameter("rest", VAR_POSITIONAL, False)))
    assert bind(signature, ["x"]).input_order() == ["x"]
    with pytest.raises(BindingError, match="'y' is not a parameter"):
        bind(signature, ["x", "y"])
