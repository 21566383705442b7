"""The command line: bad input is one line and exit status 2 before any report is written, the
reports are all or nothing, and ``--help`` says what the code does."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from grader import cli
from grader.notebook.execute import SOLUTION_SECONDS, default_budget, default_cell_timeout
from grader import results
from tests.conftest import NOTEBOOKS, ROOT

NB1 = NOTEBOOKS / "01_permutation_invariance.ipynb"


def _check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", "check", *args], cwd=ROOT,
                          capture_output=True, text=True)


@pytest.mark.parametrize("name, hint", [
    ("scaled_dot_product_atention", "did you mean 'scaled_dot_product_attention'?"),
    ("apply_rope", "it is one of 04_rotary_embeddings's"),
])
def test_an_unknown_exercise_lists_the_notebooks_exercises_and_writes_no_report(tmp_path, name,
                                                                                hint):
    """A typo in --exercise, or an exercise of another notebook, used to grade nothing (score
    0/0, exit 0) and overwrite the report."""
    previous = tmp_path / "results.json"
    previous.write_text("the previous report\n")
    run = _check(str(NB1), "--exercise", name, "--json", str(previous))
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.count("\n") == 1 and hint in run.stderr, run.stderr
    assert "its exercises: scaled_dot_product_attention, self_attention, permutation_matrix" \
        in run.stderr
    assert "score" not in run.stdout
    assert previous.read_text() == "the previous report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]




def test_help_says_the_time_limits_the_code_uses(capsys):
    """`check --help` once said four times the solution's time and a sixth of the budget, where
    the code gives ten times; its words now come from the constants, and say what the code does."""
    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    budget = re.search(r"--execution-budget SECONDS .*?default: (\d+(?:\.\d+)?) times the CPU "
                       r"seconds of the solution's cells, plus (\d+(?:\.\d+)?)\)", text)
    cell = re.search(r"--cell-timeout SECONDS .*?default: (\d+(?:\.\d+)?) times the solution's "
                     r"slowest cell, at least (\d+(?:\.\d+)?), at most the execution budget\)",
                     text)
    assert budget and cell, text
    margin, start = float(budget.group(1)), float(budget.group(2))
    cell_margin, floor = float(cell.group(1)), float(cell.group(2))
    for suite, figures in SOLUTION_SECONDS.items():
        assert default_budget(suite) == round(margin * figures["cells"] + start), suite
        seconds = default_budget(suite)
        assert default_cell_timeout(seconds, suite) == min(
            seconds, max(floor, round(cell_margin * figures["slowest_cell"], 1))), suite


def test_reports_are_rendered_before_any_is_written(tmp_path, monkeypatch):
    """A failure while rendering one report (here the HTML page) leaves every report of the
    previous run whole: none is half written, none replaced."""
    from grader import grade
    from grader.report import feedback
    from grader.sandbox import supervise

    report = results.NotebookReport(
        path=str(NB1), suite="01_permutation_invariance",
        execution=results.ExecutionResult(cells=1, passed=1),
        tests=[results.TestResult("permutation_matrix", "test_a", "A test.", 2.0, "passed")])
    monkeypatch.setattr(grade, "main", lambda **kwargs: [report])
    monkeypatch.setattr(supervise, "become_subreaper", lambda: None)

    def broken(*args, **kwargs):
        raise RuntimeError("the page could not be rendered")

    monkeypatch.setattr(feedback, "render", broken)
    paths = {option: tmp_path / name for option, name in [
        ("--json", "results.json"), ("--junit", "results.xml"), ("--markdown", "summary.md"),
        ("--html", "feedback.html")]}
    for path in paths.values():
        path.write_text(f"previous {path.name}\n")
    arguments = [str(NB1)] + [str(part) for option, path in paths.items()
                              for part in (option, path)]
    with pytest.raises(RuntimeError, match="could not be rendered"):
        cli.main(["check", *arguments])
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {
        path.name: f"previous {path.name}\n" for path in paths.values()}
    monkeypatch.undo()
    monkeypatch.setattr(grade, "main", lambda **kwargs: [report])
    monkeypatch.setattr(supervise, "become_subreaper", lambda: None)
    assert cli.main(["check", *arguments]) == 0
    assert '"score": 2.0' in paths["--json"].read_text()
    assert all("previous" not in path.read_text() for path in paths.values())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths.values())


def _section(stdout: str, path) -> list[str]:
    """The table's lines about the notebook ``path``: its header to the next rule."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(str(path)))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("====="))
    return lines[start:end]


@pytest.mark.parametrize("name", ["01_permutation_invariance", "my copy"])
def test_an_invalid_notebook_is_one_line_whatever_its_name(tmp_path, name):
    """Not JSON: under the course's name it was followed by a "missing" line per exercise, under
    another name the grader complained about the name only."""
    corrupt = tmp_path / f"{name}.ipynb"
    corrupt.write_text('{"cells": [ this is not json')
    run = _check(str(corrupt), "--skip-execution", "--exercise", "permutation_matrix",
                 "--json", str(tmp_path / "results.json"))
    assert run.returncode == 0, run.stderr
    section = _section(run.stdout, corrupt)
    assert len(section) == 2, section  # its score, then why it could not be graded
    reason = section[1]
    assert "not a valid Jupyter notebook" in reason and "restore it" in reason
    assert "missing" not in run.stdout and "no hidden tests" not in run.stdout


def test_another_courses_notebook_is_said_to_be_none_of_ours(tmp_path):
    """A notebook of another course under the name of notebook 01 was executed and reported as
    seven missing exercises."""
    from tests.conftest import inline_notebook

    foreign = inline_notebook(tmp_path / "01_permutation_invariance.ipynb", [
        ("markdown", "# Another course: gradient descent", []),
        ("code", "def gradient_step(w, g, lr):\n    return w - lr * g", ["solution"]),
        ("code", "print(gradient_step(1.0, 0.5, 0.1))", [])])
    run = _check(str(foreign), "--exercise", "permutation_matrix")  # it would be executed
    assert run.returncode == 0, run.stderr
    section = _section(run.stdout, foreign)
    assert len(section) == 2 and "not the course's notebook 01_permutation_invariance" \
        in section[1], section
    assert "execution" not in run.stdout and "missing" not in run.stdout
