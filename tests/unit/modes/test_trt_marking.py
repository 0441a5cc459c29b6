"""modes/trt_marking.py: TensorRT output marking: calls that bind to the installed Config (the
engine itself needs a TensorRT build); the engine info TensorRT writes, read back."""
import json

import pytest

from config_signatures import check_recipe
from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.modes import trt_marking as tm
from pytest_paddle_infer.modes.trt_marking import FUSION_WARNING, marking_calls


def test_marking_calls_bind_to_the_installed_config():
    calls = marking_calls(["relu_0.tmp_0", "pool2d_0.tmp_0"])
    assert [str(c) for c in calls] == [
        "enable_tensorrt_inspector(True)", "mark_trt_engine_outputs(('relu_0.tmp_0', 'pool2d_0.tmp_0'))"]
    assert check_recipe(calls) == []
    assert "change what TensorRT fuses" in FUSION_WARNING


# ---------------------------------------------------------------------------------------
# engine_info_<key>.json as Paddle writes it (TensorRTEngine::GetEngineInfo: "[", each layer's
# IEngineInspector::getLayerInformation(i, kJSON) followed by a newline, "," between layers,
# "]"), engine tensor names with RenameVarBeUnique's "_subgraph_<id>" suffix, and the rule
# that an int8 engine must hold int8 layers (the calibration table or the quantize scales were
# consumed).
# ---------------------------------------------------------------------------------------


def layer(name, kind, inputs, outputs):
    def tensors(items):
        return [{"Name": n, "Location": "Device", "Dimensions": dims, "Format/Datatype": fmt}
                for n, dims, fmt in items]

    return {"Name": name, "LayerType": kind, "Inputs": tensors(inputs), "Outputs": tensors(outputs),
            "ParameterType": "Convolution", "TacticName": "sm80_xmma_fprop", "StreamId": 0,
            "Metadata": ""}


def write_engine_info(path, layers):
    """As GetEngineInfo writes it: not json.dumps of a list, but the layers' own JSON joined."""
    with open(path, "w") as f:
        f.write("[")
        for i, item in enumerate(layers):
            f.write(json.dumps(item, indent=2) + "\n")
            if i != len(layers) - 1:
                f.write(",")
        f.write("]")
    return path


FP16_ENGINE = [
    layer("conv2d (Output: conv2d_0.tmp_0_subgraph_5) + relu", "CaskConvolution",
          [("x_subgraph_2", [1, 3, 32, 32], "Row major linear FP32")],
          [("relu_0.tmp_0_subgraph_7", [1, 16, 32, 32], "Channel major FP16 format where channel % 8 == 0")]),
    layer("pool2d", "CaskPooling",
          [("relu_0.tmp_0_subgraph_7", [1, 16, 32, 32], "Channel major FP16 format where channel % 8 == 0")],
          [("pool2d_0.tmp_0_subgraph_9", [1, 16, 1, 1], "Row major linear FP32")]),
]
INT8_LAYER = layer("conv2d_1", "CaskConvolution",
                   [("relu_0.tmp_0_subgraph_7", [1, 16, 32, 32], "Four wide channel vectorized row major Int8 format")],
                   [("relu_1.tmp_0_subgraph_11", [1, 16, 32, 32], "Four wide channel vectorized row major Int8 format")])


def test_paddles_engine_info_reads_as_layers_with_program_tensor_names(tmp_path):
    path = write_engine_info(tmp_path / "engine_info_123.json", FP16_ENGINE)
    layers = tm.read_engine_info(path)
    assert [(l.type, l.outputs, l.precisions) for l in layers] == [
        ("CaskConvolution", ("relu_0.tmp_0",), ("FP16",)),
        ("CaskPooling", ("pool2d_0.tmp_0",), ("FP32",))]
    assert tm.engine_text([path]) == ("TensorRT engine info: 1 engine(s), 2 layers; layer output "
                                      "precisions: FP16 x1, FP32 x1")
    assert tm.program_name("conv2d_0.tmp_0_subgraph_5") == "conv2d_0.tmp_0"
    assert tm.program_name("x_subgraph") == "x_subgraph"  # no id: not Paddle's suffix


def test_names_only_verbosity_and_other_formats(tmp_path):
    names = tmp_path / "engine_info_1.json"
    names.write_text('["conv2d + relu"\n,"pool2d"\n]')
    assert [l.name for l in tm.read_engine_info(names)] == ["conv2d + relu", "pool2d"]
    assert tm.int8_engine_problem("trt_int8", [names]) == ""  # no precisions recorded: no verdict
    invented = tmp_path / "engine_info_2.json"
    invented.write_text(json.dumps({"Layers": [{"Name": "conv", "Outputs": [{"Name": "a"}]}]}))
    with pytest.raises(OptionError, match="is not a JSON array of layers"):
        tm.read_engine_info(invented)


def test_an_int8_engine_without_int8_layers_fails(tmp_path):
    fp16 = write_engine_info(tmp_path / "engine_info_1.json", FP16_ENGINE)
    assert tm.int8_engine_problem("trt_int8", [fp16]) == (
        "trt_int8: no int8 layer in the TensorRT engine (2 layers: FP16 x1, FP32 x1): the "
        "calibration table or the model's quantize scales did not reach TensorRT")
    int8 = write_engine_info(tmp_path / "engine_info_2.json", FP16_ENGINE + [INT8_LAYER])
    assert tm.int8_engine_problem("trt_int8", [int8]) == ""
