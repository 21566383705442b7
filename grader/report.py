"""Reporters: the terminal table, Gradescope's ``results.json``, JUnit XML and Markdown.

They only render :mod:`grader.results` records; no other module formats output.
"""
from __future__ import annotations

import json
import os
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from grader.results import PASSED, NotebookReport, TestResult

HIDDEN_VISIBILITY = "after_due_date"
"""Gradescope visibility of hidden tests' results (public checks and execution are visible)."""

_STATUS_ORDER = ["grader error", "crashed", "timed out", "missing", "not implemented", "error",
                 "failed"]


def _points(value: float) -> str:
    return f"{value:g}"


def exercise_status(tests: list[TestResult]) -> tuple[str, str]:
    """One status for an exercise (the most serious among its tests) and the first feedback."""
    failing = [t for t in tests if t.status != PASSED]
    if not failing:
        return PASSED, ""
    worst = min(failing, key=lambda t: _STATUS_ORDER.index(t.status)
                if t.status in _STATUS_ORDER else len(_STATUS_ORDER))
    first = failing[0]
    label = worst.status if len({t.status for t in failing}) == 1 else f"{worst.status}, ..."
    detail = f"{first.description or first.name} -- {first.output}" if first.output else first.name
    return f"{label} ({len(failing)}/{len(tests)} tests)", detail


def _execution_line(report: NotebookReport) -> str:
    execution = report.execution
    if execution is None:
        return "execution: skipped"
    if execution.error:
        return f"execution: {execution.error}"
    line = f"execution: {execution.passed}/{execution.cells} cells ran without error"
    if execution.failures:
        first = execution.failures[0]
        line += f" (first failure, {first.cell}: {first.message})"
    return line


def table(reports: list[NotebookReport], width: int = 100) -> str:
    """A plain-text table per notebook and exercise, for people."""
    lines = []
    for report in reports:
        head = f"{report.path}"
        lines.append("=" * width)
        lines.append(f"{head}   score {_points(report.score)}/{_points(report.max_score)}")
        if report.error:
            lines.append(f"  could not be graded: {report.error}")
        lines.append(f"  {_execution_line(report)}"[:width * 2])
        for problem in report.load_errors:
            lines.append(f"  cell failed to load: {problem}"[:width * 2])
        groups = report.exercises()
        if groups:
            name_width = max(len(name) for name in groups) + 2
            lines.append(f"  {'exercise'.ljust(name_width)}{'points':>9}   status")
        for name, tests in groups.items():
            score = sum(t.score for t in tests)
            maximum = sum(t.max_score for t in tests)
            status, detail = exercise_status(tests)
            points = f"{_points(score)}/{_points(maximum)}"
            lines.append(f"  {name.ljust(name_width)}{points:>9}   {status}")
            if detail:
                lines.append(f"  {'':{name_width}}{'':9}   -> {detail}"[:width * 3])
    total = sum(r.score for r in reports)
    maximum = sum(r.max_score for r in reports)
    lines.append("=" * width)
    lines.append(f"Total: {_points(total)}/{_points(maximum)} points over {len(reports)} notebook(s)")
    return "\n".join(lines)


def _test_name(report: NotebookReport, test: TestResult) -> str:
    suite = report.suite or Path(report.path).stem
    return f"{suite} / {test.exercise} / {test.name}"


VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
"""Gradescope's visibility settings, from the most to the least hidden."""


def notebook_number(suite: str) -> int:
    """The course number of a suite (``"04_rotary_embeddings"`` -> 4), 0 when it has none."""
    prefix = suite.split("_", 1)[0]
    return int(prefix) if prefix.isdigit() else 0


