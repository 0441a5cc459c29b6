"""Golden outputs: a case's baseline outputs recorded with how they were made, one ``.npz`` per case
(outputs ``o0, ...``, intermediates, JSON ``__meta__``). No paddle here except ``environment()``."""
from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional

from .errors import PaddleInferError
from .files import ArrayFileError, load_error_text, open_array_file, safe_file_stem
from .host import cpu_description

if TYPE_CHECKING:
    import numpy as np

FORMAT = 2  # 2: compressed, with intermediate tensors
META = "__meta__"
SUFFIX = ".npz"
RUN = "run"  # meta["role"] of a candidate's saved run (--paddle-save-runs), not a golden
ENVIRONMENT_KEYS = ("paddle", "commit", "cuda", "cudnn", "tensorrt")
REWRITE_GOLDEN = "rewrite it with --paddle-update-goldens"


class GoldenError(PaddleInferError):
    """A golden that is missing, unreadable, or recorded for other inputs."""


@dataclass(frozen=True)
class GoldenPolicy:
    """What this session does with goldens besides comparing against them."""

    save_dir: Optional[Path] = None  # --paddle-save-goldens: record live baselines here
    update: bool = False  # --paddle-update-goldens: rewrite the goldens cases compare against
    float16: bool = False  # --paddle-goldens-float16: intermediates stored as float16
    runs_dir: Optional[Path] = None  # --paddle-save-runs: record each candidate's run here


@dataclass
class Golden:
    path: Path
    outputs: "OrderedDict[str, np.ndarray]"
    meta: dict


def file_name(case_id: str) -> str:
    """``tiny_cnn[1x3x32x32-cpu_fp32]`` -> ``tiny_cnn-1x3x32x32-cpu_fp32-<hash>.npz``."""
    return safe_file_stem(case_id) + SUFFIX


def legacy_file_name(case_id: str) -> str:
    """The name goldens had before (``[`` and ``]`` kept): still read, replaced when rewritten."""
    safe = re.sub(r"[^\w.\-\[\]+=,]", "_", case_id)
    if safe != case_id or len(safe) > 150:
        safe = f"{safe[:130]}-{hashlib.sha1(case_id.encode()).hexdigest()[:10]}"
    return safe + SUFFIX


def golden_path(directory: Path, case_id: str) -> Path:
    """Where the golden of ``case_id`` is written."""
    return Path(directory) / file_name(case_id)


def find_golden(directory: Path, case_id: str) -> Path:
    """The golden file of ``case_id``: its current name, else its legacy name when only that exists."""
    path = golden_path(directory, case_id)
    legacy = Path(directory) / legacy_file_name(case_id)
    return legacy if not path.is_file() and legacy.is_file() else path


def environment(device: str) -> Dict[str, str]:
    """The software and device a baseline ran on: Paddle, its commit, CUDA, cuDNN and TensorRT."""
    from .modes.capabilities import detect, import_paddle

    paddle, caps = import_paddle(), detect()
    env = {"paddle": f"{caps.distribution} {caps.version}", "commit": caps.commit, "device": device,
           **cpu_description()}
    cuda = str(paddle.version.cuda())
    if cuda not in ("False", "", "None"):
        env["cuda"] = cuda
        env["cudnn"] = str(paddle.version.cudnn())
    if any(caps.trt_compile):
        env["tensorrt"] = ".".join(map(str, caps.trt_compile))
    return env


def replaceable(path: Path) -> bool:
    """Nothing at ``path``, or a readable file whose metadata says paddle-infer wrote it."""
    if not path.exists() and not path.is_symlink():
        return True
    if path.is_symlink() or not path.is_file():
        return False
    try:
        return isinstance(read_meta(path).get("case_id"), str)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, PaddleInferError):
        return False


def read_meta(path: Path) -> dict:
    with open_array_file(path) as data:
        return json.loads(str(data[META]))


def case_family(case_id: str) -> str:
    """``tiny_cnn[1x3x32x32-`` of ``tiny_cnn[1x3x32x32-cpu_fp32]``: what every run mode shares."""
    head, bracket, rest = case_id.partition("[")
    return f"{head}[{rest.split('-', 1)[0]}-" if bracket and "-" in rest else ""


def _metas(directory: Path):
    """(path, metadata) of every readable golden in ``directory``, by name."""
    directory = Path(directory)
    for path in sorted(directory.glob("*" + SUFFIX)) if directory.is_dir() else ():
        try:
            yield path, read_meta(path)
        except (OSError, ValueError, KeyError, TypeError):
            continue


def read_golden(directory: Path, case_id: str, digest: Optional[str] = None) -> Golden:
    """The golden of ``case_id``, else another run mode's of the same model, shapes and inputs."""
    path = find_golden(directory, case_id)
    if not path.is_file():
        family = case_family(case_id)
        sibling = next((p for p, m in _metas(directory) if family and m.get("role") != RUN
                        and str(m.get("case_id", "")).startswith(family)
                        and (digest is None or m.get("inputs", {}).get("digest") == digest)), None)
        if sibling is not None:
            return load_golden(sibling)
        raise GoldenError(
            f"no golden for {case_id} in {directory} (expected {path.name}). Record it on the "
            f"machine whose outputs are the reference: with --paddle-save-goldens={directory} and "
            f"a live --paddle-baseline (auto, cpu, gpu, dygraph or static), or with "
            f"--paddle-update-goldens, which computes missing goldens with the auto baseline")
    golden = load_golden(path)
    if golden.meta.get("role") == RUN:  # a candidate's output: comparing with it tests nothing
        raise GoldenError(f"golden {path} is a saved run of {golden.meta.get('run_mode')} "
                          f"(--paddle-save-runs), not a golden: a candidate compared with a run "
                          f"tests nothing; record goldens with --paddle-save-goldens, and keep "
                          f"saved runs in a directory of their own")
    if golden.meta.get("case_id") != case_id:
        raise GoldenError(f"golden {path} belongs to case {golden.meta.get('case_id')!r}, not {case_id!r}")
    return golden


