"""The written answers' loop, on the command line: a class of three (two different answers, one
empty) is graded, its answers exported side by side, graded in the CSV, imported into the
gradebook, the Canvas file and the feedback pages, kept by a regrade, flagged when an answer
changes; the Gradescope files hold a page per question; a learner sees the model answer only
beside an answer of their own."""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from grader.batch import written_loop
from grader.export.hosted import classroom
from grader.errors import GraderError
from grader.notebook import written
from grader.notebook.release import release_notebook
from tests.conftest import ROOT, SOLUTIONS
from tests.notebook.test_written import RUBRIC, written_cell

NB1 = "01_permutation_invariance"
QUESTION = f"{NB1}/why_equivariant"
ANSWERS = {"ada": "Attention sees a set: permuting the tokens permuted the outputs.",
           "bob": "Because of the softmax.", "cyd": None}
MODEL = "Permuting the inputs permuted the outputs: attention has no notion of order."


def course(base: Path) -> tuple[Path, Path]:
    """A copy of notebook 01's solution with a written question (``base/solutions``), and the
    class's submissions of its released version (``base/submissions``)."""
    solution = nbformat.read(str(SOLUTIONS / f"{NB1}.ipynb"), 4)
    solution.cells.insert(1, written_cell("why_equivariant", 3, model=MODEL))
    (base / "solutions").mkdir(parents=True)
    nbformat.write(solution, str(base / "solutions" / f"{NB1}.ipynb"))
    released = nbformat.writes(release_notebook(solution, "01", NB1))
    for student, text in ANSWERS.items():
        answer(base / "submissions" / student / f"{NB1}.ipynb", released, text)
    return base / "solutions", base / "submissions"


def answer(path: Path, released: str, text: str | None) -> None:
    notebook = nbformat.reads(released, 4)
    if text is not None:
        notebook.cells[1].source = notebook.cells[1].source.replace(written.ANSWER_PLACEHOLDER,
                                                                    text)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, str(path))


def grader(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *map(str, args)], cwd=ROOT, text=True,
                          capture_output=True, timeout=600)


def rows(path: Path) -> dict[str, dict[str, str]]:
    return {row["student_id"]: row for row in csv.DictReader(io.StringIO(path.read_text()))}


