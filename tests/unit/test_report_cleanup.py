"""A report directory's summary names the files an earlier run wrote; only those, inside the
directory, are replaced: a summary listing other paths deletes nothing else."""
import json

from pytest_paddle_infer.report.case_files import SUMMARY, previous_files


def test_only_the_reports_own_files_inside_it_are_listed(tmp_path):
    report = tmp_path / "out"
    report.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    (report / "sub").mkdir()
    (report / "case-1.json").write_text("{}")
    (report / "notes.txt").write_text("mine")
    (report / "link.json").symlink_to(outside)
    (report / SUMMARY).write_text(json.dumps({"cases": [
        {"files": ["case-1.json", "../victim.txt", str(victim), str(outside), "sub", "link.json",
                   "notes.txt", "../outside.json", None]},
        "not a case",
    ]}))
    found = previous_files(report)
    assert sorted(p.name for p in found) == ["case-1.json", SUMMARY]
    assert all(p.parent == report for p in found)


def test_an_unreadable_summary_lists_nothing(tmp_path):
    (tmp_path / SUMMARY).write_text("{not json")
    assert previous_files(tmp_path) == []
