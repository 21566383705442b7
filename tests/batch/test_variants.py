"""Variants graded from a warm template report exactly what grading the edited notebook gives.

tests/test_catalogue.py and tests/test_correct_variants.py grade hundreds of edited solution
notebooks through :class:`grader.batch.variants.VariantGrader`; these tests are what lets them stand for
real grading.
"""
from __future__ import annotations

import pytest

from grader.errors import GraderError
from grader.grade import grade_notebook
from grader.notebook.read import read_notebook
from grader.sandbox.parent import ExerciseMissing, Sandbox, Template
from grader.batch.variants import VariantGrader
from tests.catalogue import modules
from tests.conftest import (SOLUTIONS, exercise_cell_index, one_worker_per_notebook,
                            solution_notebooks, variant)


def _summary(report):
    return ([(t.exercise, t.name, t.status, t.score, t.max_score, t.output) for t in report.tests],
            report.error, report.load_errors)


def _entries():
    """For two notebooks (the first and the one that reads assets in its setup), the first wrong
    answer and the first correct variant; each on the worker that grades that notebook's
    catalogue, whose warm template it reuses."""
    chosen = []
    for name, module in modules(solution_notebooks()):
        if name.startswith(("01_", "05_")):
            group = one_worker_per_notebook(name)
            wrong = module.WRONG_ANSWERS[0]
            chosen.append(pytest.param(name, wrong.exercise, wrong.source, id=f"{name}:wrong",
                                       marks=group))
            exercise, _, source = module.CORRECT_VARIANTS[0]
            chosen.append(pytest.param(name, exercise, source, id=f"{name}:correct", marks=group))
    return chosen


@pytest.mark.slow
@pytest.mark.parametrize("suite, exercise, source", _entries())
def test_variant_report_equals_grading_the_edited_notebook(tmp_path, variant_grader, suite,
                                                           exercise, source):
    path = variant(tmp_path, suite, replace={exercise: source})
    whole = grade_notebook(path, skip_execution=True, exercises={exercise})
    forked = variant_grader(suite).grade({exercise: source})
    assert whole.tests
    assert _summary(forked) == _summary(whole)


def test_cells_loaded_after_the_template_see_its_namespace_in_order():
    before = [("cell 0", "import math\nbase = 2"), ("cell 1", "raise RuntimeError('setup broke')")]
    after = [("cell 2", "def power(n):\n    return base ** n"),
             ("cell 3", "table = [power(n) for n in range(4)]\ndef lookup(i):\n    return table[i]"),
             ("cell 4", "1 / 0")]
    template = Template(before)
    try:
        template.start()
        with Sandbox(after, template=template) as forked, Sandbox(before + after) as whole:
            assert forked.call("lookup", (3,), {}, timeout=10) == 8
            assert whole.call("lookup", (3,), {}, timeout=10) == 8
            assert forked.load_errors == whole.load_errors == [
                "cell 1: RuntimeError: setup broke", "cell 4: ZeroDivisionError: division by zero"]
            assert forked.defined == whole.defined
        with Sandbox([("cell 2", "def power(n):\n    return base * n")], template=template) as other:
            assert other.call("power", (3,), {}, timeout=10) == 6
            with pytest.raises(ExerciseMissing):
                other.call("lookup", (3,), {}, timeout=10)
    finally:
        template.close()


@one_worker_per_notebook("01_permutation_invariance")  # its warm template, as above
def test_each_variant_starts_from_the_template_not_from_the_previous_variant(variant_grader):
    grader = variant_grader("01_permutation_invariance")
    module = dict(modules(solution_notebooks()))["01_permutation_invariance"]
    wrong = module.WRONG_ANSWERS[0]
    notebook = read_notebook(SOLUTIONS / "01_permutation_invariance.ipynb")
    ours = notebook.cells[exercise_cell_index(notebook, wrong.exercise)].source
    first = grader.grade({wrong.exercise: wrong.source})
    solution = grader.grade({wrong.exercise: ours})
    again = grader.grade({wrong.exercise: wrong.source})
    assert first.score < first.max_score
    assert solution.tests and solution.score == solution.max_score
    assert _summary(again) == _summary(first)


def test_an_exercise_the_notebook_lacks_is_refused_in_one_line():
    grader = VariantGrader(SOLUTIONS / "02_sinusoidal_encoding.ipynb")
    with pytest.raises(GraderError, match="no exercise cell defines 'rope'"):
        grader.grade({"rope": "def rope(): pass"})
    grader.close()


def test_reached_follows_the_names_a_replaced_cell_defines():
    """An entry is graded on its exercise and on every exercise whose cell reads a name its cell
    defines (transitively); imports do not count, and nothing else is reached."""
    from grader.batch.variants import reached

    notebook = read_notebook(SOLUTIONS / "01_permutation_invariance.ipynb")
    exercises = {"scaled_dot_product_attention", "self_attention", "permutation_matrix",
                 "max_equivariance_error", "symmetry_of", "position_probe_r2"}
    sdpa = "import math\ndef scaled_dot_product_attention(q, k, v, mask=None):\n    return v\n"
    assert reached(notebook, {"scaled_dot_product_attention": sdpa}, exercises) == {
        "scaled_dot_product_attention", "self_attention"}
    helper = "def permutation_matrix(perm):\n    return perm\nself_attention = None\n"
    assert reached(notebook, {"permutation_matrix": helper}, exercises) >= {"permutation_matrix", "self_attention"}
    assert reached(notebook, {"position_probe_r2": "def position_probe_r2(*a):\n    return 0.0\n"},
                   exercises) == {"position_probe_r2"}
