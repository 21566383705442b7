"""Reading notebooks and finding the cells the grader cares about (through nbformat)."""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from grader.notebook._imports import skip_slow_optional_imports

skip_slow_optional_imports()

import nbformat  # noqa: E402 - after the line above

from grader.errors import GraderError  # noqa: E402

SETUP_TAG = "setup"
EXERCISE_TAG = "exercise"
INSTRUCTOR_TAG = "instructor"


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """Read and validate a notebook (nbformat 4). Raises GraderError naming the file."""
    try:
        notebook = nbformat.read(str(path), as_version=4)
        nbformat.validate(notebook)
    except FileNotFoundError:
        raise GraderError(f"{path}: no such notebook; check the path") from None
    except Exception as exc:  # nbformat raises several types for corrupt files
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GraderError(f"{path}: not a valid Jupyter notebook ({first_line}); "
                          "restore it from a checkpoint or re-download it") from None
    return notebook


def tags(cell) -> list[str]:
    """The cell's tags (an empty list when it has none)."""
    return list(cell.get("metadata", {}).get("tags", []))


def cell_label(index: int, total: int) -> str:
    """How every report names a cell to the learner: ``Cell N/M``, as JupyterLab numbers it, N
    counting all the notebook's cells (markdown too) from 1 and M their number (``index`` counts
    them from 0, as ``notebook.cells`` does). Not the run's execution counts, which change with
    every run."""
    return f"Cell {index + 1}/{total}"


LINE_CHARS = 60
"""A cell's first line is quoted in reports up to this many characters."""


def first_line(source: str) -> str:
    """A cell's first line that is not blank, stripped and cut to :data:`LINE_CHARS` (``...``)."""
    line = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 3].rstrip() + "..."


def code_cell_labels(notebook) -> list[str]:
    """:func:`cell_label` of each code cell, in order (nbval's ``Cell K`` is the K-th, from 0)."""
    return [cell_label(index, len(notebook.cells)) for index, _ in code_cells(notebook)]


def code_cells(notebook) -> list[tuple[int, object]]:
    """``(index, cell)`` for every code cell; the index counts all cells from 0."""
    return [(i, c) for i, c in enumerate(notebook.cells) if c.cell_type == "code"]


_PROMPT = re.compile(r"^[ \t]*(In \[\d*\]:|\.\.\.|>>>)", re.MULTILINE)
"""A line that starts like a prompt of IPython or of the Python shell (see :func:`to_python`)."""


@functools.lru_cache(maxsize=4096)
def to_python(source: str) -> str:
    """Cell source as plain Python: IPython magics become calls (``get_ipython()...``).

    A cell that is already Python, starts with a line of code and has no line that starts like a
    prompt (``In [1]:``, ``...``, ``>>>``, which IPython strips) is returned as IPython's
    transformer returns it, with a final newline, without the transformer: its other syntaxes
    (magics, ``!`` commands, ``?`` help, an indented first line) are syntax errors in Python, and
    its other change (blank lines before the code, dropped) is left to it. Every code cell of the
    course's notebooks takes this path, and the transformer costs about a millisecond a cell, on
    the path to the first sandbox.

    Cached by source: grading many variants of one notebook converts the same cells again and
    again."""
    if source.strip() and source[:1] not in "\n\r \t" and not _PROMPT.search(source):
        try:
            ast.parse(source)
        except (SyntaxError, ValueError):  # ValueError: a NUL byte in the source
            pass
        else:
            return source if source.endswith("\n") else source + "\n"
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _defined(source: str) -> list[str]:
    """Names of the functions and classes a cell defines at top level, in order (none if
    unparsable)."""
    try:
        tree = ast.parse(to_python(source))
    except SyntaxError:
        return []
    return [node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def bound_names(source: str) -> set[str]:
    """Every name a cell binds at top level (assignments, loops, ``with``, imports, functions,
    classes), which a later cell may use; empty if unparsable."""
    try:
        tree = ast.parse(to_python(source))
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        else:  # the targets of assignments, loops and with statements at top level
            names |= {n.id for n in ast.walk(node)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return names


def top_level_names(source: str) -> set[str]:
    """Names of the functions and classes a cell defines at top level (empty if unparsable)."""
    return set(_defined(source))


def exercise_names(notebook) -> list[str]:
    """The functions and classes the exercise cells define, in the notebook's order."""
    return list(dict.fromkeys(name for _, cell in code_cells(notebook)
                              if EXERCISE_TAG in tags(cell) for name in _defined(cell.source)))


def _definitions_only(source: str) -> str:
    """Only the imports, functions and classes of a cell: what an untagged exercise cell offers."""
    tree = ast.parse(to_python(source))
    keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return ast.unparse(ast.Module(body=[n for n in tree.body if isinstance(n, keep)],
                                  type_ignores=[]))


def sandbox_cells(notebook, exercises: set[str]) -> list[tuple[str, str]]:
    """The ``(label, source)`` cells to load in the sandbox, in notebook order.

    Cells tagged ``setup`` or ``exercise`` are loaded whole. A cell that lost its tags but
    defines one of ``exercises`` at top level contributes its imports and definitions only, so
    a learner who re-created an exercise cell is still graded without re-running experiments.
    """
    cells = []
    for index, cell in code_cells(notebook):
        label = cell_label(index, len(notebook.cells))
        cell_tags = tags(cell)
        if SETUP_TAG in cell_tags or EXERCISE_TAG in cell_tags:
            cells.append((label, to_python(cell.source)))
        elif top_level_names(cell.source) & exercises:
            cells.append((label, _definitions_only(cell.source)))
    return cells


def suite_name(notebook, path: Path) -> str:
    """Which suite grades this notebook: its ``grader.suite`` metadata, else the file's stem."""
    return str(notebook.metadata.get("grader", {}).get("suite") or path.stem)
