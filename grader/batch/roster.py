"""Who is in the class and what each learner handed in: find every learner's notebooks in a
folder of submissions (a class's discovery step: :func:`discover`, and in nbgrader's layout
:func:`is_nbgrader`, :func:`nbgrader_assignments` and :func:`discover_assignment`) and match them
to the course's hidden suites (:func:`plan`).

Layouts of ``SUBMISSIONS`` (detected in this order):

* nbgrader's ``SUBMISSIONS/submitted/STUDENT/ASSIGNMENT/*.ipynb``, each assignment a class of
  its own (``SUBMISSIONS`` may be ``submitted/`` itself: :func:`submitted_folder`);
* ``SUBMISSIONS/STUDENT/**/*.ipynb`` (any depth below the learner's folder);
* with ``flat=True``: ``SUBMISSIONS/STUDENT_<anything>.ipynb`` (the id precedes the first ``_``).

A learner's :class:`Plan` carries a fingerprint of everything that decides their grade, so that
:mod:`grader.batch.grading` regrades a learner only when it changed.
"""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import grader
from grader.errors import GraderError

LAYOUTS = ("SUBMISSIONS/STUDENT/*.ipynb (any depth), nbgrader's "
           "SUBMISSIONS/submitted/STUDENT/ASSIGNMENT/*.ipynb, or a flat folder of "
           "STUDENT_<anything>.ipynb files with --flat")


# -- what to grade ------------------------------------------------------------------------------
@dataclass
class Options:
    """How each learner is graded (part of a learner's fingerprint: changing it regrades)."""

    skip_execution: bool = False
    """Run the hidden tests only, not each notebook top to bottom."""
    cell_timeout: float | None = None
    """Seconds one notebook cell may run (None: the grader's default for each notebook)."""
    run_as: str | None = None
    """Run the learners' code as this unprivileged user (see ``check --run-as``)."""
    memory_limit: float | None = None
    """Address space of each learner process in GiB (None: the sandbox's default)."""
    require_confinement: bool = False
    """Grade a learner only under bubblewrap's confinement: where it cannot confine their code,
    they are not graded, with bubblewrap's reason in one line. ``batch`` sets it unless given
    ``--allow-unconfined``. Not part of the fingerprint: it changes whether a learner is graded,
    never the grade."""


@dataclass
class Plan:
    """One learner's submission, matched to the course's suites."""

    student_id: str
    folder: Path
    """Names in reports are relative to this folder."""
    notebooks: dict[str, Path] = field(default_factory=dict)
    """Suite -> the notebook graded for it."""
    unreadable: dict[str, str] = field(default_factory=dict)
    """Suite -> why the notebook handed in for it could not be read (graded as 0)."""
    problems: list[str] = field(default_factory=list)
    """Why some of this learner's files could not be graded."""
    notes: list[str] = field(default_factory=list)
    """Things the instructor should know (a notebook handed in twice)."""
    fingerprint: dict = field(default_factory=dict)
    """SHA-256 of every file and of the suites used, the grader version and the options."""


def _notebooks_below(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts and p.is_file())


def discover(submissions: Path, *, flat: bool = False) -> dict[str, tuple[Path, list[Path]]]:
    """Learner id -> (their folder, their notebooks), sorted by id. Raises GraderError."""
    if not submissions.is_dir():
        raise GraderError(f"{submissions}: no such folder; give the folder of submissions")
    learners: dict[str, tuple[Path, list[Path]]] = {}
    if flat:
        for path in sorted(submissions.glob("*.ipynb")):
            student_id = path.name.split("_", 1)[0]
            if "_" in path.name and student_id and not student_id.startswith("."):
                learners.setdefault(student_id, (submissions, []))[1].append(path)
    else:
        base = submissions / "submitted" if (submissions / "submitted").is_dir() else submissions
        for folder in sorted(p for p in base.iterdir() if p.is_dir()):
            notebooks = _notebooks_below(folder)
            if notebooks and not folder.name.startswith("."):
                learners[folder.name] = (folder, notebooks)
    if not learners:
        raise GraderError(f"{submissions}: no submissions found; expected {LAYOUTS}")
    return dict(sorted(learners.items()))


