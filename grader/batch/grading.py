"""A class's grading step (:func:`grade_all`, called by :mod:`grader.batch.run`): grade each learner
in a child process of its own (in parallel) and write each learner's files; the class's files
come after, from :mod:`grader.batch.class_files`.

This is a loop *around* :mod:`grader.grade`; nothing below it knows about classes. Each learner
is graded by ``python -m grader.batch.grading --worker ...`` (the trusted grader, which in turn keeps the
learner's code in sandboxed children) under a wall-clock cap. The worker writes one JSON file of
plain :mod:`grader.results` records per notebook; everything this module writes is built from
those records, never from anything the learner's code printed or wrote; so are the class's files
(:mod:`grader.batch.class_files`).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import grader
from grader.report import render as reporters
from grader.report.render import HIDDEN_DETAIL
from grader.batch import deadlines, shards
from grader.batch import written as written_grades
from grader.batch.assignment import scope_points
from grader.sandbox import supervise
from grader.sandbox.confinement import NOT_CONFINED
from grader.errors import GraderError
from grader.batch.gradebook import RECORD, full_reports, read_record, report_from_dict
from grader.results import TIMED_OUT, NotebookReport
from grader.batch.roster import Options, Plan, sha256

GRADER_ROOT = Path(__file__).resolve().parents[2]
OK = "ok"
REFUSED = 3
"""The worker's exit status where bubblewrap cannot confine the learner's code and confinement is
required: nothing of the learner's ran, and the last line of its log is the reason."""


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

    from grader.judge.proxy import SUITES_DIR, exercise_order, known_suites, suite_path

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


# -- one learner, in a child process ------------------------------------------------------------
_live_workers: set[int] = set()
"""Pids of the workers grading learners right now (their trees are not strays)."""
_live_lock = threading.Lock()


