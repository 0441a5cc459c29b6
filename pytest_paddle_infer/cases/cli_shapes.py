"""The shapes of ``--paddle-model`` cases: ``--paddle-shape NAME=DIMS`` and ``--paddle-batch N``
checked against each model's declared inputs before anything runs (usage errors that name them)."""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

from ..errors import InputError, OptionError
from ..models.inputs import example_dims, fill_shape, shape_label
from ..models.source import ModelSource

Shapes = Tuple[Tuple[str, Tuple[int, ...]], ...]  # (input name, concrete shape), model order


def inputs_text(source: ModelSource) -> str:
    """``x [-1, 3, 32, 32]`` for each declared input."""
    return ", ".join(f"{s.name} {list(s.shape)}" for s in source.inputs or ())


def _declared(spec) -> Tuple[int, ...]:
    return tuple(-1 if d is None else int(d) for d in spec.shape)


def model_shapes(source: ModelSource, given: Shapes, batch: Optional[int]) -> Shapes:
    """The concrete shapes ``given`` and ``batch`` set for one model's case, in input order."""
    if source.inputs is None:  # unreadable model: its case reports why when it runs
        return ()
    wanted = dict(given)
    out = []
    for spec in source.inputs:
        declared = _declared(spec)
        dynamic_batch = bool(declared) and declared[0] < 0
        if spec.name in wanted:
            try:
                shape = fill_shape(declared, wanted[spec.name], spec.name)
            except InputError as e:
                raise OptionError(f"--paddle-shape: model {source.name}: {e}; its inputs: "
                                  f"{inputs_text(source)}") from None
            if batch is not None and dynamic_batch and shape[0] != batch:
                raise OptionError(
                    f"--paddle-shape {spec.name}={shape_label(shape)} gives batch {shape[0]}, but "
                    f"--paddle-batch is {batch}; give one batch (drop --paddle-batch, or "
                    f"write {spec.name}={shape_label((batch,) + shape[1:])})")
        elif batch is not None and dynamic_batch:
            shape = (batch,) + declared[1:]
            if any(d < 0 for d in shape):
                raise OptionError(
                    f"--paddle-batch={batch}: input {spec.name!r} of model {source.name} has dynamic "
                    f"dims besides the batch ({list(declared)}); give its whole shape, e.g. "
                    f"--paddle-shape {spec.name}={example_dims(declared, batch)}")
        else:
            continue
        out.append((spec.name, tuple(shape)))
    if batch is not None and not any(d and d[0] < 0 for d in map(_declared, source.inputs)):
        raise OptionError(f"--paddle-batch={batch}: model {source.name} fixes its batch (no input "
                          f"has a dynamic first dim: {inputs_text(source)}); drop --paddle-batch, "
                          f"or check this model in its own session")
    return tuple(out)


def check_names(sources: Sequence[ModelSource], given: Shapes) -> None:
    """Every ``--paddle-shape`` name is an input of some model (unreadable ones aside)."""
    known = [s for s in sources if s.inputs is not None]
    if not known or len(known) < len(sources):
        return
    names = {spec.name for s in known for spec in s.inputs or ()}
    for name, dims in given:
        if name not in names:
            takes = "; ".join(f"{s.name} takes {inputs_text(s)}" for s in known)
            raise OptionError(f"--paddle-shape {name}={shape_label(dims)}: no model of this "
                              f"session has an input named {name!r}; {takes}")


def shapes_by_model(sources: Sequence[ModelSource], given: Shapes, batch: Optional[int]) -> Dict[str, Shapes]:
    """model name -> the shapes of its cases."""
    check_names(sources, given)
    return {s.name: model_shapes(s, given, batch) for s in sources}
