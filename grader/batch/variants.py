"""Grading many variants of one notebook, paying its start-up once.

A catalogue of plausible wrong answers, and the correct answers written differently, are each a
copy of a solution notebook with one exercise cell replaced. Graded one by one through
:func:`grader.grade.grade_notebook`, every copy pays a fresh interpreter, ``import torch`` and the
notebook's setup cells before a second of judging. A :class:`VariantGrader` keeps one
:class:`grader.sandbox.parent.Template` per notebook that has loaded the cells *before its first exercise
cell*; each variant's sandbox is forked from it and then loads the rest of that variant's cells, in
the notebook's order. The learner's side of each variant therefore holds exactly the namespace
that grading the edited notebook would build, in a process of its own apart from the judge, and
the same hidden tests judge it (:func:`grader.judge.proxy.run_suite`); only the shared start-up differs.

Used by the project's tests (``tests/test_catalogue.py``, ``tests/test_correct_variants.py``) and
by anyone checking a catalogue::

    with VariantGrader(Path("solutions/02_sinusoidal_encoding.ipynb")) as grader:
        report = grader.grade({"sinusoidal_encoding": source})
"""
from __future__ import annotations

import ast
import copy
import time
from pathlib import Path

from grader.errors import GraderError
from grader.grade import _Connections, _Grading, _judge
from grader.judge.proxy import known_suites, suite_exercises
from grader.notebook.read import EXERCISE_TAG, cell_label, code_cells, exercise_names, read_notebook
from grader.notebook.read import sandbox_cells, suite_name, tags, top_level_names
from grader.results import NotebookReport
from grader.sandbox.parent import Limits, Sandbox, StudentError, Template


def _first_exercise_label(notebook) -> str:
    """The sandbox label (``Cell N/M``) of the notebook's first exercise cell."""
    for index, cell in code_cells(notebook):
        if EXERCISE_TAG in tags(cell):
            return cell_label(index, len(notebook.cells))
    raise GraderError("the notebook has no cell tagged 'exercise', so there is nothing to vary")


def _split(cells: list[tuple[str, str]], label: str) -> tuple[list, list]:
    """``cells`` before the one labelled ``label``, and from it on."""
    labels = [cell_label for cell_label, _ in cells]
    at = labels.index(label)
    return cells[:at], cells[at:]


def exercise_cell_index(notebook, exercise: str) -> int:
    """Index (among all cells) of the exercise cell that defines ``exercise``; GraderError if none."""
    for index, cell in code_cells(notebook):
        if EXERCISE_TAG in tags(cell) and exercise in top_level_names(cell.source):
            return index
    raise GraderError(f"no exercise cell defines {exercise!r}; name one of the notebook's "
                      "exercises")


def replaced(notebook, replace: dict[str, str]):
    """A copy of ``notebook`` in which the exercise cell defining each key has that source."""
    notebook = copy.deepcopy(notebook)
    for exercise, source in replace.items():
        notebook.cells[exercise_cell_index(notebook, exercise)].source = source
    return notebook


def _names_read(source: str) -> set[str]:
    """Every name ``source`` reads (loads), anywhere in it; nothing if it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)}


def _names_defined(source: str) -> set[str]:
    """The names a cell binds at its top level other than by ``import`` (an import binds the same
    module whichever cell does it): functions, classes and assignments."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def reached(notebook, replace: dict[str, str], exercises: set[str]) -> set[str]:
    """The exercises of ``exercises`` whose results replacing ``replace``'s cells can change.

    The replaced exercises, and every exercise whose cell reads or defines a name that a replaced
    cell defines other than by ``import`` (in the notebook or in its replacement; a replaced cell
    may also redefine another exercise), and so on: an exercise whose cell reads no
    such name runs the very same code as in ``notebook`` (its own cell and the notebook's other
    cells, loaded in the same order), so it gets the very same results.
    """
    cells = {}
    for index, cell in code_cells(notebook):
        if EXERCISE_TAG in tags(cell):
            for name in top_level_names(cell.source):
                cells.setdefault(name, cell.source)
    found = set(replace) & set(exercises) | set(replace)
    changed = set()
    for exercise, source in replace.items():
        changed |= _names_defined(source) | _names_defined(cells.get(exercise, ""))
    grew = True
    while grew:
        grew = False
        for exercise in sorted(set(exercises) - found):
            source = cells.get(exercise, "")
            if (_names_read(source) | _names_defined(source) | {exercise}) & changed:
                found.add(exercise)
                changed |= _names_defined(cells.get(exercise, ""))
                grew = True
    return found & set(exercises) | set(replace)


