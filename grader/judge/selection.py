"""Choosing the course's notebooks by number or name (``--notebooks 01 3 05_context_extension``),
and checking the exercises chosen within them (``--exercise``, :func:`refuse_unknown_exercises`).

Below both :mod:`grader.batch` (an assignment's notebooks) and :mod:`grader.export` (the
Gradescope zip, the Classroom workflow, the starter repository), which all read the same choice.
"""
from __future__ import annotations

import difflib

from grader.errors import GraderError
from grader.judge.proxy import exercise_order, known_suites, suite_exercises


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


def refuse_unknown_exercises(exercises: set[str], suites: list[str]) -> None:
    """Raise GraderError, in one line, where a name of ``exercises`` (``--exercise``) is no
    exercise of the notebooks graded (``suites``, those that have hidden tests); the line lists
    their exercises and, where one is close (:func:`difflib.get_close_matches`), says which."""
    offered = list(dict.fromkeys(
        name for suite in dict.fromkeys(suites)
        for name in exercise_order(suite) or sorted(suite_exercises(suite))))
    unknown = sorted(exercises - set(offered))
    if not unknown or not offered:
        return
    name = unknown[0]
    close = difflib.get_close_matches(name, offered, n=1)
    elsewhere = [suite for suite in known_suites() if name in suite_exercises(suite)]
    hint = (f" (did you mean {close[0]!r}?)" if close
            else f" (it is one of {elsewhere[0]}'s)" if elsewhere else "")
    one = len(set(suites)) == 1
    where = suites[0] if one else f"the {len(set(suites))} notebooks given"
    raise GraderError(f"--exercise {name!r} is not an exercise of {where}{hint}; "
                      f"{'its' if one else 'their'} exercises: {', '.join(offered)}")
