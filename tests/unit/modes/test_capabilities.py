"""modes/capabilities.py: what the installed Paddle can run, and what is missing, in words a
person can act on."""
import pytest

from pytest_paddle_infer.modes import run_modes as rm
from pytest_paddle_infer.modes.capabilities import (Capabilities, detect, installed_paddle,
                                                    normalize_trt_version)
from pytest_paddle_infer.modes.run_modes import RUN_MODES


def _caps(dist="paddlepaddle-gpu", cuda=True, gpus=2, compiled=(8, 6, 1), runtime=(8, 6, 1)):
    return Capabilities(dist, "3.3.1", "abc", cuda, gpus, compiled, runtime, True)


MODES = rm.RUN_MODES


def test_skip_reason_cpu_only():
    caps = _caps("paddlepaddle", cuda=False, gpus=0, compiled=(0, 0, 0), runtime=(0, 0, 0))
    assert caps.missing_for(MODES["trt_int8"]) == (
        "trt_int8 needs Paddle built with CUDA and TensorRT; paddlepaddle 3.3.1 installed here "
        "is CPU-only")
    assert caps.missing_for(MODES["gpu_fp16"]) == (
        "gpu_fp16 needs Paddle built with CUDA; paddlepaddle 3.3.1 installed here is CPU-only")
    assert caps.missing_for(MODES["onednn_bf16"]) is None


def test_skip_reason_cuda_without_tensorrt():
    caps = _caps(compiled=(0, 0, 0), runtime=(0, 0, 0), gpus=0)
    assert caps.missing_for(MODES["trt_fp16"]) == (
        "trt_fp16 needs Paddle built with TensorRT; paddlepaddle-gpu 3.3.1 installed here was "
        "built with CUDA but without TensorRT")
    assert caps.missing_for(MODES["gpu_fp32"]).startswith("gpu_fp32 needs a visible GPU")


def test_skip_reason_tensorrt_compiled_but_no_runtime():
    caps = _caps(runtime=(0, 0, 0))
    assert caps.missing_for(MODES["trt_fp32"]) == (
        "trt_fp32 needs the TensorRT runtime (libnvinfer) 8.6.1 that paddlepaddle-gpu 3.3.1 "
        "installed here was built against; none was found (add TensorRT's lib dir to "
        "LD_LIBRARY_PATH)")
    assert caps.missing_for(MODES["gpu_fp32"]) is None and not caps.tensorrt


def test_skip_reason_tensorrt_major_mismatch():
    assert _caps(runtime=(10, 0, 1)).missing_for(MODES["trt_fp16"]) == (
        "trt_fp16 needs TensorRT 8.x, which paddlepaddle-gpu 3.3.1 installed here was built "
        "against (8.6.1); the runtime found is 10.0.1")


def test_skip_reason_no_gpu_visible():
    caps = _caps(gpus=0)
    for mode in ("gpu_fp32", "trt_int8"):
        assert caps.missing_for(MODES[mode]) == (
            f"{mode} needs a visible GPU; paddlepaddle-gpu 3.3.1 installed here has CUDA but "
            "sees no device (check the driver and CUDA_VISIBLE_DEVICES)")


def test_skip_reason_device_out_of_range():
    caps = _caps(gpus=2)
    assert caps.missing_for(MODES["trt_fp16"], device_id=1) is None
    assert caps.missing_for(MODES["gpu_fp32"], device_id=2) == (
        "gpu_fp32 was asked for GPU 2; paddlepaddle-gpu 3.3.1 installed here sees 2 GPU(s), "
        "numbered 0..1")
    assert caps.missing_for(MODES["cpu_fp32"], device_id=5) is None


def test_detect_reports_this_cpu_only_install():
    caps = detect()
    dist, version = installed_paddle()
    assert (caps.distribution, caps.version) == (dist, version)
    assert not caps.cuda and caps.gpu_count == 0 and not caps.tensorrt
    assert not any(caps.trt_compile)
    assert caps.missing_for(MODES["trt_int8"]) == (
        f"trt_int8 needs Paddle built with CUDA and TensorRT; {dist} {version} installed here "
        "is CPU-only")
    assert caps.missing_for(MODES["cpu_fp32"]) is None


# -- the CPU: bf16 and int8 kernels -------------------------------------------------------

EPYC = dict(cpu="AMD EPYC", cpu_flags="avx avx2 f16c fma sse4_1 sse4_2")
SAPPHIRE_RAPIDS = dict(cpu="Intel(R) Xeon(R) Platinum 8480+", cpu_flags=(
    "amx_bf16 amx_int8 amx_tile avx avx2 avx512_bf16 avx512_vnni avx512bw avx512cd avx512dq "
    "avx512f avx512vl avx_vnni fma"))


def _cpu(bf16, int8_kernels, hidden=False, cpu=EPYC):
    return Capabilities("paddlepaddle", "3.3.1", "abc", False, 0, (0,), (0,), True, **cpu,
                        bf16=bf16, bf16_hidden=hidden, int8_kernels=int8_kernels)


