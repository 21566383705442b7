"""Every catalogued wrong answer loses points under the hidden tests, with the right feedback.

Each entry is graded as a copy of the solution notebook with its exercise cell replaced, through
:class:`grader.variants.VariantGrader`: the learner's side runs in a sandbox of its own, forked from
a template that loaded the notebook's setup once (tests/test_variants.py proves the reports equal
those of grading the edited notebook whole). Where the catalogue sets ``COSTS_ONCE``, an entry may
fail no more hidden tests than its ``costs`` (one by default): one mistake costs once. An entry with
``min_lost`` (a shallow answer to a thinking exercise) must lose at least that share of the points.
"""
from __future__ import annotations

import pytest

from grader.results import PASSED
from tests.catalogue import modules
from tests.conftest import one_worker_per_notebook, solution_notebooks


def _catalogue():
    return [pytest.param(name, wrong, getattr(module, "COSTS_ONCE", False),
                         id=f"{name}:{wrong.exercise}:{wrong.mistake}", marks=one_worker_per_notebook(name))
            for name, module in modules(solution_notebooks()) for wrong in module.WRONG_ANSWERS]


@pytest.mark.slow
@pytest.mark.parametrize("suite, wrong, costs_once", _catalogue())
def test_wrong_answer_is_rejected(variant_grader, suite, wrong, costs_once):
    report = variant_grader(suite).grade({wrong.exercise: wrong.source})
    assert report.error is None
    assert report.tests, "the hidden tests selected nothing"
    assert {t.exercise for t in report.tests} == {wrong.exercise}
    assert report.score < report.max_score, f"'{wrong.mistake}' got full marks"
    lost = (report.max_score - report.score) / report.max_score
    assert lost >= wrong.min_lost, (
        f"'{wrong.mistake}' loses {lost:.0%} of the points, less than the {wrong.min_lost:.0%} a shallow answer must")
    if wrong.feedback:
        feedback = " ".join(t.output for t in report.tests if t.status != PASSED)
        assert wrong.feedback in feedback, f"feedback does not name the mistake: {feedback[:600]}"
    if costs_once:  # one mistake costs once (DESIGN.md): the test that owns the property fails, no other
        failed = [t.name for t in report.tests if t.status != PASSED]
        assert len(failed) <= wrong.costs, (
            f"'{wrong.mistake}' fails {len(failed)} tests (at most {wrong.costs}): {', '.join(failed)}")
