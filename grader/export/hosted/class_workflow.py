"""Grade a class in shards on an engine that already exists: a GitHub Actions matrix, a Slurm job
array or a Kubernetes indexed Job (``python -m grader class-workflow``).

Every engine runs the same two commands, from a checkout of the course repository (hidden tests
included) with the grader installed and the submissions in ``submissions/`` (one folder per
learner, or any layout ``batch`` reads):

* one shard per job, task or pod, with ``SHARD`` set to its number (1 to N; on Kubernetes,
  ``JOB_COMPLETION_INDEX`` + 1):
  ``python -m grader batch submissions --out "shards/shard-$SHARD" --shard "$SHARD/N" --jobs 2``;
* once every shard has succeeded: ``python -m grader merge shards/shard-* --out grades``.

The class's options (``--roster``, ``--lms``, ``--due``, ``--late-policy``, ``--assignment``)
are given to the shard command; each shard records them (:mod:`grader.batch.shards`) and the merge
writes from them what one ``batch`` run would, ``canvas.csv`` included. The grader schedules
nothing itself: the engine starts the shards and the merge. A learner's code runs under
bubblewrap (its own filesystem view without the repository, the hidden tests or the other
learners' folders, and no network), or that learner is not graded, with bubblewrap's reason in
one line (``batch``'s default; :mod:`grader.sandbox.confinement`). The Actions workflow installs
bubblewrap and
lets it create user namespaces, and no step that runs learner code holds a token (the checkout
keeps no credentials); a Slurm cluster needs bubblewrap on its nodes, a Kubernetes image needs it
and shard pods that may create user namespaces. ``allow_unconfined`` passes
``--allow-unconfined`` (the shard then grades with the fallback and its reports' first line says
so).
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from grader.errors import GraderError
from grader.export.hosted.classroom import TORCH_INDEX

MAX_SHARDS = 256
"""GitHub Actions runs at most 256 jobs from one matrix."""
JOB_MINUTES = 360
"""GitHub-hosted runners stop any job after 6 hours."""
SLURM_HOURS = 6
"""A shard's time limit on Slurm: at about 1.3 learners a minute on 2 cores, 450 learners."""
SECRET = "CLASSROOM_TOKEN"
"""The grading repository's secret: a token that can read the classroom's repositories."""


CLASS_OPTIONS = ("roster", "lms", "due", "late_policy", "assignment")
"""The class's options, passed to the shard command as ``--roster`` ... ``--assignment``."""


def check_class_options(settings: dict) -> None:
    """Refuse, with one line, class options that ``batch`` would refuse when the shards run."""
    from grader.batch import deadlines, enrolment

    if settings.get("lms") is not None and settings.get("roster") is None:
        raise GraderError(f"--lms {settings['lms']}: needs --roster (with the LMS's ids)")
    if settings.get("late_policy") is not None:
        if settings.get("due") is None:
            raise GraderError("--late-policy needs --due (the date and time work is due)")
        deadlines.LatePolicy.parse(settings["late_policy"])
    if settings.get("due") is not None:
        deadlines.parse_time(settings["due"])
    roster = settings.get("roster")
    if roster is not None:
        if Path(roster).is_absolute():
            raise GraderError(f"--roster {roster}: give the roster's path inside the course "
                              "repository (relative), where every shard's checkout finds it")
        enrolment.read(Path(roster))


def _class_arguments(settings: dict) -> str:
    parts = []
    for key in CLASS_OPTIONS:
        if settings.get(key) is not None:
            parts += [f"--{key.replace('_', '-')}", shlex.quote(str(settings[key]))]
    return "".join(f" {part}" for part in parts)


def shard_command(count: int, *, jobs: int = 2, skip_execution: bool = False,
                  notebooks: list[str] | None = None, allow_unconfined: bool = False,
                  **settings) -> str:
    """The command that grades shard ``$SHARD`` of ``count`` (a shell command line); with
    ``notebooks``, only the assignment's notebooks (``batch --notebooks``); ``settings`` are the
    class's options (:data:`CLASS_OPTIONS`). It grades only under bubblewrap's confinement
    unless ``allow_unconfined``."""
    extra = " --allow-unconfined" if allow_unconfined else ""
    extra += " --skip-execution" if skip_execution else ""
    extra += f" --notebooks {' '.join(notebooks)}" if notebooks else ""
    extra += _class_arguments(settings)
    return (f'python -m grader batch submissions --out "shards/shard-$SHARD" '
            f'--shard "$SHARD/{count}" --jobs {jobs}{extra}')


MERGE_COMMAND = "python -m grader merge shards/shard-* --out grades"
"""The command that joins every shard into ``grades/`` (the class's options travel in the shard
records)."""


class _Dumper(yaml.SafeDumper):
    """Writes a string of several lines as a literal block (``run: |``), as people write them."""


