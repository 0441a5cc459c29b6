"""A suite's run mode written as a mapping: its toggles, each checked at its own line, and the
``RunModeSpec`` they make. The keys and rules follow from the toggle table (``run_modes.TOGGLES``);
a value is read by its toggle's kind (``READERS``), and a broken rule points at its key."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

from ..errors import OptionError, SuiteError
from ..models.inputs import InputSpec
from ..modes.run_modes import TOGGLE_HELP, TOGGLES, DynamicShape, DynamicShapeValue, RunModeSpec
from .suite_inputs import check_rank, parse_dims
from .suite_nodes import AnyName, Context, Node, did_you_mean, join_names
from ..modes.toggles import Choice, Directory, Flag, Kind, Names, Number, Switch, Toggle, ToggleTable

TOGGLE_KEYS = TOGGLES.yaml_keys
RANGE_KEYS = ("min", "opt", "max")  # TensorRT's order, which DynamicShape.explicit takes
RANGE_EXAMPLE = "{x: {min: [1, 3, 224, 224], opt: [4, 3, 224, 224], max: [8, 3, 224, 224]}}"
# the string syntax's spellings, written in a mapping
SPELLING_HINTS = TOGGLES.spelling_hints
# run-mode keys written under a model or defaults
MODE_KEY_HINTS = {k: f"{k} is a run-mode key: write it beside 'mode:' in a run_modes entry, "
                     f"e.g. run_modes: [{{mode: trt_fp16, {k}: ...}}]" for k in TOGGLES.restricted_keys}


def read_toggles(fields: Mapping[str, Node], ctx: Context,
                 table: ToggleTable = TOGGLES) -> Dict[str, Dict[str, Any]]:
    """Spec keyword arguments per toggle key of a run-mode mapping, in file order."""
    parts: Dict[str, Dict[str, Any]] = {}
    keys = table.yaml_keys
    for key, node in fields.items():
        if key not in keys:
            continue  # mode, tolerances, skip, xfail
        rows = table.rows_at(key)
        if len(rows) == 1 and key in rows[0].kind.extra_keys:  # read with its row's own key
            parts[key] = {}
            read_extra(rows[0], key, node, fields)
        elif len(rows) == 1 and len(rows[0].path) == 1:
            parts[key] = {rows[0].name: read_value(rows[0], node, key, fields, ctx)}
        else:
            parts[key] = read_group(key, rows, node, fields, ctx)
    return parts


def read_value(row: Toggle, node: Node, what: str, fields: Mapping[str, Node], ctx: Context) -> Any:
    for kind_type, reader in READERS.items():
        if isinstance(row.kind, kind_type):
            return reader(row.kind, node, what, fields, ctx)
    raise TypeError(f"toggle {row.name}: no suite reader for a {type(row.kind).__name__}")


def read_group(key: str, rows: Sequence[Toggle], node: Node, fields: Mapping[str, Node],
               ctx: Context) -> Dict[str, Any]:
    """A mapping that sets several toggles: ``calibration: {batches: N, data: DIR}``."""
    subs = {row.path[1]: row for row in rows}
    given = node.mapping(tuple(subs), key)
    if not given:
        raise node.fail(f"{key} sets nothing",
                        " and/or ".join(f"{sub}: {row.kind.metavar}" for sub, row in subs.items()),
                        fix=f"set {' or '.join(subs)}, or remove {key} for the defaults")
    return {row.name: read_value(row, given[sub], f"{key}.{sub}", fields, ctx)
            for sub, row in subs.items() if sub in given}


def read_extra(row: Toggle, key: str, node: Node, fields: Mapping[str, Node]) -> None:
    if isinstance(row.kind, DynamicShapeValue):
        check_plugin_fp16(node, fields.get(row.top))


def build_spec(mode: str, fields: Mapping[str, Node], parts: Mapping[str, Dict[str, Any]],
               item: Node, table: ToggleTable = TOGGLES) -> RunModeSpec:
    probes = table.probes
    for key in fields:
        if key in probes and not fits(mode, probes[key], table):
            takers = [m for m in table.modes if fits(m, probes[key], table)]
            where = f"a run mode with mode: {takers[0]}" if len(takers) == 1 else "a run mode that takes it"
            raise fields[key].fail(f"{key} does not apply to run mode {mode}",
                                   f"{key} only under {join_names(takers)}", found=f"{key} under mode {mode}",
                                   fix=f"remove {key}, or move it to {where}")
    try:
        return table.spec_type(mode, **merge(parts))
    except OptionError as e:
        raise conflict(mode, fields, parts, item, e, table) from None


def conflict(mode: str, fields: Mapping[str, Node], parts: Mapping[str, Dict[str, Any]], item: Node,
             e: OptionError, table: ToggleTable = TOGGLES) -> SuiteError:
    """Point at the last key without which the toggles fit, and at what it clashes with."""
    without = lambda key: merge({k: v for k, v in parts.items() if k != key})  # noqa: E731
    for key in reversed(list(parts)):
        if not fits(mode, without(key), table):
            continue
        if not fits(mode, parts[key], table):  # wrong for the mode whatever else is set
            return fields[key].fail(f"{key} does not fit run mode {mode}", f"settings {mode} takes",
                                    found=str(e), fix=f"remove {key}")
        partners = [k for k in parts if k != key and fits(mode, without(k), table)]
        return fields[key].fail(f"{key} conflicts with {join_names(partners)} in run mode {mode}",
                                "settings that apply together", found=str(e),
                                fix=f"remove {key} or {' or '.join(partners)}")
    return item.fail("settings this run mode cannot take together", f"settings that apply to {mode}",
                     found=str(e))


def fits(mode: str, toggles: Mapping[str, Any], table: ToggleTable = TOGGLES) -> bool:
    try:
        table.spec_type(mode, **toggles)
        return True
    except OptionError:
        return False


def merge(parts: Mapping[str, Dict[str, Any]]) -> Dict[str, Any]:
    return {k: v for part in parts.values() for k, v in part.items()}


def read_flag(kind: Kind, node: Node, what: str, fields, ctx) -> bool:
    return node.flag(what)


def read_names(kind: Names, node: Node, what: str, fields, ctx) -> tuple:
    return tuple(i.text("a name", kind.example) for i in node.items(what, f"[{kind.example}]"))


def read_number(kind: Number, node: Node, what: str, fields, ctx) -> int:
    value = node.integer(what, kind.minimum)
    if kind.maximum is not None and value > kind.maximum:
        low, high = kind.minimum, kind.maximum
        about = f" ({kind.what}s; {kind.note})" if kind.what and kind.note else ""
        unit = kind.what.split()[-1] if kind.what else "value"
        reason = f": {kind.above}" if kind.above else ""  # e.g. more threads than the CPUs take
        raise node.fail(f"{what} is out of range{reason}", f"a whole number {low}..{high}{about}",
                        fix=f"use a {unit} from {low} to {high}")
    return value


def read_choice(kind: Choice, node: Node, what: str, fields, ctx) -> str:
    text = node.text(what, kind.default)
    if text not in kind.choices:
        raise node.fail(f"unknown {what}", f"one of {join_names(kind.choices)}",
                        did_you_mean(text, kind.choices) or
                        "; ".join(f"{value}: {meaning}" for value, meaning in kind.options))
    return text


def read_directory(kind: Directory, node: Node, what: str, fields, ctx: Context) -> str:
    return resolve_directory(node, node.text(what, kind.example), kind, ctx)


def resolve_directory(node: Node, text: str, kind: Directory, ctx: Context) -> str:
    """DIR relative to the suite, made absolute: cases run from any working directory."""
    path = (ctx.base_dir / Path(text).expanduser()).resolve()
    if not path.is_dir():
        raise node.fail(f"{kind.what} directory not found", f"{kind.holds}, relative to the suite's "
                        f"directory {ctx.base_dir}",
                        found=f"{text!r} (no such directory: {path})", fix="create it, or fix the path")
    return str(path)


def read_dynamic_shape(kind: DynamicShapeValue, node: Node, what: str, fields, ctx) -> DynamicShape:
    return dynamic_shape(node, fields.get(kind.plugin_flag))


READERS: Dict[type, Callable[..., Any]] = {
    Flag: read_flag, Switch: read_flag, Names: read_names, Number: read_number,
    Choice: read_choice, Directory: read_directory, DynamicShapeValue: read_dynamic_shape,
}


def dynamic_shape(node: Node, plugin_node: Optional[Node]) -> DynamicShape:
    if isinstance(node.value, str) and node.value.strip() == "tuned":
        return DynamicShape(tuned=True)
    if not isinstance(node.value, dict) or not node.value:
        fix = did_you_mean(node.value, ["tuned"]) if isinstance(node.value, str) else ""
        raise node.fail("dynamic_shape must be tuned or ranges per input",
                        f"tuned, or min/opt/max per input: {RANGE_EXAMPLE}",
                        fix or "write dynamic_shape: tuned, or give each input's min, opt and max")
    ranges = {}
    for name, child in node.mapping(AnyName(), "dynamic_shape").items():
        parts = child.mapping(RANGE_KEYS, f"the range of {name!r}")
        missing = [k for k in RANGE_KEYS if k not in parts]
        if missing:
            raise child.fail(f"the range of input {name!r} has no {join_names(missing)}",
                             "min, opt and max, each a shape", fix=f"add {missing[0]}: [...]")
        ranges[name] = tuple(parse_dims(parts[k], k, dynamic=False) for k in RANGE_KEYS)
        try:
            DynamicShape.explicit({name: ranges[name]})
        except OptionError as e:
            raise child.fail(f"bad range for input {name!r}", "min <= opt <= max in every dim, one rank "
                             "for all three", found=str(e), fix="reorder or fix the dims") from None
    plugin = plugin_node.flag("disable_trt_plugin_fp16") if plugin_node is not None else False
    return DynamicShape.explicit(ranges, plugin)


def check_plugin_fp16(node: Node, ranges: Optional[Node]) -> None:
    if node.flag("disable_trt_plugin_fp16") and (ranges is None or not isinstance(ranges.value, dict)):
        raise node.fail("disable_trt_plugin_fp16 needs explicit ranges", "dynamic_shape with min/opt/max "
                        "per input beside it (it is an argument of set_trt_dynamic_shape_info)",
                        found="no dynamic_shape" if ranges is None else f"dynamic_shape: {ranges.value}",
                        fix="give dynamic_shape ranges, or remove disable_trt_plugin_fp16")


def resolve_directories(spec: RunModeSpec, node: Node, ctx: Context,
                        table: ToggleTable = TOGGLES) -> RunModeSpec:
    """A string-form run mode's directories (``trt_int8+calib_data=DIR``), relative to the suite."""
    changed = {row.name: resolve_directory(node, getattr(spec, row.name), row.kind, ctx)
               for row in table if isinstance(row.kind, Directory) and row.is_set(spec)}
    return replace(spec, **changed) if changed else spec


def check_model_ranges(dynamic: Optional[DynamicShape], node: Node, specs: Sequence[InputSpec],
                       model: str) -> None:
    """Explicit ranges name the model's inputs, in their rank, with the dims it fixes."""
    if dynamic is None or dynamic.tuned or not specs:
        return
    declared = {s.name: tuple(-1 if d is None else int(d) for d in s.shape) for s in specs}
    children = node.mapping(AnyName(), "dynamic_shape") if isinstance(node.value, dict) else {}
    for name, r in dynamic.ranges:
        at = children.get(name, node)
        if name not in declared:
            raise at.fail(f"model {model!r} has no input {name!r}", f"one of its inputs: {join_names(declared)}",
                          did_you_mean(name, list(declared)) or "use the model's input names",
                          found=repr(name))
        parts = at.mapping(RANGE_KEYS, f"the range of {name!r}") if at is not node else {}
        for key in RANGE_KEYS:
            check_rank(parts.get(key, at), name, declared[name], getattr(r, key), model)


def string_problem(e: OptionError) -> str:
    """parse_run_mode's message without the command line's framing and toggle list."""
    text = str(e).replace(f"; {TOGGLE_HELP}", "")
    return text[len("--run-mode: "):] if text.startswith("--run-mode: ") else text
