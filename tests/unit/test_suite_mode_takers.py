"""cases/suite_modes.py: a key under a run mode that does not take it points at the modes
that do; with a single such mode the fix names it."""
import pytest

from pytest_paddle_infer.cases.suite import Context, SuiteError, load_suite


def load(directory, text):
    (directory / "paddle_s.yaml").write_text(text)
    return load_suite(directory / "paddle_s.yaml", Context(file="paddle_s.yaml", base_dir=directory,
                                                           rootdir=directory, cache_dir=directory / "cache"))


@pytest.mark.parametrize("entry, expected, fix", [
    ("{mode: trt_fp16, low_precision_io: true}", "low_precision_io only under gpu_fp16",
     "remove low_precision_io, or move it to a run mode with mode: gpu_fp16"),
    ("{mode: trt_fp16, fp32_ops: [softmax]}", "fp32_ops only under onednn_bf16, gpu_fp16",
     "remove fp32_ops, or move it to a run mode that takes it"),
])
def test_a_key_of_other_modes_names_the_modes_that_take_it(tmp_path, entry, expected, fix):
    with pytest.raises(SuiteError) as info:
        load(tmp_path, f"models:\n  tiny_cnn:\n    run_modes:\n      - {entry}\n")
    lines = [line.strip() for line in str(info.value).splitlines()]
    assert f"expected: {expected}" in lines and f"fix:      {fix}" in lines, lines