_Dumper.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None))


def _check(count: int, jobs: int, settings: dict | None = None) -> None:
    if not 1 <= count <= MAX_SHARDS:
        raise GraderError(f"--shards {count}: give 1 to {MAX_SHARDS} shards (a GitHub Actions "
                          "matrix runs at most 256 jobs)")
    if jobs < 1:
        raise GraderError(f"--jobs {jobs}: give a positive number of learners per shard at once")
    unknown = set(settings or {}) - set(CLASS_OPTIONS)
    if unknown:
        raise TypeError(f"unknown class options: {', '.join(sorted(unknown))}")
    check_class_options(settings or {})


def _generator(count: int, jobs: int, skip_execution: bool,
               notebooks: list[str] | None = None, settings: dict | None = None,
               allow_unconfined: bool = False) -> str:
    """The command line that generates the file."""
    return (f"python -m grader class-workflow --shards {count}"
            + (f" --jobs {jobs}" if jobs != 2 else "")
            + (" --skip-execution" if skip_execution else "")
            + (" --allow-unconfined" if allow_unconfined else "")
            + (f" --notebooks {' '.join(notebooks)}" if notebooks else "")
            + _class_arguments(settings or {}))


# -- GitHub Actions -----------------------------------------------------------------------------
def _clone(settings: dict) -> str:
    """The collect step: the learners' repositories (never the starter), each at the commit
    that counts (:mod:`grader.batch.classroom_collect`)."""
    extra = "".join(f" --{key.replace('_', '-')} {shlex.quote(str(settings[key]))}"
                    for key in ("due", "roster") if settings.get(key) is not None)
    extra += " --late-policy" if settings.get("late_policy") is not None else ""
    return f"""if [ -z "$ORGANIZATION" ] || [ -z "$PREFIX" ]; then
  echo "give the classroom's organization and the assignment's repository prefix"
  exit 1
fi
python3 -m grader.batch.classroom_collect --organization "$ORGANIZATION" --prefix "$PREFIX" \\
  --out submissions{extra} ${{STARTER:+--starter "$STARTER"}}
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
        "starter": {"description": "the starter repository's name, where it is not marked as a "
                                   "template (template repositories are never graded)",
                    "type": "string", "default": ""},
        "archive": {"description": "path of a .zip or .tar.gz with one folder per learner "
                                   "(source: archive)", "type": "string",
                    "default": "submissions.zip"},
    }


def _collect_job(settings: dict) -> dict:
    return {"runs-on": "ubuntu-latest", "timeout-minutes": 60, "steps": [
        {"uses": "actions/checkout@v5", "with": {"persist-credentials": False}},
        {"name": "Clone the learners' repositories", "if": "inputs.source == 'classroom'",
         "env": {"GH_TOKEN": f"${{{{ secrets.{SECRET} }}}}",
                 "ORGANIZATION": "${{ inputs.organization }}", "PREFIX": "${{ inputs.prefix }}",
                 "STARTER": "${{ inputs.starter }}"},
         "run": _clone(settings)},
        {"name": "Unpack the archive", "if": "inputs.source == 'archive'",
         "env": {"ARCHIVE": "${{ inputs.archive }}"}, "run": _UNPACK},
        {"uses": "actions/upload-artifact@v6",
         "with": {"name": "submissions", "path": "submissions", "if-no-files-found": "error",
                  "retention-days": 7}},
    ]}


def actions(count: int, *, jobs: int = 2, skip_execution: bool = False,
            notebooks: list[str] | None = None, allow_unconfined: bool = False,
            **settings) -> str:
    """The GitHub Actions workflow's text: collect, ``count`` shard jobs, merge; ``settings``
    are the class's options (:data:`CLASS_OPTIONS`). The shard jobs install bubblewrap before
    grading; no checkout keeps its token, and the grading step's environment holds none."""
    _check(count, jobs, settings)
    grade = {
        "needs": "collect", "runs-on": "ubuntu-latest", "timeout-minutes": JOB_MINUTES,
        "strategy": {"fail-fast": False, "matrix": {"shard": list(range(1, count + 1))}},
        "env": {"SHARD": "${{ matrix.shard }}"},
        "steps": _install(confine=True) + [
            {"uses": "actions/download-artifact@v7",
             "with": {"name": "submissions", "path": "submissions"}},
            {"name": "Grade the shard",
             "run": shard_command(count, jobs=jobs, skip_execution=skip_execution,
                                   notebooks=notebooks, allow_unconfined=allow_unconfined,
                                   **settings)},
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
        "jobs": {"collect": _collect_job(settings), "grade": grade, "merge": merge},
    }
    header = f"""\
# Grades a class in {count} shards; generated by
# `{_generator(count, jobs, skip_execution, notebooks, settings, allow_unconfined)}`: regenerate it rather than editing it.
# Commit it to the instructor's private grading repository (the course repository, hidden
# tests included) and run it from the Actions tab. With source `classroom`, the secret
# {SECRET} must be a token that can read the classroom's repositories; only the collect job
# sees it. The learners' repositories are cloned (never a template repository), each at the
# commit that counts, listed in submissions/commits.csv. Each shard runs the learners' code under
# bubblewrap (no repository, no other learner's folder, no network) or refuses to grade. The
# gradebook, summary, feedback pages (and canvas.csv with --lms) are the merge job's artifact
# `gradebook`.
"""
    return header + yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=1000)


