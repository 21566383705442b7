"""Reporters: the terminal table, Gradescope's ``results.json``, JUnit XML and Markdown.

They only render :mod:`grader.results` records; no other module formats output.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
import textwrap
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from grader.report import written
from grader.results import (ERROR, FAILED, NOT_IMPLEMENTED, PASSED, CellFailure, NotebookReport,
                            TestResult)

HIDDEN_VISIBILITY = "after_due_date"
"""Gradescope visibility of hidden tests' results (public checks and execution are visible)."""

_STATUS_ORDER = ["grader error", "crashed", "timed out", "missing", "not implemented", "error",
                 "failed"]


def _points(value: float) -> str:
    return f"{value:g}"


_PHRASE = "this is what you get with: "
_NAME = r"(?P<name>.+?)(?=\s*\[failing example:|\s*$)"
_MISTAKE = re.compile(re.escape(_PHRASE) + _NAME, re.MULTILINE)
"""The clause in which a hidden test names a catalogued mistake (see ``grader.judge.proxy``); it
begins with the phrase itself, so that a search skips to it (a long output is read once)."""
_MISTAKE_CLAUSE = re.compile(r"[;,.]?\s*" + re.escape(_PHRASE) + _NAME, re.MULTILINE)


@dataclass
class Mistake:
    """A named mistake that failing tests of one exercise share, said once in a report."""

    name: str
    """The mistake as the tests name it, e.g. ``"missing the 1/sqrt(d_k) scaling"``."""
    points: float
    """Points that the tests naming it cost."""
    tests: int
    """How many failing tests named it."""

    def __str__(self) -> str:
        where = "1 test" if self.tests == 1 else f"{self.tests} tests"
        return f"{self.name} (cost {_points(self.points)} points, {where})"


def named_mistake(output: str) -> str | None:
    """The mistake a test's feedback names ("this is what you get with: ..."), if any."""
    match = _MISTAKE.search(output or "")
    return match.group("name").strip() if match else None


def without_mistake(output: str) -> str:
    """A test's feedback without its named-mistake clause (the report says the mistake once)."""
    if _PHRASE not in (output or ""):  # the pattern's optional start makes a full scan slow
        return (output or "").strip()
    return _MISTAKE_CLAUSE.sub("", output).strip()


def mistakes(tests: list[TestResult]) -> list[Mistake]:
    """The named mistakes of an exercise's failing tests, each once with the points it cost, in
    the order the tests first name them."""
    found: dict[str, Mistake] = {}
    for test in tests:
        name = named_mistake(test.output) if test.status != PASSED else None
        if name is None:
            continue
        mistake = found.setdefault(name, Mistake(name, 0.0, 0))
        mistake.points += test.max_score
        mistake.tests += 1
    return list(found.values())


def exercise_status(tests: list[TestResult]) -> tuple[str, str]:
    """One status for an exercise (the most serious among its tests) and the first feedback.

    The feedback names each mistake of the exercise once (with the points it cost), then says
    what the first failing test found, without repeating its named mistake.
    """
    failing = [t for t in tests if t.status != PASSED]
    if not failing:
        return PASSED, ""
    worst = min(failing, key=lambda t: _STATUS_ORDER.index(t.status)
                if t.status in _STATUS_ORDER else len(_STATUS_ORDER))
    first = failing[0]
    label = worst.status if len({t.status for t in failing}) == 1 else f"{worst.status}, ..."
    named = mistakes(tests)
    output = without_mistake(first.output) if named else first.output
    detail = f"{first.description or first.name} -- {output}" if output else first.name
    if named:
        detail = "; ".join(f"likely mistake: {m}" for m in named) + "; first failing test: " + detail
    return f"{label} ({len(failing)} of {len(tests)} tests)", detail


def exercise_numbers(report: NotebookReport) -> dict[str, str]:
    """Each exercise's number ``"N.E"``: notebook N, its E-th exercise in the notebook's order.

    The order is the report's ``exercise_order`` (the suite's, :func:`grader.judge.proxy.exercise_order`:
    the order of the exercise cells), so an exercise keeps its number when only some are graded;
    exercises it lacks are numbered after, as the tests come (which is that order too:
    :func:`grader.judge.proxy.run_suite` sorts them so).
    """
    number = notebook_number(report.suite or Path(report.path).stem)
    order = list(dict.fromkeys([*report.exercise_order, *report.exercises()]))
    return {name: f"{number}.{index}" for index, name in enumerate(order, start=1)}


