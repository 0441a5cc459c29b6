"""Command-line options and ini keys of the ``paddle-infer`` group, and their validation.

Each option has an ini key of the same name; the command line wins. Errors are ``OptionError``
(the plugin makes them ``pytest.UsageError``); what resolves models is imported when called."""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Tuple

from ..cases.tensor_selection import Selection
from ..errors import OptionError, PaddleInferError
from ..modes.devices import DEVICE_FORMS, AUTO, DeviceChoice, parse_device
from ..modes.run_modes import ALIASES, RUN_MODE_TOGGLES, RUN_MODES, RunModeSpec, parse_run_modes
from ..modes.cpu_threads import threads_problem

if TYPE_CHECKING:
    from ..models.source import ModelSource

DEFAULT_RUN_MODES = ("onednn_fp32",)
DEFAULT_SEED = 0
DEFAULT_SUGGEST_SEEDS = 5  # verdict/suggest.py: its defaults, without importing numpy here
DEFAULT_SUGGEST_MARGIN = 2.0


@dataclass(frozen=True)
class Option:
    flag: str
    ini: str
    help: str
    repeat: bool = False  # repeatable on the command line; an ini list
    paths: bool = False  # ini values are paths relative to the ini file
    switch: bool = False  # takes no value on the command line; ini: true/false
    metavar: str = "VALUE"  # what the option takes, as --help shows it
    directory: bool = False  # a directory path (created when missing): a file is a usage error
    const: Optional[str] = None  # the value when the flag is given bare (--flag, or --flag=VALUE)

    def example(self, value: str) -> str:
        """How to write ``value`` where this option came from: ``--flag=v`` or ``ini = v``."""
        return f"{self.flag}={value}" if self.flag.startswith("--") else f"{self.ini} = {value}"


def run_mode_help() -> str:
    """The run modes and toggles, one per line, from their tables."""
    engines = {"paddle": "native kernels", "onednn": "oneDNN", "tensorrt": "TensorRT"}
    bits = {"Float32": "fp32", "Half": "fp16", "Bfloat16": "bf16", "Int8": "int8"}
    modes = [f"  {name}: {m.device.upper()}, {engines.get(m.engine, m.engine)}, "
             f"{bits.get(m.precision, m.precision)}; {m.tolerance.describe().replace('=', ' ')}"
             for name, m in RUN_MODES.items()]
    toggles = [f"  +{syntax}: {meaning}" for syntax, meaning in RUN_MODE_TOGGLES]
    return "\n".join(
        ["run mode(s) to check, comma-separated; repeatable. Default: onednn_fp32. MODE is one of:"]
        + modes + [f"  aliases: {', '.join(f'{a}={m}' for a, m in ALIASES.items())}",
                   "TOGGLE, after a mode (cpu_fp32+no_ir_optim+threads=4):"] + toggles)