# -- Slurm --------------------------------------------------------------------------------------
def slurm(count: int, *, jobs: int = 2, skip_execution: bool = False,
          notebooks: list[str] | None = None, allow_unconfined: bool = False, **settings) -> str:
    """A Slurm job-array script: ``bash`` it to submit ``count`` shard tasks and the merge."""
    _check(count, jobs, settings)
    merge = shlex.quote(MERGE_COMMAND)
    return f"""#!/bin/bash
# Grades a class in {count} shards on Slurm; generated by
# `{_generator(count, jobs, skip_execution, notebooks, settings, allow_unconfined)} --slurm`: regenerate it rather than editing it.
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
               allow_unconfined=allow_unconfined, **settings)}
"""


# -- Kubernetes ---------------------------------------------------------------------------------
UID = 1000
"""The unprivileged user (and group) the grading image and its pods run as."""
_TEMP = {"name": "tmp", "mountPath": "/tmp"}


def _mount(sub: str, *, read_only: bool) -> dict:
    mount = {"name": "grading", "mountPath": f"/grading/{sub}", "subPath": sub}
    return {**mount, "readOnly": True} if read_only else mount


CONFINING_CONTEXT = {"seccompProfile": {"type": "Unconfined"},
                     "appArmorProfile": {"type": "Unconfined"}}
"""What a shard's container needs for bubblewrap to create user namespaces and mount its view as
user {UID}: neither the runtime's default seccomp filter nor its AppArmor profile, which forbid
both (no capability is added; the learner's processes under bubblewrap get none either).
``appArmorProfile`` needs Kubernetes 1.30, and the nodes must allow unprivileged user
namespaces."""


def _job(name: str, step: str, image: str, script: str, cpus: int, spec: dict,
         mounts: list[dict], context: dict | None = None) -> dict:
    container = {"name": step, "image": image, "workingDir": "/grading",
                 "command": ["bash", "-e", "-c", script],
                 "env": [{"name": "HOME", "value": "/tmp"},
                         {"name": "MPLCONFIGDIR", "value": "/tmp"}],
                 "resources": {"requests": {"cpu": str(cpus), "memory": f"{2 * cpus}Gi"},
                               "limits": {"memory": f"{2 * cpus}Gi"}},
                 "securityContext": {"allowPrivilegeEscalation": False,
                                     "readOnlyRootFilesystem": True,
                                     "capabilities": {"drop": ["ALL"]}, **(context or {})},
                 "volumeMounts": [*mounts, _TEMP]}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"{name}-@RUN@", "labels": {"app": "grade-class", "step": step}},
            "spec": {**spec, "template": {"spec": {
                "restartPolicy": "Never",
                "securityContext": {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID,
                                    "fsGroup": UID, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [container],
                "volumes": [{"name": "grading",
                             "persistentVolumeClaim": {"claimName": "grading"}},
                            {"name": "tmp", "emptyDir": {}}]}}}}


def k8s_manifests(count: int, *, jobs: int = 2, skip_execution: bool = False,
                  image: str = "course-grader", notebooks: list[str] | None = None,
                  allow_unconfined: bool = False, **settings) -> list[dict]:
    """The two Jobs: an indexed Job of ``count`` shards and the merge; their names end in
    ``-@RUN@``, which :func:`k8s`'s script replaces with the run's own name."""
    shards = _job("grade-class-shards", "shards", image,
                  "SHARD=$((JOB_COMPLETION_INDEX + 1))\n"
                  + shard_command(count, jobs=jobs, skip_execution=skip_execution,
                                  notebooks=notebooks, allow_unconfined=allow_unconfined,
                                  **settings), jobs,
                  {"completionMode": "Indexed", "completions": count, "parallelism": count,
                   "backoffLimit": count, "activeDeadlineSeconds": SLURM_HOURS * 3600},
                  [_mount("submissions", read_only=True), _mount("shards", read_only=False)],
                  None if allow_unconfined else CONFINING_CONTEXT)
    merge = _job("grade-class-merge", "merge", image, MERGE_COMMAND, 1,
                 {"backoffLimit": 1, "activeDeadlineSeconds": 3600},
                 [_mount("shards", read_only=True), _mount("grades", read_only=False)])
    return [shards, merge]


