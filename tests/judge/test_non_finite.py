"""A non-finite answer never passes: NaN or an infinity answered to a `measure` or `interpret`
exercise loses every point of that exercise.

Each answer is graded as a catalogue entry is (tests/test_catalogue.py): the solution notebook with
the exercise's cell kept and the exercise's function redefined at its end to return the value,
graded by :class:`grader.batch.variants.VariantGrader` against the exercise's hidden tests.
"""
from __future__ import annotations

import pytest

from grader.notebook.read import read_notebook
from grader.results import PASSED
from tests.conftest import (SOLUTIONS, exercise_cell_index, exercise_score, one_worker_per_notebook,
                            solution_notebooks)

KINDS = ("measure", "interpret")
VALUES = {"nan": 'float("nan")', "inf": 'float("inf")', "-inf": 'float("-inf")'}


def _exercises() -> list[tuple[str, str]]:
    """``(suite, exercise)`` of every `measure` and `interpret` exercise of the course."""
    found = []
    for path in solution_notebooks():
        for cell in read_notebook(path).cells:
            kind = cell.metadata.get("exercise_kind")
            if cell.cell_type == "code" and kind in KINDS:
                found.append((path.stem, cell.metadata.get("exercise_id") or _defined(cell.source)))
    return found


def _defined(source: str) -> str:
    import ast

    return next(node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)
                and not node.name.startswith("_"))


def test_the_course_has_measure_and_interpret_exercises():
    found = _exercises()
    assert {"position_probe_r2", "held_out_accuracy", "breakdown_noise", "unchanged_outputs"} \
        <= {exercise for _, exercise in found}, found


@pytest.mark.slow
@pytest.mark.parametrize("suite, exercise, value", [
    pytest.param(suite, exercise, value, id=f"{exercise}:{value}",
                 marks=one_worker_per_notebook(suite))
    for suite, exercise in _exercises() for value in VALUES])
def test_a_non_finite_answer_loses_the_exercises_points(variant_grader, suite, exercise, value):
    notebook = read_notebook(SOLUTIONS / f"{suite}.ipynb")
    source = notebook.cells[exercise_cell_index(notebook, exercise)].source
    source += f"\n\n\ndef {exercise}(*args, **kwargs):\n    return {VALUES[value]}\n"
    grader = variant_grader(suite)
    report = grader.grade({exercise: source}, exercises={exercise})
    assert report.error is None
    score, max_score = exercise_score(report, exercise)
    assert max_score > 0
    passed = [t.name for t in report.tests if t.exercise == exercise and t.status == PASSED]
    assert score == 0 and not passed, f"{exercise} returning {value} passes {passed}"
