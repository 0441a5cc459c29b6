"""Child process (``prune|static REQUEST_PICKLE``; JSON on the last stdout line): prune a failing
program to its first bad op, feeding the baseline's values at each cut, and the static Executor rung.
1. the first divergent tensor: the intermediates' hint, else by halving over prefixes;
2. each op up to it alone (fused ops hide tensors between observed ones): the first bad op;
3. else the shortest run of ops ending at the divergence that still fails, by halving;
4. the local errors of the ops after it (within a budget): own error or inherited."""
from __future__ import annotations

import pickle
import shutil
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from .program_cut import extract, load, params_file
from ..predictor import apply_recipe, run_predictor, trim_paddle_error
from ...verdict.compare import compare_arrays
from ..capture import fingerprint, nearest
from ...models.exporter import run_command

MATCH_DISTANCE = 1e-3  # a hinted baseline tensor and the child's own baseline value: equal
CHUNK_BYTES = 256 << 20  # baseline values fetched per run (then spilled): bounded memory


class Spilled:
    """Baseline values by key, each in its own ``.npy`` file; the program's inputs stay in memory."""
    def __init__(self, directory: Path, inputs: Dict[str, np.ndarray]):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.inputs = dict(inputs)
        self.paths: Dict[str, Path] = {}

    def put(self, key: str, value: np.ndarray) -> None:
        path = self.directory / f"{len(self.paths):05d}.npy"
        np.save(path, value)
        self.paths[key] = path

    def __getitem__(self, key: str) -> np.ndarray:
        if key in self.inputs:
            return self.inputs[key]
        return np.load(self.paths[key])

    def get(self, key: str, default=None):
        return self[key] if key in self else default

    def __contains__(self, key: str) -> bool:
        return key in self.inputs or key in self.paths


