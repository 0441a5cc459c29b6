"""Toggles as a table: a row says how a toggle is written, which run modes take it and the Config
calls it adds; the spec type, its checks and id, the ``--run-mode`` grammar, the help and the
suite keys follow, so a new toggle is one row in ``run_modes.TOGGLES``."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import OptionError


class NotThisKind(Exception):
    """A ``+key=value`` token its kind does not read: an unknown toggle."""


# -- kinds: how a value is written -----------------------------------------------------------
class Kind:
    """How one toggle's value is written in ``--run-mode`` and shown in an id (``name``: the row's)."""

    default: Any = None
    type: Any = Any
    metavar = ""
    yaml_note = ""  # said after the suite spelling in a hint
    extra_keys: Tuple[str, ...] = ()  # suite keys besides the row's own, read with it

    def tokens(self, name: str) -> Tuple[str, ...]:
        """The keys of ``+key[=value]`` this kind reads."""
        return (name,)

    def syntax(self, name: str) -> Tuple[str, ...]:
        """Each way of writing it, for help and errors."""
        return (f"{name}={self.metavar}",)

    def take(self, key: str, eq: bool, value: str, state: Any) -> Any:
        """Fold one ``key[=value]`` token into the value so far; NotThisKind for a token it does not read."""
        if not value:
            raise NotThisKind
        return value

    def finish(self, state: Any) -> Any:
        """The value once every token is read."""
        return state

    def label(self, name: str, value: Any) -> List[str]:
        """The id's parts for a value other than the default."""
        return [f"{name}={value}"]

    def normalize(self, value: Any) -> Any:
        return value

    def problem(self, name: str, value: Any) -> Optional[str]:
        """What is wrong with a value other than the default, whatever the mode."""
        return None

    @property
    def probe(self) -> Any:
        """A value other than the default, to ask which modes take the toggle."""
        raise NotImplementedError

    def yaml_form(self, token: str) -> str:
        """How a token's value is written in a suite's run-mode mapping."""
        return self.metavar


@dataclass(frozen=True)
class Flag(Kind):
    """Off unless ``+NAME`` is given."""

    default = False
    type = bool
    probe = True

    def syntax(self, name: str) -> Tuple[str, ...]:
        return (name,)

    def take(self, key: str, eq: bool, value: str, state: Any) -> Any:
        if eq:
            raise NotThisKind
        return True

    def label(self, name: str, value: Any) -> List[str]:
        return [name]

    def yaml_form(self, token: str) -> str:
        return "true"


@dataclass(frozen=True)
class Switch(Kind):
    """Left to the mode (None), or ``+NAME`` on and ``+OFF`` off."""

    off: str
    default = None
    type = Optional[bool]
    probe = True

    def tokens(self, name: str) -> Tuple[str, ...]:
        return (name, self.off)

    syntax = tokens

    def take(self, key: str, eq: bool, value: str, state: Any) -> Any:
        if eq:
            raise NotThisKind
        return key != self.off

    def label(self, name: str, value: Any) -> List[str]:
        return [name if value else self.off]

    def yaml_form(self, token: str) -> str:
        return "false" if token == self.off else "true"


@dataclass(frozen=True)
class Names(Kind):
    """A list of names, ``+TOKEN=NAME`` once per name; the field and suite key are plural."""

    token: str
    metavar: str = "NAME"
    example: str = "name"
    default = ()
    type = Tuple[str, ...]

    def tokens(self, name: str) -> Tuple[str, ...]:
        return (self.token,)

    def syntax(self, name: str) -> Tuple[str, ...]:
        return (f"{self.token}={self.metavar}",)

    def take(self, key: str, eq: bool, value: str, state: Any) -> Any:
        if not value:
            raise NotThisKind
        return tuple(state) + (value,)

    def label(self, name: str, value: Any) -> List[str]:
        return [f"{self.token}={v}" for v in value]

    def normalize(self, value: Any) -> Any:
        return tuple(value)  # hashable

    @property
    def probe(self) -> Any:
        return (self.example,)

    def yaml_form(self, token: str) -> str:
        return f"[{self.metavar}]"


