"""Release: build the student notebooks (``notebooks/``) from the solutions (``solutions/``).

For each solution notebook, in order:

1. drop cells tagged ``instructor`` and the lines between ``### BEGIN HIDDEN TESTS`` and
   ``### END HIDDEN TESTS``;
2. replace each ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region of a code cell by a stub
   that raises ``NotImplementedError`` at the region's indentation (signature and docstring
   stay), each such region of any other code cell (the experiment that answers a thinking
   exercise) by a comment that asks for the learner's own experiment (:data:`EXPERIMENT_PROMPT`),
   and each such region of a markdown cell (a conclusion that reads a thinking exercise's
   result) by a prompt for the learner's own conclusion (:data:`CONCLUSION_PROMPT`); each written
   question keeps its question, and its model answer and rubric become the answer heading and
   placeholder (:func:`grader.notebook.written.released_source`);
3. keep the outputs of the *given* cells (those that depend on no exercise's answer), clear every
   other code cell's, with a placeholder where the solution drew a figure
   (:mod:`grader.notebook.given` says which and why), and drop execution counts and timestamps;
4. record the suite that grades it in the notebook's metadata, so a renamed submission is
   still graded by the right hidden tests;
5. where the course names its GitHub repository (``[tool.course] repository`` in
   ``pyproject.toml``), put a cell after the title that, on Google Colab only, fetches the
   course and installs what Colab lacks (:func:`colab_cell`); elsewhere it does nothing.

Releasing twice gives the same bytes. Each notebook records a digest of what release wrote, and
release overwrites only a notebook that still matches it (:mod:`grader.notebook.overwrite`).
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import nbformat

from grader.errors import GraderError
from grader.notebook import overwrite
from grader.notebook.given import classify, released_outputs
from grader.notebook.read import EXERCISE_TAG, INSTRUCTOR_TAG, read_notebook, tags, top_level_names
from grader.notebook import written as written_questions

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
STUB = 'raise NotImplementedError("{name}: replace this line with your implementation")'
CONCLUSION_PROMPT = ("> **Your conclusion.** Replace this line with what your own results above show, "
                     "quoting the numbers your cells printed.")
EXPERIMENT_PROMPT = "# Your experiment: replace this line with the code that answers the question above."


COLAB_TAG = "colab"
COLAB_CELL = """\
# On Google Colab only (elsewhere this cell does nothing): fetch the course (its grader and
# assets), install what Colab lacks, and work from the course's notebooks/ folder.
import os, sys
if "google.colab" in sys.modules:
    import importlib, subprocess
    COURSE = os.environ.get("COURSE_HOME", "/content/positional-encodings-course")
    if not os.path.isdir(COURSE):
        subprocess.run(["git", "clone", "--quiet", "--depth", "1",
                        os.environ.get("COURSE_URL", "https://github.com/{repository}"), COURSE],
                       check=True)
    subprocess.run([sys.executable, os.path.join(COURSE, "course.py"), "colab"], check=True)
    sys.path.insert(0, COURSE)
    importlib.invalidate_caches()
    os.chdir(os.path.join(COURSE, "notebooks"))"""


def course_repository(root: Path) -> str:
    """The course's GitHub repository (``owner/name``) from ``root/pyproject.toml``, or ``""``."""
    try:
        config = tomllib.loads((root / "pyproject.toml").read_text())
    except FileNotFoundError:
        return ""
    return str(config.get("tool", {}).get("course", {}).get("repository", ""))


