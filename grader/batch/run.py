"""A class's walk: the one entry point of ``python -m grader batch``, step after step.

:func:`grade_class` takes one :class:`ClassOptions` (the command line builds it), reads and checks
what the options name once (the assignment's suites, the roster, the due time and late policy: a
bad one stops the run before any learner is graded), then walks each gradebook through five
modules, each once and in this order:

1. discovery, :mod:`grader.batch.roster`: :func:`~grader.batch.roster.discover`, or in nbgrader's
   layout :func:`~grader.batch.roster.discover_assignment` (one gradebook per assignment);
2. scoping, :func:`grader.batch.assignment.scope`: the learners of this shard and the
   assignment's notebooks;
3. lateness, :func:`grader.batch.deadlines.class_lateness`. It comes before grading because each
   learner's files carry it (the gradebook's penalty, ``results.json``, the feedback page) and
   are written once, by the step that grades that learner: a run stopped half-way leaves the
   learners it finished complete, lateness included;
4. grading, :mod:`grader.batch.grading`: the assignment's points
   (:func:`~grader.batch.grading.cached_points`), then each learner in a child process of its
   own (:func:`~grader.batch.grading.grade_all`);
5. the class's files, :mod:`grader.batch.class_files`: the gradebook, the summary, the roster's
   rows and the LMS file (:func:`~grader.batch.class_files.write_class`), or a shard's record
   (:func:`~grader.batch.class_files.write_shard`).

Each step is a function of its own module and returns; none imports this module
(``tests/batch/test_walk.py`` records the walk and fails on a module visited twice or out of
order).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from grader.batch import assignment, class_files, deadlines, enrolment, grading, roster
from grader.batch import lms as lms_formats
from grader.batch.roster import Options
from grader.batch.shards import RECORD, Shard
from grader.errors import GraderError
from grader.report.render import HIDDEN_DETAIL


@dataclass(frozen=True)
class ClassOptions:
    """Everything ``python -m grader batch`` is told: where, whom, how, and the class's files."""
    submissions: Path
    """The folder of submissions (:data:`grader.batch.roster.LAYOUTS`)."""
    out: Path
    """Where the learners' files and the class's files are written."""
    grading: Options = field(default_factory=Options)
    """How each learner is graded (execution, time-outs, confinement, memory)."""
    jobs: int | None = None
    """Learners graded at once (default: the CPU count)."""
    students: list[str] | None = None
    """Regrade only these learners."""
    force: bool = False
    """Regrade learners whose files are up to date."""
    flat: bool = False
    """Submissions are ``STUDENT_*.ipynb`` files in one folder."""
    timeout_per_student: float = 1200.0
    """Wall-clock cap of one learner's grading, in seconds."""
    shard: Shard | None = None
    """Grade only this slice of the class (K of N) and write ``shard.json``."""
    notebooks: list[str] | None = None
    """The assignment's notebooks (numbers or names); default: every notebook, or in nbgrader's
    layout those the assignment's learners handed in."""
    assignment_name: str | None = None
    """The assignment's name (nbgrader's folder; ``canvas.csv``'s column)."""
    roster: Path | None = None
    """The class's roster (:mod:`grader.batch.enrolment`)."""
    lms: str | None = None
    """Also write the import file of this LMS (:data:`grader.batch.lms.SYSTEMS`)."""
    due: str | None = None
    """When work is due (:func:`grader.batch.deadlines.parse_time`)."""
    late_policy: str | None = None
    """The penalty per day late (:class:`grader.batch.deadlines.LatePolicy`)."""
    no_file_times: bool = False
    """Refuse hand-in times read from file times."""
    hidden_detail: str = HIDDEN_DETAIL
    """What the learners' results.json and feedback.html show of each hidden test
    (:data:`grader.report.render.HIDDEN_DETAILS`)."""
    echo: Callable[[str], object] = print
    """Where the run's lines go."""
    progress: bool = True
    """Show a progress bar on stderr."""


@dataclass(frozen=True)
class _Settings:
    """The options read and checked once: the assignment's suites, the roster, the deadline."""
    suites: list[str] | None
    people: enrolment.Roster | None
    columns: dict[str, dict[str, str]]
    """student_id -> the roster's columns (:func:`grader.batch.enrolment.columns`)."""
    due: object
    policy: deadlines.LatePolicy | None


def _settings(o: ClassOptions) -> _Settings:
    """Check ``o`` and read what it names; raises GraderError, in one line, for a bad option."""
    if (o.jobs or os.cpu_count() or 1) < 1 or o.timeout_per_student <= 0:
        raise GraderError("--jobs and --timeout-per-student must be positive")
    if o.shard is not None and o.students:
        raise GraderError("--student and --shard cannot be combined: regrade a learner in a run "
                          "of their own shard, without --student")
    suites = assignment.select(o.notebooks) if o.notebooks else None
    if o.lms is not None and (o.lms not in lms_formats.SYSTEMS or o.roster is None):
        raise GraderError(f"--lms {o.lms}: needs --roster (with the LMS's ids) and one of: "
                          f"{', '.join(lms_formats.SYSTEMS)}")
    people = enrolment.read(o.roster) if o.roster is not None else None
    if o.late_policy is not None and o.due is None:
        raise GraderError("--late-policy needs --due (the date and time work is due)")
    if o.no_file_times and o.due is None:
        raise GraderError("--no-file-times needs --due (it refuses hand-in times read from file "
                          "times)")
    due = deadlines.parse_time(o.due) if o.due is not None else None
    policy = deadlines.LatePolicy.parse(o.late_policy) if o.late_policy is not None else None
    return _Settings(suites, people, enrolment.columns(people), due, policy)


