"""Reading suite YAML with line numbers (``read_yaml``), and ``Node``: a value with where it was
written and its key path, which turns a wrong value into a ``SuiteError`` pointing at it."""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import SuiteError

DOCS = "docs/suites.md"


class LineDict(dict):
    """A YAML mapping that remembers the line (1-based) of the mapping and of each key."""

    line = 0

    def __init__(self):
        super().__init__()
        self.key_lines: Dict[Any, int] = {}


class LineList(list):
    """A YAML sequence that remembers the line of the sequence and of each item."""

    line = 0

    def __init__(self):
        super().__init__()
        self.item_lines: List[int] = []


class _YamlProblem(Exception):
    def __init__(self, line: int, problem: str, expected: str, found: str, fix: str):
        super().__init__(problem)
        self.line, self.problem, self.expected, self.found, self.fix = line, problem, expected, found, fix


def _line_loader():
    """A SafeLoader subclass (built on first use: no yaml import at import) that records lines,
    refuses duplicate keys, and reads ``1e-4`` as a number (YAML 1.2; PyYAML's 1.1: a string)."""
    import yaml

    class LineLoader(yaml.SafeLoader):
        pass

    merge_tag = "tag:yaml.org,2002:merge"

    def construct_mapping(loader, node):
        own = sum(1 for key, _ in node.value if key.tag != merge_tag)
        loader.flatten_mapping(node)  # `<<: *anchor` pairs come first; the mapping's own win
        first_own = len(node.value) - own
        mapping = LineDict()
        mapping.line = node.start_mark.line + 1
        seen = set()
        for i, (key_node, value_node) in enumerate(node.value):
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                hash(key)
            except TypeError:
                raise _YamlProblem(line, "a key that is not a name", "a plain name as key",
                                   describe(key), "write the key as a plain word") from None
            if i >= first_own:
                if key in seen:
                    raise _YamlProblem(
                        line, f"key {key!r} appears twice in one mapping",
                        "each key once", f"{key!r} again, first on line {mapping.key_lines[key]}",
                        "remove or merge one of them (YAML would silently keep only the last)")
                seen.add(key)
            mapping[key] = loader.construct_object(value_node, deep=True)
            mapping.key_lines[key] = line
        return mapping

    def construct_sequence(loader, node):
        items = LineList()
        items.line = node.start_mark.line + 1
        for child in node.value:
            items.append(loader.construct_object(child, deep=True))
            items.item_lines.append(child.start_mark.line + 1)
        return items

    LineLoader.add_constructor("tag:yaml.org,2002:map", construct_mapping)
    LineLoader.add_constructor("tag:yaml.org,2002:seq", construct_sequence)
    LineLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"), list("-+0123456789."))
    return LineLoader


# A suite nests a few levels; these bound what it can cost before it is read (YAML aliases let a
# few lines stand for 10^8 values: the "billion laughs").
MAX_DEPTH = 64  # nesting of lists and mappings, aliases expanded
MAX_NODES = 100_000  # values in the document, aliases expanded


def _check_depth(text: str) -> None:
    """Nesting deeper than MAX_DEPTH, from the parser's events (composing nodes recurses)."""
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise _YamlProblem(
                    event.start_mark.line + 1, f"lists and mappings nested more than {MAX_DEPTH} deep",
                    f"at most {MAX_DEPTH} levels of nesting (the limit of a suite file)",
                    f"level {depth} here", "a suite nests a few levels: flatten the data; an input's "
                    "values belong in a .npy file (inputs: {x: {file: x.npy}}, docs/suites.md)")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def _check_expansion(root) -> None:
    """Size and depth with aliases expanded, counted without expanding; self-containing anchors refused."""
    import yaml

    def children(node):
        if isinstance(node, yaml.SequenceNode):
            return node.value
        return [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else []

    size: Dict[int, int] = {}
    height: Dict[int, int] = {}
    on_path = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            kids = children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            height[key] = 1 + max((height[id(k)] for k in kids), default=0)
            line = node.start_mark.line + 1
            if size[key] > MAX_NODES:
                raise _YamlProblem(
                    line, f"YAML aliases expand this value to more than {MAX_NODES:,} values",
                    f"at most {MAX_NODES:,} values in a suite, aliases (*name) expanded",
                    f"{size[key]:,} values", "use each anchor (&name) for a few values, not to "
                    "multiply them; an input's values belong in a .npy file (docs/suites.md)")
            if height[key] > MAX_DEPTH:
                raise _YamlProblem(
                    line, f"YAML aliases nest this value more than {MAX_DEPTH} deep",
                    f"at most {MAX_DEPTH} levels of nesting, aliases (*name) expanded",
                    f"{height[key]} levels", "flatten the data; an alias inside an alias inside "
                    "an alias multiplies the nesting")
            continue
        if key in size:
            continue
        if key in on_path:
            raise _YamlProblem(
                node.start_mark.line + 1, "a YAML anchor that contains an alias of itself",
                "values that end", "a value that refers to itself (&name ... *name inside it)",
                "remove the alias inside its own anchor")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in children(node) if id(k) not in size)


