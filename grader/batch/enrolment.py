"""The class list: who should have handed something in, with their names and LMS ids.

``batch --roster roster.csv`` reads a CSV with a ``student_id`` column (the learner's folder or
file prefix in the submissions) and, optionally, ``name``, ``lms_id`` (the LMS's own id of the
learner, Canvas's ``ID``), ``sis_id``, ``login``, ``section``, and a learner's extension
(``extension_days``, or their own ``due``; see :mod:`grader.batch.deadlines`). Learners on the roster who
handed nothing in get a row of zeros with the status ``not submitted``; learners who handed
something in but are not on the roster keep their grades, with the note ``not on the roster``.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from grader.errors import GraderError

COLUMNS = ("name", "lms_id", "sis_id", "login", "section", "extension_days", "due")
"""Optional roster columns, in the order the gradebook shows those present."""
NOT_SUBMITTED = "not submitted"
NOT_ON_ROSTER = "not on the roster"


@dataclass
class Roster:
    """The roster's learners, in the file's order: student_id -> its optional columns."""

    path: Path
    learners: dict[str, dict[str, str]]
    columns: list[str]
    """The optional columns the file has (a subset of :data:`COLUMNS`, in that order)."""


def read(path: Path) -> Roster:
    """Read a roster CSV; raises GraderError (one line) for a missing file or column, or an id
    given twice."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
            header = [h.strip() for h in (rows[0].keys() if rows else [])]
    except OSError as exc:
        raise GraderError(f"--roster {path}: {exc.strerror}; give a CSV with a student_id "
                          "column") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise GraderError(f"--roster {path}: not a readable CSV ({exc})") from None
    if "student_id" not in header:
        raise GraderError(f"--roster {path}: no student_id column (columns: "
                          f"{', '.join(header) or 'none'}); name the column of learners' ids "
                          "student_id")
    learners: dict[str, dict[str, str]] = {}
    for number, row in enumerate(rows, start=2):
        row = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
        student_id = row["student_id"]
        if not student_id:
            continue
        if student_id in learners:
            raise GraderError(f"--roster {path}: line {number}: {student_id} is listed twice")
        learners[student_id] = {c: row.get(c, "") for c in COLUMNS if c in header}
    return Roster(path=path, learners=learners, columns=[c for c in COLUMNS if c in header])


def not_submitted_record(student_id: str) -> dict:
    """A record for a learner on the roster who handed nothing in (every notebook scores 0)."""
    return {"student_id": student_id, "grading_status": NOT_SUBMITTED, "notes": [],
            "fingerprint": {}, "submitted": [], "unreadable": {}, "notebooks": [],
            "seconds": 0.0}


def apply(records: list[dict], roster: Roster) -> list[dict]:
    """The class's records with the roster's absentees added (status ``not submitted``) and
    learners the roster lacks noted; the records given are not changed."""
    present = {r["student_id"] for r in records}
    result = []
    for record in records:
        if record["student_id"] not in roster.learners:
            record = {**record, "notes": [*record.get("notes", []), NOT_ON_ROSTER]}
        result.append(record)
    result += [not_submitted_record(s) for s in roster.learners if s not in present]
    return sorted(result, key=lambda r: r["student_id"])


def columns(roster: Roster | None) -> dict[str, dict[str, str]]:
    """student_id -> the roster's optional columns, for the gradebook (empty without one)."""
    return {} if roster is None else roster.learners
