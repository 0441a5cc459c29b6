"""End to end: which tolerance a case uses. Precedence, highest first: command line >
paddle_tolerance marker > per-tensor glob > per-output > per-run-mode > per-model > suite
defaults > the run mode's built-in default. Each test adds one layer on top of all the lower
ones, each with its own atol, and the failure names the atol that won."""
import pytest

from helpers import DIFFERING_MODE, run_suite, write_suite

pytestmark = pytest.mark.sessions_in_process  # run_pytest: sessions in this process (conftest.py)

# DIFFERING_MODE differs from the baseline on every CPU, in logits of magnitude 0.1 to 2 by
# at least their last bit (7.5e-9 to 1.2e-7): every layer's atol, 1.1e-9 to 1.7e-9 at rtol
# 0, fails it
CASE = f"paddle_suite.yaml::tiny_cnn[1x3x32x32-{DIFFERING_MODE}]"
MARKER_CONFTEST = """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.paddle_tolerance(atol=1.6e-9))
"""

# layer -> (what it adds, the atol the case must report); each includes every lower layer
LAYERS = ["suite_defaults", "model", "run_mode", "output", "tensor_glob", "marker", "command_line"]
WINNING_ATOL = dict(zip(LAYERS, ["1.1e-09", "1.2e-09", "1.3e-09", "1.4e-09", "1.5e-09", "1.6e-09", "1.7e-09"]))


def suite_up_to(layer: str) -> str:
    level = LAYERS.index(layer)
    on = lambda name: LAYERS.index(name) <= level
    tensors = "\n    tensors: {'*': {atol: 1.5e-9}}" if on("tensor_glob") else ""
    model = ["atol: 1.2e-9"] if on("model") else []
    if on("output"):  # written at the model level: an output rule still beats the run mode's
        model.append("outputs: {'#0': {atol: 1.4e-9}}")
    mode = f"{{mode: {DIFFERING_MODE}, tolerances: {{atol: 1.3e-9}}}}" if on("run_mode") else DIFFERING_MODE
    return f"""
defaults:
  tolerances:
    atol: 1.1e-9
    rtol: 0{tensors}
models:
  tiny_cnn:
    tolerances: {{{', '.join(model)}}}
    run_modes: [{mode}]
"""


# the layers below the marker share one session, a directory each (<layer>/paddle_suite.yaml):
# the marker's conftest hook marks every item of its session, and the command line's atol
# is the session's, so those two run alone
SHARED = LAYERS[:LAYERS.index("marker")]
SESSIONS = {}  # xdist mode -> the shared session (once per test process)


def shared_session(pytester, run_pytest, xdist_mode):
    key = tuple(xdist_mode)
    if key not in SESSIONS:
        for layer in SHARED:
            write_suite(pytester, suite_up_to(layer), f"{layer}/paddle_suite.yaml")
        SESSIONS[key] = run_suite(run_pytest, pytester, *xdist_mode)
    return SESSIONS[key]


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_wins_over_every_lower_one(pytester, run_pytest, xdist_mode, layer):
    if layer in SHARED:
        run = shared_session(pytester, run_pytest, xdist_mode)
        case = f"{layer}.{CASE}"
        assert run.outcomes() == {f"{name}.{CASE}": "failed" for name in SHARED}
        assert f"elements outside atol={WINNING_ATOL[layer]} rtol=0" in run.cases[case].message
        return
    write_suite(pytester, suite_up_to(layer))
    args = list(xdist_mode)
    pytester.makeconftest(MARKER_CONFTEST)
    if layer == "command_line":
        args.append("--paddle-atol=1.7e-9")
    run = run_suite(run_pytest, pytester, *args)
    assert run.outcomes() == {CASE: "failed"}
    assert f"elements outside atol={WINNING_ATOL[layer]} rtol=0" in run.cases[CASE].message


def test_run_mode_default_applies_when_nothing_is_configured(pytester, run_pytest, xdist_mode):
    write_suite(pytester, """
        models:
          tiny_cnn_int8: {run_modes: [onednn_int8]}
    """)
    run = run_suite(run_pytest, pytester, *xdist_mode)
    # int8 kernels differ from the fake-quantized baseline by far more than the default 1e-4
    # allows (max abs 0.023 with VNNI, 0.53 without: README, int8 on the CPU), so only the
    # mode's own default lets it pass
    case = "paddle_suite.yaml::tiny_cnn_int8[1x3x32x32-onednn_int8]"
    assert run.outcomes() == {case: "passed"}, run.text
    assert float(run.cases[case].properties["paddle_max_abs"]) > 1e-3
