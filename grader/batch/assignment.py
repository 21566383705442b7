"""Which notebooks an assignment holds, so that a class's gradebook is out of its points.

An assignment is a set of the course's notebooks: named on the command line (``batch
--notebooks 01 02``), or, in nbgrader's layout (found by :mod:`grader.batch.roster`), the
notebooks its learners handed in, each assignment with a gradebook of its own
(``OUT/ASSIGNMENT/``). :func:`scope` (the class's scoping step), :func:`scope_points` and
:func:`scope_plan` narrow what :mod:`grader.batch.grading` grades and counts to them; nothing else
changes.
"""
from __future__ import annotations

from pathlib import Path

from grader.batch.roster import Options, Plan, plan
from grader.batch.shards import Shard


def select(notebooks: list[str]) -> list[str]:
    """The suites named by ``notebooks`` (``01``, ``1`` or a full name), in course order."""
    from grader.judge.selection import select_suites

    return select_suites(notebooks)


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
