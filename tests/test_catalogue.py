"""Every catalogued wrong answer loses points under the hidden tests, with the right feedback.

Each entry is graded as a copy of the solution notebook with its exercise cell replaced, through
:class:`grader.batch.variants.VariantGrader`: the learner's side runs in a sandbox of its own, forked from
a template that loaded the notebook's setup once (tests/batch/test_variants.py proves the reports equal
those of grading the edited notebook whole). It is graded against the whole notebook's suite: the
tests of every exercise whose results the replaced cell can change (its own, and those of every
exercise whose cell reads a name it defines: :func:`grader.batch.variants.reached`); every other test
runs the solution's very code and keeps the solution's full marks. Where the catalogue sets
``COSTS_ONCE``, an entry may fail no more hidden tests than its ``costs`` (one by default), in its
own exercise and in every other: one mistake costs once, across exercises too (an exercise that
calls an earlier one is judged with the trusted version of the earlier one).

Every entry fails a public check of its exercise, unless tests/catalogue/public_blind.py says why
the public checks' inputs cannot reveal it (and then it passes them all); a ``core`` entry (DESIGN.md: a
mistake that breaks the exercise's defining property) loses at least half of its exercise's
points, and the failing public check names it (the entry's ``feedback``).

A ``shallow`` entry (a constant verdict, a read of a black box's attributes, an import of the
grader's fixtures) scores at most half its exercise's points, and no more than the exercise's
constant answers (the entries whose function only returns a literal) score.
An entry with ``min_lost`` (a shallow answer to a thinking exercise) must lose at least that
share of its exercise's points.
"""
from __future__ import annotations

import ast
import functools

import pytest

from grader.results import PASSED
from tests.catalogue import modules
from tests.catalogue.public_blind import PUBLIC_BLIND
from tests.conftest import exercise_score, one_worker_per_notebook, solution_notebooks


@functools.cache
def _module(suite: str):
    """The catalogue module of ``suite`` (looked up once per session)."""
    (_, module), = [m for m in modules(solution_notebooks()) if m[0] == suite]
    return module


def _catalogue():
    return [pytest.param(name, wrong, getattr(module, "COSTS_ONCE", False),
                         id=f"{name}:{wrong.exercise}:{wrong.mistake}", marks=one_worker_per_notebook(name))
            for name, module in modules(solution_notebooks()) for wrong in module.WRONG_ANSWERS]


def is_constant(wrong) -> bool:
    """Whether the entry's exercise function does nothing but return one literal."""
    for node in ast.parse(wrong.source).body:
        if isinstance(node, ast.FunctionDef) and node.name == wrong.exercise:
            body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
            return (len(body) == 1 and isinstance(body[0], ast.Return)
                    and isinstance(body[0].value, ast.Constant))
    return False


_CONSTANT_SCORES: dict[tuple[str, str], float] = {}


def constant_score(variant_grader, suite: str, exercise: str) -> float:
    """The best score of the catalogue's constant answers to ``exercise`` (graded once per session)."""
    key = (suite, exercise)
    if key not in _CONSTANT_SCORES:
        module = _module(suite)
        constants = [w for w in module.WRONG_ANSWERS if w.exercise == exercise and is_constant(w)]
        assert constants, f"{suite}: {exercise} has shallow entries but no constant answer to compare them with"
        grader = variant_grader(suite)
        _CONSTANT_SCORES[key] = max(exercise_score(grader.grade({w.exercise: w.source}), exercise)[0]
                                    for w in constants)
    return _CONSTANT_SCORES[key]


def _within_exercise_only(suite: str) -> bool:
    """Whether the catalogue of ``suite`` holds its entries to their costs within their own
    exercise only (``STEPS_SHARE_CODE``: its later exercises run the earlier ones' own code by
    design, and no trusted version can stand in for it across the sandbox boundary)."""
    module = _module(suite)
    return getattr(module, "STEPS_SHARE_CODE", False)


