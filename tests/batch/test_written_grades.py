"""The class's files carry the written grades (built from records, nothing graded)."""
from __future__ import annotations

import csv
import io

import pytest

from grader.batch import gradebook, lms, written
from grader.errors import GraderError

SUITE = "01_permutation_invariance"
POINTS = {SUITE: [{"exercise": "f", "name": "test_f", "description": "f", "max_score": 4.0,
                   "public": False}]}
NAME = f"{SUITE}/why"


def record(student: str, *, sha: str = "aaa", answered: bool = True) -> dict:
    report = {"path": "x.ipynb", "suite": SUITE, "error": None, "execution": None,
              "tests": [{**POINTS[SUITE][0], "status": "passed", "output": ""}],
              "load_errors": [], "seconds": 0.0, "exercise_order": ["f"], "confinement": "",
              "written": [{"question": "why", "points": 3.0, "answered": answered,
                           "text": "x" if answered else "", "sha256": sha if answered else ""}]}
    return {"student_id": student, "grading_status": "ok", "notes": [], "fingerprint": {},
            "submitted": [SUITE], "unreadable": {}, "notebooks": [report]}


def grades(**given) -> dict:
    data = written.empty()
    data["questions"][NAME] = {"points": 3, "rubric": [{"points": 2, "text": "names it"},
                                                       {"points": 1, "text": "quotes it"}]}
    for student, (points, sha) in given.items():
        data["grades"][student] = {NAME: {"points": points, "rubric": [1], "comment": "ok",
                                          "sha256": sha}}
    return data


def _rows(text: str) -> dict[str, dict[str, str]]:
    return {r["student_id"]: r for r in csv.DictReader(io.StringIO(text))}


def test_without_written_grades_the_gradebook_is_as_before():
    records = [record("ada")]
    assert gradebook.gradebook(records, POINTS, written=None) == gradebook.gradebook(records,
                                                                                     POINTS)
    assert "written" not in gradebook.gradebook(records, POINTS)


def test_the_gradebook_counts_written_points_and_flags_waiting_and_changed_answers():
    records = [record("ada"), record("bob", sha="new"), record("cyd")]
    rows = _rows(gradebook.gradebook(records, POINTS, written=grades(ada=(2.0, "aaa"),
                                                                     bob=(3.0, "old"))))
    assert [rows[s][f"{NAME} (written)"] for s in ("ada", "bob", "cyd")] == ["2", "3", ""]
    assert [rows[s]["total"] for s in ("ada", "bob", "cyd")] == ["6", "7", "4"]
    assert rows["ada"]["max_total"] == "7" and rows["ada"]["written_status"] == ""
    assert rows["bob"]["written_status"] == f"answer changed after grading: {NAME}"
    assert rows["cyd"]["written_status"] == f"awaiting grading: {NAME}"
    possible = gradebook.points_possible(POINTS, grades())
    assert f"{NAME} (written),3\ntotal,7" in possible


def test_canvas_counts_the_written_points():
    text = lms.canvas([record("ada")], POINTS, {"ada": {"lms_id": "7"}}, "ps1",
                      written=grades(ada=(2.0, "aaa")))
    assert text.splitlines()[1].endswith(",7") and text.splitlines()[2] == "ada,7,,,,6"


def test_learner_grades_give_rubric_items_comment_and_change():
    entry = written.learner_grades(grades(ada=(2.0, "old")), record("ada"))[SUITE]["why"]
    assert entry == {"points": 2.0, "max_points": 3, "rubric_items": ["2: names it"],
                     "comment": "ok", "answered": True, "changed": True}


def test_shards_written_grades_join_and_conflicts_are_refused():
    joined = written.merged([grades(ada=(2.0, "a")), grades(bob=(1.0, "b"))])
    assert sorted(joined["grades"]) == ["ada", "bob"]
    with pytest.raises(GraderError, match="learner ada's written grade of .* differs"):
        written.merged([grades(ada=(2.0, "a")), grades(ada=(1.0, "a"))])


def test_a_regrade_writes_the_feedback_page_with_the_written_grades(tmp_path):
    from grader.batch.grading import Outcome, write_learner
    from grader.batch.gradebook import report_from_dict
    from grader.batch.roster import Plan

    written.write(tmp_path, grades(ada=(2.0, "aaa")))
    report = report_from_dict(record("ada")["notebooks"][0])
    plan = Plan(student_id="ada", folder=tmp_path, fingerprint={
        "notebooks": {}, "suites": {}, "grader_version": "x"})
    write_learner(tmp_path, plan, Outcome(reports={SUITE: report}), POINTS)
    page = (tmp_path / "ada" / "feedback.html").read_text()
    assert "graded by a person: 2/3 points; total with them: 6/7 points" in page
    assert "2: names it" in page and "Comment: ok" in page
