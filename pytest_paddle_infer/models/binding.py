"""How a builder's inputs meet its layer's ``forward``: by name, whatever order they are listed in.

``forward_signature(layer)`` (in the child where the layer lives) describes ``forward``'s
parameters as data; ``bind(signature, names)`` (no paddle) says which input goes to which
parameter, or raises a ``BindingError``. One input and one required parameter bind whatever
their names (``nn.Sequential.forward(self, input)``)."""
from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import ModelError

POSITIONAL, KEYWORD, VAR_POSITIONAL, VAR_KEYWORD = "positional", "keyword", "var_positional", "var_keyword"


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: str  # POSITIONAL (positional-or-keyword), "positional_only", KEYWORD (keyword-only), VAR_*
    required: bool  # no default

    def text(self) -> str:
        stars = {VAR_POSITIONAL: "*", VAR_KEYWORD: "**"}.get(self.kind)
        if stars:
            return stars + self.name
        return self.name if self.required else f"{self.name}=..."


@dataclass(frozen=True)
class Signature:
    """``forward``'s parameters after ``self``; ``first`` is the name the method gives ``self``."""

    parameters: Tuple[Parameter, ...]
    owner: str = "forward"  # "TinyDet.forward", for messages
    first: str = "self"

    def text(self) -> str:
        return f"{self.owner}({', '.join([self.first] + [p.text() for p in self.parameters])})"

    def to_json(self) -> dict:
        return {"owner": self.owner, "first": self.first,
                "parameters": [[p.name, p.kind, p.required] for p in self.parameters]}

    @classmethod
    def from_json(cls, data: Mapping) -> "Signature":
        return cls(tuple(Parameter(n, k, bool(r)) for n, k, r in data["parameters"]),
                   data.get("owner", "forward"), data.get("first", "self"))

    def named(self) -> List[Parameter]:
        return [p for p in self.parameters if p.kind not in (VAR_POSITIONAL, VAR_KEYWORD)]

    def names(self) -> List[str]:
        return [p.name for p in self.named()]


class BindingError(ModelError):
    """A suite's inputs that ``forward`` cannot take; the parts of a suite error message."""

    def __init__(self, problem: str, expected: str, found: str, fix: str, input_name: Optional[str] = None):
        super().__init__(f"{problem}\n  expected: {expected}\n  found:    {found}\n  fix:      {fix}")
        self.problem, self.expected, self.found, self.fix = problem, expected, found, fix
        self.input_name = input_name  # the input the problem is about, when it is one


@dataclass(frozen=True)
class Binding:
    """``slots``: forward's positional parameters up to the last given, with their inputs."""

    slots: Tuple[Tuple[str, Optional[str]], ...]

    def by_parameter(self) -> Dict[str, str]:
        return {p: i for p, i in self.slots if i is not None}

    def input_order(self) -> List[str]:
        return [i for _, i in self.slots if i is not None]


def forward_signature(layer) -> Signature:
    """In the process that built ``layer``: its ``forward``'s parameters."""
    kinds = {inspect.Parameter.POSITIONAL_ONLY: "positional_only",
             inspect.Parameter.POSITIONAL_OR_KEYWORD: POSITIONAL,
             inspect.Parameter.KEYWORD_ONLY: KEYWORD,
             inspect.Parameter.VAR_POSITIONAL: VAR_POSITIONAL,
             inspect.Parameter.VAR_KEYWORD: VAR_KEYWORD}
    bound = inspect.signature(layer.forward)
    parameters = tuple(Parameter(p.name, kinds[p.kind], p.default is inspect.Parameter.empty)
                       for p in bound.parameters.values())
    function = getattr(type(layer), "forward", None)
    try:
        unbound = list(inspect.signature(function).parameters) if function is not None else []
    except (TypeError, ValueError):
        unbound = []
    first = unbound[0] if len(unbound) == len(parameters) + 1 else "self"
    return Signature(parameters, f"{type(layer).__name__}.forward", first)


def bind(signature: Signature, names: Sequence[str]) -> Binding:
    """Which of ``names`` (the suite's inputs, in any order) goes to which parameter."""
    listed = ", ".join(names) or "none"
    where = signature.text()
    if signature.first != "self":
        raise BindingError(
            f"{signature.owner}'s first parameter is named {signature.first!r}, not 'self'",
            "def forward(self, ...): paddle.jit.to_static binds an input spec only to a method whose "
            "first parameter is 'self'", where, f"rename {signature.first!r} to 'self' in forward")
    named = signature.named()
    required = [p for p in named if p.required]
    by_name = {p.name: p for p in named}
    unknown = [n for n in names if n not in by_name]
    if len(names) == 1 and unknown and len(required) == 1 and required[0].kind != KEYWORD:
        # one input, one parameter to give: bound whatever the names (nn.Sequential's "input")
        target = required[0]
        return Binding(tuple((p.name, names[0] if p is target else None)
                             for p in named[:named.index(target) + 1]))
    if unknown:
        close = difflib.get_close_matches(unknown[0], [p.name for p in named if p.name not in names],
                                          n=1, cutoff=0.5)
        raise BindingError(
            f"input {unknown[0]!r} is not a parameter of {signature.owner}",
            f"inputs named after forward's parameters: {', '.join(signature.names()) or 'none'} ({where})",
            f"inputs {listed}",
            (f"did you mean {close[0]!r}? " if close else "") +
            "name each input after the forward parameter it feeds (inputs bind by name, not order)",
            unknown[0])
    missing = [p.name for p in required if p.name not in names]
    if missing:
        raise BindingError(
            f"{signature.owner}'s parameter {missing[0]!r} has no input and no default",
            f"an input for each forward parameter without a default: {', '.join(p.name for p in required)} "
            f"({where})", f"inputs {listed}", f"declare an input {missing[0]!r} (shape and dtype)")
    keyword_only = [n for n in names if by_name[n].kind == KEYWORD]
    if keyword_only:
        raise BindingError(
            f"input {keyword_only[0]!r} is a keyword-only parameter of {signature.owner}",
            "parameters before any '*' in forward: paddle.jit.to_static gives inputs by position",
            where, f"move {keyword_only[0]!r} before the '*' in forward", keyword_only[0])
    positional = [p for p in named if p.kind != KEYWORD]
    if not names:
        return Binding(())
    last = max(i for i, p in enumerate(positional) if p.name in names)
    return Binding(tuple((p.name, p.name if p.name in names else None) for p in positional[:last + 1]))
