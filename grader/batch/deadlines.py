"""Deadlines: when each learner handed in, how late that was, and what the late policy takes.

``batch --due 2026-03-01T23:59+01:00 --late-policy 10,50`` takes 10 % of a late learner's points
per day late (a started day counts), at most 50 %. A learner's due date moves by the roster's
``extension_days`` column (or is replaced by its ``due`` column). The time a learner handed in is
read, in this order, from:

0. ``commits.csv`` beside the learners' folders (never inside one, where a learner could write
   it): the time of the commit that :mod:`grader.batch.classroom_collect` checked out of their
   repository;
1. nbgrader's ``timestamp.txt`` in the learner's assignment folder;
2. Gradescope's ``submission_metadata.json`` (its ``created_at``) in the learner's folder;
3. the newest modification time of the learner's notebooks (file times survive a copy only when
   it keeps them: ``cp -p``, ``rsync -t``, an unzip);

and the gradebook says which one was used for each learner. Only records the instructor's side
wrote count: in the plain layout (``SUBMISSIONS/STUDENT/``) a ``timestamp.txt`` or
``submission_metadata.json`` inside a learner's own folder is theirs, which they could have forged,
and is ignored (:func:`class_lateness`'s ``own_folders``; a warning names each such learner); it
counts in nbgrader's layout, where the exchange wrote it, and beside the learners' folders. File
times are the least sure:
``batch`` says in the terminal and in ``summary.json`` which learners' times came from them, and
``--no-file-times`` refuses to grade when any would. Each learner's record (``record.json``),
``results.json`` and feedback page carry their lateness (:func:`to_dict`), so that the shards of
a class merge to the gradebook of one run.
"""
from __future__ import annotations

import csv
import json
import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from grader.errors import GraderError

SOURCES = ("nbgrader timestamp.txt", "Gradescope submission_metadata.json", "file times")
FILE_TIMES = SOURCES[2]
COMMITS = "commits.csv"
COMMIT_SOURCE = "git commit time"
COLUMNS = ["submitted_at", "time_source", "due", "days_late", "late_penalty_percent",
           "total_after_penalty"]
"""What the gradebook adds, after ``percent``, when a due date is given."""


def parse_time(text: str, what: str = "--due") -> datetime:
    """An ISO 8601 date and time (``2026-03-01T23:59``, ``2026-03-01 23:59:00 UTC``, with or
    without an offset: UTC when none). Raises GraderError (one line)."""
    cleaned = text.strip().removesuffix("UTC").removesuffix("Z").strip()
    offset = text.strip().endswith(("UTC", "Z"))
    try:
        moment = datetime.fromisoformat(cleaned)
    except ValueError:
        raise GraderError(f"{what} {text!r}: not a date and time; write it as ISO 8601, e.g. "
                          "2026-03-01T23:59+01:00 (UTC when no offset is given)") from None
    if moment.tzinfo is None or offset:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment


@dataclass
class LatePolicy:
    """Percent of the points taken per day late (a started day counts), at most ``cap``."""

    per_day: float
    cap: float = 100.0

    @classmethod
    def parse(cls, text: str) -> LatePolicy:
        """``PER_DAY`` or ``PER_DAY,CAP``, in percent (``10,50``). Raises GraderError."""
        try:
            values = [float(part.strip().removesuffix("%")) for part in text.split(",")]
        except ValueError:
            values = []
        if len(values) not in (1, 2) or not all(0 <= v <= 100 for v in values):
            raise GraderError(f"--late-policy {text!r}: write PER_DAY[,CAP], percentages from 0 "
                              "to 100, e.g. 10,50 (10 % per day late, at most 50 %)")
        return cls(*values)

    def penalty(self, days_late: int) -> float:
        return min(self.cap, self.per_day * max(days_late, 0))


@dataclass
class Lateness:
    """One learner's hand-in time against their due date."""

    submitted_at: datetime | None
    source: str
    due: datetime
    days_late: int
    penalty_percent: float


