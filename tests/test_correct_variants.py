"""Correct answers written differently from the solution get full marks.

The hidden tests grade the contract in the docstring, not the solution's way of meeting it: each
catalogue module may list ``CORRECT_VARIANTS`` (exercise, what differs, source), and each one is
graded here and must lose no point.
"""
from __future__ import annotations

import importlib

import pytest

from grader.grade import grade_notebook
from grader.results import PASSED
from tests.conftest import solution_notebooks, variant


def _variants():
    entries = []
    for notebook in solution_notebooks():
        try:
            module = importlib.import_module(f"tests.catalogue.{notebook.stem}")
        except ModuleNotFoundError:
            continue
        for exercise, description, source in getattr(module, "CORRECT_VARIANTS", []):
            entries.append(pytest.param(notebook.stem, exercise, source,
                                        id=f"{notebook.stem}:{exercise}:{description}"))
    return entries


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
