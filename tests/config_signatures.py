"""Check a recipe against the installed ``paddle.inference.Config`` without building a
predictor: each call must name a real method and bind to its signature with arguments of
the right types.

pybind methods have no ``inspect`` signature; their docstring starts with it instead, e.g.
``enable_use_gpu(self: ...AnalysisConfig, memory_pool_init_size_mb: int, device_id: int = 0,
precision_mode: ...Precision = <Precision.Float32: 0>) -> None``. Overloaded methods list
numbered signatures below an ``Overloaded function.`` line.
"""
from __future__ import annotations

import ast
import difflib
import functools
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from pytest_paddle_infer.errors import PaddleInferError
from pytest_paddle_infer.modes.run_modes import Call, Precision


class RecipeError(PaddleInferError):
    """A recipe the installed Paddle cannot apply as written."""


class BindError(TypeError):
    """Arguments that do not bind to a signature (the message says why)."""


# Arguments a recipe must pass even though the binding has a default: the binding defaults
# use_calib_mode to True, so leaving it out silently turns int8 calibration on (for a
# quantized model too). Names absent from the installed signature are not required.
EXPLICIT_REQUIRED: Mapping[str, Tuple[str, ...]] = {
    "enable_tensorrt_engine": ("workspace_size", "max_batch_size", "min_subgraph_size",
                               "precision_mode", "use_static", "use_calib_mode",
                               "use_cuda_graph"),
}


class _NoDefault:
    def __repr__(self) -> str:
        return "<required>"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True)
class Raw:
    """A default whose text is not a Python literal, kept as written."""

    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: Any = NO_DEFAULT
    positional_only: bool = False  # pybind calls unnamed arguments arg0, arg1, ...

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT


