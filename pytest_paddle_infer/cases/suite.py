"""Suite files: YAML that declares cases per model, shape set and run mode, with tolerances at
the level they belong to (docs/suites.md). ``load_suite`` builds one ``Case`` per model x shape
set x run mode, in file order; ``marker_cases`` does the same for a ``paddle_case`` marker. Every
problem is a ``SuiteError`` naming ``file:line``, the key, what was expected and found, and the fix."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .case import Case
from .tensor_selection import Selection
from ..errors import OptionError, PaddleInferError, SuiteError
from ..models.program import DEFAULT as DEFAULT_PROGRAM, LEGACY, PROGRAM_HELP, PROGRAMS, never_re_exported
from ..models.source import display_name, find_model_files
from .baseline_forms import BASELINE_FORMS as BASELINES, parse_baseline
from ..modes.run_modes import RUN_MODES, TOGGLE_HELP, RunModeSpec, canonical_mode, parse_run_mode
from ..modes.cpu_threads import MAX_THREADS, threads_problem
from .suite_inputs import InputEntry, merge_entries, parse_input_entries, parse_shape_sets
from .suite_nodes import (DOCS, AnyName, Context, Node, Where, did_you_mean, error, join_names,
                          read_yaml, short)
from .suite_modes import (MODE_KEY_HINTS, SPELLING_HINTS, TOGGLE_KEYS, build_spec, check_model_ranges,
                          read_toggles, resolve_directories, string_problem)
from .suite_sources import BUILDER_PATTERN, resolve_source
from ..verdict.metrics import METRICS
from ..verdict.tolerances import RULE_KEYS, Rule
from .tolerance_precedence import case_tolerances
from .suite_compare import parse_compare
from ..models.zoo import ZOO

__all__ = ["SuiteError", "Context", "Where", "SuiteCase", "load_suite", "marker_cases", "marker_rule"]

TOP_KEYS = ("defaults", "models")
SHARED_KEYS = ("inputs", "shapes", "run_modes", "tolerances", "skip", "xfail")  # defaults and models
DEFAULTS_KEYS = ("baseline", "seed", "threads", "intermediates") + SHARED_KEYS + ("program",)
MODEL_KEYS = ("source", "kwargs") + SHARED_KEYS + ("program",)
RUN_MODE_KEYS = ("mode",) + TOGGLE_KEYS + ("tolerances", "skip", "xfail")
OUTPUT_RULE_KEYS = RULE_KEYS + ("compare",)  # a task-aware comparison is per output
TOLERANCE_KEYS = RULE_KEYS + ("outputs", "tensors")
XFAIL_KEYS = ("reason", "strict")
MARKER_KEYS = ("model", "name", "kwargs", "inputs", "shapes", "run_modes", "seed", "baseline",
               "threads", "tolerances", "program") + RULE_KEYS
MODE_EXAMPLE = "[cpu_fp32, onednn_bf16] or [{mode: onednn_fp32, ir_optim: false}]"

# keys written at the wrong level get a fix that says where they belong
TOP_HINTS = {k: f"suite-wide {k} go under 'defaults:'" for k in DEFAULTS_KEYS}
MODEL_HINTS = {**{k: f"{k} is suite-wide: put it under 'defaults:'" for k in ("seed", "baseline")},
               **MODE_KEY_HINTS, "model": "the key is 'source'",
               "name": "the model's name is its key under 'models:'"}


@dataclass(frozen=True)
class SuiteCase:
    case: Case
    where: Where  # the model's entry
    skip: Optional[str] = None
    xfail: Optional[str] = None
    xfail_strict: bool = False
    model_name: str = ""  # the key under models:
    mode_path: Tuple = ()  # the keys to its run-mode item: ("models", name, "run_modes", 0)


@dataclass(frozen=True)
class Layer:
    """What one level (suite defaults, a model, a run mode) says about tolerances."""

    rule: Rule = Rule()
    outputs: Tuple[Tuple[str, Rule], ...] = ()
    tensors: Tuple[Tuple[str, Rule], ...] = ()


@dataclass(frozen=True)
class Reasons:
    skip: Optional[str] = None
    xfail: Optional[str] = None
    strict: bool = False

    def under(self, higher: "Reasons") -> "Reasons":
        """``higher`` (the more specific level) where it says something, else this."""
        xfail = higher if higher.xfail is not None else self
        return Reasons(higher.skip or self.skip, xfail.xfail, xfail.strict)


@dataclass(frozen=True)
class ModeEntry:
    spec: RunModeSpec
    layer: Layer
    reasons: Reasons
    where: Where
    ranges_at: Optional[Node] = None  # where explicit dynamic-shape ranges were written
    path: Tuple = ()  # the keys to this item in the suite (suite_writer.py rewrites tolerances)


@dataclass
class Defaults:
    """The suite's ``defaults:``, read and checked once; models take what they do not set."""

    seed: int
    baseline: str
    threads: Optional[int]
    layer: Layer = Layer()
    reasons: Reasons = Reasons()
    modes: Optional[List[ModeEntry]] = None
    shapes: Optional[Node] = None  # checked per model: only a model's inputs give them meaning
    mode_node: Optional[Node] = None
    inputs: Dict[str, InputEntry] = field(default_factory=dict)
    intermediates: str = "none"  # none | all | globs: which intermediate tensors to compare
    program: Optional[Node] = None  # default | legacy for every model (read per model)
    used: set = field(default_factory=set)  # "shapes", "run_modes", and input names models took

    def check_all_used(self) -> None:
        """Defaults no model took were written for nothing: an error rather than ignored."""
        for name, entry in self.inputs.items():
            if name not in self.used:
                raise entry.node.fail(f"defaults input {name!r} matches no model's input",
                                      "the name of an input of at least one model", found=repr(name),
                                      fix="fix the name or remove it")
        for key, node in (("shapes", self.shapes), ("run_modes", self.mode_node)):
            if node is not None and key not in self.used:
                raise node.fail(f"defaults.{key} is used by no model: every model sets its own",
                                f"{key} that some model takes", found=f"{key} under every model",
                                fix=f"remove defaults.{key}, or drop {key} from a model that should use them")


