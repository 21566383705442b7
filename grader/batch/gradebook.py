"""The class's files, built from the learners' records: ``gradebook.csv``, ``summary.json`` and
``summary.png``, and each learner's full list of reports.

:mod:`grader.batch.class_files` writes them after grading a class and after joining the shards
of one (:mod:`grader.batch.merge`); both read only the per-learner records (``STUDENT/record.json``: plain
:mod:`grader.results` records and fingerprints), so the same records give the same bytes.
"""
from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from pathlib import Path

from grader.batch import deadlines
from grader.batch import written as written_grades
from grader.report import render as reporters
from grader.report.feedback import NOT_SUBMITTED
from grader.results import (MISSING, NOT_IMPLEMENTED, PASSED, TIMED_OUT, CellFailure,
                            ExecutionResult, NotebookReport, TestResult, WrittenAnswer)

RECORD = "record.json"
"""Per learner: the report records and fingerprints that the gradebook and regrades read."""


# -- a learner's reports ------------------------------------------------------------------------
def report_from_dict(data: dict) -> NotebookReport:
    """A :class:`NotebookReport` from its ``dataclasses.asdict`` form (consumes ``data``)."""
    execution = data.get("execution")
    if execution is not None:
        failures = [CellFailure(**f) for f in execution.pop("failures", [])]
        execution = ExecutionResult(**execution, failures=failures)
    tests = [TestResult(**t) for t in data.pop("tests", [])]
    data.pop("execution", None)
    written = [WrittenAnswer(**w) for w in data.pop("written", [])]
    return NotebookReport(**data, execution=execution, tests=tests, written=written)


def _unit_results(points: list[dict], status: str, output: str) -> list[TestResult]:
    return [TestResult(**test, status=status, output=output) for test in points]


def _placeholder(suite: str, points: list[dict], *, path: str, error: str, status: str,
                 output: str) -> NotebookReport:
    return NotebookReport(path=path, suite=suite, error=error,
                          tests=_unit_results(points, status, output),
                          exercise_order=list(dict.fromkeys(t["exercise"] for t in points)))


def full_reports(record: dict, points: dict[str, list[dict]]) -> list[NotebookReport]:
    """Every suite's report for one learner, in course order, from the learner's record.

    Suites the learner did not hand in (or that a time-out left ungraded) score 0.
    """
    graded = {r["suite"]: report_from_dict(json.loads(json.dumps(r)))
              for r in record["notebooks"]}
    reports = []
    for suite, tests in points.items():
        if suite in graded:
            reports.append(graded[suite])
        elif suite in record.get("unreadable", {}):
            problem = record["unreadable"][suite]
            reports.append(_placeholder(suite, tests, path=problem.split(":")[0], error=problem,
                                        status=MISSING, output=problem))
        elif suite in record.get("submitted", []):
            why = f"not graded: {record['grading_status']}"
            reports.append(_placeholder(suite, tests, path=suite, error=why,
                                        status=TIMED_OUT, output=why))
        else:
            reports.append(_placeholder(suite, tests, path="", error=NOT_SUBMITTED,
                                        status=NOT_SUBMITTED, output=""))
    return reports


