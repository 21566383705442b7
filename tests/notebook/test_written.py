"""Written questions: the solution's cell, its release, the learner's answer, the solutions' checks."""
from __future__ import annotations

import json
import time

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from grader.errors import GraderError
from grader.notebook import written
from grader.notebook.release import release, release_notebook
from tests.conftest import NOTEBOOKS, SOLUTIONS

MODEL = "The fitted map's error was 0.0003 at offset 17: PE(pos+k) is a rotation of PE(pos)."
RUBRIC = ("names the rotation (a fixed linear map per offset)", "quotes the printed error")


def written_cell(qid: str = "why_both", points: int = 3, rubric=(2, 1), model: str = MODEL,
                 question: str = "Why sine *and* cosine? Use the error your cell printed."):
    """A solution's written cell in the contract's form."""
    items = "\n".join(f"- {p}: {text}" for p, text in zip(rubric, RUBRIC * 3))
    cell = new_markdown_cell(
        f"**Written question** (`{qid}`, {points} points). {question}\n\n"
        f"{written.BEGIN_MODEL}\n{model}\n{written.END_MODEL}\n"
        f"{written.BEGIN_RUBRIC}\n{items}\n{written.END_RUBRIC}")
    cell.metadata.update({"tags": ["exercise"], "exercise_kind": "written", "exercise_id": qid,
                          "points": points})
    return cell


def solution_notebook(*cells, printed: str = "error 0.0003 at offset 17\n"):
    """A solution notebook: a title, a code cell whose stored output prints ``printed``, then
    ``cells`` (default: one written cell)."""
    code = new_code_cell("print(...)")
    code.outputs = [new_output("stream", name="stdout", text=printed)]
    return new_notebook(cells=[new_markdown_cell("# Demo"), code, *(cells or [written_cell()])])


def answered(notebook, text: str, qid: str = "why_both"):
    """``notebook`` (released) with ``text`` in place of the placeholder of question ``qid``."""
    for cell in notebook.cells:
        if cell.metadata.get("exercise_id") == qid:
            cell.source = cell.source.replace(written.ANSWER_PLACEHOLDER, text)
    return notebook


def test_release_keeps_the_question_and_ships_no_model_answer_or_rubric():
    student = release_notebook(solution_notebook(), "demo.ipynb", "91_demo")
    text = nbformat.writes(student)
    assert "Why sine *and* cosine?" in text and "graded by a person, 3 points" in text
    for secret in (MODEL, *RUBRIC, *written.MARKERS):
        assert secret not in text
    assert student.cells[-1].metadata["exercise_id"] == "why_both"


@pytest.mark.parametrize("problem, cell", [
    ("the rubric of why_both gives 2 points, the cell's metadata 3",
     written_cell(rubric=(1, 1))),
    ("needs exactly one '### BEGIN MODEL ANSWER'", new_markdown_cell("x")),
    ("needs the metadata points", written_cell(points=0)),
])
def test_a_bad_written_cell_stops_release_naming_the_cell(tmp_path, problem, cell):
    if "exercise_kind" not in cell.metadata:
        cell.metadata.update({"exercise_kind": "written", "exercise_id": "why_both",
                              "points": 3})
    nbformat.write(solution_notebook(cell), str(tmp_path / "91_demo.ipynb"))
    with pytest.raises(GraderError, match=r"91_demo.ipynb, cell 2.*" + problem.replace(
            "(", r"\(").replace(")", r"\)")):
        release(source=tmp_path, dest=tmp_path / "out", repository="")


def test_a_model_answer_outside_a_written_cell_is_refused():
    cell = new_markdown_cell(f"Conclusion.\n{written.BEGIN_MODEL}\nsecret\n{written.END_MODEL}")
    with pytest.raises(GraderError, match="not a written question"):
        release_notebook(solution_notebook(cell), "demo.ipynb", "91_demo")


def test_an_answer_that_is_only_the_prompt_is_empty():
    student = release_notebook(solution_notebook(), "demo.ipynb", "91_demo")
    [answer] = written.learner_answers(student)
    assert (answer.question, answer.points, answer.answered, answer.text) == \
        ("why_both", 3.0, False, "")


