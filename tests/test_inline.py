"""The inline check() runs only public checks, says so, and reports the first failure."""
from __future__ import annotations

import torch

from grader.inline import NOT_FOUND, bound_names, check
from tests.conftest import ROOT, SOLUTIONS, load_solution


def test_check_passes_the_solution_and_says_hidden_tests_remain(capsys):
    namespace = vars(load_solution("01_permutation_invariance")).copy()
    assert check("permutation_matrix", namespace) is True
    out = capsys.readouterr().out
    assert "public checks passed" in out and "hidden tests" in out
    assert "All tests passed" not in out


def test_check_reports_the_first_failure_and_names_the_mistake(capsys):
    namespace = vars(load_solution("01_permutation_invariance")).copy()

    def permutation_matrix(perm):
        perm = torch.as_tensor(perm)
        p = torch.zeros(len(perm), len(perm))
        p[perm, torch.arange(len(perm))] = 1.0
        return p

    namespace["permutation_matrix"] = permutation_matrix
    assert check("permutation_matrix", namespace) is False
    out = capsys.readouterr().out
    assert "FAIL" in out and "the transpose" in out
    assert "permutation_matrix: 0 of 1 public checks passed; failing: " in out
    assert "failed" not in out.splitlines()[-1]  # the summary counts what passed


def test_check_counts_the_checks_that_passed_and_names_the_failing_ones(capsys):
    namespace = vars(load_solution("01_permutation_invariance")).copy()
    assert check("scaled_dot_product_attention", namespace) is True
    passed = capsys.readouterr().out.splitlines()[-1]
    total = int(passed.split(" of ")[1].split()[0])
    assert passed.startswith(f"scaled_dot_product_attention: {total} of {total} public checks passed.")

    def scaled_dot_product_attention(q, k, v, mask=None):
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v  # no 1/sqrt(d_k)

    namespace["scaled_dot_product_attention"] = scaled_dot_product_attention
    assert check("scaled_dot_product_attention", namespace) is False
    lines = capsys.readouterr().out.splitlines()
    failing = [line.strip().removeprefix("FAIL").strip() for line in lines if "FAIL" in line]
    assert failing and lines[-1].startswith(
        f"scaled_dot_product_attention: {total - len(failing)} of {total} public checks passed; "
        f"failing: {'; '.join(failing)}.")


def test_check_on_a_stub_says_not_implemented(capsys):
    def scaled_dot_product_attention(q, k, v, mask=None):
        raise NotImplementedError

    assert check("scaled_dot_product_attention",
                 {"scaled_dot_product_attention": scaled_dot_product_attention}) is False
    assert "not implemented yet" in capsys.readouterr().out


def test_check_with_an_unknown_name_says_so(capsys):
    assert check("no_such_exercise", {}) is False
    assert "no public checks found" in capsys.readouterr().out


# -- the inline check sees what the grader sees -------------------------------------------------
SUITE = "01_permutation_invariance"
HELPER = '''def scores_of(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
'''
USES_HELPER = '''def scaled_dot_product_attention(q, k, v, mask=None):
    """Attention whose scores come from a helper defined in an ordinary cell."""
    scores = scores_of(q, k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
'''


def _with_helper_cell(tmp_path):
    """Notebook 01's solution whose attention calls ``scores_of``, defined in an untagged cell
    before it; returns its path and a kernel's globals after running its setup, exercise and
    helper cells."""
    import nbformat
    from nbformat.v4 import new_code_cell

    from grader.batch.variants import exercise_cell_index
    from tests.conftest import variant

    path = variant(tmp_path, SUITE, replace={"scaled_dot_product_attention": USES_HELPER})
    notebook = nbformat.read(str(path), as_version=4)
    notebook.cells.insert(exercise_cell_index(notebook, "scaled_dot_product_attention"),
                          new_code_cell(HELPER))
    nbformat.write(notebook, str(path))
    namespace = vars(load_solution(SUITE)).copy()
    exec(HELPER, namespace)
    exec(USES_HELPER, namespace)
    return path, namespace


def test_a_helper_the_grader_does_not_load_fails_the_check_with_the_graders_reason(
        tmp_path, capsys, monkeypatch):
    from grader.grade import grade_notebook

    path, namespace = _with_helper_cell(tmp_path)
    assert check("scaled_dot_product_attention", namespace, notebook=path) is False
    out = capsys.readouterr().out
    graded = grade_notebook(path, skip_execution=True, exercises={"scaled_dot_product_attention"})
    public = [t for t in graded.tests if t.public]
    assert public and all(t.status != "passed" for t in public)
    for test in public:  # the grader's own one-line reason, word for word
        assert "name 'scores_of' is not defined" in test.output
        assert f"  FAIL {test.description}\n       {test.output}\n" in out
    monkeypatch.chdir(tmp_path)  # found as the kernel's working folder's SUITE.ipynb
    assert check("scaled_dot_product_attention", namespace) is False
    assert capsys.readouterr().out == out
    # The kernel's names as they are (no notebook file to read) pass, and say so.
    monkeypatch.chdir(ROOT)
    assert check("scaled_dot_product_attention", namespace) is True
    assert capsys.readouterr().out.startswith(NOT_FOUND + "\n")


def test_a_helper_in_the_exercise_cell_passes_even_before_the_notebook_is_saved(
        tmp_path, capsys, monkeypatch):
    import nbformat

    import grader
    from grader.batch.variants import exercise_cell_index

    path, namespace = _with_helper_cell(tmp_path)
    notebook = nbformat.read(str(path), as_version=4)
    cell = notebook.cells[exercise_cell_index(notebook, "scaled_dot_product_attention")]
    # The kernel ran the exercise cell with the helper moved into it; the file is older.
    monkeypatch.setattr(grader, "_CELL_SOURCES", {cell.id: HELPER + "\n\n" + USES_HELPER})
    assert check("scaled_dot_product_attention", namespace, notebook=path) is True
    monkeypatch.setattr(grader, "_CELL_SOURCES", {})
    assert check("scaled_dot_product_attention", namespace, notebook=path) is False


def test_a_passing_check_prints_what_the_solution_stores(capsys, monkeypatch):
    """In the solution's folder, as nbval runs it, the output is the stored one, byte for byte."""
    import nbformat

    monkeypatch.chdir(SOLUTIONS)
    notebook = nbformat.read(str(SOLUTIONS / f"{SUITE}.ipynb"), as_version=4)
    namespace = vars(load_solution(SUITE)).copy()
    checked = 0
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.source.startswith("check("):
            name = cell.source.split('"')[1]
            assert check(name, namespace) is True
            stored = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            assert capsys.readouterr().out == stored, name
            checked += 1
    assert checked >= 4


def test_bound_names_are_the_globals_a_cell_binds():
    source = '''import torch.nn as nn
import math
from os import path as p
A, (B, C) = 1, (2, 3)
for i in range(2):
    D = i
with open(__file__) as handle:
    pass
if (E := 3):
    F: int = 4
def g(x):
    local = x
    global G
    G = 1
class H:
    inner = 1
squares = [j * j for j in range(3)]
try:
    pass
except ValueError as error:
    pass
'''
    assert bound_names(source) == {"nn", "math", "p", "A", "B", "C", "i", "D", "handle", "E", "F",
                                   "g", "G", "H", "squares", "error"}
    assert bound_names("from math import *") is None and bound_names("def (") is None