def to_dict(entry: Lateness) -> dict:
    """``entry`` as plain JSON values (times in ISO 8601), as records and reports store it."""
    return {"submitted_at": None if entry.submitted_at is None
            else entry.submitted_at.isoformat(timespec="seconds"),
            "source": entry.source, "due": entry.due.isoformat(timespec="seconds"),
            "days_late": entry.days_late, "penalty_percent": entry.penalty_percent}


def from_dict(data: dict) -> Lateness:
    """The :class:`Lateness` that :func:`to_dict` wrote."""
    moment = data.get("submitted_at")
    return Lateness(None if moment is None else datetime.fromisoformat(moment), data["source"],
                    datetime.fromisoformat(data["due"]), int(data["days_late"]),
                    float(data["penalty_percent"]))


def after_penalty(total: float, entry: Lateness | dict | None) -> float:
    """``total`` less ``entry``'s late penalty (``total`` itself without one)."""
    if isinstance(entry, dict):
        entry = from_dict(entry)
    return total if entry is None else total * (1 - entry.penalty_percent / 100)


def collected_commit(folder: Path) -> dict | None:
    """The repository, commit and commit time graded for the learner in ``folder``, from the
    ``commits.csv`` that :mod:`grader.batch.classroom_collect` wrote beside it; None without one."""
    path = folder.parent / COMMITS
    if not path.is_file():
        return None
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = [row for row in csv.DictReader(handle) if row.get("student_id") == folder.name]
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        raise GraderError(f"{path}: unreadable ({exc}); collect the repositories again") from None
    if not rows or not rows[0].get("commit") or not rows[0].get("committed_at"):
        return None
    return {k: rows[0][k] for k in ("repository", "commit", "committed_at")}


OWN_RECORDS = ("timestamp.txt", "submission_metadata.json")
"""Hand-in records that, inside a learner's own folder of the plain layout, are the learner's."""


def own_records(folder: Path) -> list[str]:
    """The hand-in records (:data:`OWN_RECORDS`) in the learner's own ``folder``."""
    return [name for name in OWN_RECORDS if (folder / name).is_file()]


def submitted_at(folder: Path, notebooks: list[Path], *,
                 own_folder: bool = False) -> tuple[datetime | None, str]:
    """When the learner handed in, and which source said so (see the module's list). With
    ``own_folder`` (the plain layout: the learner wrote what ``folder`` holds) the records inside
    ``folder`` are not read, only the instructor's beside it, then file times."""
    commit = collected_commit(folder)
    if commit is not None:
        return parse_time(commit["committed_at"], str(folder.parent / COMMITS)), COMMIT_SOURCE
    places = [folder.parent] if own_folder else [folder, folder.parent]
    for candidate in (place / "timestamp.txt" for place in places):
        if candidate.is_file():
            return parse_time(candidate.read_text().strip(), str(candidate)), SOURCES[0]
    for candidate in (place / "submission_metadata.json" for place in places):
        if candidate.is_file():
            try:
                created = json.loads(candidate.read_text())["created_at"]
            except (ValueError, KeyError, TypeError):
                raise GraderError(f"{candidate}: no created_at in Gradescope's submission "
                                  "metadata") from None
            return parse_time(str(created), str(candidate)), SOURCES[1]
    times = [p.stat().st_mtime for p in notebooks if p.is_file()]
    if not times:
        return None, "nothing handed in"
    return datetime.fromtimestamp(max(times), tz=timezone.utc).replace(microsecond=0), FILE_TIMES


def due_for(due: datetime, person: dict[str, str] | None) -> datetime:
    """The learner's due date: the roster's ``due`` if given, else ``due`` plus the roster's
    ``extension_days``."""
    person = person or {}
    if person.get("due"):
        return parse_time(person["due"], "roster due")
    extension = person.get("extension_days") or "0"
    try:
        return due + timedelta(days=float(extension))
    except ValueError:
        raise GraderError(f"roster extension_days {extension!r}: not a number of days") from None


