"""The instructor's loop for written answers, in files (as nbgrader's formgrader, without a server).

1. ``python -m grader written export SUBMISSIONS --out grades`` (:func:`export`) reads every
   learner's written answers (the layouts of ``batch``), and writes into ``grades/written/``: per
   written question, one HTML page with the question, its rubric and model answer and every
   learner's answer side by side; ``index.html``; ``questions.json`` (what was exported: the
   questions, each answer's SHA-256); and ``grades.csv`` to fill in, a row per learner and
   question (``rubric``: the numbers of the items given, e.g. ``1 3``; or ``points``; a
   ``comment``). Empty answers come filled in with 0; grades imported before come filled in,
   but for an answer changed since it was graded, which says so in ``answer`` and is to be
   graded again.
2. ``python -m grader written import grades/written/grades.csv --out grades`` (:func:`import_csv`)
   checks every row (an unknown learner or question, points over the question's, a rubric item
   it lacks: one line each, and nothing is imported), stores the grades in ``grades/written.json``
   (:mod:`grader.batch.written`) and writes the class's files again from the stored records: the
   gradebook, ``points_possible.csv``, ``canvas.csv`` and each learner's feedback page, with the
   written points and comments. Nothing is graded again.

The model answers and rubrics come from the course's ``solutions/`` (``--solutions``); the
learners' notebooks are read as JSON (no validation, no execution), so exporting and importing a
class of 200 takes seconds (``scripts/benchmark_written.py``).
"""
from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from grader.batch import written as written_grades
from grader.errors import GraderError
from grader.notebook.written import Question, learner_answers, questions
from grader.results import WrittenAnswer

FOLDER = "written"
CSV_NAME = "grades.csv"
EXPORTED = "questions.json"
COLUMNS = ("student_id", "question", "max_points", "answer", "rubric", "points", "comment",
           "answer_sha256")
"""``grades.csv``'s columns; the grader fills ``rubric``, ``points`` and ``comment``."""
CHANGED = "changed since graded"


@dataclass
class ClassAnswers:
    """Every learner's written answers to the course's written questions."""

    questions: dict[str, Question]
    """``SUITE/QUESTION`` -> the question, as ``solutions/`` holds it, in course order."""
    answers: dict[str, dict[str, WrittenAnswer]] = field(default_factory=dict)
    """Learner -> ``SUITE/QUESTION`` -> their answer (a question they did not hand in: absent)."""


def course_questions(solutions: Path, suites: list[str] | None = None) -> dict[str, Question]:
    """``SUITE/QUESTION`` -> each written question of ``solutions/*.ipynb`` (of ``suites``
    only, when given), in course order. GraderError for a bad written cell."""
    if not solutions.is_dir():
        raise GraderError(f"{solutions}: no such folder of solution notebooks; the model answers "
                          "and rubrics come from the course's solutions/ (give --solutions)")
    found = {}
    for path in sorted(solutions.glob("*.ipynb")):
        if suites is not None and path.stem not in suites:
            continue
        try:
            notebook = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise GraderError(f"{path}: not a readable notebook ({exc})") from None
        for question in questions(notebook, str(path)):
            found[written_grades.key(path.stem, question.id)] = question
    return found


def _suite_of(notebook: dict, path: Path, student: str, suites: set[str]) -> str | None:
    named = notebook.get("metadata", {}).get("grader", {}).get("suite")
    for suite in (named, path.stem, path.stem.removeprefix(f"{student}_")):
        if suite in suites:
            return suite
    return None