def load_golden(path: Path, what: str = "golden", fix: str = REWRITE_GOLDEN) -> Golden:
    """A golden (or saved run: ``what``) file's outputs and metadata."""
    try:
        with open_array_file(path) as data:
            meta = json.loads(str(data[META]))
            outputs = OrderedDict((name, data[f"o{i}"]) for i, name in enumerate(meta["outputs"]))
    except ArrayFileError as e:
        raise GoldenError(f"{what} {path} {e.problem} ({e.found}); {fix}") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise GoldenError(f"{what} {path} cannot be read ({load_error_text(e)}); {fix}") from None
    return Golden(path, outputs, meta)


def input_mismatch(meta: Mapping[str, object], seed: int, digest: str) -> Optional[str]:
    """Why the golden cannot be compared with this run's outputs (other inputs), or None."""
    recorded = meta.get("inputs", {})
    if recorded.get("digest") == digest:
        return None
    shapes = ", ".join(f"{n} {'x'.join(map(str, s))}" for n, s in recorded.get("shapes", {}).items())
    return (f"the golden was recorded with other inputs (seed {recorded.get('seed')}, "
            f"digest {recorded.get('digest')}, shapes {shapes}); this run's inputs: seed {seed}, "
            f"digest {digest}. Run with the recorded seed and shapes, or rewrite the golden "
            f"with --paddle-update-goldens")


def differences(meta: Mapping[str, object], current: Mapping[str, str],
                keys=ENVIRONMENT_KEYS + ("device",)) -> List[str]:
    """``paddle: paddlepaddle-gpu 3.0.0 -> paddlepaddle 3.3.1``: what differs from the golden's."""
    recorded = meta.get("environment", {})
    return [f"{key}: {recorded.get(key, '-')} -> {current.get(key, '-')}"
            for key in keys if recorded.get(key, "") != current.get(key, "")]


def describe(golden: Golden, current: Mapping[str, str]) -> str:
    """The baseline line of a failure: where the golden is, how it was made, what differs."""
    meta = golden.meta
    env = meta.get("environment", {})
    made = ", ".join(f"{k} {env[k]}" for k in ("cuda", "cudnn", "tensorrt") if k in env)
    commit = str(env.get("commit", ""))[:10]
    lines = [
        f"golden {golden.path}",
        f"  recorded {meta.get('recorded_at', '?')} by {env.get('paddle', '?')}"
        + (f" (commit {commit})" if commit else "") + f" on {env.get('device', '?')}"
        + (f", {made}" if made else ""),
        f"  from baseline {meta.get('baseline_text', meta.get('baseline', '?'))}",
        f"  inputs: seed {meta.get('inputs', {}).get('seed')}, digest "
        f"{meta.get('inputs', {}).get('digest')}; tolerances when recorded: "
        f"{tolerance_text(meta.get('tolerances', {}))}",
    ]
    changed = differences(meta, current)
    # the CPU's model and kernel flags, where the golden recorded them (older ones did not)
    changed += differences(meta, current, [k for k in ("cpu", "cpu_flags") if k in env])
    if changed:
        lines.append(f"  differs from this run: {'; '.join(changed)}")
    return "\n".join(lines)


def tolerance_text(rules: Mapping[str, str]) -> str:
    """One rule when every output had the same, else ``name: rule`` per output."""
    if len(set(rules.values())) == 1:
        return next(iter(rules.values()))
    return "; ".join(f"{name}: {rule}" for name, rule in rules.items()) or "-"


def header_lines(directory: Path, current: Mapping[str, str]) -> List[str]:
    """The report header's lines on a goldens directory: how many, by what, what differs."""
    directory = Path(directory)
    files = sorted(directory.glob("*" + SUFFIX)) if directory.is_dir() else []
    if not files:
        return [f"paddle-infer: goldens {directory}: none recorded yet"]
    groups: Dict[tuple, int] = {}
    for path in files:
        try:
            env = read_meta(path).get("environment", {})
        except (OSError, ValueError, KeyError, TypeError):
            env = {"paddle": "an unreadable file"}
        key = tuple((k, env[k]) for k in ENVIRONMENT_KEYS + ("device",) if env.get(k))
        groups[key] = groups.get(key, 0) + 1
    lines = []
    for key, count in groups.items():
        env = dict(key)
        changed = differences({"environment": env}, current, ENVIRONMENT_KEYS)
        text = ", ".join(v if k == "paddle" else f"{k} {v}" for k, v in key if k != "commit")
        lines.append(f"paddle-infer: goldens {directory}: {count} recorded with {text}"
                     + (f"; differs from this run: {'; '.join(changed)}" if changed else
                        "; same Paddle as this run"))
    return lines