OPTIONS: Tuple[Option, ...] = (
    Option("--paddle-model", "paddle_model",
           "model to check: a zoo name (resnet50, mobilenet_v3_small, tiny_cnn, tiny_detector; "
           "quantized: tiny_cnn_int8, resnet18_int8), "
           "a model directory, or a .pdmodel/.json file; repeatable", repeat=True, metavar="NAME|PATH"),
    Option("--run-mode", "run_mode", run_mode_help(), repeat=True, metavar="MODE[+TOGGLE...][,MODE...]"),
    Option("--paddle-baseline", "paddle_baseline",
           "what candidates are compared with: auto (same device, fp32, IR optim off, oneDNN off), "
           "cpu, gpu, dygraph (the nn.Layer the model was exported from), static "
           "(paddle.static.Executor) or golden:DIR (outputs recorded by --paddle-save-goldens). "
           "Default: auto", metavar="auto|cpu|gpu|dygraph|static|golden:DIR"),
    Option("--paddle-atol", "paddle_atol",
           "absolute tolerance for every tensor; wins over suites and markers. "
           "Default: 1e-4 (looser built-in defaults for bf16/fp16/int8 modes)", metavar="ATOL"),
    Option("--paddle-rtol", "paddle_rtol",
           "relative tolerance for every tensor; wins over suites and markers. "
           "Default: 1e-4 (looser built-in defaults for bf16/fp16/int8 modes)", metavar="RTOL"),
    Option("--paddle-seed", "paddle_seed", "seed of generated inputs. Default: 0", metavar="N"),
    Option("--paddle-shape", "paddle_shape",
           "the concrete shape of one input of the --paddle-model cases, dims joined by x "
           "(x=4x3x224x224); repeatable; ini: one per line. Dims the model fixes must match. "
           "Default: the declared shapes at batch 1", repeat=True, metavar="NAME=DIMS"),
    Option("--paddle-batch", "paddle_batch",
           "the batch of the --paddle-model cases: the first dim of every input whose first dim "
           "is dynamic. Default: 1", metavar="N"),
    Option("--paddle-cache-dir", "paddle_cache_dir",
           "where exported models and other artefacts are kept. "
           "Default: paddle-infer under pytest's cache dir", metavar="DIR", directory=True),
    Option("--paddle-threads", "paddle_threads",
           "CPU math library threads per predictor. Default: Paddle's own (1)", metavar="N"),
    Option("--paddle-suite", "paddle_suite",
           "a YAML suite file to collect whatever its name (paddle_*.yaml and *.paddle.yaml are "
           "collected anyway); repeatable. Default: none", repeat=True, paths=True, metavar="FILE"),
    Option("--paddle-program", "paddle_program",
           "the program checked: default (each model's own format: zoo entries and builders in "
           "the installed Paddle's export format, PIR .json on Paddle 3.x, and their legacy "
           ".pdmodel export for trt_* modes there; model files as given) or legacy (zoo entries "
           "and builders re-exported as .pdmodel; model files are never re-exported). "
           "Default: default", metavar="default|legacy"),
    Option("--paddle-intermediates", "paddle_intermediates",
           "intermediate tensors to compare: none, all, or globs over tensor names and op types "
           "(conv2d_*,relu_*). Default: none", metavar="none|all|GLOB[,GLOB...]"),
    Option("--paddle-report", "paddle_report",
           "directory for per-case xlsx/json/csv/png reports and index.html/summary.json. "
           "Default: none", metavar="DIR", directory=True),
    Option("--paddle-localize", "paddle_localize",
           "on a failing or crashing case, re-run it with optimizations off, memory optim, and "
           "a delta-debugging search over IR passes and op types kept out (fp32, TensorRT), "
           "each trial in a child process; name the culprit and a run mode that passes. "
           "Default: off", switch=True),
    Option("--paddle-save-goldens", "paddle_save_goldens",
           "record each case's baseline outputs with their metadata (Paddle version and commit, "
           "device, CUDA/cuDNN/TensorRT, seed, inputs digest, tolerances) in this directory, "
           "one file per case. Default: none", metavar="DIR", directory=True),
    Option("--paddle-goldens-float16", "paddle_goldens_float16",
           "store the intermediate tensors of goldens and saved runs as float16 (half the "
           "size; values round to about 1e-3 relative; outputs are kept as computed). "
           "Default: off", switch=True),
    Option("--paddle-save-runs", "paddle_save_runs",
           "record each case's candidate run (outputs and the --paddle-intermediates tensors, "
           "in the goldens' format) in this directory, for offline diffs with "
           "paddle-infer-diff. Default: none", metavar="DIR", directory=True),
    Option("--paddle-update-goldens", "paddle_update_goldens",
           "rewrite the goldens that cases with baseline golden:DIR compare against, from the "
           "live baseline each golden was recorded with (auto for new ones). Default: off", switch=True),
    Option("--paddle-device", "paddle_device",
           "the GPU of GPU run modes: " + "; ".join(DEVICE_FORMS), metavar="auto|gpu:N|gpu:N,M,..."),
    Option("--paddle-timeout", "paddle_timeout",
           "seconds one request of a case (prepare, or run and localize) may take in the executor "
           "process before it is killed and the case errors. Default: 900", metavar="SECONDS"),
    Option("--paddle-executor", "paddle_executor",
           "where cases run: child (a supervised executor process per pytest process: a crash "
           "or hang costs one case) or inline (this process: for --pdb; a crash ends the "
           "session). Default: child", metavar="child|inline"),
    Option("--paddle-strict", "paddle_strict",
           "fail a case with an output that cannot fail under its tolerance (empty, one-hot or "
           "flat, spread within the tolerance, the same for two input seeds) instead of passing "
           "it with a PaddleInferWarning. Default: off", switch=True),
    Option("--paddle-suggest-tolerances", "paddle_suggest_tolerances",
           "measure each case over several input seeds (--paddle-suggest-seeds) and suggest per "
           "output the worst figure times a margin (--paddle-suggest-margin): print (the bare "
           "flag) prints them after the summary; write also writes them into the suite files "
           "in place, keeping comments and order. Default: off", metavar="print|write", const="print"),
    Option("--paddle-selfcheck", "paddle_selfcheck",
           "instead of tests: run each run mode this Paddle and machine can run on a tiny zoo "
           "model, with a positive and a negative control, print a table (Paddle, CUDA, cuDNN, "
           "TensorRT, GPU, TF32; per mode engaged / not engaged / cannot run here) and write "
           "selfcheck.json for bug reports. Default: off", switch=True),
    Option("--paddle-suggest-seeds", "paddle_suggest_seeds",
           "input seeds per case for --paddle-suggest-tolerances: the case's seed and the next "
           f"N - 1. Default: {DEFAULT_SUGGEST_SEEDS}", metavar="N"),
    Option("--paddle-suggest-margin", "paddle_suggest_margin",
           "the factor between the worst measured error and the suggested tolerance. "
           f"Default: {DEFAULT_SUGGEST_MARGIN:g}", metavar="X"),
)
SUGGEST_CHOICES = ("print", "write")
EXECUTORS = ("child", "inline")
DEFAULT_TIMEOUT = 900.0