RANGES = {m.bound: (m.low, m.high) for m in METRICS}  # atol, rtol: >= 0


def parse_rule(fields: Mapping[str, Node]) -> Rule:
    values = {key: fields[key].number(key, *RANGES.get(key, (0.0, math.inf))) for key in RULE_KEYS
              if key in fields}
    if "compare" in fields:
        values["compare"] = parse_compare(fields["compare"])
    return Rule(**values)


def parse_tolerances(node: Optional[Node]) -> Layer:
    if node is None:
        return Layer()
    fields = node.mapping(TOLERANCE_KEYS, "tolerances", {
        "compare": "compare is per output: write it under tolerances.outputs, e.g. "
                   "outputs: {'#0': {compare: {topk: 5}}}"})
    named = {}
    for key in ("outputs", "tensors"):
        entries = []
        if key in fields:
            what = "an output name" if key == "outputs" else "a tensor-name glob"
            allowed = OUTPUT_RULE_KEYS if key == "outputs" else RULE_KEYS
            hints = {} if key == "outputs" else {
                "compare": "compare applies to outputs: write it under tolerances.outputs"}
            for name, child in fields[key].mapping(AnyName(), f"tolerances.{key}").items():
                rule = parse_rule(child.mapping(allowed, f"the tolerance of {name!r}", hints))
                if rule == Rule():
                    raise child.fail(f"{what} with no tolerance", f"at least one of {join_names(allowed)}")
                entries.append((name, rule))
        named[key] = tuple(entries)
    return Layer(parse_rule(fields), named["outputs"], named["tensors"])


def parse_reasons(fields: Mapping[str, Node]) -> Reasons:
    skip = xfail = None
    strict = False
    if "skip" in fields:
        skip = fields["skip"].text("skip", 'skip: "needs a GPU"  (the reason is required)')
    if "xfail" in fields:
        node = fields["xfail"]
        if isinstance(node.value, dict):
            parts = node.mapping(XFAIL_KEYS, "xfail")
            if "reason" not in parts:
                raise node.fail("xfail needs a reason", 'xfail: {reason: "...", strict: true}')
            xfail = parts["reason"].text("xfail.reason", '"known bf16 drift, issue 12"')
            strict = parts["strict"].flag("xfail.strict") if "strict" in parts else False
        else:
            xfail = node.text("xfail", 'xfail: "known bf16 drift"  (the reason is required)')
    return Reasons(skip, xfail, strict)


def parse_mode_name(node: Node, text: str) -> str:
    try:
        return canonical_mode(text)
    except OptionError:
        raise node.fail("unknown run mode", f"one of {join_names(RUN_MODES)}",
                        did_you_mean(text.lower(), list(RUN_MODES)) or
                        "pick a run mode from the list", found=repr(text)) from None


