"""What every report says about written answers: answered or empty, and never a score.

A written answer (:class:`grader.results.WrittenAnswer`) is graded by a person with a rubric
(:mod:`grader.batch.written`); the grader only says whether there is one to grade. Each renderer
of :mod:`grader.report.render` and :mod:`grader.report.feedback` calls the function here that
fits it; a report without written answers gets nothing from this module, so its output is as
before.
"""
from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from html import escape

from grader.results import NotebookReport, WrittenAnswer

AWAITING = "awaiting grading"
EMPTY = "empty"


def _points(value: float) -> str:
    return f"{value:g}"


def status(answer: WrittenAnswer) -> str:
    """``awaiting grading (N points)``, or ``empty (0 of N points)``."""
    if answer.answered:
        return f"{AWAITING} ({_points(answer.points)} points)"
    return f"{EMPTY} (0 of {_points(answer.points)} points)"


def numbers(report: NotebookReport) -> dict[str, str]:
    """Each written question's number ``N.wK``: notebook N, its K-th written question."""
    from grader.report.render import notebook_number

    number = notebook_number(report.suite or "")
    return {a.question: f"{number}.w{k}" for k, a in enumerate(report.written, start=1)}


def totals(reports: list[NotebookReport]) -> tuple[float, int, float, int]:
    """Points awaiting a person and answers awaiting, points and answers left empty."""
    answers = [a for r in reports for a in r.written]
    waiting = [a for a in answers if a.answered]
    empty = [a for a in answers if not a.answered]
    return (sum(a.points for a in waiting), len(waiting), sum(a.points for a in empty),
            len(empty))


def total_line(reports: list[NotebookReport]) -> str:
    """The line after the total: how many points await a person (``""`` without written
    answers)."""
    if not any(r.written for r in reports):
        return ""
    waiting, answered, empty, blank = totals(reports)
    line = (f"Written answers: {_points(waiting)} points await grading by a person "
            f"({answered} answer{'s' if answered != 1 else ''}), not in the total above")
    if blank:
        line += (f"; {blank} empty (0 of {_points(empty)} points: write your answer below "
                 "\"Your answer\" in the question's cell)")
    return line


def table_lines(report: NotebookReport, name_width: int) -> list[str]:
    """The terminal table's rows for a notebook's written answers."""
    if not report.written:
        return []
    numbered = numbers(report)
    if not any(a.answered for a in report.written):  # none written yet: one line, as the exercises
        first, last = numbered[report.written[0].question], numbered[report.written[-1].question]
        span = first if first == last else f"{first} to {last}"
        points = _points(sum(a.points for a in report.written))
        return [f"  written answers (graded by a person): none written yet, {span} ({points} points)"]
    width = max([name_width] + [len(f"{numbered[a.question]} {a.question}") + 2
                                for a in report.written])
    lines = ["  written answers (graded by a person, not in the score above)"]
    for answer in report.written:
        label = f"{numbered[answer.question]} {answer.question}"
        points = f"-/{_points(answer.points)}" if answer.answered else \
            f"0/{_points(answer.points)}"
        lines.append(f"  {label.ljust(width)}{points:>9}   {status(answer)}")
    return lines


def output_lines(reports: list[NotebookReport]) -> list[str]:
    """Lines for ``results.json``'s ``output``: each written answer's status, and that their
    points are in no test (Gradescope's manual questions grade them)."""
    lines = []
    for report in reports:
        for answer in report.written:
            lines.append(f"{report.suite}: written answer {answer.question}: {status(answer)}")
    line = total_line(reports)
    return ([line.replace("not in the total above", "not in this score")] + lines) if line else []


def markdown_lines(report: NotebookReport) -> list[str]:
    """A Markdown table of a notebook's written answers (``[]`` without any)."""
    if not report.written:
        return []
    numbered = numbers(report)
    lines = ["Written answers (graded by a person, not in this score):", "",
             "| question | points | status |", "|---|---:|---|"]
    for answer in report.written:
        mark = "⏳" if answer.answered else "➖"
        points = f"-/{_points(answer.points)}" if answer.answered else f"0/{_points(answer.points)}"
        lines.append(f"| {numbered[answer.question]} `{answer.question}` | {points} | "
                     f"{mark} {status(answer)} |")
    return lines + [""]