@pytest.mark.slow
@pytest.mark.parametrize("suite, wrong, costs_once", _catalogue())
def test_wrong_answer_is_rejected(variant_grader, suite, wrong, costs_once):
    grader = variant_grader(suite)
    report = grader.grade({wrong.exercise: wrong.source}, exercises=grader.reached({wrong.exercise: wrong.source}))
    assert report.error is None
    assert report.tests, "the hidden tests selected nothing"
    assert wrong.exercise in {t.exercise for t in report.tests}
    score, max_score = exercise_score(report, wrong.exercise)
    assert score < max_score, f"'{wrong.mistake}' got full marks"
    if wrong.feedback:
        feedback = " ".join(t.output for t in report.tests if t.status != PASSED)
        assert wrong.feedback in feedback, f"feedback does not name the mistake: {feedback[:600]}"
    public = [t for t in report.tests if t.exercise == wrong.exercise and t.public]
    blind = PUBLIC_BLIND.get(suite, {}).get((wrong.exercise, wrong.mistake))
    if blind is None:  # the public check fails on every mistake its inputs can reveal
        assert any(t.status != PASSED for t in public), (
            f"'{wrong.mistake}' passes the public checks of {wrong.exercise} (if their inputs cannot "
            "reveal it, say why in tests/catalogue/public_blind.py)")
    else:  # a mistake said to be invisible to the public inputs is invisible to them
        assert all(t.status == PASSED for t in public), (
            f"'{wrong.mistake}' fails a public check, yet tests/catalogue/public_blind.py says: {blind}")
    if wrong.core:  # DESIGN.md: a core mistake costs at least half, and its public check names it
        assert score <= max_score / 2, f"core mistake '{wrong.mistake}' scores {score:g} of {max_score:g}"
        assert blind is None and wrong.feedback, "a core mistake's public check names it"
        named = " ".join(t.output for t in public if t.status != PASSED)
        assert wrong.feedback in named, f"the public check does not name '{wrong.mistake}': {named[:600]}"
    if wrong.min_lost:  # a shallow answer loses at least this share of the exercise's points
        lost = 1 - score / max_score
        assert lost >= wrong.min_lost, (
            f"'{wrong.mistake}' loses {lost:.0%} of the points, less than {wrong.min_lost:.0%}")
    if costs_once:  # one mistake costs once (DESIGN.md): the test that owns the property fails, no other
        # hidden test (a public check fails too where its inputs reveal the mistake, asserted above)
        own_only = _within_exercise_only(suite)
        failed = [f"{t.exercise}: {t.name}" for t in report.tests
                  if t.status != PASSED and not t.public and (t.exercise == wrong.exercise or not own_only)]
        assert len(failed) <= wrong.costs, (
            f"'{wrong.mistake}' fails {len(failed)} tests (at most {wrong.costs}): {', '.join(failed)}")
        others = sorted({t.exercise for t in report.tests if t.status != PASSED} - {wrong.exercise})
        assert own_only or not others, (
            f"'{wrong.mistake}' costs points in other exercises too: {', '.join(others)}")
    if wrong.shallow:
        assert score <= max_score / 2, f"shallow answer '{wrong.mistake}' scores {score:g} of {max_score:g}"
        if not is_constant(wrong):
            constant = constant_score(variant_grader, suite, wrong.exercise)
            assert score <= constant, (f"shallow answer '{wrong.mistake}' scores {score:g}, more than a "
                                       f"constant answer ({constant:g})")


@pytest.mark.slow
@one_worker_per_notebook("01_permutation_invariance")
def test_a_mistake_costs_once_across_the_notebook(variant_grader):
    """Missing 1/sqrt(d_k) costs in scaled_dot_product_attention only, graded against the whole suite
    (self_attention calls it, and is judged with the trusted version); self_attention's feedback
    names it as the likely cause."""
    module = _module("01_permutation_invariance")
    wrong = next(w for w in module.WRONG_ANSWERS if w.mistake == "missing 1/sqrt(d_k)")
    grader = variant_grader("01_permutation_invariance")
    report = grader.grade({wrong.exercise: wrong.source}, exercises=grader.suite_exercises)
    assert {t.exercise for t in report.tests} == grader.suite_exercises
    lost = {t.exercise for t in report.tests if t.status != PASSED}
    assert lost == {"scaled_dot_product_attention"}
    assert report.max_score - report.score == exercise_score(report, wrong.exercise)[1] - exercise_score(
        report, wrong.exercise)[0] > 0
    notes = [t.output for t in report.tests if t.exercise == "self_attention"]
    assert any("your `scaled_dot_product_attention` is the likely cause" in note for note in notes), notes


def test_every_public_blind_mark_names_a_catalogued_entry():
    """tests/catalogue/public_blind.py marks only entries that exist, each with a reason."""
    entries = {(name, wrong.exercise, wrong.mistake)
               for name, module in modules(solution_notebooks()) for wrong in module.WRONG_ANSWERS}
    marks = [(suite, exercise, mistake, reason) for suite, table in PUBLIC_BLIND.items()
             for (exercise, mistake), reason in table.items()]
    assert marks
    assert not [m[:3] for m in marks if m[:3] not in entries]
    assert all(isinstance(m[3], str) and len(m[3]) > 20 for m in marks)


def test_the_core_mistakes_of_attention_are_marked():
    """DESIGN's examples of a core mistake are catalogued as such: the missing 1/sqrt(d_k), the
    softmax over the query axis, and q scaled in place."""
    core = {w.mistake for w in _module("01_permutation_invariance").WRONG_ANSWERS
            if w.exercise == "scaled_dot_product_attention" and w.core}
    assert core == {"missing 1/sqrt(d_k)", "softmax over the query axis",
                    "scales q in place (q /= sqrt(d_k))"}


def _core(suite: str, exercise: str) -> set[str]:
    return {w.mistake for w in _module(suite).WRONG_ANSWERS if w.exercise == exercise and w.core}


def test_the_core_mistakes_of_causal_self_attention_are_marked():
    """A mask that leaks the future, and attention without its scale or over the wrong axis,
    break self_attention's defining property: each is catalogued as a core mistake."""
    core = _core("01_permutation_invariance", "self_attention")
    assert {"mask keeps the future", "mask leaks the next token (tril(1))",
            "mask applied after the softmax (attention written inline)",
            "missing 1/sqrt(d_k) (attention written inline)",
            "softmax over the query axis (attention written inline)"} <= core


def test_the_core_mistakes_of_the_sinusoidal_encoding_are_marked():
    """DESIGN's 'wrong frequency exponent' and the swapped or re-laid-out sine and cosine break
    the sinusoidal table's definition (Vaswani et al. 2017, section 3.5): each is a core mistake."""
    core = _core("02_sinusoidal_encoding", "sinusoidal_encoding")
    assert {"sin and cos swapped", "half-split instead of interleaved", "exponent i/d",
            "exponent 2i/(d-2)", "frequencies base^(+2i/d) (the sign of the exponent)"} <= core
