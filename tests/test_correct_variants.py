"""Correct answers written differently from the solution get full marks.

The hidden tests grade the contract in the docstring, not the solution's way of meeting it: each
catalogue module may list ``CORRECT_VARIANTS`` (exercise, what differs, source), and each one is
graded here (as in tests/test_catalogue.py) and must lose no point.
"""
from __future__ import annotations

import pytest

from grader.results import PASSED
from tests.catalogue import modules
from tests.conftest import one_worker_per_notebook, solution_notebooks


def _variants():
    return [pytest.param(name, exercise, source, id=f"{name}:{exercise}:{description}",
                         marks=one_worker_per_notebook(name))
            for name, module in modules(solution_notebooks())
            for exercise, description, source in getattr(module, "CORRECT_VARIANTS", [])]


@pytest.mark.slow
@pytest.mark.parametrize("suite, exercise, source", _variants())
def test_correct_variant_gets_full_marks(variant_grader, suite, exercise, source):
    report = variant_grader(suite).grade({exercise: source})
    assert report.error is None
    assert report.tests, "the hidden tests selected nothing"
    failing = [(t.name, t.output) for t in report.tests if t.status != PASSED]
    assert not failing, failing
    assert report.score == report.max_score