def submitted_folder(submissions: Path) -> Path | None:
    """nbgrader's ``submitted/`` folder, whether ``submissions`` holds it or is it, else None.

    ``submissions`` is ``submitted/`` itself when a learner's assignment folder holds nbgrader's
    ``timestamp.txt`` (``submitted/STUDENT/ASSIGNMENT/timestamp.txt``), or when it is named
    ``submitted`` and its notebooks lie two folders down, never one."""
    if (submissions / "submitted").is_dir():
        return submissions / "submitted"
    if not submissions.is_dir():
        return None
    if any(submissions.glob("*/*/timestamp.txt")):
        return submissions
    if (submissions.name == "submitted" and any(submissions.glob("*/*/*.ipynb"))
            and not any(submissions.glob("*/*.ipynb"))):
        return submissions
    return None


def is_nbgrader(submissions: Path) -> bool:
    """Whether ``submissions`` is laid out as nbgrader's ``submitted/STUDENT/ASSIGNMENT/`` (given
    as the folder that holds ``submitted/`` or as ``submitted/`` itself)."""
    return submitted_folder(submissions) is not None


def _submitted(submissions: Path) -> Path:
    return submitted_folder(submissions) or submissions / "submitted"


def nbgrader_assignments(submissions: Path) -> list[str]:
    """The assignment folders found under any learner in nbgrader's ``submitted/``, sorted."""
    names = set()
    for learner in _submitted(submissions).iterdir():
        if learner.is_dir() and not learner.name.startswith("."):
            names |= {a.name for a in learner.iterdir()
                      if a.is_dir() and not a.name.startswith(".") and _notebooks_below(a)}
    return sorted(names)


def discover_assignment(submissions: Path, name: str) -> dict[str, tuple[Path, list[Path]]]:
    """Learner id -> (their folder of assignment ``name``, its notebooks), sorted by id."""
    learners = {}
    for learner in sorted(_submitted(submissions).iterdir()):
        folder = learner / name
        if learner.name.startswith(".") or not folder.is_dir():
            continue
        notebooks = _notebooks_below(folder)
        if notebooks:
            learners[learner.name] = (folder, notebooks)
    if not learners:
        known = ", ".join(nbgrader_assignments(submissions)) or "none"
        raise GraderError(f"--assignment {name}: no learner handed in a notebook for it under "
                          f"{_submitted(submissions)} (assignments found: {known})")
    return learners


def sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, in hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _sha256_or_reason(path: Path) -> str:
    try:
        return sha256(path)
    except OSError as exc:
        return f"unreadable: {exc.strerror}"


def plan(student_id: str, folder: Path, files: list[Path], options: Options) -> Plan:
    """Match a learner's notebooks to suites (metadata, then file name), as ``check`` does."""
    from grader.judge.proxy import known_suites, suite_path
    from grader.notebook.read import read_notebook, suite_name

    suites = known_suites()
    result = Plan(student_id=student_id, folder=folder)
    candidates: dict[str, list[tuple[Path, str | None]]] = {}
    for path in files:
        name = path.relative_to(folder).as_posix()
        try:
            suite, problem = suite_name(read_notebook(path), path), None
        except GraderError as exc:
            suite, problem = path.stem, str(exc).replace(str(path), name)
        unprefixed = path.stem.removeprefix(f"{student_id}_")
        if suite not in suites and suite == path.stem and unprefixed in suites:
            suite = unprefixed  # the flat layout's STUDENT_<notebook>.ipynb
        if suite not in suites:
            result.problems.append(problem or f"{name}: not a notebook of this course (no hidden "
                                   f"tests for {suite!r})")
            continue
        candidates.setdefault(suite, []).append((path, problem))
    for suite, found in sorted(candidates.items()):
        readable = [c for c in found if c[1] is None] or found
        path, problem = max(readable, key=lambda c: (_mtime(c[0]), c[0].as_posix()))
        if len(found) > 1:
            result.notes.append(f"{len(found)} notebooks for {suite}: graded the newest, "
                                f"{path.relative_to(folder).as_posix()}")
        if problem:
            result.unreadable[suite] = problem
            result.problems.append(problem)
        else:
            result.notebooks[suite] = path
    result.fingerprint = {
        "grader_version": grader.__version__,
        "options": {k: v for k, v in dataclasses.asdict(options).items() if k != "require_confinement"},
        "notebooks": {p.relative_to(folder).as_posix(): _sha256_or_reason(p) for p in files},
        "suites": {s: sha256(suite_path(s)) for s in sorted(candidates)},
    }
    return result