def register(parser) -> None:
    group = parser.getgroup("paddle-infer", "PaddlePaddle inference consistency checks")
    for opt in OPTIONS:
        common = dict(dest=opt.ini, default=None, help=opt.help)
        if opt.switch:
            group.addoption(opt.flag, action="store_true", **common)
            parser.addini(opt.ini, opt.help, type="bool", default=False)
        elif opt.repeat:
            group.addoption(opt.flag, action="append", metavar=opt.metavar, **common)
            parser.addini(opt.ini, opt.help, type="paths" if opt.paths else "args")
        else:
            bare = dict(nargs="?", const=opt.const) if opt.const is not None else {}
            group.addoption(opt.flag, action="store", metavar=opt.metavar, **bare, **common)
            parser.addini(opt.ini, opt.help, type="string", default="")


@dataclass(frozen=True)
class Settings:
    models: Tuple["ModelSource", ...]
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
    unresolved: Tuple[Tuple[str, str], ...] = ()  # (value, why): may name a suite's model
    given: Tuple[str, ...] = ()  # ini names of the options set on the command line or in the ini file
    device: DeviceChoice = AUTO  # --paddle-device: the GPU of GPU run modes, per xdist worker
    save_goldens: Optional[Path] = None  # --paddle-save-goldens DIR
    update_goldens: bool = False  # --paddle-update-goldens
    goldens_float16: bool = False  # --paddle-goldens-float16: intermediates stored as float16
    save_runs: Optional[Path] = None  # --paddle-save-runs DIR: candidates' runs recorded here
    timeout: float = DEFAULT_TIMEOUT  # --paddle-timeout: seconds per executor request
    executor: str = "child"  # --paddle-executor: child | inline
    program: str = "default"  # --paddle-program: default | legacy (models/program.py)
    strict: bool = False  # --paddle-strict: an output that cannot fail fails its case
    shapes: Tuple[Tuple[str, Tuple[int, ...]], ...] = ()  # --paddle-shape NAME=DIMS, given order
    batch: Optional[int] = None  # --paddle-batch: the dynamic first dim of --paddle-model cases
    suggest: str = ""  # --paddle-suggest-tolerances: "", print or write (verdict/suggest.py)
    suggest_seeds: int = DEFAULT_SUGGEST_SEEDS
    suggest_margin: float = DEFAULT_SUGGEST_MARGIN

    @property
    def active(self) -> bool:
        return bool(self.models or self.unresolved)


def _value(getoption: Callable, getini: Callable, opt: Option):
    """The command line's value when given, else the ini file's, else None."""
    cli = getoption(opt.ini)
    if cli not in (None, [], ""):
        return cli
    try:
        ini = getini(opt.ini)
    except Exception as e:  # pytest reads a switch's ini value as a bool: "maybe" raises
        import pytest

        if not isinstance(e, (ValueError, pytest.UsageError)):
            raise
        raise OptionError(f"{opt.flag}: {e}; write {opt.ini} = true or false" if opt.switch
                          else f"{opt.flag}: {e}") from None
    return ini if ini not in (None, [], "") and ini is not False else None  # False: an unset flag


