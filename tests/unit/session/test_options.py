"""session/options.py: reading the settings, in process: the device, --paddle-threads,
directories given files, ini values named by their key, --paddle-shape and --paddle-batch as
read, the --paddle-suggest-* options, runs and goldens apart, and the --help text built from
the run-mode and toggle tables and the zoo."""
from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.models.zoo import ZOO
from pytest_paddle_infer.modes import devices
from pytest_paddle_infer.modes.run_modes import RUN_MODES, RUN_MODE_TOGGLES
from pytest_paddle_infer.session.options import OPTIONS, read_settings, run_mode_help


def settings(tmp_path, ini=None, **cli):
    ini = ini or {}

    def getini(key):
        return ini.get(key, [] if key in ("paddle_model", "run_mode", "paddle_suite", "paddle_shape") else "")

    return read_settings(lambda key: cli.get(key), getini, lambda: tmp_path / "cache")


@pytest.mark.parametrize("value, message", [
    ("100000", "--paddle-threads: '100000': more threads than this machine can schedule: at most"),
    ("0", "--paddle-threads: '0': a predictor needs at least one thread"),
])
def test_paddle_threads_limit(tmp_path, value, message):
    with pytest.raises(OptionError, match=message):
        settings(tmp_path, paddle_threads=value)


# -- directories --------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["paddle_report", "paddle_cache_dir", "paddle_save_goldens"])
def test_a_file_where_a_directory_is_wanted(tmp_path, key):
    afile = tmp_path / "a_file"
    afile.write_text("x")
    flag = "--" + key.replace("_", "-")
    with pytest.raises(OptionError, match=f"{flag}: .* is a file .*, but it must be a directory"):
        settings(tmp_path, **{key: str(afile)})
    with pytest.raises(OptionError, match=f"{flag}: .* cannot be made a directory: .*a_file is a file"):
        settings(tmp_path, **{key: str(afile / "sub")})
    with pytest.raises(OptionError, match=f"ini key {key}: .* is a file"):
        settings(tmp_path, ini={key: str(afile)})
    assert afile.read_text() == "x"


def test_directories_that_exist_or_can_be_made_are_fine(tmp_path):
    got = settings(tmp_path, paddle_report=str(tmp_path / "new" / "reports"), paddle_cache_dir=str(tmp_path))
    assert got.report_dir == tmp_path / "new" / "reports" and got.cache_dir == tmp_path


def test_every_directory_option_says_so_in_help():
    assert {o.flag for o in OPTIONS if o.directory} >= {"--paddle-report", "--paddle-cache-dir",
                                                        "--paddle-save-goldens"}
    assert all(o.metavar == "DIR" for o in OPTIONS if o.directory)


# -- ini values are blamed on their ini key ------------------------------------------------


def test_ini_values_are_named_by_their_key(tmp_path):
    with pytest.raises(OptionError) as e:
        settings(tmp_path, ini={"paddle_atol": "abc"})
    assert str(e.value) == "ini key paddle_atol: 'abc' is not a number (e.g. paddle_atol = 1e-4)"
    with pytest.raises(OptionError, match=r"^--paddle-atol: 'abc' is not a number \(e.g. --paddle-atol=1e-4\)"):
        settings(tmp_path, paddle_atol="abc")
    with pytest.raises(OptionError, match="^ini key paddle_baseline: unknown baseline 'nope'"):
        settings(tmp_path, ini={"paddle_baseline": "nope"})
    with pytest.raises(OptionError, match="^ini key run_mode: unknown run mode 'bogus'"):
        settings(tmp_path, ini={"run_mode": ["bogus"]})
    with pytest.raises(OptionError, match="^unknown run mode 'bogus'"):  # the flag is on the line
        settings(tmp_path, run_mode=["bogus"])
    with pytest.raises(OptionError, match="^ini key run_mode: 'cpu_fp32\\+threads=0'"):
        settings(tmp_path, ini={"run_mode": ["cpu_fp32+threads=0"]})


# -- --paddle-shape and --paddle-batch -----------------------------------------------------


def test_shapes_are_read_in_the_order_given(tmp_path):
    got = settings(tmp_path, paddle_shape=["x=4x3x224x224", "mask = 4 x 1"], paddle_batch="4")
    assert got.shapes == (("x", (4, 3, 224, 224)), ("mask", (4, 1))) and got.batch == 4


@pytest.mark.parametrize("values, message", [
    (["x"], "'x' is not NAME=DIMS"),
    (["x=4x3xHxW"], "'x=4x3xHxW' is not NAME=DIMS"),
    (["x=-1x3"], "is not NAME=DIMS"),
    (["x=2x0"], "every dim must be 1 or more, e.g. --paddle-shape=x=2x1"),
    (["x=1x3", "x=2x3"], "input 'x' is given two shapes (1x3 and 2x3); give one"),
])
def test_bad_shapes(tmp_path, values, message):
    with pytest.raises(OptionError) as e:
        settings(tmp_path, paddle_shape=values)
    assert message in str(e.value)


def test_help_lists_every_run_mode_and_toggle():
    text = run_mode_help()
    for name in RUN_MODES:
        assert f"  {name}: " in text
    for syntax, _ in RUN_MODE_TOGGLES:
        assert f"  +{syntax}: " in text
    assert all(o.switch or o.metavar != "VALUE" for o in OPTIONS), \
        [o.flag for o in OPTIONS if not o.switch and o.metavar == "VALUE"]


