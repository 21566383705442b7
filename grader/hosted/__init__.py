"""Exports of the grading pipeline to hosts: each module builds what one host runs.

:mod:`grader.hosted.gradescope` builds the Gradescope autograder zip and
:mod:`grader.hosted.gradescope_run` is what that zip runs for each submission;
:mod:`grader.hosted.classroom` writes the GitHub Classroom grading workflow;
:mod:`grader.hosted.class_workflow` writes what grades a whole class in shards on GitHub Actions,
Slurm or Kubernetes (``batch --shard`` and ``merge``). They import
:mod:`grader.grade` and :mod:`grader.report`; nothing in the pipeline imports them.
"""
from __future__ import annotations

from pathlib import Path

from grader.errors import GraderError
from grader.judge import known_suites

SCHEMA = Path(__file__).resolve().parent / "gradescope_results.schema.json"
"""JSON Schema of Gradescope's ``results.json``, written from its published specification."""


def select_suites(notebooks: list[str] | None) -> list[str]:
    """The suites named by ``notebooks`` (``"01"``, ``"1"`` or ``"01_permutation_invariance"``),
    in course order; every suite when ``notebooks`` is empty or None."""
    suites = known_suites()
    if not notebooks:
        return suites
    chosen = set()
    for token in notebooks:
        matches = [s for s in suites if s == token or s.split("_", 1)[0] == token
                   or (token.isdigit() and s.split("_", 1)[0].isdigit()
                       and int(s.split("_", 1)[0]) == int(token))]
        if len(matches) != 1:
            raise GraderError(f"--notebooks {token}: no single notebook of the course matches; "
                              f"use a number or a name (one of: {', '.join(suites)})")
        chosen.add(matches[0])
    return [s for s in suites if s in chosen]
