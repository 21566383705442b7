"""One small class, graded once per test run: in one run, and in shards merged.

The batch tests (``tests/test_batch.py``) read the one run; the shard tests
(``tests/test_merge.py``) read the shards and their merge. The one run grades two learners at once
(``--jobs 2``) and every shard grades one at a time (``--jobs 1``), so the merged files equal to
the one run's prove both that sharding and that the number of jobs change nothing.
"""
from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

from grader import batch
from grader.hosted.class_workflow import actions
from tests.conftest import NOTEBOOKS, ROOT, variant

NB1, NB2 = "01_permutation_invariance", "02_sinusoidal_encoding"
LEARNERS = ("ada", "bob", "cyd", "dan")  # in shards of 2: ada and bob in 1, cyd and dan in 2
SKIP = batch.Options(skip_execution=True)


def wrong_answer(suite: str, index: int = 0):
    """A catalogued wrong answer of ``suite``."""
    return importlib.import_module(f"tests.catalogue.{suite}").WRONG_ANSWERS[index]


def submissions(folder: Path) -> Path:
    """ada: both solutions; bob: the released stub of 02; cyd: a catalogued wrong answer in
    each notebook; dan: a corrupt notebook and one from another course."""
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
    return folder


def workflow_steps(count: int, *, jobs: int = 2) -> dict[str, dict]:
    """The generated workflow's steps with a ``run``, by name, and the shard job's env."""
    document = yaml.safe_load(actions(count, jobs=jobs, skip_execution=True))
    return {step["name"]: {**step, "job_env": job.get("env", {})}
            for job in document["jobs"].values() for step in job["steps"] if "run" in step}


def run_step(step: dict, cwd: Path, matrix: dict | None = None) -> subprocess.CompletedProcess:
    """Run a workflow step's ``run`` with bash, as the runner would, with the job's env, its
    ``${{ matrix.X }}`` expressions replaced by ``matrix``; the grader is this checkout's."""
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    for name, value in {**step["job_env"], **step.get("env", {})}.items():
        env[name] = re.sub(r"\$\{\{ matrix\.(\w+) \}\}", lambda m: str(matrix[m.group(1)]), value)
    result = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return result


def grade(root: Path) -> None:
    """Fill ``root``: ``submissions/``, ``one/`` (one run, two learners at once) and
    ``engine/`` (the workflow's working folder: two shards of one learner at a time, merged
    into ``engine/grades``)."""
    folder = submissions(root / "submissions")
    one = root / "one"
    batch.main(submissions=folder, out=one, jobs=2, options=SKIP, echo=lambda *_: None,
               progress=False)
    engine = root / "engine"
    shutil.copytree(folder, engine / "submissions")
    steps = workflow_steps(2, jobs=1)
    for index in (1, 2):
        (engine / "shards" / f"shard-{index}").mkdir(parents=True)
        shutil.copy(one / ".points.json", engine / "shards" / f"shard-{index}")  # cached by content
        run_step(steps["Grade the shard"], engine, {"shard": index})
    run_step(steps["Merge the shards"], engine)
