"""Command-line options and ini keys of the ``paddle-infer`` group, and their validation.

Each option has an ini key of the same name without the dashes; the command line wins.
This module does not import pytest: ``register`` takes pytest's parser, and errors are
``OptionError`` for the plugin to turn into ``pytest.UsageError``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence, Tuple

from .tensor_selection import Selection
from .baselines import BASELINE_FORMS, GOLDEN, golden_dir, kind_of, parse_baseline
from .errors import OptionError, PaddleInferError
from .models import ModelSource, parse_source
from .devices import DEVICE_FORMS, AUTO, DeviceChoice, parse_device
from .run_modes import DynamicShape, RunModeSpec, ShapeRange, canonical_mode

BASELINES = BASELINE_FORMS  # auto, cpu, gpu, dygraph, static, golden:DIR (baselines.py)
DEFAULT_RUN_MODES = ("onednn_fp32",)
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Option:
    flag: str
    ini: str
    help: str
    repeat: bool = False  # repeatable on the command line; an ini list
    paths: bool = False  # ini values are paths relative to the ini file
    switch: bool = False  # takes no value on the command line; ini: true/false


OPTIONS: Tuple[Option, ...] = (
    Option("--paddle-model", "paddle_model",
           "model to check: a zoo name (resnet50, mobilenet_v3_small, tiny_cnn, tiny_detector), "
           "a model directory, or a .pdmodel/.json file; repeatable", repeat=True),
    Option("--run-mode", "run_mode",
           "run mode(s) to check, comma-separated; repeatable. Default: onednn_fp32", repeat=True),
    Option("--paddle-baseline", "paddle_baseline",
           "what candidates are compared with: auto (same device, fp32, IR optim off, oneDNN off), "
           "cpu, gpu, dygraph (the nn.Layer the model was exported from), static "
           "(paddle.static.Executor) or golden:DIR (outputs recorded by --paddle-save-goldens). "
           "Default: auto"),
    Option("--paddle-atol", "paddle_atol",
           "absolute tolerance for every tensor; wins over suites and markers. "
           "Default: 1e-4 (looser built-in defaults for bf16/fp16/int8 modes)"),
    Option("--paddle-rtol", "paddle_rtol",
           "relative tolerance for every tensor; wins over suites and markers. "
           "Default: 1e-4 (looser built-in defaults for bf16/fp16/int8 modes)"),
    Option("--paddle-seed", "paddle_seed", "seed of generated inputs. Default: 0"),
    Option("--paddle-cache-dir", "paddle_cache_dir",
           "where exported models and other artefacts are kept. "
           "Default: paddle-infer under pytest's cache dir"),
    Option("--paddle-threads", "paddle_threads",
           "CPU math library threads per predictor. Default: Paddle's own (1)"),
    Option("--paddle-suite", "paddle_suite",
           "a YAML suite file to collect whatever its name (paddle_*.yaml and *.paddle.yaml are "
           "collected anyway); repeatable. Default: none", repeat=True, paths=True),
    Option("--paddle-intermediates", "paddle_intermediates",
           "intermediate tensors to compare: none, all, or globs over tensor names and op types "
           "(conv2d_*,relu_*). Default: none"),
    Option("--paddle-report", "paddle_report",
           "directory for per-case xlsx/json/csv/png reports and index.html/summary.json. "
           "Default: none"),
    Option("--paddle-localize", "paddle_localize",
           "on a failing case, re-run it with optimizations off, memory optim, and IR passes "
           "(or TensorRT op types) bisected, and name the culprit. Default: off", switch=True),
    Option("--paddle-save-goldens", "paddle_save_goldens",
           "record each case's baseline outputs with their metadata (Paddle version and commit, "
           "device, CUDA/cuDNN/TensorRT, seed, inputs digest, tolerances) in this directory, "
           "one file per case. Default: none"),
    Option("--paddle-update-goldens", "paddle_update_goldens",
           "rewrite the goldens that cases with baseline golden:DIR compare against, from the "
           "live baseline each golden was recorded with (auto for new ones). Default: off",
           switch=True),
    Option("--paddle-device", "paddle_device",
           "the GPU of GPU run modes: " + "; ".join(DEVICE_FORMS)),
)


def register(parser) -> None:
    group = parser.getgroup("paddle-infer", "PaddlePaddle inference consistency checks")
    for opt in OPTIONS:
        dest = opt.ini
        if opt.repeat:
            group.addoption(opt.flag, action="append", dest=dest, default=None,
                            metavar="VALUE", help=opt.help)
            parser.addini(opt.ini, opt.help, type="paths" if opt.paths else "args")
        elif opt.switch:
            group.addoption(opt.flag, action="store_true", dest=dest, default=None, help=opt.help)
            parser.addini(opt.ini, opt.help, type="bool", default=False)
        else:
            group.addoption(opt.flag, action="store", dest=dest, default=None,
                            metavar="VALUE", help=opt.help)
            parser.addini(opt.ini, opt.help, type="string", default="")


@dataclass(frozen=True)
class Settings:
    models: Tuple[ModelSource, ...]
    run_modes: Tuple[RunModeSpec, ...]
    run_modes_given: bool
    baseline: str
    atol: Optional[float]
    rtol: Optional[float]
    seed: int
    cache_dir: Path
    threads: Optional[int]
    intermediates: str
    report_dir: Optional[Path]
    localize: bool
    suites: Tuple[Path, ...] = ()  # --paddle-suite files, resolved
    model_refs: Tuple[str, ...] = ()  # --paddle-model values as given: they also narrow suites by name
    unresolved: Tuple[Tuple[str, str], ...] = ()  # (value, why) of --paddle-model values that name
    # no zoo entry or path: fine when they name a suite's model, an error otherwise
    given: Tuple[str, ...] = ()  # ini names of the options set on the command line or in the ini file
    device: DeviceChoice = AUTO  # --paddle-device: the GPU of GPU run modes, per xdist worker
    save_goldens: Optional[Path] = None  # --paddle-save-goldens DIR
    update_goldens: bool = False  # --paddle-update-goldens

    @property
    def active(self) -> bool:
        return bool(self.models or self.unresolved)


def _value(getoption: Callable, getini: Callable, opt: Option):
    """The command line's value when given, else the ini file's, else None."""
    cli = getoption(opt.ini)
    if cli not in (None, [], ""):
        return cli
    ini = getini(opt.ini)
    return ini if ini not in (None, [], "") and ini is not False else None  # False: an unset flag


def _number(opt: Option, text, kind: Callable, minimum: float) -> Optional[float]:
    if text is None:
        return None
    try:
        value = kind(str(text).strip())
    except ValueError:
        raise OptionError(f"{opt.flag}: {text!r} is not a {'whole ' if kind is int else ''}number "
                          f"(e.g. {opt.flag}={'4' if kind is int else '1e-4'})") from None
    if isinstance(value, float) and not math.isfinite(value) or value < minimum:
        raise OptionError(f"{opt.flag}: {text!r} must be a finite number >= {minimum:g}")
    return value


# The toggles after a "+", in the order RunModeSpec.label writes them; (syntax, meaning).
RUN_MODE_TOGGLES: Tuple[Tuple[str, str], ...] = (
    ("ir_optim", "IR optimization on"),
    ("no_ir_optim", "IR optimization off"),
    ("memory_optim", "enable_memory_optim()"),
    ("delete_pass=NAME", "delete_pass(NAME); repeatable"),
    ("threads=N", "CPU math library threads"),
    ("fp32_op=OP", "gpu_fp16: keep op type OP in fp32; repeatable"),
    ("low_precision_io", "gpu_fp16: fp16 inputs and outputs"),
    ("disable_trt_op=OP", "trt_*: leave op type OP to Paddle; repeatable"),
    ("int8_source=calibration|quantized", "trt_int8: a calibration table (default) or a "
                                          "quantized model's own scales"),
    ("dynamic_shape=tuned", "trt_*: collect shape ranges from the case's inputs first"),
    ("dynamic_shape=NAME:MIN:OPT:MAX", "trt_*: one input's range, dims joined by x; one per "
                                       "input"),
    ("disable_trt_plugin_fp16", "trt_* with explicit ranges: no fp16 in TensorRT plugins"),
    ("trt_optimization_level=N", "trt_*: TensorRT builder level 0..5"),
    ("use_static", "trt_*: keep engines, calibration tables and shape ranges across runs"),
    ("calib_batches=N", "trt_int8: calibration batches (default 8)"),
    ("calib_data=DIR", "trt_int8: calibrate on the .npy/.npz batches in DIR"),
)
TOGGLE_HELP = ("toggles: " + ", ".join("+" + t for t, _ in RUN_MODE_TOGGLES)
               + " (e.g. cpu_fp32+no_ir_optim, trt_fp16+dynamic_shape=x:1x3x32x32:1x3x224x224:"
                 "8x3x224x224, trt_int8+calib_batches=16)")
_FLAGS = ("memory_optim", "low_precision_io", "use_static")
_REPEATED = {"delete_pass": "delete_passes", "fp32_op": "fp32_ops",
             "disable_trt_op": "disable_trt_ops"}
_WHOLE_NUMBERS = {"threads": 1, "calib_batches": 1, "trt_optimization_level": 0}  # minimums


def parse_run_mode(text: str) -> RunModeSpec:
    """``trt_fp16+dynamic_shape=x:1x3x32x32:1x3x224x224:8x3x224x224+use_static`` -> a run mode
    with toggles; the inverse of ``RunModeSpec.label``."""
    name, *toggles = [t.strip() for t in text.split("+")]
    mode = canonical_mode(name)
    fields: dict = {}
    ranges: list = []
    tuned = plugin_fp16 = False
    for toggle in toggles:
        key, eq, value = toggle.partition("=")
        if key in ("ir_optim", "no_ir_optim") and not eq:
            fields["ir_optim"] = key == "ir_optim"
        elif key in _FLAGS and not eq:
            fields[key] = True
        elif key == "disable_trt_plugin_fp16" and not eq:
            plugin_fp16 = True
        elif key in _REPEATED and value:
            fields[_REPEATED[key]] = fields.get(_REPEATED[key], ()) + (value,)
        elif key in _WHOLE_NUMBERS and value.isdigit() and int(value) >= _WHOLE_NUMBERS[key]:
            fields[key] = int(value)
        elif key in ("int8_source", "calib_data") and value:
            fields[key] = value
        elif key == "dynamic_shape" and value == "tuned":
            tuned = True
        elif key == "dynamic_shape" and value:
            ranges.append(_shape_range(value))
        else:
            raise OptionError(f"--run-mode: unknown toggle {toggle!r} in {text!r}; {TOGGLE_HELP}")
    try:
        if tuned and ranges:
            raise OptionError("dynamic_shape=tuned and explicit dynamic_shape ranges exclude "
                              "each other")
        if plugin_fp16 and not ranges:
            raise OptionError("disable_trt_plugin_fp16 needs explicit dynamic_shape ranges")
        if tuned or ranges:
            fields["dynamic_shape"] = DynamicShape(tuple(ranges), tuned, plugin_fp16)
        return RunModeSpec(mode, **fields)
    except OptionError as e:
        raise OptionError(f"--run-mode: {text!r}: {e}") from None


def _shape_range(value: str) -> Tuple[str, ShapeRange]:
    """``x:1x3x32x32:1x3x224x224:8x3x224x224`` -> ("x", min, opt, max)."""
    parts = value.rsplit(":", 3)
    try:
        if len(parts) != 4 or not parts[0]:
            raise ValueError
        dims = [tuple(int(d) for d in p.split("x")) for p in parts[1:]]
    except ValueError:
        raise OptionError(f"--run-mode: dynamic_shape={value!r} is not NAME:MIN:OPT:MAX with "
                          f"dims joined by x, e.g. dynamic_shape=x:1x3x32x32:1x3x224x224:"
                          f"8x3x224x224") from None
    return parts[0], ShapeRange(*dims)


def parse_run_modes(values: Sequence[str]) -> Tuple[RunModeSpec, ...]:
    """``--run-mode a,b --run-mode c`` -> specs in order, without repeats."""
    specs: list = []
    for value in values:
        for part in str(value).split(","):
            if part.strip():
                spec = parse_run_mode(part)
                if spec not in specs:
                    specs.append(spec)
    return tuple(specs)


def read_settings(getoption: Callable, getini: Callable, default_cache_dir: Callable[[], Path]) -> Settings:
    opts = {o.ini: o for o in OPTIONS}
    get = lambda key: _value(getoption, getini, opts[key])
    model_refs = get("paddle_model") or []
    models = []
    unresolved = []
    for ref in model_refs:
        try:
            source = parse_source(ref)
        except PaddleInferError as e:
            unresolved.append((ref, f"--paddle-model: {e}"))  # may name a model of a suite
            continue
        if source.name in {m.name for m in models}:
            continue
        models.append(source)
    mode_values = get("run_mode")
    run_modes = parse_run_modes(mode_values or DEFAULT_RUN_MODES)
    if mode_values and not run_modes:
        raise OptionError("--run-mode: no run mode given")
    baseline = parse_baseline_option(get("paddle_baseline") or "auto")
    save_goldens, update_goldens = golden_options(baseline, get("paddle_save_goldens"),
                                                  bool(get("paddle_update_goldens")))
    cache = get("paddle_cache_dir")
    threads = _number(opts["paddle_threads"], get("paddle_threads"), int, 1)
    seed = _number(opts["paddle_seed"], get("paddle_seed"), int, 0)
    suites = []
    for value in get("paddle_suite") or []:
        path = Path(value).expanduser().resolve()
        if not path.is_file():
            raise OptionError(f"--paddle-suite: no such file {value!r} ({path})")
        suites.append(path)
    return Settings(
        models=tuple(models),
        run_modes=run_modes,
        run_modes_given=bool(mode_values),
        baseline=baseline,
        atol=_number(opts["paddle_atol"], get("paddle_atol"), float, 0.0),
        rtol=_number(opts["paddle_rtol"], get("paddle_rtol"), float, 0.0),
        seed=DEFAULT_SEED if seed is None else int(seed),
        cache_dir=Path(cache).expanduser().resolve() if cache else default_cache_dir(),
        threads=None if threads is None else int(threads),
        intermediates=Selection(get("paddle_intermediates") or "none").spec,
        report_dir=Path(get("paddle_report")).expanduser().resolve() if get("paddle_report") else None,
        localize=bool(get("paddle_localize")),
        suites=tuple(suites),
        model_refs=tuple(str(r).strip() for r in model_refs),
        unresolved=tuple(unresolved),
        given=tuple(o.ini for o in OPTIONS if get(o.ini) is not None),
        device=parse_device(get("paddle_device")),
        save_goldens=save_goldens,
        update_goldens=update_goldens,
    )


def parse_baseline_option(text: str) -> str:
    try:
        return parse_baseline(text)  # golden:DIR relative to the current directory
    except OptionError as e:
        raise OptionError(f"--paddle-baseline: {e}") from None


def golden_options(baseline: str, save_dir, update: bool) -> Tuple[Optional[Path], bool]:
    """--paddle-save-goldens records live baselines; --paddle-update-goldens rewrites the goldens
    compared against (a suite may name them, so the flag alone is fine)."""
    golden = kind_of(baseline) == GOLDEN
    if save_dir is not None and golden:
        raise OptionError(f"--paddle-save-goldens records live baselines, but --paddle-baseline is "
                          f"{baseline}; to rewrite those goldens use --paddle-update-goldens instead")
    if golden and not update and not golden_dir(baseline).is_dir():
        raise OptionError(f"--paddle-baseline={baseline}: no such directory; record goldens first "
                          f"with --paddle-save-goldens=DIR (or create them with "
                          f"--paddle-update-goldens)")
    if save_dir is not None and update:
        raise OptionError("--paddle-save-goldens and --paddle-update-goldens exclude each other: "
                          "save records live baselines into a directory, update rewrites the "
                          "goldens of golden:DIR baselines")
    path = Path(str(save_dir)).expanduser().resolve() if save_dir is not None else None
    return path, update
