"""Evidence end to end: every case's JUnit properties and report say what really ran; a
onednn_bf16 candidate that computes no bfloat16 fails with that evidence."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)


def _properties(xml_path):
    cases = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        cases[case.get("name")] = {p.get("name"): p.get("value") for p in case.iter("property")}
    return cases


def test_bf16_evidence_in_junit_and_a_recipe_without_bf16_fails(run_pytest, pytester, paddle_cache,
                                                                 xdist_mode, bf16_cpu):
    # bf16 itself: where the CPU has none, onednn_bf16 skips (test_cpu_capabilities.py)
    from pytest_paddle_infer.models.cache import resolve
    from pytest_paddle_infer.models.source import parse_source

    # the legacy export: there IR optimization off really is off, and bf16 placement with it
    legacy = resolve(parse_source("tiny_cnn"), paddle_cache, legacy=True)
    result = run_pytest("--paddle-model=tiny_cnn", f"--paddle-model={legacy.prog_file}",
                        "--run-mode=onednn_bf16,onednn_bf16+no_ir_optim,cpu_fp32",
                        "--junitxml=out.xml", "--paddle-report=report", *xdist_mode)
    pir = resolve(parse_source("tiny_cnn"), paddle_cache).format == "pir"
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines([
        "*-legacy[[]1x3x32x32-onednn_bf16+no_ir_optim[]]: onednn_bf16+no_ir_optim: no bfloat16 "
        "tensor ran: oneDNN did not compute this model in bfloat16 (tensors float32 x* only)",
        "*candidate: enable_mkldnn(); enable_mkldnn_bfloat16(); switch_ir_optim(False)",
        "ran: onednn_bf16+no_ir_optim: legacy inference.pdmodel: * ops of * types (conv2d x4, *); "
        "tensors float32 x*; fused: none; tensorrt_engine ops: 0",
        "ran: baseline: legacy inference.pdmodel: *fused: none*",
    ])
    props = _properties(pytester.path / "out.xml")
    bf16 = [p for name, p in props.items() if name.endswith("-onednn_bf16]")]
    assert len(bf16) == 2
    for p in bf16:
        candidate, baseline = p["paddle_evidence"].split(" | ")
        assert candidate.startswith("onednn_bf16: ") and "bfloat16 x" in candidate
        assert "in oneDNN layout" in candidate
        assert baseline.startswith("baseline: ") and "fused: none" in baseline
    summary = json.loads((pytester.path / "report" / "summary.json").read_text())["cases"]
    by_case = {c["case"]: c for c in summary}
    failed = next(c for name, c in by_case.items() if name.endswith("-legacy[1x3x32x32-onednn_bf16+no_ir_optim]"))
    assert failed["status"] == "failed"
    assert failed["evidence"]["candidate"]["dtypes"] == {"float32": failed["evidence"]["candidate"]["tensors"]}
    assert failed["problems"][0].startswith("onednn_bf16+no_ir_optim: no bfloat16 tensor ran")
    if pir:  # the PIR export ignores switch_ir_optim(False): bf16 still runs, and a note says so
        ran = by_case["tiny_cnn[1x3x32x32-onednn_bf16+no_ir_optim]"]
        assert ran["status"] == "passed" and ran["evidence"]["candidate"]["dtypes"]["bfloat16"] > 0
        assert any("does not turn a PIR program's passes off" in n for n in ran["notes"])
        # the PIR baseline runs with its passes really off: plain ops, nothing fused
        plain = by_case["tiny_cnn[1x3x32x32-cpu_fp32]"]
        assert "enable_custom_passes([], True)" in plain["baseline"]
        base = plain["evidence"]["baseline"]
        assert base["fused"] == {} and base["ops"]["pd_op.conv2d"] == 4
        assert all(op.startswith("pd_op.") for op in base["ops"])