class _VariantConnections(_Connections):
    """The learner's side of one variant: sandboxes forked from a shared, warm template.

    Each sandbox loads the variant's own cells after the template's; the template outlives the
    variant (the :class:`VariantGrader` closes it).
    """

    def __init__(self, notebook, limits: Limits, suite_exercises: set[str], template: Template,
                 cells: list[tuple[str, str]]) -> None:
        super().__init__(notebook, limits, suite_exercises)
        self.template = template
        self.cells = cells
        self._load_errors: list[str] = []

    def _template(self) -> Template:
        return self.template

    def _new_sandbox(self) -> Sandbox:
        return Sandbox(self.cells, template=self.template)

    def _sandbox(self, exercise: str) -> Sandbox:
        sandbox = super()._sandbox(exercise)
        self._load_errors = sandbox.load_errors
        return sandbox

    def load_errors(self) -> list[str]:
        return list(self._load_errors)

    def close(self) -> None:
        if self.current is not None:
            self.current[1].close()
            self.current = None


class VariantGrader:
    """Grades variants of one notebook (``solution``): one exercise cell or more replaced.

    The template starts on the first :meth:`grade` and serves every later one; :meth:`close`
    (or leaving a ``with`` block) ends it. A variant whose cells before the first exercise cell
    differ from the notebook's gets a template of its own, so a report never depends on the
    variants graded before it.
    """

    def __init__(self, solution: Path, *, limits: Limits | None = None) -> None:
        self.path = Path(solution)
        self.notebook = read_notebook(self.path)
        self.suite = suite_name(self.notebook, self.path)
        if self.suite not in known_suites():
            raise GraderError(f"{self.path}: no hidden tests for a notebook named {self.suite!r}")
        self.limits = limits or Limits()
        self.suite_exercises = suite_exercises(self.suite)
        self._first = _first_exercise_label(self.notebook)
        self._templates: dict[tuple, Template] = {}

    def _cells(self, notebook) -> list[tuple[str, str]]:
        return sandbox_cells(notebook, set(exercise_names(notebook)) | self.suite_exercises)

    def _template_for(self, prefix: list[tuple[str, str]]) -> Template:
        key = tuple(map(tuple, prefix))
        template = self._templates.get(key)
        if template is None:
            template = Template(prefix, limits=self.limits)
            try:
                template.start()
            except StudentError:
                template.close()
                raise
            self._templates[key] = template
        return template

    def reached(self, replace: dict[str, str]) -> set[str]:
        """The suite's exercises whose results ``replace`` can change (:func:`reached`): grading
        only those gives the whole suite's report, less the tests that stay as the solution's."""
        return reached(self.notebook, replace, self.suite_exercises)

    def grade(self, replace: dict[str, str], *, exercises: set[str] | None = None
              ) -> NotebookReport:
        """Grade the notebook with ``replace`` (exercise name -> cell source) applied.

        ``exercises`` limits the hidden tests as ``python -m grader check --exercise`` does
        (default: the replaced exercises; :meth:`reached` gives every exercise they can change).
        """
        start = time.monotonic()
        notebook = replaced(self.notebook, replace)
        names = ", ".join(sorted(replace)) or "nothing"
        report = NotebookReport(path=f"{self.path} ({names} replaced)", suite=self.suite)
        prefix, rest = _split(self._cells(notebook), self._first)
        template = self._template_for(prefix)

        def connect(notebook, suite_exercises: set[str]) -> _Connections:
            return _VariantConnections(notebook, self.limits, suite_exercises, template, rest)

        report.seconds = time.monotonic() - start
        return _judge(_Grading(self.path, report, notebook),
                      exercises=set(replace) if exercises is None else exercises, connect=connect)

    def close(self) -> None:
        """End every template this grader started."""
        for template in self._templates.values():
            template.close()
        self._templates.clear()

    def __enter__(self) -> "VariantGrader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