def cell_name(failure: CellFailure) -> str:
    """A failing cell as reports name it: ``Cell N/M (`its first line`)``."""
    return f"{failure.cell} (`{failure.line}`)" if failure.line else failure.cell


def _execution_line(report: NotebookReport) -> str:
    execution = report.execution
    if execution is None:
        return "execution: skipped"
    if execution.error:
        return f"execution: {execution.error}"
    line = f"execution: {execution.passed}/{execution.cells} cells ran without error"
    if execution.failures:
        first = execution.failures[0]
        line += f" (first failure, {cell_name(first)}: {first.message}"
        more = len(execution.failures) - 1
        following = sum(bool(f.cause) for f in execution.failures)
        if more:
            line += f"; {more} more failed"
            if following:
                line += f", {following} of them on a name that a failing cell above did not define"
        line += ")"
    return line


def _execution_lines(report: NotebookReport, width: int, verbose: bool) -> list[str]:
    """The execution in the table: one line, or with ``verbose`` every failing cell, each
    followed by the cells that failed because of it."""
    execution = report.execution
    if not verbose or execution is None or execution.error or len(execution.failures) < 2:
        return _wrapped(_execution_line(report), "  ", width)
    lines = _wrapped(f"execution: {execution.passed}/{execution.cells} cells ran without error; "
                     "the cells that failed:", "  ", width)
    for failure in execution.failures:
        if failure.cause:
            continue
        lines += _wrapped(f"{cell_name(failure)}: {failure.message}", "    ", width)
        after = [cell_name(f) for f in execution.failures if f.cause == failure.cell]
        if after:
            lines += _wrapped(f"then, on a name it did not define: {', '.join(after)}", "      ",
                              width)
    return lines


def _wrapped(text: str, indent: str, width: int) -> list[str]:
    """``text`` wrapped (never cut) to ``width`` columns, each line starting with ``indent``."""
    lines = []
    for paragraph in text.strip().splitlines() or [""]:
        lines += textwrap.wrap(paragraph, width=width, initial_indent=indent,
                               subsequent_indent=indent + "  ", break_long_words=False,
                               break_on_hyphens=False) or [indent]
    return lines


def _failing_lines(tests: list[TestResult], width: int, verbose: bool) -> list[str]:
    """What an exercise's failing tests found: each named mistake once, then the first failing
    test (every failing test when ``verbose``), wrapped whole."""
    failing = [t for t in tests if t.status != PASSED]
    if not failing:
        return []
    indent = " " * 6
    lines = []
    for mistake in mistakes(tests):
        lines += _wrapped(f"likely mistake: {mistake}", indent, width)
    for test in failing if verbose else failing[:1]:
        output = without_mistake(test.output)
        head = f"{test.status}: {test.description or test.name}"
        lines += _wrapped(f"{head} -- {output}" if output else head, indent, width)
    hidden = len(failing) - 1
    if hidden and not verbose:
        tests_word = "test" if hidden == 1 else "tests"
        lines += _wrapped(f"(+ {hidden} more failing {tests_word}: `--verbose` lists every failing "
                          "test, `--html FILE` writes a page with all of them)", indent, width)
    return lines


UNCONFINED = "NOT CONFINED"
"""How the first line of every report begins where the learner's code ran without bubblewrap."""


def unconfined_notice(reports: list[NotebookReport]) -> str | None:
    """The first line of every report (the table, ``results.json``'s ``output``, the feedback
    page) where the learner's code ran without bubblewrap's confinement, saying what held
    instead and why; None where it ran confined (or nothing ran)."""
    held = [r.confinement for r in reports
            if r.confinement and not r.confinement.startswith("bubblewrap")]
    return f"{UNCONFINED}: the learner's code ran with {held[0]}" if held else None


def _not_implemented(tests: list[TestResult]) -> bool:
    return all(t.status == NOT_IMPLEMENTED for t in tests)


def _summarised(report: NotebookReport, names: list[str], numbers: dict[str, str]) -> str:
    """One line for the exercises not implemented yet (their numbers, names and points)."""
    groups = report.exercises()
    points = _points(sum(t.max_score for name in names for t in groups[name]))
    if len(names) == len(groups) > 1:
        first, last = names[0], names[-1]
        return (f"not implemented yet: every exercise, {numbers[first]} to {numbers[last]} "
                f"({points} points); start with {numbers[first]} {first}")
    listed = ", ".join(f"{numbers[name]} {name}" for name in names)
    return f"not implemented yet ({points} points): {listed}"