def class_answers(submissions: Path, solutions: Path, *, flat: bool = False,
                  suites: list[str] | None = None) -> ClassAnswers:
    """Every learner's written answers in ``submissions`` (``batch``'s layouts), matched to the
    written questions of ``solutions``; a learner's newest notebook of a suite counts."""
    from grader.batch.roster import discover

    asked = course_questions(solutions, suites)
    result = ClassAnswers(questions=asked)
    wanted = {name.split("/", 1)[0] for name in asked}
    for student, (_, paths) in discover(submissions, flat=flat).items():
        newest: dict[str, tuple[float, dict]] = {}
        for path in paths:
            try:
                notebook = json.loads(path.read_bytes())
                cells = notebook["cells"]
            except (OSError, ValueError, KeyError, TypeError):
                continue  # unreadable: batch's gradebook says so; no written answer to show
            suite = _suite_of(notebook, path, student, wanted) if isinstance(cells, list) else None
            if suite is None:
                continue
            stamp = path.stat().st_mtime
            if suite not in newest or stamp > newest[suite][0]:
                newest[suite] = (stamp, notebook)
        mine = result.answers.setdefault(student, {})
        for suite, (_, notebook) in sorted(newest.items()):
            for answer in learner_answers(notebook):
                name = written_grades.key(suite, answer.question)
                if name in asked:
                    mine[name] = answer
    return result


# -- the pages ------------------------------------------------------------------------------------
_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2430;
       margin: 20px; background: #fff; }