@pytest.mark.parametrize("edit, expected", [
    (lambda s: s.replace(written.ANSWER_PLACEHOLDER, "A rotation, error 0.0003."),
     "A rotation, error 0.0003."),
    (lambda s: s + "\n\nMore: the map is orthogonal.", "More: the map is orthogonal."),
    (lambda s: s.replace("points):\n", "points): on the heading line.\n")
     .replace(written.ANSWER_PLACEHOLDER, ""), "on the heading line."),
    (lambda s: s.split("\n\n**Your answer**")[0] + "\n\nMy heading went, my answer stayed.",
     "My heading went, my answer stayed."),
])
def test_the_answer_is_the_text_after_the_question(edit, expected):
    student = release_notebook(solution_notebook(), "demo.ipynb", "91_demo")
    student.cells[-1].source = edit(student.cells[-1].source)
    [answer] = written.learner_answers(student)
    assert answer.answered and answer.text == expected
    assert answer.sha256 == written.answer_digest(expected)


def test_a_rewrapped_answer_keeps_its_digest_and_a_changed_one_does_not():
    assert written.answer_digest("a rotation\nof  PE") == written.answer_digest("a rotation of PE")
    assert written.answer_digest("a rotation") != written.answer_digest("a reflection")


def test_solution_checks_pass_a_good_cell_and_name_each_bad_one():
    assert written.solution_problems(solution_notebook(), "demo.ipynb") == []
    unprinted = solution_notebook(written_cell(model="The error was 0.0004 at offset 17."))
    assert written.solution_problems(unprinted, "demo.ipynb") == [
        "demo.ipynb, cell 2: the model answer of why_both says 0.0004, which no stored output "
        "of the notebook prints"]
    summed = solution_notebook(written_cell(rubric=(2, 2)))
    [problem] = written.solution_problems(summed, "demo.ipynb")
    assert "gives 4 points, the cell's metadata 3" in problem


def test_numbers_in_latex_code_and_single_digits_are_not_results():
    assert written.result_numbers("With $10000^{2i/d}$ and `base=500000`, 2 layers gave 0.25 "
                                  "and 31.5 and 12") == ["0.25", "31.5", "12"]
    assert written.result_numbers("RoPE (Su et al., 2021) gave 0.5") == ["0.5"]


def test_a_rubric_item_may_run_on_over_indented_lines():
    cell = written_cell()
    cell.source = cell.source.replace(f"- 1: {RUBRIC[1]}", f"- 1: {RUBRIC[1]},\n  and its offset")
    [question] = written.questions(solution_notebook(cell), "demo.ipynb")
    assert question.rubric[1].text == f"{RUBRIC[1]}, and its offset"


def test_every_written_cell_of_the_solutions_is_sound():
    """Each written cell of solutions/ has a rubric that sums to its points and a model answer
    whose numbers the notebook's stored outputs print (the same check fails on the bad cells
    above)."""
    problems = []
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        problems += written.solution_problems(json.loads(path.read_text()), path.name)
    assert not problems, "\n".join(problems)


def test_no_released_notebook_holds_a_model_answer_or_rubric():
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        released = (NOTEBOOKS / path.name).read_text()
        for question in written.questions(json.loads(path.read_text()), path.name):
            for secret in (question.model_answer, *(i.text for i in question.rubric)):
                assert json.dumps(secret)[1:-1] not in released, (path.name, question.id)
        for marker in written.MARKERS:
            assert marker not in released, path.name


def test_reading_answers_costs_nothing_measurable_without_written_cells():
    """Grading reads the written answers of every notebook: a notebook without any costs one
    pass over its cells' metadata (well under a millisecond for the course's largest)."""
    notebook = json.loads(max(NOTEBOOKS.glob("*.ipynb"), key=lambda p: p.stat().st_size)
                          .read_text())
    if any(written.is_written(c) for c in notebook["cells"]):
        notebook["cells"] = [c for c in notebook["cells"] if not written.is_written(c)]
    start = time.perf_counter()
    for _ in range(100):
        assert written.learner_answers(notebook) == []
    assert (time.perf_counter() - start) / 100 < 1e-3