def table(reports: list[NotebookReport], width: int = 100, *, verbose: bool = False) -> str:
    """A plain-text table per notebook and exercise, for people.

    A notebook that could not be graded is one line (why), whatever its length. Exercises are
    numbered and listed in the notebook's order; those not implemented yet share one line, and
    those whose cell failed to load are named under that cell. Under each exercise that lost
    points: each named mistake once with the points it cost, and what the first failing test
    found (every failing test when ``verbose``), wrapped to ``width``, never cut. Which
    confinement held is said once where it is the same for every notebook.
    """
    notice = unconfined_notice(reports)
    lines = [notice] if notice else []  # one line, never wrapped
    held = list(dict.fromkeys(r.confinement for r in reports if r.confinement))
    for report in reports:
        lines.append("=" * width)
        lines.append(f"{report.path}   score {_points(report.score)}/{_points(report.max_score)}")
        if report.error:  # one line, not wrapped: nothing else is said of this notebook
            lines.append(f"  could not be graded: {report.error}")
            continue
        lines += _execution_lines(report, width, verbose)
        if report.confinement and len(held) > 1:
            lines += _wrapped(f"learner code confined by: {report.confinement}", "  ", width)
        groups = report.exercises()
        numbers = exercise_numbers(report)
        for problem in report.load_errors:
            lines += _wrapped(f"cell failed to load: {problem}", "  ", width)
            blocked = [n for n, where in report.blocked.items()
                       if problem.startswith(f"{where}: ") and n in groups]
            if blocked:
                lost = _points(sum(t.max_score for n in blocked for t in groups[n]))
                lines += _wrapped("so no test found " + ", ".join(
                    f"{numbers[n]} {n}" for n in blocked) + f" ({lost} points)", "    ", width)
        todo = [name for name, tests in groups.items()
                if _not_implemented(tests) and name not in report.blocked]
        shown = [name for name in groups if name not in todo and name not in report.blocked]
        if shown:
            name_width = max(len(f"{numbers[name]} {name}") for name in shown) + 2
            lines.append(f"  {'exercise'.ljust(name_width)}{'points':>9}   status")
        for name in shown:
            tests = groups[name]
            score = sum(t.score for t in tests)
            maximum = sum(t.max_score for t in tests)
            status, _ = exercise_status(tests)
            points = f"{_points(score)}/{_points(maximum)}"
            label = f"{numbers[name]} {name}"
            lines.append(f"  {label.ljust(name_width)}{points:>9}   {status}")
            lines += _failing_lines(tests, width, verbose)
        if todo:
            lines += _wrapped(_summarised(report, todo, numbers), "  ", width)
        lines += written.table_lines(report, name_width if shown else 0)
    total = sum(r.score for r in reports)
    maximum = sum(r.max_score for r in reports)
    lines.append("=" * width)
    if len(held) == 1:
        lines += _wrapped(f"learner code confined by: {held[0]}", "", width)
    lines.append(f"Total: {_points(total)}/{_points(maximum)} points over {len(reports)} notebook(s)")
    lines += _wrapped(written.total_line(reports), "", width) if written.total_line(reports) else []
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


def _look_first(report: NotebookReport) -> str:
    """What to look at first in one notebook: the first exercise (in the notebook's order) that
    lost points, with its named mistake or its first failing test; else a failed execution."""
    if report.error:
        return f"it could not be graded: {report.error}"
    numbers = exercise_numbers(report)
    for name, tests in report.exercises().items():
        failing = [t for t in tests if t.status != PASSED]
        if not failing:
            continue
        lost = sum(t.max_score for t in failing)
        named = mistakes(tests)
        first = failing[0]
        what = (f"likely mistake: {named[0].name}" if named
                else f"{first.status}: {first.description or first.name}")
        return f"exercise {numbers[name]} {name} (lost {_points(lost)} points; {what})"
    execution = report.execution
    if execution is not None and not execution.ok:
        return _execution_line(report)
    return ""


HIDDEN_WHEN = {"hidden": "are not shown to you",
               "after_due_date": "are shown after the due date",
               "after_published": "are shown when your instructor publishes the grades"}
