"""Which stored outputs the released notebooks keep: the given cells' (grader.notebook.given)."""
from __future__ import annotations

import base64

import nbformat
import pytest

from grader.errors import GraderError
from grader.notebook.given import (EXERCISE, EXPECTED, EXPECTED_PLACEHOLDER, GIVEN, GIVEN_TAG, LEARNER,
                                   LEARNER_PLACEHOLDER, LEARNER_TAG, classify)
from grader.notebook.read import read_notebook
from grader.notebook.release import release
from tests.conftest import NOTEBOOKS, SOLUTIONS

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-a-figure-").decode()
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def _notebook(cells) -> nbformat.NotebookNode:
    """Cells from ``(source, tags, exercise_kind or None)``; each code cell printed and drew."""
    built = []
    for source, cell_tags, kind in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = list(cell_tags)
        if kind:
            cell.metadata["exercise_kind"] = kind
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="printed\n"),
                        nbformat.v4.new_output("display_data", data={"image/png": PNG,
                                                                     "text/plain": "<Figure>"})]
        built.append(cell)
    return nbformat.v4.new_notebook(cells=built)


def _exercise(name: str, body: str = "return 1") -> str:
    return f"def {name}(x):\n    {BEGIN}\n    {body}\n    {END}\n"


def _kinds(cells) -> list[str]:
    return [decision.kind for decision in classify(_notebook(cells))]


def test_a_cell_that_reads_an_exercise_directly_through_a_helper_or_a_value_is_not_given():
    kinds = _kinds([
        ("import torch\nd_model = 8\ntable = torch.zeros(3)", ["setup"], None),   # given
        (_exercise("encode"), ["exercise"], "implement"),                         # the exercise
        ("check('encode')", [], None),                                            # its checks' verdict
        ("pe = encode(d_model)\nprint(pe)", [], None),                            # reads it
        ("def helper(n):\n    return encode(n) * 2", [], None),                   # a helper of it
        ("print(helper(3))", [], None),                                           # through the helper
        ("print(pe + 1)", [], None),                                              # through a value
        ("print(table, d_model)", [], None),                                      # still given
        ("pe = torch.ones(3)\nprint(pe)", [], None),                              # rebound: given again
        ("print(pe)", [], None),
    ])
    assert kinds == [GIVEN, EXERCISE, LEARNER, EXPECTED, EXPECTED, EXPECTED, EXPECTED, GIVEN, GIVEN,
                     GIVEN]


def test_thinking_exercises_regions_and_changes_in_place_make_the_learners_output():
    kinds = _kinds([
        ("import torch\ngen = torch.Generator().manual_seed(0)\nrows = []\nw = torch.ones(2)", [], None),
        (_exercise("verdict"), ["exercise"], "interpret"),
        ("rows.append(verdict(1))", [], None),                 # changes rows in place
        ("print(rows)", [], None),                             # so rows is the learner's
        ("x = torch.randn(2, generator=gen)\n" + BEGIN + "\nprint(verdict(x))\n" + END, [], None),
        ("print(torch.randn(2, generator=gen))", [], None),    # the region drew from gen
        ("print(w)", [], None),                                # nothing changed w: given
        ("print([verdict for verdict in range(3)])", [], None),  # its own name in a comprehension
        ("print(w)", [LEARNER_TAG], None),                     # the author's override
    ])
    assert kinds == [GIVEN, EXERCISE, LEARNER, LEARNER, LEARNER, LEARNER, GIVEN, GIVEN, LEARNER]


def test_a_function_reads_the_globals_of_its_body_when_it_is_called():
    kinds = _kinds([
        ("import torch\nscale = 2.0\ndef show(x):\n    return x * scale", [], None),
        (_exercise("measure_it"), ["exercise"], "measure"),
        ("print(show(1.0))", [], None),                        # scale is given so far
        ("scale = measure_it(3)", [], None),                   # now scale is the learner's
        ("print(show(1.0))", [], None),                        # and show reads it at the call
    ])
    assert kinds == [GIVEN, EXERCISE, GIVEN, LEARNER, LEARNER]