def lateness(folder: Path, notebooks: list[Path], due: datetime, policy: LatePolicy | None,
             person: dict[str, str] | None = None, *, own_folder: bool = False) -> Lateness:
    """How late the learner in ``folder`` handed in, and the penalty ``policy`` gives
    (``own_folder``: see :func:`submitted_at`)."""
    moment, source = submitted_at(folder, notebooks, own_folder=own_folder)
    deadline = due_for(due, person)
    late = 0
    if moment is not None and moment > deadline:
        late = math.ceil((moment - deadline).total_seconds() / 86400)
    penalty = policy.penalty(late) if policy is not None else 0.0
    return Lateness(moment, source, deadline, late, penalty)


def class_lateness(learners: dict[str, tuple[Path, list[Path]]], due: datetime | None,
                   policy: LatePolicy | None, people: dict[str, dict[str, str]], *,
                   no_file_times: bool = False, own_folders: bool = False) -> dict[str, Lateness]:
    """Each learner's :func:`lateness` (learner id -> (folder, notebooks) in ``learners``; the
    roster's columns per learner in ``people``); empty without a ``due`` time. ``own_folders``:
    each learner's folder holds what they handed in (the plain layout), so no hand-in record in
    it is trusted. Raises GraderError with ``no_file_times`` when a hand-in time could only be
    read from file times."""
    late = {} if due is None else {
        student_id: lateness(folder, files, due, policy, people.get(student_id),
                             own_folder=own_folders)
        for student_id, (folder, files) in learners.items()}
    guessed = sorted(s for s, e in late.items() if e.source == FILE_TIMES)
    if no_file_times and guessed:
        raise GraderError(f"--no-file-times: no nbgrader timestamp.txt or Gradescope metadata "
                          f"for {', '.join(guessed[:8])}{' ...' if len(guessed) > 8 else ''} "
                          f"({len(guessed)} learner(s)); give the hand-in times, or drop "
                          "--no-file-times to read them from file times")
    return late


def cells(entry: Lateness | None, total: float) -> list[str]:
    """The gradebook's :data:`COLUMNS` for one learner (blank when nothing was handed in)."""
    if entry is None or entry.submitted_at is None:
        return ["", "nothing handed in", "", "", "", "0"]
    after = after_penalty(total, entry)
    return [entry.submitted_at.isoformat(timespec="seconds"), entry.source,
            entry.due.isoformat(timespec="seconds"), str(entry.days_late),
            f"{round(entry.penalty_percent, 4):g}", f"{round(after, 4):g}"]


def summary(late: dict[str, Lateness], due: datetime, policy: LatePolicy | None) -> dict:
    """What ``summary.json`` says of the deadline: the due time and policy, who was late, and
    which learners' hand-in times came from file times (the least sure source)."""
    return {"due": due.isoformat(timespec="seconds"),
            "late_policy": None if policy is None else [policy.per_day, policy.cap],
            "late": sorted(s for s, e in late.items() if e.days_late > 0),
            "time_sources": dict(sorted(Counter(
                e.source for e in late.values()).items())),
            "from_file_times": sorted(s for s, e in late.items() if e.source == FILE_TIMES)}


def own_records_warning(learners: dict[str, tuple[Path, list[Path]]]) -> str | None:
    """One line naming the learners whose own folder holds a hand-in record that was ignored
    (the plain layout), or None."""
    found = {s: own_records(folder) for s, (folder, _) in learners.items()}
    named = [f"{s} ({', '.join(names)})" for s, names in sorted(found.items()) if names]
    if not named:
        return None
    shown = ", ".join(named[:8]) + (f" and {len(named) - 8} more" if len(named) > 8 else "")
    return (f"warning: ignored the hand-in records that {len(named)} learner(s) handed in "
            f"themselves: {shown}; their hand-in times come from the instructor's side (commits, "
            "records beside their folders, file times)")


def file_times_warning(late: dict[str, Lateness]) -> str | None:
    """One line naming the learners whose hand-in times come from file times, or None."""
    ids = sorted(s for s, e in late.items() if e.source == FILE_TIMES)
    if not ids:
        return None
    shown = ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
    return (f"warning: the hand-in times of {len(ids)} learner(s) ({shown}) come from file times "
            "(right only where the copy kept them: cp -p, rsync -t, an unzip); give nbgrader's "
            "timestamp.txt or Gradescope's metadata, or pass --no-file-times to refuse")