# ---------------------------------------------------------------------------------------
# --paddle-model's help names every zoo entry (options.py writes them out: it does not import
# the zoo, which the start-up of a session without cases must not pay for).
# ---------------------------------------------------------------------------------------


def test_every_zoo_entry_is_in_the_help():
    help_text = next(o for o in OPTIONS if o.flag == "--paddle-model").help
    assert [name for name in ZOO if name not in help_text] == []


# ---------------------------------------------------------------------------------------
# Ini values named by their key in usage errors: a switch pytest cannot read as true or false,
# and a --paddle-suggest-tolerances value from the ini file (whose fix is not the command line's).
# ---------------------------------------------------------------------------------------


LISTS = ("paddle_model", "run_mode", "paddle_suite", "paddle_shape")


def read(tmp_path, ini):
    def getini(key):
        value = ini.get(key, [] if key in LISTS else "")
        if isinstance(value, Exception):  # pytest's getini raises for a bool it cannot read
            raise value
        return value

    return read_settings(lambda key: None, getini, lambda: tmp_path / "cache")


@pytest.mark.parametrize("raised", [ValueError, pytest.UsageError])  # pytest 8 raises the latter
def test_a_switch_that_is_not_true_or_false_names_its_key(tmp_path, raised):
    with pytest.raises(OptionError) as e:
        read(tmp_path, {"paddle_model": ["tiny_cnn"],
                        "paddle_localize": raised("invalid truth value 'maybe'")})
    assert str(e.value) == ("ini key paddle_localize: invalid truth value 'maybe'; "
                            "write paddle_localize = true or false")


def test_a_suggest_value_from_the_ini_file_gets_an_ini_fix(tmp_path):
    with pytest.raises(OptionError) as e:
        read(tmp_path, {"paddle_model": ["tiny_cnn"], "paddle_suggest_tolerances": "x"})
    assert str(e.value) == ("ini key paddle_suggest_tolerances: 'x' is not one of print, write "
                            "(e.g. paddle_suggest_tolerances = print)")


# ---------------------------------------------------------------------------------------
# options.py: reading the settings (the device).
# ---------------------------------------------------------------------------------------


def test_settings_read_device(tmp_path):
    def settings(**given):
        return read_settings(lambda key: given.get(key), lambda key: "", lambda: tmp_path)

    assert settings().device == devices.AUTO
    assert settings(paddle_device="gpu:3").device.ids == (3,)
    with pytest.raises(OptionError, match="--paddle-device: 'gpu3' is not a device; valid forms: auto"):
        settings(paddle_device="gpu3")


# ---------------------------------------------------------------------------------------
# options.py: --paddle-suggest-tolerances[=print|write], --paddle-suggest-seeds, --paddle-suggest-margin.
# ---------------------------------------------------------------------------------------


def suggest_settings(tmp_path, **given):
    return read_settings(lambda key: given.get(key), lambda key: "", lambda: tmp_path)


def test_defaults_and_values(tmp_path):
    plain = suggest_settings(tmp_path)
    assert (plain.suggest, plain.suggest_seeds, plain.suggest_margin) == ("", 5, 2.0)
    chosen = suggest_settings(tmp_path, paddle_suggest_tolerances="write", paddle_suggest_seeds="3",
                              paddle_suggest_margin="1.5")
    assert (chosen.suggest, chosen.suggest_seeds, chosen.suggest_margin) == ("write", 3, 1.5)


@pytest.mark.parametrize("key,value,message", [
    ("paddle_suggest_tolerances", "tests/", "'tests/' is not one of print, write (a path right after the bare flag"),
    ("paddle_suggest_seeds", "0", "must be a finite number >= 1"),
    ("paddle_suggest_margin", "0.5", "must be a finite number >= 1"),
])
def test_bad_values(tmp_path, key, value, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(")):
        suggest_settings(tmp_path, **{key: value})


def read_cli(tmp_path, **cli):
    return read_settings(lambda key: cli.get(key), lambda key: [] if key in LISTS else "",
                         lambda: tmp_path / "cache")


def test_runs_and_goldens_in_one_directory_is_a_usage_error(tmp_path):
    with pytest.raises(OptionError, match=r"--paddle-save-runs: .* is where --paddle-save-goldens "
                                          r"writes goldens"):
        read_cli(tmp_path, paddle_model=["tiny_cnn"], paddle_save_goldens=str(tmp_path / "g"),
                 paddle_save_runs=str(tmp_path / "g" / "." ))
    (tmp_path / "g").mkdir()
    with pytest.raises(OptionError, match=r"--paddle-save-runs: .* holds the goldens of "
                                          r"--paddle-baseline=golden:"):
        read_cli(tmp_path, paddle_model=["tiny_cnn"], paddle_baseline=f"golden:{tmp_path / 'g'}",
                 paddle_save_runs=str(tmp_path / "g"))
    read_cli(tmp_path, paddle_model=["tiny_cnn"], paddle_save_goldens=str(tmp_path / "g"),
             paddle_save_runs=str(tmp_path / "runs"))  # apart: fine


# ---------------------------------------------------------------------------------------
# Imports point one way.
# ---------------------------------------------------------------------------------------
def _loaded_after(module: str) -> set:
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_option_parsing_imports_no_runtime_module():
    loaded = _loaded_after("pytest_paddle_infer.session.options")
    assert not loaded & {"numpy", "paddle", "yaml", "pytest_paddle_infer.models.cache",
                         "pytest_paddle_infer.engine.baselines", "pytest_paddle_infer.models.inputs"}