def test_onednn_bf16_skips_on_a_cpu_without_bf16_naming_it():
    assert _cpu(False, "avx2 without VNNI").missing_for(MODES["onednn_bf16"]) == (
        "onednn_bf16 needs a CPU with avx512 (bf16); this one (AMD EPYC: avx2) has none, and "
        "Paddle would silently run fp32")
    hidden = _cpu(False, "AMX", hidden=True, cpu=SAPPHIRE_RAPIDS)
    assert hidden.missing_for(MODES["onednn_bf16"]) == (
        "onednn_bf16 needs a CPU with avx512 (bf16); this one (Intel(R) Xeon(R) Platinum 8480+: "
        "avx512, amx_bf16, amx_int8, avx512_bf16, avx512_vnni, avx_vnni) counts as having none: "
        "PADDLE_INFER_TEST_NO_BF16 is set (a test of this skip)")
    for caps in (_cpu(True, "AMX", cpu=SAPPHIRE_RAPIDS), _cpu(None, None)):  # None: not known
        assert caps.missing_for(MODES["onednn_bf16"]) is None
    # the build comes first: a CPU with bf16 would not make a Paddle without oneDNN run it
    no_onednn = Capabilities("paddlepaddle", "3.3.1", "abc", False, 0, (0,), (0,), False, **EPYC,
                             bf16=False, int8_kernels="avx2 without VNNI")
    assert "built with oneDNN" in no_onednn.missing_for(MODES["onednn_bf16"])


def test_onednn_int8_runs_without_vnni_and_skips_without_int8_kernels():
    assert _cpu(False, "avx2 without VNNI").missing_for(MODES["onednn_int8"]) is None
    assert _cpu(False, "").missing_for(MODES["onednn_int8"]) == (
        "onednn_int8 needs a CPU with avx2 or avx512 (oneDNN's int8 kernels); this one "
        "(AMD EPYC: avx2) has neither")
    for mode in ("cpu_fp32", "onednn_fp32"):
        assert _cpu(False, "").missing_for(MODES[mode]) is None


def test_the_header_line_names_the_cpu_and_its_cpu_modes():
    assert _cpu(False, "avx2 without VNNI").cpu_modes_line() == (
        "CPU AMD EPYC (avx2): cpu_fp32, onednn_fp32, onednn_int8 run; onednn_int8's int8 "
        "kernels: avx2 without VNNI (slower, and larger differences than with VNNI: README, int8 "
        "on the CPU); onednn_bf16 skips (no avx512 (bf16): Paddle would run fp32)")
    assert _cpu(True, "AMX", cpu=SAPPHIRE_RAPIDS).cpu_modes_line() == (
        "CPU Intel(R) Xeon(R) Platinum 8480+ (avx512, amx_bf16, amx_int8, avx512_bf16, "
        "avx512_vnni, avx_vnni): cpu_fp32, onednn_fp32, onednn_bf16, onednn_int8 run; "
        "onednn_int8's int8 kernels: AMX")
    assert _cpu(False, "AMX", hidden=True, cpu=SAPPHIRE_RAPIDS).cpu_modes_line().endswith(
        "; onednn_bf16 skips (bf16 hidden by PADDLE_INFER_TEST_NO_BF16)")


def test_detect_reads_this_cpu_as_paddle_does():
    from paddle.base import core

    from helpers import cpu_lacks_bf16, int8_kernels_here
    from pytest_paddle_infer.host import INT8_AVX_VNNI, cpu_description

    caps = detect()
    assert (caps.cpu, caps.cpu_flags) == tuple(cpu_description().values())
    assert caps.bf16 == bool(core.supports_bfloat16()) and not caps.bf16_hidden
    # the tests' own reading (no paddle) agrees with Paddle's
    assert (cpu_lacks_bf16() == "") == caps.bf16
    assert caps.int8_kernels == int8_kernels_here() and bool(caps.int8_kernels) == core.supports_int8()
    if caps.int8_kernels != INT8_AVX_VNNI:  # Paddle's supports_vnni() asks avx512_vnni
        assert caps.vnni == bool(core.supports_vnni())
    reason = caps.missing_for(MODES["onednn_bf16"])
    assert (reason is None) == caps.bf16
    if reason:
        assert reason.startswith(f"onednn_bf16 needs a CPU with avx512 (bf16); this one ({caps.cpu}: ")


def test_cpu_without_bf16_hides_bf16_on_every_cpu(cpu_without_bf16):
    from paddle.base import core

    caps = detect()
    assert caps.bf16 is False and caps.bf16_hidden == bool(core.supports_bfloat16())
    assert caps.missing_for(MODES["onednn_bf16"]).startswith(
        f"onednn_bf16 needs a CPU with avx512 (bf16); this one ({caps.cpu}: ")
    assert caps.missing_for(MODES["onednn_int8"]) is None or not core.supports_int8()


