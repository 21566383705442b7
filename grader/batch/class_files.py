"""A class's last step: its files after grading (:func:`write_class`: the gradebook, the summary,
the roster's rows and the LMS file; or a shard's record, :func:`write_shard`).

:mod:`grader.batch.run` calls it once grading is done, and :mod:`grader.batch.merge` after joining
a class's shards; both hand it only the learners' records (``STUDENT/record.json``), so the same
records give the same bytes. The files themselves are :mod:`grader.batch.gradebook`'s,
:mod:`grader.batch.enrolment`'s, :mod:`grader.batch.lms`'s and :mod:`grader.batch.shards`'s.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import grader
from grader.batch import deadlines, enrolment, shards
from grader.batch import written as written_grades
from grader.batch import lms as lms_formats
from grader.batch.gradebook import summary_table, write_gradebook, write_summary
from grader.batch.roster import Plan, sha256
from grader.batch.shards import Shard
from grader.report import render as reporters


def class_late(records: list[dict], due_given: bool) -> dict | None:
    """student_id -> :class:`grader.batch.deadlines.Lateness`, read from the learners' records (None
    without a due time): one run and the merge of its shards read the same records."""
    if not due_given:
        return None
    return {r["student_id"]: deadlines.from_dict(r["lateness"]) for r in records
            if r.get("lateness")}


CLASS = ".class.json"
"""The class options and points the class's files were last written with (``python -m grader
written import`` writes the files again from them, with the written grades)."""


def write_class(out: Path, records: list[dict], points: dict[str, list[dict]], *,
                people: enrolment.Roster | None, class_options: dict, echo=print) -> list[dict]:
    """Write the class's files from the learners' records (``batch`` and ``merge`` alike):
    ``gradebook.csv``, ``points_possible.csv``, ``summary.json`` and ``summary.png``, and
    ``canvas.csv`` with ``lms``; returns every learner's record (the roster's absentees too).

    ``class_options`` is the part of :func:`class_options` that changes the class's files."""
    everyone = records if people is None else enrolment.apply(records, people)
    reporters.write_text(out / CLASS, json.dumps({"class_options": class_options,
                                                  "points": points}) + "\n")
    late = class_late(records, class_options["due"] is not None)
    write_gradebook(out, everyone, points, enrolment.columns(people),
                    people.columns if people else [], late)
    data = write_summary(out, everyone, points)
    if late is not None:
        policy = (None if class_options["late_policy"] is None
                  else deadlines.LatePolicy.parse(class_options["late_policy"]))
        due_at = deadlines.parse_time(class_options["due"])
        extra = deadlines.summary(late, due_at, policy)
        stored = json.loads((out / "summary.json").read_text())
        reporters.write_text(out / "summary.json",
                             json.dumps({**stored, "deadline": extra}, indent=2) + "\n")
    echo(summary_table(data))
    if people is not None:
        absent = len(everyone) - len(records)
        unknown = [r["student_id"] for r in records if r["student_id"] not in people.learners]
        echo(f"roster {people.path}: {absent} learner(s) with nothing handed in (0, "
             f"{enrolment.NOT_SUBMITTED}); not on the roster: {', '.join(unknown) or 'none'}")
    if late is not None:
        sources = Counter(entry.source for entry in late.values())
        echo(f"due {due_at.isoformat(timespec='minutes')}: "
             f"{sum(e.days_late > 0 for e in late.values())} learner(s) late; hand-in times from "
             + ", ".join(f"{source} ({n})" for source, n in sorted(sources.items())))
        warning = deadlines.file_times_warning(late)
        if warning:
            echo(warning)
    if class_options["lms"] == "canvas":
        title = class_options["assignment"] or "notebooks " + " ".join(
            s.split("_")[0] for s in points)
        reporters.write_text(out / "canvas.csv", lms_formats.canvas(
            everyone, points, enrolment.columns(people), title,
            {i: entry.penalty_percent for i, entry in (late or {}).items()},
            written_grades.read(out)))
        echo(f"Canvas import file written to {out / 'canvas.csv'} (assignment {title!r})")
    return everyone


def roster_record(people: enrolment.Roster | None) -> dict | None:
    """The roster as a shard record carries it (so that ``merge`` needs no file)."""
    if people is None:
        return None
    return {"path": str(people.path), "columns": people.columns, "learners": people.learners}


def roster_from_record(data: dict | None) -> enrolment.Roster | None:
    """The roster :func:`roster_record` wrote."""
    if data is None:
        return None
    return enrolment.Roster(path=Path(data["path"]), learners=data["learners"],
                            columns=data["columns"])


def _shard_record(shard: Shard, learners: dict, plans: list[Plan], options: dict,
                  points: dict[str, list[dict]]) -> dict:
    from grader.judge.proxy import known_suites, suite_path

    return shards.record(shard, class_ids=list(learners), learners=[p.student_id for p in plans],
                         grader_version=grader.__version__, options=options,
                         suites={s: sha256(suite_path(s)) for s in known_suites()},
                         points=points)


def class_options(*, due: str | None, late_policy: str | None, assignment_name: str | None,
                  people: enrolment.Roster | None, lms: str | None) -> dict:
    """The options that change the class's files rather than a learner's grading: the due time
    and late policy, the assignment's name, the roster and the LMS export. A shard records them
    (:mod:`grader.batch.shards`), so that ``merge`` writes what one run would."""
    return {"due": due, "late_policy": late_policy, "assignment": assignment_name,
            "roster": roster_record(people), "lms": lms}


def write_shard(out: Path, shard: Shard, *, learners: dict, plans: list[Plan], options: dict,
                points: dict[str, list[dict]]) -> None:
    """Write ``shard.json``: which slice of the class this run graded, and with what."""
    shards.write(out, _shard_record(shard, learners, plans, options, points))
