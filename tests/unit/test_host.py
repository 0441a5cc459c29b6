"""host.py: this CPU read as Paddle reads it (no paddle): oneDNN's int8 kernel families and
vector level from the CPU flags."""
from unit.modes.test_capabilities import EPYC, SAPPHIRE_RAPIDS


def test_int8_kernel_families_from_the_flags():
    from pytest_paddle_infer.host import int8_kernels, vector_level

    assert [int8_kernels(flags) for flags in (
        EPYC["cpu_flags"], SAPPHIRE_RAPIDS["cpu_flags"],
        "avx avx2 avx512bw avx512cd avx512dq avx512f avx512vl avx512_vnni",  # Cascade Lake
        "avx avx2 avx512bw avx512cd avx512dq avx512f avx512vl",  # Skylake-SP
        "avx avx2 avx_vnni fma",  # Alder Lake
        "avx sse4_2",  # Sandy Bridge: Paddle's supports_int8() is False
    )] == ["avx2 without VNNI", "AMX", "avx512 VNNI", "avx512 without VNNI", "AVX-VNNI", ""]
    # avx512f alone is not oneDNN's avx512_core, which supports_bfloat16() asks for
    assert vector_level("avx avx2 avx512f avx512cd") == "avx2"