def parse_run_modes(node: Node, ctx: Context, at: Tuple = ()) -> List[ModeEntry]:
    """``at``: the keys to the run_modes list in the suite, () for a marker's."""
    entries = []
    items = node.items("run_modes", MODE_EXAMPLE)
    if not items:
        raise node.fail("run_modes is empty", f"at least one run mode, e.g. {MODE_EXAMPLE}")
    for index, item in enumerate(items):
        path = at + (index,) if at else ()
        if isinstance(item.value, str):
            name, _, _ = item.value.partition("+")
            parse_mode_name(item, name)
            try:
                spec = parse_run_mode(item.value)
            except OptionError as e:
                raise item.fail("bad run-mode toggle", TOGGLE_HELP, "fix the toggle, or write the run "
                                f"mode as a mapping (see {DOCS})",
                                found=f"{item.value!r} ({string_problem(e)})") from None
            spec = resolve_directories(spec, item, ctx)  # relative to the suite (calib_data)
            entries.append(ModeEntry(spec, Layer(), Reasons(), item.where, item, path))
            continue
        if not isinstance(item.value, dict):
            raise item.fail("a run mode must be a name or a mapping", f"e.g. {MODE_EXAMPLE}")
        if "mode" not in item.value:
            hint = ""
            if len(item.value) == 1 and str(next(iter(item.value))).lower() in RUN_MODES:
                hint = f"write it as '- mode: {next(iter(item.value))}' with its settings beside 'mode'"
            raise item.fail("run mode mapping without 'mode'", "a mapping with 'mode: <run mode>'",
                            hint or "add 'mode: <run mode>'")
        fields = item.mapping(RUN_MODE_KEYS, "a run mode", SPELLING_HINTS)
        mode = parse_mode_name(fields["mode"], fields["mode"].text("mode", "onednn_fp32"))
        spec = build_spec(mode, fields, read_toggles(fields, ctx), item)
        entries.append(ModeEntry(spec, parse_tolerances(fields.get("tolerances")),
                                 parse_reasons(fields), item.where, fields.get("dynamic_shape"), path))
    return entries


def model_cases(name: str, model_node: Node, fields: Mapping[str, Node], defaults: Defaults,
                ctx: Context, model_layer: Optional[Layer] = None) -> List[SuiteCase]:
    """One case per shape set x run mode of one model, with its tolerance layers resolved."""
    inputs = parse_input_entries(fields["inputs"]) if "inputs" in fields else {}
    source = resolve_source(name, fields, model_node, inputs, defaults.inputs, defaults.used, ctx)
    file_nodes = {}  # where each file-fed input names its file, for messages about it
    for spec in source.inputs:
        entry = merge_entries(defaults.inputs.get(spec.name), inputs.get(spec.name))
        file_nodes[spec.name] = entry.fields.get("file", model_node) if entry else model_node
    if "shapes" not in fields and defaults.shapes is not None:
        defaults.used.add("shapes")
    shape_sets = parse_shape_sets(fields.get("shapes", defaults.shapes), source.inputs, file_nodes,
                                  name, model_node)
    if "run_modes" in fields:
        modes = parse_run_modes(fields["run_modes"], ctx, ("models", name, "run_modes") if ctx.suite else ())
    elif defaults.modes is not None:
        modes = defaults.modes
        defaults.used.add("run_modes")
    else:
        raise model_node.fail(f"model {name!r} has no run modes", f"run_modes under the model or under "
                              f"defaults, e.g. run_modes: {MODE_EXAMPLE}", found="no 'run_modes'",
                              fix="add run_modes")
    program = read_program(name, source, fields.get("program", defaults.program))
    for mode in modes:  # ranges are checked per model: only its inputs give them meaning
        check_model_ranges(mode.spec.dynamic_shape, mode.ranges_at or model_node, source.inputs, name)
    suite_layer = defaults.layer
    if model_layer is None:
        model_layer = parse_tolerances(fields.get("tolerances"))
    model_reasons = defaults.reasons.under(parse_reasons(fields))
    cases = []
    for shapes in shape_sets:
        for mode in modes:
            tolerances = case_tolerances(mode.spec.mode, (suite_layer, model_layer, mode.layer))
            case = Case(model=source, run_mode=mode.spec, tolerances=tolerances, shapes=shapes,
                        baseline=defaults.baseline, seed=defaults.seed, threads=defaults.threads,
                        intermediates=defaults.intermediates, program=program, origin=str(model_node.where))
            reasons = model_reasons.under(mode.reasons)
            cases.append(SuiteCase(case, model_node.where, reasons.skip, reasons.xfail, reasons.strict,
                                   name, mode.path))
    return cases


