"""Grade a whole class: find each learner's notebooks, grade each learner in a child process of
its own (in parallel), and write a gradebook, per-learner reports and a class summary.

This is a loop *around* :mod:`grader.grade`; nothing below it knows about classes. Each learner
is graded by ``python -m grader.batch --worker ...`` (the trusted grader, which in turn keeps the
learner's code in sandboxed children) under a wall-clock cap. The worker writes one JSON file of
plain :mod:`grader.results` records per notebook; everything this module writes is built from
those records, never from anything the learner's code printed or wrote.

Layouts of ``SUBMISSIONS`` (detected in this order):

* nbgrader's ``SUBMISSIONS/submitted/STUDENT/ASSIGNMENT/*.ipynb``;
* ``SUBMISSIONS/STUDENT/**/*.ipynb`` (any depth below the learner's folder);
* with ``flat=True``: ``SUBMISSIONS/STUDENT_<anything>.ipynb`` (the id precedes the first ``_``).
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import grader
from grader import report as reporters
from grader import supervise
from grader.errors import GraderError
from grader.feedback import NOT_SUBMITTED
from grader.results import (MISSING, PASSED, TIMED_OUT, CellFailure, ExecutionResult,
                            NotebookReport, TestResult)

GRADER_ROOT = Path(__file__).resolve().parent.parent
OK = "ok"
LAYOUTS = ("SUBMISSIONS/STUDENT/*.ipynb (any depth), nbgrader's "
           "SUBMISSIONS/submitted/STUDENT/ASSIGNMENT/*.ipynb, or a flat folder of "
           "STUDENT_<anything>.ipynb files with --flat")
RECORD = "record.json"
"""Per learner: the report records and fingerprints that the gradebook and regrades read."""


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
    from grader.judge import known_suites, suite_path
    from grader.notebook import read_notebook, suite_name

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
        "options": dataclasses.asdict(options),
        "notebooks": {p.relative_to(folder).as_posix(): _sha256_or_reason(p) for p in files},
        "suites": {s: sha256(suite_path(s)) for s in sorted(candidates)},
    }
    return result


# -- points possible ----------------------------------------------------------------------------
class _Collector:
    """A pytest plugin that records every hidden test's exercise, points and description."""

    def __init__(self) -> None:
        self.tests: list[dict] = []

    def pytest_collection_modifyitems(self, items) -> None:
        for item in items:
            marker = item.get_closest_marker("exercise")
            doc = (getattr(item, "obj", None).__doc__ or "").strip().splitlines()
            self.tests.append({
                "exercise": marker.args[0], "name": item.name,
                "description": doc[0] if doc else "",
                "max_score": float(marker.kwargs.get("points", 1)),
                "public": bool(marker.kwargs.get("public", False)),
            })


def _collect_points() -> dict[str, list[dict]]:
    """Suite -> its hidden tests (without running them). Runs in the worker process."""
    import pytest

    from grader.judge import SUITES_DIR, exercise_order, known_suites, suite_path

    points = {}
    for suite in known_suites():
        collector = _Collector()
        code = pytest.main([str(suite_path(suite)), "--collect-only", "-p", "no:terminal",
                            "-p", "no:cacheprovider", "--import-mode=importlib",
                            "-c", str(SUITES_DIR / "pytest.ini"), "--rootdir", str(SUITES_DIR)],
                           plugins=[collector])
        if code != 0 or not collector.tests:
            raise GraderError(f"the hidden tests of {suite} could not be collected (pytest exit "
                              f"{int(code)}); run `python -m grader check` on a solution")
        order = {name: index for index, name in enumerate(exercise_order(suite))}
        points[suite] = sorted(collector.tests, key=lambda t: order.get(t["exercise"], len(order)))
    return points


def _unit_results(points: list[dict], status: str, output: str) -> list[TestResult]:
    return [TestResult(**test, status=status, output=output) for test in points]


def _placeholder(suite: str, points: list[dict], *, path: str, error: str, status: str,
                 output: str) -> NotebookReport:
    return NotebookReport(path=path, suite=suite, error=error,
                          tests=_unit_results(points, status, output),
                          exercise_order=list(dict.fromkeys(t["exercise"] for t in points)))


# -- one learner, in a child process ------------------------------------------------------------
_live_workers: set[int] = set()
"""Pids of the workers grading learners right now (their trees are not strays)."""
_live_lock = threading.Lock()


