"""Usage errors of options, ini keys and toggles, in process: the thread limit (cpu_threads.py and
the toggle table), directories given files, ini values named by their key, --paddle-shape and
--paddle-batch against a model's inputs (cases/cli_shapes.py), ids without invented dims,
and the --help text built from the run-mode and toggle tables."""

import pytest

from pytest_paddle_infer.cases.case import default_label
from pytest_paddle_infer.cases.cli_shapes import model_shapes, shapes_by_model
from pytest_paddle_infer.cases.suite_nodes import dims_in_text
from pytest_paddle_infer.errors import OptionError
from pytest_paddle_infer.models.inputs import InputSpec
from pytest_paddle_infer.models.source import ModelSource, parse_source
from pytest_paddle_infer.modes import cpu_threads
from pytest_paddle_infer.modes.run_modes import RUN_MODE_TOGGLES, RUN_MODES, parse_run_mode
from pytest_paddle_infer.session.options import OPTIONS, read_settings, run_mode_help


def settings(tmp_path, ini=None, **cli):
    ini = ini or {}

    def getini(key):
        return ini.get(key, [] if key in ("paddle_model", "run_mode", "paddle_suite", "paddle_shape") else "")

    return read_settings(lambda key: cli.get(key), getini, lambda: tmp_path / "cache")


# -- threads ------------------------------------------------------------------------------


def test_thread_limit_is_generous_but_finite():
    assert cpu_threads.MAX_THREADS >= cpu_threads.FLOOR
    assert cpu_threads.MAX_THREADS >= cpu_threads.PER_CPU * cpu_threads.usable_cpus()
    assert cpu_threads.threads_problem(1) is None
    assert cpu_threads.threads_problem(cpu_threads.MAX_THREADS) is None
    assert "at least one thread" in cpu_threads.threads_problem(0)
    assert f"at most {cpu_threads.MAX_THREADS}" in cpu_threads.threads_problem(cpu_threads.MAX_THREADS + 1)


@pytest.mark.parametrize("text, message", [
    ("cpu_fp32+threads=0", "threads 0: a predictor needs at least one thread"),
    ("cpu_fp32+threads=-2", "threads -2: a predictor needs at least one thread"),
    ("cpu_fp32+threads=100000", "threads 100000: more threads than this machine can schedule"),
    ("cpu_fp32+threads=two", "threads='two': give a whole number, e.g. +threads=1"),
    ("trt_int8+calib_batches=0", "calib_batches 0: calibration needs at least one batch"),
    ("cpu_fp32+threads", "threads needs a number: +threads=1"),
])
def test_out_of_range_toggle_numbers_say_why(text, message):
    with pytest.raises(OptionError) as e:
        parse_run_mode(text)
    assert message in str(e.value) and "unknown toggle" not in str(e.value)


def test_threads_within_the_limit_are_taken():
    assert parse_run_mode(f"cpu_fp32+threads={cpu_threads.MAX_THREADS}").threads == cpu_threads.MAX_THREADS


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


DYNAMIC_HW = ModelSource("dyn", "path", "dyn/inference.json",
                         inputs=(InputSpec("x", (-1, 3, -1, -1)), InputSpec("scale", (-1, 2))))
FIXED = ModelSource("fixed", "path", "fixed/inference.json", inputs=(InputSpec("x", (1, 3, 8, 8)),))


def test_batch_sets_every_dynamic_first_dim():
    tiny = parse_source("tiny_cnn")
    assert model_shapes(tiny, (), 4) == (("x", (4, 3, 32, 32)),)
    assert model_shapes(tiny, (("x", (2, 3, 32, 32)),), None) == (("x", (2, 3, 32, 32)),)
    assert model_shapes(tiny, (), None) == ()  # the declared shape at batch 1 when it runs
    assert model_shapes(DYNAMIC_HW, (("x", (2, 3, 9, 7)),), 2) == (("x", (2, 3, 9, 7)), ("scale", (2, 2)))


@pytest.mark.parametrize("source, given, batch, message", [
    ("tiny_cnn", (("x", (1, 3, 64, 64)),), None, "dim 2 is 64, but the model fixes it to 32"),
    ("tiny_cnn", (("x", (1, 3, 32)),), None, "has rank 3, but the model declares rank 4"),
    ("tiny_cnn", (("x", (2, 3, 32, 32)),), 4, "gives batch 2, but --paddle-batch is 4"),
    (DYNAMIC_HW, (), 2, "input 'x' of model dyn has dynamic dims besides the batch ([-1, 3, -1, -1]); "
                        "give its whole shape, e.g. --paddle-shape x=2x3x224x224"),
    (FIXED, (), 2, "--paddle-batch=2: model fixed fixes its batch"),
])
def test_shapes_a_model_cannot_take(source, given, batch, message):
    source = parse_source(source) if isinstance(source, str) else source
    with pytest.raises(OptionError) as e:
        model_shapes(source, given, batch)
    assert message in str(e.value)


def test_a_name_no_model_takes_lists_every_models_inputs():
    with pytest.raises(OptionError) as e:
        shapes_by_model([parse_source("tiny_cnn"), DYNAMIC_HW], (("image", (1, 3, 32, 32)),), None)
    assert str(e.value) == ("--paddle-shape image=1x3x32x32: no model of this session has an input named "
                            "'image'; tiny_cnn takes x [-1, 3, 32, 32]; dyn takes x [-1, 3, -1, -1], "
                            "scale [-1, 2]")
    # a name one model takes applies to that model; an unreadable model is not second-guessed
    unread = ModelSource("unread", "path", "u/inference.json")
    assert shapes_by_model([unread], (("image", (1, 3)),), None) == {"unread": ()}


def test_ids_show_real_shapes_only():
    assert default_label(DYNAMIC_HW, ()) == "1x3x?x?"
    assert default_label(DYNAMIC_HW, (("x", (2, 3, 9, 7)),)) == "2x3x9x7"
    assert default_label(parse_source("tiny_cnn"), ()) == "1x3x32x32"


# -- suites, help --------------------------------------------------------------------------


def test_dims_written_as_on_the_command_line():
    assert dims_in_text("1x3x32x32") == [1, 3, 32, 32]
    assert dims_in_text(" 1 x 3 ") == [1, 3]
    assert dims_in_text("x=1x3") is None and dims_in_text([1, 3]) is None


def test_help_lists_every_run_mode_and_toggle():
    text = run_mode_help()
    for name in RUN_MODES:
        assert f"  {name}: " in text
    for syntax, _ in RUN_MODE_TOGGLES:
        assert f"  +{syntax}: " in text
    assert all(o.switch or o.metavar != "VALUE" for o in OPTIONS), \
        [o.flag for o in OPTIONS if not o.switch and o.metavar == "VALUE"]
