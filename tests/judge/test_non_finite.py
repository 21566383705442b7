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


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_the_comparison_of_a_learners_number_names_a_non_finite_one(value):
    """`abs(nan - want) > tol` is False, so a check written so passes NaN; `within` fails it, named."""
    import numpy as np
    import torch

    from grader.judge.proxy import expect_close, expect_finite, within

    assert not abs(value - 0.5) <= 0.05  # (what a hand-written check would have to get right)
    for answer in (value, torch.tensor(value), np.float64(value)):
        with pytest.raises(AssertionError, match="not a finite number"):
            within(answer, 0.5, atol=0.05, what="R^2")
    with pytest.raises(AssertionError, match="not a finite number"):
        expect_finite(torch.tensor([0.1, value]), what="scores")
    with pytest.raises(AssertionError, match=r"contains (nan|inf|-inf) at index \(1,\)"):
        expect_close(torch.tensor([0.1, value]), torch.tensor([0.1, 0.2]), what="scores")
    assert within(0.52, 0.5, atol=0.05) and not within(0.6, 0.5, atol=0.05)
    assert within(1.07, 1.0, rtol=0.08) and not within(1.09, 1.0, rtol=0.08)
