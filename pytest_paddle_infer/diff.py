"""Compare two saved runs offline, tensor by tensor, B against A as a candidate against its baseline.

    paddle-infer-diff A.npz B.npz [--atol 1e-4] [--rtol 1e-4] [--report DIR]   (or two directories)

Exit status: 0 when every tensor is within tolerance, 1 when one is not, 2 on a usage error.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from .cases.tensor_selection import Selection, op_label
from .engine.capture import CandidateComparer
from .engine.saved_tensors import saved_tensors
from .errors import OptionError
from .goldens import RUN, GoldenError, load_golden
from .protocol import CaseResult
from .report.case_files import write_case, write_index
from .report.text import divergence_lines
from .session.options import Option, check_directory
from .verdict.compare import compare_arrays
from .verdict.outputs import pair_outputs
from .verdict.rows import TABLE_COLUMNS, TensorComparison, format_table, table_rows
from .verdict.tolerances import Rule

PROG = "paddle-infer-diff"


class DiffError(Exception):
    """Two saved runs that cannot be compared; the message says why."""


def diff_files(a: Path, b: Path, atol: float = 1e-4, rtol: float = 1e-4, tensors: str = "all"):
    """The CaseResult of B against A: intermediates in B's execution order, then outputs."""
    what, fix = "saved run", "record it again (--paddle-save-goldens or --paddle-save-runs)"
    try:
        ref, run = load_golden(a, what, fix), load_golden(b, what, fix)
    except GoldenError as e:
        raise DiffError(str(e)) from None
    ref_digest = ref.meta.get("inputs", {}).get("digest")
    run_digest = run.meta.get("inputs", {}).get("digest")
    if ref_digest != run_digest:
        raise DiffError(f"{a} and {b} were recorded from other inputs (digest {ref_digest} and "
                        f"{run_digest}): no comparison of them means anything")
    rule = Rule(atol=atol, rtol=rtol)
    try:
        selection = Selection(tensors)  # as the sessions' intermediates
    except OptionError as e:
        raise DiffError(str(e).replace("--paddle-intermediates", "--tensors")) from None
    result = CaseResult(str(run.meta.get("case_id", b.name)), [], describe_saved(ref),
                        describe_saved(run), str(run_digest))
    ref_store = run_store = None
    try:
        ref_store = saved_tensors(a, ref.meta)
        run_store = saved_tensors(b, run.meta)
    except GoldenError as e:
        if ref_store is not None:
            ref_store.remove()
        raise DiffError(str(e)) from None
    try:
        if ref_store is not None and run_store is not None:
            records = run_store.records
            if selection.globs and not any(selection.wants(r.name, r.op_type) for r in records):
                kinds = ", ".join(sorted({op_label(r.op_type) for r in records}))  # rather than outputs alone
                raise DiffError(f"--tensors {tensors!r} selects none of the {len(records)} intermediate "
                                f"tensors of {b}; globs match tensor names or op types ({kinds})")
            comparer = CandidateComparer(ref_store, selection, lambda name: rule, lambda name, op: True)
            for record in run_store.records:
                if comparer.selection.wants(record.name, record.op_type):
                    comparer.add(record.op_type, record.name, run_store.load(record))
            result.intermediates = comparer.rows
            if result.intermediates and not any(r.matched for r in result.intermediates):
                # both runs hold tensors, yet none compared: never a verdict on outputs alone
                raise DiffError(f"none of the {len(result.intermediates)} intermediate tensors of "
                                f"{b} pairs with one of {a} (by name or by structure and values): "
                                f"were they recorded from the same program?")
        elif ref_store is not None or run_store is not None:
            missing = b if run_store is None else a
            result.notes.append(f"{missing} holds no intermediate tensors: outputs compared only")
    finally:
        for store in (ref_store, run_store):
            if store is not None:
                store.remove()
    for _, name, actual, expected in pair_outputs(run.outputs, ref.outputs):
        if actual is None or expected is None:
            row = TensorComparison(name, () if expected is None else expected.shape,
                                   () if actual is None else actual.shape, "", "", atol, rtol)
            row.problems.append(f"missing from {b.name}" if actual is None else f"missing from {a.name}")
        else:
            row = compare_arrays(name, actual, expected, atol, rtol)
        result.rows.append(row)
    program_a, program_b = ref.meta.get("program"), run.meta.get("program")
    if program_a:
        result.program = f"{program_a.get('format')} {program_a.get('file')}"
    if program_a != program_b:
        result.notes.append(f"program formats differ: {program_a} and {program_b}; tensors "
                            f"pair by structure and values where names differ")
    return result


