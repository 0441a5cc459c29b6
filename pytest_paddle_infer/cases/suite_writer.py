"""``--paddle-suggest-tolerances=write``: measured tolerances written into a suite file in
place, its comments, order, anchors and flow style kept (ruamel.yaml's round trip).

Each suggested key goes where the tolerance that governed it is written (docs/suites.md's
precedence), else into the nearest entry that exists; a node several cases share takes the
loosest of their suggestions. Only the controller writes, under a file lock, atomically. A node
that also governs cases this session did not measure (narrowed away, skipped, failed) is not
written, since a value learned from some cases could break the others: a line says so."""
from __future__ import annotations

import fnmatch
import io
import os
import re
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..verdict.metrics import METRICS

LOOSEST = {"atol": max, **{m.bound: m.worst for m in METRICS}}


class Target:
    """A mapping in the document that receives keys, and its path for messages."""

    def __init__(self, node, where: str, created=None):
        self.node, self.where = node, where
        self.values: Dict[str, List[float]] = {}
        self.created = created  # (holder, key): the mapping was added to the document here


def _yaml(text: str):
    from ruamel.yaml import YAML

    yaml = YAML()  # round trip: comments, order, anchors, flow style
    yaml.width = 4096
    yaml.preserve_quotes = True
    yaml.brace_single_entry_mapping_in_flow_sequence = True  # [{image: [...]}] stays so
    offset = _sequence_offset(text)
    yaml.indent(mapping=2, sequence=offset + 2, offset=offset)
    return yaml


def _sequence_offset(text: str) -> int:
    """How far this file indents a block list's dashes beyond the key above them."""
    previous = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        dash = re.match(r"^(\s*)- ", line)
        if dash and previous is not None and re.match(r"^(\s*)[^\s-][^#]*:\s*(#.*)?$", previous):
            return max(0, len(dash.group(1)) - (len(previous) - len(previous.lstrip())))
        previous = line
    return 0


def _flow_map():
    from ruamel.yaml.comments import CommentedMap

    m = CommentedMap()
    m.fa.set_flow_style()
    return m


def _item(doc, path: Sequence) -> object:
    node = doc
    for key in path:
        node = node[key]
    return node


def _path_text(path: Sequence) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text


def _layers(doc, entry: Mapping) -> List[Tuple[object, str]]:
    """(tolerances mapping or None, its path), lowest precedence first: suite, model, run mode."""
    defaults = doc.get("defaults") or {}
    model = doc["models"][entry["model"]]
    mode = _item(doc, entry["mode"])
    return [(defaults.get("tolerances") if isinstance(defaults, dict) else None, "defaults.tolerances"),
            (model.get("tolerances") if isinstance(model, dict) else None,
             f"models.{entry['model']}.tolerances"),
            (mode.get("tolerances") if isinstance(mode, dict) else None,
             _path_text(entry["mode"]) + ".tolerances")]


def _output_entries(layers, name: str, position: int):
    """The output rules naming this output (by name or ``#N``), highest precedence first."""
    found = []
    for tolerances, where in layers:
        outputs = tolerances.get("outputs") if isinstance(tolerances, dict) else None
        if isinstance(outputs, dict):
            for key, rule in outputs.items():
                if isinstance(rule, dict) and (key == name or key == f"#{position}"):
                    found.append((rule, f"{where}.outputs.{key!s}"))
    return found[::-1]


def _governing(layers, name: str, position: int, key: str) -> Optional[Target]:
    """The mapping whose ``key`` decides this output's tolerance, by the suites' precedence."""
    for tolerances, where in reversed(layers):  # tensor globs, the most specific level first
        tensors = tolerances.get("tensors") if isinstance(tolerances, dict) else None
        if isinstance(tensors, dict):
            for pattern, rule in reversed(list(tensors.items())):
                if isinstance(rule, dict) and key in rule and fnmatch.fnmatchcase(name, str(pattern)):
                    return Target(rule, f"{where}.tensors.{pattern}")
    for rule, where in _output_entries(layers, name, position):
        if key in rule:
            return Target(rule, where)
    for tolerances, where in reversed(layers):
        if isinstance(tolerances, dict) and key in tolerances:
            return Target(tolerances, where)
    return None


def _insertion(doc, entry: Mapping, layers, name: str, position: int) -> Target:
    """Where a key no layer writes goes: the output's entry, else the run mode's, model's or suite's."""
    own = _output_entries(layers, name, position)
    if own:
        return Target(*own[0])
    mode = _item(doc, entry["mode"])
    if isinstance(mode, dict):
        holder, where = mode, _path_text(entry["mode"])
    elif entry["mode"][0] == "models":
        holder, where = doc["models"][entry["model"]], f"models.{entry['model']}"
    else:
        holder, where = doc["defaults"], "defaults"
    created = None
    if not isinstance(holder.get("tolerances"), dict):
        holder["tolerances"] = _flow_map()
        created = (holder, "tolerances")
    return Target(holder["tolerances"], f"{where}.tolerances", created)


def keep_anchors(node) -> None:
    """An anchor no alias uses is still the author's: dump it as written."""
    anchor = getattr(node, "anchor", None)
    if anchor is not None and getattr(anchor, "value", None):
        anchor.always_dump = True
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        keep_anchors(child)


