"""The feedback page: one self-contained HTML file per learner, rendered from report records.

Inline CSS only: no scripts, no external links or fonts, so the page opens anywhere (a mail
attachment, an LMS upload, a file on disk). Every text that the learner's code could influence
(exception messages, printed output, file names) is cut to a bounded size and HTML-escaped, so
the page stays small (under :data:`PAGE_LIMIT`) whatever the learner printed. Hidden tests appear
by their one-line description only (the instructor's ``hidden_detail`` may show more of their
messages: :data:`grader.report.render.HIDDEN_DETAILS`), never by their source; while their results
are not to be shown (``hidden_visibility`` other than ``visible``), the page holds the public
checks only.
"""
from __future__ import annotations

from html import escape
from pathlib import Path

from grader.report.render import (HIDDEN_DETAIL, HIDDEN_WHEN, exercise_numbers, exercise_status,
                                  learner_view, mistakes, public_part, shows_hidden,
                                  unconfined_notice, without_mistake)
from grader.report.render import cell_name
from grader.report import written as written_answers
from grader.results import PASSED, NotebookReport, TestResult

TEXT_LIMIT = 2000
"""Characters kept of any one learner-influenced text (a test's feedback, a cell's error)."""
PAGE_LIMIT = 1_000_000
"""Upper bound on the page's size in bytes."""
NOT_SUBMITTED = "not submitted"
"""Status of the tests of a notebook that the learner did not hand in."""
_TEXT_BUDGET = 500_000
"""Escaped characters of learner-influenced text on one page; later texts become a note."""

_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2430;
       max-width: 980px; margin: 24px auto; padding: 0 16px; background: #fff; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 28px 0 6px; padding-top: 10px; border-top: 2px solid #d8dde6; }