def read_record(out: Path, student_id: str) -> dict | None:
    """A learner's stored record, or None if there is none (or it is unreadable)."""
    try:
        record = json.loads((out / student_id / RECORD).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and "fingerprint" in record else None


# -- the class's files --------------------------------------------------------------------------
def _num(value: float) -> str:
    return f"{round(value, 4):g}"


def _columns(points: dict[str, list[dict]]) -> list[tuple[str, str | None]]:
    """The score columns: each notebook's total, then one per exercise."""
    columns: list[tuple[str, str | None]] = []
    for suite, tests in points.items():
        columns.append((suite, None))
        for exercise in dict.fromkeys(t["exercise"] for t in tests):
            columns.append((suite, exercise))
    return columns


def _header(column: tuple[str, str | None]) -> str:
    suite, exercise = column
    return suite if exercise is None else f"{suite}/{exercise}"


def _possible(points: dict[str, list[dict]], suite: str, exercise: str | None) -> float:
    return sum(t["max_score"] for t in points[suite] if exercise in (None, t["exercise"]))


def points_possible(points: dict[str, list[dict]], written: dict | None = None) -> str:
    """``points_possible.csv``: each gradebook score column and its points, then ``total``
    (``written``: :mod:`grader.batch.written`'s grades add a column per written question)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["column", "points_possible"])
    for column in _columns(points):
        writer.writerow([_header(column), _num(_possible(points, *column))])
    names = written_grades.questions_in(written, list(points))
    for name in names:
        writer.writerow([f"{name} (written)", _num(written["questions"][name]["points"])])
    writer.writerow(["total", _num(sum(t["max_score"] for ts in points.values() for t in ts)
                                   + sum(written["questions"][n]["points"] for n in names))])
    return buffer.getvalue()


def gradebook(records: list[dict], points: dict[str, list[dict]],
              people: dict[str, dict[str, str]] | None = None,
              people_columns: list[str] = (), late: dict | None = None,
              written: dict | None = None) -> str:
    """``gradebook.csv``: one row per learner, sorted by id; every row is a learner (the points
    possible are in ``points_possible.csv`` and in the ``max_total`` column). ``people`` adds
    the roster's columns ``people_columns`` (name, LMS ids) after ``student_id``; ``late``
    (student_id -> :class:`grader.batch.deadlines.Lateness`) adds :data:`grader.batch.deadlines.COLUMNS`
    after ``percent``. ``written`` (:mod:`grader.batch.written`'s grades, once imported) adds a
    column per written question (empty: not graded yet) after the exercises', counts its points
    in ``total`` and ``max_total``, and ends each row with ``written_status`` (answers awaiting
    grading, answers changed after they were graded)."""
    columns = _columns(points)
    names = written_grades.questions_in(written, list(points))
    header = ["student_id", *people_columns] + [_header(c) for c in columns]
    header += [f"{name} (written)" for name in names] + ["total", "max_total", "percent"]
    header += (deadlines.COLUMNS if late is not None else []) + ["grading_status", "notes"]
    header += ["written_status"] if names else []
    maximum = sum(t["max_score"] for tests in points.values() for t in tests)
    maximum += sum(written["questions"][name]["points"] for name in names)

    def cells(score_of) -> list[str]:
        return [_num(score_of(suite, exercise)) for suite, exercise in columns]

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for record in sorted(records, key=lambda r: r["student_id"]):
        reports = {r.suite: r for r in full_reports(record, points)}

        def earned(suite, exercise, reports=reports):
            return sum(t.score for t in reports[suite].tests if exercise in (None, t.exercise))

        by_hand = written_grades.earned(written, record, names)
        total = sum(r.score for r in reports.values()) + sum(p or 0 for p in by_hand.values())
        percent = _num(round(100 * total / maximum, 1)) if maximum else "0"
        person = (people or {}).get(record["student_id"], {})
        writer.writerow([record["student_id"], *(person.get(c, "") for c in people_columns)]
                        + cells(earned) + ["" if by_hand[n] is None else _num(by_hand[n])
                                           for n in names]
                        + [_num(total), _num(maximum), percent]
                        + (deadlines.cells(late.get(record["student_id"]), total)
                           if late is not None else [])
                        + [record["grading_status"], "; ".join(record.get("notes", []))]
                        + ([written_grades.status_cell(written, record, names)] if names else []))
    return buffer.getvalue()


def summary(records: list[dict], points: dict[str, list[dict]], top: int = 3) -> dict:
    """Per exercise: mean score, share with full marks, the most frequent named mistakes.

    ``mean_score`` and ``full_marks_share`` count a learner who did not hand the notebook in as
    0 (``not_submitted`` says how many); ``mean_score_of_submitters`` leaves them out. Mistakes
    and failing tests count the learners who handed the notebook in, each mistake once per
    learner; an exercise left as its stub ("not implemented") is no mistake."""
    exercises: dict[str, dict] = {}
    for record in sorted(records, key=lambda r: r["student_id"]):
        for report in full_reports(record, points):
            for exercise, tests in report.exercises().items():
                entry = exercises.setdefault(f"{report.suite}/{exercise}", {
                    "scores": [], "max_score": sum(t.max_score for t in tests), "submitted": 0,
                    "mistakes": Counter(), "failed_tests": Counter(), "handed_in": []})
                entry["scores"].append(sum(t.score for t in tests))
                submitted = not any(t.status == NOT_SUBMITTED for t in tests)
                entry["submitted"] += submitted
                entry["handed_in"].append(submitted)
                named, failed = set(), set()
                for test in tests:  # a stub left as it was is no mistake
                    if test.status in (PASSED, NOT_IMPLEMENTED) or not submitted:
                        continue
                    failed.add(test.description or test.name)
                    named |= {_mistake_name(test.output)} - {None}
                entry["mistakes"].update(named)
                entry["failed_tests"].update(failed)
    result = {}
    for key, entry in exercises.items():
        scores, maximum = entry["scores"], entry["max_score"]
        handed_in = [score for score, given in zip(scores, entry["handed_in"]) if given]
        result[key] = {
            "learners": len(scores), "submitted": entry["submitted"], "max_score": maximum,
            "mean_score": round(sum(scores) / len(scores), 3),
            "not_submitted": len(scores) - entry["submitted"],
            "mean_score_of_submitters": round(sum(handed_in) / len(handed_in), 3)
            if handed_in else None,
            "full_marks_share": round(sum(s == maximum for s in scores) / len(scores), 3),
            "scores": scores,
            "mistakes": [{"mistake": m, "learners": n} for m, n in _top(entry["mistakes"], top)],
            "failed_tests": [{"test": d, "learners": n}
                             for d, n in _top(entry["failed_tests"], top)],
        }
    return result


_LOAD_ERROR = re.compile(r"cells that failed to load: (Cell \d+/\d+)(?: \(`.*?`\))?: (\w+)")


def _mistake_name(output: str) -> str | None:
    """The mistake a test names, without its failing example (cut or whole): one mistake is
    counted once per learner however the tests that name it end. A test that failed because a
    cell did not load names that cell: ``error in Cell N/M (SyntaxError)``."""
    name = reporters.named_mistake(output)
    if name is None:
        match = _LOAD_ERROR.search(output or "")
        return f"error in {match.group(1)} ({match.group(2)})" if match else None
    return name.split(" [failing", 1)[0].removesuffix(" ... (cut)").strip() or None


def _top(counter: Counter, top: int) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))[:top]


def summary_table(data: dict) -> str:
    """The summary as a short plain-text table."""
    width = max([len(k) for k in data] + [8])
    lines = [f"{'exercise':{width}}  {'mean':>11}  {'full marks':>10}  most frequent mistake"]
    for key, entry in data.items():
        mean = f"{_num(entry['mean_score'])}/{_num(entry['max_score'])}"
        mistake = (entry["mistakes"] or entry["failed_tests"] or [{}])[0]
        text = mistake.get("mistake") or (f"fails: {mistake['test']}" if mistake else "")
        text = text if len(text) <= 60 else text[:57] + "..."
        if mistake:
            text += f" ({mistake['learners']} learners)"
        lines.append(f"{key:{width}}  {mean:>11}  {entry['full_marks_share']:>10.0%}  {text}")
    absent = max((entry.get("not_submitted", 0) for entry in data.values()), default=0)
    if absent:
        lines.append(f"(means and shares count learners who did not hand a notebook in as 0: up "
                     f"to {absent} per exercise; summary.json's mean_score_of_submitters leaves "
                     "them out)")
    return "\n".join(lines)


def summary_plot(data: dict, path: Path) -> None:
    """``summary.png``: per exercise, the class's scores (dots, box) and the share of full marks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(data)
    fractions = [np.array(data[n]["scores"]) / (data[n]["max_score"] or 1) for n in names]
    shares = [data[n]["full_marks_share"] for n in names]
    height = max(3.0, 0.32 * len(names) + 1.2)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, height), sharey=True,
                                      gridspec_kw={"width_ratios": [3, 1]})
    rows = np.arange(len(names))
    left.boxplot(fractions, positions=rows, orientation="horizontal", widths=0.6,
                 showfliers=False)
    jitter = np.random.default_rng(0)
    for row, values in zip(rows, fractions):
        left.scatter(values, row + jitter.uniform(-0.2, 0.2, len(values)), s=10, alpha=0.5,
                     color="tab:blue")
    left.set_xlim(-0.05, 1.05)
    left.set_xlabel("score / points possible (one dot per learner)")
    left.set_yticks(rows, names, fontsize=8)
    left.invert_yaxis()
    right.barh(rows, shares, color="tab:green")
    for row, share in zip(rows, shares):
        right.text(min(share, 0.8) + 0.02, row, f"{share:.0%}", va="center", fontsize=8)
    right.set_xlim(0, 1)
    right.set_xlabel("share of learners with full marks")
    learners = data[names[0]]["learners"] if names else 0
    fig.suptitle(f"Scores per exercise across the class ({learners} learners)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_gradebook(out: Path, records: list[dict], points: dict[str, list[dict]],
                    people: dict[str, dict[str, str]] | None = None,
                    people_columns: list[str] = (), late: dict | None = None) -> None:
    """Write ``out/gradebook.csv`` and ``out/points_possible.csv`` (see :func:`gradebook`), with
    the written grades of ``out/written.json`` where there are some."""
    written = written_grades.read(out)
    reporters.write_text(out / "gradebook.csv", gradebook(records, points, people,
                                                          people_columns, late, written))
    reporters.write_text(out / "points_possible.csv", points_possible(points, written))


def write_summary(out: Path, records: list[dict], points: dict[str, list[dict]]) -> dict:
    """Write ``out/summary.json`` and ``out/summary.png``; returns the summary."""
    data = summary(records, points)
    reporters.write_text(out / "summary.json", json.dumps(data, indent=2) + "\n")
    summary_plot(data, out / "summary.png")
    return data