h1 { font-size: 21px; margin: 0 0 6px; } h2 { font-size: 16px; margin: 14px 0 4px; }
.top { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
.box { border: 1px solid #d8dde6; border-radius: 6px; padding: 8px 12px; background: #fafbfc; }
.model { background: #eef7f0; border-color: #b9dcc2; }
.answers { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 12px;
           margin-top: 14px; }
.card { border: 1px solid #d8dde6; border-radius: 6px; padding: 8px 10px; }
.card h3 { font-size: 14px; margin: 0 0 4px; display: flex; justify-content: space-between; }
.text { white-space: pre-wrap; word-break: break-word; }
.meta { color: #5a6372; font-size: 12px; }
.badge { padding: 1px 7px; border-radius: 9px; font-size: 11px; font-weight: 600; }
.answered { background: #e3ecfb; color: #1f4f9c; } .empty { background: #eceef2; color: #4d5563; }
.changed { background: #fbe0e0; color: #8c1d1d; } .graded { background: #dcf3e2; color: #14642c; }
ol { margin: 4px 0; padding-left: 22px; }
"""


def _page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n{body}\n"
            "</body>\n</html>\n")


def _text(markdown: str) -> str:
    """Markdown shown as it was written (escaped: a learner's answer is never markup)."""
    return f'<div class="text">{escape(markdown)}</div>'


def _rubric(question: Question) -> str:
    items = "".join(f"<li><strong>{item.points}</strong>: {escape(item.text)}</li>"
                    for item in question.rubric)
    return f"<ol>{items}</ol>"


def page_name(name: str) -> str:
    """The file of a question's page: ``SUITE.QUESTION.html``."""
    return name.replace("/", ".") + ".html"


def question_page(name: str, question: Question, answers: dict[str, WrittenAnswer | None],
                  grades: dict[str, dict]) -> str:
    """One question's page: the question, rubric and model answer, then every learner's answer
    side by side (``grades``: learner -> their stored grade of this question, if any)."""
    cards = []
    for student, answer in sorted(answers.items()):
        grade = grades.get(student)
        if answer is None or not answer.answered:
            badge, text = '<span class="badge empty">empty: 0 points</span>', ""
        elif grade is not None and grade.get("sha256") != answer.sha256:
            badge, text = f'<span class="badge changed">{CHANGED}</span>', _text(answer.text)
        elif grade is not None:
            badge = f'<span class="badge graded">graded: {grade["points"]:g}</span>'
            text = _text(answer.text)
        else:
            badge, text = '<span class="badge answered">to grade</span>', _text(answer.text)
        digest = f'<p class="meta">answer_sha256 {answer.sha256[:12]}</p>' \
            if answer is not None and answer.answered else ""
        cards.append(f'<div class="card"><h3>{escape(student)} {badge}</h3>{text}{digest}</div>')
    answered = sum(1 for a in answers.values() if a is not None and a.answered)
    body = (f"<h1>{escape(name)} ({question.points} points)</h1>"
            f'<p class="meta">{answered} of {len(answers)} learners answered; grade in '
            f"{CSV_NAME} (rubric: the numbers of the items given, or points; a comment)</p>"
            f'<div class="top"><div class="box"><h2>Question</h2>{_text(question.question)}'
            f'<h2>Rubric</h2>{_rubric(question)}</div>'
            f'<div class="box model"><h2>Model answer</h2>{_text(question.model_answer)}</div>'
            f'</div><div class="answers">{"".join(cards)}</div>')
    return _page(name, body)


def _index(found: ClassAnswers) -> str:
    rows = []
    for name, question in found.questions.items():
        answered = sum(1 for a in found.answers.values() if name in a and a[name].answered)
        rows.append(f'<li><a href="{escape(page_name(name))}">{escape(name)}</a> '
                    f"({question.points} points): {answered} of {len(found.answers)} answered</li>")
    return _page("Written questions", f"<h1>Written questions</h1><ul>{''.join(rows)}</ul>"
                 f'<p class="meta">Fill in {CSV_NAME}, then run <code>python -m grader written '
                 f"import {FOLDER}/{CSV_NAME} --out .</code> from the class's folder.</p>")


def _csv(found: ClassAnswers, stored: dict) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for name, question in found.questions.items():
        for student in sorted(found.answers):
            answer = found.answers[student].get(name)
            grade = stored["grades"].get(student, {}).get(name)
            digest = answer.sha256 if answer is not None else ""
            if answer is None or not answer.answered:
                writer.writerow([student, name, question.points, "empty", "", 0, "no answer", ""])
                continue
            status = "answered" if grade is None or grade.get("sha256") == digest else CHANGED
            same = grade is not None and status != CHANGED  # a changed answer is graded again
            rubric = " ".join(map(str, grade.get("rubric", []))) if same else ""
            points = f"{grade['points']:g}" if same else ""
            comment = grade.get("comment", "") if grade else ""
            writer.writerow([student, name, question.points, status, rubric, points, comment,
                             digest])
    return buffer.getvalue()


def export(*, submissions: Path, out: Path, solutions: Path, flat: bool = False,
           suites: list[str] | None = None, echo=print) -> ClassAnswers:
    """Write ``out/written/``: a page per written question, ``index.html``, ``grades.csv`` and
    ``questions.json``; returns what was exported. GraderError when there is no written question
    or no learner."""
    from grader.report.render import write_text

    found = class_answers(submissions, solutions, flat=flat, suites=suites)
    if not found.questions:
        raise GraderError(f"{solutions}: no written question (a markdown cell with "
                          "exercise_kind: written) in the solution notebooks")
    stored = written_grades.read(out) or written_grades.empty()
    folder = out / FOLDER
    for name, question in found.questions.items():
        answers = {s: a.get(name) for s, a in found.answers.items()}
        grades = {s: g[name] for s, g in stored["grades"].items() if name in g}
        write_text(folder / page_name(name), question_page(name, question, answers, grades))
    write_text(folder / "index.html", _index(found))
    write_text(folder / CSV_NAME, _csv(found, stored))
    exported = {"format": written_grades.FORMAT,
                "questions": {name: _question_record(q) for name, q in found.questions.items()},
                "answers": {s: {n: {"answered": a.answered, "sha256": a.sha256}
                                for n, a in mine.items()} for s, mine in found.answers.items()}}
    write_text(folder / EXPORTED, json.dumps(exported, indent=1) + "\n")
    echo(f"{len(found.questions)} written question(s), {len(found.answers)} learner(s): pages "
         f"and {CSV_NAME} written to {folder}")
    return found


def _question_record(question: Question) -> dict:
    return {"points": question.points, "question": question.question,
            "rubric": [{"points": i.points, "text": i.text} for i in question.rubric]}


# -- reading the grades back ------------------------------------------------------------------------
def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def read_csv(path: Path, exported: dict) -> tuple[dict[str, dict[str, dict | None]], list[str],
                                                  list[str]]:
    """The grades of a filled ``grades.csv``: learner -> ``SUITE/QUESTION`` -> grade (None: left
    blank), the problems (one line each) and the notes (answers graded that are not the ones
    exported)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise GraderError(f"{path}: cannot read it ({exc.strerror}); give the filled "
                          f"{CSV_NAME}") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in ("student_id", "question", "rubric", "points", "comment")
               if c not in (reader.fieldnames or [])]
    if missing:
        raise GraderError(f"{path}: no column {', '.join(missing)}; fill in the {CSV_NAME} that "
                          "`python -m grader written export` wrote")
    grades: dict[str, dict[str, dict | None]] = {}
    problems, notes = [], []
    for row in reader:
        line = reader.line_num
        student, name = (row.get("student_id") or "").strip(), (row.get("question") or "").strip()
        where = f"{path.name} line {line}"
        question = exported["questions"].get(name)
        if student not in exported["answers"]:
            problems.append(f"{where}: learner {student!r} is not in this export; check the "
                            "student_id, or export again")
            continue
        if question is None:
            problems.append(f"{where}: no written question {name!r}; one of: "
                            f"{', '.join(exported['questions'])}")
            continue
        if name in grades.get(student, {}):
            problems.append(f"{where}: a second row for {student}, {name}; keep one")
            continue
        grade, problem = _grade(row, question, f"{where} ({student}, {name})")
        if problem:
            problems.append(problem)
            continue
        answer = exported["answers"][student].get(name, {})
        digest = (row.get("answer_sha256") or "").strip() or answer.get("sha256", "")
        if grade is not None:
            grade["sha256"] = digest
            if answer.get("answered") and digest != answer.get("sha256"):
                notes.append(f"{student}, {name}: the answer graded is not the one exported "
                             "(its SHA-256 differs); flagged until it is graded again")
        grades.setdefault(student, {})[name] = grade
    return grades, problems, notes


def _grade(row: dict, question: dict, where: str) -> tuple[dict | None, str]:
    """One row's grade (None: left blank) or the reason it is wrong."""
    points_text = (row.get("points") or "").strip()
    rubric_text = (row.get("rubric") or "").strip()
    maximum = question["points"]
    ticked = []
    for token in re.split(r"[\s,;]+", rubric_text) if rubric_text else []:
        number = int(token) if token.isdigit() else 0
        if not 1 <= number <= len(question["rubric"]):
            return None, (f"{where}: rubric item {token!r} does not exist; give the numbers of "
                          f"items 1 to {len(question['rubric'])}")
        ticked.append(number)
    if len(set(ticked)) < len(ticked):
        return None, f"{where}: a rubric item is given twice ({rubric_text})"
    if points_text:
        points = _number(points_text)
        if points is None:
            return None, f"{where}: points {points_text!r} is not a number"
    elif ticked:
        points = float(sum(question["rubric"][i - 1]["points"] for i in ticked))
    else:
        return None, ""
    if points < 0 or points > maximum:
        return None, f"{where}: {points:g} points, over the question's {maximum} (or below 0)"
    return {"points": points, "rubric": sorted(ticked),
            "comment": (row.get("comment") or "").strip()}, ""


def import_csv(*, csv_path: Path, out: Path, echo=print) -> dict:
    """Read the filled ``csv_path`` into ``out/written.json`` and write the class's files again
    (gradebook, points possible, Canvas file, feedback pages) from the stored records; returns
    the written grades. GraderError, one line per problem, when a row is wrong: nothing is
    imported then."""
    exported_path = csv_path.parent / EXPORTED
    try:
        exported = json.loads(exported_path.read_text())
    except (OSError, ValueError):
        raise GraderError(f"{exported_path}: missing or unreadable; import the {CSV_NAME} from "
                          "the folder `python -m grader written export` wrote") from None
    grades, problems, notes = read_csv(csv_path, exported)
    if problems:
        raise GraderError(f"{len(problems)} problem(s) in {csv_path}; nothing was imported:\n"
                          + "\n".join(problems))
    data = written_grades.read(out) or written_grades.empty()
    for name, question in exported["questions"].items():
        data["questions"][name] = {"points": question["points"], "rubric": question["rubric"]}
    for student, rows in grades.items():
        mine = data["grades"].setdefault(student, {})
        for name, grade in rows.items():
            if grade is None:
                mine.pop(name, None)
            else:
                mine[name] = grade
    data["grades"] = {s: g for s, g in data["grades"].items() if g}
    written_grades.write(out, data)
    for note in notes:
        echo(note)
    given = sum(len(g) for g in data["grades"].values())
    echo(f"{given} written grade(s) of {len(data['grades'])} learner(s) stored in "
         f"{out / written_grades.GRADES}")
    rewrite_class(out, echo=echo)
    return data


def rewrite_class(out: Path, *, echo=print) -> None:
    """Write the class's files and every learner's feedback page again from the stored records
    and written grades, grading nothing (the class options are those of the last ``batch`` or
    ``merge`` into ``out``)."""
    from grader.batch.class_files import CLASS, roster_from_record, write_class
    from grader.batch.gradebook import full_reports, read_record
    from grader.report import feedback
    from grader.report.render import write_text

    try:
        stored = json.loads((out / CLASS).read_text())
    except (OSError, ValueError):
        echo(f"no class files in {out} yet: run `python -m grader batch ... --out {out}` (or "
             "merge), which writes them with the written grades")
        return
    points, options = stored["points"], stored["class_options"]
    data = written_grades.read(out)
    records = [r for r in (read_record(out, p.name) for p in sorted(out.iterdir()) if p.is_dir())
               if r is not None]
    for record in records:
        write_text(out / record["student_id"] / "feedback.html", feedback.render(
            full_reports(record, points), title=f"Feedback for {record['student_id']}",
            student_id=record["student_id"], grading_status=record["grading_status"],
            notes=record.get("notes", []), lateness=record.get("lateness"),
            written=written_grades.learner_grades(data, record)))
    write_class(out, records, points, people=roster_from_record(options["roster"]),
                class_options=options, echo=echo)
    echo(f"gradebook and {len(records)} feedback page(s) written again in {out}")


# -- model answers, once the work is due ------------------------------------------------------------
def publish(*, out: Path, solutions: Path, suites: list[str] | None = None,
            due: str | None = None, now=None, echo=print) -> dict:
    """Write the model answers and rubrics of ``solutions`` (of ``suites``) to ``out`` for
    learners' ``check --reveal``; with ``due``, refuse before that time (the model answers
    follow the hidden tests' results: shown after the due date)."""
    from datetime import datetime, timezone

    from grader.batch.deadlines import parse_time
    from grader.notebook.written import published
    from grader.report.render import write_text

    if due is not None:
        at = parse_time(due)
        now = now or datetime.now(timezone.utc)
        if now < at:
            raise GraderError(f"--due {due}: the work is not due yet; publish the model answers "
                              "after the due date, as the hidden tests' results are shown")
    if not solutions.is_dir():
        raise GraderError(f"{solutions}: no such folder of solution notebooks")
    data = published(solutions, suites)
    count = sum(len(q) for q in data["model_answers"].values())
    if not count:
        raise GraderError(f"{solutions}: no written question to publish")
    write_text(out, json.dumps(data, indent=1) + "\n")
    echo(f"{count} model answer(s) written to {out}: learners put it at the course's root and "
         "run `python3 course.py grade --reveal`")
    return data