def grade_class(o: ClassOptions) -> list[dict]:
    """Grade the class ``o`` describes and write every file; returns the records of every
    learner graded here.

    With ``o.shard`` (K of N), grade only that slice of the learners (:mod:`grader.batch.shards`)
    and write their files and ``shard.json`` instead of the class's files (``python -m grader
    merge`` writes those from every shard). With ``o.notebooks`` (or in nbgrader's layout, where
    each assignment folder is one assignment: :mod:`grader.batch.assignment`), only those
    notebooks are graded and the gradebook is out of their points; in nbgrader's layout each
    assignment (or the one ``o.assignment_name`` names) gets the folder ``out/ASSIGNMENT``. With
    ``o.roster``, learners on it who handed nothing in get a row, and its names and LMS ids become
    columns; ``o.lms="canvas"`` also writes ``canvas.csv``. With ``o.due`` (and
    ``o.late_policy``), the gradebook, each learner's record, ``results.json`` and feedback page
    say when they handed in, how late, and the penalty; hand-in times read from file times are
    named in the terminal and ``summary.json``, and ``o.no_file_times`` refuses them.
    Raises GraderError for a bad option, a bad submissions folder or an unknown ``--student``;
    KeyboardInterrupt stops the running learners and leaves the finished learners' files
    complete (a shard then has no ``shard.json``).
    """
    settings = _settings(o)
    # discovery: nbgrader's layout holds a gradebook per assignment, each in out/ASSIGNMENT
    names = []
    if not o.flat and roster.is_nbgrader(o.submissions):
        names = [o.assignment_name] if o.assignment_name else roster.nbgrader_assignments(
            o.submissions)
    if not names:
        return _grade_assignment(o, settings, roster.discover(o.submissions, flat=o.flat),
                                 handed_in_only=False)
    records = []
    for name in names:
        learners = roster.discover_assignment(o.submissions, name)
        if o.students and not set(learners) & set(o.students):
            continue
        o.echo(f"assignment {name}: gradebook in {o.out / name}")
        one = dataclasses.replace(o, out=o.out / name, assignment_name=name,
                                  students=[s for s in o.students or [] if s in learners] or None)
        records += _grade_assignment(one, settings, learners, handed_in_only=True)
    return records


def _grade_assignment(o: ClassOptions, settings: _Settings,
                      learners: dict[str, tuple[Path, list[Path]]], *,
                      handed_in_only: bool) -> list[dict]:
    """One gradebook's walk after its discovery (``learners``): scoping, lateness, grading, and
    the class's files. ``handed_in_only``: the assignment is the notebooks anyone handed in."""
    unknown = sorted(set(o.students or []) - set(learners))
    if unknown:
        raise GraderError(f"no submissions for --student {', '.join(unknown)} in {o.submissions}")
    # scoping
    plans, suites = assignment.scope(learners, o.grading, suites=settings.suites, shard=o.shard,
                                     handed_in_only=handed_in_only)
    # lateness
    own_folders = not handed_in_only and not o.flat  # the plain layout: STUDENT/ is theirs
    late = deadlines.class_lateness(learners, settings.due, settings.policy, settings.columns,
                                    no_file_times=o.no_file_times, own_folders=own_folders)
    ignored = deadlines.own_records_warning(learners) if late and own_folders else None
    if ignored:
        o.echo(ignored)
    stamps = {s: deadlines.to_dict(e) for s, e in late.items()}
    warning = None if o.shard is None else deadlines.file_times_warning(
        {s: late[s] for s in late if o.shard.holds(s)})
    # grading
    points = grading.cached_points(o.out, suites)
    records, graded = grading.grade_all(
        plans, out=o.out, options=o.grading, points=points, stamps=stamps, students=o.students,
        force=o.force, jobs=o.jobs or os.cpu_count() or 1,
        timeout_per_student=o.timeout_per_student, progress=o.progress,
        hidden_detail=o.hidden_detail)
    # the class's files
    counts = f"{graded} regraded, {len(plans) - graded} up to date"
    class_settings = class_files.class_options(due=o.due, late_policy=o.late_policy,
                                               assignment_name=o.assignment_name,
                                               people=settings.people, lms=o.lms)
    if o.shard is not None:
        run_options = {**dataclasses.asdict(o.grading), "flat": o.flat,
                       "timeout_per_student": o.timeout_per_student, "class": class_settings}
        class_files.write_shard(o.out, o.shard, learners=learners, plans=plans,
                                options=run_options, points=points)
        o.echo(f"shard {o.shard}: {counts} of the class's {len(learners)}; shard record written "
               f"to {o.out / RECORD} (join the shards with `python -m grader merge`)")
        if warning:
            o.echo(warning)
        return records
    class_files.write_class(o.out, records, points, people=settings.people,
                            class_options=class_settings, echo=o.echo)
    o.echo(f"{counts}; gradebook written to {o.out / 'gradebook.csv'}")
    return records