def gradescope(reports: list[NotebookReport], execution_time: float, *,
               hidden_visibility: str = HIDDEN_VISIBILITY, output: str | None = None) -> dict:
    """Gradescope's ``results.json``, with only the keys its specification defines.

    Every test carries ``number`` ``"N.E"`` (notebook N, its E-th exercise in this report;
    ``"N.0"`` for the notebook's own checks) and ``tags`` ``[exercise]``. Hidden tests get
    ``hidden_visibility``; public checks, execution and notebook problems are ``visible``.
    The total is ``score``; the specification has no top-level ``max_score`` (each test has one).
    """
    if hidden_visibility not in VISIBILITIES:
        raise ValueError(f"hidden_visibility must be one of {', '.join(VISIBILITIES)}, "
                         f"not {hidden_visibility!r}")
    tests = []
    for report in reports:
        suite = report.suite or Path(report.path).stem
        number = notebook_number(suite)
        if report.error:
            tests.append({"name": f"{suite} / notebook", "number": f"{number}.0", "score": 0,
                          "max_score": 0, "status": "failed", "output": report.error,
                          "tags": ["notebook"], "visibility": "visible"})
        execution = report.execution
        if execution is not None:
            tests.append({"name": f"{suite} / executes top to bottom (nbval)",
                          "number": f"{number}.0", "score": 0, "max_score": 0,
                          "status": "passed" if execution.ok else "failed",
                          "output": _execution_line(report), "tags": ["execution"],
                          "visibility": "visible"})
        order = {name: index for index, name in enumerate(report.exercises(), start=1)}
        for test in report.tests:
            output = f"{test.description}\n{test.output}".strip()
            if test.status != PASSED:
                output = f"{test.description}\n{test.status}: {test.output}".strip()
            tests.append({
                "name": _test_name(report, test), "number": f"{number}.{order[test.exercise]}",
                "score": test.score, "max_score": test.max_score,
                "status": "passed" if test.status == PASSED else "failed", "output": output,
                "tags": [test.exercise],
                "visibility": "visible" if test.public else hidden_visibility,
            })
    total = sum(r.score for r in reports)
    maximum = sum(r.max_score for r in reports)
    return {
        "score": total,
        "execution_time": round(execution_time, 3),
        "output": output if output is not None else
        f"Graded {len(reports)} notebook(s): {_points(total)}/{_points(maximum)} points.",
        "output_format": "text",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def _cell(text: str) -> str:
    """Text safe inside one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def markdown(reports: list[NotebookReport]) -> str:
    """A Markdown summary (a table per notebook, one row per exercise), e.g. for a CI job summary."""
    total = sum(r.score for r in reports)
    maximum = sum(r.max_score for r in reports)
    lines = [f"## Grade: {_points(total)}/{_points(maximum)} points over {len(reports)} notebook(s)",
             ""]
    for report in reports:
        suite = report.suite or Path(report.path).stem
        lines += [f"### `{suite}`: {_points(report.score)}/{_points(report.max_score)}", ""]
        if report.error:
            lines += [f"Could not be graded: {_cell(report.error)}", ""]
        execution = _cell(_execution_line(report))
        lines += [execution[:1].upper() + execution[1:], ""]
        for problem in report.load_errors:
            lines += [f"- cell failed to load: {_cell(problem)}"]
        if report.load_errors:
            lines.append("")
        groups = report.exercises()
        if not groups:
            continue
        lines += ["| exercise | points | status | first problem |", "|---|---:|---|---|"]
        for name, tests in groups.items():
            score = sum(t.score for t in tests)
            maximum_points = sum(t.max_score for t in tests)
            status, detail = exercise_status(tests)
            mark = "✅" if status == PASSED else "❌"
            lines.append(f"| `{name}` | {_points(score)}/{_points(maximum_points)} | "
                         f"{mark} {_cell(status)} | {_cell(detail)[:300]} |")
        lines.append("")
    return "\n".join(lines)


def junit(reports: list[NotebookReport]) -> str:
    """JUnit XML: one test suite per notebook, one test case per hidden test, for CI."""
    root = ElementTree.Element("testsuites")
    for report in reports:
        suite = report.suite or Path(report.path).stem
        failures = sum(t.status != PASSED for t in report.tests)
        element = ElementTree.SubElement(root, "testsuite", name=suite,
                                         tests=str(len(report.tests)), failures=str(failures),
                                         time=f"{report.seconds:.3f}")
        if report.error:
            case = ElementTree.SubElement(element, "testcase", classname=suite, name="notebook")
            ElementTree.SubElement(case, "error", message=report.error)
        for test in report.tests:
            case = ElementTree.SubElement(element, "testcase", classname=f"{suite}.{test.exercise}",
                                          name=test.name)
            if test.status != PASSED:
                ElementTree.SubElement(case, "failure", message=test.status).text = test.output
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True)


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as indented JSON, creating the folder (atomically, see :func:`write_text`)."""
    write_text(path, json.dumps(data, indent=2) + "\n")


def write_text(path: Path, text: str) -> None:
    """Write ``text``, creating the folder; atomic: a reader sees the old file or the new one.

    The text goes to a temporary file in the same folder, which then replaces ``path``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
