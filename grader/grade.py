"""Grade notebooks (validate, execute with nbval, judge with hidden tests, report)."""
from __future__ import annotations

import time
from pathlib import Path

from grader import report as reporters
from grader.errors import GraderError
from grader.execute import execute
from grader.judge import known_suites, run_suite
from grader.notebook import EXERCISE_TAG, code_cells, read_notebook, sandbox_cells, suite_name
from grader.notebook import tags, top_level_names
from grader.results import NotebookReport
from grader.sandbox import ExerciseMissing, Limits, Sandbox, StudentError


def find_notebooks(paths: list[Path]) -> list[Path]:
    """Expand folders into the notebooks below them (checkpoints excluded), in sorted order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
            if not inside:
                raise GraderError(f"{path}: no notebooks (*.ipynb) in this folder")
            found += inside
        elif path.exists():
            found.append(path)
        else:
            raise GraderError(f"{path}: no such file or folder")
    return found


class _Connections:
    """One sandbox per exercise, started when its first test needs it."""

    def __init__(self, notebook, limits: Limits) -> None:
        self.notebook = notebook
        self.limits = limits
        self.sandboxes: dict[str, Sandbox] = {}
        self.failures: dict[str, StudentError] = {}
        self.tagged = set()
        if notebook is not None:
            for _, cell in code_cells(notebook):
                if EXERCISE_TAG in tags(cell):
                    self.tagged |= top_level_names(cell.source)

    def __call__(self, exercise: str):
        if self.notebook is None:
            def unreadable(name, args, kwargs, timeout):
                raise ExerciseMissing("the notebook could not be read, so no exercise was found")
            return unreadable, []
        if exercise in self.failures:
            raise self.failures[exercise]
        sandbox = self.sandboxes.get(exercise)
        if sandbox is None:
            sandbox = Sandbox(sandbox_cells(self.notebook, self.tagged | {exercise}),
                              limits=self.limits)
            self.sandboxes[exercise] = sandbox
            try:
                sandbox.start()
            except StudentError as exc:
                self.failures[exercise] = exc
                raise

        def call(name, args, kwargs, timeout):
            return sandbox.call(name, args, kwargs, timeout=timeout)

        return call, sandbox.load_errors

    def load_errors(self) -> list[str]:
        errors: list[str] = []
        for sandbox in self.sandboxes.values():
            errors += [e for e in sandbox.load_errors if e not in errors]
        return errors

    def close(self) -> None:
        for sandbox in self.sandboxes.values():
            sandbox.close()


def grade_notebook(path: Path, *, skip_execution: bool = False,
                   exercises: set[str] | None = None, cell_timeout: float = 120.0,
                   limits: Limits | None = None) -> NotebookReport:
    """Grade one notebook; a problem with the notebook ends up in the report, never raised."""
    limits = limits or Limits()
    start = time.monotonic()
    report = NotebookReport(path=str(path))
    try:
        notebook = read_notebook(path)
        report.suite = suite_name(notebook, path)
    except GraderError as exc:
        notebook, report.error = None, str(exc)
        report.suite = path.stem
    if report.suite not in known_suites():
        report.error = (f"no hidden tests for a notebook named {report.suite!r}; keep the course's "
                        f"file name (one of: {', '.join(known_suites())})")
        report.seconds = time.monotonic() - start
        return report
    if notebook is not None and not skip_execution:
        report.execution = execute(path, cell_timeout=cell_timeout, limits=limits)
    connections = _Connections(notebook, limits)
    try:
        report.tests = run_suite(report.suite, connections, exercises=exercises)
    finally:
        connections.close()
    report.load_errors = connections.load_errors()
    report.seconds = time.monotonic() - start
    return report


def main(*, paths: list[Path], json_path: Path | None = None, junit_path: Path | None = None,
         skip_execution: bool = False, exercises: set[str] | None = None,
         cell_timeout: float = 120.0, echo=print) -> list[NotebookReport]:
    """Entry point of ``python -m grader check``: grade, print the table, write the reports."""
    start = time.monotonic()
    notebooks = find_notebooks(paths)
    reports = []
    for path in notebooks:
        reports.append(grade_notebook(path, skip_execution=skip_execution, exercises=exercises,
                                      cell_timeout=cell_timeout))
    echo(reporters.table(reports))
    if json_path is not None:
        reporters.write_json(json_path, reporters.gradescope(reports, time.monotonic() - start))
        echo(f"JSON report written to {json_path}")
    if junit_path is not None:
        reporters.write_text(junit_path, reporters.junit(reports))
        echo(f"JUnit report written to {junit_path}")
    return reports
