"""engine_info_<key>.json as Paddle writes it (TensorRTEngine::GetEngineInfo: "[", each layer's
IEngineInspector::getLayerInformation(i, kJSON) followed by a newline, "," between layers,
"]"), engine tensor names with RenameVarBeUnique's "_subgraph_<id>" suffix, and the rule
that an int8 engine must hold int8 layers (the calibration table or the quantize scales were
consumed)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.engine.runner import judge_engines
from pytest_paddle_infer.models.inputs import InputSpec
from pytest_paddle_infer.models.source import ModelFiles
from pytest_paddle_infer.engine import build_plan as bp
from pytest_paddle_infer.modes import trt_marking as tm
from pytest_paddle_infer.modes.run_modes import parse_run_mode
from pytest_paddle_infer.protocol import CaseResult


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


def test_judge_engines_reads_the_case_dirs_and_fails_an_int8_case(tmp_path):
    optim, model_cache = tmp_path / "optim", tmp_path / "model" / "_opt_cache"
    optim.mkdir()
    model_cache.mkdir(parents=True)
    old = write_engine_info(model_cache / "engine_info_9.json", FP16_ENGINE + [INT8_LAYER])
    os.utime(old, (time.time() - 3600,) * 2)  # an earlier run's: not this engine's
    write_engine_info(optim / "engine_info_1.json", FP16_ENGINE)
    result = CaseResult("m[trt_int8]", [], "", "", "", 0.0)
    judge_engines(result, parse_run_mode("trt_int8"), (str(optim), str(model_cache)), time.time())
    assert result.notes == ["TensorRT engine info: 1 engine(s), 2 layers; layer output precisions: "
                            "FP16 x1, FP32 x1"]
    assert result.problems and "no int8 layer in the TensorRT engine" in result.problems[0]
    fp16 = CaseResult("m[trt_fp16]", [], "", "", "", 0.0)
    judge_engines(fp16, parse_run_mode("trt_fp16"), (str(optim), str(model_cache)), time.time())
    assert fp16.problems == [] and len(fp16.notes) == 1
    nothing = CaseResult("m[trt_int8]", [], "", "", "", 0.0)
    judge_engines(nothing, parse_run_mode("trt_int8"), (str(tmp_path / "none"),), time.time())
    assert nothing.problems == [] and "whether int8 layers were built is not known" in nothing.notes[0]


def test_int8_plans_turn_the_serialized_inspector_on():
    model = ModelFiles("m", "/m/inference.pdmodel", "/m/inference.pdiparams", (InputSpec("x", (1, 3, 8, 8)),))
    specs = [InputSpec("x", (1, 3, 8, 8))]
    for text in ("trt_int8", "trt_int8+int8_source=quantized"):
        p = bp.candidate_plan(parse_run_mode(text), model, specs, optim_root="/o")
        assert tm.INSPECTOR in p.final.recipe
        assert bp.engine_dirs(p, model) == (p.steps[0].path, "/m/_opt_cache")
    fp16 = bp.candidate_plan(parse_run_mode("trt_fp16"), model, specs, optim_root="/o")
    assert tm.INSPECTOR not in fp16.final.recipe


def paddle_engine_info_path(opt_cache_dir: str, key: str) -> str:
    """Where Paddle 2.6.2 writes the inspector's file (read in its libpaddle.so): the optim
    cache dir and the name concatenated, no separator between."""
    return opt_cache_dir + "engine_info_" + key + ".json"


def test_the_int8_guard_finds_the_file_where_paddle_writes_it(tmp_path):
    """The recipe's optim cache dir ends in a separator, so Paddle's concatenation lands inside
    the case's dir and the int8 guard fires on an engine built in float; a file beside the dir
    (<dir>engine_info_*.json, an optim cache dir given without the separator) is found too."""
    model = ModelFiles("m", str(tmp_path / "m" / "inference.pdmodel"),
                       str(tmp_path / "m" / "inference.pdiparams"), (InputSpec("x", (1, 3, 8, 8)),))
    p = bp.candidate_plan(parse_run_mode("trt_int8"), model, [InputSpec("x", (1, 3, 8, 8))],
                          optim_root=tmp_path / "optim")
    bp.prepare_cache_dir(p.steps[0])
    [given] = [c.args[0] for c in p.final.recipe if c.method == "set_optim_cache_dir"]
    written = write_engine_info(paddle_engine_info_path(given, "1234"), FP16_ENGINE)
    assert os.path.dirname(written) == p.steps[0].path
    start = time.time() - 1
    result = CaseResult("m[trt_int8]", [], "", "", "", 0.0)
    judge_engines(result, parse_run_mode("trt_int8"), bp.engine_dirs(p, model), start)
    assert result.problems and "no int8 layer in the TensorRT engine" in result.problems[0]
    os.remove(written)  # the dir as Paddle would take it without the separator
    beside = write_engine_info(paddle_engine_info_path(given.rstrip(os.sep), "5678"), FP16_ENGINE)
    assert os.path.dirname(beside) == os.path.dirname(p.steps[0].path)
    assert tm.engine_info_files(p.steps[0].path) == [Path(beside)]
    again = CaseResult("m[trt_int8]", [], "", "", "", 0.0)
    judge_engines(again, parse_run_mode("trt_int8"), bp.engine_dirs(p, model), start)
    assert again.problems and "no int8 layer in the TensorRT engine" in again.problems[0]