def plan(doc, cases: Sequence[Tuple[Mapping, Mapping]]) -> List[Target]:
    """Every target mapping with the suggested values of the cases it governs."""
    targets: Dict[int, Target] = {}
    for entry, suggestion in cases:
        layers = _layers(doc, entry)
        for out in suggestion["outputs"]:
            for key, value in out.get("suggested", {}).items():
                target = _governing(layers, out["name"], out["position"], key)
                if target is None:
                    if key != "atol":  # bounds are rewritten only where a suite sets them
                        continue
                    target = _insertion(doc, entry, layers, out["name"], out["position"])
                    layers = _layers(doc, entry)  # a tolerances mapping may have been added
                kept = targets.setdefault(id(target.node), target)
                kept.values.setdefault(key, []).append(float(value))
    return list(targets.values())


def mode_items(doc) -> List[Tuple[str, Tuple]]:
    """(model, keys to its run-mode item) of every model x run mode the document declares."""
    found = []
    models = doc.get("models") if isinstance(doc, dict) else None
    defaults = doc.get("defaults") if isinstance(doc, dict) else None
    for name, model in (models.items() if isinstance(models, dict) else ()):
        if isinstance(model, dict) and isinstance(model.get("run_modes"), list):
            found += [(name, ("models", name, "run_modes", i)) for i in range(len(model["run_modes"]))]
        elif isinstance(defaults, dict) and isinstance(defaults.get("run_modes"), list):
            found += [(name, ("defaults", "run_modes", i)) for i in range(len(defaults["run_modes"]))]
    return found


def _holds(node, wanted: int) -> bool:
    """``wanted`` (an id) is ``node`` or inside it."""
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    return id(node) == wanted or any(_holds(child, wanted) for child in children)


def governs(doc, model: str, mode: Tuple, target: Target, key: str) -> bool:
    """Whether ``target``'s ``key`` may decide a tolerance of this model x run mode (an output or
    tensor rule counts whatever the outputs are called: unknown for a case that did not run)."""
    try:
        layers = _layers(doc, {"model": model, "mode": list(mode)})
    except (KeyError, IndexError, TypeError):
        return False
    for level in range(len(layers) - 1, -1, -1):
        tolerances = layers[level][0]
        if tolerances is None or not _holds(tolerances, id(target.node)):
            continue
        if tolerances is not target.node:
            return True
        return not any(isinstance(t, dict) and key in t for t, _ in layers[level + 1:])
    return False


def anchor_of(doc, wanted: int) -> str:
    """The name of the nearest anchor at or above the node ``wanted`` (an id), "" if none."""

    def walk(node, anchors):
        anchor = getattr(getattr(node, "anchor", None), "value", None)
        here = anchors + [anchor] if anchor else anchors
        if id(node) == wanted:
            return here[-1] if here else ""
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for child in children:
            found = walk(child, here)
            if found is not None:
                return found
        return None

    return walk(doc, []) or ""


def unmeasured(doc, target: Target, key: str, complete: Mapping[Tuple, bool]) -> List[str]:
    """The model x run modes ``target``'s ``key`` governs whose cases were not all measured."""
    return [f"{model} ({_path_text(mode)})" for model, mode in mode_items(doc)
            if not complete.get((model, tuple(mode)), False) and governs(doc, model, mode, target, key)]


def write_suggestions(path: Path, cases: Sequence[Tuple[Mapping, Mapping]], lock: Path,
                      refused: Optional[List[str]] = None) -> List[str]:
    """Rewrite the suite under ``lock`` (in the cache dir); a line per value written (``x.atol: 0.1 -> 0.2``),
    ``refused`` one per value that also governs cases not measured (``cases``: a model x mode's count)."""
    from ..files import atomic_write, file_lock

    path = Path(path)
    target_path = path.resolve()  # a link: its target is rewritten, the link kept
    seen: Dict[Tuple, set] = {}
    declared: Dict[Tuple, int] = {}
    for entry, suggestion in cases:
        pair = (entry["model"], tuple(entry["mode"]))
        seen.setdefault(pair, set()).add(entry.get("case") or id(entry))
        declared[pair] = int(entry.get("cases", 1))
    complete = {pair: len(ids) >= declared[pair] for pair, ids in seen.items()}
    refused = [] if refused is None else refused
    with file_lock(lock):
        text = target_path.read_text(encoding="utf-8")
        yaml = _yaml(text)
        doc = yaml.load(text)
        keep_anchors(doc)
        changes = []
        for target in plan(doc, cases):
            for key, values in target.values.items():
                new = LOOSEST[key](values)
                old = target.node.get(key)
                if old is not None and float(old) == new:
                    continue
                others = unmeasured(doc, target, key, complete)
                if others:
                    anchor = anchor_of(doc, id(target.node))
                    refused.append(
                        f"not written: {target.where}.{key} ({'-' if old is None else old} -> {new:g}): "
                        + (f"anchor &{anchor} " if anchor else "it ") + "also sets the tolerance of "
                        f"{', '.join(others[:3])}{' and more' if len(others) > 3 else ''}, not measured "
                        f"in this session (narrowed away, skipped, failed or errored); run those cases "
                        f"too, or give {', '.join(sorted({e['model'] for e, _ in cases}))} its own "
                        f"tolerances")
                    continue
                target.node[key] = new
                changes.append(f"{target.where}.{key}: {'-' if old is None else old} -> {new:g}")
            if target.created is not None and not target.node:  # added, then nothing written
                holder, name = target.created
                del holder[name]
        if changes:
            out = io.StringIO()
            yaml.dump(doc, out)
            mode = target_path.stat().st_mode & 0o7777
            atomic_write(target_path, out.getvalue())
            os.chmod(target_path, mode)  # the suite keeps its permissions
        return changes
