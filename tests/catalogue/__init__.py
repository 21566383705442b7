"""Catalogues of plausible wrong answers, one module per notebook (same name as the notebook).

Each module defines ``WRONG_ANSWERS``, a list of :class:`WrongAnswer`. ``tests/test_catalogue.py``
grades every entry and asserts that the hidden tests reject it, and that a public check of its
exercise does unless :data:`tests.catalogue.public_blind.PUBLIC_BLIND` says why the public checks'
inputs cannot reveal it. A module may also define
``CORRECT_VARIANTS``, ``(exercise, what differs, source)`` triples that must get full marks
(``tests/test_correct_variants.py``), and ``COSTS_ONCE = True`` to have ``tests/test_catalogue.py``
hold every entry to DESIGN's "one mistake costs once": an entry fails at most ``costs`` hidden tests.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


def modules(notebooks) -> list[tuple[str, ModuleType]]:
    """``(notebook name, catalogue module)`` for each of ``notebooks`` that has a catalogue."""
    found = []
    for notebook in notebooks:
        try:
            found.append((notebook.stem, importlib.import_module(f"tests.catalogue.{notebook.stem}")))
        except ModuleNotFoundError:
            continue
    return found


@dataclass(frozen=True)
class WrongAnswer:
    """One plausible mistake in one exercise."""

    exercise: str
    """The exercise's contract name, e.g. ``"scaled_dot_product_attention"``."""
    mistake: str
    """What is wrong, in a few words (used as the test id)."""
    source: str
    """Python source that replaces the exercise cell of the solution notebook."""
    feedback: str | None = None
    """A substring that the grader's feedback must contain (it names the mistake), if any."""
    min_lost: float = 0.0
    """The least share of its exercise's points the entry must lose. A shallow answer to a thinking
    exercise (a constant, the notebook's own recipe, a grid the docstring publishes, the public case
    hard-coded) sets 0.5: DESIGN's "each loses at least half of the exercise's points"."""
    costs: int = 1
    """How many hidden tests of its exercise the mistake may fail (checked where the catalogue
    sets ``COSTS_ONCE``): one test owns each property, so one unless the entry is several
    mistakes at once (a comment beside the entry says which tests own them). Public checks are
    not counted: each fails on every mistake its own inputs reveal."""
    core: bool = False
    """A core mistake (DESIGN.md "A core mistake costs at least half"): it breaks the exercise's
    defining property, so ``tests/test_catalogue.py`` holds it to losing at least half of the
    exercise's points and to failing its public check, which names it (``feedback``)."""
    shallow: bool = False
    """A shallow answer of a thinking exercise (a constant, a read of a black box's name, keywords,
    ``repr`` or attributes, an import of the grader's fixtures): ``tests/test_catalogue.py`` holds it
    to at most half the exercise's points, and to no more than the exercise's constant answers
    (its entries whose source returns one literal) score."""


def solution_cells(suite: str):
    """``(exercise_source, mutant)`` for the solution notebook ``suite``: ``exercise_source(name)`` is
    the source of the exercise cell that defines ``name``; ``mutant(exercise, (old, new), ...)`` is
    that source with each ``old`` replaced by ``new``, each found exactly once (else ValueError: the
    catalogue is stale)."""
    import functools
    from pathlib import Path

    import nbformat

    from grader.notebook.read import EXERCISE_TAG, tags, top_level_names

    solution = Path(__file__).resolve().parents[2] / "solutions" / f"{suite}.ipynb"

    @functools.lru_cache(maxsize=None)
    def exercise_source(name: str) -> str:
        notebook = nbformat.read(str(solution), as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code" and EXERCISE_TAG in tags(cell) and name in top_level_names(cell.source):
                return cell.source
        raise LookupError(f"{solution.name}: no exercise cell defines {name}")

    def mutant(exercise: str, *replacements: tuple[str, str]) -> str:
        source = exercise_source(exercise)
        for old, new in replacements:
            if source.count(old) != 1:
                raise ValueError(f"catalogue {suite[:2]} ({exercise}): {old!r} occurs {source.count(old)} "
                                 "times in the solution cell, expected once; update the catalogue")
            source = source.replace(old, new)
        return source

    return exercise_source, mutant
