"""Every catalogued wrong answer loses points under the hidden tests, with the right feedback."""
from __future__ import annotations

import pytest

from grader.grade import grade_notebook
from grader.results import PASSED
from tests.catalogue import modules
from tests.conftest import solution_notebooks, variant


def _catalogue():
    return [pytest.param(name, wrong, id=f"{name}:{wrong.exercise}:{wrong.mistake}")
            for name, module in modules(solution_notebooks()) for wrong in module.WRONG_ANSWERS]


@pytest.mark.slow
@pytest.mark.parametrize("suite, wrong", _catalogue())
def test_wrong_answer_is_rejected(tmp_path, suite, wrong):
    path = variant(tmp_path, suite, replace={wrong.exercise: wrong.source})
    report = grade_notebook(path, skip_execution=True, exercises={wrong.exercise})
    assert report.error is None
    assert report.tests, "the hidden tests selected nothing"
    assert {t.exercise for t in report.tests} == {wrong.exercise}
    assert report.score < report.max_score, f"'{wrong.mistake}' got full marks"
    if wrong.feedback:
        feedback = " ".join(t.output for t in report.tests if t.status != PASSED)
        assert wrong.feedback in feedback, f"feedback does not name the mistake: {feedback[:600]}"
