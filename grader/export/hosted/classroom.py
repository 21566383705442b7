"""Write the GitHub Classroom grading workflow (``.github/workflows/classroom.yml``).

One step per notebook (or, with ``per_exercise``, per exercise) runs
``classroom-resources/autograding-command-grader``, which awards the step's integer ``max-score``
when its command exits with status 0 and nothing otherwise; ``python -m grader check ...
--min-score POINTS`` exits 0 only with full marks, so a step's points are all or nothing. The
``autograding-grading-reporter`` step sums them for GitHub Classroom: it reads each step's result
from the environment variable ``<STEP-ID>_RESULTS`` (upper case). The command grader runs
commands with a reduced environment (PATH and HOME), so the commands use none.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from grader.errors import GraderError
from grader.grade import grade_notebook
from grader.judge.selection import select_suites

COMMAND_GRADER = "classroom-resources/autograding-command-grader@v1"
REPORTER = "classroom-resources/autograding-grading-reporter@v1"
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
STEP_MINUTES = 15
"""Time limit of one grading step, in minutes (the command grader allows up to 360)."""
MAX_STEP_MINUTES = 360
MAX_JOB_MINUTES = 360
"""GitHub-hosted runners stop any job after 6 hours."""


def points(suites: list[str]) -> dict[str, dict[str, float]]:
    """``{suite: {exercise: points}}``, read from the hidden suites (no notebook is run)."""
    return {suite: _exercise_points(suite) for suite in suites}


@lru_cache(maxsize=None)
def _exercise_points(suite: str) -> dict[str, float]:
    report = grade_notebook(Path("absent") / f"{suite}.ipynb", skip_execution=True)
    return {name: sum(t.max_score for t in tests) for name, tests in report.exercises().items()}


def _integer(value: float, what: str) -> int:
    if value != int(value) or value <= 0:
        raise GraderError(f"{what} is worth {value:g} points; GitHub Classroom needs a positive "
                          "whole number: change the points in the hidden suite")
    return int(value)


def _step(step_id: str, name: str, command: str, score: int, minutes: int) -> dict:
    return {"name": name, "id": step_id, "uses": COMMAND_GRADER,
            "with": {"test-name": name, "setup-command": "", "command": command,
                     "timeout": minutes, "max-score": score}}


def grading_steps(suites: list[str], *, per_exercise: bool = False,
                  step_minutes: int = STEP_MINUTES) -> list[dict]:
    """The command-grader steps, one per notebook or per exercise, in course order."""
    if not 1 <= step_minutes <= MAX_STEP_MINUTES:
        raise GraderError(f"a step's time limit must be 1 to {MAX_STEP_MINUTES} minutes, "
                          f"not {step_minutes}")
    steps = []
    for suite, exercises in points(suites).items():
        notebook = f"notebooks/{suite}.ipynb"
        if not per_exercise:
            score = _integer(sum(exercises.values()), suite)
            steps.append(_step(f"notebook-{suite.replace('_', '-')}", suite,
                               f"python -m grader check {notebook} --min-score {score}",
                               score, step_minutes))
            continue
        number = suite.split("_", 1)[0]
        for exercise, value in exercises.items():
            score = _integer(value, f"{suite} / {exercise}")
            steps.append(_step(f"ex{number}-{exercise.replace('_', '-').lower()}",
                               f"{suite} / {exercise}",
                               f"python -m grader check {notebook} --skip-execution "
                               f"--exercise {exercise} --min-score {score}",
                               score, step_minutes))
    return steps


def autograding_document(steps: list[dict], timeout_minutes: int) -> dict:
    """GitHub Classroom's autograding workflow around ``steps`` (each with an ``id``): checkout,
    Python, the grader installed with CPU-only PyTorch, the steps, then the reporter that adds up
    what each step reports."""
    ids = [step["id"] for step in steps]
    setup = [
        {"name": "Checkout code", "uses": "actions/checkout@v5"},
        {"name": "Set up Python", "uses": "actions/setup-python@v6",
         "with": {"python-version": "3.11", "cache": "pip",
                  "cache-dependency-path": "pyproject.toml"}},
        {"name": "Install the grader (CPU-only PyTorch)", "run": "python -m pip install -e .",
         # pip takes torch==X from this index (X+cpu) instead of PyPI's CUDA build
         "env": {"PIP_EXTRA_INDEX_URL": TORCH_INDEX}},
    ]
    reporter = {"name": "Autograding Reporter", "uses": REPORTER,
                "env": {f"{i.upper()}_RESULTS": f"${{{{steps.{i}.outputs.result}}}}" for i in ids},
                "with": {"runners": ",".join(ids)}}
    return {
        "name": "Autograding Tests",
        "on": ["push", "repository_dispatch"],
        "permissions": {"checks": "write", "actions": "read", "contents": "read"},
        "jobs": {"run-autograding-tests": {
            "runs-on": "ubuntu-latest",
            "if": "github.actor != 'github-classroom[bot]'",
            "timeout-minutes": timeout_minutes,
            "steps": setup + steps + [reporter],
        }},
    }


def workflow(*, notebooks: list[str] | None = None, per_exercise: bool = False,
             step_minutes: int = STEP_MINUTES) -> str:
    """The workflow file's text."""
    steps = grading_steps(select_suites(notebooks), per_exercise=per_exercise,
                          step_minutes=step_minutes)
    document = autograding_document(steps, min(MAX_JOB_MINUTES, 20 + step_minutes * len(steps)))
    header = ("# GitHub Classroom grading workflow, generated by `python -m grader classroom`;\n"
              "# regenerate it rather than editing it. Each step's points are all or nothing.\n")
    return header + yaml.safe_dump(document, sort_keys=False, width=1000)
