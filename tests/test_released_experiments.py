"""No released cell runs the experiment that answers a thinking exercise (DESIGN.md, "The learner runs
the experiment").

For every ``measure``, ``interpret`` and ``diagnose`` exercise of a notebook, :data:`QUANTITY_HELPERS`
names the calls that compute the exercise's quantity (its answer, or the same quantity at other
parameters): the helper functions the solution's experiment defines or uses, and the idioms that are
that experiment. No code cell of the released notebook may call one of them; the solution's own
experiment does, inside a solution region that release turns into the learner's empty cell. Calls
inside a function's body count only where the function is called (a definition hands over a tool,
a call runs it). Each notebook's table must name every thinking exercise of the notebook, so an
exercise added without a row fails here.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import nbformat
import pytest

from grader.notebook.read import EXERCISE_TAG, tags, top_level_names
from tests.conftest import NOTEBOOKS, SOLUTIONS

THINKING_KINDS = ("measure", "interpret", "diagnose")


@dataclass(frozen=True)
class Call:
    """A call that computes an exercise's quantity: ``name(...)`` or ``obj.name(...)``, where given
    only with each keyword of ``keywords`` set to that literal, or with a subscripted first argument
    (``x[perm]``, ``x[:, dims]``: a shuffled input or a slice of the features)."""

    name: str
    keywords: tuple = ()
    subscripted_argument: bool = False

    def matches(self, node: ast.Call) -> bool:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name != self.name:
            return False
        given = {k.arg: k.value for k in node.keywords}
        for key, value in self.keywords:
            if not (isinstance(given.get(key), ast.Constant) and given[key].value == value):
                return False
        return not self.subscripted_argument or bool(node.args) and isinstance(node.args[0], ast.Subscript)

    def __str__(self):
        keywords = "".join(f", {k}={v!r}" for k, v in self.keywords)
        return f"{self.name}({'x[...]' if self.subscripted_argument else '...'}{keywords})"


QUANTITY_HELPERS: dict[str, dict[str, tuple[Call, ...]]] = {
    "01_permutation_invariance": {
        # a causal layer run on a shuffled input: comparing it with the unshuffled run is the answer
        "unchanged_outputs": (Call("self_attention", (("causal", True),), subscripted_argument=True),),
        # a verdict from outputs compared within a tolerance (the released cells print errors of one
        # or 20 permutations of fixed functions; the hidden functions need more than that)
        "symmetry_of": (Call("allclose"), Call("isclose")),
        # a fitted read-out of the position
        "position_probe_r2": (Call("lstsq"), Call("pinv"), Call("LinearRegression"), Call("Ridge")),
    },
    "02_sinusoidal_encoding": {
        # decoding a code under noise, in the solution's own comparison of codes
        "breakdown_noise": (Call("how_far_off"),),
        # decoding with the columns of one band of the encoding
        "best_band": (Call("how_far_off"), Call("cdist", subscripted_argument=True)),
    },
    "03_addition_vs_concatenation": {
        # a probe held out on values of the other factor
        "held_out_accuracy": (Call("isin"),),
        # a read-out of the first coordinates (held_out_accuracy on a slice of the features)
        "first_coordinates_carry": (Call("held_out_accuracy", subscripted_argument=True), Call("first8_accuracy")),
        # the trained models' logits with a term removed or alone
        "pattern_term": (Call("reversal_accuracy"),),
        # the notebook's protocols run on inputs of one's own
        "is_fair_protocol": (Call("random_half"), Call("standardised_with_all_rows"), Call("fitted_on_all_rows")),
    },
    "07_rope_in_practice": {
        # each pair's logit profile over the distances, read on the planted heads
        "proportional_loses_position": (Call("pair_logit_profile"),),
    },
}


def _calls(source: str):
    """Every call of ``source`` outside function bodies (lambdas count: they are run where they stand)."""
    tree = ast.parse(source)
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(child, ast.Call):
                yield child
            stack.append(child)


def _thinking_exercises(notebook) -> set[str]:
    return {name for cell in notebook.cells if cell.cell_type == "code" and EXERCISE_TAG in tags(cell)
            and cell.metadata.get("exercise_kind") in THINKING_KINDS
            for name in top_level_names(cell.source) if not name.startswith("_")}


def offending_cells(notebook, helpers: dict[str, tuple[Call, ...]]) -> list[str]:
    """``"exercise: cell N calls helper"`` for each code cell (not an exercise cell) of ``notebook`` that
    calls one of an exercise's quantity helpers."""
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or EXERCISE_TAG in tags(cell):
            continue
        for node in _calls(cell.source):
            for exercise, calls in helpers.items():
                found += [f"{exercise}: cell {index} calls {call}" for call in calls if call.matches(node)]
    return sorted(set(found))


@pytest.mark.parametrize("name", sorted(QUANTITY_HELPERS))
def test_the_table_names_every_thinking_exercise(name):
    notebook = nbformat.read(str(SOLUTIONS / f"{name}.ipynb"), 4)
    assert set(QUANTITY_HELPERS[name]) == _thinking_exercises(notebook), (
        f"{name}: QUANTITY_HELPERS must name exactly the notebook's {'/'.join(THINKING_KINDS)} exercises")


@pytest.mark.parametrize("name", sorted(QUANTITY_HELPERS))
def test_no_released_cell_computes_a_thinking_exercises_quantity(name):
    """Per thinking exercise, the released code cells that call its quantity's helpers: none."""
    notebook = nbformat.read(str(NOTEBOOKS / f"{name}.ipynb"), 4)
    assert offending_cells(notebook, QUANTITY_HELPERS[name]) == []


@pytest.mark.parametrize("name", sorted(QUANTITY_HELPERS))
def test_the_solutions_experiments_call_the_helpers_inside_their_regions(name):
    """The table has teeth: the solution's own experiments call the helpers (inside the regions that
    release removes), so a region that stays in the released notebook is caught."""
    notebook = nbformat.read(str(SOLUTIONS / f"{name}.ipynb"), 4)
    assert offending_cells(notebook, QUANTITY_HELPERS[name]), f"{name}: no solution cell calls a helper"


def test_a_call_is_matched_by_name_keywords_and_argument():
    helper = Call("self_attention", (("causal", True),), subscripted_argument=True)
    cell = nbformat.v4.new_code_cell(
        "def f(z):\n    return self_attention(z[p], causal=True)\n"            # a definition: not run here
        "a = self_attention(x[p], w, causal=True)\n"                           # cell 0: the experiment
        "b = self_attention(x, w, causal=True)\nc = self_attention(x[p], w)\n")  # neither matches
    notebook = nbformat.v4.new_notebook(cells=[cell])
    assert offending_cells(notebook, {"unchanged_outputs": (helper,)}) == [
        "unchanged_outputs: cell 0 calls self_attention(x[...], causal=True)"]
