"""The GitHub Classroom workflow, and the ``check --min-score`` exit status its steps rely on."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grader import cli
from grader.grade import grade_notebook
from grader.hosted.classroom import COMMAND_GRADER, MAX_STEP_MINUTES, REPORTER, workflow
from tests.conftest import NOTEBOOKS, ROOT, variant

SUITES = ["01_permutation_invariance", "02_sinusoidal_encoding"]


def _job(text: str) -> dict:
    document = yaml.safe_load(text)
    assert set(document["on"]) == {"push", "repository_dispatch"}
    (job,) = document["jobs"].values()
    return job


@pytest.fixture(scope="module")
def totals() -> dict[str, float]:
    return {suite: grade_notebook(Path("absent") / f"{suite}.ipynb", skip_execution=True).max_score
            for suite in SUITES}


@pytest.mark.slow  # grades whole notebooks through the workflow's commands
@pytest.mark.parametrize("per_exercise", [False, True])
def test_workflow_steps_scores_and_reporter(per_exercise, totals):
    job = _job(workflow(notebooks=["01", "02"], per_exercise=per_exercise))
    assert job["if"] == "github.actor != 'github-classroom[bot]'"
    grading = [s for s in job["steps"] if s.get("uses") == COMMAND_GRADER]
    (reporter,) = [s for s in job["steps"] if s.get("uses") == REPORTER]
    ids = [s["id"] for s in grading]
    assert len(set(ids)) == len(ids) == (sum(1 for s in grading) if per_exercise else 2)
    assert reporter["with"]["runners"] == ",".join(ids)
    assert reporter["env"] == {f"{i.upper()}_RESULTS": f"${{{{steps.{i}.outputs.result}}}}"
                               for i in ids}
    scores = [s["with"]["max-score"] for s in grading]
    assert all(isinstance(score, int) and score > 0 for score in scores)
    assert sum(scores) == sum(totals.values())
    for step in grading:
        command = step["with"]["command"]
        assert "$" not in command  # the command grader strips the environment
        assert command.startswith("python -m grader check notebooks/")
        assert (ROOT / command.split()[4]).is_file()
        assert command.endswith(f"--min-score {step['with']['max-score']}")
        assert isinstance(step["with"]["timeout"], int)
        assert 1 <= step["with"]["timeout"] <= MAX_STEP_MINUTES
    assert job["timeout-minutes"] <= 360


@pytest.mark.slow  # grades through the command line, three times
def test_min_score_exit_status_and_markdown(tmp_path, capsys):
    suite, exercise = SUITES[0], "permutation_matrix"
    report = grade_notebook(Path("absent") / f"{suite}.ipynb", skip_execution=True)
    points = sum(t.max_score for t in report.exercises()[exercise])
    stub = NOTEBOOKS / f"{suite}.ipynb"
    args = ["check", "--skip-execution", "--exercise", exercise, "--min-score", f"{points:g}"]
    assert cli.main([*args, str(stub)]) == 1
    assert f"is below --min-score {points:g}" in capsys.readouterr().out
    summary = tmp_path / "summary.md"
    solution = variant(tmp_path, suite)
    assert cli.main([*args, str(solution), "--markdown", str(summary)]) == 0
    assert f" `{exercise}` | {points:g}/{points:g} | ✅ passed |" in summary.read_text()
    assert cli.main(["check", "--skip-execution", "--exercise", exercise, str(stub)]) == 0