@dataclass(frozen=True)
class Number(Kind):
    """A whole number ``+NAME=N`` in ``minimum..maximum``; ``below`` and ``above`` say why a
    value out of range is refused, ``what`` and ``note`` describe the range."""

    minimum: int
    maximum: Optional[int] = None
    below: str = ""
    what: str = ""
    note: str = ""
    above: str = ""
    default = None
    type = Optional[int]
    metavar = "N"

    def take(self, key: str, eq: bool, value: str, state: Any) -> Any:
        if not eq:
            raise OptionError(f"{key} needs a number: +{key}={max(self.minimum, 1)}")
        try:
            return int(value.strip())
        except ValueError:
            raise OptionError(f"{key}={value!r}: give a whole number, e.g. +{key}="
                              f"{max(self.minimum, 1)}") from None

    def problem(self, name: str, value: Any) -> Optional[str]:
        if value < self.minimum:
            return f"{name} {value}: {self.below or f'the least is {self.minimum}'}"
        too_many = self.maximum is not None and value > self.maximum
        return f"{name} {value}: {self.above or self.limits}" if too_many else None

    @property
    def limits(self) -> str:
        span = f"{self.minimum}..{self.maximum}"
        if not self.what:
            return f"use {span}"
        return f"{self.what}s are {span}" + (f" ({self.note})" if self.note else "")

    @property
    def probe(self) -> Any:
        return self.minimum


@dataclass(frozen=True)
class Choice(Kind):
    """One of ``options`` (value, what it means); the first is the default (not in ids)."""

    options: Tuple[Tuple[str, str], ...]
    type = str

    @property
    def default(self) -> Any:  # type: ignore[override]
        return self.options[0][0]

    @property
    def choices(self) -> Tuple[str, ...]:
        return tuple(value for value, _ in self.options)

    def syntax(self, name: str) -> Tuple[str, ...]:
        return (f"{name}={'|'.join(self.choices)}",)

    def problem(self, name: str, value: Any) -> Optional[str]:
        return None if value in self.choices else f"{name} {value!r}: use one of {self.choices}"

    @property
    def probe(self) -> Any:
        return self.choices[1]

    def yaml_form(self, token: str) -> str:
        return "|".join(self.choices)


@dataclass(frozen=True)
class Directory(Kind):
    """A directory ``+NAME=DIR`` (in a suite, relative to it), ``what`` holding ``holds``."""

    what: str
    holds: str
    example: str = "dir/"
    default = None
    type = Optional[str]
    metavar = "DIR"
    yaml_note = "(relative to the suite)"
    probe = "dir"

    def problem(self, name: str, value: Any) -> Optional[str]:
        return None if str(value).strip() else f"{name}: give {self.holds}"


# -- rows ------------------------------------------------------------------------------------
def every_mode(spec: Any) -> bool:
    return True


@dataclass(frozen=True)
class Toggle:
    """One toggle. ``applies(spec)``: whether the spec's mode may set it, ``scope`` in words
    ("trt_*"; empty: every mode); ``check(value, spec)``: a problem with a value the mode cannot
    use; ``calls(value, mode)``: Config calls added after the mode's own, replacing those of the
    same methods; ``key``: the suite key (``group.key`` inside a mapping)."""

    name: str
    kind: Kind
    help: Union[str, Tuple[str, ...]]  # one text per way of writing it (kind.syntax)
    scope: str = ""
    applies: Callable[[Any], bool] = every_mode
    check: Optional[Callable[[Any, Any], Optional[str]]] = None
    calls: Optional[Callable[[Any, Any], Sequence[Any]]] = None
    key: str = ""

    @property
    def path(self) -> Tuple[str, ...]:
        return tuple((self.key or self.name).split("."))

    @property
    def top(self) -> str:
        return self.path[0]

    def is_set(self, spec: Any) -> bool:
        return getattr(spec, self.name) != self.kind.default

    def meanings(self) -> Tuple[Tuple[str, str], ...]:
        syntax = self.kind.syntax(self.name)
        helps = (self.help,) if isinstance(self.help, str) else tuple(self.help)
        if len(helps) != len(syntax):
            raise ValueError(f"toggle {self.name}: {len(syntax)} spellings {syntax} but "
                             f"{len(helps)} help texts")
        return tuple((s, f"{self.scope}: {h}" if self.scope else h) for s, h in zip(syntax, helps))