def read_program(name: str, source, node: Optional[Node]) -> str:
    """The ``program`` a model's cases check (models/program.py)."""
    if node is None:
        return DEFAULT_PROGRAM
    text = node.text("program", "legacy")
    if text not in PROGRAMS:
        raise node.fail("unknown program", PROGRAM_HELP, did_you_mean(text.lower(), PROGRAMS) or
                        f"write one of {join_names(PROGRAMS)}", found=repr(text))
    if text == LEGACY and source.kind == "path":
        raise node.fail(never_re_exported(source), "program: default for a model file",
                        f"set 'program: default' under model {name!r}, or remove the key",
                        found="program: legacy")
    return text


def claim_goldens(node: Node, baseline: str) -> None:
    """Goldens --paddle-update-goldens will rewrite are the plugin's, or the suite's error."""
    from ..ownership import OwnershipError, claim_goldens_of

    try:
        claim_goldens_of(baseline, f"baseline {node.value}")
    except OwnershipError as e:
        raise node.fail(str(e), "a directory of goldens paddle-infer recorded, or an empty one") from None


def read_defaults(node: Optional[Node], ctx: Context) -> Defaults:
    fields = node.mapping(DEFAULTS_KEYS, "defaults", MODE_KEY_HINTS) if node is not None else {}
    forced = dict(ctx.forced)
    seed = fields["seed"].integer("seed", 0) if "seed" in fields else ctx.seed
    threads = fields["threads"].integer("threads", 1) if "threads" in fields else ctx.threads
    if "threads" in fields and threads_problem(threads):
        raise fields["threads"].fail(f"threads {threads}: {threads_problem(threads)}",
                                     f"a whole number 1..{MAX_THREADS}", f"use at most {MAX_THREADS}")
    baseline = ctx.baseline
    if "baseline" in fields:
        text = fields["baseline"].text("baseline", "auto")
        try:  # golden:DIR is relative to the suite file
            baseline = parse_baseline(text, ctx.base_dir)
        except OptionError:
            raise fields["baseline"].fail("unknown baseline", f"one of {join_names(BASELINES)}",
                                          did_you_mean(text, BASELINES)) from None
        if ctx.update_goldens and "baseline" not in dict(ctx.forced):  # else never written
            claim_goldens(fields["baseline"], baseline)
    intermediates = "none"
    if "intermediates" in fields:
        text = fields["intermediates"].text("intermediates", "none")
        try:
            intermediates = Selection(text).spec
        except OptionError:
            raise fields["intermediates"].fail("no tensors selected", "none, all, or globs such as "
                                               "'relu_*,conv2d'", "") from None
    return Defaults(
        forced.get("seed", seed), forced.get("baseline", baseline), forced.get("threads", threads),
        intermediates=intermediates, program=fields.get("program"),
        layer=parse_tolerances(fields.get("tolerances")), reasons=parse_reasons(fields),
        modes=parse_run_modes(fields["run_modes"], ctx, ("defaults", "run_modes") if ctx.suite else ())
        if "run_modes" in fields else None,
        shapes=fields.get("shapes"), mode_node=fields.get("run_modes"),
        inputs=parse_input_entries(fields["inputs"]) if "inputs" in fields else {})