def k8s(count: int, *, jobs: int = 2, skip_execution: bool = False,
        image: str = "course-grader", notebooks: list[str] | None = None,
        allow_unconfined: bool = False, **settings) -> str:
    """A bash script that runs the Kubernetes Jobs of :func:`k8s_manifests` with ``kubectl``:
    the shards, then, once they have succeeded, the merge; it says which Job failed."""
    _check(count, jobs, settings)
    manifests = yaml.dump_all(k8s_manifests(count, jobs=jobs, skip_execution=skip_execution,
                                            image=image, notebooks=notebooks,
                                            allow_unconfined=allow_unconfined, **settings),
                              Dumper=_Dumper, sort_keys=False, width=1000)
    return f"""#!/bin/bash
# Grades a class in {count} shards on Kubernetes; generated by
# `{_generator(count, jobs, skip_execution, notebooks, settings, allow_unconfined)} --k8s {image}`: regenerate it rather than editing it.
# The image {image} holds the course repository (hidden tests included) with the grader and
# bubblewrap installed (`python -m grader class-workflow --dockerfile` writes its recipe). Its pods
# run as user {UID}, with a read-only root file system; bubblewrap confines each learner's code,
# for which the shard pods may create user namespaces (no seccomp filter or AppArmor profile; the
# nodes must allow unprivileged user namespaces), or each shard refuses to grade. The PersistentVolumeClaim `grading`
# (ReadWriteMany where pods run on several nodes) holds submissions/ (one folder per learner,
# mounted read-only), shards/ and grades/ (both writable by user {UID}).
# Run it with bash where kubectl reaches the cluster: it starts the shards as the indexed Job
# grade-class-shards-RUN (RUN: $RUN, or the time it starts), waits until it has succeeded or
# failed and says which, then runs the merge Job grade-class-merge-RUN the same way.
set -euo pipefail
RUN=${{RUN:-$(date -u +%Y%m%d-%H%M%S)}}
wait_for() {{  # 0 once job $1 has succeeded; 1, saying so, once it has failed
  local job=$1 state
  while true; do
    state=$(kubectl get "job/$job" -o jsonpath='{{range .status.conditions[?(@.status=="True")]}}{{.type}} {{end}}')
    case " $state " in
      *" Complete "*) echo "job/$job succeeded"; return 0 ;;
      *" Failed "*)
        echo "job/$job failed: see kubectl describe job/$job and kubectl logs -l job-name=$job" >&2
        return 1 ;;
    esac
    sleep "${{POLL_SECONDS:-30}}"
  done
}}
manifests() {{
  sed "s/@RUN@/$RUN/g" <<'MANIFESTS'
{manifests}MANIFESTS
}}
manifests | kubectl apply -l step=shards -f -
wait_for "grade-class-shards-$RUN"
manifests | kubectl apply -l step=merge -f -
wait_for "grade-class-merge-$RUN"
echo "the gradebook, summary and feedback pages are in grades/ on the volume grading"
"""


def pinned_requirements(pyproject: Path | None = None) -> list[str]:
    """The course's pinned packages, as ``pyproject.toml``'s ``[project] dependencies``."""
    import tomllib

    path = pyproject or Path(__file__).resolve().parents[3] / "pyproject.toml"
    data = tomllib.loads(path.read_text())
    return list(data["project"]["dependencies"])


def dockerfile() -> str:
    """The recipe of the grading image that :func:`k8s`'s pods run: bubblewrap (which confines the
    learners' code), the pinned packages (CPU-only PyTorch), then the course repository, installed
    as the unprivileged user :data:`UID`."""
    pins = " \\\n      ".join(shlex.quote(pin) for pin in pinned_requirements())
    return f"""# The grading image of `python -m grader class-workflow --k8s IMAGE`; generated by
# `python -m grader class-workflow --dockerfile`: regenerate it rather than editing it.
# Build it in the course repository (hidden tests included), where this file is saved as
# grader.Dockerfile: docker build -f grader.Dockerfile -t IMAGE .  (then push IMAGE where the
# cluster pulls from; a .dockerignore listing .venv keeps a local environment out of it). The
# packages are pyproject.toml's pins; PyTorch is its CPU-only build.
FROM python:3.11-slim
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1 MPLBACKEND=Agg
RUN useradd --uid {UID} --user-group --create-home grader \
 && apt-get update && apt-get install -y --no-install-recommends bubblewrap \
 && rm -rf /var/lib/apt/lists/*
RUN python -m pip install --extra-index-url {TORCH_INDEX} \\
      {pins}
COPY --chown=root:root . /course
RUN python -m pip install --no-deps -e /course
USER {UID}:{UID}
WORKDIR /grading
"""
