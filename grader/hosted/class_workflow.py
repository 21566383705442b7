"""Grade a class in shards on an engine that already exists: a GitHub Actions matrix, a Slurm job
array or a Kubernetes indexed Job (``python -m grader class-workflow``).

Every engine runs the same two commands, from a checkout of the course repository (hidden tests
included) with the grader installed and the submissions in ``submissions/`` (one folder per
learner, or any layout ``batch`` reads):

* one shard per job, task or pod, with ``SHARD`` set to its number (1 to N; on Kubernetes,
  ``JOB_COMPLETION_INDEX`` + 1):
  ``python -m grader batch submissions --out "shards/shard-$SHARD" --shard "$SHARD/N" --jobs 2``;
* once every shard has succeeded: ``python -m grader merge shards/shard-* --out grades``.

The grader schedules nothing itself: the engine starts the shards and the merge. The shards grade
with ``--require-confinement``: a learner's code runs under bubblewrap (its own filesystem view
without the repository, the hidden tests or the other learners' folders, and no network), or the
shard refuses to grade (:mod:`grader.confinement`). The Actions workflow installs bubblewrap and
lets it create user namespaces, and no step that runs learner code holds a token (the checkout
keeps no credentials); a Slurm cluster needs bubblewrap on its nodes, a Kubernetes image needs it
and pods that may create namespaces. ``allow_unconfined`` drops the requirement (the shard then
grades with the fallback and its reports say so).
"""
from __future__ import annotations

import shlex

import yaml

from grader.errors import GraderError
from grader.hosted.classroom import TORCH_INDEX

MAX_SHARDS = 256
"""GitHub Actions runs at most 256 jobs from one matrix."""
JOB_MINUTES = 360
"""GitHub-hosted runners stop any job after 6 hours."""
SLURM_HOURS = 6
"""A shard's time limit on Slurm: at about 1.3 learners a minute on 2 cores, 450 learners."""
SECRET = "CLASSROOM_TOKEN"
"""The grading repository's secret: a token that can read the classroom's repositories."""


def shard_command(count: int, *, jobs: int = 2, skip_execution: bool = False,
                  notebooks: list[str] | None = None, allow_unconfined: bool = False) -> str:
    """The command that grades shard ``$SHARD`` of ``count`` (a shell command line); with
    ``notebooks``, only the assignment's notebooks (``batch --notebooks``). It requires
    bubblewrap's confinement unless ``allow_unconfined``."""
    extra = "" if allow_unconfined else " --require-confinement"
    extra += " --skip-execution" if skip_execution else ""
    extra += f" --notebooks {' '.join(notebooks)}" if notebooks else ""
    return (f'python -m grader batch submissions --out "shards/shard-$SHARD" '
            f'--shard "$SHARD/{count}" --jobs {jobs}{extra}')


MERGE_COMMAND = "python -m grader merge shards/shard-* --out grades"
"""The command that joins every shard into ``grades/``."""


class _Dumper(yaml.SafeDumper):
    """Writes a string of several lines as a literal block (``run: |``), as people write them."""


_Dumper.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None))


def _check(count: int, jobs: int) -> None:
    if not 1 <= count <= MAX_SHARDS:
        raise GraderError(f"--shards {count}: give 1 to {MAX_SHARDS} shards (a GitHub Actions "
                          "matrix runs at most 256 jobs)")
    if jobs < 1:
        raise GraderError(f"--jobs {jobs}: give a positive number of learners per shard at once")


def _generator(count: int, jobs: int, skip_execution: bool,
               notebooks: list[str] | None = None, allow_unconfined: bool = False) -> str:
    """The command line that generates the file."""
    return (f"python -m grader class-workflow --shards {count}"
            + (f" --jobs {jobs}" if jobs != 2 else "")
            + (" --skip-execution" if skip_execution else "")
            + (" --allow-unconfined" if allow_unconfined else "")
            + (f" --notebooks {' '.join(notebooks)}" if notebooks else ""))


