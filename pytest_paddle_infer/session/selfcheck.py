"""``pytest --paddle-selfcheck``: does each run mode really engage on this machine?

Each run mode that can run here builds a tiny zoo model as a case builds its candidate, with a
positive control (its run must pass the mode's evidence rule) and a negative one (without the
call that engages the mode it must fail the rule). The controls run in the executor
(engine/selfcheck.py); this module prints the table and writes the JSON for bug reports."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional, Sequence, TextIO

from ..protocol import CANNOT_RUN, ENGAGED, NOT_ENGAGED, UNTELLABLE
from . import options as opts
from ..errors import OptionError, PaddleInferError
from .case_path import CasePath

JSON_NAME = "selfcheck.json"
PROBLEMS = (NOT_ENGAGED, UNTELLABLE)  # statuses that make the self-check exit 1


def requested(config) -> bool:
    """Whether ``--paddle-selfcheck`` (or ini ``paddle_selfcheck = true``) asks for it."""
    if config.getoption("paddle_selfcheck", None):
        return True
    try:
        return bool(config.getini("paddle_selfcheck"))
    except ValueError:  # a value other than true/false: the session reports it as usual
        return False


def default_cache_dir(config) -> Path:
    """Where ``config.cache`` would keep paddle-infer's files (it is not set up yet)."""
    root = Path(config.rootpath)
    return (root / str(config.getini("cache_dir") or ".pytest_cache")).resolve() / "d" / "paddle-infer"


def main(config, out: Optional[TextIO] = None) -> int:
    """``pytest --paddle-selfcheck``: 0 when every mode engages as it should, 1 if not, 4 on usage."""
    out = out or sys.stdout
    try:
        settings = opts.read_settings(config.getoption, config.getini, lambda: default_cache_dir(config))
    except OptionError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 4
    unused = [flag for flag, given in (("--paddle-model", settings.model_refs),
                                       ("--run-mode", settings.run_modes_given),
                                       ("--paddle-suite", settings.suites)) if given]
    if unused:
        print(f"paddle-infer self-check: {', '.join(unused)} not used: the self-check runs every "
              f"run mode on its own tiny zoo models, and no test", file=out)
    path = CasePath(settings, settings.cache_dir / "executor")
    print("paddle-infer self-check: each run mode on a tiny zoo model, with a positive and a "
          "negative control (a minute or so)...", file=out, flush=True)
    try:
        result = path.executor.call("selfcheck")
    except PaddleInferError as e:  # the executor died, or Paddle cannot be imported
        tail = getattr(e, "log_tail", "")
        print(f"paddle-infer self-check: {e}" + (f"\n{tail}" if tail else ""), file=out)
        return 1
    except Exception as e:  # a fault of the self-check itself: its traceback, for a report
        import traceback

        text = str(e) if type(e).__name__ == "ExecutorBug" else traceback.format_exc()
        print(f"paddle-infer self-check failed inside the plugin (please report it):\n{text}", file=out)
        return 1
    finally:
        path.close()
    for line in table(result):
        print(line, file=out)
    where = (settings.report_dir or settings.cache_dir) / JSON_NAME
    try:  # never over a file the plugin did not write (ownership.py)
        from ..files import atomic_write
        from ..ownership import check_writable, record

        check_writable(where.parent, [JSON_NAME], "a paddle-infer self-check")
        atomic_write(where, json.dumps(result, indent=1) + "\n")
        record(where.parent, [JSON_NAME])
        print(f"self-check JSON (attach it to a bug report): {where}", file=out)
    except (OSError, PaddleInferError) as e:
        print(f"paddle-infer self-check: the JSON was not written: {e}", file=out)
    return exit_status(result)


def exit_status(result: dict) -> int:
    """1 when a mode that runs here did not engage, or its negative control engaged too."""
    return 1 if any(row["status"] in PROBLEMS for row in result["modes"]) else 0