def _number(opt: Option, text, kind: Callable, minimum: float, example: str = "") -> Optional[float]:
    """``example``: a valid value to show (the default, 4 or 1e-4, must be valid for ``opt``)."""
    if text is None:
        return None
    example = example or ("4" if kind is int else "1e-4")
    try:
        value = kind(str(text).strip())
    except ValueError:
        raise OptionError(f"{opt.flag}: {text!r} is not a {'whole ' if kind is int else ''}number "
                          f"(e.g. {opt.example(example)})") from None
    if isinstance(value, float) and not math.isfinite(value) or value < minimum:
        raise OptionError(f"{opt.flag}: {text!r} must be a finite number >= {minimum:g} "
                          f"(e.g. {opt.example(example)})")
    return value


def named(opt: Option, getoption: Callable) -> Option:
    """The option as its messages name it: the flag when the command line gave it, else the ini key."""
    return opt if getoption(opt.ini) not in (None, [], "") else replace(opt, flag=f"ini key {opt.ini}")


def read_settings(getoption: Callable, getini: Callable, default_cache_dir: Callable[[], Path]) -> Settings:
    """The session's settings; an OptionError names the option as the user wrote it."""
    try:
        return _read_settings(getoption, getini, default_cache_dir)
    except OptionError as e:
        text = str(e)
        for opt in OPTIONS:  # messages written deeper down start with the flag
            if text.startswith(opt.flag + ":") or text.startswith(opt.flag + "="):
                text = named(opt, getoption).flag + text[len(opt.flag):]
                break
        raise OptionError(text) from None


def _read_settings(getoption: Callable, getini: Callable, default_cache_dir: Callable[[], Path]) -> Settings:
    from ..models.source import parse_source  # resolves zoo names and paths; imported when used

    opts = {o.ini: named(o, getoption) for o in OPTIONS}
    get = lambda key: _value(getoption, getini, opts[key])
    model_refs = get("paddle_model") or []
    models = []
    unresolved = []
    for ref in model_refs:
        try:
            source = parse_source(ref)
        except PaddleInferError as e:
            unresolved.append((ref, f"{opts['paddle_model'].flag}: {e}"))  # may name a suite's model
            continue
        same = next((m for m in models if m.name == source.name), None)
        if same is not None and (same.kind, same.ref) == (source.kind, source.ref):
            continue  # the same model named twice
        if same is not None:
            raise OptionError(duplicate_name(opts["paddle_model"], same, source))
        models.append(source)
    mode_values = get("run_mode")
    try:
        run_modes = parse_run_modes(mode_values or DEFAULT_RUN_MODES)
    except OptionError as e:  # "unknown run mode": say where it was written when not obvious
        if str(e).startswith("--run-mode") or opts["run_mode"].flag.startswith("--"):
            raise
        raise OptionError(f"{opts['run_mode'].flag}: {e}") from None
    if mode_values and not run_modes:
        raise OptionError("--run-mode: no run mode given")
    baseline = parse_baseline_option(get("paddle_baseline") or "auto")
    save_goldens, update_goldens = golden_options(baseline, get("paddle_save_goldens"),
                                                  bool(get("paddle_update_goldens")))
    cache = get("paddle_cache_dir")
    threads = _threads(opts["paddle_threads"], get("paddle_threads"))
    for opt in OPTIONS:
        if opt.directory:
            check_directory(opts[opt.ini], get(opt.ini))
    seed = _number(opts["paddle_seed"], get("paddle_seed"), int, 0, example="0")
    suites = []
    for value in get("paddle_suite") or []:
        path = Path(value).expanduser().resolve()
        if not path.is_file():
            raise OptionError(f"--paddle-suite: no such file {value!r} ({path})")
        suites.append(path)
    return Settings(
        models=tuple(models), run_modes=run_modes, run_modes_given=bool(mode_values), baseline=baseline,
        atol=_number(opts["paddle_atol"], get("paddle_atol"), float, 0.0),
        rtol=_number(opts["paddle_rtol"], get("paddle_rtol"), float, 0.0),
        seed=DEFAULT_SEED if seed is None else int(seed),
        cache_dir=Path(cache).expanduser().resolve() if cache else default_cache_dir(),
        threads=None if threads is None else int(threads),
        intermediates=Selection(get("paddle_intermediates") or "none").spec,
        report_dir=Path(get("paddle_report")).expanduser().resolve() if get("paddle_report") else None,
        localize=bool(get("paddle_localize")), suites=tuple(suites),
        model_refs=tuple(str(r).strip() for r in model_refs), unresolved=tuple(unresolved),
        given=tuple(o.ini for o in OPTIONS if get(o.ini) is not None),
        device=parse_device(get("paddle_device")), save_goldens=save_goldens,
        update_goldens=update_goldens, goldens_float16=bool(get("paddle_goldens_float16")),
        save_runs=runs_dir(opts["paddle_save_runs"], get("paddle_save_runs"), save_goldens, baseline),
        timeout=_timeout(opts["paddle_timeout"], get("paddle_timeout")),
        executor=_choice(opts["paddle_executor"], get("paddle_executor") or "child", EXECUTORS),
        program=_program(opts["paddle_program"], get("paddle_program"), models),
        strict=bool(get("paddle_strict")),
        shapes=parse_shapes(opts["paddle_shape"], get("paddle_shape") or ()),
        batch=_number(opts["paddle_batch"], get("paddle_batch"), int, 1),
        suggest=_suggest(opts["paddle_suggest_tolerances"], get("paddle_suggest_tolerances")),
        suggest_seeds=int(_number(opts["paddle_suggest_seeds"], get("paddle_suggest_seeds"), int, 1, example="8")
                          or DEFAULT_SUGGEST_SEEDS),
        suggest_margin=_margin(opts["paddle_suggest_margin"], get("paddle_suggest_margin")))