# -- GitHub Actions -----------------------------------------------------------------------------
_CLONE = f"""if [ -z "$ORGANIZATION" ] || [ -z "$PREFIX" ]; then
  echo "give the classroom's organization and the assignment's repository prefix"
  exit 1
fi
mkdir -p submissions
gh repo list "$ORGANIZATION" --limit 100000 --json name --jq '.[].name' | sort |
  while read -r repository; do
    case "$repository" in
      "$PREFIX"-*) gh repo clone "$ORGANIZATION/$repository" \\
                     "submissions/${{repository#"$PREFIX-"}}" -- --depth 1 --quiet ;;
    esac
  done
rm -rf submissions/*/.git
if [ -z "$(ls submissions)" ]; then
  echo "no repositories $PREFIX-* in $ORGANIZATION: check the prefix and the {SECRET} secret"
  exit 1
fi
"""
_UNPACK = """mkdir -p submissions
case "$ARCHIVE" in
  *.zip) python -m zipfile -e "$ARCHIVE" submissions ;;
  *) tar -xf "$ARCHIVE" -C submissions ;;
esac
"""


_CONFINE = """sudo apt-get install -y --no-install-recommends bubblewrap
if [ -e /proc/sys/kernel/apparmor_restrict_unprivileged_userns ]; then
  sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0
fi
bwrap --version
"""
"""Lets bubblewrap confine the learners' code on a GitHub-hosted runner: installs it, and lets an
unprivileged process create user namespaces (Ubuntu 24.04 restricts them through AppArmor)."""


def _install(*, confine: bool = False) -> list[dict]:
    confining = [{"name": "Install bubblewrap, which confines the learners' code",
                  "run": _CONFINE}] if confine else []
    return [
        # No token stays in the checkout: learner code must find none to use.
        {"uses": "actions/checkout@v5", "with": {"persist-credentials": False}},
        *confining,
        {"uses": "actions/setup-python@v6",
         "with": {"python-version": "3.11", "cache": "pip",
                  "cache-dependency-path": "pyproject.toml"}},
        {"name": "Install the grader (CPU-only PyTorch)", "run": "python -m pip install -e .",
         # pip takes torch==X from this index (X+cpu) instead of PyPI's CUDA build
         "env": {"PIP_EXTRA_INDEX_URL": TORCH_INDEX}},
    ]


def _inputs() -> dict:
    return {
        "source": {"description": "classroom: clone the learners' repositories; archive: unpack "
                                  "an archive committed to this repository",
                   "type": "choice", "options": ["classroom", "archive"], "default": "classroom"},
        "organization": {"description": "the classroom's organization (source: classroom)",
                         "type": "string", "default": ""},
        "prefix": {"description": "the assignment's repository prefix: learners' repositories "
                                  "are PREFIX-USERNAME (source: classroom)",
                   "type": "string", "default": ""},
        "archive": {"description": "path of a .zip or .tar.gz with one folder per learner "
                                   "(source: archive)", "type": "string",
                    "default": "submissions.zip"},
    }


def _collect_job() -> dict:
    return {"runs-on": "ubuntu-latest", "timeout-minutes": 60, "steps": [
        {"uses": "actions/checkout@v5", "with": {"persist-credentials": False}},
        {"name": "Clone the learners' repositories", "if": "inputs.source == 'classroom'",
         "env": {"GH_TOKEN": f"${{{{ secrets.{SECRET} }}}}",
                 "ORGANIZATION": "${{ inputs.organization }}", "PREFIX": "${{ inputs.prefix }}"},
         "run": _CLONE},
        {"name": "Unpack the archive", "if": "inputs.source == 'archive'",
         "env": {"ARCHIVE": "${{ inputs.archive }}"}, "run": _UNPACK},
        {"uses": "actions/upload-artifact@v6",
         "with": {"name": "submissions", "path": "submissions", "if-no-files-found": "error",
                  "retention-days": 7}},
    ]}


