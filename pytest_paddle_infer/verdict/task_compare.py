"""Task-aware comparisons of one output (a suite's ``compare:``): topk, argmax, sorted, boxes;
``mismatched``/``total`` count samples or boxes. Pure numpy."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import List, Optional, Tuple

import numpy as np

from .compare import compare_rule
from .rows import TensorComparison
from .tolerances import Compare, Rule

BOX_COLUMNS = ("class", "score", "x1", "y1", "x2", "y2")
DEFAULT_IOU = 0.5
SHOWN_BOXES = 3  # unmatched boxes named per side


def describe(spec: Compare) -> str:
    """The comparison with its settings, defaults filled in: ``boxes(iou 0.5, score_min 0)``."""
    if spec.kind in ("topk", "argmax"):
        what = f"top-{spec.k}" if spec.kind == "topk" else "argmax"
        return f"{what} along axis {axis_of(spec)} (min_agreement {min_agreement(spec):g})"
    if spec.kind == "sorted":
        return f"sorted along axis {axis_of(spec)}"
    return (f"boxes (columns {', '.join(spec.columns or BOX_COLUMNS)}; iou >= "
            f"{spec.iou if spec.iou is not None else DEFAULT_IOU:g}; score_min {spec.score_min or 0.0:g})")


def axis_of(spec: Compare) -> int:
    return -1 if spec.axis is None else spec.axis


def min_agreement(spec: Compare) -> float:
    return 1.0 if spec.min_agreement is None else spec.min_agreement


def compare_task(name: str, actual: np.ndarray, expected: np.ndarray, rule: Rule,
                 counts: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> TensorComparison:
    """``counts``: (candidate, baseline) boxes per image, for boxes."""
    spec = rule.compare
    actual, expected = np.asarray(actual), np.asarray(expected)
    if spec.kind == "boxes":
        return compare_boxes(name, actual, expected, rule, counts)
    if actual.shape != expected.shape or not expected.size:
        row = compare_rule(name, actual, expected, rule)  # names the shape problem
        row.task, row.task_figures = describe(spec), "not compared: " + ("; ".join(row.problems) or "empty")
        return row
    axis = axis_of(spec)
    if not -expected.ndim <= axis < expected.ndim:
        row = compare_rule(name, actual, expected, rule, elementwise=False)
        row.problems.append(f"compare {spec.kind}: axis {axis} does not exist in shape "
                            f"{list(expected.shape)}")
        row.task = describe(spec)
        return row
    if spec.kind == "sorted":
        row = compare_rule(name, np.sort(actual, axis=axis), np.sort(expected, axis=axis), rule)
        row.task = describe(spec)
        row.task_figures = (f"{row.mismatched}/{row.total} sorted elements outside tolerance; "
                            f"max abs {row.max_abs:.6g} after sorting")
        return row
    return compare_ranks(name, actual, expected, rule)


def top_indices(values: np.ndarray, k: int) -> np.ndarray:
    """Per row, the indices of the k largest values as a sorted set (ties: lowest index)."""
    order = np.argsort(-values, axis=1, kind="stable")[:, :k]
    return np.sort(order, axis=1)


def compare_ranks(name: str, actual: np.ndarray, expected: np.ndarray, rule: Rule) -> TensorComparison:
    spec = rule.compare
    axis = axis_of(spec)
    row = compare_rule(name, actual, expected, rule, elementwise=False)  # figures, metric bounds
    row.task = describe(spec)
    k = 1 if spec.kind == "argmax" else int(spec.k)
    length = expected.shape[axis]
    if k > length:
        row.problems.append(f"compare topk: k={k} is larger than axis {axis} ({length} values)")
        return row
    a = np.moveaxis(actual, axis, -1).reshape(-1, length).astype(np.float64)
    e = np.moveaxis(expected, axis, -1).reshape(-1, length).astype(np.float64)
    top_a, top_e = top_indices(a, k), top_indices(e, k)
    agree = (top_a == top_e).all(axis=1)
    overlap = np.array([len(np.intersect1d(x, y)) for x, y in zip(top_a, top_e)]) / k
    samples = agree.size
    rate = float(agree.mean())
    row.mismatched, row.total = int(samples - agree.sum()), int(samples)
    what = "argmax" if k == 1 else f"top-{k} set"
    figures = [f"{what} agrees on {int(agree.sum())}/{samples} samples ({rate:.4g})"]
    if k > 1:
        figures.append(f"mean overlap {float(overlap.mean()):.4g}")
    row.task_figures = "; ".join(figures)
    if rate < min_agreement(spec):
        first = int(np.argmin(agree))
        where = np.unravel_index(first, np.moveaxis(expected, axis, -1).shape[:-1])
        show = (lambda t: str(int(t[0]))) if k == 1 else (lambda t: str([int(i) for i in t]))
        row.problems.append(
            f"{what} along axis {axis} agrees on {int(agree.sum())}/{samples} samples ({rate:.4g} < "
            f"min_agreement {min_agreement(spec):g}); first disagreement at sample "
            f"{list(map(int, where))}: baseline {show(top_e[first])}, candidate {show(top_a[first])}")
    return row


@dataclass
class Box:
    image: int
    row: int  # the row in the output
    cls: float
    score: float
    coords: np.ndarray  # x1, y1, x2, y2
    values: np.ndarray  # the compared columns: class, score, x1, y1, x2, y2

    def text(self) -> str:
        c = ", ".join(f"{v:.4g}" for v in self.coords)
        return f"[class {self.cls:g}, score {self.score:.4g}, {c}] (row {self.row}, image {self.image})"


@dataclass
class BoxMatch:
    matched: List[Tuple[Box, Box]] = field(default_factory=list)  # (candidate, baseline)
    missing: List[Tuple[Box, float]] = field(default_factory=list)  # baseline boxes, best IoU
    extra: List[Tuple[Box, float]] = field(default_factory=list)  # candidate boxes, best IoU


def column_index(spec: Compare, width: int) -> Optional[List[int]]:
    """The positions of class, score, x1, y1, x2, y2 in a row of ``width`` columns."""
    columns = list(spec.columns or BOX_COLUMNS)
    if len(columns) != width:
        return None
    return [columns.index(c) for c in BOX_COLUMNS]


def split_images(rows: np.ndarray, counts: Optional[np.ndarray]) -> List[np.ndarray]:
    """[N, C] rows into images by the count output; [B, N, C] along B; else one image."""
    if rows.ndim == 3:
        return list(rows)
    if counts is not None:
        counts = np.asarray(counts).reshape(-1).astype(np.int64)
        if counts.sum() == rows.shape[0] and (counts >= 0).all():
            return np.split(rows, np.cumsum(counts)[:-1])
    return [rows]


def read_boxes(rows: np.ndarray, counts: Optional[np.ndarray], index: List[int]) -> List[List[Box]]:
    images, offset = [], 0
    for i, part in enumerate(split_images(rows, counts)):
        boxes = []
        for j, r in enumerate(np.asarray(part, dtype=np.float64)):
            values = r[index]
            if values[0] < 0:  # class -1: Paddle's row for "no detection"
                continue
            boxes.append(Box(i, offset + j if rows.ndim == 2 else j, values[0], values[1], values[2:6], values))
        offset += len(part)
        images.append(boxes)
    return images


def iou(a: np.ndarray, b: np.ndarray) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(w, 0.0) * max(h, 0.0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / union) if union > 0 else float(np.array_equal(a, b))


def match_boxes(cand: List[Box], base: List[Box], threshold: float, score_min: float) -> BoxMatch:
    """Greedy, by falling score: each baseline box takes its class's free candidate of best IoU."""
    found = BoxMatch()
    free = list(range(len(cand)))
    for b in sorted(base, key=lambda x: -x.score):
        scores = [(iou(cand[i].coords, b.coords), i) for i in free if cand[i].cls == b.cls]
        best, i = max(scores, default=(0.0, -1))
        if best >= threshold and i >= 0:
            found.matched.append((cand[i], b))
            free.remove(i)
        elif b.score >= score_min:
            found.missing.append((b, best))
    for i in free:
        c = cand[i]
        if c.score >= score_min:
            best = max((iou(c.coords, b.coords) for b in base if b.cls == c.cls), default=0.0)
            found.extra.append((c, best))
    return found


