"""No released cell of notebooks 04, 05 and 07 runs a thinking exercise's experiment for the learner.

DESIGN.md, "The learner runs the experiment": the released notebook gives the question, the tools and an
empty cell; the cells that run the experiment (a bug simulator to match modules against, the searches that a
challenge's top threshold is set against, the reading of the chapter's own data) are solution regions or
instructor cells. The table below names, per thinking exercise, the solution's helpers that compute its
quantity. Each must be defined in the solution (so the table cannot go stale), and no code cell of the released
notebook may define, call or read it. Every thinking exercise of these notebooks has a row, an empty one where
the solution has no such helper, so a new thinking exercise must be added here.
"""
from __future__ import annotations

import ast

import pytest

from grader.notebook.read import read_notebook, tags, to_python
from grader.notebook.release import release_notebook
from tests.conftest import SOLUTIONS

THINKING_KINDS = {"interpret", "measure", "challenge", "diagnose"}
"""The kinds whose points DESIGN.md says the learner's own experiment must earn."""

EXPERIMENT_HELPERS = {
    "04_rotary_embeddings": {
        "matching_pairs": (),
        "rope_base_for_context": ("grid_walk", "doubling_then_bisection"),
        "rope_is_faithful": ("hf_style_rope",),
    },
    "05_context_extension": {
        "positional_pairs": (),
        "extension_inv_freq": (),
        "diagnose_rope": ("rotary_module",),
        "fine_tune_verdict": (),
        "retrieval_beyond_control": ("control_256",),
    },
    "07_rope_in_practice": {
        "proportional_loses_position": ("pair_logit_profile",),
    },
}
"""notebook -> thinking exercise -> the solution's names that run its experiment (a function or a variable)."""


def _names(source: str) -> set[str]:
    """Every identifier a cell defines, calls or reads (names, attributes, functions, classes, arguments)."""
    names = set()
    for node in ast.walk(ast.parse(to_python(source))):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def _code_names(notebook) -> list[tuple[int, set[str]]]:
    return [(index, _names(cell.source)) for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]


@pytest.mark.parametrize("notebook", sorted(EXPERIMENT_HELPERS))
def test_every_thinking_exercise_has_a_row(notebook):
    """The table lists exactly the notebook's thinking exercises (by their cells' exercise_kind)."""
    solution = read_notebook(SOLUTIONS / f"{notebook}.ipynb")
    thinking = set()
    for cell in solution.cells:
        if cell.cell_type == "code" and "exercise" in tags(cell):
            if cell.metadata.get("exercise_kind") in THINKING_KINDS:
                defined = [n.name for n in ast.parse(to_python(cell.source)).body
                           if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
                thinking.update(defined)
    assert thinking == set(EXPERIMENT_HELPERS[notebook])


@pytest.mark.parametrize("notebook, exercise, helper",
                         [(nb, ex, helper) for nb, rows in sorted(EXPERIMENT_HELPERS.items())
                          for ex, helpers in rows.items() for helper in helpers])
def test_released_cells_do_not_run_the_experiment(notebook, exercise, helper):
    """The helper exists in the solution and no released code cell defines, calls or reads it."""
    path = SOLUTIONS / f"{notebook}.ipynb"
    solution = read_notebook(path)
    assert any(helper in names for _, names in _code_names(solution)), (
        f"{notebook}: '{helper}' ({exercise}'s experiment) is not in the solution; update the table")
    released = release_notebook(solution, str(path), notebook)
    cells = [index for index, names in _code_names(released) if helper in names]
    assert not cells, (f"{notebook}: released cell(s) {cells} use '{helper}', which runs {exercise}'s experiment; "
                       "make the cell an instructor cell or a solution region")


def test_the_check_sees_a_released_helper():
    """The name scan finds a helper in an ordinary cell, in an attribute and behind a magic line."""
    assert "rotary_module" in _names("%matplotlib inline\nm = rotary_module('PI')")
    assert "grid_walk" in _names("import x\nx.grid_walk(1, 2)")
    assert "hf_style_rope" in _names("def hf_style_rope(config):\n    return config")
    assert "rotary_module" not in _names("# rotary_module is described in the prose\nprint('rotary_module')")