def test_given_output_overrides_a_false_alarm_but_never_on_an_exercise_or_a_region():
    kinds = _kinds([
        (_exercise("encode"), ["exercise"], "implement"),
        ("x = encode(1)", [GIVEN_TAG], None),
        ("print(x)", [], None),
    ])
    assert kinds == [EXERCISE, GIVEN, GIVEN]
    with pytest.raises(GraderError, match=r"cell 0: 'given-output' on an exercise cell"):
        classify(_notebook([(_exercise("encode"), ["exercise", GIVEN_TAG], "implement")]))
    with pytest.raises(GraderError, match=r"cell 0: 'given-output' on .* a solution region"):
        classify(_notebook([(BEGIN + "\nprint(1)\n" + END, [GIVEN_TAG], None)]))


def test_release_keeps_given_outputs_and_puts_placeholders_where_the_learner_draws(tmp_path):
    source = tmp_path / "solutions"
    source.mkdir()
    notebook = _notebook([
        ("import torch\nbase = 1", ["setup"], None),
        (_exercise("encode"), ["exercise"], "implement"),
        ("print(encode(base))", [], None),
        (_exercise("verdict"), ["exercise"], "interpret"),
        ("print(verdict(base))", [], None),
        ("print(base)", [], None),
    ])
    notebook.cells[0].execution_count = 1
    nbformat.write(notebook, str(source / "90_demo.ipynb"))
    released = read_notebook(release(source=source, dest=tmp_path / "out", repository="")[0]).cells

    def texts(cell):
        return [o.get("text") or o.get("data", {}).get("text/markdown") for o in cell.outputs]

    assert [o.output_type for o in released[0].outputs] == ["stream", "display_data"]
    assert released[0].execution_count is None
    assert texts(released[1]) == texts(released[3]) == []                    # exercise cells
    assert texts(released[2])[0] == EXPECTED_PLACEHOLDER                     # implement only
    assert [o.data["image/png"] for o in released[2].outputs[1:]] == [PNG]   # the figure, no print
    assert texts(released[4]) == [LEARNER_PLACEHOLDER]                       # a thinking answer
    assert texts(released[5])[0] == "printed\n"


@pytest.mark.parametrize("path", sorted(SOLUTIONS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_no_released_output_is_compared_by_nbval_and_none_of_an_exercise_is_kept(path):
    """Grading runs nbval in lax mode, which compares a cell's stored outputs only where the cell
    asks for it (``# NBVAL_CHECK_OUTPUT``, tag ``nbval-check-output``): no released cell asks.
    And a released cell keeps outputs only where the rule says given, or a placeholder."""
    solution = read_notebook(path)
    decisions = [d for c, d in zip(solution.cells, classify(solution, str(path)))
                 if "instructor" not in c.metadata.get("tags", [])]
    released = [c for c in read_notebook(NOTEBOOKS / path.name).cells
                if "colab" not in c.metadata.get("tags", [])]
    assert len(released) == len(decisions)
    for index, (cell, decision) in enumerate(zip(released, decisions)):
        if cell.cell_type != "code":
            continue
        assert "NBVAL_CHECK_OUTPUT" not in cell.source and "nbval-check-output" not in cell.metadata.get("tags", [])
        if decision.kind != GIVEN and cell.outputs:
            first = cell.outputs[0].get("data", {}).get("text/markdown")
            assert first in (EXPECTED_PLACEHOLDER, LEARNER_PLACEHOLDER), (path.name, index)
            assert decision.kind == EXPECTED or len(cell.outputs) == 1, (path.name, index)


def test_a_given_cell_left_unrun_with_its_reference_output_executes_cleanly(tmp_path):
    """A released notebook keeps the given cells' outputs without execution counts; graded as
    handed in (a learner who never ran the cell), the cell runs and passes: nbval's "Unrun
    reference cell has outputs" is not a learner's failure. A cell that raises still fails."""
    from grader.notebook.execute import execute

    notebook = nbformat.v4.new_notebook()
    given = nbformat.v4.new_code_cell("print(sum(range(4)))")
    given.outputs = [nbformat.v4.new_output("stream", name="stdout", text="6\n")]
    broken = nbformat.v4.new_code_cell("raise ValueError('the learner is told this')")
    broken.outputs = [nbformat.v4.new_output("stream", name="stdout", text="stored\n")]
    notebook.cells = [given, broken]
    assert given.execution_count is None and broken.execution_count is None
    path = tmp_path / "released.ipynb"
    nbformat.write(notebook, str(path))
    result = execute(path, cell_timeout=60, budget=120)
    assert result.error is None and result.passed == 1, result
    assert [f.message for f in result.failures] == ["ValueError: the learner is told this"], result
