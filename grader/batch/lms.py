"""The gradebook in a learning-management system's import format (``batch --lms canvas``).

Canvas imports a CSV laid out like its own gradebook export: the columns ``Student``, ``ID``,
``SIS User ID``, ``SIS Login ID`` and ``Section``, then one column per assignment, and, as the
second line, Canvas's own ``Points Possible`` row (its convention, so it lives in this file and
never in ``gradebook.csv``). Canvas matches a row to a learner by ``ID``, ``SIS User ID`` or
``SIS Login ID``, so those come from the roster (``lms_id``, ``sis_id``, ``login``); a new
assignment column creates the assignment, worth the points of the ``Points Possible`` row.
"""
from __future__ import annotations

import csv
import io

from grader.errors import GraderError
from grader.batch import written as written_grades
from grader.batch.gradebook import full_reports

SYSTEMS = ("canvas",)
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_ROW = "    Points Possible"
"""How Canvas's own export writes the label of its second line."""


def _num(value: float) -> str:
    return f"{round(value, 4):g}"


def canvas(records: list[dict], points: dict[str, list[dict]],
           people: dict[str, dict[str, str]], assignment: str,
           penalties: dict[str, float] | None = None, written: dict | None = None) -> str:
    """``canvas.csv``: one row per learner on the roster, the assignment's total (less the late
    penalty, in percent, that ``penalties`` gives a learner); with ``written``
    (:mod:`grader.batch.written`'s grades), the written questions' points count in the total and
    in ``Points Possible`` (a question not graded yet counts 0).

    Raises GraderError when no learner has an id Canvas can match (a roster with ``lms_id``,
    ``sis_id`` or ``login`` is needed)."""
    if not any(p.get("lms_id") or p.get("sis_id") or p.get("login") for p in people.values()):
        raise GraderError("--lms canvas needs a --roster with an lms_id, sis_id or login column "
                          "(Canvas matches learners by its ID, SIS User ID or SIS Login ID)")
    maximum = sum(t["max_score"] for tests in points.values() for t in tests)
    names = written_grades.questions_in(written, list(points))
    maximum += sum(written["questions"][name]["points"] for name in names)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CANVAS_COLUMNS, assignment])
    writer.writerow([CANVAS_POINTS_ROW, "", "", "", "", _num(maximum)])
    for record in sorted(records, key=lambda r: r["student_id"]):
        person = people.get(record["student_id"])
        if person is None:  # not on the roster: Canvas could not place the row
            continue
        total = sum(r.score for r in full_reports(record, points))
        total += sum(p or 0 for p in written_grades.earned(written, record, names).values())
        total *= 1 - (penalties or {}).get(record["student_id"], 0.0) / 100
        writer.writerow([person.get("name", "") or record["student_id"], person.get("lms_id", ""),
                         person.get("sis_id", ""), person.get("login", ""),
                         person.get("section", ""), _num(total)])
    return buffer.getvalue()