.total { font-size: 20px; margin: 6px 0 14px; }
.meta, .file { color: #5a6372; font-size: 13px; }
.status-line { margin: 4px 0; }
table { border-collapse: collapse; width: 100%; margin: 8px 0 4px; }
th, td { text-align: left; vertical-align: top; padding: 5px 8px; border-bottom: 1px solid #e4e7ec; }
th { background: #f3f5f8; font-weight: 600; font-size: 13px; }
td.points { white-space: nowrap; text-align: right; font-variant-numeric: tabular-nums; width: 5em; }
tr.exercise td { background: #fafbfc; font-weight: 600; border-top: 1px solid #c9ced8; }
td.test { padding-left: 24px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px;
         font-weight: 600; white-space: nowrap; }
.badge.long { white-space: normal; border-radius: 6px; }
.ok { background: #dcf3e2; color: #14642c; }
.bad { background: #fbe0e0; color: #8c1d1d; }
.off { background: #eceef2; color: #4d5563; }
pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0 0; padding: 6px 8px;
      background: #f6f7f9; border-left: 3px solid #d05a5a; font-size: 12.5px; }
h3 { font-size: 16px; margin: 16px 0 4px; }
ul.rubric { margin: 4px 0 0 8px; font-weight: normal; }
p.comment { margin: 4px 0 0; font-weight: normal; font-style: italic; }
"""


class _Budget:
    """Cuts and escapes learner-influenced text, within a per-text and a per-page allowance."""

    def __init__(self, total: int = _TEXT_BUDGET) -> None:
        self.left = total

    def __call__(self, text: str, limit: int = TEXT_LIMIT) -> str:
        text = text.strip()
        if len(text) > limit:
            text = text[:limit] + f" ... (cut: {len(text) - limit} more characters)"
        escaped = escape(text)
        if len(escaped) > self.left:
            escaped = "(cut: this page's size limit was reached)"
        self.left -= len(escaped)
        return escaped


def _points(value: float) -> str:
    return f"{value:g}"


def _badge(status: str, label: str | None = None) -> str:
    """A coloured status label; ``label`` is already-escaped HTML (default: the status)."""
    kind = "ok" if status in (PASSED, "ok") else "off" if status.startswith(NOT_SUBMITTED) else "bad"
    label = escape(status) if label is None else label
    return f'<span class="badge {kind}{" long" if len(label) > 60 else ""}">{label}</span>'


def _execution(report: NotebookReport, text: _Budget) -> str:
    execution = report.execution
    if execution is None:
        return ""
    if execution.error:
        return f'<p class="status-line">Running the notebook: {text(execution.error)}</p>'
    line = (f'<p class="status-line">Running the notebook top to bottom: {execution.passed} of '
            f'{execution.cells} code cells ran without an error.</p>')
    causes = [failure for failure in execution.failures if not failure.cause]
    for failure in causes[:5]:
        line += f"<pre>{text(cell_name(failure), 100)}: {text(failure.message)}</pre>"
        after = [cell_name(f) for f in execution.failures if f.cause == failure.cell]
        if after:
            line += (f'<p class="meta">then, on a name it did not define: '
                     f'{text(", ".join(after), 300)}</p>')
    if len(causes) > 5:
        line += f'<p class="meta">... and {len(causes) - 5} more cells failed.</p>'
    return line


def _test_row(test: TestResult, text: _Budget, said: str | None, named: bool = False) -> str:
    """A test's row; when its exercise's named mistakes are said above (``named``), its feedback
    comes without its own naming of one."""
    kind = "public check" if test.public else "hidden test"
    description = escape(test.description) if test.description else f"a {kind}"
    detail = ""
    output = without_mistake(test.output) if named else test.output
    if test.status != PASSED and output and test.output != said:
        detail = f"<pre>{text(output)}</pre>"
    return (f'<tr><td class="test">{description} <span class="meta">({kind})</span>{detail}</td>'
            f'<td class="points">{_points(test.score)}/{_points(test.max_score)}</td>'
            f"<td>{_badge(test.status)}</td></tr>")


def _notebook(report: NotebookReport, text: _Budget, written: dict | None = None) -> str:
    suite = escape(report.suite or Path(report.path).stem)
    parts = [f'<h2 id="{suite}">{suite} &mdash; {_points(report.score)}/'
             f'{_points(report.max_score)} points</h2>']
    if report.path:
        parts.append(f'<p class="file">{text(report.path, 300)}</p>')
    if report.error:
        parts.append(f'<p class="status-line">{_badge(report.error, text(report.error, 300))}</p>')
    if report.tests and all(t.status == NOT_SUBMITTED for t in report.tests):
        return "\n".join(parts)  # nothing more to say about a notebook that was not handed in
    parts.append(_execution(report, text))
    for problem in report.load_errors[:5]:
        parts.append(f"<pre>a cell failed to load: {text(problem)}</pre>")
    # a person's grades and comments first: the written answers, then the tests' table
    parts.append(written_answers.html_rows(report, (written or {}).get(report.suite or "")))
    if report.tests:
        parts.append('<table><tr><th>exercise / test</th><th>points</th><th>status</th></tr>')
        numbers = exercise_numbers(report)
        for exercise, tests in report.exercises().items():
            status, _ = exercise_status(tests)
            score = sum(t.score for t in tests)
            maximum = sum(t.max_score for t in tests)
            parts.append(f'<tr class="exercise"><td>{escape(numbers[exercise])} '
                         f'{escape(exercise)}</td>'
                         f'<td class="points">{_points(score)}/{_points(maximum)}</td>'
                         f"<td>{_badge(status)}</td></tr>")
            named = mistakes(tests)
            parts += [f'<tr class="mistake"><td class="test">Likely mistake: '
                      f'<strong>{text(m.name, 600)}</strong></td>'
                      f'<td class="points">&minus;{_points(m.points)}</td>'
                      f'<td class="meta">named by {m.tests} test{"s" if m.tests > 1 else ""}</td>'
                      f"</tr>" for m in named]
            parts += [_test_row(test, text, report.error, bool(named)) for test in tests]
        parts.append("</table>")
    return "\n".join(p for p in parts if p)


def _overview(reports: list[NotebookReport]) -> str:
    rows = ['<table><tr><th>notebook</th><th>points</th><th>status</th></tr>']
    for report in reports:
        suite = escape(report.suite or Path(report.path).stem)
        if report.tests and all(t.status == NOT_SUBMITTED for t in report.tests):
            status = NOT_SUBMITTED
        elif report.error:
            status = "could not be graded"
        else:
            failing = sum(t.status != PASSED for t in report.tests)
            status = PASSED if not failing else f"{failing} of {len(report.tests)} tests failed"
        rows.append(f'<tr><td><a href="#{suite}">{suite}</a></td>'
                    f'<td class="points">{_points(report.score)}/{_points(report.max_score)}</td>'
                    f"<td>{_badge(status)}</td></tr>")
    return "\n".join(rows) + "</table>"


def _written_line(reports: list[NotebookReport], written: dict | None, total: float,
                  maximum: float) -> str:
    """The page's line on written answers: the points a person gave (and the total with them),
    else the points that await a person."""
    if not any(r.written for r in reports):
        return ""
    grades = {(r.suite, a.question): (written or {}).get(r.suite or "", {}).get(a.question)
              for r in reports for a in r.written}
    given = [g for g in grades.values() if g is not None and g.get("points") is not None]
    if not given:
        return written_answers.total_line(reports).replace("not in the total above",
                                                           "not in the points above")
    points = sum(g["points"] for g in given)
    possible = sum((grades[(r.suite, a.question)] or {}).get("max_points", a.points)
                   for r in reports for a in r.written)  # the course's points, once graded
    left = len(grades) - len(given)
    return (f"Written answers, graded by a person: {points:g}/{possible:g} points; total with "
            f"them: {total + points:g}/{maximum + possible:g} points"
            + (f" ({left} answer{'s' if left != 1 else ''} still awaiting grading)" if left else ""))


def _lateness(lateness: dict, total: float, maximum: float) -> list[str]:
    """The feedback page's lines on the deadline: hand-in time, lateness, penalty, total after."""
    handed = lateness.get("submitted_at")
    due = escape(str(lateness["due"]))
    if handed is None:
        return [f'<p class="meta">Due: {due}; nothing handed in</p>']
    days, penalty = int(lateness["days_late"]), float(lateness["penalty_percent"])
    when = (f'<p class="meta">Handed in: {escape(handed)} ({escape(lateness["source"])}); due: '
            f'{due}; ' + (f"{days} day{'s' if days != 1 else ''} late" if days else "on time")
            + "</p>")
    if not days:
        return [when]
    after = round(total * (1 - penalty / 100), 4)
    share = f" ({100 * after / maximum:.1f}%)" if maximum else ""
    return [when, f'<p class="total"><strong>Late penalty: {_points(penalty)}%; total after the '
                  f"penalty: {_points(after)}/{_points(maximum)} points</strong>{share}</p>"]


def render(reports: list[NotebookReport], *, title: str = "Feedback", student_id: str | None = None,
           grading_status: str | None = None, notes: list[str] | tuple[str, ...] = (),
           lateness: dict | None = None, hidden_visibility: str = "visible",
           hidden_detail: str = HIDDEN_DETAIL, written: dict | None = None) -> str:
    """The feedback page for one learner's reports, as a self-contained HTML document.

    ``lateness`` (:func:`grader.batch.deadlines.to_dict`) adds when the work was handed in and due,
    how many days late, the late penalty and the total after it. Unless ``hidden_visibility``
    (Gradescope's setting, :data:`grader.report.render.VISIBILITIES`) is ``visible``, nothing on the page
    depends on a hidden test: it shows the public checks and the execution only, their points
    instead of the total, and says when the rest is shown. Hidden tests' messages are cut to
    ``hidden_detail`` (:func:`grader.report.render.learner_view`). ``written`` (suite -> question ->
    :func:`grader.batch.written.learner_grades`' entry) adds each written answer's points, rubric
    items and comment, and their total; without it, each written answer says it awaits grading.
    """
    reports = [learner_view(report, hidden_detail) for report in reports]
    text = _Budget()
    label = "Total"
    if not shows_hidden(hidden_visibility):
        reports = [public_part(report) for report in reports]
        label = "Public checks"
        notes = [*notes, f"the hidden tests' results {HIDDEN_WHEN[hidden_visibility]}; the points "
                         "on this page are the public checks'."]
    total = sum(r.score for r in reports)
    maximum = sum(r.max_score for r in reports)
    percent = f" ({100 * total / maximum:.1f}%)" if maximum else ""
    head = [f"<h1>{escape(title)}</h1>"]
    notice = unconfined_notice(reports)
    if notice:
        head.insert(0, f'<p class="status-line"><strong>{escape(notice)}</strong></p>')
    if student_id:
        head.append(f'<p class="meta">Learner: {escape(student_id)}</p>')
    head.append(f'<p class="total"><strong>{label}: {_points(total)}/{_points(maximum)} points'
                f"</strong>{percent}</p>")
    line = _written_line(reports, written, total, maximum)
    if line:
        head.append(f'<p class="status-line">{escape(line)}</p>')
    if lateness is not None:
        head += _lateness(lateness, total, maximum)
    if grading_status:
        label = _badge(grading_status, text(grading_status, 600))
        head.append(f'<p class="status-line">Grading: {label}</p>')
    for note in notes:
        head.append(f'<p class="meta">Note: {text(note, 600)}</p>')
    body = head + [_overview(reports)] + [_notebook(report, text, written) for report in reports]
    page = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
    return page


def write(path: Path, reports: list[NotebookReport], **kwargs) -> None:
    """Write the feedback page for ``reports`` to ``path`` (see :func:`render`)."""
    from grader.report.render import write_text

    write_text(path, render(reports, **kwargs))