def actions(count: int, *, jobs: int = 2, skip_execution: bool = False,
            notebooks: list[str] | None = None, allow_unconfined: bool = False) -> str:
    """The GitHub Actions workflow's text: collect, ``count`` shard jobs, merge.

    The shard jobs install bubblewrap before grading; no checkout keeps its token, and the
    grading step's environment holds none."""
    _check(count, jobs)
    grade = {
        "needs": "collect", "runs-on": "ubuntu-latest", "timeout-minutes": JOB_MINUTES,
        "strategy": {"fail-fast": False, "matrix": {"shard": list(range(1, count + 1))}},
        "env": {"SHARD": "${{ matrix.shard }}"},
        "steps": _install(confine=True) + [
            {"uses": "actions/download-artifact@v7",
             "with": {"name": "submissions", "path": "submissions"}},
            {"name": "Grade the shard",
             "run": shard_command(count, jobs=jobs, skip_execution=skip_execution,
                                   notebooks=notebooks, allow_unconfined=allow_unconfined)},
            {"uses": "actions/upload-artifact@v6",
             "with": {"name": "shard-${{ matrix.shard }}",
                      "path": "shards/shard-${{ matrix.shard }}", "if-no-files-found": "error",
                      "retention-days": 7}},
        ]}
    merge = {
        "needs": "grade", "runs-on": "ubuntu-latest", "timeout-minutes": 60,
        "steps": _install() + [
            {"uses": "actions/download-artifact@v7",
             "with": {"pattern": "shard-*", "path": "shards"}},
            {"name": "Merge the shards", "run": MERGE_COMMAND},
            {"uses": "actions/upload-artifact@v6",
             "with": {"name": "gradebook", "path": "grades", "if-no-files-found": "error"}},
        ]}
    document = {
        "name": "Grade the class",
        "on": {"workflow_dispatch": {"inputs": _inputs()}},
        "permissions": {"contents": "read"},
        "jobs": {"collect": _collect_job(), "grade": grade, "merge": merge},
    }
    header = f"""\
# Grades a class in {count} shards; generated by
# `{_generator(count, jobs, skip_execution, notebooks, allow_unconfined)}`: regenerate it rather than editing it.
# Commit it to the instructor's private grading repository (the course repository, hidden
# tests included) and run it from the Actions tab. With source `classroom`, the secret
# {SECRET} must be a token that can read the classroom's repositories; only the collect
# job sees it. Each shard runs the learners' code under bubblewrap (no repository, no other
# learner's folder, no network) or refuses to grade. The gradebook, summary and feedback
# pages are the merge job's artifact `gradebook`.
"""
    return header + yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=1000)


# -- Slurm --------------------------------------------------------------------------------------
def slurm(count: int, *, jobs: int = 2, skip_execution: bool = False,
          notebooks: list[str] | None = None, allow_unconfined: bool = False) -> str:
    """A Slurm job-array script: ``bash`` it to submit ``count`` shard tasks and the merge."""
    _check(count, jobs)
    merge = shlex.quote(MERGE_COMMAND)
    return f"""#!/bin/bash
# Grades a class in {count} shards on Slurm; generated by
# `{_generator(count, jobs, skip_execution, notebooks, allow_unconfined)} --slurm`: regenerate it rather than editing it.
# Run it with bash from the course repository (hidden tests included; the grader installed
# in .venv or on PATH; the submissions in submissions/, one folder per learner): it submits
# itself as an array of {count} tasks, one shard each, and a merge job that starts once every
# task has succeeded. The gradebook, summary and feedback pages are then in grades/.
# The nodes need bubblewrap (package bubblewrap) and user namespaces: a shard refuses to grade
# without them{'' if not allow_unconfined else ' (not this script: --allow-unconfined)'}.
#SBATCH --job-name=grade-class
#SBATCH --array=1-{count}
#SBATCH --cpus-per-task={jobs}
#SBATCH --mem={2 * jobs}G
#SBATCH --time={SLURM_HOURS}:00:00
#SBATCH --output=logs/shard-%a.out
set -euo pipefail
if [ -f .venv/bin/activate ]; then
  source .venv/bin/activate
fi
if [ -z "${{SLURM_ARRAY_TASK_ID:-}}" ]; then
  mkdir -p logs
  array=$(sbatch --parsable "$0")
  sbatch --parsable --dependency="afterok:${{array%%;*}}" --job-name=grade-class-merge \\
    --cpus-per-task=1 --mem=2G --output=logs/merge.out --wrap={merge}
  exit 0
fi
SHARD=$SLURM_ARRAY_TASK_ID
{shard_command(count, jobs=jobs, skip_execution=skip_execution, notebooks=notebooks,
               allow_unconfined=allow_unconfined)}
"""


