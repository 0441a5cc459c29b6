"""index.html's count line says 'case' for one case and 'cases' for more (index_page.py)."""
from pytest_paddle_infer.report.index_page import render


def _case(name: str, status: str) -> dict:
    return {"status": status, "paddle_case": name, "reason": "", "message": ""}


def test_one_case_is_a_case():
    page = render([_case("a[1-cpu_fp32]", "failed")], {})
    assert '<p class="counts">1 case: <span>failed: 1</span></p>' in page


def test_two_cases_are_cases():
    page = render([_case("a[1-cpu_fp32]", "failed"), _case("b[1-cpu_fp32]", "failed")], {})
    assert '<p class="counts">2 cases: <span>failed: 2</span></p>' in page
