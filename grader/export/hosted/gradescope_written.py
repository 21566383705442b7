"""Gradescope's manual questions for the written answers, in the form otter-grader uses: one file
of answers per submission, a page per question in a fixed order, graded with Gradescope's
rubrics in an assignment of its own.

The autograder (:mod:`grader.export.hosted.gradescope`) scores the exercises only: its
``results.json`` leaves the written answers' points out and says so in its ``output``. For the
written part, ``python -m grader written gradescope SUBMISSIONS --out DIR [--pdf]`` writes:

* ``DIR/STUDENT.html`` (and ``DIR/STUDENT.pdf`` with ``--pdf``, printed by a headless Chromium):
  page 1 names the learner (with their name and id where the folder is Gradescope's export of
  the autograded assignment, from its ``submission_metadata.yml``); page K+1 holds written question K (its name, points, the question
  and the learner's answer, or "no answer"), whatever the learner answered, so every file has
  the same pages;
* ``DIR/outline.md``: the outline to enter once in Gradescope (question K on page K+1, its
  points) and each question's rubric items, to create as Gradescope rubric items.

In Gradescope: create an *Exam / Quiz* assignment (instructor uploads) with that outline,
upload the PDFs (Manage Submissions, one per learner; match each to its learner), and grade
each question with its rubric items; Gradescope then publishes the points and comments. The
same pages, graded from files instead, are ``python -m grader written export``'s.
"""
from __future__ import annotations

import shutil
import subprocess
from html import escape
from pathlib import Path

from grader.batch.written_loop import ClassAnswers, class_answers
from grader.errors import GraderError
from grader.notebook.written import Question
from grader.results import WrittenAnswer

ANSWER_LIMIT = 3500
"""Characters of an answer on its page (a longer one is cut, and says so): a page per question
keeps every file's pages in step with the outline."""
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

_CSS = """
@page { size: A4; margin: 18mm; }
body { font: 11pt/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #111; }
section { page-break-after: always; break-after: page; }
h1 { font-size: 18pt; } h2 { font-size: 14pt; margin: 0 0 6pt; }
.question { background: #f3f5f8; padding: 6pt 8pt; border-radius: 4pt; white-space: pre-wrap; }
.answer { white-space: pre-wrap; word-break: break-word; margin-top: 10pt; }
.none { color: #777; font-style: italic; margin-top: 10pt; }
"""


def submitters(submissions: Path) -> dict[str, str]:
    """Folder -> its learners' names and ids, from the ``submission_metadata.yml`` of Gradescope's
    export of a programming assignment's submissions (``{}`` without one)."""
    import yaml

    try:
        data = yaml.safe_load((submissions / "submission_metadata.yml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}
    names = {}
    for folder, entry in data.items() if isinstance(data, dict) else []:
        # Ruby's symbols, as Gradescope writes them: ":submission_1:", ":submitters:", ":name:"
        people = entry.get(":submitters", []) if isinstance(entry, dict) else []
        label = ", ".join(" ".join(str(p.get(k, "")) for k in (":name", ":sid")).strip()
                          for p in people if isinstance(p, dict))
        if label:
            names[str(folder).lstrip(":")] = label
    return names


def submission_page(student: str, questions: dict[str, Question],
                    answers: dict[str, WrittenAnswer], name: str = "") -> str:
    """One learner's file: a cover page (``name``: who, where Gradescope's export says), then a
    page per question in ``questions``' order."""
    who = f"{escape(name)} ({escape(student)})" if name else escape(student)
    sections = [f"<section><h1>Written answers</h1><p>Learner: <strong>{who}"
                f"</strong></p><p>{len(questions)} question(s), one per page.</p></section>"]
    for number, (name, question) in enumerate(questions.items(), start=1):
        answer = answers.get(name)
        if answer is not None and answer.answered:
            text = answer.text
            if len(text) > ANSWER_LIMIT:
                text = text[:ANSWER_LIMIT] + " ... (cut: the rest is in the notebook)"
            body = f'<div class="answer">{escape(text)}</div>'
        else:
            body = '<p class="none">No answer.</p>'
        sections.append(f"<section><h2>Question {number}: {escape(name)} ({question.points} "
                        f'points)</h2><div class="question">{escape(question.question)}</div>'
                        f"{body}</section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>Written answers of {escape(student)}</title>\n<style>{_CSS}</style>\n"
            "</head>\n<body>\n" + "\n".join(sections) + "\n</body>\n</html>\n")


def outline(questions: dict[str, Question]) -> str:
    """The Gradescope outline (Markdown): each question's title, points and page, and its
    rubric items."""
    lines = ["# Gradescope outline of the written questions", "",
             "Create an Exam / Quiz assignment with these questions (page 1 is the learner's "
             "name), then add each question's rubric items (Gradescope's positive scoring).", ""]
    for number, (name, question) in enumerate(questions.items(), start=1):
        lines += [f"## Question {number}: {name} ({question.points} points), page {number + 1}",
                  ""]
        lines += [f"- {item.points} pts: {item.text}" for item in question.rubric]
        lines.append("")
    return "\n".join(lines)


def browser() -> str | None:
    """A Chromium (or Chrome) on the PATH, else None."""
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


def to_pdf(html: Path, pdf: Path, executable: str) -> None:
    """Print ``html`` to ``pdf`` with a headless Chromium; GraderError when it fails."""
    command = [executable, "--headless", "--disable-gpu", "--no-sandbox",
               "--no-pdf-header-footer", f"--print-to-pdf={pdf}", html.resolve().as_uri()]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0 or not pdf.is_file():
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise GraderError(f"{executable} could not print {html} to PDF ({tail[:200]})")


def write(found: ClassAnswers, out: Path, *, pdf: bool = False,
          names: dict[str, str] | None = None) -> list[Path]:
    """Write each learner's file and ``outline.md`` into ``out``; returns the learners' files.
    ``names``: folder -> the learner's name on the cover page (:func:`submitters`)."""
    from grader.report.render import write_text

    executable = browser() if pdf else None
    if pdf and executable is None:
        raise GraderError("--pdf needs Chromium or Chrome on the PATH (e.g. apt-get install "
                          "chromium); without --pdf, print the HTML files to PDF yourself")
    files = []
    for student, answers in sorted(found.answers.items()):
        page = out / f"{student}.html"
        write_text(page, submission_page(student, found.questions, answers,
                                         (names or {}).get(student, "")))
        files.append(page)
        if executable is not None:
            to_pdf(page, out / f"{student}.pdf", executable)
            files.append(out / f"{student}.pdf")
    write_text(out / "outline.md", outline(found.questions))
    return files


def main(*, submissions: Path, out: Path, solutions: Path, flat: bool = False,
         suites: list[str] | None = None, pdf: bool = False, echo=print) -> list[Path]:
    """``python -m grader written gradescope``: read every learner's written answers and write
    the files Gradescope's manual questions are graded from."""
    found = class_answers(submissions, solutions, flat=flat, suites=suites)
    if not found.questions:
        raise GraderError(f"{solutions}: no written question in the solution notebooks")
    files = write(found, out, pdf=pdf, names=submitters(submissions))
    echo(f"{len(found.answers)} learner(s), {len(found.questions)} written question(s): files and "
         f"outline.md written to {out}")
    return files