def compare_boxes(name: str, actual: np.ndarray, expected: np.ndarray, rule: Rule,
                  counts: Optional[Tuple[np.ndarray, np.ndarray]]) -> TensorComparison:
    spec = rule.compare
    threshold = spec.iou if spec.iou is not None else DEFAULT_IOU
    score_min = spec.score_min or 0.0
    width = expected.shape[-1] if expected.ndim else 0
    index = column_index(spec, width) if expected.ndim in (2, 3) else None
    if index is None or actual.ndim != expected.ndim or actual.shape[-1] != width:
        row = compare_rule(name, actual, expected, rule, elementwise=False)
        row.task = describe(spec)
        row.problems.append(
            f"compare boxes: expected rows of {len(spec.columns or BOX_COLUMNS)} columns "
            f"({', '.join(spec.columns or BOX_COLUMNS)}) as [N, C] or [B, N, C]; got baseline "
            f"{list(expected.shape)}, candidate {list(actual.shape)} (set columns: to the layout)")
        return row
    count_a, count_e = counts if counts is not None else (None, None)
    cand_images = read_boxes(actual, count_a, index)
    base_images = read_boxes(expected, count_e, index)
    if len(cand_images) != len(base_images):  # counts unusable on one side: one image each
        cand_images, base_images = [sum(cand_images, [])], [sum(base_images, [])]
    found = BoxMatch()
    for c, b in zip(cand_images, base_images):
        part = match_boxes(c, b, threshold, score_min)
        found.matched += part.matched
        found.missing += part.missing
        found.extra += part.extra
    a = np.array([c.values for c, _ in found.matched]).reshape(-1, 6)
    e = np.array([b.values for _, b in found.matched]).reshape(-1, 6)
    row = compare_rule(name, a, e, rule)  # the matched boxes' values, element-wise
    row.expected_shape, row.actual_shape = tuple(expected.shape), tuple(actual.shape)
    row.expected_dtype, row.actual_dtype = str(expected.dtype), str(actual.dtype)
    row.task = describe(spec)
    off = int((~np.isclose(a, e, rtol=rule.rtol, atol=rule.atol)).any(axis=1).sum()) if a.size else 0
    row.mismatched = len(found.missing) + len(found.extra) + off
    row.total = len(found.matched) + len(found.missing) + len(found.extra)
    coord = float(np.abs(a[:, 2:] - e[:, 2:]).max()) if a.size else 0.0
    score = float(np.abs(a[:, 1] - e[:, 1]).max()) if a.size else 0.0
    row.task_figures = (f"{len(found.matched)} matched, {len(found.missing)} baseline box(es) "
                        f"unmatched, {len(found.extra)} candidate box(es) unmatched; worst matched "
                        f"coordinate error {coord:.4g}, score error {score:.4g}")
    for what, boxes in (("baseline", found.missing), ("candidate", found.extra)):
        if boxes:
            other = "candidate" if what == "baseline" else "baseline"
            shown = "; ".join(f"{b.text()} best IoU {best:.3g}" for b, best in boxes[:SHOWN_BOXES])
            more = f" and {len(boxes) - SHOWN_BOXES} more" if len(boxes) > SHOWN_BOXES else ""
            row.problems.append(f"{len(boxes)} {what} box(es) without a match in the {other} "
                                f"(class equal, IoU >= {threshold:g}): {shown}{more}")
    return row


