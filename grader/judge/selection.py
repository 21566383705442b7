"""Choosing the course's notebooks by number or name (``--notebooks 01 3 05_context_extension``).

Below both :mod:`grader.batch` (an assignment's notebooks) and :mod:`grader.export` (the
Gradescope zip, the Classroom workflow, the starter repository), which all read the same choice.
"""
from __future__ import annotations

from grader.errors import GraderError
from grader.judge.proxy import known_suites


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
