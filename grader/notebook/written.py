"""Written questions: a learner's answer in words, graded by a person with a rubric.

A written question is one markdown cell of a solution notebook with the metadata
``{"tags": ["exercise"], "exercise_kind": "written", "exercise_id": ID, "points": N}`` and the
source::

    **Written question** (`ID`, N points). The question, kept on release.

    ### BEGIN MODEL ANSWER
    The model answer (every number in it is one a stored output of the solution prints).
    ### END MODEL ANSWER
    ### BEGIN RUBRIC
    - 2: what earns these points
    - 1: ...
    ### END RUBRIC

Release (:func:`released_source`) keeps the question and replaces everything from
``### BEGIN MODEL ANSWER`` to ``### END RUBRIC`` with :data:`ANSWER_HEADING` and
:data:`ANSWER_PLACEHOLDER`: the model answer and the rubric never reach a learner's notebook.
:func:`learner_answers` reads the learner's answer back (the cell's text after the heading; a cell
that still holds only the placeholder is empty). :func:`solution_problems` checks a solution's
written cells (rubric points sum to the cell's points; the model answer's numbers are printed by
the notebook's stored outputs). Nothing here grades an answer: that is a person's work
(:mod:`grader.batch.written`).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from grader.errors import GraderError
from grader.results import WrittenAnswer

WRITTEN_KIND = "written"
"""The cell metadata ``exercise_kind`` of a written question."""
BEGIN_MODEL, END_MODEL = "### BEGIN MODEL ANSWER", "### END MODEL ANSWER"
BEGIN_RUBRIC, END_RUBRIC = "### BEGIN RUBRIC", "### END RUBRIC"
MARKERS = (BEGIN_MODEL, END_MODEL, BEGIN_RUBRIC, END_RUBRIC)
ANSWER_HEADING = "**Your answer** (graded by a person, {points} points):"
"""The line release puts where the model answer was: the learner writes below it."""
ANSWER_PLACEHOLDER = ("_Replace this line with your answer, in your own words, quoting the "
                      "numbers your own cells printed._")
"""The line the learner replaces; a cell that still holds only it counts as empty."""
ANSWER_LIMIT = 20_000
"""Characters of an answer kept in a report (a longer one is cut, and says so)."""

_HEADING = re.compile(r"^\s*\*\*Your answer\*\*(?:\s*\([^)\n]*\))?\s*:?[ \t]*(?P<rest>.*)$")
_QUESTION = re.compile(r"^\s*\*\*Written question\*\*\s*\(`(?P<id>\w+)`")
_RUBRIC_ITEM = re.compile(r"^\s*[-*]\s*(?P<points>\d+)\s*:\s*(?P<text>\S.*)$")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d+|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w])")


@dataclass(frozen=True)
class RubricItem:
    """One line of a rubric: what earns ``points``."""

    points: int
    text: str


@dataclass(frozen=True)
class Question:
    """A written question as the solution notebook holds it."""

    id: str
    """Its ``exercise_id`` (snake_case), unique in the notebook."""
    points: int
    """Points it is worth (its cell's ``points``); the rubric's items sum to them."""
    question: str
    """The question's Markdown (what release keeps)."""
    model_answer: str
    """The model answer's Markdown (never released)."""
    rubric: tuple[RubricItem, ...]
    """The rubric's items, in order (never released)."""
    cell: int
    """The cell's index in the notebook (all cells, from 0)."""


def is_written(cell) -> bool:
    """Whether ``cell`` is a written question (a markdown cell of kind ``written``)."""
    return (cell.get("cell_type") == "markdown"
            and cell.get("metadata", {}).get("exercise_kind") == WRITTEN_KIND)


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _between(lines: list[str], begin: str, end: str, where: str) -> tuple[int, int]:
    marks = [line.strip() for line in lines]
    for marker in (begin, end):
        if marks.count(marker) != 1:
            raise GraderError(f"{where}: a written question needs exactly one '{marker}' line "
                              f"(found {marks.count(marker)})")
    first, last = marks.index(begin), marks.index(end)
    if last < first:
        raise GraderError(f"{where}: '{end}' comes before '{begin}'")
    return first, last


def parse_question(cell, where: str, index: int = -1) -> Question:
    """The written question of solution cell ``cell`` (``where`` names the notebook and cell).

    Raises GraderError, naming ``where``, when the metadata lacks an ``exercise_id`` or integer
    ``points``, a marker is missing, repeated or out of order, a rubric line is not ``- N: text``,
    or the rubric's points do not sum to the cell's points."""
    metadata = cell.get("metadata", {})
    qid, points = metadata.get("exercise_id"), metadata.get("points")
    if not isinstance(qid, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", qid):
        raise GraderError(f"{where}: a written question needs the metadata exercise_id, a "
                          f"snake_case name (found {qid!r})")
    if not isinstance(points, int) or isinstance(points, bool) or points <= 0:
        raise GraderError(f"{where}: written question {qid} needs the metadata points, a "
                          f"positive integer (found {points!r})")
    lines = _source(cell).split("\n")
    model = _between(lines, BEGIN_MODEL, END_MODEL, where)
    rubric = _between(lines, BEGIN_RUBRIC, END_RUBRIC, where)
    if rubric[0] < model[1]:
        raise GraderError(f"{where}: the rubric must follow the model answer")
    if any(line.strip() for line in lines[model[1] + 1:rubric[0]]):
        raise GraderError(f"{where}: text between '{END_MODEL}' and '{BEGIN_RUBRIC}'; put it "
                          "in the question or the model answer")
    items = []
    for number, line in enumerate(lines[rubric[0] + 1:rubric[1]], start=rubric[0] + 2):
        if not line.strip():
            continue
        match = _RUBRIC_ITEM.match(line)
        if match is None and items and line[:1] in " \t":  # an item's text, continued
            items[-1] = RubricItem(items[-1].points, f"{items[-1].text} {line.strip()}")
            continue
        if match is None:
            raise GraderError(f"{where}, line {number}: a rubric line reads '- POINTS: what earns "
                              f"them', not {line.strip()[:60]!r}")
        items.append(RubricItem(int(match.group("points")), match.group("text").strip()))
    if sum(item.points for item in items) != points:
        raise GraderError(f"{where}: the rubric of {qid} gives {sum(i.points for i in items)} "
                          f"points, the cell's metadata {points}; make them equal")
    model_answer = "\n".join(lines[model[0] + 1:model[1]]).strip()
    if not model_answer:
        raise GraderError(f"{where}: written question {qid} has an empty model answer")
    after = "\n".join(lines[rubric[1] + 1:]).strip()
    question = "\n".join(lines[:model[0]]).strip() + (f"\n\n{after}" if after else "")
    return Question(qid, points, question, model_answer, tuple(items), index)


def questions(notebook, where: str) -> list[Question]:
    """The written questions of a solution notebook, in order; GraderError for a bad cell or an
    id used twice. A markdown cell with a model answer's markers that is not of kind ``written``
    is an error too (it would ship the answer)."""
    found: list[Question] = []
    for index, cell in enumerate(notebook["cells"]):
        cell_where = f"{where}, cell {index}"
        if is_written(cell):
            found.append(parse_question(cell, cell_where, index))
        elif cell.get("cell_type") == "markdown" and any(
                line.strip() in MARKERS for line in _source(cell).split("\n")):
            raise GraderError(f"{cell_where}: a model answer or rubric in a cell that is not a "
                              "written question; give it the metadata exercise_kind: written")
    seen = [q.id for q in found]
    twice = sorted({q for q in seen if seen.count(q) > 1})
    if twice:
        raise GraderError(f"{where}: written question {twice[0]} is asked twice; give each an "
                          "exercise_id of its own")
    return found


def released_source(question: Question) -> str:
    """The cell's source as learners get it: the question, the answer heading, the placeholder."""
    heading = ANSWER_HEADING.format(points=question.points)
    return f"{question.question}\n\n{heading}\n\n{ANSWER_PLACEHOLDER}"


def answer_text(source: str) -> str:
    """The learner's answer in a released written cell's ``source``: the text after the answer
    heading (the heading's own line included, after its colon), without the placeholder; where
    the heading was deleted, the text after the question's first paragraph. ``""`` when empty."""
    lines = source.split("\n")
    heading = next((i for i in range(len(lines) - 1, -1, -1) if _HEADING.match(lines[i])), None)
    if heading is not None:
        body = [_HEADING.match(lines[heading]).group("rest"), *lines[heading + 1:]]
    else:
        start = next((i for i, line in enumerate(lines) if _QUESTION.match(line)), 0)
        end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
        body = lines[end:]
    body = [line for line in body if line.strip() != ANSWER_PLACEHOLDER
            and line.strip() not in MARKERS]
    return "\n".join(body).strip()


def answer_digest(text: str) -> str:
    """SHA-256 (hex) of an answer with its white space collapsed: a re-wrapped answer keeps it."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def question_id(cell) -> str | None:
    """A written cell's id: its ``exercise_id``, else the one its first line names."""
    qid = cell.get("metadata", {}).get("exercise_id")
    if isinstance(qid, str) and qid:
        return qid
    match = _QUESTION.search(_source(cell))
    return match.group("id") if match else None


def learner_answers(notebook) -> list[WrittenAnswer]:
    """The written answers of a learner's notebook (a dict or NotebookNode), in its order.

    Cells are found by their metadata (``exercise_kind: written``); a cell without an id is
    skipped. Costs one pass over the cells' metadata when the notebook has no written cell."""
    answers = []
    for cell in notebook["cells"]:
        if not is_written(cell):
            continue
        qid = question_id(cell)
        if qid is None:
            continue
        points = cell.get("metadata", {}).get("points", 0)
        text = answer_text(_source(cell))
        if len(text) > ANSWER_LIMIT:
            text = text[:ANSWER_LIMIT] + f"\n\n(cut: {len(text) - ANSWER_LIMIT} more characters)"
        answers.append(WrittenAnswer(
            question=qid, points=float(points) if isinstance(points, (int, float)) else 0.0,
            answered=bool(text), text=text, sha256=answer_digest(text) if text else ""))
    return answers


# -- the solutions' own checks -------------------------------------------------------------------
def _outside_math_and_code(text: str) -> str:
    """``text`` without LaTeX (``$...$``, ``$$...$$``), code spans and citations' years (after
    ``al.`` or a comma): their numbers are notation (an exponent, a formula's constant, a
    version in code) or references, not results."""
    text = re.sub(r"(?:al\.|,)\s*(?:19|20)\d\d\b", " ", text)  # a citation's year
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.DOTALL)
    text = re.sub(r"\$[^$\n]*\$", " ", text)
    return re.sub(r"`[^`\n]*`", " ", text)


def result_numbers(text: str) -> list[str]:
    """The numbers of a model answer that state a result: outside LaTeX and code, with a decimal
    point or at least two digits (a single digit counts things: "2 points", "3 layers")."""
    return [n for n in _NUMBER.findall(_outside_math_and_code(text))
            if "." in n or len(n.lstrip("+-")) >= 2]


def printed_numbers(notebook) -> tuple[set[str], set[float]]:
    """Every number the notebook's stored outputs print (streams and text/plain results), as
    written and as values."""
    texts = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if output.get("output_type") == "stream":
                texts.append(_source({"source": output.get("text", "")}))
            for kind in ("text/plain", "text/markdown", "text/html"):
                data = output.get("data", {}).get(kind)
                if data is not None:
                    texts.append(_source({"source": data}))
    tokens = set(_NUMBER.findall("\n".join(texts)))
    values = set()
    for token in tokens:
        try:
            values.add(float(token))
        except ValueError:
            pass
    return tokens, values


def solution_problems(notebook, where: str) -> list[str]:
    """What is wrong with a solution notebook's written cells, one line each: a bad cell
    (:func:`parse_question`) or a number of a model answer that no stored output prints."""
    try:
        found = questions(notebook, where)
    except GraderError as exc:
        return [str(exc)]
    tokens, values = printed_numbers(notebook)
    problems = []
    for question in found:
        for number in result_numbers(question.model_answer):
            if number in tokens or float(number) in values:
                continue
            problems.append(f"{where}, cell {question.cell}: the model answer of {question.id} "
                            f"says {number}, which no stored output of the notebook prints")
    return problems


# -- model answers for the self-learner ----------------------------------------------------------
PUBLISHED = "model_answers.json"
"""The file of model answers an instructor publishes once the work is due (``python -m grader
written publish``), read by ``check --reveal`` at the course's root."""


def _record(question: Question) -> dict:
    return {"points": question.points, "question": question.question,
            "model_answer": question.model_answer,
            "rubric": [{"points": item.points, "text": item.text} for item in question.rubric]}


def published(solutions, suites: list[str] | None = None) -> dict:
    """The model answers and rubrics of ``solutions/*.ipynb`` (of ``suites``), as the file
    learners get: ``{"format": 1, "model_answers": {suite: {question: {...}}}}``."""
    import json
    from pathlib import Path

    answers = {}
    for path in sorted(Path(solutions).glob("*.ipynb")):
        if suites is None or path.stem in suites:
            found = questions(json.loads(path.read_text()), str(path))
            if found:
                answers[path.stem] = {q.id: _record(q) for q in found}
    return {"format": 1, "model_answers": answers}


def model_answers(*, file=None, root=None) -> tuple[dict | None, str]:
    """The model answers ``check --reveal`` shows, and where they came from: ``file`` (one an
    instructor published), else the course's own ``root/solutions/`` (the course's repository
    holds them; a learner's starter repository does not), else ``root/model_answers.json``;
    ``(None, why)`` where there are none. GraderError for an unreadable file."""
    import json
    from pathlib import Path

    root = Path(root) if root is not None else None
    if file is None and root is not None and (root / "solutions").is_dir():
        return published(root / "solutions")["model_answers"], f"{root / 'solutions'}"
    path = Path(file) if file is not None else (root / PUBLISHED if root is not None else None)
    if path is None or not path.is_file():
        if file is not None:
            raise GraderError(f"--model-answers {file}: no such file; give the file your "
                              "instructor published")
        return None, ("no model answers in this copy of the course: a course's own repository "
                      "holds them in solutions/; in a class, your instructor publishes "
                      f"{PUBLISHED} once the work is due (put it at the course's root, or give "
                      "--model-answers FILE)")
    try:
        data = json.loads(path.read_text())
        return data["model_answers"], str(path)
    except (OSError, ValueError, KeyError, TypeError):
        raise GraderError(f"{path}: not a file of model answers; ask your instructor for the one "
                          "`python -m grader written publish` writes") from None
