"""Notebook 06's forward kernel is a ladder: a learner who stops at a step keeps the steps below."""
from __future__ import annotations

import copy

import nbformat
import pytest

from grader.grade import grade_notebook
from grader.notebook.read import read_notebook
from grader.results import NOT_IMPLEMENTED, PASSED
from tests.conftest import NOTEBOOKS, SOLUTIONS, exercise_cell_index

NAME = "06_gpu_rope_kernel"
LADDER = ["rope_rows_triton", "rope_heads_triton", "rope_interleaved_triton", "rope_forward_triton",
          "rope_backward_triton", "TritonRoPE"]
EXERCISES = LADDER[:3] + ["sector_traffic"] + LADDER[3:]
"""The notebook's exercises in order: the ladder, with the measurement of step 3's memory traffic."""


@pytest.mark.slow
def test_a_learner_who_stops_after_step_2_keeps_steps_1_and_2(tmp_path):
    """The released notebook with only steps 1 and 2 solved: full marks there, 'not implemented' above."""
    solution = read_notebook(SOLUTIONS / f"{NAME}.ipynb")
    notebook = copy.deepcopy(read_notebook(NOTEBOOKS / f"{NAME}.ipynb"))
    for exercise in LADDER[:2]:
        notebook.cells[exercise_cell_index(notebook, exercise)].source = \
            solution.cells[exercise_cell_index(solution, exercise)].source
    path = tmp_path / f"{NAME}.ipynb"
    nbformat.write(notebook, str(path))
    report = grade_notebook(path, skip_execution=True)
    assert report.error is None and not report.load_errors
    groups = report.exercises()
    assert list(groups) == EXERCISES
    for exercise in LADDER[:2]:
        assert all(t.status == PASSED for t in groups[exercise]), \
            [(t.name, t.status, t.output) for t in groups[exercise] if t.status != PASSED]
    for exercise in EXERCISES[2:]:
        assert {t.status for t in groups[exercise]} == {NOT_IMPLEMENTED}, exercise
    earned = sum(t.score for exercise in LADDER[:2] for t in groups[exercise])
    assert report.score == earned > 0