def machine_lines(m: dict) -> List[str]:
    gpus = [f"gpu:{g['id']} {g.get('name', '?')} (compute capability "
            f"{g.get('compute_capability', '?')})" + (f": {g['error']}" if "error" in g else "")
            for g in m["gpus"]]
    tf32 = m["tf32"]
    switches = ", ".join(f"{lib} {'on' if tf32[key] else 'off' if tf32[key] is not None else 'unknown'}"
                         for lib, key in (("cuBLAS", "cublas"), ("cuDNN", "cudnn")))
    if tf32["gpus_with_tf32"]:
        tf32_text = (f"{switches} (Paddle's switches); GPU(s) {tf32['gpus_with_tf32']} compute "
                     f"TF32 (compute capability 8.0+): gpu_fp32 and trt_fp32 may round fp32 "
                     f"matmuls and convolutions to TF32; TensorRT: Paddle sets no TF32 flag")
    elif m["gpus"]:
        tf32_text = f"not used: no GPU here has compute capability 8.0+ ({switches})"
    else:
        tf32_text = f"not used: no GPU ({switches}: Paddle's switches)"
    trt = m["tensorrt_compile"] or ""
    if trt:
        trt = f"built against {trt}; runtime {m['tensorrt_runtime'] or 'not found (libnvinfer)'}"
    cpu = (f"{m['cpu']}; oneDNN {'yes' if m['onednn'] else 'no'}; bf16 "
           f"{'yes' if m['bf16'] else 'no' if m['bf16'] is False else 'unknown'}; int8 kernels "
           f"{m['int8_kernels'] or 'none'}")
    return [
        f"  Paddle    {m['paddle']}" + (f" (commit {m['commit'][:10]})" if m["commit"] else ""),
        f"  CUDA      {m['cuda'] or 'no (CPU-only Paddle)'}",
        f"  cuDNN     {m['cudnn'] or '-'}",
        f"  TensorRT  {trt or 'no'}",
        f"  GPU       {'; '.join(gpus) if gpus else 'none visible'}",
        f"  TF32      {tf32_text}",
        f"  CPU       {cpu}",
    ]


CELL = 160  # characters of a reason the table shows; the JSON holds it whole


def one_line(text: str, limit: int = CELL) -> str:
    text = " / ".join(part.strip() for part in str(text).splitlines() if part.strip())
    return text if len(text) <= limit else text[:limit - 16].rstrip() + " ... (see JSON)"


def mode_cells(row: dict) -> Sequence[str]:
    """(mode, result, evidence, negative control) of one row."""
    status, label = row["status"], row.get("label", row["mode"])
    if status in (CANNOT_RUN, NOT_ENGAGED):
        return label, status, one_line(row["why"]), ""
    negative = row.get("negative", {})
    verdict = "fails the rule, as it must" if negative.get("fails_rule") else \
        "SHOWS IT TOO: the rule cannot tell"
    unknown = [n for n in row.get("engines", ()) if "not known" in n]  # trt_int8: no engine info
    caveat = "; int8 layers not known (no engine_info_*.json)" if unknown else ""
    return label, status, f"{row['rule']}: holds{caveat}", f"{negative.get('taken', '')}: {verdict}"


def table(result: dict) -> List[str]:
    lines = ["", "paddle-infer self-check"] + machine_lines(result["machine"]) + [""]
    cells = [("mode", "result", "evidence (positive control)", "negative control")]
    cells += [tuple(mode_cells(row)) for row in result["modes"]]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    for c in cells:
        lines.append("  ".join(c[i].ljust(widths[i]) for i in range(3)) + "  " + c[3]
                     if c[3] else "  ".join(c[i].ljust(widths[i]) for i in range(2)) + "  " + c[2])
    counts = {s: sum(r["status"] == s for r in result["modes"])
              for s in (ENGAGED, NOT_ENGAGED, UNTELLABLE, CANNOT_RUN)}
    lines += ["", "  ".join(f"{n} {s}" for s, n in counts.items() if n) + f" ({result['seconds']:g} s)"]
    return lines