def test_the_installation_record_is_kept_per_cpu_and_bf16_mask(tmp_path, monkeypatch):
    import json

    from pytest_paddle_infer.host import cpu_description
    from pytest_paddle_infer.modes.capabilities import INSTALLATION_FILE, NO_BF16_ENV, known_installation

    asked = []
    caps = _cpu(False, "avx2 without VNNI")

    def ask():
        asked.append(1)
        return caps, {"paddle": "paddlepaddle 3.3.1"}

    monkeypatch.delenv(NO_BF16_ENV, raising=False)
    assert known_installation(tmp_path, ask) == (caps, {"paddle": "paddlepaddle 3.3.1"})
    assert known_installation(tmp_path, ask)[0] == caps and len(asked) == 1  # the CPU fields too
    monkeypatch.setenv(NO_BF16_ENV, "1")  # another answer: asked again, kept apart
    known_installation(tmp_path, ask)
    assert len(asked) == 2
    monkeypatch.delenv(NO_BF16_ENV)
    known_installation(tmp_path, ask)  # one record per cache dir: the masked one replaced it
    assert len(asked) == 3
    path = tmp_path / INSTALLATION_FILE
    record = json.loads(path.read_text())
    this_cpu = cpu_description()["cpu"]
    assert this_cpu in record["key"]
    record["key"] = ["Some Other CPU" if v == this_cpu else v for v in record["key"]]
    path.write_text(json.dumps(record))  # a cache dir carried to another machine
    known_installation(tmp_path, ask)
    assert len(asked) == 4


def test_following_the_skips_advice_is_seen_without_deleting_the_record(tmp_path, monkeypatch):
    """The skip says to add TensorRT's lib dir to LD_LIBRARY_PATH (or check
    CUDA_VISIBLE_DEVICES); Paddle 3.x also loads TensorRT from FLAGS_tensorrt_dir. Changing
    any of them asks Paddle again; a CUDA build that saw no GPU or no TensorRT runtime is not
    remembered at all (a driver or library installed system-wide changes no variable)."""
    from pytest_paddle_infer.modes.capabilities import INSTALLATION_FILE, known_installation

    answers = [_caps(runtime=(0, 0, 0)), _caps(gpus=0), _caps(), _caps(gpus=1)]
    asked = []

    def ask():
        asked.append(1)
        return answers[len(asked) - 1], {}

    for name in ("LD_LIBRARY_PATH", "FLAGS_tensorrt_dir", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    assert known_installation(tmp_path, ask)[0].missing_for(MODES["trt_fp16"]).endswith(
        "(add TensorRT's lib dir to LD_LIBRARY_PATH)")
    assert not (tmp_path / INSTALLATION_FILE).exists()
    assert known_installation(tmp_path, ask)[0].gpu_count == 0 and len(asked) == 2
    assert known_installation(tmp_path, ask)[0].tensorrt and len(asked) == 3  # now remembered
    assert known_installation(tmp_path, ask)[0].tensorrt and len(asked) == 3
    for name, value in (("LD_LIBRARY_PATH", "/opt/TensorRT/lib"), ("FLAGS_tensorrt_dir", "/opt/trt"),
                        ("CUDA_VISIBLE_DEVICES", "1")):
        monkeypatch.setenv(name, value)
        before = len(asked)
        answers.append(_caps(gpus=1))
        known_installation(tmp_path, ask)
        assert len(asked) == before + 1, name


# -- TensorRT 10's runtime version (issue 11, item 10) -----------------------------------


@pytest.mark.parametrize("read, meant", [
    ((100, 5, 0), (10, 5, 0)),  # getInferLibVersion() 100500 split as major*1000 + ...
    ((101, 1, 0), (10, 11, 0)),  # 101100: TensorRT 10.11.0
    ((8, 6, 1), (8, 6, 1)),
    ((0,), (0,)),
])
def test_tensorrt_10_runtime_version_is_normalized(read, meant):
    assert normalize_trt_version(read) == meant


def test_tensorrt_10_runtime_does_not_skip_for_a_major_mismatch():
    caps = Capabilities("paddlepaddle-gpu", "3.3.1", "", True, 1, (10, 5, 0),
                        normalize_trt_version((100, 5, 0)), True)
    assert caps.missing_for(RUN_MODES["trt_fp16"], 0) is None


def test_a_paddle_without_onednn_skips_onednn_modes_only():
    caps = Capabilities("paddlepaddle", "3.3.1", "abc", False, 0, (0,), (0,), onednn=False)
    assert caps.missing_for(RUN_MODES["onednn_bf16"]) == (
        "onednn_bf16 needs Paddle built with oneDNN; paddlepaddle 3.3.1 installed here was built "
        "without it")
    assert caps.missing_for(RUN_MODES["cpu_fp32"]) is None