def describe_saved(golden) -> str:
    """One line: what a saved run is, when, by what, on what."""
    meta = golden.meta
    env = meta.get("environment", {})
    role = ("run of " + str(meta.get("run_mode")) if meta.get("role") == RUN
            else f"baseline {meta.get('baseline', '?')} (golden)")
    program = meta.get("program") or {}
    parts = [f"{golden.path}: {meta.get('case_id', '?')}, {role}",
             f"recorded {meta.get('recorded_at', '?')} by {env.get('paddle', '?')}"
             + (f" (commit {str(env['commit'])[:10]})" if env.get("commit") else "")
             + f" on {env.get('device', '?')}" + (f", {env['cpu']}" if env.get("cpu") else ""),
             f"program {program.get('format', '?')} {program.get('file', '?')}",
             f"{len(meta.get('intermediates') or ())} intermediate tensors"]
    return "; ".join(parts)


def tensor_table(result) -> str:
    """Every tensor compared, in execution order, then the outputs: the per-tensor table."""
    rows = [(str(r.index), r.comparison.op_type or "-") + tuple(table_rows([r.comparison])[0])
            for r in result.intermediates]
    rows += [("-", "(output)") + tuple(table_rows([c])[0]) for c in result.rows]
    return format_table(("#", "Operator Type") + tuple(TABLE_COLUMNS), rows)


def report_text(result, a: Path, b: Path) -> str:
    failing = [c for c in result.rows if not c.passed]
    verdict = ("within tolerance" if not result.divergent and not failing else
               f"{len(result.divergent)} intermediate tensors and {len(failing)} outputs outside tolerance")
    lines = [f"A: {result.baseline}", f"B: {result.recipe}"]
    ea, eb = (load_golden(p).meta.get("environment", {}) for p in (a, b))
    changes = [f"{k}: {ea.get(k, '-')} -> {eb.get(k, '-')}" for k in sorted(set(ea) | set(eb))
               if ea.get(k) != eb.get(k)]
    lines += [f"environment differs: {'; '.join(changes)}"] if changes else ["environment: the same"]
    lines += [f"inputs digest: {result.inputs_digest}", f"B against A: {verdict}"]
    lines += divergence_lines(result) + [f"note: {n}" for n in result.notes]
    return "\n".join(lines + ["", tensor_table(result)])


def pairs(a: Path, b: Path) -> List[Tuple[Path, Path]]:
    """Two files, or the files of the same name in two directories."""
    if a.is_dir() != b.is_dir() and a.exists() and b.exists():
        folder, other = (a, b) if a.is_dir() else (b, a)
        raise DiffError(f"{folder} is a directory and {other} a file: give two files, or two "
                        f"directories (their files of the same name are paired)")
    if a.is_dir() and b.is_dir():
        names = sorted({p.name for p in a.glob("*.npz")} & {p.name for p in b.glob("*.npz")})
        if not names:
            raise DiffError(f"{a} and {b} hold no saved runs of the same name (*.npz)")
        return [(a / n, b / n) for n in names]
    for p in (a, b):
        if not p.is_file():
            raise DiffError(f"{p}: no such file (give two saved runs, or two directories of them)")
    return [(a, b)]


def check_arguments(args) -> None:
    """Tolerances that are numbers a comparison can use; a report directory that can be one."""
    for flag, value in (("--atol", args.atol), ("--rtol", args.rtol)):
        if not math.isfinite(value) or value < 0:
            raise DiffError(f"{flag}: {value:g} must be a finite number >= 0")
    try:
        check_directory(Option("--report", "report", ""), None if args.report is None else str(args.report))
    except OptionError as e:
        raise DiffError(str(e)) from None


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=(
        "Compare two saved runs (goldens or --paddle-save-runs files) tensor by tensor: B "
        "against A, as a candidate against its baseline; names the first divergent tensor."))
    parser.add_argument("a", type=Path, help="the reference: a saved run (.npz) or a directory of them")
    parser.add_argument("b", type=Path, help="the run compared with it: a file or a directory")
    parser.add_argument("--atol", type=float, default=1e-4, help="absolute tolerance (default 1e-4)")
    parser.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance (default 1e-4)")
    parser.add_argument("--tensors", default="all",
                        help="intermediates to compare: all, or globs over names and op types")
    parser.add_argument("--report", type=Path, default=None,
                        help="write the per-tensor xlsx/json/csv/png and index.html here")
    args = parser.parse_args(argv)
    worst, outcomes = 0, {}
    try:
        check_arguments(args)
        for a, b in pairs(args.a, args.b):
            result = diff_files(a, b, args.atol, args.rtol, args.tensors)
            print(report_text(result, a, b))
            passed = not result.divergent and result.passed
            if args.report is not None:
                write_case(args.report, result.case_id, result)
                outcomes[result.case_id] = {"status": "passed" if passed else "failed",
                                            "paddle_case": result.case_id}
            worst = max(worst, 0 if passed else 1)
    except DiffError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    if outcomes:
        page = write_index(args.report, outcomes, {
            "compared": f"{args.b} against {args.a}", "tolerance": f"atol={args.atol:g} rtol={args.rtol:g}",
            "command line": " ".join([PROG, *map(str, argv if argv is not None else sys.argv[1:])])})
        print(f"{PROG}: report: {page} (summary.json and each pair's xlsx/json/csv/png beside it)")
    return worst


if __name__ == "__main__":
    sys.exit(main())
