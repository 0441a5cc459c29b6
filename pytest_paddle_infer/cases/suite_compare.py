"""The ``compare:`` key of an output's tolerance entry: a task-aware comparison
(verdict/task_compare.py), read and checked with file:line like every suite key.

    compare: boxes                                   # [class, score, x1, y1, x2, y2] rows
    compare: {boxes: [class, score, x1, y1, x2, y2, "-"], iou: 0.7, score_min: 0.3, count: "#1"}
    compare: {topk: 5, min_agreement: 0.99}          # axis: -1 unless given
    compare: argmax                                  # or {argmax: 1, min_agreement: 0.999}
    compare: sorted                                  # or {sorted: 0}
"""
from __future__ import annotations

import math

from .suite_nodes import DOCS, Node, did_you_mean, join_names
from ..verdict.tolerances import Compare

KINDS = ("topk", "argmax", "sorted", "boxes")
OPTIONS = {"topk": ("axis", "min_agreement"), "argmax": ("min_agreement",), "sorted": (),
           "boxes": ("iou", "score_min", "count")}
EXAMPLE = "boxes, argmax, sorted, {topk: 5, min_agreement: 0.99} or {boxes: [class, score, x1, y1, x2, y2], iou: 0.5}"
BOX_COLUMN_NAMES = ("class", "score", "x1", "y1", "x2", "y2", "-")


def parse_compare(node: Node) -> Compare:
    if isinstance(node.value, str):
        kind = node.value.strip()
        if kind == "topk":
            raise node.fail("compare topk needs k", "{topk: K}, e.g. {topk: 5}", found="'topk'",
                            fix="write compare: {topk: 5}")
        if kind not in KINDS:
            raise node.fail("unknown comparison", f"one of {join_names(KINDS)}, e.g. {EXAMPLE}",
                            did_you_mean(kind, KINDS) or f"see {DOCS}, 'Tolerance entry'")
        return Compare(kind)
    if not isinstance(node.value, dict):
        raise node.fail("compare must be a name or a mapping", f"e.g. {EXAMPLE}")
    kinds = [k for k in node.value if k in KINDS]
    if len(kinds) != 1:
        found = f"{'no' if not kinds else 'several'} comparison kinds ({join_names(kinds) or 'keys ' + join_names(node.value)})"
        raise node.fail("compare names one comparison", f"exactly one of {join_names(KINDS)} as a key, "
                        f"e.g. {{topk: 5}}", found=found,
                        fix="keep one comparison per output" if kinds else
                        did_you_mean(next(iter(node.value), ""), KINDS))
    kind = kinds[0]
    fields = node.mapping((kind,) + OPTIONS[kind], f"compare {kind}")
    main = fields[kind]
    values = {}
    if kind == "topk":
        values["k"] = main.integer("topk", 1)
    elif kind in ("argmax", "sorted"):
        if main.value is not True:
            values["axis"] = axis(main, kind)
    elif main.value is not True:
        columns = [c.text("a box column", "x1") for c in main.items(
            "boxes", "true, or the columns: [class, score, x1, y1, x2, y2]")]
        for c, item in zip(columns, main.items("boxes", "")):
            if c not in BOX_COLUMN_NAMES:
                raise item.fail("unknown box column", f"one of {join_names(BOX_COLUMN_NAMES)} ('-' skips a "
                                "column)", did_you_mean(c, BOX_COLUMN_NAMES))
        absent = [c for c in BOX_COLUMN_NAMES[:-1] if columns.count(c) != 1]
        if absent:
            raise main.fail("box columns must name class, score, x1, y1, x2 and y2 once each",
                            "e.g. [class, score, x1, y1, x2, y2] or [\"-\", class, score, x1, y1, x2, y2]",
                            fix=f"check {join_names(absent)}")
        values["columns"] = tuple(columns)
    if "axis" in fields:
        values["axis"] = axis(fields["axis"], "axis")
    for key, low, high in (("min_agreement", 0.0, 1.0), ("iou", 0.0, 1.0),
                           ("score_min", -math.inf, math.inf)):
        if key in fields:
            values[key] = fields[key].number(key, low, high)
    if "count" in fields:
        values["count"] = fields["count"].text("count", '"#1" (the output holding boxes per image)')
    return Compare(kind, **values)


def axis(node: Node, what: str) -> int:
    v = node.value
    if isinstance(v, bool) or not isinstance(v, int):
        raise node.fail(f"{what} must be an axis", "a whole number such as -1 (the last axis) or 1, "
                        "or true for the last axis", "write a bare whole number (no quotes)")
    return int(v)
