"""TF32 (engine/tf32.py): the GPU baseline runs in true fp32, with Paddle's own cuBLAS and
cuDNN TF32 switches off around its run and restored after; the fp32 GPU candidates' evidence
says what TF32 they used; the fp32 GPU modes' defaults allow for it. The switches are real
Paddle calls: they exist on the CPU wheel too (read on 3.3.1 CPU and the 2.6.2 GPU wheel)."""
from __future__ import annotations

from pytest_paddle_infer.engine import tf32
from pytest_paddle_infer.engine.runner import true_fp32_run
from pytest_paddle_infer.modes.run_modes import baseline_recipe
from pytest_paddle_infer.verdict.evidence import Evidence, Tally


def test_the_gpu_baseline_runs_with_tf32_off_and_the_switches_come_back():
    before = tf32.switches()
    assert before is not None  # paddle.base.core.get_cublas_switch / get_cudnn_switch
    tf32.set_switches(True, True)  # as Paddle 2.6.2 starts
    try:
        seen = []
        tally = Tally("baseline", "m.pdmodel", "legacy")
        out = true_fp32_run(baseline_recipe("gpu", None, 0), tally, lambda: seen.append(tf32.switches()) or 7)
        assert out == 7 and seen == [(False, False)]
        assert tf32.switches() == (True, True)
        assert tally.evidence.tf32 == "TF32 off (cuBLAS and cuDNN switches cleared for this run): true fp32"
        assert "true fp32" in Evidence.from_dict(tally.evidence.to_dict()).text()
        cpu = Tally("baseline", "m.pdmodel", "legacy")  # a CPU baseline: left as it is
        true_fp32_run(baseline_recipe("cpu", None, 0), cpu, lambda: seen.append(tf32.switches()))
        assert seen[-1] == (True, True) and cpu.evidence.tf32 == ""
    finally:
        tf32.set_switches(*before)


def test_the_switches_come_back_when_the_run_fails():
    before = tf32.switches()
    try:
        true_fp32_run(baseline_recipe("gpu", None, 0), Tally("baseline", "m", "legacy"),
                      lambda: 1 / 0)
    except ZeroDivisionError:
        pass
    assert tf32.switches() == before


def test_the_candidates_tf32_use_is_stated():
    assert tf32.candidate_text(True, (True, True), (9, 0)) == (
        "TF32: cuBLAS TF32 on, cuDNN TF32 on; TensorRT builder TF32 flag on (Paddle never clears "
        "it); compute capability 9.0: TF32 tensor cores used where on")
    assert tf32.candidate_text(False, (False, True), (7, 5)) == (
        "TF32: cuBLAS TF32 off, cuDNN TF32 on; compute capability 7.5 has no TF32: computes in "
        "fp32 (the mode's default tolerance allows for TF32; a tighter one holds here)")


def test_overlapping_baselines_leave_the_switches_as_they_were():
    """Two baseline runs overlapping (one beside the other): the first to end must not turn
    TF32 back on under the second, and the last to end puts back the process's state."""
    before = tf32.switches()
    tf32.set_switches(True, True)
    try:
        with tf32.true_fp32():
            with tf32.true_fp32():
                assert tf32.switches() == (False, False)
            assert tf32.switches() == (False, False)
        assert tf32.switches() == (True, True)
    finally:
        tf32.set_switches(*before)