@dataclass(frozen=True)
class Signature:
    method: str
    params: Tuple[Param, ...]  # without self
    text: str

    def param(self, name: str) -> Optional[Param]:
        return next((p for p in self.params if p.name == name), None)

    def bind(self, args: Sequence[Any], kwargs: Sequence[Tuple[str, Any]]) -> Dict[str, Any]:
        """name -> value for the arguments given, as ``inspect.Signature.bind`` would."""
        if len(args) > len(self.params):
            raise BindError(f"takes {len(self.params)} arguments, {len(args)} positional given")
        bound = {p.name: a for p, a in zip(self.params, args)}
        for key, value in kwargs:
            p = self.param(key)
            if p is None:
                close = difflib.get_close_matches(key, [q.name for q in self.params], n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise BindError(f"unexpected keyword argument {key!r}{hint}")
            if p.positional_only:
                raise BindError(f"{key!r} is positional-only: the binding gives it no name")
            if key in bound:
                raise BindError(f"multiple values for argument {key!r}")
            bound[key] = value
        missing = [p.name for p in self.params if p.required and p.name not in bound]
        if missing:
            raise BindError(f"missing required argument(s) {', '.join(missing)}")
        return bound


_SIG_LINE = re.compile(r"^\s*(?:\d+\.\s+)?(\w+)\((.*)\)\s*->\s*(.+?)\s*$")
_ENUM_DEFAULT = re.compile(r"<(\w+)\.(\w+): -?\d+>")
_OPEN, _CLOSE = "([{<", ")]}>"


def _split_top(text: str, sep: str) -> List[str]:
    """Split at ``sep`` outside brackets and quotes (defaults hold commas and colons)."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE and not (ch == ">" and text[i - 1:i] == "-"):
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
            i = start
            continue
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _parse_default(text: str) -> Any:
    enum = _ENUM_DEFAULT.fullmatch(text)
    if enum:
        return Precision(enum.group(2)) if enum.group(1) == "Precision" else Raw(text)
    if text == "set()":
        return frozenset()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return Raw(text)


def _parse_param(text: str) -> Param:
    name, _, rest = text.partition(":")
    type_text, default = rest, NO_DEFAULT
    pieces = _split_top(rest, " = ")
    if len(pieces) == 2:
        type_text, default = pieces[0], _parse_default(pieces[1])
    name = name.strip()
    return Param(name, type_text.strip(), default, bool(re.fullmatch(r"arg\d+", name)))


def parse_signatures(doc: str, method: str) -> Tuple[Signature, ...]:
    """Every signature of ``method`` that ``doc`` states (one, or several when overloaded)."""
    sigs = []
    for line in (doc or "").splitlines():
        m = _SIG_LINE.match(line)
        if not m or m.group(1) != method or "*args" in m.group(2):
            continue
        params = [_parse_param(p) for p in _split_top(m.group(2), ",")]
        if params and params[0].name == "self":
            params = params[1:]
        sigs.append(Signature(method, tuple(params), line.strip()))
    return tuple(sigs)


@functools.lru_cache(maxsize=None)
def signatures_of(config_cls: type, method: str) -> Tuple[Signature, ...]:
    return parse_signatures(getattr(getattr(config_cls, method, None), "__doc__", ""), method)


def _type_tree(text: str) -> Tuple[str, Tuple[Any, ...]]:
    head, _, inner = text.partition("[")
    args = tuple(_type_tree(a) for a in _split_top(inner[:-1], ",")) if inner else ()
    return head.strip(), args


def _misfit(value: Any, tree: Tuple[str, Tuple[Any, ...]],
            precision_names: Sequence[str]) -> Optional[str]:
    """Why ``value`` does not fit the parsed type, or None. Unknown types pass."""
    head, args = tree
    kind = head.rsplit(".", 1)[-1]
    simple = kind.lower()
    if simple == "bool":  # pybind would convert 0/1; a recipe should say True/False
        ok = isinstance(value, bool)
    elif simple == "int":  # bool is an int to pybind (switch_ir_optim is declared int)
        ok = isinstance(value, int)
    elif simple == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif simple == "str":  # pybind refuses pathlib.Path
        ok = isinstance(value, str)
    elif simple in ("list", "sequence"):
        ok = isinstance(value, (list, tuple))
        if ok and args:
            return next((m for v in value if (m := _misfit(v, args[0], precision_names))), None)
    elif simple == "set":  # pybind refuses a tuple or list here
        ok = isinstance(value, (set, frozenset))
        if ok and args:
            return next((m for v in value if (m := _misfit(v, args[0], precision_names))), None)
    elif simple == "dict":
        ok = isinstance(value, dict)
        if ok and len(args) == 2:
            for k, v in value.items():
                m = _misfit(k, args[0], precision_names) or _misfit(v, args[1], precision_names)
                if m:
                    return m
    elif kind in ("Precision", "PrecisionType"):
        name = getattr(value, "name", None)
        ok = isinstance(value, Precision) or type(value).__name__ == "Precision"
        if ok and name not in precision_names:
            return (f"{value!r} is not a paddle.inference.PrecisionType member "
                    f"({', '.join(precision_names)})")
    else:
        return None
    return None if ok else f"{value!r} ({type(value).__name__}) is not {_render(tree)}"


def _render(tree: Tuple[str, Tuple[Any, ...]]) -> str:
    head, args = tree
    return head + (f"[{', '.join(_render(a) for a in args)}]" if args else "")


def _check_bound(sig: Signature, bound: Mapping[str, Any],
                 precision_names: Sequence[str]) -> List[str]:
    problems = []
    for name, value in bound.items():
        why = _misfit(value, _type_tree(sig.param(name).type), precision_names)  # type: ignore
        if why:
            problems.append(f"argument {name}: {why}")
    return problems


def check_call(c: Call, config_cls: type, precision_names: Sequence[str]) -> List[str]:
    """Problems with one call; [] when it binds (or is optional and absent here)."""
    if not callable(getattr(config_cls, c.method, None)):
        if c.optional:
            return []
        names = [n for n in dir(config_cls) if not n.startswith("_")]
        close = difflib.get_close_matches(c.method, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return [f"{c}: paddle.inference.Config has no method {c.method!r}{hint}"]
    sigs = signatures_of(config_cls, c.method)
    if not sigs:
        return [f"{c}: cannot read the signature of Config.{c.method} from its docstring"]
    failures = []
    for sig in sigs:
        try:
            bound = sig.bind(c.args, c.kwargs)
        except BindError as e:
            failures.append(str(e))
            continue
        wrong = _check_bound(sig, bound, precision_names)
        if wrong:
            failures.append("; ".join(wrong))
            continue
        implicit = [p for p in sig.params
                    if p.name in EXPLICIT_REQUIRED.get(c.method, ()) and p.name not in bound]
        return [f"{c}: leaves {p.name} to the binding default {p.default!r}; recipes must "
                f"pass every argument of {c.method} explicitly" for p in implicit]
    shown = failures[0] if len(failures) == 1 else " | ".join(
        f"overload {i}: {f}" for i, f in enumerate(failures, 1))
    return [f"{c}: does not fit Config.{sigs[0].text if len(sigs) == 1 else c.method}: {shown}"]


def _installed(config_cls: Optional[type], precision_names: Optional[Sequence[str]]):
    if config_cls is None or precision_names is None:
        from paddle import inference

        config_cls = config_cls or inference.Config
        if precision_names is None:
            precision_names = list(inference.PrecisionType.__members__)
    return config_cls, tuple(precision_names)


def check_recipe(calls: Sequence[Call], config_cls: Optional[type] = None,
                 precision_names: Optional[Sequence[str]] = None) -> List[str]:
    """Every problem in ``calls`` against the installed (or given) Config class."""
    config_cls, names = _installed(config_cls, precision_names)
    return [p for c in calls for p in check_call(c, config_cls, names)]


def require_valid(calls: Sequence[Call], config_cls: Optional[type] = None,
                  what: str = "recipe") -> None:
    """Raise RecipeError listing every problem, or return quietly."""
    problems = check_recipe(calls, config_cls)
    if problems:
        raise RecipeError(f"{what} does not fit the installed paddle.inference.Config:\n  "
                          + "\n  ".join(problems))


def skipped_optional(calls: Sequence[Call], config_cls: Optional[type] = None) -> Tuple[Call, ...]:
    """The optional calls the installed Config lacks: applying the recipe leaves them out."""
    config_cls, _ = _installed(config_cls, ())
    return tuple(c for c in calls if c.optional and not callable(getattr(config_cls, c.method, None)))