def read_yaml(path: Path, display: str):
    """The document in ``path`` as LineDict/LineList/scalars, or a SuiteError naming the line."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SuiteError(f"{display}: cannot read the suite file: {e}") from None
    loader = _line_loader()(text)
    try:
        _check_depth(text)
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except _YamlProblem as p:
        raise error(Where(display, p.line), "", p.problem, p.expected, p.found, p.fix) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        raise error(Where(display, line), "", "not valid YAML", "a YAML document",
                     f"{e.problem or e}" + (f" ({e.context})" if e.context else ""),
                     "check the indentation, colons and quotes on and just above that line") from None
    except yaml.YAMLError as e:
        raise SuiteError(f"{display}: not valid YAML: {e}") from None
    finally:
        loader.dispose()


@dataclass(frozen=True)
class Where:
    file: str
    line: Optional[int] = None

    def at(self, line: Optional[int]) -> "Where":
        return Where(self.file, line) if line else self

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


def describe(value: Any) -> str:
    """What a value is, in the words of a YAML file."""
    if value is None:
        return "an empty value (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, dict):
        keys = ", ".join(str(k) for k in value)
        return f"a mapping with keys {keys}" if keys else "an empty mapping"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}: {short(value)}"
    return f"a {type(value).__name__} {value!r}"


def short(value: Any) -> str:
    text = repr(list(value) if isinstance(value, (list, tuple)) else value)
    return text if len(text) <= 60 else text[:57] + "..."


def error(where: Where, path: str, problem: str, expected: str, found: str, fix: str = "") -> SuiteError:
    lines = [f"{where}: {path + ': ' if path else ''}{problem}",
             f"  expected: {expected}",
             f"  found:    {found}"]
    if fix:
        lines.append(f"  fix:      {fix}")
    return SuiteError("\n".join(lines))


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def join_names(names: Sequence[str]) -> str:
    return ", ".join(str(n) for n in names)


class Node:
    """A value read from a suite (or a marker), with where it was written and its key path."""

    def __init__(self, value: Any, where: Where, path: str):
        self.value = value
        self.where = where.at(getattr(value, "line", None)) if isinstance(value, (LineDict, LineList)) \
            and where.line is None else where
        self.path = path

    def fail(self, problem: str, expected: str, fix: str = "", found: Optional[str] = None) -> SuiteError:
        return error(self.where, self.path, problem, expected,
                      describe(self.value) if found is None else found, fix)

    # structure

    def child(self, key: str) -> "Node":
        line = getattr(self.value, "key_lines", {}).get(key)
        return Node(self.value[key], self.where.at(line), f"{self.path}.{key}" if self.path else str(key))

    def mapping(self, allowed: Sequence[str], what: str, hints: Mapping[str, str] = {}) -> Dict[str, "Node"]:
        """The children of a mapping whose keys must all be in ``allowed``."""
        free = isinstance(allowed, AnyName)
        expected = "a mapping from names you choose" if free else f"a mapping with keys among {join_names(allowed)}"
        if self.value is None:
            return {}
        if not isinstance(self.value, dict):
            raise self.fail(f"{what} must be a mapping", expected, "write it as name: value pairs" if free
                            else f"write it as {{key: value}}; see {DOCS} for the keys {what} takes")
        out = {}
        for key in self.value:
            line = getattr(self.value, "key_lines", {}).get(key)
            if free and key not in allowed:
                raise error(self.where.at(line), self.path, f"a key in {what} that is not a name",
                             "a non-empty name", describe(key), "write the name as text")
            if key not in allowed:
                fix = hints.get(key, "") if isinstance(key, str) else ""
                fix = fix or did_you_mean(key, allowed) or \
                    f"remove it, or see {DOCS} for the keys {what} takes"
                raise error(self.where.at(line), self.path, f"unknown key {key!r} in {what}",
                             f"one of {join_names(allowed)}", repr(key), fix)
            out[key] = self.child(key)
        return out

    def items(self, what: str, example: str) -> List["Node"]:
        if not isinstance(self.value, (list, tuple)):
            dims = dims_in_text(self.value)
            fix = f"write the dims as a list of numbers: {dims}" if dims else \
                f"write it as a list: [{self.value}]" if isinstance(self.value, (str, int, float)) else ""
            raise self.fail(f"{what} must be a list", f"a list, e.g. {example}", fix)
        lines = getattr(self.value, "item_lines", [None] * len(self.value))
        return [Node(v, self.where.at(line), f"{self.path}[{i}]")
                for i, (v, line) in enumerate(zip(self.value, lines))]

    # scalars

    def text(self, what: str, example: str) -> str:
        if not isinstance(self.value, str) or not self.value.strip():
            raise self.fail(f"{what} must be a non-empty string", f"a string, e.g. {example}")
        return self.value.strip()

    def number(self, what: str, low: float = -math.inf, high: float = math.inf) -> float:
        v = self.value
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            fix = "write it as a bare number, e.g. 1e-4 (no quotes)" if isinstance(v, str) else ""
            raise self.fail(f"{what} must be a finite number", range_text(low, high), fix)
        if not low <= v <= high:
            raise self.fail(f"{what} is out of range", range_text(low, high))
        return float(v)

    def integer(self, what: str, low: int) -> int:
        v = self.value
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise self.fail(f"{what} must be a whole number >= {low}", f"a whole number >= {low}",
                            f"write a bare whole number such as {max(low, 1)} (no quotes, no decimal point)")
        return int(v)

    def flag(self, what: str) -> bool:
        if not isinstance(self.value, bool):
            raise self.fail(f"{what} must be true or false", "true or false",
                            "write true or false (no quotes)")
        return self.value


def dims_in_text(value: Any) -> Optional[List[int]]:
    """``"1x3x32x32"`` (the command line's way of writing a shape) -> [1, 3, 32, 32]."""
    if not isinstance(value, str) or not re.fullmatch(r"\s*-?\d+(\s*[x,]\s*-?\d+)*\s*", value):
        return None
    return [int(d) for d in re.split(r"\s*[x,]\s*", value.strip())]


def range_text(low: float, high: float) -> str:
    if math.isinf(low) and math.isinf(high):
        return "a number"
    return f"a number >= {low:g}" if math.isinf(high) else f"a number between {low:g} and {high:g}"


class AnyName(tuple):
    """Allowed keys for mappings whose keys are names the user chooses (outputs, inputs)."""

    def __contains__(self, key) -> bool:
        return isinstance(key, str) and bool(key.strip())


@dataclass(frozen=True)
class Context:
    """What a suite is read against: its directory, the session's settings and cache."""

    file: str  # the name used in messages
    base_dir: Path  # relative paths in the suite are relative to this
    rootdir: Path
    cache_dir: Path
    seed: int = 0  # used where the suite sets none
    baseline: str = "auto"
    threads: Optional[int] = None
    forced: Tuple[Tuple[str, Any], ...] = ()  # seed/baseline/threads given on the command line: they win
    suite: bool = True  # a suite file (False: a paddle_case marker, which no file holds)
    timeout: Optional[float] = None  # --paddle-timeout: the deadline of children run while reading
    update_goldens: bool = False  # --paddle-update-goldens: a golden:DIR must be the plugin's to rewrite
