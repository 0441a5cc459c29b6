"""Evidence that a run mode really ran (what the output hooks saw) and the RULES over it; no paddle."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..modes.run_modes import BF16_TENSORS, FP16_TENSORS, INT8_KERNELS, NO_FUSED_OPS, TRT_ENGINE_OP

TENSORRT_ENGINE = "tensorrt_engine"
# op types only a fusion pass makes, beyond the ``fused_*``/``fusion_*``/``*_fusion`` names
FUSED_NAMES = frozenset({"fc", "multihead_matmul", "skip_layernorm", "preln_skip_layernorm",
                         "fused_embedding_eltwise_layernorm", "self_dp_attention",
                         "conv2d_xpu", "fc_xpu", TENSORRT_ENGINE})


def base_name(op_type: str) -> str:
    """``onednn_op.fused_conv2d:3`` -> ``fused_conv2d``."""
    return op_type.split(":", 1)[0].rsplit(".", 1)[-1]


def is_fused(op_type: str) -> bool:
    name = base_name(op_type)
    return (name in FUSED_NAMES or name.startswith(("fused_", "fusion_"))
            or name.endswith(("_fusion", "_fuse")))


def dtype_name(text: str) -> str:
    """``paddle.bfloat16`` / ``DataType.BFLOAT16`` / ``bfloat16`` -> ``bfloat16``."""
    return str(text).rsplit(".", 1)[-1].lower()


@dataclass
class Evidence:
    """What one predictor run really executed."""

    role: str  # "candidate" | "baseline"
    program: str  # the program file
    format: str  # "pir" | "legacy"
    ops: Dict[str, int] = field(default_factory=dict)  # op type (no ":N") -> ops run, first-run order
    dtypes: Dict[str, int] = field(default_factory=dict)  # dtype of hooked tensors -> count
    tensors: int = 0  # hooked tensors
    onednn_tensors: int = 0  # of which in oneDNN's layout
    runs: int = 1  # hooked runs it took (3.x GPU: the first run of a predictor calls no hooks)
    requires: Tuple[str, ...] = ()  # what its run mode or recipe says it must show (RULES keys)
    kernels: str = ""  # the CPU's int8 kernel family where the figures depend on it (onednn_int8)
    # PIR TensorRT: the converted program is the evidence (the hooks never report an engine op)
    converted: Dict[str, object] = field(default_factory=dict)
    shipped: Tuple[str, ...] = ()  # fused op types the program ships: "optimizations off" allows them
    tf32: str = ""  # GPU runs: TF32 in this run (engine/tf32.py)

    @property
    def seen(self) -> bool:
        return self.tensors > 0

    @property
    def fused(self) -> Dict[str, int]:
        return {t: n for t, n in self.ops.items() if is_fused(t)}

    @property
    def created(self) -> Dict[str, int]:
        """Fused ops of types the program did not ship: what the passes made."""
        return {t: n for t, n in self.fused.items() if base_name(t) not in self.shipped}

    @property
    def engines(self) -> int:
        """tensorrt_engine ops: the hooks' count, or the converted program's (PIR)."""
        if self.converted:
            return int(self.converted.get("engines", 0))  # type: ignore[call-overload]
        return sum(n for t, n in self.ops.items() if base_name(t) == TENSORRT_ENGINE)

    def converted_text(self) -> str:
        if not self.converted:
            return ""
        replaced = self.ops_text(self.converted.get("replaced") or {}, 8)  # type: ignore[arg-type]
        name = str(self.converted.get("program", "")).replace(chr(92), "/").rsplit("/", 1)[-1]
        return f"; converted program {name}: {self.engines} tensorrt_engine op(s), replacing {replaced}"

    def has_dtype(self, *names: str) -> bool:
        return any(self.dtypes.get(n, 0) for n in names)

    def dtype_text(self) -> str:
        return ", ".join(f"{d} x{n}" for d, n in self.dtypes.items()) or "none"

    def ops_text(self, ops: Optional[Mapping[str, int]] = None, limit: int = 12) -> str:
        ops = self.ops if ops is None else ops
        parts = [t if n == 1 else f"{t} x{n}" for t, n in ops.items()]
        more = f", +{len(parts) - limit} more types" if len(parts) > limit else ""
        return ", ".join(parts[:limit]) + more if parts else "none"

    def text(self) -> str:
        """One line: the program, what ran, the dtypes, fused and TensorRT ops."""
        where = f"{self.format} {self.program.replace(chr(92), '/').rsplit('/', 1)[-1]}"
        if not self.seen:
            tf32 = f"; {self.tf32}" if self.tf32 else ""
            return (f"{self.role}: {where}: the output hooks saw no op in {self.runs} run(s)"
                    f"{tf32}{self.converted_text()}")
        onednn = f" ({self.onednn_tensors} in oneDNN layout)" if self.onednn_tensors else ""
        kernels = f"; {self.kernels}" if self.kernels else ""
        kernels += f"; {self.tf32}" if self.tf32 else ""
        return (f"{self.role}: {where}: {sum(self.ops.values())} ops of {len(self.ops)} types "
                f"({self.ops_text()}); tensors {self.dtype_text()}{onednn}; fused: "
                f"{self.ops_text(self.fused, 6)}; tensorrt_engine ops: {self.engines}{kernels}"
                f"{self.converted_text()}")

    def to_dict(self) -> Dict[str, object]:
        return {"role": self.role, "program": self.program, "format": self.format, "ops": dict(self.ops),
                "dtypes": dict(self.dtypes), "tensors": self.tensors, "onednn_tensors": self.onednn_tensors,
                "runs": self.runs, "requires": list(self.requires), "kernels": self.kernels,
                "fused": self.fused, "tensorrt_engine_ops": self.engines, "converted": dict(self.converted),
                "shipped": list(self.shipped), "tf32": self.tf32}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> "Evidence":
        return cls(str(data["role"]), str(data["program"]), str(data["format"]),
                   dict(data.get("ops", {})), dict(data.get("dtypes", {})),  # type: ignore[arg-type]
                   int(data.get("tensors", 0)), int(data.get("onednn_tensors", 0)),  # type: ignore[arg-type]
                   int(data.get("runs", 1)), tuple(data.get("requires", ())),  # type: ignore
                   str(data.get("kernels", "")), dict(data.get("converted") or {}),  # type: ignore[arg-type]
                   tuple(data.get("shipped", ())), str(data.get("tf32", "")))  # type: ignore[arg-type]


class Tally:
    """Counts a hook stream; legacy op types carry no ``:N``: a run of one type is one op there."""

    def __init__(self, role: str, program: str, program_format: str, requires: Sequence[str] = ()):
        self.evidence = Evidence(role, program, program_format, runs=0, requires=tuple(requires))
        self._seen_ids: set = set()
        self._last: Optional[str] = None

    def start_run(self) -> None:
        self.evidence.runs += 1
        self._last = None

    def add(self, op_type: str, name: str, dtype: str, layout: str = "") -> None:
        ev = self.evidence
        kind, sep, _ = op_type.partition(":")
        if sep:
            new_op = op_type not in self._seen_ids
            self._seen_ids.add(op_type)
        else:
            new_op = op_type != self._last
        self._last = op_type
        if new_op:
            ev.ops[kind] = ev.ops.get(kind, 0) + 1
        d = dtype_name(dtype)
        ev.dtypes[d] = ev.dtypes.get(d, 0) + 1
        ev.tensors += 1
        if "ONEDNN" in str(layout).upper() or "MKLDNN" in str(layout).upper():
            ev.onednn_tensors += 1

    def feed(self, stream: Iterable[Sequence[str]]) -> "Tally":
        """A recorded run: (op_type, name, dtype[, layout]) per hook call."""
        self.start_run()
        for event in stream:
            self.add(*event)
        return self


def shipped_fused(program_ops: Mapping[str, int]) -> Tuple[str, ...]:
    """The fused op types a program holds as loaded (``int8_evidence.program_op_types``)."""
    return tuple(sorted({base_name(t) for t in program_ops if is_fused(t)}))


def converted_program(program: str, source_ops: Mapping[str, int],
                      converted_ops: Mapping[str, int]) -> Dict[str, object]:
    """A PIR TensorRT conversion: its engine ops, and the op types they took over from the source."""
    engines = sum(n for t, n in converted_ops.items() if base_name(t) == TENSORRT_ENGINE)
    replaced = {t: n - converted_ops.get(t, 0) for t, n in source_ops.items() if n > converted_ops.get(t, 0)}
    return {"program": program, "engines": engines, "replaced": replaced}


def is_heavy(op_type: str) -> bool:
    """Convolutions and matrix products: where reduced precision pays, and differs."""
    name = base_name(op_type)
    return name in ("fc", "mul", "bmm") or "conv" in name or "matmul" in name \
        or name == "matrix_multiply" or name.endswith("gemm_epilogue")


def coverage_note(ev: Evidence, precision: str, remaining: Optional[Mapping[str, int]] = None) -> str:
    """TensorRT below fp32: the convolutions and matrix products left to Paddle's fp32 kernels."""
    ops = remaining if remaining is not None else ev.ops
    left = {t: n for t, n in ops.items() if is_heavy(t)}
    if not left:
        return ""
    return (f"TensorRT coverage: {ev.engines} tensorrt_engine op(s); convolutions and matrix "
            f"products left to Paddle's fp32 kernels, not {precision}: {ev.ops_text(left, 8)}")


