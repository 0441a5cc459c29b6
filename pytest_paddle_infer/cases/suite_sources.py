"""A suite model's ``source``: a zoo name, a model directory or file, or a Python builder
``"package.module:callable"`` with ``kwargs``. Builders are checked without importing them
(importing one usually imports paddle): the module must be found, and must define the name."""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
import sys
from dataclasses import replace
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Set, Tuple

from ..errors import PaddleInferError
from ..models.inputs import InputSpec
from ..models.source import ModelSource, find_model_files
from ..models.binding import BindingError, Signature, bind
from ..models.cache import ChildTimedOut, builder_signature, declared_inputs
from .suite_inputs import InputEntry, build_input, merge_entries
from .suite_nodes import AnyName, Context, Node, did_you_mean, error, join_names
from ..models.zoo import ZOO

BUILDER_PATTERN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def locate_module(module: str, search: Sequence[str]) -> Optional[Tuple[Optional[str], Optional[str]]]:
    """Where ``module`` would be imported from, without importing it: (the search directory it
    was found under, or None for an import hook of the environment; its source file, or None)."""
    parts = module.split(".")

    def descend(spec):
        for i in range(1, len(parts)):
            locations = spec.submodule_search_locations if spec else None
            if not locations:
                return None
            spec = PathFinder.find_spec(".".join(parts[:i + 1]), list(locations))
        return spec

    for entry in search:
        spec = descend(PathFinder.find_spec(parts[0], [entry]))
        if spec is not None:
            return entry, spec.origin if spec.has_location else None
    try:
        top = importlib.util.find_spec(parts[0])  # editable installs and other meta-path finders
    except (ImportError, ValueError):
        top = None
    spec = descend(top)
    return None if spec is None else (None, spec.origin if spec.has_location else None)


def top_level_names(source_file: str) -> Optional[set]:
    """Names a module defines at top level, or None when it cannot be told statically."""
    try:
        tree = ast.parse(Path(source_file).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    names: set = set()

    def visit(body):
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(stmt.name)
                if stmt.name == "__getattr__":
                    return False
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for alias in stmt.names:
                    if alias.name == "*":
                        return False
                    names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                for sub in ("body", "orelse", "finalbody", "handlers"):
                    for part in getattr(stmt, sub, []) or []:
                        if visit(part.body if isinstance(part, ast.ExceptHandler) else [part]) is False:
                            return False
        return True

    return names if visit(tree.body) else None


def builder_source(name: str, node: Node, ref: str, kwargs: Tuple[Tuple[str, Any], ...],
                   inputs: Tuple[InputSpec, ...], ctx: Context) -> ModelSource:
    module, _, attr = ref.partition(":")
    search = [str(ctx.base_dir), str(ctx.rootdir)] + [p for p in sys.path if p]
    found = locate_module(module, search)
    if found is None:
        raise node.fail(f"builder module {module!r} cannot be imported",
                        f"a module importable from the suite's directory ({ctx.base_dir}), the rootdir "
                        f"({ctx.rootdir}) or the environment", found=repr(ref),
                        fix=f"put {module.replace('.', '/')}.py beside the suite file, fix the module "
                        "name, or install its package")
    entry, origin = found
    fingerprint = ""
    if origin and origin.endswith(".py"):
        names = top_level_names(origin)
        if names is not None and attr not in names:
            public = sorted(n for n in names if not n.startswith("_"))
            raise node.fail(f"builder module {module!r} has no {attr!r}",
                            f"a callable defined in {origin}", found=f"{attr!r}; the module defines "
                            f"{join_names(public[:12]) or 'nothing public'}",
                            fix=did_you_mean(attr, public) or "name a function that returns a paddle.nn.Layer")
        # an edited builder must be exported again: its source is part of the cache key
        fingerprint = hashlib.sha256(Path(origin).read_bytes()).hexdigest()[:12]
    return ModelSource(name, "builder", ref, kwargs, inputs,
                       search_path=(entry,) if entry else (), fingerprint=fingerprint)


def parse_kwargs(node: Node) -> Tuple[Tuple[str, Any], ...]:
    def frozen(child: Node):
        v = child.value
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, (list, tuple)):
            return tuple(frozen(c) for c in child.items("a kwargs value", "[1, 2]"))
        raise child.fail("kwargs values must be plain data", "a number, string, boolean, null or a list of these")

    return tuple((k, frozen(c)) for k, c in node.mapping(AnyName(), "kwargs").items())