def colab_cell(repository: str, suite: str) -> nbformat.NotebookNode:
    """The Colab cell of notebook ``suite``, for the GitHub repository ``owner/name``."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository):
        raise GraderError(f"[tool.course] repository = {repository!r} is not a GitHub "
                          "'owner/name'; fix it in pyproject.toml")
    cell = nbformat.v4.new_code_cell(COLAB_CELL.format(repository=repository))
    cell.metadata["tags"] = [COLAB_TAG]
    cell["id"] = f"colab-{suite}"[:64]  # fixed, so that releasing twice gives the same bytes
    return cell


_DEF = re.compile(r"^(\s*)(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")


def _enclosing_name(lines: list[str], indent: str, default: str) -> str:
    """Name of the innermost def/class above a region indented by ``indent``."""
    for line in reversed(lines):
        match = _DEF.match(line)
        if match and len(match.group(1)) < len(indent):
            return match.group(2)
    return default


def _strip_regions(lines: list[str], begin: str, end: str, where: str,
                   replacement=None) -> list[str]:
    """Remove each begin/end region; ``replacement(indent, lines_so_far)`` gives its stand-in."""
    out: list[str] = []
    inside_since = None
    for number, line in enumerate(lines, start=1):
        marker = line.strip()
        if marker == begin:
            if inside_since is not None:
                raise GraderError(f"{where}, line {number}: '{begin}' inside another region "
                                  f"opened on line {inside_since}; close it with '{end}' first")
            inside_since = number
            if replacement is not None:
                out.extend(replacement(line[: len(line) - len(line.lstrip())], out))
        elif marker == end:
            if inside_since is None:
                raise GraderError(f"{where}, line {number}: '{end}' without '{begin}'")
            inside_since = None
        elif inside_since is None:
            out.append(line)
    if inside_since is not None:
        raise GraderError(f"{where}, line {inside_since}: '{begin}' without '{end}'")
    return out


def release_notebook(notebook, where: str, suite: str, repository: str = ""):
    """Return the student version of a solution notebook (a new NotebookNode).

    ``repository`` (``owner/name``), when given, adds the Colab cell after the title.
    """
    student = nbformat.from_dict(notebook)
    kept = [(c, d) for c, d in zip(student.cells, classify(notebook, where))
            if INSTRUCTOR_TAG not in tags(c)]
    student.cells = [c for c, _ in kept]
    asked = {q.id: q for q in written_questions.questions(notebook, where)}  # GraderError: bad cell
    for index, cell in enumerate(student.cells):
        cell_where = f"{where}, cell {index}"
        if written_questions.is_written(cell):  # the question stays; no model answer, no rubric
            cell.source = written_questions.released_source(asked[cell.metadata.exercise_id])
            continue
        if cell.cell_type == "markdown":
            cell.source = "\n".join(_strip_regions(
                cell.source.split("\n"), BEGIN_SOLUTION, END_SOLUTION, cell_where,
                replacement=lambda indent, before: [CONCLUSION_PROMPT]))
            continue
        if cell.cell_type != "code":
            continue
        lines = _strip_regions(cell.source.split("\n"), BEGIN_HIDDEN, END_HIDDEN, cell_where)
        if EXERCISE_TAG in tags(cell):
            public = sorted(n for n in top_level_names(cell.source) if not n.startswith("_"))
            default = public[0] if public else "exercise"
            if not any(line.strip() == BEGIN_SOLUTION for line in lines):
                raise GraderError(f"{cell_where}: an exercise cell needs a '{BEGIN_SOLUTION}' region")
            lines = _strip_regions(
                lines, BEGIN_SOLUTION, END_SOLUTION, cell_where,
                replacement=lambda indent, before: [
                    indent + STUB.format(name=_enclosing_name(before, indent, default))])
        else:  # an experiment that answers a thinking exercise: the learner writes it
            lines = _strip_regions(lines, BEGIN_SOLUTION, END_SOLUTION, cell_where,
                                   replacement=lambda indent, before: [
                                       indent + ("pass  " if indent else "") + EXPERIMENT_PROMPT])
        cell.source = "\n".join(lines)
        cell.metadata.pop("execution", None)  # nbclient's timestamps: they change at every run
        cell.outputs = released_outputs(cell, kept[index][1])
        cell.execution_count = None
    student.metadata.setdefault("grader", {})["suite"] = suite
    if repository:
        title = 1 if student.cells and student.cells[0].cell_type == "markdown" else 0
        student.cells.insert(title, colab_cell(repository, suite))
    return student


def release(*, source: Path, dest: Path, repository: str | None = None,
            force: bool = False, echo=print) -> list[Path]:
    """Write the student version of every ``source/*.ipynb`` into ``dest``; returns the paths.

    Student notebooks in ``dest`` without a solution are removed, so the two folders stay in step.
    ``repository`` (``owner/name``) names the course's GitHub repository for the Colab cell;
    ``None`` reads it from the ``pyproject.toml`` beside ``source`` (``""``: no Colab cell).
    A notebook of ``dest`` that differs from what release last wrote there is neither
    overwritten nor removed (GraderError naming it, before any file is touched) unless ``force``,
    which keeps a copy of it beside it (:mod:`grader.notebook.overwrite`) and says where with
    ``echo``.
    """
    if repository is None:
        repository = course_repository(source.resolve().parent)
    if not source.is_dir():
        raise GraderError(f"{source}: no such folder of solution notebooks")
    solutions = sorted(source.glob("*.ipynb"))
    if not solutions:
        raise GraderError(f"{source}: no solution notebooks (*.ipynb) to release")
    plan: dict[Path, str | None] = {}
    for path in solutions:
        student = release_notebook(read_notebook(path), str(path), path.stem, repository)
        plan[dest / path.name] = overwrite.stamp(nbformat.writes(student) + "\n")
    plan.update({stale: None for stale in sorted(dest.glob("*.ipynb")) if stale not in plan})
    changed = overwrite.refuse_changed(plan, force=force)  # before any file is touched
    for target in changed:
        echo(f"release: {target} had changed since it was released; kept as "
             f"{overwrite.back_up(target)}")
    dest.mkdir(parents=True, exist_ok=True)
    for target, text in plan.items():
        if text is None:
            target.unlink()
        elif not target.is_file() or target.read_text() != text:
            target.write_text(text)
    return [target for target, text in plan.items() if text is not None]


def main(*, source: Path, dest: Path, force: bool = False) -> list[Path]:
    """Entry point of ``python -m grader release``."""
    return release(source=source, dest=dest, force=force)


