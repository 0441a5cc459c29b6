"""Helpers for the tests (imported as ``helpers``; pyproject puts tests/ on sys.path).

- End to end: write a suite into the pytester directory, run it (through conftest's
  ``run_pytest``, which shares one export cache), and read back each case's outcome and
  figures from the JUnit XML, which is the same with and without xdist; read the terminal's
  paddle-infer summary table (``summary_table``, ``summary_rows``, ``summary_figures``).
- In process: ``exported_tiny_cnn`` (a model directory on disk) and ``hooked_run`` (Paddle
  directly, no plugin code).
- A case that differs from its baseline on every CPU: ``DIFFERING_MODE`` at
  ``ZERO_TOLERANCE`` (``DIFFERING_AT_ZERO`` in a suite); onednn_bf16 runs only where bf16 does.
- The CPU: ``cpu_lacks_bf16`` (why onednn_bf16 cannot run here; conftest's ``bf16_cpu`` and
  ``cpu_without_bf16`` fixtures use it and force it) and ``int8_kernels_here``."""
from __future__ import annotations

import math
import os
import re
import textwrap
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Set, Tuple

EXAMPLES = Path(__file__).resolve().parent.parent / "example_suites"


@dataclass
class CaseReport:
    outcome: str  # passed | failed | error | skipped | xfailed
    message: str = ""
    properties: Dict[str, str] = field(default_factory=dict)


@dataclass
class SuiteRun:
    result: object  # pytester.RunResult
    cases: Dict[str, CaseReport]  # "file::id" (or a Python test's id) -> report

    @property
    def text(self) -> str:
        return self.result.stdout.str() + "\n" + self.result.stderr.str()

    def outcomes(self) -> Dict[str, str]:
        return {k: c.outcome for k, c in self.cases.items()}

    def ids(self, outcome: str) -> List[str]:
        return sorted(k for k, c in self.cases.items() if c.outcome == outcome)


def write_suite(pytester, text: str, name: str = "paddle_suite.yaml") -> Path:
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def run_suite(run_pytest, pytester, *args: str) -> SuiteRun:
    xml = pytester.path / f"junit-{uuid.uuid4().hex[:8]}.xml"
    result = run_pytest(f"--junitxml={xml}", *args)
    return SuiteRun(result, read_junit(xml) if xml.exists() else {})


def read_junit(path: Path) -> Dict[str, CaseReport]:
    cases = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        # --dist loadgroup appends "@group" to node ids; the case is the same
        name = re.sub(r"@[^\]\[]*$", "", tc.get("name", ""))
        key = f"{tc.get('classname')}::{name}"
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = tc.find(tag)
            if el is not None:
                message = (el.get("message") or "") + "\n" + (el.text or "")
                outcome = {"failure": "failed", "error": "error"}.get(tag, "skipped")
                if tag == "skipped" and el.get("type") == "pytest.xfail":
                    outcome = "xfailed"
                break
        cases[key] = CaseReport(outcome, message, props)
    return cases


def summary_table(output) -> List[Tuple[str, ...]]:
    """The paddle-infer summary table's rows, every column split on whitespace: from a
    ``RunResult`` (its stdout) or from text."""
    lines = output.outlines if hasattr(output, "outlines") else output.splitlines()
    start = next(i for i, line in enumerate(lines) if "paddle-infer summary" in line)
    rows = []
    for line in lines[start + 3:]:  # title, header, dashes
        if line.startswith("="):
            break
        rows.append(tuple(line.split()))
    return rows


SUMMARY_STATUSES = ("passed", "passed*", "failed", "error", "skipped", "crashed", "timeout")  # passed*: a warning


def summary_rows(result) -> Dict[Tuple[str, str, str], Tuple[str, ...]]:
    """(model, shape, mode) -> (status, max abs, max rel, mismatched) from the summary."""
    return {row[:3]: row[3:7] for row in summary_table(result)
            if len(row) == 8 and row[3] in SUMMARY_STATUSES}


def summary_figures(output) -> List[Tuple[str, ...]]:
    """The summary table's rows without the time column (which varies)."""
    return [row[:-1] for row in summary_table(output)]


# -- a case that differs from its baseline on every CPU --------------------------------------
# onednn_bf16 is none: it runs only where the CPU has bf16 and skips elsewhere. onednn_fp32
# is: it runs tiny_cnn as fused_conv2d with each batch_norm folded into the conv's weights
# and bias, and fc for matmul + add; the auto baseline runs conv2d, batch_norm_ and matmul
# apart, on native kernels. Scaling the weights before the convolution's sums rounds
# otherwise than scaling the sums, whatever the instruction set, so the first fused conv's
# output and the logits differ in their last bits on every CPU (AVX2, input seeds 0 to 3:
# 9 or 10 of the 10 logits, max abs 2.4e-7 to 4.8e-7). At zero tolerance the case fails;
# at the mode's default (1e-4) it passes by far. cpu_fp32 is none either: Paddle 3 runs the
# same 16 ops with IR optimization on as with it off, bit for bit the baseline's.
DIFFERING_MODE = "onednn_fp32"
ZERO_TOLERANCE = ("--paddle-atol=0", "--paddle-rtol=0")  # on the command line
DIFFERING_AT_ZERO = f"{{mode: {DIFFERING_MODE}, tolerances: {{atol: 0, rtol: 0}}}}"  # a suite's run_modes entry


