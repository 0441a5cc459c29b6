"""report/text.py: what the terminal and junit show of a case: ranges and the cannot-fail
warning."""
from pytest_paddle_infer.report.case_files import case_summary
from pytest_paddle_infer.report.text import outputs_table, properties, summary_row, summary_table

from unit.verdict.test_vacuity import RNG, result_with, softmax


def test_reports_carry_ranges_and_the_warning():
    result = result_with(softmax(RNG.normal(size=(1, 10)) * 1000))
    props = dict(properties(result))
    assert props["paddle_ranges"].startswith("fetch_name_0: min ") and " std " in props["paddle_ranges"]
    assert props["paddle_vacuous"].startswith("fetch_name_0: one-hot")
    summary = case_summary(result)
    assert summary["passed"] and summary["warnings"][0].startswith("fetch_name_0 cannot fail")
    assert summary["outputs"][0]["max"] == 1.0 and summary["outputs"][0]["elements"] == 10
    row = summary_row("m[1x8-cpu_fp32]", "passed", {"paddle_model": "m", "paddle_shape": "1x8",
                                                     "paddle_run_mode": "cpu_fp32", **props}, 0.1)
    assert "passed*" in summary_table([row]).splitlines()[2]
    lines = outputs_table([row])
    assert lines[0].splitlines()[2].split()[:3] == ["m", "1x8", "fetch_name_0"]
    assert lines[-1].startswith("  m[1x8-cpu_fp32]: fetch_name_0: one-hot")