# -- Kubernetes ---------------------------------------------------------------------------------
CONFINING_CONTEXT = {"capabilities": {"add": ["SYS_ADMIN"]},
                     "seccompProfile": {"type": "Unconfined"},
                     "appArmorProfile": {"type": "Unconfined"}}
"""What a shard's container needs for bubblewrap to make namespaces and mount its view: the
capability, and neither the runtime's default seccomp filter nor its AppArmor profile, which forbid
both (the grader keeps these powers; the learner's processes under bubblewrap get no capabilities).
``appArmorProfile`` needs Kubernetes 1.30."""


def _job(name: str, step: str, image: str, script: str, cpus: int, spec: dict,
         context: dict | None = None) -> dict:
    container = {"name": step, "image": image, "workingDir": "/grading",
                 "command": ["bash", "-e", "-c", script],
                 **({"securityContext": context} if context else {}),
                 "resources": {"requests": {"cpu": str(cpus), "memory": f"{2 * cpus}Gi"},
                               "limits": {"memory": f"{2 * cpus}Gi"}},
                 "volumeMounts": [{"name": "grading", "mountPath": "/grading"}]}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {"app": "grade-class", "step": step}},
            "spec": {**spec, "template": {"spec": {
                "restartPolicy": "Never", "containers": [container],
                "volumes": [{"name": "grading",
                             "persistentVolumeClaim": {"claimName": "grading"}}]}}}}


def k8s(count: int, *, jobs: int = 2, skip_execution: bool = False,
        image: str = "course-grader", notebooks: list[str] | None = None,
        allow_unconfined: bool = False) -> str:
    """Kubernetes manifests: an indexed Job of ``count`` shards and the merge Job."""
    _check(count, jobs)
    shards = _job("grade-class-shards", "shards", image,
                  "SHARD=$((JOB_COMPLETION_INDEX + 1))\n"
                  + shard_command(count, jobs=jobs, skip_execution=skip_execution,
                                   notebooks=notebooks, allow_unconfined=allow_unconfined), jobs,
                  {"completionMode": "Indexed", "completions": count, "parallelism": count,
                   "backoffLimit": count, "activeDeadlineSeconds": SLURM_HOURS * 3600},
                  None if allow_unconfined else CONFINING_CONTEXT)
    merge = _job("grade-class-merge", "merge", image, MERGE_COMMAND, 1, {"backoffLimit": 1})
    header = f"""\
# Grades a class in {count} shards on Kubernetes; generated by
# `{_generator(count, jobs, skip_execution, notebooks, allow_unconfined)} --k8s {image}`: regenerate it rather than editing it.
# The image holds the course repository (hidden tests included) with the grader and bubblewrap
# (package bubblewrap) installed; bubblewrap confines each learner's code, for which the shards'
# pods may create namespaces (capability SYS_ADMIN, no seccomp filter or AppArmor profile), or
# each shard refuses to grade. The PersistentVolumeClaim `grading` (ReadWriteMany where pods
# run on several nodes) holds submissions/, one folder per learner, and receives shards/ and
# grades/. Run the shards, wait for all of them, then the merge:
#   kubectl apply -f FILE -l step=shards
#   kubectl wait --for=condition=complete --timeout={SLURM_HOURS}h job/grade-class-shards
#   kubectl apply -f FILE -l step=merge
"""
    return header + yaml.dump_all([shards, merge], Dumper=_Dumper, sort_keys=False, width=1000)
