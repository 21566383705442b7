"""The GitHub Classroom workflow, and the ``check --min-score`` exit status its steps rely on."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grader import cli
from grader.grade import grade_notebook
from grader.export.hosted.classroom import COMMAND_GRADER, MAX_STEP_MINUTES, REPORTER, workflow
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


# -- the starter repository: one grading per push, and course.py's commands --------------------
def _triggers(text: str) -> set[str]:
    document = yaml.safe_load(text)
    triggers = document[True] if True in document else document["on"]
    return set(triggers if not isinstance(triggers, str) else [triggers])


def test_the_starters_workflows_grade_once_per_push():
    from grader.export.hosted import classroom_public
    from grader.export.starter import WORKFLOW

    course = (ROOT / WORKFLOW).read_text()
    assert "push" in _triggers(course)  # the course's own: a learner's fork grades on push
    shipped = {"classroom.yml": classroom_public.workflow(SUITES),
               "grade-my-notebooks.yml": classroom_public.starter_grading_workflow(course)}
    on_push = [name for name, text in shipped.items() if "push" in _triggers(text)]
    assert on_push == ["classroom.yml"]
    assert _triggers(shipped["grade-my-notebooks.yml"]) == {"workflow_dispatch"}
    assert yaml.safe_load(shipped["grade-my-notebooks.yml"])["jobs"] == \
        yaml.safe_load(course)["jobs"]  # the same job, run by hand
    with pytest.raises(ValueError, match="no `on:` block"):
        classroom_public.starter_grading_workflow("name: x\njobs: {}\n")


def _course_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("course_under_test", ROOT / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_course_py_offers_only_what_ships(tmp_path):
    import shutil
    import subprocess
    import sys

    starter = tmp_path / "starter"  # what starter-repo ships: no tests/, solutions/, hidden tests
    (starter / "grader" / "judge" / "suites").mkdir(parents=True)
    (starter / "grader" / "judge" / "suites" / "PUBLIC_ONLY.txt").write_text("public checks only\n")
    shutil.copy(ROOT / "course.py", starter / "course.py")
    usage = subprocess.run([sys.executable, "course.py"], cwd=starter, capture_output=True,
                           text=True)
    commands = {line.split()[2] for line in usage.stdout.splitlines()
                if line.startswith("    python3 course.py ")}
    assert usage.returncode == 2 and commands == {"grade", "lab"}
    for command, needs in (("test", "the project's tests"), ("release", "solution notebooks"),
                           ("batch", "the hidden tests")):
        refused = subprocess.run([sys.executable, "course.py", command], cwd=starter,
                                 capture_output=True, text=True)
        assert refused.returncode == 2 and needs in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
        assert not (starter / ".venv").exists()  # refused before installing anything
    assert _course_module().offered() == ["grade", "batch", "test", "lab", "release", "site", "colab"]


def test_course_py_lab_runs_as_root_with_jupyterlabs_own_flag(monkeypatch, capsys):
    course = _course_module()
    monkeypatch.setattr(course.os, "geteuid", lambda: 0)
    assert course.lab_arguments([]) == ["-m", "jupyter", "lab", course.LAB_OPENS, "--allow-root"]
    assert "running as root" in capsys.readouterr().err
    assert course.lab_arguments(["--allow-root"]).count("--allow-root") == 1
    monkeypatch.setattr(course.os, "geteuid", lambda: 1000)
    assert course.lab_arguments(["--port", "9999"]) == [
        "-m", "jupyter", "lab", course.LAB_OPENS, "--port", "9999"]
    assert capsys.readouterr().err == ""
