"""Every report says each written answer is answered (awaiting grading) or empty, and scores none."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree

import jsonschema

from grader.export.hosted import SCHEMA
from grader.report import feedback, render as reporters
from grader.report.written import reveal
from grader.results import FAILED, PASSED, NotebookReport, WrittenAnswer
from grader.results import TestResult as Result


def _report(written: bool = True) -> NotebookReport:
    tests = [Result("f", "test_f", "f works", 2.0, PASSED),
             Result("f", "test_g", "f raises", 1.0, FAILED, "wrong")]
    answers = [WrittenAnswer("why_both", 3.0, True, "A rotation: 0.0003.", "ab" * 32),
               WrittenAnswer("base_bound", 2.0, False)] if written else []
    return NotebookReport(path="02_sinusoidal_encoding.ipynb", suite="02_sinusoidal_encoding",
                          tests=tests, exercise_order=["f"], written=answers)


def test_the_table_says_awaiting_and_empty_and_the_total_what_awaits_a_person():
    text = reporters.table([_report()])
    assert "2.w1 why_both" in text and "-/3   awaiting grading (3 points)" in text
    assert "2.w2 base_bound" in text and "0/2   empty (0 of 2 points)" in text
    assert "Total: 2/3 points over 1 notebook(s)" in text
    assert "Written answers: 3 points await grading by a person (1 answer)" in text
    assert "1 empty (0 of 2 points" in " ".join(text.split())


def test_a_notebook_with_no_answer_written_yet_takes_one_line_of_the_table():
    """As the exercises not implemented share a line: a fresh clone's report stays short."""
    report = _report()
    report.written = [WrittenAnswer("why_both", 3.0, False), WrittenAnswer("base_bound", 2.0, False)]
    lines = [line for line in reporters.table([report]).splitlines() if "written answers" in line]
    assert lines == ["  written answers (graded by a person): none written yet, 2.w1 to 2.w2 (5 points)"]
    report.written = report.written[:1]
    assert "none written yet, 2.w1 (3 points)" in reporters.table([report])
    assert "Written answers: 0 points await grading by a person (0 answers)" in reporters.table([report])


def test_a_report_without_written_answers_is_as_before():
    plain = _report(written=False)
    assert "ritten" not in reporters.table([plain]) + reporters.markdown([plain])
    assert "ritten" not in reporters.junit([plain])
    assert "ritten" not in json.dumps(reporters.gradescope([plain], 1.0))
    assert "ritten" not in feedback.render([plain])


def test_results_json_leaves_written_points_out_and_meets_the_schema():
    results = reporters.gradescope([_report()], 1.0)
    jsonschema.validate(results, json.loads(SCHEMA.read_text()))
    assert results["score"] == 2.0
    assert sum(t["max_score"] for t in results["tests"]) == 3.0  # the tests' points only
    assert "why_both" not in json.dumps(results["tests"])
    assert "written answer why_both: awaiting grading (3 points)" in results["output"]
    assert "3 points await grading by a person (1 answer), not in this score" in results["output"]


def test_junit_skips_each_written_answer_with_its_status():
    root = ElementTree.fromstring(reporters.junit([_report()]))
    suite = root.find("testsuite")
    assert suite.get("tests") == "4" and suite.get("skipped") == "2"
    cases = {c.get("name"): c.find("skipped").get("message")
             for c in suite.iter("testcase") if c.find("skipped") is not None}
    assert cases == {"why_both": "awaiting grading (3 points)",
                     "base_bound": "empty (0 of 2 points)"}


def test_markdown_lists_the_written_answers_after_the_tables():
    text = reporters.markdown([_report()])
    assert "| 2.w1 `why_both` | -/3 | ⏳ awaiting grading (3 points) |" in text
    assert "| 2.w2 `base_bound` | 0/2 | ➖ empty (0 of 2 points) |" in text
    assert "3 points await grading by a person" in text


def test_the_feedback_page_says_awaiting_then_shows_the_grade_and_comment():
    page = feedback.render([_report()])
    assert "awaiting grading (3 points)" in page and "Written answers: 3 points await" in page
    grades = {"02_sinusoidal_encoding": {
        "why_both": {"points": 2.0, "max_points": 3, "comment": "Say <why> it is a rotation.",
                     "rubric_items": ["2: names the rotation"], "answered": True,
                     "changed": False},
        "base_bound": {"points": 0.0, "max_points": 2, "comment": "no answer",
                       "rubric_items": [], "answered": False, "changed": False}}}
    page = feedback.render([_report()], written=grades)
    assert "Written answers, graded by a person: 2/5 points; total with them: 4/8 points" in page
    assert "Say &lt;why&gt; it is a rotation." in page and "2: names the rotation" in page
    grades["02_sinusoidal_encoding"]["why_both"]["changed"] = True
    assert "your answer changed after it was graded" in feedback.render([_report()],
                                                                      written=grades)


def test_reveal_shows_a_model_answer_only_beside_an_answer():
    model = {"02_sinusoidal_encoding": {
        q: {"model_answer": f"MODEL OF {q}", "rubric": [{"points": 2, "text": f"RUBRIC OF {q}"}],
            "points": 2} for q in ("why_both", "base_bound")}}
    text = reveal([_report()], model, "solutions")
    assert "A rotation: 0.0003." in text and "MODEL OF why_both" in text
    assert "RUBRIC OF why_both" in text
    assert "MODEL OF base_bound" not in text and "RUBRIC OF base_bound" not in text
    assert "write your answer below \"Your answer\"" in text
    assert "not revealed: no model answers" in reveal([_report()], None, "no model answers")
