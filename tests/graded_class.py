"""One small class, graded once per test run: in one run, and in shards merged.

The batch tests (``tests/batch/test_batch.py``) read the one run; the shard tests
(``tests/batch/test_merge.py``) read the shards and their merge. The one run grades two learners at once
(``--jobs 2``) and every shard grades one at a time (``--jobs 1``), so the merged files equal to
the one run's prove both that sharding and that the number of jobs change nothing.

The same class is then given its class options (a roster with an absentee, Canvas, a due time
and a late policy: ada hands in two days late, by the commit time the instructor's collection
wrote in ``commits.csv``) on every route:
one ``batch`` run, and each ``class-workflow`` route (GitHub Actions, Slurm with a stand-in
``sbatch``, Kubernetes with a stand-in ``kubectl``) in ``classes/ROUTE``. These runs start from
the graded records (a learner is regraded only when what grades them changed: here only their
lateness did), so they cost a rewrite of the class's files, not a grading.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

from grader.batch import grading as batch
from grader.batch import run
from grader.export.hosted.class_workflow import actions, k8s, slurm
from tests.conftest import NOTEBOOKS, ROOT, variant

NB1, NB2 = "01_permutation_invariance", "02_sinusoidal_encoding"
LEARNERS = ("ada", "bob", "cyd", "dan")  # in shards of 2: ada and bob in 1, cyd and dan in 2
SKIP = batch.Options(skip_execution=True)


def wrong_answer(suite: str, index: int = 0):
    """A catalogued wrong answer of ``suite``."""
    return importlib.import_module(f"tests.catalogue.{suite}").WRONG_ANSWERS[index]


DUE = "2026-03-01T23:59:00+00:00"
POLICY = "10,50"
ROSTER = ("student_id,name,lms_id\n"
          + "".join(f"{s},{s.title()},{100 + i}\n" for i, s in enumerate([*LEARNERS, "zoe"])))
"""The class list: the four learners and zoe, who handed nothing in."""
ROUTES = ("one", "actions", "slurm", "k8s")
"""Where the class is graded with its options: one batch run and each class-workflow route."""
CLASS_OPTIONS = {"roster": "roster.csv", "lms": "canvas", "due": DUE, "late_policy": POLICY,
                 "assignment": "ps1"}


def submissions(folder: Path) -> Path:
    """ada: both solutions, handed in two days late (``commits.csv``, the collection's record
    beside the learners' folders); bob: the released stub of 02 (no hand-in record: file times);
    cyd: a catalogued wrong answer in each notebook, on time; dan: a corrupt notebook and one from
    another course, with a Gradescope ``submission_metadata.json`` of his own saying "on time"
    (his own folder's: not trusted, so file times)."""
    for name in LEARNERS:
        (folder / name).mkdir(parents=True)
    for suite in (NB1, NB2):
        variant(folder / "ada", suite)
        wrong = wrong_answer(suite)
        (folder / "cyd" / "work").mkdir(parents=True, exist_ok=True)
        variant(folder / "cyd" / "work", suite, replace={wrong.exercise: wrong.source})
    shutil.copy(NOTEBOOKS / f"{NB2}.ipynb", folder / "bob")
    (folder / "dan" / f"{NB1}.ipynb").write_text('{"cells": [ not json')
    other = nbformat.read(str(NOTEBOOKS / f"{NB2}.ipynb"), as_version=4)
    other.metadata.pop("grader", None)
    nbformat.write(other, str(folder / "dan" / "homework3.ipynb"))
    (folder / "commits.csv").write_text(
        "student_id,repository,commit,committed_at,due,note\n"
        "ada,course/ps1-ada,a1b2c3d,2026-03-03T09:30:00+00:00,,\n"
        "cyd,course/ps1-cyd,c3d4e5f,2026-03-01T18:00:00+00:00,,\n")
    (folder / "dan" / "submission_metadata.json").write_text(
        '{"created_at": "2026-03-01T20:00:00.000000+00:00"}')
    return folder


def workflow_steps(count: int, *, jobs: int = 2, **settings) -> dict[str, dict]:
    """The generated workflow's steps with a ``run``, by name, and the shard job's env."""
    document = yaml.safe_load(actions(count, jobs=jobs, skip_execution=True, **settings))
    return {step["name"]: {**step, "job_env": job.get("env", {})}
            for job in document["jobs"].values() for step in job["steps"] if "run" in step}


def engine_env(*extra: Path) -> dict[str, str]:
    """The environment of an engine's job: this checkout's grader, ``extra`` folders (of
    stand-ins) first on PATH, then this interpreter's."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "PATH": os.pathsep.join(
        [*map(str, extra), str(Path(sys.executable).parent), os.environ["PATH"]])}


def run_step(step: dict, cwd: Path, matrix: dict | None = None) -> subprocess.CompletedProcess:
    """Run a workflow step's ``run`` with bash, as the runner would, with the job's env, its
    ``${{ matrix.X }}`` expressions replaced by ``matrix``; the grader is this checkout's."""
    env = engine_env()
    for name, value in {**step["job_env"], **step.get("env", {})}.items():
        env[name] = re.sub(r"\$\{\{ matrix\.(\w+) \}\}", lambda m: str(matrix[m.group(1)]), value)
    result = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return result


def grade(root: Path, points: Path | None = None) -> None:
    """Fill ``root``: ``submissions/``, ``one/`` (one run, two learners at once) and
    ``engine/`` (the workflow's working folder: two shards of one learner at a time, merged
    into ``engine/grades``). ``points``: a ``.points.json`` listed already (the run's shared
    one, ``tests.conftest.hidden_points``); without it, the one run lists the hidden tests."""
    folder = submissions(root / "submissions")
    one = root / "one"
    if points is not None:
        one.mkdir()
        shutil.copy(points, one)  # cached by content
    run.grade_class(run.ClassOptions(
        submissions=folder, out=one, jobs=2, grading=SKIP, echo=lambda *_: None, progress=False))
    engine = root / "engine"
    shutil.copytree(folder, engine / "submissions")
    steps = workflow_steps(2, jobs=1)
    for index in (1, 2):
        (engine / "shards" / f"shard-{index}").mkdir(parents=True)
        shutil.copy(one / ".points.json", engine / "shards" / f"shard-{index}")  # cached by content
        run_step(steps["Grade the shard"], engine, {"shard": index})
    run_step(steps["Merge the shards"], engine)
    grade_with_options(root)


# -- the class's options on every route ---------------------------------------------------------
SBATCH = """#!/bin/bash
# A stand-in for sbatch: runs the array's tasks, then the --wrap job, at once and in order.
wrap=""; script=""
for argument in "$@"; do
  case "$argument" in --wrap=*) wrap="${argument#--wrap=}" ;; -*) ;; *) script="$argument" ;; esac
done
if [ -n "$wrap" ]; then sh -c "$wrap" > logs/merge.out 2>&1; echo 78; exit 0; fi
last=$(sed -n 's/^#SBATCH --array=1-//p' "$script")
for task in $(seq 1 "$last"); do
  SLURM_ARRAY_TASK_ID=$task bash "$script" > "logs/shard-$task.out" 2>&1
done
echo "77;cluster"
"""
KUBECTL = """#!{python}
# A stand-in for kubectl: `apply -l step=S -f -` runs the Job labelled S at once, each index of
# an indexed Job in turn, with the working folder as the volume; `get job/NAME` prints its state.
import os, subprocess, sys
from pathlib import Path
import yaml
state = Path(".kubectl")
state.mkdir(exist_ok=True)
if sys.argv[1] == "apply":
    step = sys.argv[sys.argv.index("-l") + 1].removeprefix("step=")
    for job in yaml.safe_load_all(sys.stdin.read()):
        if job["metadata"]["labels"]["step"] != step:
            continue
        (container,) = job["spec"]["template"]["spec"]["containers"]
        count = job["spec"].get("completions", 1)
        ok = all(subprocess.run(container["command"], env={{**os.environ,
                 "JOB_COMPLETION_INDEX": str(index)}}).returncode == 0 for index in range(count))
        (state / job["metadata"]["name"]).write_text("Complete " if ok else "Failed ")
elif sys.argv[1] == "get":
    name = sys.argv[2].removeprefix("job/")
    print((state / name).read_text() if (state / name).is_file() else "", end="")
"""


def _stand_in(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    (folder / name).chmod(0o755)


def _engine_folder(root: Path, route: str) -> Path:
    """A route's working folder: the submissions, the roster and the graded shards."""
    folder = root / "classes" / route
    shutil.copytree(root / "engine" / "submissions", folder / "submissions")
    shutil.copytree(root / "engine" / "shards", folder / "shards",
                    ignore=shutil.ignore_patterns("shard.json"))
    (folder / "roster.csv").write_text(ROSTER)
    return folder


def grade_with_options(root: Path) -> None:
    """Fill ``root/classes/ROUTE`` for every route of :data:`ROUTES` (the class's options given;
    the records of ``one`` and ``engine`` reused)."""
    one = root / "classes" / "one"
    shutil.copytree(root / "one", one)
    (root / "classes" / "roster.csv").write_text(ROSTER)
    run.grade_class(run.ClassOptions(
        submissions=root / "submissions", out=one, jobs=2, grading=SKIP, echo=lambda *_: None,
        progress=False, roster=root / "classes" / "roster.csv", lms="canvas", due=DUE,
        late_policy=POLICY, assignment_name="ps1"))

    folder = _engine_folder(root, "actions")
    with contextlib.chdir(folder):  # the course repository, where the roster is
        steps = workflow_steps(2, jobs=1, **CLASS_OPTIONS)
        scripts = {"slurm": slurm(2, jobs=1, skip_execution=True, **CLASS_OPTIONS),
                   "k8s": k8s(2, jobs=1, skip_execution=True, **CLASS_OPTIONS)}
    for index in (1, 2):
        run_step(steps["Grade the shard"], folder, {"shard": index})
    run_step(steps["Merge the shards"], folder)

    folder = _engine_folder(root, "slurm")
    (folder / "grade-class.sh").write_text(scripts["slurm"])
    _stand_in(folder / "bin", "sbatch", SBATCH)
    _run(["bash", "grade-class.sh"], folder, engine_env(folder / "bin"))

    folder = _engine_folder(root, "k8s")
    (folder / "grade-class.sh").write_text(scripts["k8s"])
    _stand_in(folder / "bin", "kubectl", KUBECTL.format(python=sys.executable))
    _run(["bash", "grade-class.sh"], folder, {**engine_env(folder / "bin"), "POLL_SECONDS": "0"})


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> None:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=600)
    logs = "".join(p.read_text() for p in sorted((cwd / "logs").glob("*.out"))) \
        if (cwd / "logs").is_dir() else ""
    assert result.returncode == 0, (result.stdout + result.stderr + logs)[-3000:]
