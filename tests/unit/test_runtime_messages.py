"""Runtime messages a person can act on: a child's death named, the user's frames only, no
colour codes, a hint for a known Paddle error, no nan(nan), the whole message kept, globs
that select nothing named, goldens updates that rewrite nothing said."""
import json

import numpy as np

from pytest_paddle_infer.errors import describe_exit, strip_ansi
from pytest_paddle_infer.engine.capture import SeenTensors, selection_problems
from pytest_paddle_infer.engine.predictor import build_hint, trim_paddle_error
from pytest_paddle_infer.models.cache import _trim_child_error, child_failure
from pytest_paddle_infer.models.source import ModelFiles
from pytest_paddle_infer.modes.run_modes import Call
from pytest_paddle_infer.cases.tensor_selection import Selection
from pytest_paddle_infer.report.case_files import write_index
from pytest_paddle_infer.verdict.compare import compare_arrays
from pytest_paddle_infer.verdict.rows import comparison_table, table_rows
from pytest_paddle_infer.verdict.rows import range_text

TRACEBACK = """Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "{plugin}/models/exporter.py", line 55, in build_layer
    layer = load_builder(builder)(**kwargs)
  File "/home/me/repo/my_models.py", line 12, in build
    raise RuntimeError("no such backbone: ResNet999")
RuntimeError: no such backbone: ResNet999
"""


def test_a_child_that_dies_silently_names_its_signal_or_status():
    assert child_failure("exporting model 'm'", -11, "") == \
        "exporting model 'm' failed: the child process was killed by SIGSEGV"
    assert child_failure("x", 7, "\n").endswith("failed: the child process exited with status 7")
    assert describe_exit(134) == "exited with status 134 (SIGABRT)"


def test_a_child_traceback_keeps_the_users_frames_and_the_exception():
    from pytest_paddle_infer.models import cache

    text = _trim_child_error(TRACEBACK.format(plugin=cache.PLUGIN_DIR))
    assert text.splitlines() == ['  File "/home/me/repo/my_models.py", line 12, in build',
                                 '    raise RuntimeError("no such backbone: ResNet999")',
                                 "RuntimeError: no such backbone: ResNet999"]


def test_colour_codes_are_removed():
    coloured = "\x1b[1m\x1b[35m--- Running PIR pass [fc_fuse_pass]\x1b[0m"
    assert strip_ansi(coloured) == "--- Running PIR pass [fc_fuse_pass]"
    assert "\x1b" not in trim_paddle_error(ValueError(coloured))
    assert "\x1b" not in _trim_child_error(coloured)


def test_memory_optim_on_a_pir_program_gets_a_hint():
    calls = [Call("enable_memory_optim")]
    pir = ModelFiles("m", "/x/inference.json", "/x/inference.pdiparams", ())
    legacy = ModelFiles("m", "/x/inference.pdmodel", "/x/inference.pdiparams", ())
    text = "(InvalidArgument) Not find predictor_id 0 and pass_name memory_optimize_pass"
    assert "drop +memory_optim" in build_hint(text, pir, calls)
    assert "--paddle-program=legacy" in build_hint(text, pir, calls)
    assert build_hint(text, legacy, calls) == "" and build_hint("other", pir, calls) == ""


def test_all_inf_outputs_show_no_nan():
    inf = np.full((1, 3), np.inf, "float32")
    row = compare_arrays("out", inf, inf)
    name, shape, mismatched, max_abs, max_rel, low, high, cosine = table_rows([row])[0][:8]
    assert (low, high, cosine) == ("-", "-", "-")
    assert range_text(row) == "min - max - std -"
    mixed = compare_arrays("out", np.array([1.0, np.inf]), np.array([1.0, 2.0]))
    assert "1(1)" in comparison_table([mixed])


def test_summary_json_keeps_the_whole_message(tmp_path):
    message = "first line\nrecipe: enable_memory_optim()\nhint: drop +memory_optim"
    write_index(tmp_path, {"t::c": {"status": "error", "paddle_case": "c", "reason": "first line",
                                    "message": message}})
    case = json.loads((tmp_path / "summary.json").read_text())["cases"][0]
    assert case["reason"] == "first line" and case["message"] == message


def test_globs_that_select_nothing_are_named():
    class Store:
        selection = Selection("nomatch_*")
        records = []
        seen = SeenTensors()

    for name, op in (("conv2d_0.tmp_0", "conv2d"), ("relu_0.tmp_0", "relu")):
        Store.seen.add(name, op, Store.selection)
    error, note = selection_problems(Store, "m")
    assert "'nomatch_*' select no tensor of m" in error and "conv2d, relu" in error and not note
    Store.selection, Store.records, Store.seen = Selection("relu*,nomatch"), [object()], SeenTensors()
    Store.seen.add("relu_0.tmp_0", "relu", Store.selection)
    error, note = selection_problems(Store, "m")
    assert not error and "'nomatch' matched no tensor of m" in note


def test_update_goldens_without_a_golden_baseline_is_said():
    from pytest_paddle_infer.session.summary import unused_update_goldens

    class Settings:
        update_goldens = True

    assert "rewrote nothing" in unused_update_goldens(Settings, [{"paddle_baseline": "auto"}])
    assert unused_update_goldens(Settings, [{"paddle_baseline": "golden:g"}]) == ""
    Settings.update_goldens = False
    assert unused_update_goldens(Settings, []) == ""


def test_a_child_that_exits_cleanly_without_an_answer_says_so():
    import pytest

    from pytest_paddle_infer.errors import ModelError
    from pytest_paddle_infer.models.cache import run_child

    with pytest.raises(ModelError, match="exporting x failed: the child process exited without an answer"):
        run_child([], False, "exporting x", module="this")  # prints a poem, exits 0, no JSON
