"""Writing measured tolerances into a suite (cases/suite_writer.py) and choosing them
(verdict/suggest.py): where each key goes, shared nodes, comments and anchors kept."""
from pytest_paddle_infer.cases.suite import load_suite
from pytest_paddle_infer.cases.suite_nodes import Context
from pytest_paddle_infer.cases.suite_writer import write_suggestions

SUITE = """\
# the suite's own words
defaults:
  tolerances: {atol: 1e-4, rtol: 1e-4}   # any mode without its own
  run_modes:
    - &fp32 {mode: cpu_fp32, tolerances: {atol: 1e-4}}   # shared by two models
    - onednn_bf16
    - &unused {mode: onednn_fp32}

models:
  tiny_cnn:
    shapes: [[1, 3, 32, 32]]
  tiny_detector:
    shapes: [{image: [1, 3, 64, 64]}]
    run_modes:
      - *fp32
      - onednn_bf16          # a string: its tolerance goes to the model
      - mode: onednn_fp32
        tolerances:
          outputs:
            "#1": {atol: 0.5, cosine_min: 0.9}    # the scores
          tensors:
            "fetch_name_0": {atol: 2.0}
"""


def out(name, position, **suggested):
    return {"name": name, "position": position, "suggested": suggested}


def entry(model, *mode):
    return {"file": "s.paddle.yaml", "model": model, "mode": list(mode)}


def write(tmp_path, cases, refused=None):
    path = tmp_path / "s.paddle.yaml"
    if not path.exists():
        path.write_text(SUITE)
    changes = write_suggestions(path, [(e, {"outputs": o}) for e, o in cases], tmp_path / "lock", refused)
    return path, changes


def tolerances(path, case_id, output, position):
    ctx = Context(path.name, path.parent, path.parent, path.parent / "cache")
    case = next(sc.case for sc in load_suite(path, ctx) if sc.case.id == case_id)
    return case.tolerances.for_tensor(output, position)


def test_each_key_goes_where_it_is_governed_and_shared_nodes_take_the_loosest(tmp_path):
    path, changes = write(tmp_path, [
        (entry("tiny_cnn", "defaults", "run_modes", 0), [out("fetch_name_0", 0, atol=3e-6)]),
        (entry("tiny_detector", "models", "tiny_detector", "run_modes", 0),
         [out("fetch_name_0", 0, atol=2e-6), out("fetch_name_1", 1, atol=5e-6)]),
        (entry("tiny_cnn", "defaults", "run_modes", 1), [out("fetch_name_0", 0, atol=0.004)]),
        (entry("tiny_cnn", "defaults", "run_modes", 2), [out("fetch_name_0", 0, atol=1e-6)]),
        (entry("tiny_detector", "models", "tiny_detector", "run_modes", 1),
         [out("fetch_name_0", 0, atol=0.8), out("fetch_name_1", 1, atol=0.003)]),
        (entry("tiny_detector", "models", "tiny_detector", "run_modes", 2),
         [out("fetch_name_0", 0, atol=0.3), out("fetch_name_1", 1, atol=2e-4, cosine_min=0.99)]),
    ])
    assert changes == [
        "defaults.run_modes[0].tolerances.atol: 0.0001 -> 5e-06",  # the anchor: the loosest of 3
        # both onednn_bf16 strings take the suite's atol: it is raised for both
        "defaults.tolerances.atol: 0.0001 -> 0.8",
        "models.tiny_detector.run_modes[2].tolerances.tensors.fetch_name_0.atol: 2.0 -> 0.3",
        "models.tiny_detector.run_modes[2].tolerances.outputs.#1.atol: 0.5 -> 0.0002",
        "models.tiny_detector.run_modes[2].tolerances.outputs.#1.cosine_min: 0.9 -> 0.99",
    ]
    text = path.read_text()
    for line in SUITE.splitlines():  # every comment stays on its line
        if "#" in line and '"#' not in line:
            assert "#" + line.split("#", 1)[1] in text
    assert "&unused {mode: onednn_fp32}" in text and "- *fp32" in text
    # the suite reads back with the values the cases will use
    assert tolerances(path, "tiny_detector[1x3x64x64-onednn_bf16]", "fetch_name_0", 0).atol == 0.8
    assert tolerances(path, "tiny_cnn[1x3x32x32-onednn_bf16]", "fetch_name_0", 0).atol == 0.8
    assert tolerances(path, "tiny_cnn[1x3x32x32-cpu_fp32]", "fetch_name_0", 0).atol == 5e-6
    rule = tolerances(path, "tiny_detector[1x3x64x64-onednn_fp32]", "fetch_name_1", 1)
    assert (rule.atol, rule.cosine_min) == (2e-4, 0.99)
    # written again: nothing left to change
    assert write(tmp_path, [(entry("tiny_cnn", "defaults", "run_modes", 1),
                             [out("fetch_name_0", 0, atol=0.8)])])[1] == []