def load_suite(path: Path, ctx: Context) -> List[SuiteCase]:
    """Every case a suite file declares, in file order; a SuiteError for anything wrong."""
    top = Node(read_yaml(Path(path), ctx.file), Where(ctx.file, 1), "")
    if not isinstance(top.value, dict):
        raise top.fail("a suite must be a mapping", "a mapping with 'models:' and optionally 'defaults:'",
                       fix=f"see {DOCS} for a full example")
    fields = top.mapping(TOP_KEYS, "a suite", TOP_HINTS)
    if "models" not in fields:
        raise top.fail("the suite declares no models", "a 'models:' mapping", found="no 'models' key",
                       fix="add models: with at least one model")
    defaults = read_defaults(fields.get("defaults"), ctx)
    models = fields["models"]
    if not isinstance(models.value, dict) or not models.value:
        raise models.fail("models must be a non-empty mapping", "model name -> its settings, e.g. "
                          "models: {resnet50: {shapes: [[1, 3, 224, 224]]}}")
    cases: List[SuiteCase] = []
    for name, node in models.mapping(AnyName(), "models").items():
        if not re.match(r"^[\w.\-]+$", name):
            raise error(node.where, "models", "a model name with characters test ids cannot take",
                         "letters, digits, '_', '-' and '.'", repr(name), "rename the model")
        model_fields = node.mapping(MODEL_KEYS, f"model {name!r}", MODEL_HINTS)
        cases.extend(model_cases(name, node, model_fields, defaults, ctx))
    defaults.check_all_used()
    check_unique(cases)
    return cases


def check_unique(cases: Sequence[SuiteCase]) -> None:
    seen: Dict[str, SuiteCase] = {}
    for sc in cases:
        if sc.case.id in seen:
            raise error(sc.where, "", f"two cases have the id {sc.case.id!r}", "one case per model, shape "
                         "set and run mode", f"a repeated shape set or run mode (first at {seen[sc.case.id].where})",
                         "remove the repeat, or give the run modes different toggles")
        seen[sc.case.id] = sc


def marker_cases(args: Sequence[Any], kwargs: Mapping[str, Any], where: Where, ctx: Context) -> List[SuiteCase]:
    """The cases a ``paddle_case`` marker declares: a suite model entry's schema, tolerances direct."""
    ctx = replace(ctx, suite=False)  # no file holds these cases: nothing to rewrite
    node = Node(dict(kwargs), where, "paddle_case")
    if args:
        raise node.fail("paddle_case takes keyword arguments only", "paddle_case(model=..., shapes=..., "
                        "run_modes=..., atol=...)", found=f"positional {short(list(args))}",
                        fix=f"write model={args[0]!r}")
    fields = node.mapping(MARKER_KEYS, "paddle_case")
    if "model" not in fields:
        raise node.fail("paddle_case needs a model", "model='tiny_cnn' (a zoo name, a path or "
                        "'package.module:callable')", found="no model")
    ref = fields["model"].text("model", "'tiny_cnn'")
    if "name" in fields:
        name = fields["name"].text("name", "'my_net'")
    elif BUILDER_PATTERN.match(ref):
        name = ref.partition(":")[2]
    elif ref in ZOO or not (ctx.base_dir / ref).exists():
        name = ref
    else:
        try:
            name = display_name(find_model_files(str(ctx.base_dir / ref))[0])
        except PaddleInferError:
            name = Path(ref).stem
    model_fields = {k: v for k, v in fields.items() if k in MODEL_KEYS}
    model_fields["source"] = fields["model"]
    if "tolerances" in fields and any(k in fields for k in RULE_KEYS):
        given = [k for k in RULE_KEYS if k in fields and k in (fields["tolerances"].value or {})]
        if given:
            raise node.fail(f"{given[0]} given twice", f"{given[0]} either directly or in tolerances",
                            found=f"{given[0]}= and tolerances={{{given[0]!r}: ...}}", fix="keep one")
    layer = parse_tolerances(fields.get("tolerances"))
    layer = replace(layer, rule=parse_rule(fields).over(layer.rule))
    defaults = read_defaults(Node({k: fields[k].value for k in ("seed", "baseline", "threads") if k in fields},
                                  where, "paddle_case"), ctx)
    cases = model_cases(name, node, model_fields, defaults, ctx, model_layer=layer)
    check_unique(cases)
    return cases


def marker_rule(args: Sequence[Any], kwargs: Mapping[str, Any], where: Where) -> Rule:
    """The Rule of a ``paddle_tolerance(atol=, rtol=, cosine_min=)`` marker, checked loudly."""
    node = Node(dict(kwargs), where, "paddle_tolerance")
    if args:
        raise node.fail("paddle_tolerance takes keyword arguments only", "paddle_tolerance(atol=1e-3, rtol=1e-3)",
                        found=f"positional {short(list(args))}", fix="name them: atol=..., rtol=...")
    rule = parse_rule(node.mapping(RULE_KEYS, "paddle_tolerance"))
    if rule == Rule():
        raise node.fail("paddle_tolerance sets nothing", "at least one of atol, rtol, cosine_min",
                        found="no arguments")
    return rule
