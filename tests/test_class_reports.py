"""The class's summary and statuses, built from learners' records (no grading here)."""
from __future__ import annotations

import dataclasses

from grader import batch
from grader.gradebook import summary, summary_table
from grader import results
from grader.results import FAILED, NOT_IMPLEMENTED, PASSED, NotebookReport
from grader.roster import Plan

SUITE = "01_permutation_invariance"
MISTAKE = "missing the 1/sqrt(d_k) scaling"
POINTS = {SUITE: [
    {"exercise": "sdpa", "name": "test_named", "description": "named case", "max_score": 2.0,
     "public": True},
    {"exercise": "sdpa", "name": "test_property", "description": "property", "max_score": 2.0,
     "public": False},
]}


def _record(student_id: str, statuses: list[str] | None, outputs: tuple[str, str] = ("", "")):
    notebooks = []
    if statuses is not None:
        tests = [results.TestResult(**test, status=status, output=output)
                 for test, status, output in zip(POINTS[SUITE], statuses, outputs)]
        notebooks.append(dataclasses.asdict(NotebookReport(path=f"{SUITE}.ipynb", suite=SUITE,
                                                           tests=tests)))
    return {"student_id": student_id, "grading_status": "ok", "notes": [], "fingerprint": {},
            "submitted": [SUITE] if statuses is not None else [], "unreadable": {},
            "notebooks": notebooks}


def test_summary_counts_each_mistake_once_and_no_stub_and_says_who_handed_in():
    said = f"wrong values; this is what you get with: {MISTAKE}"
    records = [
        _record("ada", [FAILED, FAILED], (said, f"{said} [failing example: test_property(seed=3)]")),
        _record("bob", [FAILED, FAILED], (said, f"{said} [failing exa ... (cut)")),
        _record("cyd", [NOT_IMPLEMENTED, NOT_IMPLEMENTED], ("not implemented",) * 2),
        _record("dan", [PASSED, PASSED]),
        _record("eve", None),  # handed nothing in
    ]
    entry = summary(records, POINTS)[f"{SUITE}/sdpa"]
    assert entry["mistakes"] == [{"mistake": MISTAKE, "learners": 2}]  # once each, not 4 or 3
    assert {t["test"]: t["learners"] for t in entry["failed_tests"]} == {"named case": 2,
                                                                        "property": 2}
    assert entry["learners"] == 5 and entry["submitted"] == 4 and entry["not_submitted"] == 1
    assert entry["mean_score"] == 0.8 and entry["mean_score_of_submitters"] == 1.0
    table = summary_table({f"{SUITE}/sdpa": entry})
    assert "did not hand a notebook in as 0" in table and f"{MISTAKE} (2 learners)" in table


def test_a_learner_with_a_graded_and_a_corrupt_notebook_is_partly_graded(tmp_path):
    work = Plan(student_id="ada", folder=tmp_path,
                problems=["02_sinusoidal_encoding.ipynb: not a valid Jupyter notebook"])
    graded = batch.Outcome(reports={SUITE: NotebookReport(path=f"{SUITE}.ipynb", suite=SUITE)})
    assert batch._status(work, graded) == (
        f"partly graded: graded {SUITE}; not graded: 02_sinusoidal_encoding.ipynb: not a valid "
        "Jupyter notebook")
    assert batch._status(work, batch.Outcome(reports={})).startswith("could not be graded: ")