class Pruner:
    def __init__(self, request: dict):
        self.req = request
        self.work = Path(request["work_dir"])
        self.prog = load(request["prog_file"])
        with np.load(request["inputs_npz"], allow_pickle=False) as data:
            self.inputs = {k: data[k] for k in data.files}
        self.builds = 0
        self.trials: List[dict] = []
        self._cuts: Dict[tuple, tuple] = {}
        self._base: Optional[Spilled] = None
        self.suffix = ".pdmodel" if self.prog.format == "legacy" else ".json"

    def run(self, model_dir: Path, calls, feeds: Dict[str, np.ndarray]) -> List[np.ndarray]:
        from paddle import inference

        config = inference.Config(str(model_dir / f"inference{self.suffix}"), params_file(model_dir))
        apply_recipe(config, calls)
        config.disable_glog_info()
        self.builds += 1
        predictor = inference.create_predictor(config)
        return list(run_predictor(predictor, feeds).values())

    def cut(self, start: int, targets: Sequence[str]):
        """(model dir, feed keys, feed names) of the ops from ``start`` computing ``targets``."""
        key = (start, tuple(targets))
        if key not in self._cuts:
            feeds = self.prog.crossing(start, targets)
            dest = self.work / f"cut{len(self._cuts)}"
            names, _ = extract(self.prog, feeds, targets, dest)
            self._cuts[key] = (dest, feeds, names)
        return self._cuts[key]

    def baseline_values(self) -> "Spilled":
        """The baseline's value of every tensor an op reads or writes first, spilled in chunks."""
        if self._base is None:
            used = [k for op in self.prog.ops for k in op.inputs + op.outputs[:1] if k in self.prog.dense]
            keys = [k for k in dict.fromkeys(used + list(self.prog.outputs)) if k not in self.prog.inputs]
            self._base = Spilled(self.work / "baseline", self.inputs)
            for chunk in self._chunks(keys):
                dest, _, names = self.cut(0, chunk)
                values = self.run(dest, self.req["baseline_calls"], {n: self.inputs[n] for n in names})
                for key, value in zip(chunk, values):
                    self._base.put(key, value)
                del values
        return self._base

    def _chunks(self, keys: List[str]) -> List[List[str]]:
        """Runs of ``keys`` whose values (shapes with the inputs' batch for -1) fit CHUNK_BYTES."""
        batch = max([a.shape[0] for a in self.inputs.values() if a.ndim] or [1])
        chunks: List[List[str]] = [[]]
        size = 0
        for key in keys:
            dims = [batch if d < 0 else d for d in self.prog.shapes.get(key, ())]
            nbytes = 4 * int(np.prod(dims or [1]))
            if chunks[-1] and size + nbytes > self.req.get("chunk_bytes", CHUNK_BYTES):
                chunks.append([])
                size = 0
            chunks[-1].append(key)
            size += nbytes
        return [c for c in chunks if c]

    def judge(self, what: str, start: int, targets: Sequence[str], ops: Sequence[int]) -> dict:
        """The ops from ``start`` under the candidate's recipe, fed the baseline's values; targets judged."""
        base = self.baseline_values()
        trial = {"what": what, "start": start, "ops": list(ops), "targets": list(targets)}
        self.trials.append(trial)
        try:
            dest, feeds, names = self.cut(start, targets)
            got = self.run(dest, self.req["candidate_calls"], {n: base[k] for n, k in zip(names, feeds)})
        except Exception as e:  # a cut, build or run that errs: neither within tolerance nor out
            trial.update(passed=None, error=trim_paddle_error(e).splitlines()[0][:200],
                         max_abs=float("nan"), max_rel=float("nan"))
            return trial
        rows = [compare_arrays(k, g, base[k], self.req["atol"], self.req["rtol"],
                               cosine_min=self.req["cosine_min"]) for k, g in zip(targets, got)]
        trial.update(passed=all(r.passed for r in rows), max_abs=max(r.max_abs for r in rows),
                     max_rel=max(r.max_rel for r in rows))
        return trial

    def prefix_fails(self, index: int) -> bool:
        """Does the program up to op ``index`` diverge (or not run) on the case's inputs?"""
        target = self.prog.ops[index].outputs[:1]
        return self.judge("prefix", 0, target, self.prog.segment(0, target))["passed"] is not True

    def local(self, index: int) -> dict:
        op = self.prog.ops[index]
        return self.judge("local", index, op.outputs[:1], [index])

    def segment(self, start: int, end: Optional[int]) -> dict:
        targets = self.prog.ops[end].outputs[:1] if end is not None else self.prog.outputs
        return self.judge("segment", start, targets, self.prog.segment(start, targets))

    def hinted_op(self) -> Optional[int]:
        """The op that wrote the case's first divergent tensor: by name, else by fingerprint."""
        hint = self.req.get("hint")
        if not hint:
            return None
        if hint["name"] in self.prog.producer:
            return self.prog.producer[hint["name"]]
        base, shape = self.baseline_values(), tuple(hint["shape"])
        values = ((op.index, base.get(op.outputs[0])) for op in self.prog.ops if op.outputs)
        return nearest(hint["fingerprint"], ((i, fingerprint(v)) for i, v in values
                                             if v is not None and tuple(v.shape) == shape), MATCH_DISTANCE)

    def first_divergent(self, after: int = -1) -> Optional[int]:
        """The first op after ``after`` whose output breaks tolerance, halving over prefixes; else None."""
        cuts = [i for i in range(after + 1, len(self.prog.ops)) if self.prog.cuttable(i)]
        if not cuts or not self.prefix_fails(cuts[-1]):
            return None
        lo, hi = -1, len(cuts) - 1  # positions in cuts
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if self.prefix_fails(cuts[mid]) else (mid, hi)
        return cuts[hi]

    def shortest_failing_run(self, end: Optional[int]) -> Optional[int]:
        """The latest start from which the ops up to ``end`` (None: the outputs) still fail, or None."""
        last = end if end is not None else len(self.prog.ops)
        if self.segment(0, end)["passed"] is not False:
            return None
        lo, hi = 0, last  # lo fails; from hi on (the op alone, or nothing) it passes
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if self.segment(mid, end)["passed"] is not False else (mid, hi)
        return lo

    def prune(self) -> dict:
        start_time = time.perf_counter()
        ops = self.prog.ops
        answer = {"format": self.prog.format, "ops": len(ops), "op_types": [op.type for op in ops]}
        hinted = self.hinted_op()
        if self.req.get("outputs_fail", True) or hinted is None:
            whole = answer["whole"] = self.judge("whole", 0, self.prog.outputs, [op.index for op in ops])
            if whole["passed"]:
                answer["note"] = "the program as a whole does not fail in the pruning process"
                return self._finish(answer, start_time)
        # else: the outputs pass and a tensor tolerance fails the intermediate: prune to it
        divergent = hinted if hinted is not None else self.first_divergent()
        answer["first_divergent"] = divergent
        answer["divergent_from"] = "intermediates" if hinted is not None else "halving"
        locals_: Dict[int, dict] = {}
        budget = int(self.req.get("budget", 24))
        first_bad, run_start = self.locate(divergent, locals_, budget)
        if first_bad is None and run_start is None and hinted is not None:
            # cut at that tensor it does not diverge (fetching it undid a fusion): look further
            later = self.first_divergent(after=hinted)
            if later is not None:
                divergent = answer["first_divergent"] = later
                answer["divergent_from"] = "halving past the intermediates' first divergent tensor"
                first_bad, run_start = self.locate(divergent, locals_, budget)
        last = divergent if divergent is not None else len(ops) - 1
        for index in range(last + 1 if first_bad is None else first_bad + 1, len(ops)):
            if len(locals_) >= budget:  # the rest of the table: own error or inherited
                break
            if index not in locals_ and self.prog.cuttable(index):
                locals_[index] = self.local(index)
        answer.update(first_bad=first_bad, run_start=run_start,
                      locals=[self._describe_local(i, t) for i, t in sorted(locals_.items())])
        try:
            answer["repro"] = self.write_repro(first_bad, run_start, divergent)
        except Exception as e:  # the repro then holds the whole program (prune.py)
            answer["repro"] = {}
            answer["repro_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        return self._finish(answer, start_time)

    def locate(self, divergent: Optional[int], locals_: Dict[int, dict], budget: int):
        """(first bad op, start of the shortest failing run): ops up to the divergence alone, else a run."""
        last = divergent if divergent is not None else len(self.prog.ops) - 1
        for index in range(0, last + 1):
            if index in locals_ or not self.prog.cuttable(index):
                continue
            if len(locals_) >= budget:
                break
            locals_[index] = self.local(index)
            if locals_[index]["passed"] is False:
                return index, None
        return None, self.shortest_failing_run(divergent)

    def _describe_local(self, index: int, trial: dict) -> dict:
        op = self.prog.ops[index]
        key = op.outputs[0]
        value = self.baseline_values()[key]
        return {"op": index, "type": op.type, "tensor": key, "shape": list(value.shape),
                "fingerprint": fingerprint(value).tolist(), "passed": trial["passed"],
                "max_abs": trial["max_abs"], "max_rel": trial["max_rel"]}

    def write_repro(self, first_bad: Optional[int], run_start: Optional[int],
                    divergent: Optional[int]) -> dict:
        """The smallest failing program found, with the baseline's values of its inputs."""
        if first_bad is not None:
            start, end, what = first_bad, first_bad, "op"
        elif run_start is not None:
            start, end, what = run_start, divergent, "run"
        else:
            return {}
        targets = self.prog.ops[end].outputs[:1] if end is not None else self.prog.outputs
        dest, feeds, names = self.cut(start, targets)
        out = Path(self.req["repro_dir"])
        model = out / "model"
        if model.exists():
            shutil.rmtree(model)
        shutil.copytree(dest, model)
        base = self.baseline_values()
        with open(out / "inputs.npz", "wb") as f:
            np.savez(f, **{n: base[k] for n, k in zip(names, feeds)})
        ops = self.prog.segment(start, targets)
        return {"kind": what, "ops": ops, "types": [self.prog.ops[i].type for i in ops], "inputs": names,
                "program": str(model / f"inference{self.suffix}"), "params": params_file(model)}

    def _finish(self, answer: dict, start_time: float) -> dict:
        answer.update(builds=self.builds, trials=self.trials, seconds=time.perf_counter() - start_time)
        return answer


def prune(request_path: str) -> dict:
    with open(request_path, "rb") as f:
        request = pickle.load(f)
    return Pruner(request).prune()


def static(request_path: str) -> dict:
    """The program under ``paddle.static.Executor`` on the mode's device (``onednn``: its kernels)."""
    import paddle

    with open(request_path, "rb") as f:
        request = pickle.load(f)
    if request.get("onednn"):
        paddle.set_flags({"FLAGS_use_mkldnn": True})
    prog = load(request["prog_file"], request.get("device", "cpu"))
    with np.load(request["inputs_npz"], allow_pickle=False) as data:
        feed = {n: data[n] for n in prog.inputs}
    program = prog._program
    targets = [program.global_block().var(n) if prog.format == "legacy" else prog._values[n]
               for n in prog.outputs]
    outputs = prog._exe.run(program, feed=feed, fetch_list=targets)
    with open(request["out_npz"], "wb") as f:
        np.savez(f, **{f"o{i}": np.asarray(a) for i, a in enumerate(outputs)})
    return {"names": prog.output_names, "paddle": paddle.__version__}


def main(argv) -> int:
    return run_command(argv, {"prune": prune, "static": static})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