def exported_tiny_cnn(cache_dir: Path) -> Path:
    """A model directory on disk (inference.json + .pdiparams), exported once per cache."""
    import json

    from pytest_paddle_infer.models.cache import cached_build, run_child

    entry = Path(cache_dir) / "suite-tests" / "tiny_cnn_on_disk"
    entry.parent.mkdir(parents=True, exist_ok=True)

    def build(tmp: Path) -> dict:
        spec = [{"name": "x", "shape": [-1, 3, 32, 32], "dtype": "float32"}]
        run_child(["export", "pytest_paddle_infer.models.zoo:build_tiny_cnn", "{}", json.dumps(spec),
                   str(tmp / "inference")], False, "exporting tiny_cnn for the path-model tests")
        return {}

    cached_build(entry, build)
    return entry


def cpu_lacks_bf16() -> str:
    """Why onednn_bf16 cannot run on this CPU, as the plugin's skip says it; "" when it can.
    Without importing paddle: from the CPU's flags, as Paddle's ``supports_bfloat16()`` reads
    them (avx512_core; tests/unit/modes/test_capabilities.py checks the two agree), and from the
    variable ``cpu_without_bf16`` sets."""
    from pytest_paddle_infer.host import cpu_description, isa_text, vector_level
    from pytest_paddle_infer.modes.capabilities import NO_BF16_ENV, bf16_hidden

    cpu = cpu_description()
    this = f"this one ({cpu['cpu'] or 'CPU model unknown'}: {isa_text(cpu['cpu_flags'])})"
    if vector_level(cpu["cpu_flags"]) != "avx512":
        return f"onednn_bf16 needs a CPU with avx512 (bf16); {this} has none"
    if bf16_hidden():
        return f"onednn_bf16 needs a CPU with avx512 (bf16); {this} counts as having none: {NO_BF16_ENV} is set"
    return ""


def int8_kernels_here() -> str:
    """The oneDNN int8 kernel family of this CPU (host.INT8_*), from its flags."""
    from pytest_paddle_infer.host import cpu_description, int8_kernels

    return int8_kernels(cpu_description()["cpu_flags"])


def hooked_run(files, x, onednn, hook):
    """Paddle directly, no plugin code: the baseline (native, IR off) or a oneDNN candidate,
    with ``hook(op_type, name, tensor)`` on every op. A test that also uses ``pytester``
    takes the ``paddle_in_process`` fixture (see conftest.py)."""
    from paddle import inference

    config = inference.Config(files.prog_file, files.params_file)
    if onednn:
        config.enable_mkldnn()
        config.switch_ir_optim(True)
    else:
        config.disable_mkldnn()
        config.switch_ir_optim(False)
    config.disable_glog_info()
    predictor = inference.create_predictor(config)
    predictor.register_output_hook(hook)
    handle = predictor.get_input_handle("x")
    handle.reshape(list(x.shape))
    handle.copy_from_cpu(x)
    predictor.run()


# -- processes a test started: none may outlive it (conftest.py's ``tag``) -----------------

TAG_ENV = "PADDLE_INFER_TEST_TAG"


def _processes() -> Dict[int, Tuple[int, str, bytes]]:
    """pid -> (parent pid, state, environ) of every process this user can read."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        found[int(entry.name)] = (int(fields[1]), fields[0], environ)
    return found


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"


LENT_SERVERS: Set[int] = set()  # the fork servers this process lends its sessions (conftest.py)


def leftovers(tag: str) -> List[int]:
    """Live processes of this test: descendants of this process, or carrying its tag (the
    fork server this process lends its sessions lives on; what it forked does not)."""
    me = os.getpid()
    procs = _processes()
    marker = f"{TAG_ENV}={tag}".encode()
    left = []
    for pid, (ppid, state, environ) in procs.items():
        if pid == me or pid in LENT_SERVERS or state in ("Z", "X"):
            continue
        chain, parent = set(), ppid
        while parent not in (0, 1) and parent not in chain and parent != me:
            chain.add(parent)
            parent = procs.get(parent, (0,))[0]
        if parent == me or marker in environ.split(b"\0"):
            left.append(pid)
    return left


def tagged_with(tag: str, text: str) -> List[int]:
    return [pid for pid in leftovers(tag) if text in cmdline(pid)]


def single_culprit_bound(n: int) -> int:
    """The most trials localize/ladder.py's ``ddmin`` takes for one culprit among ``n``, plus the
    run that confirms the divergence."""
    return 2 * math.ceil(math.log2(n)) + 2 if n > 1 else 2
