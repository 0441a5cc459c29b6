"""Outputs that cannot fail under their own tolerance, judged on the baseline's values. Pure numpy."""
from __future__ import annotations

from typing import List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .compare import CHUNK, compare_arrays
from .metrics import METRICS
from .rows import TensorComparison
from .outputs import pair_outputs

SPREAD_FACTOR = 1.0  # std of the baseline within this many tolerances: flagged
IDENTICAL_FRACTION = 0.1  # two seeds' outputs this close are identical (pooled noise images vary little)
SUM_TOLERANCE = 1e-3  # |row sum - 1| of probabilities
OTHER_SEED_OFFSET = 1  # the second baseline's inputs: the case's seed + this

SeedPair = Tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray], Tuple[int, int]]


def probabilities(expected: np.ndarray, atol: float, rtol: float) -> Tuple[bool, bool]:
    """(rows of probabilities along the last axis, every value within tolerance of 0 or 1)."""
    if expected.dtype.kind != "f" or expected.ndim < 1 or expected.shape[-1] < 2 or not expected.size:
        return False, False
    flat = expected.reshape(-1, expected.shape[-1])
    step = max(1, CHUNK // flat.shape[1])
    one_hot = True
    for start in range(0, flat.shape[0], step):
        rows = flat[start:start + step].astype(np.float64)
        if not np.isfinite(rows).all() or rows.min() < -atol or rows.max() > 1.0 + atol:
            return False, False
        if np.abs(rows.sum(axis=1) - 1.0).max() > SUM_TOLERANCE:
            return False, False
        if one_hot:
            near = np.minimum(np.abs(rows), np.abs(1.0 - rows)) <= atol + rtol * np.abs(rows)
            one_hot = bool(near.all())
    return True, one_hot


def finite_mean(expected: np.ndarray) -> float:
    """The mean of the finite values, in chunks; nan when there are none."""
    flat = expected.reshape(-1)
    total, count = 0.0, 0
    for start in range(0, flat.size, CHUNK):
        part = flat[start:start + CHUNK].astype(np.float64)
        part = part[np.isfinite(part)]
        total, count = total + float(part.sum()), count + part.size
    return total / count if count else float("nan")


def constant_caught(row: TensorComparison, expected: np.ndarray) -> List[str]:
    """The scale-free bounds set that the baseline's mean as a constant candidate would break."""
    if expected.dtype.kind not in "fiu" or not np.isfinite(row.std_expected):
        return []
    s, m = row.std_expected, finite_mean(expected)
    r = (m * m + s * s) ** 0.5
    if not np.isfinite(m) or r == 0.0:
        return []
    return [x.bound for x in METRICS if x.constant and x.bound in row.bounds
            and x.problem(x.constant(m, s, r), row.bounds[x.bound])]


def reasons(row: TensorComparison, expected: np.ndarray,
            seeds: Optional[Tuple[np.ndarray, np.ndarray, Tuple[int, int]]] = None) -> List[str]:
    """Why a passing output cannot fail under its tolerance; empty when it can."""
    if not row.passed:
        return []
    if row.total == 0:
        return [f"empty: 0 elements (shape {list(row.expected_shape)})"]
    if row.task.startswith(("top-", "argmax")):  # the ranks decide, not the tolerance
        return []
    found = []
    prob, one_hot = probabilities(expected, row.atol, row.rtol)
    mean_abs = row.mean_abs_expected if np.isfinite(row.mean_abs_expected) else 0.0
    tol = row.atol + row.rtol * mean_abs  # the tolerance at the output's typical magnitude
    if one_hot:
        found.append("one-hot: every value is within tolerance of 0 or 1 (a saturated softmax), "
                     "only a changed argmax could fail it")
    elif row.total > 1 and np.isfinite(row.std_expected) and row.std_expected <= SPREAD_FACTOR * tol \
            and not constant_caught(row, expected):
        what = "flat: probabilities" if prob else "spread within tolerance: values"
        found.append(f"{what} {row.min_expected:.4g} .. {row.max_expected:.4g} with std "
                     f"{row.std_expected:.3g} within the tolerance {tol:.3g} "
                     f"(atol + rtol*mean|baseline|)")
    if seeds is not None:
        first, second, (seed_a, seed_b) = seeds
        if first.shape == second.shape:
            same = compare_arrays(row.name, second, first, row.atol * IDENTICAL_FRACTION,
                                  row.rtol * IDENTICAL_FRACTION)
            if same.passed:
                found.append(f"does not depend on the input: the same for input seeds {seed_a} "
                             f"and {seed_b} within a tenth of the tolerance (max abs "
                             f"{same.max_abs:.3g})")
    return found


def judge_outputs(rows: Sequence[TensorComparison], actual: Mapping[str, np.ndarray],
                  expected: Mapping[str, np.ndarray], seeds: Optional[SeedPair] = None) -> None:
    """Set ``row.vacuous`` on each output row; ``seeds``: the plain baseline's for two seeds."""
    for row, (output, _, a, e) in zip(rows, pair_outputs(actual, expected)):
        if a is None or e is None:
            continue
        pair = ((np.asarray(seeds[0][output]), np.asarray(seeds[1][output]), seeds[2])
                if seeds is not None and output in seeds[0] and output in seeds[1] else None)
        row.vacuous = reasons(row, np.asarray(e), pair)


def mark_strict(rows: Sequence[TensorComparison]) -> None:
    """--paddle-strict: an output that cannot fail fails the case."""
    for row in rows:
        if row.vacuous and row.passed:
            row.problems.append("cannot fail under its tolerance: " + ", ".join(row.vacuous))