def count_row(name: str, actual: np.ndarray, expected: np.ndarray, rule: Rule,
              boxes: TensorComparison) -> TensorComparison:
    """The boxes-per-image output: different counts fail only with the boxes comparison."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape == expected.shape and np.array_equal(actual, expected):
        return compare_rule(name, actual, expected, replace(rule, compare=None))
    row = compare_rule(name, actual, expected, replace(rule, compare=None), elementwise=False)
    row.problems = [p for p in row.problems if not p.startswith("shape:")]
    row.task = f"count of the boxes in {boxes.name}"
    a, e = actual.reshape(-1), expected.reshape(-1)
    row.total = max(a.size, e.size)
    row.mismatched = row.total - int((a[:min(a.size, e.size)] == e[:min(a.size, e.size)]).sum())
    verdict = "passed" if boxes.passed else "failed"
    row.task_figures = (f"boxes per image: baseline {e.tolist()}, candidate {a.tolist()}; judged by the "
                        f"boxes comparison of {boxes.name} ({verdict}: {boxes.task_figures})")
    if not boxes.passed:
        row.problems.append(f"box counts differ (baseline {e.tolist()}, candidate {a.tolist()}): "
                            f"see the boxes comparison of {boxes.name}")
    return row


def find_count_output(boxes_name: str, spec: Compare, expected: dict, positions: dict) -> Optional[str]:
    """``count:`` (a name or ``#N``), else the one integer 1-D output summing to the box rows."""
    if spec.count is not None:
        for name in expected:
            if name == spec.count or f"#{positions.get(name)}" == spec.count:
                return name
        return None
    rows = np.asarray(expected[boxes_name])
    if rows.ndim != 2:
        return None
    found = [n for n, v in expected.items() if n != boxes_name and np.asarray(v).ndim == 1
             and np.asarray(v).dtype.kind in "iu" and int(np.asarray(v).sum()) == rows.shape[0]]
    return found[0] if len(found) == 1 else None
