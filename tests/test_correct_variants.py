"""Correct answers written differently from the solution get full marks.

The hidden tests grade the contract in the docstring, not the solution's way of meeting it: each
catalogue module may list ``CORRECT_VARIANTS`` (exercise, what differs, source), and each one is
graded here and must lose no point.
"""
from __future__ import annotations

import pytest

from grader.grade import grade_notebook
from grader.results import PASSED
from tests.catalogue import modules
from tests.conftest import solution_notebooks, variant


def _variants():
    return [pytest.param(name, exercise, source, id=f"{name}:{exercise}:{description}")
            for name, module in modules(solution_notebooks())
            for exercise, description, source in getattr(module, "CORRECT_VARIANTS", [])]


@pytest.mark.slow
@pytest.mark.parametrize("suite, exercise, source", _variants())
def test_correct_variant_gets_full_marks(tmp_path, suite, exercise, source):
    path = variant(tmp_path, suite, replace={exercise: source})
    report = grade_notebook(path, skip_execution=True, exercises={exercise})
    assert report.error is None
    assert report.tests, "the hidden tests selected nothing"
    failing = [(t.name, t.output) for t in report.tests if t.status != PASSED]
    assert not failing, failing
    assert report.score == report.max_score
