"""A repro folder for a bug report: a (pruned) program, its inputs, a README and a script
(paddle and numpy only) that compares the baseline's and the candidate's ``paddle.inference.Config``
and exits 1 when an output is outside tolerance."""
from __future__ import annotations

import platform
import textwrap
from contextlib import suppress
from pathlib import Path
from typing import Sequence

from ...modes.capabilities import installed_paddle
from ...files import atomic_write

SCRIPT = "repro.py"
README = "README.md"
INPUTS = "inputs.npz"


def call_source(call) -> str:
    """A recipe call as Python on ``config``; one the installed Paddle may lack is guarded. The
    optim cache dir becomes a folder beside the script, so the repro travels."""
    args = [repr(a) for a in call.args] + [f"{k}={v!r}" for k, v in call.kwargs]
    if call.method == "set_optim_cache_dir":
        args = ['os.path.join(HERE, "optim_cache", "")']  # Paddle concatenates engine_info_*
    line = f"config.{call.method}({', '.join(args)})"
    if getattr(call, "optional", False):
        return f"if hasattr(config, {call.method!r}):\n        {line}"
    return line


def _body(calls: Sequence) -> str:
    return "\n    ".join([call_source(c) for c in calls] or ["pass"])


def script_text(case_id: str, what: str, program: str, baseline_calls: Sequence,
                candidate_calls: Sequence, atol: float, rtol: float) -> str:
    return textwrap.dedent('''\
        #!/usr/bin/env python3
        """Reproduces {case_id}: {what}.

        Runs {program} with two paddle.inference configurations on the inputs in {inputs}:
        the baseline and the candidate, and compares every output with numpy.isclose
        (atol={atol!r}, rtol={rtol!r}). Exits 1 when an output is outside tolerance.
        Needs paddlepaddle and numpy only.
        """
        import argparse
        import os
        import sys

        import numpy as np
        from paddle import inference
        from paddle.inference import PrecisionType  # noqa: F401 (recipes may name it)

        HERE = os.path.dirname(os.path.abspath(__file__))
        PROGRAM = os.path.join(HERE, "model", {program!r})
        PARAMS = os.path.join(HERE, "model", "inference.pdiparams")


        def baseline(config):
            {baseline}


        def candidate(config):
            {candidate}


        def run(configure):
            params = PARAMS if os.path.exists(PARAMS) else ""  # a program without parameters
            config = inference.Config(PROGRAM, params)
            configure(config)
            config.disable_glog_info()
            predictor = inference.create_predictor(config)
            with np.load(os.path.join(HERE, {inputs!r})) as data:
                for name in predictor.get_input_names():
                    array = np.ascontiguousarray(data[name])
                    handle = predictor.get_input_handle(name)
                    handle.reshape(list(array.shape))
                    handle.copy_from_cpu(array)
            predictor.run()
            return {{n: predictor.get_output_handle(n).copy_to_cpu()
                    for n in predictor.get_output_names()}}


        def main():
            parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
            parser.add_argument("--atol", type=float, default={atol!r})
            parser.add_argument("--rtol", type=float, default={rtol!r})
            args = parser.parse_args()
            print("paddle " + " ".join(inference.get_version().split()[:4]))
            want, got = run(baseline), run(candidate)
            bad = 0
            for name, expected in want.items():
                actual = got[name]
                if actual.shape != expected.shape:
                    print(f"{{name}}: shape {{list(actual.shape)}}, baseline {{list(expected.shape)}}")
                    bad += 1
                    continue
                b, c = expected.astype(np.float64), actual.astype(np.float64)
                diff = np.abs(c - b)
                close = np.isclose(c, b, rtol=args.rtol, atol=args.atol)
                worst = float(diff.max()) if diff.size else 0.0
                rel = float((diff / (np.abs(b) + 1e-7)).max()) if diff.size else 0.0
                print(f"{{name}}: shape {{list(b.shape)}} max abs {{worst:.6g}} max rel {{rel:.6g}} "
                      f"mismatched {{int((~close).sum())}}/{{close.size}}")
                bad += int(not close.all())
            print(f"{{bad}} of {{len(want)}} outputs outside atol={{args.atol}} rtol={{args.rtol}}"
                  if bad else f"all {{len(want)}} outputs within atol={{args.atol}} rtol={{args.rtol}}")
            return 1 if bad else 0


        if __name__ == "__main__":
            sys.exit(main())
        ''').format(case_id=case_id, what=what, program=program, inputs=INPUTS, atol=atol,
                    rtol=rtol, baseline=_body(baseline_calls), candidate=_body(candidate_calls))


def cpu_name() -> str:
    """The CPU's model name (bf16 and int8 kernels depend on it), best effort."""
    with suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def readme_text(case_id: str, what: str, baseline_calls: Sequence, candidate_calls: Sequence,
                atol: float, rtol: float, details: Sequence[str]) -> str:
    calls = lambda cs: "; ".join(str(c) for c in cs) or "(none)"
    found = " ".join(installed_paddle()) or "an unknown Paddle"
    lines = [f"# Repro: {case_id}", "", what, "",
             f"Found with {found} on {platform.platform()}, CPU {cpu_name()}.", "",
             "- `model/`: the program and its parameters", f"- `{INPUTS}`: its inputs, by name",
             f"- `{SCRIPT}`: builds both configurations with `paddle.inference` and compares "
             f"the outputs (atol={atol}, rtol={rtol}); exits 1 when one is outside tolerance", "",
             f"baseline:  `{calls(baseline_calls)}`", f"candidate: `{calls(candidate_calls)}`", "",
             "Run it with the Paddle that showed the failure:", "", f"    python {SCRIPT}", ""]
    if details:
        lines += ["What the localization found:", ""] + [f"    {d}" for d in details] + [""]
    return "\n".join(lines) + "\n"


def write_repro(folder: Path, case_id: str, what: str, program_name: str, baseline_calls: Sequence,
                candidate_calls: Sequence, atol: float, rtol: float, details: Sequence[str] = ()) -> Path:
    """Write the script and README into ``folder`` (which holds ``model/`` and the inputs)."""
    folder = Path(folder)
    script = folder / SCRIPT
    text = script_text(case_id, what, program_name, baseline_calls, candidate_calls, atol, rtol)
    atomic_write(script, text)
    atomic_write(folder / README, readme_text(case_id, what, baseline_calls, candidate_calls,
                                              atol, rtol, details))
    return script