def test_a_tolerance_no_layer_writes_goes_to_the_run_mode_or_the_model(tmp_path):
    (tmp_path / "s.paddle.yaml").write_text(SUITE.replace("  tolerances: {atol: 1e-4, rtol: 1e-4}   # any mode without its own\n", ""))
    path, changes = write(tmp_path, [
        (entry("tiny_cnn", "defaults", "run_modes", 2), [out("fetch_name_0", 0, atol=1e-6)]),
        (entry("tiny_detector", "models", "tiny_detector", "run_modes", 1),
         [out("fetch_name_0", 0, atol=0.8), out("fetch_name_1", 1, atol=0.003)]),
        (entry("tiny_detector", "models", "tiny_detector", "run_modes", 2),
         [out("fetch_name_0", 0, atol=0.3), out("fetch_name_1", 1, atol=2e-4)])])
    assert changes == [
        "defaults.run_modes[2].tolerances.atol: - -> 1e-06",
        "models.tiny_detector.tolerances.atol: - -> 0.8",  # its bf16 is a string: the model's own
        "models.tiny_detector.run_modes[2].tolerances.tensors.fetch_name_0.atol: 2.0 -> 0.3",
        "models.tiny_detector.run_modes[2].tolerances.outputs.#1.atol: 0.5 -> 0.0002"]
    text = path.read_text()
    assert "    - &unused {mode: onednn_fp32, tolerances: {atol: 1e-06}}\n" in text
    assert text.endswith('            "fetch_name_0": {atol: 0.3}\n    tolerances: {atol: 0.8}\n')  # the model's
    assert tolerances(path, "tiny_detector[1x3x64x64-onednn_bf16]", "fetch_name_1", 1).atol == 0.8


def test_a_node_that_also_governs_cases_not_measured_is_not_written(tmp_path):
    """The anchor &fp32 is tiny_cnn's and tiny_detector's: measured for tiny_cnn alone (the
    session narrowed to it), it is left as written, and the line says why."""
    refused = []
    path, changes = write(tmp_path, [
        (entry("tiny_cnn", "defaults", "run_modes", 0), [out("fetch_name_0", 0, atol=3e-6)]),
    ], refused)
    assert changes == []
    assert refused == [
        "not written: defaults.run_modes[0].tolerances.atol (0.0001 -> 3e-06): anchor &fp32 also sets the "
        "tolerance of tiny_detector (models.tiny_detector.run_modes[0]), not measured in this session "
        "(narrowed away, skipped, failed or errored); run those cases too, or give tiny_cnn its own tolerances"]
    assert "- &fp32 {mode: cpu_fp32, tolerances: {atol: 1e-4}}" in path.read_text()
    assert tolerances(path, "tiny_detector[1x3x64x64-cpu_fp32]", "fetch_name_0", 0).atol == 1e-4


def test_a_run_mode_with_cases_not_all_measured_is_not_written(tmp_path):
    """Two shapes of one model x run mode, one measured (the other deselected with -k)."""
    refused = []
    two = dict(entry("tiny_detector", "models", "tiny_detector", "run_modes", 2), cases=2)
    path, changes = write(tmp_path, [(two, [out("fetch_name_0", 0, atol=0.3)])], refused)
    assert changes == [] and len(refused) == 1 and "models.tiny_detector.run_modes[2]" in refused[0]
    assert path.read_text() == SUITE
    _, changes = write(tmp_path, [(dict(two, case="a"), [out("fetch_name_0", 0, atol=0.3)]),
                                  (dict(two, case="b"), [out("fetch_name_0", 0, atol=0.2)])])
    assert changes == ["models.tiny_detector.run_modes[2].tolerances.tensors.fetch_name_0.atol: 2.0 -> 0.3"]


def test_a_suite_that_is_a_link_is_written_through_it(tmp_path):
    shared = tmp_path / "shared" / "suite.yaml"
    shared.parent.mkdir()
    shared.write_text(SUITE.replace("  tolerances: {atol: 1e-4, rtol: 1e-4}   # any mode without its own\n", ""))
    shared.chmod(0o640)
    link = tmp_path / "s.paddle.yaml"
    link.symlink_to(shared)
    _, changes = write(tmp_path, [(entry("tiny_cnn", "defaults", "run_modes", 2), [out("fetch_name_0", 0, atol=1e-6)])])
    assert changes == ["defaults.run_modes[2].tolerances.atol: - -> 1e-06"]
    assert link.is_symlink() and "tolerances: {atol: 1e-06}" in shared.read_text()
    assert shared.stat().st_mode & 0o777 == 0o640