def fill(grades_csv: Path, filled: dict[str, tuple[str, str, str]]) -> None:
    """Fill ``grades.csv`` as a grader does: learner -> (rubric items, points, comment)."""
    table = list(csv.DictReader(io.StringIO(grades_csv.read_text())))
    for row in table:
        if row["student_id"] in filled:
            row["rubric"], row["points"], row["comment"] = filled[row["student_id"]]
    with open(grades_csv, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=written_loop.COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(table)


@pytest.mark.slow
def test_a_class_of_three_goes_round_the_written_loop(tmp_path, hidden_points):
    solutions, submissions = course(tmp_path)
    out = tmp_path / "grades"
    out.mkdir()
    shutil.copy(hidden_points, out)
    (tmp_path / "roster.csv").write_text("student_id,name,lms_id\nada,Ada,101\nbob,Bob,102\n"
                                         "cyd,Cyd,103\n")
    batch = ("batch", submissions, "--out", out, "--skip-execution", "--notebooks", "01",
             "--roster", tmp_path / "roster.csv", "--lms", "canvas", "--jobs", "2")
    assert grader(*batch).returncode == 0
    results = json.loads((out / "ada" / "results.json").read_text())
    assert "why_equivariant" not in json.dumps(results["tests"])  # no written points there
    assert "written answer why_equivariant: awaiting grading (3 points)" in results["output"]

    # the pages: the question, rubric and model answer, and every answer side by side
    done = grader("written", "export", submissions, "--out", out, "--solutions", solutions)
    assert done.returncode == 0, done.stderr
    page = (out / "written" / f"{NB1}.why_equivariant.html").read_text()
    for text in (MODEL, *RUBRIC, ANSWERS["ada"], "Because of the softmax.", "empty: 0 points"):
        assert text in page
    exported = rows(out / "written" / "grades.csv")
    assert exported["cyd"]["answer"] == "empty" and exported["cyd"]["points"] == "0"
    assert exported["ada"]["answer"] == "answered" and exported["ada"]["points"] == ""
    assert exported["ada"]["answer_sha256"] == written.answer_digest(ANSWERS["ada"])

    # a wrong CSV: one line per problem, nothing imported
    bad = out / "written" / "bad.csv"
    shutil.copy(out / "written" / "grades.csv", bad)
    fill(bad, {"ada": ("", "4", ""), "bob": ("7", "", "")})
    with open(bad, "a") as handle:
        handle.write(f"zed,{QUESTION},3,answered,,1,,\nada,{NB1}/nope,3,answered,,1,,\n")
    refused = grader("written", "import", bad, "--out", out)
    assert refused.returncode == 2 and not (out / "written.json").exists()
    problems = refused.stderr.strip().splitlines()[1:]
    assert len(problems) == 4, refused.stderr
    assert "4 points, over the question's 3" in problems[0]
    assert "rubric item '7' does not exist" in problems[1]
    assert "learner 'zed' is not in this export" in problems[2]
    assert f"no written question '{NB1}/nope'" in problems[3]

    fill(out / "written" / "grades.csv", {"ada": ("1 2", "", "Clear, with your numbers."),
                                          "bob": ("", "1", "Softmax is not the reason.")})
    done = grader("written", "import", out / "written" / "grades.csv", "--out", out)
    assert done.returncode == 0, done.stderr
    column = f"{QUESTION} (written)"

    # the most a learner can score: notebook 01's hidden points and the written question's 3
    most = f"{sum(classroom.points([NB1])[NB1].values()) + 3:g}"

    def check_class(*, flagged: bool) -> None:
        book = rows(out / "gradebook.csv")
        assert {s: book[s][column] for s in ANSWERS} == {"ada": "3", "bob": "1", "cyd": "0"}
        assert {s: book[s]["max_total"] for s in ANSWERS} == {s: most for s in ANSWERS}
        assert book["ada"]["total"] == "3"  # the stubs score 0: the written points are all
        assert bool(book["bob"]["written_status"]) is flagged
        canvas = (out / "canvas.csv").read_text().splitlines()
        assert canvas[1].endswith(f",{most}") and canvas[2:] == ["Ada,101,,,,3", "Bob,102,,,,1",
                                                            "Cyd,103,,,,0"]
        pages = {s: (out / s / "feedback.html").read_text() for s in ANSWERS}
        assert "Clear, with your numbers." in pages["ada"]
        assert "Softmax is not the reason." in pages["bob"]
        assert "graded by a person: 3/3 points" in pages["ada"]
        assert "graded by a person: 0/3 points" in pages["cyd"]
        assert ("your answer changed after it was graded" in pages["bob"]) is flagged

    check_class(flagged=False)
    assert grader(*batch, "--force").returncode == 0  # a regrade keeps the written grades
    check_class(flagged=False)
    answer(submissions / "bob" / f"{NB1}.ipynb", nbformat.writes(release_notebook(
        nbformat.read(str(solutions / f"{NB1}.ipynb"), 4), "01", NB1)), "A set has no order.")
    assert grader(*batch).returncode == 0  # bob's answer changed: regraded and flagged
    check_class(flagged=True)
    assert "answer changed after grading" in rows(out / "gradebook.csv")["bob"]["written_status"]
    assert grader("written", "export", submissions, "--out", out, "--solutions",
                  solutions).returncode == 0
    again = rows(out / "written" / "grades.csv")
    assert again["bob"]["answer"] == written_loop.CHANGED and again["bob"]["points"] == ""
    assert again["ada"]["rubric"] == "1 2" and again["ada"]["points"] == "3"

    # Gradescope: one file per submission, a page per question, and the outline
    done = grader("written", "gradescope", submissions, "--out", tmp_path / "gs",
                  "--solutions", solutions)
    assert done.returncode == 0, done.stderr
    ada = (tmp_path / "gs" / "ada.html").read_text()
    assert ada.count("<section>") == 2 and ANSWERS["ada"] in ada and MODEL not in ada
    assert "No answer." in (tmp_path / "gs" / "cyd.html").read_text()
    outline = (tmp_path / "gs" / "outline.md").read_text()
    assert f"Question 1: {QUESTION} (3 points), page 2" in outline and RUBRIC[0] in outline

    # the self-learner: the model answer beside their own answer only, once published
    published = tmp_path / "model_answers.json"
    early = grader("written", "publish", "--out", published, "--solutions", solutions,
                   "--due", "2999-01-01T00:00")
    assert early.returncode == 2 and "not due yet" in early.stderr and not published.exists()
    assert grader("written", "publish", "--out", published, "--solutions", solutions,
                  "--due", "2020-01-01T00:00").returncode == 0
    shown = grader("check", submissions / "ada" / f"{NB1}.ipynb",
                   submissions / "cyd" / f"{NB1}.ipynb", "--skip-execution", "--exercise",
                   "permutation_matrix", "--reveal", "--model-answers", published)
    assert shown.returncode == 0, shown.stderr
    ada_part, cyd_part = shown.stdout.split("Written answers beside")[1].split("-" * 100)[1:3]
    assert ANSWERS["ada"] in ada_part and MODEL in ada_part and RUBRIC[0] in ada_part
    assert MODEL not in cyd_part and "write your answer below" in cyd_part


def test_the_benchmark_of_the_written_loop_runs(tmp_path):
    """``scripts/benchmark_written.py`` (the budget's measure: export then import for a class of
    200 in under 10 s) runs end to end on a small class and times both steps; the figures are the
    script's to print, not a test's to assert."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import benchmark_written
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    seconds = benchmark_written.run(tmp_path, learners=12)
    assert set(seconds) >= {"export", "import"} and all(v > 0 for v in seconds.values()), seconds


def test_an_import_without_an_export_says_what_to_do(tmp_path):
    (tmp_path / "grades.csv").write_text("student_id,question\n")
    with pytest.raises(GraderError, match="questions.json: missing or unreadable"):
        written_loop.import_csv(csv_path=tmp_path / "grades.csv", out=tmp_path)


def test_gradescope_files_name_the_learner_from_gradescopes_export(tmp_path):
    from grader.export.hosted import gradescope_written

    (tmp_path / "submission_metadata.yml").write_text(
        ":submission_101:\n  :submitters:\n  - :name: Ada Lovelace\n    :sid: '101'\n"
        "    :email: ada@example.org\n  :created_at: 2026-03-01 20:00:00.000000000 Z\n")
    assert gradescope_written.submitters(tmp_path) == {"submission_101": "Ada Lovelace 101"}
    assert gradescope_written.submitters(tmp_path / "none") == {}