def _stop(process: subprocess.Popen) -> None:
    """Kill a learner's worker and everything below it (escaped processes too), then reap it.

    Where this process is a subreaper (the ``batch`` command makes it one), a process that left
    the worker's tree was re-parented here, and :func:`grader.supervise.kill_strays` finds it.
    """
    supervise.kill_tree(process.pid)
    process.wait()
    with _live_lock:
        _live_workers.discard(process.pid)
        keep = set(_live_workers)
    supervise.kill_strays(keep)


@dataclass
class Outcome:
    """What came back from grading one learner."""

    reports: dict[str, NotebookReport]
    """Suite -> report, for the notebooks the worker finished."""
    status: str = OK
    seconds: float = 0.0


def _report_from_dict(data: dict) -> NotebookReport:
    execution = data.get("execution")
    if execution is not None:
        failures = [CellFailure(**f) for f in execution.pop("failures", [])]
        execution = ExecutionResult(**execution, failures=failures)
    tests = [TestResult(**t) for t in data.pop("tests", [])]
    data.pop("execution", None)
    return NotebookReport(**data, execution=execution, tests=tests)


def _tail(path: Path, limit: int = 400) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, path.stat().st_size - 4096))
            lines = handle.read().decode(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return (lines[-1] if lines else "")[-limit:]


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GRADER_"))}
    env.update({"PYTHONPATH": str(GRADER_ROOT), "PYTHONDONTWRITEBYTECODE": "1",
                "MPLBACKEND": "Agg"})
    return env


def grade_learner(work: Plan, options: Options, *, timeout: float,
                  stopping: threading.Event | None = None) -> Outcome:
    """Grade one learner's notebooks in a worker process, stopped after ``timeout`` seconds."""
    start = time.monotonic()
    if not work.notebooks:
        return Outcome(reports={})
    with tempfile.TemporaryDirectory(prefix="grader-batch-") as scratch_name:
        scratch = Path(scratch_name)
        command = [sys.executable, "-P", "-m", "grader.batch", "--worker", str(scratch / "out")]
        if options.cell_timeout is not None:
            command += ["--cell-timeout", f"{options.cell_timeout:g}"]
        command += ["--skip-execution"] if options.skip_execution else []
        command += ["--run-as", options.run_as] if options.run_as else []
        if options.memory_limit is not None:
            command += ["--memory-limit", f"{options.memory_limit:g}"]
        for suite, path in work.notebooks.items():
            command += ["--notebook", suite, path.relative_to(work.folder).as_posix(),
                        str(path.resolve())]
        env = _child_env()
        with open(scratch / "worker.log", "wb") as log, _live_lock:
            process = subprocess.Popen(command, cwd=scratch, env=env, stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            _live_workers.add(process.pid)
        status = OK
        try:
            while process.poll() is None:
                if time.monotonic() - start > timeout:
                    status = TIMED_OUT
                    break
                if stopping is not None and stopping.is_set():
                    raise KeyboardInterrupt
                time.sleep(0.2)
        finally:
            _stop(process)  # also when it ended by itself: whatever it left behind goes too
        reports: dict[str, NotebookReport] = {}
        for index in range(len(work.notebooks)):  # only the records the worker was asked for
            path = scratch / "out" / f"{index:03d}.json"
            if not path.is_file():
                continue
            try:
                report = _report_from_dict(json.loads(path.read_text()))
            except (ValueError, TypeError, KeyError) as exc:
                status = f"could not be graded: the grader wrote an unreadable report ({exc})"
                continue
            reports[report.suite] = report
        if status == OK and process.returncode != 0:
            status = (f"could not be graded: the grader stopped with exit status "
                      f"{process.returncode} ({_tail(scratch / 'worker.log')})")
        return Outcome(reports=reports, status=status, seconds=time.monotonic() - start)


def _worker(argv: list[str]) -> int:
    """``python -m grader.batch --worker OUT ...``: grade notebooks, one JSON record each."""
    parser = argparse.ArgumentParser(prog="python -m grader.batch")
    parser.add_argument("--worker", type=Path, required=True, metavar="OUT")
    parser.add_argument("--points", action="store_true")
    parser.add_argument("--skip-execution", action="store_true")
    parser.add_argument("--cell-timeout", type=float, default=None)
    parser.add_argument("--run-as", default=None)
    parser.add_argument("--memory-limit", type=float, default=None)
    parser.add_argument("--notebook", nargs=3, action="append", default=[],
                        metavar=("SUITE", "NAME", "PATH"))
    args = parser.parse_args(argv)
    args.worker.mkdir(mode=0o700, parents=True, exist_ok=True)
    if args.points:
        reporters.write_text(args.worker / "points.json", json.dumps(_collect_points()))
        return 0
    from grader.cli import memory_bytes
    from grader.grade import grade_notebook
    from grader.sandbox import Limits

    supervise.become_subreaper()  # the worker starts nothing but the learner's code
    for index, (suite, name, path) in enumerate(args.notebook):
        report = grade_notebook(Path(path), skip_execution=args.skip_execution,
                                cell_timeout=args.cell_timeout,
                                limits=Limits(run_as=args.run_as, **memory_bytes(args.memory_limit)))
        supervise.kill_strays()  # nothing of the learner's may be alive when the record is written
        report.path = name
        if report.error:
            report.error = report.error.replace(path, name)
        reporters.write_text(args.worker / f"{index:03d}.json",
                             json.dumps(dataclasses.asdict(report)))
    return 0


def points_possible() -> dict[str, list[dict]]:
    """Suite -> its hidden tests' exercise, name, description, points (collected in a child)."""
    with tempfile.TemporaryDirectory(prefix="grader-batch-") as scratch:
        env = _child_env()
        result = subprocess.run([sys.executable, "-P", "-m", "grader.batch", "--worker", scratch,
                                 "--points"], cwd=scratch, env=env, capture_output=True,
                                text=True, timeout=600)
        points = Path(scratch) / "points.json"
        if result.returncode != 0 or not points.is_file():
            tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise GraderError(f"could not list the hidden tests: {tail}")
        return json.loads(points.read_text())


def cached_points(out: Path) -> dict[str, list[dict]]:
    """:func:`points_possible`, reused from ``out/.points.json`` while the suites are unchanged."""
    from grader.judge import known_suites, suite_path

    key = {"grader_version": grader.__version__,
           "suites": {s: sha256(suite_path(s)) for s in known_suites()}}
    cache = out / ".points.json"
    try:
        stored = json.loads(cache.read_text())
        if stored["key"] == key:
            return stored["points"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    points = points_possible()
    reporters.write_text(cache, json.dumps({"key": key, "points": points}))
    return points


# -- a learner's files --------------------------------------------------------------------------
def full_reports(record: dict, points: dict[str, list[dict]]) -> list[NotebookReport]:
    """Every suite's report for one learner, in course order, from the learner's record.

    Suites the learner did not hand in (or that a time-out left ungraded) score 0.
    """
    graded = {r["suite"]: _report_from_dict(json.loads(json.dumps(r)))
              for r in record["notebooks"]}
    reports = []
    for suite, tests in points.items():
        if suite in graded:
            reports.append(graded[suite])
        elif suite in record.get("unreadable", {}):
            problem = record["unreadable"][suite]
            reports.append(_placeholder(suite, tests, path=problem.split(":")[0], error=problem,
                                        status=MISSING, output=problem))
        elif suite in record.get("submitted", []):
            why = f"not graded: {record['grading_status']}"
            reports.append(_placeholder(suite, tests, path=suite, error=why,
                                        status=TIMED_OUT, output=why))
        else:
            reports.append(_placeholder(suite, tests, path="", error=NOT_SUBMITTED,
                                        status=NOT_SUBMITTED, output=""))
    return reports


def _status(work: Plan, outcome: Outcome) -> str:
    if outcome.status != OK:
        return outcome.status
    if work.problems:
        return "could not be graded: " + "; ".join(work.problems)
    return OK


def write_learner(out: Path, work: Plan, outcome: Outcome, points: dict[str, list[dict]]) -> dict:
    """Write a learner's results.json, results.xml and feedback.html; the record last."""
    from grader import feedback

    record = {
        "student_id": work.student_id,
        "grading_status": _status(work, outcome),
        "notes": work.notes,
        "fingerprint": work.fingerprint,
        "submitted": sorted(work.notebooks),
        "unreadable": work.unreadable,
        "notebooks": [dataclasses.asdict(outcome.reports[s]) for s in sorted(outcome.reports)],
        "seconds": round(outcome.seconds, 3),
    }
    reports = full_reports(record, points)
    folder = out / work.student_id
    results = reporters.gradescope(reports, outcome.seconds)
    results["extra_data"] = {
        "student_id": work.student_id, "grading_status": record["grading_status"],
        "notes": work.notes, "sha256": {k: work.fingerprint[k] for k in ("notebooks", "suites")},
        "grader_version": work.fingerprint["grader_version"],
    }
    reporters.write_text(folder / "results.json", json.dumps(results, indent=2) + "\n")
    reporters.write_text(folder / "results.xml", reporters.junit(reports))
    reporters.write_text(folder / "feedback.html", feedback.render(
        reports, title=f"Feedback for {work.student_id}", student_id=work.student_id,
        grading_status=record["grading_status"], notes=work.notes))
    reporters.write_text(folder / RECORD, json.dumps(record, indent=1) + "\n")
    return record


def read_record(out: Path, student_id: str) -> dict | None:
    """A learner's stored record, or None if there is none (or it is unreadable)."""
    try:
        record = json.loads((out / student_id / RECORD).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and "fingerprint" in record else None


# -- the class's files --------------------------------------------------------------------------
def _num(value: float) -> str:
    return f"{round(value, 4):g}"


def gradebook(records: list[dict], points: dict[str, list[dict]]) -> str:
    """``gradebook.csv``: a ``points possible`` row, then one row per learner, sorted by id."""
    columns: list[tuple[str, str | None]] = []
    for suite, tests in points.items():
        columns.append((suite, None))
        for exercise in dict.fromkeys(t["exercise"] for t in tests):
            columns.append((suite, exercise))
    header = ["student_id"] + [s if e is None else f"{s}/{e}" for s, e in columns]
    header += ["total", "max_total", "percent", "grading_status", "notes"]
    maximum = sum(t["max_score"] for tests in points.values() for t in tests)

    def cells(score_of) -> list[str]:
        return [_num(score_of(suite, exercise)) for suite, exercise in columns]

    def possible(suite, exercise):
        return sum(t["max_score"] for t in points[suite] if exercise in (None, t["exercise"]))

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerow(["points possible"] + cells(possible) + [_num(maximum), _num(maximum), "100",
                                                              "", ""])
    for record in sorted(records, key=lambda r: r["student_id"]):
        reports = {r.suite: r for r in full_reports(record, points)}

        def earned(suite, exercise, reports=reports):
            return sum(t.score for t in reports[suite].tests if exercise in (None, t.exercise))

        total = sum(r.score for r in reports.values())
        percent = _num(round(100 * total / maximum, 1)) if maximum else "0"
        writer.writerow([record["student_id"]] + cells(earned) + [
            _num(total), _num(maximum), percent, record["grading_status"],
            "; ".join(record.get("notes", []))])
    return buffer.getvalue()


def summary(records: list[dict], points: dict[str, list[dict]], top: int = 3) -> dict:
    """Per exercise: mean score, share with full marks, the most frequent named mistakes."""
    exercises: dict[str, dict] = {}
    for record in sorted(records, key=lambda r: r["student_id"]):
        for report in full_reports(record, points):
            for exercise, tests in report.exercises().items():
                entry = exercises.setdefault(f"{report.suite}/{exercise}", {
                    "scores": [], "max_score": sum(t.max_score for t in tests), "submitted": 0,
                    "mistakes": Counter(), "failed_tests": Counter()})
                entry["scores"].append(sum(t.score for t in tests))
                submitted = not any(t.status == NOT_SUBMITTED for t in tests)
                entry["submitted"] += submitted
                named, failed = set(), set()
                for test in tests:
                    if test.status == PASSED or not submitted:
                        continue
                    failed.add(test.description or test.name)
                    named |= {reporters.named_mistake(test.output)} - {None}
                entry["mistakes"].update(named)
                entry["failed_tests"].update(failed)
    result = {}
    for key, entry in exercises.items():
        scores, maximum = entry["scores"], entry["max_score"]
        result[key] = {
            "learners": len(scores), "submitted": entry["submitted"], "max_score": maximum,
            "mean_score": round(sum(scores) / len(scores), 3),
            "full_marks_share": round(sum(s == maximum for s in scores) / len(scores), 3),
            "scores": scores,
            "mistakes": [{"mistake": m, "learners": n} for m, n in _top(entry["mistakes"], top)],
            "failed_tests": [{"test": d, "learners": n}
                             for d, n in _top(entry["failed_tests"], top)],
        }
    return result


def _top(counter: Counter, top: int) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))[:top]


def summary_table(data: dict) -> str:
    """The summary as a short plain-text table."""
    width = max([len(k) for k in data] + [8])
    lines = [f"{'exercise':{width}}  {'mean':>11}  {'full marks':>10}  most frequent mistake"]
    for key, entry in data.items():
        mean = f"{_num(entry['mean_score'])}/{_num(entry['max_score'])}"
        mistake = (entry["mistakes"] or entry["failed_tests"] or [{}])[0]
        text = mistake.get("mistake") or (f"fails: {mistake['test']}" if mistake else "")
        text = text if len(text) <= 60 else text[:57] + "..."
        if mistake:
            text += f" ({mistake['learners']} learners)"
        lines.append(f"{key:{width}}  {mean:>11}  {entry['full_marks_share']:>10.0%}  {text}")
    return "\n".join(lines)


def summary_plot(data: dict, path: Path) -> None:
    """``summary.png``: per exercise, the class's scores (dots, box) and the share of full marks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(data)
    fractions = [np.array(data[n]["scores"]) / (data[n]["max_score"] or 1) for n in names]
    shares = [data[n]["full_marks_share"] for n in names]
    height = max(3.0, 0.32 * len(names) + 1.2)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, height), sharey=True,
                                      gridspec_kw={"width_ratios": [3, 1]})
    rows = np.arange(len(names))
    left.boxplot(fractions, positions=rows, orientation="horizontal", widths=0.6,
                 showfliers=False)
    jitter = np.random.default_rng(0)
    for row, values in zip(rows, fractions):
        left.scatter(values, row + jitter.uniform(-0.2, 0.2, len(values)), s=10, alpha=0.5,
                     color="tab:blue")
    left.set_xlim(-0.05, 1.05)
    left.set_xlabel("score / points possible (one dot per learner)")
    left.set_yticks(rows, names, fontsize=8)
    left.invert_yaxis()
    right.barh(rows, shares, color="tab:green")
    for row, share in zip(rows, shares):
        right.text(min(share, 0.8) + 0.02, row, f"{share:.0%}", va="center", fontsize=8)
    right.set_xlim(0, 1)
    right.set_xlabel("share of learners with full marks")
    learners = data[names[0]]["learners"] if names else 0
    fig.suptitle(f"Scores per exercise across the class ({learners} learners)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- the class loop -----------------------------------------------------------------------------
def _up_to_date(out: Path, work: Plan) -> bool:
    record = read_record(out, work.student_id)
    return record is not None and record["fingerprint"] == work.fingerprint


def main(*, submissions: Path, out: Path, jobs: int | None = None,
         students: list[str] | None = None, force: bool = False, flat: bool = False,
         timeout_per_student: float = 1200.0,
         options: Options | None = None, echo=print, progress: bool = True) -> list[dict]:
    """Entry point of ``python -m grader batch``: grade the class, write every file.

    Returns the records of every learner in the gradebook. Raises GraderError for a bad
    submissions folder or an unknown ``--student``; KeyboardInterrupt stops the running
    learners and leaves the finished learners' files complete.
    """
    from tqdm import tqdm

    options = options or Options()
    jobs = jobs or os.cpu_count() or 1
    if jobs < 1 or timeout_per_student <= 0:
        raise GraderError("--jobs and --timeout-per-student must be positive")
    learners = discover(submissions, flat=flat)
    unknown = sorted(set(students or []) - set(learners))
    if unknown:
        raise GraderError(f"no submissions for --student {', '.join(unknown)} in {submissions}")
    points = cached_points(out)
    plans = [plan(student_id, folder, files, options)
             for student_id, (folder, files) in learners.items()]
    if students:
        todo = [p for p in plans if p.student_id in students]
    else:
        todo = [p for p in plans if force or not _up_to_date(out, p)]
    out.mkdir(parents=True, exist_ok=True)
    stopping = threading.Event()
    bar = tqdm(total=len(todo), unit="learner", disable=not progress or not todo,
               file=sys.stderr, dynamic_ncols=True)

    def run(work: Plan) -> dict:
        try:
            outcome = grade_learner(work, options, timeout=timeout_per_student, stopping=stopping)
        except OSError as exc:  # no process or scratch folder could be made for this learner
            outcome = Outcome(reports={}, status=f"could not be graded: {exc}")
        return write_learner(out, work, outcome, points)

    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            pending = {pool.submit(run, work) for work in todo}
            try:
                while pending:
                    done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                    for future in done:
                        record = future.result()
                        bar.update(1)
                        if record["grading_status"] != OK:
                            bar.write(f"{record['student_id']}: {record['grading_status']}"[:300],
                                      file=sys.stderr)
            except BaseException:
                stopping.set()
                for future in pending:
                    future.cancel()
                raise
    finally:
        bar.close()
        records = [r for r in (read_record(out, p.student_id) for p in plans) if r is not None]
        reporters.write_text(out / "gradebook.csv", gradebook(records, points))
    data = summary(records, points)
    reporters.write_text(out / "summary.json", json.dumps(data, indent=2) + "\n")
    summary_plot(data, out / "summary.png")
    echo(summary_table(data))
    echo(f"{len(todo)} regraded, {len(plans) - len(todo)} up to date; gradebook written to "
         f"{out / 'gradebook.csv'}")
    return records


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1:]))