"""What a learner reads about the hidden tests' results under each visibility but ``visible``."""


def shows_hidden(hidden_visibility: str) -> bool:
    """Whether a learner sees the hidden tests' results now (Gradescope's ``visible``)."""
    if hidden_visibility not in VISIBILITIES:
        raise ValueError(f"hidden_visibility must be one of {', '.join(VISIBILITIES)}, "
                         f"not {hidden_visibility!r}")
    return hidden_visibility == "visible"


def public_part(report: NotebookReport) -> NotebookReport:
    """``report`` with its public checks only (the execution and the notebook's problems kept):
    what a learner may read while the hidden tests' results are hidden."""
    return dataclasses.replace(report, tests=[t for t in report.tests if t.public])


HIDDEN_DETAILS = {
    "description": "each hidden test by its one-line description, status and points",
    "mistake": "as description, and the catalogued mistake a failing hidden test names",
    "full": "each hidden test's whole message: its inputs, the expected values and a property "
            "test's failing example",
}
"""What a learner reads of the hidden tests in ``results.json`` and on the feedback page (the
instructor's setting ``--hidden-detail``); public checks are always shown whole."""
_CASE_STATUSES = (PASSED, FAILED, ERROR)
"""Statuses whose message comes from a hidden case: what the comparison found, the learner's
exception on a hidden input, a passing test's figures; other statuses' messages are the grader's."""
HIDDEN_DETAIL = "description"
"""The default: hidden tests by their one-line description only (docs/instructors.md)."""


def learner_view(report: NotebookReport, hidden_detail: str = HIDDEN_DETAIL) -> NotebookReport:
    """``report`` as a learner may read it: each hidden test's message cut to what
    ``hidden_detail`` (one of :data:`HIDDEN_DETAILS`) allows. ``"description"`` leaves the
    description, status and points (and the grader's own word where the status is not about a
    case: "timed out", "not implemented", "not submitted"); ``"mistake"`` adds the clause that names a catalogued mistake;
    ``"full"`` changes nothing."""
    if hidden_detail not in HIDDEN_DETAILS:
        raise ValueError(f"hidden_detail must be one of {', '.join(HIDDEN_DETAILS)}, "
                         f"not {hidden_detail!r}")
    if hidden_detail == "full":
        return report

    def shown(test: TestResult) -> TestResult:
        if test.public or test.status not in _CASE_STATUSES:
            return test  # the grader's own word ("not submitted", "timed out", "not implemented")
        name = named_mistake(test.output) if hidden_detail == "mistake" else None
        return dataclasses.replace(test, output=f"{_PHRASE}{name}" if name else "")

    return dataclasses.replace(report, tests=[shown(t) for t in report.tests])


def summary(reports: list[NotebookReport], *, hidden_visibility: str = "visible") -> str:
    """The submission's message: the score per notebook and what to look at first in each.

    Unless ``hidden_visibility`` is ``visible``, nothing in it depends on a hidden test: it gives
    the points of the public checks, looks only at them (and at the execution), and says when
    the hidden tests' results are shown (Gradescope hides the total score meanwhile).
    """
    if not shows_hidden(hidden_visibility):
        lines = [f"Graded {len(reports)} notebook(s); the hidden tests' results "
                 f"{HIDDEN_WHEN[hidden_visibility]}."]
        for report in map(public_part, reports):
            suite = report.suite or Path(report.path).stem
            line = (f"{suite}: public checks {_points(report.score)}/"
                    f"{_points(report.max_score)} points")
            first = _look_first(report)
            lines.append(f"{line}; look first at {first}" if first else f"{line}.")
        return "\n".join(lines)
    total = sum(r.score for r in reports)
    maximum = sum(r.max_score for r in reports)
    lines = [f"Graded {len(reports)} notebook(s): {_points(total)}/{_points(maximum)} points."]
    for report in reports:
        suite = report.suite or Path(report.path).stem
        line = f"{suite}: {_points(report.score)}/{_points(report.max_score)} points"
        first = _look_first(report)
        lines.append(f"{line}; look first at {first}" if first else f"{line}.")
    return "\n".join(lines)