def junit_cases(element: ElementTree.Element, report: NotebookReport) -> None:
    """Add a skipped test case per written answer to a notebook's ``testsuite`` element (a person
    grades it; CI has nothing to pass or fail)."""
    if not report.written:
        return
    suite = element.get("name", "")
    for answer in report.written:
        case = ElementTree.SubElement(element, "testcase", classname=f"{suite}.written",
                                      name=answer.question)
        ElementTree.SubElement(case, "skipped", message=status(answer))
    element.set("tests", str(int(element.get("tests", "0")) + len(report.written)))
    element.set("skipped", str(len(report.written)))


def html_rows(report: NotebookReport, grades: dict | None = None) -> str:
    """The feedback page's section on a notebook's written answers: each one's status, or,
    once graded (``grades``: question -> :func:`grader.batch.written.learner_grades`' entry),
    its points, the rubric items given and the grader's comment."""
    if not report.written:
        return ""
    numbered = numbers(report)
    rows = ['<h3>Written answers</h3>', '<table><tr><th>question</th><th>points</th>'
            '<th>status</th></tr>']
    for answer in report.written:
        grade = (grades or {}).get(answer.question)
        detail = ""
        if grade is not None and grade.get("points") is not None:
            points = f"{_points(grade['points'])}/{_points(grade['max_points'])}"
            label = "graded"
            if grade.get("changed"):
                label = "graded; your answer changed after it was graded"
            kind = "ok" if not grade.get("changed") else "bad"
            items = "".join(f"<li>{escape(item)}</li>" for item in grade.get("rubric_items", []))
            if items:
                detail += f'<ul class="rubric">{items}</ul>'
            if grade.get("comment"):
                detail += f'<p class="comment">Comment: {escape(grade["comment"])}</p>'
        else:
            points = f"-/{_points(answer.points)}" if answer.answered else \
                f"0/{_points(answer.points)}"
            label, kind = status(answer), "off" if answer.answered else "bad"
        rows.append(f'<tr class="exercise"><td>{escape(numbered[answer.question])} '
                    f'{escape(answer.question)}{detail}</td><td class="points">{points}</td>'
                    f'<td><span class="badge {kind}">{escape(label)}</span></td></tr>')
    return "\n".join(rows) + "</table>"


def _indented(text: str, indent: str = "    ", width: int = 100) -> list[str]:
    """``text``'s lines wrapped to ``width`` columns (never cut), each after ``indent``."""
    import textwrap

    lines = []
    for line in text.strip().splitlines():
        lines += textwrap.wrap(line, width=width, initial_indent=indent, subsequent_indent=indent,
                               break_long_words=False, break_on_hyphens=False) or [""]
    return lines


def reveal(reports: list[NotebookReport], answers: dict | None, source: str) -> str:
    """``check --reveal``: each written answer the learner wrote, beside the model answer and
    the rubric, to mark it themselves; an empty answer gets neither (write yours first).

    ``answers``: suite -> question -> ``{"model_answer", "rubric": [{"points", "text"}], ...}``
    (:func:`grader.notebook.written.model_answers`), or None, where ``source`` says why."""
    written = [(r, a) for r in reports for a in r.written]
    if not written:
        return "Written answers: none in these notebooks."
    if answers is None:
        return f"Written answers: not revealed: {source}."
    lines = [f"Written answers beside the model answers (from {source}):",
             "mark yours with the rubric; a person's grade may differ."]
    for report, answer in written:
        label = f"{numbers(report)[answer.question]} {answer.question}"
        model = (answers.get(report.suite or "") or {}).get(answer.question)
        lines += ["", "-" * 100, f"{label} ({_points(answer.points)} points)"]
        if not answer.answered:
            lines += ["  empty: write your answer below \"Your answer\" in the question's cell "
                      "first;", "  its model answer is shown only beside an answer of yours"]
            continue
        if model is None:
            lines.append(f"  no model answer for it in {source}")
            continue
        lines += ["  Your answer:", *_indented(answer.text), "  Model answer:",
                  *_indented(model["model_answer"]), "  Rubric:"]
        lines += [f"    - {item['points']}: {item['text']}" for item in model["rubric"]]
    return "\n".join(lines)