class ToggledSpec:
    """Base of a table's spec type: ``mode``, then one field per row of the table."""

    TABLE: ClassVar["ToggleTable"]

    def __post_init__(self) -> None:
        self.TABLE.check(self)

    @property
    def run_mode(self) -> Any:
        return self.TABLE.modes[self.mode]  # type: ignore[attr-defined]

    @property
    def label(self) -> str:
        """The id part: the mode, then each toggle in ``--run-mode`` syntax."""
        return self.TABLE.label(self)


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


class ToggleTable:
    """The rows and what follows from them, for ``modes`` (``canonical``: name or alias -> key)."""

    def __init__(self, rows: Sequence[Toggle], modes: Mapping[str, Any],
                 canonical: Callable[[str], str], examples: Sequence[str] = (),
                 spec_name: str = "RunModeSpec", module: str = __name__, doc: str = ""):
        self.rows = tuple(rows)
        self.modes = modes
        self.canonical = canonical
        self._rows = {r.name: r for r in self.rows}
        self._tokens: Dict[str, Toggle] = {}
        for row in self.rows:
            for token in row.kind.tokens(row.name):
                if token in self._tokens:
                    raise ValueError(f"toggles {self._tokens[token].name} and {row.name} both read +{token}")
                self._tokens[token] = row
        if len(self._rows) != len(self.rows) or "mode" in self._rows:
            raise ValueError("toggle names must be unique and not 'mode'")
        self.syntax: Tuple[Tuple[str, str], ...] = tuple(p for r in self.rows for p in r.meanings())
        self.help = "toggles: " + ", ".join("+" + s for s, _ in self.syntax) + \
            (f" (e.g. {', '.join(examples)})" if examples else "")
        self.scopes = self._scopes()
        self.spec_type = self._spec_type(spec_name, module, doc)

    def __iter__(self) -> Iterator[Toggle]:
        return iter(self.rows)

    def __getitem__(self, name: str) -> Toggle:
        return self._rows[name]

    def _spec_type(self, name: str, module: str, doc: str) -> type:
        fields = [("mode", str)] + [(r.name, r.kind.type, dataclasses.field(default=r.kind.default))
                                    for r in self.rows]
        namespace = {"TABLE": self, "__doc__": doc or ToggledSpec.__doc__}
        spec = dataclasses.make_dataclass(name, fields, bases=(ToggledSpec,), namespace=namespace,
                                          frozen=True)
        # pickle finds the class as module.name (specs cross to the executor child); from
        # Python 3.12 make_dataclass sets __module__ to its caller's
        spec.__module__ = module
        return spec

    def _scopes(self) -> str:
        """E.g. "fp32_ops and low_precision_io apply to gpu_fp16; use_static to trt_*"."""
        groups: Dict[str, List[str]] = {}
        for row in self.rows:
            if row.scope:
                groups.setdefault(row.scope, []).append(row.name)
        return "; ".join(f"{_and(names)} {'apply ' if i == 0 else ''}to {scope}"
                         for i, (scope, names) in enumerate(groups.items()))

    # -- the spec: checks and id -----------------------------------------------------------
    def check(self, spec: Any) -> None:
        for row in self.rows:
            object.__setattr__(spec, row.name, row.kind.normalize(getattr(spec, row.name)))
        if spec.mode not in self.modes:
            return  # the mode's name is checked where it is read (canonical)
        wrong = [r.name for r in self.rows if r.is_set(spec) and not r.applies(spec)]
        if wrong:
            raise OptionError(f"run mode {spec.mode} does not take {', '.join(wrong)}: {self.scopes}")
        for row in self.rows:
            if row.is_set(spec):
                value = getattr(spec, row.name)
                problem = row.kind.problem(row.name, value) or \
                    (row.check(value, spec) if row.check else None)
                if problem:
                    raise OptionError(problem)

    def label(self, spec: Any) -> str:
        return "+".join([spec.mode] + [part for row in self.rows if row.is_set(spec)
                                       for part in row.kind.label(row.name, getattr(spec, row.name))])

    def takers(self, row: Toggle) -> List[str]:
        """The modes whose default spec may set ``row``."""
        return [m for m in self.modes if row.applies(self.spec_type(m))]

    # -- the --run-mode grammar ------------------------------------------------------------
    def parse(self, text: str) -> Any:
        """``trt_fp16+dynamic_shape=tuned+use_static`` -> a spec; the inverse of ``label``."""
        name, *tokens = [t.strip() for t in str(text).split("+")]
        mode = self.canonical(name)
        states: Dict[str, Any] = {}
        for token in tokens:
            if not token:
                raise OptionError(f"--run-mode: {text!r} has a '+' with no toggle after it; {self.help}")
            key, eq, value = token.partition("=")
            row = self._tokens.get(key)
            try:
                if row is None:
                    raise NotThisKind
                states[row.name] = row.kind.take(key, bool(eq), value, states.get(row.name, row.kind.default))
            except NotThisKind:
                raise OptionError(f"--run-mode: unknown toggle {token!r} in {text!r}; {self.help}") from None
            except OptionError as e:  # a value written wrong
                raise OptionError(f"--run-mode: {e}") from None
        try:
            return self.spec_type(mode, **{n: self[n].kind.finish(state) for n, state in states.items()})
        except OptionError as e:
            raise OptionError(f"--run-mode: {text!r}: {e}") from None

    def parse_list(self, values: Sequence[str]) -> Tuple[Any, ...]:
        """``--run-mode a,b --run-mode c`` -> specs in order, without repeats."""
        return tuple(dict.fromkeys(self.parse(part) for value in values
                                   for part in str(value).split(",") if part.strip()))

    # -- a suite's run-mode mapping --------------------------------------------------------
    @property
    def yaml_keys(self) -> Tuple[str, ...]:
        """The keys of a run-mode mapping, in table order."""
        return self._keys(self.rows)

    @property
    def restricted_keys(self) -> Tuple[str, ...]:
        """The keys only some modes take."""
        return self._keys([r for r in self.rows if r.scope])

    @staticmethod
    def _keys(rows: Sequence[Toggle]) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(k for r in rows for k in (r.top,) + tuple(r.kind.extra_keys)))

    def rows_at(self, key: str) -> Tuple[Toggle, ...]:
        """The rows a suite key sets: one, or a group's (``calibration: {batches, data}``)."""
        return tuple(r for r in self.rows if r.top == key or key in r.kind.extra_keys)

    @property
    def probes(self) -> Dict[str, Dict[str, Any]]:
        """Spec fields that set each key only some modes take, to ask which modes take it."""
        return {key: {r.name: r.kind.probe for r in self.rows_at(key)} for key in self.restricted_keys}

    @property
    def spelling_hints(self) -> Dict[str, str]:
        """``--run-mode`` spellings that are no suite key -> how a suite writes them."""
        keys = self.yaml_keys
        hints = {}
        for row in self.rows:
            for token in row.kind.tokens(row.name):
                if token in keys:
                    continue
                form = row.kind.yaml_form(token)
                for part in reversed(row.path[1:]):
                    form = f"{{{part}: {form}}}"
                note = f"  {row.kind.yaml_note}" if row.kind.yaml_note else ""
                hints[token] = f"write {row.top}: {form}{note}"
        return hints