def tally(role: str, program: str, program_format: str, *runs: Iterable[Sequence[str]],
          requires: Sequence[str] = ()) -> Evidence:
    """Evidence from recorded runs (the tests' GPU streams)."""
    t = Tally(role, program, program_format, requires)
    for run in runs:
        t.feed(run)
    return t.evidence


@dataclass(frozen=True)
class Rule:
    holds: Callable[[Evidence], bool]
    broken: Callable[[str, Evidence], str]  # (the run mode or "baseline", evidence) -> why not


def _dtypes_only(ev: Evidence) -> str:
    return f"tensors {ev.dtype_text()} only"


RULES: Mapping[str, Rule] = {
    TRT_ENGINE_OP: Rule(
        lambda ev: ev.engines > 0,
        lambda who, ev: (f"{who}: the converted program holds no tensorrt_engine op: "
                         f"paddle.tensorrt.convert left every op to Paddle, TensorRT took no part "
                         f"in this model ({ev.converted.get('program')})") if ev.converted else
                        (f"{who}: no tensorrt_engine op ran: TensorRT took no part in this model "
                         f"(ops: {ev.ops_text(limit=8)})")),
    FP16_TENSORS: Rule(
        lambda ev: ev.has_dtype("float16"),
        lambda who, ev: f"{who}: no float16 tensor ran: the model computed in full precision "
                        f"({_dtypes_only(ev)})"),
    BF16_TENSORS: Rule(
        lambda ev: ev.has_dtype("bfloat16"),
        lambda who, ev: f"{who}: no bfloat16 tensor ran: oneDNN did not compute this model in "
                        f"bfloat16 ({_dtypes_only(ev)})"),
    INT8_KERNELS: Rule(
        lambda ev: ev.has_dtype("int8", "uint8"),
        lambda who, ev: f"{who}: no int8 kernel ran: no int8/uint8 tensor ({_dtypes_only(ev)})"),
    NO_FUSED_OPS: Rule(
        lambda ev: not ev.created,
        lambda who, ev: f"{who}: its recipe turns optimizations off, yet fused ops ran: "
                        f"{ev.ops_text(ev.created, 6)} ({ev.format} program"
                        + (f"; it ships {', '.join(ev.shipped)} itself, which is allowed)"
                           if ev.shipped else ")")),
}


def broken_rules(who: str, evidence: Optional[Evidence],
                 requirements: Optional[Sequence[str]] = None) -> List[str]:
    """Why ``evidence`` fails ``requirements`` (by default what it ``requires``), a sentence each."""
    if evidence is None:
        return []
    requirements = evidence.requires if requirements is None else requirements
    if not requirements:
        return []
    # a converted program shows its engines whatever the hooks saw
    from_program = [r for r in requirements if r == TRT_ENGINE_OP and evidence.converted]
    broken = [RULES[r].broken(who, evidence) for r in from_program if not RULES[r].holds(evidence)]
    hooked = [r for r in requirements if r not in from_program]
    if not hooked:
        return broken
    if not evidence.seen:
        return broken + [f"{who}: the output hooks saw no op in {evidence.runs} run(s): nothing "
                         f"shows {', '.join(hooked)}"]
    return broken + [RULES[r].broken(who, evidence) for r in hooked if not RULES[r].holds(evidence)]


def evidence_texts(evidence: Mapping[str, Mapping[str, object]]) -> List[str]:
    """A line per recorded run, candidate first."""
    order = sorted(evidence, key=lambda role: role != "candidate")
    return [Evidence.from_dict(evidence[role]).text() for role in order]