def duplicate_name(opt: Option, first, second) -> str:
    """Two --paddle-model values whose cases would carry one name: neither may be dropped."""
    def shown(source):
        return f"the zoo entry {source.ref}" if source.kind == "zoo" else source.ref

    disk = second if second.kind == "path" else first
    prog = Path(disk.ref)
    named_by = prog.parent if prog.stem in ("inference", "model", "__model__") else prog
    other = named_by.with_name(f"{named_by.stem}_2{named_by.suffix}")
    return (f"{opt.flag}: {shown(first)} and {shown(second)} are both named {second.name!r} (a model "
            f"on disk is named after its directory or program file), and one session cannot tell "
            f"their cases apart; check them in two sessions, or give one another name through a "
            f"symlink: ln -s {named_by} {other}, then {opt.example(str(other))}")


def _suggest(opt: Option, text) -> str:
    if not text:
        return ""
    if str(text).strip() not in SUGGEST_CHOICES:
        fix = (f"a path right after the bare flag is read as its value: write {opt.flag}=print, "
               f"or give the paths first" if opt.flag.startswith("--") else f"e.g. {opt.example('print')}")
        raise OptionError(f"{opt.flag}: {text!r} is not one of {', '.join(SUGGEST_CHOICES)} ({fix})")
    return str(text).strip()


def _margin(opt: Option, text) -> float:
    value = _number(opt, text, float, 1.0, example="2")
    return DEFAULT_SUGGEST_MARGIN if value is None else float(value)


def _program(opt: Option, text, models) -> str:
    """default or legacy; legacy re-exports zoo entries and builders, never a model file."""
    from ..models.program import DEFAULT, LEGACY, PROGRAMS, never_re_exported

    program = _choice(opt, text or DEFAULT, PROGRAMS)
    on_disk = [m for m in models if m.kind == "path"]
    if program == LEGACY and on_disk:
        raise OptionError(f"{opt.flag}=legacy: {never_re_exported(on_disk[0])}; drop "
                          f"{opt.flag}=legacy: a model file is checked in the format it is written in")
    return program


def _threads(opt: Option, text) -> Optional[int]:
    """CPU math threads: a whole number the machine can schedule (cpu_threads.py)."""
    value = _number(opt, text, int, -math.inf)
    if value is not None and threads_problem(value):
        raise OptionError(f"{opt.flag}: {text!r}: {threads_problem(value)}")
    return value


def check_directory(opt: Option, text) -> None:
    """A path that must be a directory: a file there or in the way is a usage error now."""
    if text is None:
        return
    path = Path(str(text)).expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise OptionError(f"{opt.flag}: {text!r} is a file ({path}), but it must be a directory; "
                          f"give a directory (it is made when missing)")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OptionError(f"{opt.flag}: {text!r} cannot be made a directory: {parent} is "
                                  f"a file; give a directory path")
            if not os.access(parent, os.W_OK | os.X_OK) and not path.exists():
                raise OptionError(f"{opt.flag}: {text!r} cannot be made: {parent} is not writable")
            return


