"""Which notebooks an assignment holds, so that a class's gradebook is out of its points.

An assignment is a set of the course's notebooks: named on the command line (``batch
--notebooks 01 02``), or read from nbgrader's layout, where ``submitted/STUDENT/ASSIGNMENT/``
holds each learner's notebooks of one assignment: the assignment's notebooks are those that its
learners handed in, and each assignment gets a gradebook of its own (``OUT/ASSIGNMENT/``). The
layout is recognised whether the instructor gives the course folder that holds ``submitted/`` or
``submitted/`` itself (:func:`submitted_folder`). :func:`scope_points` and
:func:`scope_plan` narrow what :mod:`grader.batch.grading` grades and counts to them; nothing else
changes.
"""
from __future__ import annotations

from pathlib import Path

from grader.errors import GraderError
from grader.batch.roster import Options, Plan, _notebooks_below, plan
from grader.batch.shards import Shard


def select(notebooks: list[str]) -> list[str]:
    """The suites named by ``notebooks`` (``01``, ``1`` or a full name), in course order."""
    from grader.judge.selection import select_suites

    return select_suites(notebooks)


def submitted_folder(submissions: Path) -> Path | None:
    """nbgrader's ``submitted/`` folder, whether ``submissions`` holds it or is it, else None.

    ``submissions`` is ``submitted/`` itself when a learner's assignment folder holds nbgrader's
    ``timestamp.txt`` (``submitted/STUDENT/ASSIGNMENT/timestamp.txt``), or when it is named
    ``submitted`` and its notebooks lie two folders down, never one."""
    if (submissions / "submitted").is_dir():
        return submissions / "submitted"
    if not submissions.is_dir():
        return None
    if any(submissions.glob("*/*/timestamp.txt")):
        return submissions
    if (submissions.name == "submitted" and any(submissions.glob("*/*/*.ipynb"))
            and not any(submissions.glob("*/*.ipynb"))):
        return submissions
    return None


def is_nbgrader(submissions: Path) -> bool:
    """Whether ``submissions`` is laid out as nbgrader's ``submitted/STUDENT/ASSIGNMENT/`` (given
    as the folder that holds ``submitted/`` or as ``submitted/`` itself)."""
    return submitted_folder(submissions) is not None


def _submitted(submissions: Path) -> Path:
    return submitted_folder(submissions) or submissions / "submitted"


def nbgrader_assignments(submissions: Path) -> list[str]:
    """The assignment folders found under any learner in nbgrader's ``submitted/``, sorted."""
    names = set()
    for learner in _submitted(submissions).iterdir():
        if learner.is_dir() and not learner.name.startswith("."):
            names |= {a.name for a in learner.iterdir()
                      if a.is_dir() and not a.name.startswith(".") and _notebooks_below(a)}
    return sorted(names)


def discover(submissions: Path, name: str) -> dict[str, tuple[Path, list[Path]]]:
    """Learner id -> (their folder of assignment ``name``, its notebooks), sorted by id."""
    learners = {}
    for learner in sorted(_submitted(submissions).iterdir()):
        folder = learner / name
        if learner.name.startswith(".") or not folder.is_dir():
            continue
        notebooks = _notebooks_below(folder)
        if notebooks:
            learners[learner.name] = (folder, notebooks)
    if not learners:
        known = ", ".join(nbgrader_assignments(submissions)) or "none"
        raise GraderError(f"--assignment {name}: no learner handed in a notebook for it under "
                          f"{_submitted(submissions)} (assignments found: {known})")
    return learners


def suites_handed_in(plans: list[Plan]) -> list[str]:
    """The suites any learner handed in (readable or not), in course order."""
    from grader.judge.proxy import known_suites

    found = {suite for p in plans for suite in (*p.notebooks, *p.unreadable)}
    return [s for s in known_suites() if s in found]


def scope_points(points: dict[str, list[dict]], suites: list[str]) -> dict[str, list[dict]]:
    """``points`` (suite -> its tests) for the assignment's suites only."""
    return {suite: tests for suite, tests in points.items() if suite in suites}


def scope_plan(work: Plan, suites: list[str]) -> Plan:
    """``work`` with only the assignment's notebooks to grade; the others become a note."""
    others = [s for s in (*work.notebooks, *work.unreadable) if s not in suites]
    for suite in others:
        problem = work.unreadable.pop(suite, None)
        if problem in work.problems:
            work.problems.remove(problem)
        path = work.notebooks.pop(suite, None)
        name = path.relative_to(work.folder).as_posix() if path else suite
        work.notes = [n for n in work.notes if suite not in n]
        work.notes.append(f"{name}: not part of this assignment ({', '.join(suites)}); "
                          "not graded")
    work.fingerprint = {**work.fingerprint, "assignment": list(suites),
                        "suites": {s: h for s, h in work.fingerprint.get("suites", {}).items()
                                   if s in suites}}
    return work


def scope(learners: dict[str, tuple[Path, list[Path]]], options: Options, *,
          suites: list[str] | None, shard: Shard | None, handed_in_only: bool
          ) -> tuple[list[Plan], list[str] | None]:
    """What this run grades: the plans of the learners in ``shard``'s slice (all without one),
    and the suites the assignment is made of (``suites``, else with ``handed_in_only`` the ones
    anyone handed in, else None: every notebook). Each plan holds the assignment's notebooks
    only (:func:`scope_plan`)."""
    plans = [plan(student_id, folder, files, options)
             for student_id, (folder, files) in learners.items()
             if shard is None or shard.holds(student_id)]
    if suites is None and handed_in_only:
        suites = suites_handed_in(
            [plan(i, folder, files, options) for i, (folder, files) in learners.items()])
    if suites is not None:
        plans = [scope_plan(p, suites) for p in plans]
    return plans, suites
