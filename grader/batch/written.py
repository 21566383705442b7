"""A class's written grades: what a person gave each written answer, kept beside the autograded
records and read by every class file.

``OUT/written.json`` (written by ``python -m grader written import``,
:mod:`grader.batch.written_loop`) holds the written questions (id, points, rubric) and, per
learner and question, the points, the rubric items ticked, the comment and the SHA-256 of the
answer that was graded. The learners' records (``STUDENT/record.json``) are the autograder's and
never hold a written grade, so a regrade of the autograded part keeps the written grades; a
learner whose answer's SHA-256 in the record differs from the graded one is flagged
(:func:`learner_grades`' ``changed``). The gradebook, the Canvas file, the feedback pages and the
shards' merge read this file through the functions here.
"""
from __future__ import annotations

import json
from pathlib import Path

from grader.errors import GraderError

GRADES = "written.json"
"""The class's written grades, in the class's ``--out`` folder."""
FORMAT = 1


def key(suite: str, question: str) -> str:
    """A written question's key in the class's files: ``SUITE/QUESTION``."""
    return f"{suite}/{question}"


def read(out: Path) -> dict | None:
    """``out/written.json``, or None where no written grade was imported."""
    path = out / GRADES
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise GraderError(f"{path}: unreadable written grades ({exc}); import the filled CSV "
                          "again with `python -m grader written import`") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise GraderError(f"{path}: not written grades of this grader; import the CSV again")
    return data


def write(out: Path, data: dict) -> None:
    """Write ``out/written.json`` (atomically)."""
    from grader.report.render import write_text

    write_text(out / GRADES, json.dumps(data, indent=1, sort_keys=True) + "\n")


def empty() -> dict:
    """Written grades with no question and no grade."""
    return {"format": FORMAT, "questions": {}, "grades": {}}


def merged(parts: list[dict]) -> dict:
    """One set of written grades from several (the shards'); GraderError when two give the same
    learner's question different grades or the same question different points."""
    result = empty()
    for part in parts:
        for name, question in part["questions"].items():
            if result["questions"].setdefault(name, question) != question:
                raise GraderError(f"written question {name} differs between the shards' "
                                  f"{GRADES}; import the grades again into one of them")
        for student, grades in part["grades"].items():
            mine = result["grades"].setdefault(student, {})
            for name, grade in grades.items():
                if mine.setdefault(name, grade) != grade:
                    raise GraderError(f"learner {student}'s written grade of {name} differs "
                                      f"between the shards' {GRADES}; keep one of them")
    return result


def questions_in(data: dict | None, suites: list[str]) -> list[str]:
    """The keys of the written questions of ``suites``, in course order, then the order of
    ``data`` (the course notebook's order)."""
    if not data:
        return []
    order = {suite: index for index, suite in enumerate(suites)}
    names = [n for n in data["questions"] if n.split("/", 1)[0] in order]
    return sorted(names, key=lambda n: order[n.split("/", 1)[0]])


def current_answers(record: dict) -> dict[str, dict]:
    """``SUITE/QUESTION`` -> the learner's answer as graded last (``answered``, ``sha256``),
    from their record."""
    answers = {}
    for report in record.get("notebooks", []):
        for answer in report.get("written", []):
            answers[key(report.get("suite", ""), answer["question"])] = answer
    return answers


def learner_grades(data: dict | None, record: dict) -> dict[str, dict[str, dict]]:
    """Suite -> question -> the learner's written grade: ``points`` (None: not graded yet),
    ``max_points``, ``rubric_items`` (the texts of the items ticked), ``comment``, ``answered``
    and ``changed`` (their answer is not the one graded: its SHA-256 differs)."""
    if not data:
        return {}
    grades = data["grades"].get(record["student_id"], {})
    answers = current_answers(record)
    result: dict[str, dict[str, dict]] = {}
    for name, question in data["questions"].items():
        suite, qid = name.split("/", 1)
        grade = grades.get(name)
        answer = answers.get(name, {})
        entry = {"points": None, "max_points": question["points"], "rubric_items": [],
                 "comment": "", "answered": bool(answer.get("answered")), "changed": False}
        if grade is not None:
            entry.update(points=grade["points"], comment=grade.get("comment", ""),
                         rubric_items=[f"{question['rubric'][i - 1]['points']}: "
                                       f"{question['rubric'][i - 1]['text']}"
                                       for i in grade.get("rubric", [])])
            entry["changed"] = bool(answer) and answer.get("sha256", "") != grade.get("sha256", "")
        result.setdefault(suite, {})[qid] = entry
    return result


def earned(data: dict | None, record: dict, names: list[str]) -> dict[str, float | None]:
    """``SUITE/QUESTION`` -> the points a person gave (None: not graded yet), for ``names``."""
    grades = data["grades"].get(record["student_id"], {}) if data else {}
    return {name: grades[name]["points"] if name in grades else None for name in names}


def status_cell(data: dict | None, record: dict, names: list[str]) -> str:
    """The gradebook's ``written_status``: answers awaiting grading, and answers that changed
    after they were graded (``""`` when all are graded and unchanged)."""
    if not names:
        return ""
    grades = learner_grades(data, record)
    waiting, changed = [], []
    for name in names:
        suite, qid = name.split("/", 1)
        entry = grades.get(suite, {}).get(qid)
        if entry is None:
            continue
        if entry["points"] is None and entry["answered"]:
            waiting.append(name)
        if entry["changed"]:
            changed.append(name)
    parts = []
    if waiting:
        parts.append(f"awaiting grading: {' '.join(waiting)}")
    if changed:
        parts.append(f"answer changed after grading: {' '.join(changed)}")
    return "; ".join(parts)