SHAPE_FORM = re.compile(r"^\s*([^=\s]+)\s*=\s*(\d+(?:\s*x\s*\d+)*)\s*$")


def parse_shapes(opt: Option, values) -> Tuple[Tuple[str, Tuple[int, ...]], ...]:
    """``NAME=DIMS`` values (``x=4x3x224x224``) -> ((name, dims), ...) in the order given."""
    shapes: dict = {}
    for value in values:
        match = SHAPE_FORM.match(str(value))
        if not match:
            raise OptionError(f"{opt.flag}: {value!r} is not NAME=DIMS; write the input's name, "
                              f"'=' and its dims joined by x, e.g. {opt.example('x=4x3x224x224')}")
        name, text = match.groups()
        dims = tuple(int(d) for d in re.split(r"\s*x\s*", text))
        if 0 in dims:
            raise OptionError(f"{opt.flag}: {value!r}: every dim must be 1 or more, e.g. "
                              f"{opt.example(name + '=' + 'x'.join(str(d or 1) for d in dims))}")
        if name in shapes and shapes[name] != dims:
            raise OptionError(f"{opt.flag}: input {name!r} is given two shapes "
                              f"({'x'.join(map(str, shapes[name]))} and {text}); give one")
        shapes[name] = dims
    return tuple(shapes.items())


def _timeout(opt: Option, text) -> float:
    value = _number(opt, text, float, 0.0, example="600")
    if value is None:
        return DEFAULT_TIMEOUT
    if value <= 0:
        raise OptionError(f"{opt.flag}: {text!r} must be a number of seconds above 0 (e.g. {opt.example('600')})")
    return value


def _choice(opt: Option, text: str, choices: Sequence[str]) -> str:
    value = str(text).strip()
    if value not in choices:
        raise OptionError(f"{opt.flag}: {text!r} is not one of {', '.join(choices)}")
    return value


def parse_baseline_option(text: str) -> str:
    from ..cases.baseline_forms import parse_baseline

    try:
        return parse_baseline(text)  # golden:DIR relative to the current directory
    except OptionError as e:
        raise OptionError(f"--paddle-baseline: {e}") from None


def runs_dir(opt: Option, text, save_goldens: Optional[Path], baseline: str) -> Optional[Path]:
    """--paddle-save-runs DIR, apart from the goldens (a run has its golden's file name)."""
    from ..cases.baseline_forms import GOLDEN, golden_dir, kind_of

    if not text:
        return None
    path = Path(str(text)).expanduser().resolve()
    if path == save_goldens:
        raise OptionError(f"{opt.flag}: {text!r} is where --paddle-save-goldens writes goldens; a "
                          f"saved run would replace its case's golden (same file name): give "
                          f"another directory")
    if kind_of(baseline) == GOLDEN and path == golden_dir(baseline).expanduser().resolve():
        raise OptionError(f"{opt.flag}: {text!r} holds the goldens of --paddle-baseline={baseline}; "
                          f"a saved run would replace the golden its case compares with: give "
                          f"another directory")
    return path


def golden_options(baseline: str, save_dir, update: bool) -> Tuple[Optional[Path], bool]:
    """--paddle-save-goldens records live baselines; --paddle-update-goldens rewrites goldens."""
    from ..cases.baseline_forms import GOLDEN, golden_dir, kind_of

    golden = kind_of(baseline) == GOLDEN
    if save_dir is not None and golden:
        raise OptionError(f"--paddle-save-goldens records live baselines, but --paddle-baseline is "
                          f"{baseline}; to rewrite those goldens use --paddle-update-goldens instead")
    if golden and golden_dir(baseline).exists() and not golden_dir(baseline).is_dir():
        raise OptionError(f"--paddle-baseline={baseline}: that is a file, but goldens are a "
                          f"directory of them: give the directory --paddle-save-goldens wrote")
    if golden and not update and not golden_dir(baseline).is_dir():
        raise OptionError(f"--paddle-baseline={baseline}: no such directory; record goldens first "
                          f"with --paddle-save-goldens=DIR (or create them with --paddle-update-goldens)")
    if save_dir is not None and update:
        raise OptionError("--paddle-save-goldens and --paddle-update-goldens exclude each other: "
                          "save records live baselines into a directory, update rewrites the "
                          "goldens of golden:DIR baselines")
    return (Path(str(save_dir)).expanduser().resolve() if save_dir is not None else None), update