def gradescope(reports: list[NotebookReport], execution_time: float, *,
               hidden_visibility: str = HIDDEN_VISIBILITY, output: str | None = None,
               hidden_detail: str = HIDDEN_DETAIL) -> dict:
    """Gradescope's ``results.json``, with only the keys its specification defines.

    Every test carries ``number`` ``"N.E"`` (notebook N, its E-th exercise in the notebook's
    order; ``"N.0"`` for the notebook's own checks) and ``tags`` ``[exercise]``. Hidden tests get
    ``hidden_visibility``; public checks, execution and notebook problems are ``visible``.
    The total is ``score``; the specification has no top-level ``max_score`` (each test has one).
    The top-level ``output`` is ``output`` if given, else :func:`summary` under
    ``hidden_visibility`` (which then depends on no hidden test unless that is ``visible``),
    followed by a line that says which confinement held for the learner's code
    (:mod:`grader.sandbox.confinement`). Hidden tests' messages are cut to ``hidden_detail``
    (:func:`learner_view`).
    """
    shows_hidden(hidden_visibility)  # raises ValueError on an unknown visibility
    reports = [learner_view(r, hidden_detail) for r in reports]
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
        numbers = exercise_numbers(report)
        for test in report.tests:
            text = f"{test.description}\n{test.output}".strip()
            if test.status != PASSED:
                text = f"{test.description}\n{test.status}: {test.output}".strip().removesuffix(":")
            tests.append({
                "name": _test_name(report, test), "number": numbers[test.exercise],
                "score": test.score, "max_score": test.max_score,
                "status": "passed" if test.status == PASSED else "failed", "output": text,
                "tags": [test.exercise],
                "visibility": "visible" if test.public else hidden_visibility,
            })
    text = output if output is not None else summary(reports, hidden_visibility=hidden_visibility)
    text += "".join(f"\n{line}" for line in written.output_lines(reports))  # in no test's points
    held = list(dict.fromkeys(r.confinement for r in reports if r.confinement))
    if held:  # which confinement held says nothing about the hidden tests: shown at once
        text += "".join(f"\nLearner code confined by: {line}" for line in held)
    notice = unconfined_notice(reports)
    if notice:
        text = f"{notice}\n{text}"
    return {
        "score": sum(r.score for r in reports),
        "execution_time": round(execution_time, 3),
        "output": text,
        "output_format": "text",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def _cell(text: str) -> str:
    """Text safe inside one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _first_problem(tests: list[TestResult], detail: str, limit: int = 300) -> str:
    """``detail`` (:func:`exercise_status`'s) for a table cell: the named mistakes whole, the
    first failing test's text cut to ``limit`` characters."""
    named = "; ".join(f"likely mistake: {m}" for m in mistakes(tests))
    rest = detail[len(named):] if named and detail.startswith(named) else detail
    return named + (rest if len(rest) <= limit else rest[:limit] + " ...")


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
        numbers = exercise_numbers(report)
        lines += ["| exercise | points | status | first problem |", "|---|---:|---|---|"]
        for name, tests in groups.items():
            score = sum(t.score for t in tests)
            maximum_points = sum(t.max_score for t in tests)
            status, detail = exercise_status(tests)
            mark = "✅" if status == PASSED else "❌"
            lines.append(f"| {numbers[name]} `{name}` | {_points(score)}/{_points(maximum_points)} | "
                         f"{mark} {_cell(status)} | {_cell(_first_problem(tests, detail))} |")
        lines.append("")
    for report in reports:  # after the tables: the written answers, which no test scores
        lines += [f"#### `{report.suite}`: written answers", ""] + written.markdown_lines(
            report)[2:] if report.written else []
    waiting = written.total_line(reports)
    return "\n".join(lines + ([waiting, ""] if waiting else []))


def junit(reports: list[NotebookReport]) -> str:
    """JUnit XML: one test suite per notebook, one test case per hidden test, for CI.

    Test cases come in the notebook's order of exercises, each with its exercise's number
    (``"N.E"``, as in :func:`gradescope`) as the property ``number``.
    """
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
        numbers = exercise_numbers(report)
        for test in report.tests:
            case = ElementTree.SubElement(element, "testcase", classname=f"{suite}.{test.exercise}",
                                          name=test.name)
            properties = ElementTree.SubElement(case, "properties")
            ElementTree.SubElement(properties, "property", name="number",
                                   value=numbers[test.exercise])
            if test.status != PASSED:
                ElementTree.SubElement(case, "failure", message=test.status).text = test.output
        written.junit_cases(element, report)
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