def resolve_source(name: str, fields: Mapping[str, Node], model_node: Node, inputs: Dict[str, InputEntry],
                   default_inputs: Mapping[str, InputEntry], used_defaults: Set[str],
                   ctx: Context) -> ModelSource:
    """The model's source, its inputs merged with what the suite says about them."""
    node = fields.get("source")
    if node is not None:
        ref = node.text("source", "resnet50, models/resnet50/ or my_pkg.nets:build_net")
    elif name in ZOO:
        ref, node = name, model_node
    else:
        raise model_node.fail(f"model {name!r} has no source and is not a zoo entry",
                              f"'source:' with a zoo name ({join_names(ZOO)}), a model directory or "
                              "file, or a builder 'package.module:callable'", found="no 'source' key",
                              fix=f"add source: under models.{name}" +
                              (f" ({did_you_mean(name, list(ZOO))})" if did_you_mean(name, list(ZOO)) else ""))
    kind = "builder" if BUILDER_PATTERN.match(ref) else "zoo" if ref in ZOO else "path"
    if "kwargs" in fields and kind != "builder":
        raise fields["kwargs"].fail("kwargs is only for builder sources",
                                    "no kwargs for a zoo or path model", fix="remove 'kwargs'")
    if kind == "builder":
        kwargs = parse_kwargs(fields["kwargs"]) if "kwargs" in fields else ()
        source = builder_source(name, node, ref, kwargs, (), ctx)
        try:
            signature = builder_signature(source, ctx.cache_dir, ctx.timeout)
        except ChildTimedOut as e:  # a builder that hangs: its child is killed, the suite says so
            raise node.fail(f"{e}", "a builder that returns its layer within the deadline",
                            found=f"{ref} still building after {ctx.timeout:g} s",
                            fix="make the builder return (does it wait for a download, a lock or "
                                "input?), or raise --paddle-timeout") from None
        names = builder_input_names(signature, inputs, default_inputs)
        used_defaults.update(n for n in names if n in default_inputs)
        merged = {n: merge_entries(default_inputs.get(n), inputs.get(n)) for n in names}
        if not merged:
            takes = f" (forward takes {', '.join(signature.names()) or 'nothing'})" if signature else ""
            raise model_node.fail(f"builder model {name!r} declares no inputs",
                                  "inputs: {x: {shape: [-1, 3, 224, 224], dtype: float32}}",
                                  found="no 'inputs'" + (f"; defaults.inputs has {join_names(default_inputs)}"
                                                         if default_inputs else "") + takes,
                                  fix="declare each input the layer's forward takes, by its parameter name")
        if signature is not None:  # inputs bind to forward's parameters by name: its order
            merged = {n: merged[n] for n in bound_order(name, signature, merged, fields, model_node)}
        specs = tuple(build_input(n, e, None, ctx, name) for n, e in merged.items())
        return replace(source, inputs=specs)
    if kind == "zoo":
        declared = ZOO[ref].inputs
        source = ModelSource(name, "zoo", ref)
    else:
        source, declared = path_source(name, node, ref, ctx)
    decl_names = [s.name for s in declared]
    for n, entry in inputs.items():
        if n not in decl_names:
            raise entry.node.fail(f"model {name!r} has no input {n!r}", f"one of its inputs: {join_names(decl_names)}",
                                  found=repr(n), fix=did_you_mean(n, decl_names) or "use the model's input names")
    used_defaults.update(s.name for s in declared if s.name in default_inputs)
    specs = (build_input(s.name, merge_entries(default_inputs.get(s.name), inputs.get(s.name)), s, ctx, name)
             for s in declared)
    return replace(source, inputs=tuple(specs))


def builder_input_names(signature: Optional[Signature], own: Mapping[str, InputEntry],
                        defaults: Mapping[str, InputEntry]) -> list:
    """The inputs a builder takes: its own, and each defaults input forward has a parameter of
    that name for (all when unknown); one required parameter takes a single defaults input."""
    if signature is None:
        return list(defaults) + [n for n in own if n not in defaults]
    takes = set(signature.names())
    names = [n for n in defaults if n in takes or n in own] + [n for n in own if n not in defaults]
    if not names and len(defaults) == 1 and sum(p.required for p in signature.named()) == 1:
        names = list(defaults)
    return names


def bound_order(name: str, signature: Signature, merged: Mapping[str, InputEntry],
                fields: Mapping[str, Node], model_node: Node) -> list:
    """The inputs in forward's order, or the suite error of an input forward cannot take."""
    try:
        return bind(signature, list(merged)).input_order()
    except BindingError as e:
        entry = merged.get(e.input_name) if e.input_name else None
        at = entry.node if entry is not None else fields.get("inputs", model_node)
        raise error(at.where, at.path, f"model {name!r}: {e.problem}", e.expected, e.found, e.fix) from None


def path_source(name: str, node: Node, ref: str, ctx: Context) -> Tuple[ModelSource, Tuple[InputSpec, ...]]:
    path = ctx.base_dir / Path(ref).expanduser()
    if not path.exists():
        close = did_you_mean(ref, list(ZOO))
        raise node.fail("unknown model source", f"a zoo name ({join_names(ZOO)}), a model directory or "
                        ".pdmodel/.json file relative to the suite, or a builder 'package.module:callable'",
                        found=f"{ref!r}: not a zoo entry, no such path {path}",
                        fix=close or "fix the path or the zoo name")
    try:
        prog, _ = find_model_files(str(path))
        declared = declared_inputs(prog, ctx.cache_dir, ctx.timeout)
    except PaddleInferError as e:
        raise node.fail("model files cannot be used", "a model directory or .pdmodel/.json file with "
                        "its .pdiparams", found=str(e)) from None
    return ModelSource(name, "path", str(prog.resolve())), declared