def _stop(process: subprocess.Popen) -> None:
    """Kill a learner's worker and everything below it (escaped processes too), then reap it.

    Where this process is a subreaper (the ``batch`` command makes it one), a process that left
    the worker's tree was re-parented here, and :func:`grader.sandbox.supervise.kill_strays` finds it.
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
        command = [sys.executable, "-P", "-m", "grader.batch.grading", "--worker",
                   str(scratch / "out")]
        if options.cell_timeout is not None:
            command += ["--cell-timeout", f"{options.cell_timeout:g}"]
        command += ["--skip-execution"] if options.skip_execution else []
        command += ["--run-as", options.run_as] if options.run_as else []
        command += ["--require-confinement"] if options.require_confinement else []
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
                report = report_from_dict(json.loads(path.read_text()))
            except (ValueError, TypeError, KeyError) as exc:
                status = f"could not be graded: the grader wrote an unreadable report ({exc})"
                continue
            reports[report.suite] = report
        if status == OK and process.returncode == REFUSED:  # one line: bubblewrap's reason
            status = _tail(scratch / "worker.log", limit=2000)
        elif status == OK and process.returncode != 0:
            status = (f"could not be graded: the grader stopped with exit status "
                      f"{process.returncode} ({_tail(scratch / 'worker.log')})")
        return Outcome(reports=reports, status=status, seconds=time.monotonic() - start)


def _worker(argv: list[str]) -> int:
    """``python -m grader.batch.grading --worker OUT ...``: grade notebooks, one JSON record each."""
    parser = argparse.ArgumentParser(prog="python -m grader.batch.grading")
    parser.add_argument("--worker", type=Path, required=True, metavar="OUT")
    parser.add_argument("--points", action="store_true")
    parser.add_argument("--skip-execution", action="store_true")
    parser.add_argument("--cell-timeout", type=float, default=None)
    parser.add_argument("--run-as", default=None)
    parser.add_argument("--require-confinement", action="store_true")
    parser.add_argument("--memory-limit", type=float, default=None)
    parser.add_argument("--notebook", nargs=3, action="append", default=[],
                        metavar=("SUITE", "NAME", "PATH"))
    args = parser.parse_args(argv)
    args.worker.mkdir(mode=0o700, parents=True, exist_ok=True)
    if args.points:
        reporters.write_text(args.worker / "points.json", json.dumps(_collect_points()))
        return 0
    from grader.grade import grade_notebook
    from grader.sandbox.confinement import ConfinementUnavailable, describe
    from grader.sandbox.parent import Limits

    supervise.become_subreaper()  # the worker starts nothing but the learner's code
    limits = Limits(run_as=args.run_as, require_confinement=args.require_confinement,
                    **supervise.memory_bytes(args.memory_limit))
    try:
        describe(limits)  # before anything of the learner's runs
    except ConfinementUnavailable as exc:
        print(exc, file=sys.stderr)
        return REFUSED
    for index, (suite, name, path) in enumerate(args.notebook):
        report = grade_notebook(Path(path), skip_execution=args.skip_execution,
                                cell_timeout=args.cell_timeout, limits=limits)
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
        result = subprocess.run([sys.executable, "-P", "-m", "grader.batch.grading", "--worker",
                                 scratch, "--points"], cwd=scratch, env=env, capture_output=True,
                                text=True, timeout=600)
        points = Path(scratch) / "points.json"
        if result.returncode != 0 or not points.is_file():
            tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise GraderError(f"could not list the hidden tests: {tail}")
        return json.loads(points.read_text())


def cached_points(out: Path, suites: list[str] | None = None) -> dict[str, list[dict]]:
    """:func:`points_possible`, reused from ``out/.points.json`` while the suites are unchanged;
    with ``suites`` (an assignment's), theirs only
    (:func:`grader.batch.assignment.scope_points`)."""
    if suites is not None:
        return scope_points(cached_points(out), suites)
    from grader.judge.proxy import known_suites, suite_path

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
def _status(work: Plan, outcome: Outcome) -> str:
    if outcome.status != OK:
        return outcome.status
    if work.problems and outcome.reports:  # some notebooks graded: say which, and what was not
        return (f"partly graded: graded {', '.join(sorted(outcome.reports))}; not graded: "
                + "; ".join(work.problems))
    if work.problems:
        return "could not be graded: " + "; ".join(work.problems)
    return OK


def write_learner(out: Path, work: Plan, outcome: Outcome, points: dict[str, list[dict]],
                  lateness: dict | None = None, hidden_detail: str = HIDDEN_DETAIL) -> dict:
    """Write a learner's results.json, results.xml and feedback.html; the record last.

    ``lateness`` (:func:`grader.batch.deadlines.to_dict`, when a due time was given) goes into the
    record, ``results.json``'s ``extra_data`` and the feedback page, with the total after the
    late penalty. ``hidden_detail`` says what results.json and feedback.html show of each hidden
    test (:func:`grader.report.render.learner_view`); the record keeps every message."""
    from grader.report import feedback

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
    if lateness is not None:
        record["lateness"] = lateness
    commit = graded_commit(work)
    if commit is not None:
        record["commit"] = commit
    reports = full_reports(record, points)
    folder = out / work.student_id
    results = reporters.gradescope(reports, outcome.seconds, hidden_detail=hidden_detail)
    results["extra_data"] = {
        "student_id": work.student_id, "grading_status": record["grading_status"],
        "notes": work.notes, "sha256": {k: work.fingerprint[k] for k in ("notebooks", "suites")},
        "grader_version": work.fingerprint["grader_version"],
    }
    if commit is not None:
        results["extra_data"]["commit"] = commit
    if lateness is not None:
        after = deadlines.after_penalty(sum(r.score for r in reports), lateness)
        results["extra_data"]["lateness"] = {**lateness,
                                             "total_after_penalty": round(after, 4)}
    reporters.write_text(folder / "results.json", json.dumps(results, indent=2) + "\n")
    reporters.write_text(folder / "results.xml", reporters.junit(reports))
    reporters.write_text(folder / "feedback.html", feedback.render(
        reports, title=f"Feedback for {work.student_id}", student_id=work.student_id,
        grading_status=record["grading_status"], notes=work.notes, lateness=lateness,
        hidden_detail=hidden_detail,
        written=written_grades.learner_grades(written_grades.read(out), record)))  # kept
    reporters.write_text(folder / RECORD, json.dumps(record, indent=1) + "\n")
    return record


def graded_commit(work: Plan) -> dict | None:
    """The repository and commit the learner's files came from, where
    :mod:`grader.batch.classroom_collect` listed them (``commits.csv``), else None."""
    return deadlines.collected_commit(work.folder)


def _stored_outcome(record: dict) -> Outcome:
    """The outcome a learner's stored record holds (to rewrite their files without grading)."""
    reports = {}
    for data in record["notebooks"]:
        report = report_from_dict(json.loads(json.dumps(data)))
        reports[report.suite] = report
    status = record["grading_status"]
    return Outcome(reports=reports, status=OK if status.startswith("partly graded") else status,
                   seconds=record.get("seconds", 0.0))


# -- the class loop -----------------------------------------------------------------------------
def _up_to_date(out: Path, work: Plan) -> bool:
    """Whether the learner's record holds a grade of their files as they are (a learner left
    ungraded for want of confinement is graded again)."""
    record = read_record(out, work.student_id)
    return (record is not None and record["fingerprint"] == work.fingerprint
            and not record["grading_status"].startswith(NOT_CONFINED))


def _grade_all(todo: list[Plan], run, *, jobs: int, stopping: threading.Event, bar) -> None:
    """Run ``run(work)`` for every plan, ``jobs`` at a time; on Ctrl-C stop what is running."""
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


def grade_all(plans: list[Plan], *, out: Path, options: Options, points: dict[str, list[dict]],
              stamps: dict[str, dict], students: list[str] | None, force: bool, jobs: int,
              timeout_per_student: float, progress: bool,
              hidden_detail: str = HIDDEN_DETAIL) -> tuple[list[dict], int]:
    """Grade the learners of ``plans`` that need it (``students``, else those whose files are out
    of date, else all with ``force``), ``jobs`` at a time, and write each one's files; rewrite
    the files of a learner graded already whose hand-in time (``stamps``) or commit changed.
    Returns (the records of every learner of ``plans``, how many were graded now).
    KeyboardInterrupt stops the running learners and leaves the finished learners' files complete."""
    from tqdm import tqdm

    if students:
        todo = [p for p in plans if p.student_id in students]
    else:
        todo = [p for p in plans if force or not _up_to_date(out, p)]
    out.mkdir(parents=True, exist_ok=True)
    (out / shards.RECORD).unlink(missing_ok=True)  # written again once this run is complete
    regrading = {work.student_id for work in todo}
    for work in plans:  # graded already, but the due time or policy changed: rewrite its files
        stored = None if work.student_id in regrading else read_record(out, work.student_id)
        if stored is not None and (stored.get("lateness"), stored.get("commit")) != (
                stamps.get(work.student_id), graded_commit(work)):
            write_learner(out, work, _stored_outcome(stored), points, stamps.get(work.student_id),
                          hidden_detail)
    stopping = threading.Event()
    bar = tqdm(total=len(todo), unit="learner", disable=not progress or not todo,
               file=sys.stderr, dynamic_ncols=True)

    def run(work: Plan) -> dict:
        try:
            outcome = grade_learner(work, options, timeout=timeout_per_student, stopping=stopping)
        except OSError as exc:  # no process or scratch folder could be made for this learner
            outcome = Outcome(reports={}, status=f"could not be graded: {exc}")
        return write_learner(out, work, outcome, points, stamps.get(work.student_id), hidden_detail)

    try:
        _grade_all(todo, run, jobs=jobs, stopping=stopping, bar=bar)
    finally:
        bar.close()
        records = [r for r in (read_record(out, p.student_id) for p in plans) if r is not None]
    return records, len(todo)


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1:]))
