"""Grading a class: layouts, the gradebook, statuses, determinism, regrades, time-outs."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from grader.batch import grading as batch, roster
from grader.batch import run
from grader import cli
from grader.errors import GraderError
from tests.conftest import NOTEBOOKS, variant
from tests.graded_class import NB1, NB2, SKIP
from tests.graded_class import wrong_answer as _wrong

QUIET = {"echo": lambda *_: None, "progress": False}


# The class graded once per run (tests.graded_class) is shared with tests/batch/test_merge.py: both
# files go to one xdist worker where the scheduler can (course.py passes --dist loadgroup).
pytestmark = pytest.mark.xdist_group("graded-class")


def _variant(folder: Path, *args, **kwargs) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return variant(folder, *args, **kwargs)


def _rows(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "gradebook.csv", newline="") as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


def _possible(out: Path) -> dict[str, str]:
    """points_possible.csv: gradebook column -> its points."""
    with open(out / "points_possible.csv", newline="") as handle:
        return {row["column"]: row["points_possible"] for row in csv.DictReader(handle)}


def _num(value: float) -> str:
    return f"{round(value, 4):g}"


def _results(out: Path, student: str) -> dict:
    data = json.loads((out / student / "results.json").read_text())
    data.pop("execution_time")
    return data


@pytest.fixture(scope="session")
def graded(graded_class):
    """The class of tests.graded_class graded once with --jobs 2 and --skip-execution:
    (submissions, out). Read only: a test that changes something works on a copy."""
    return graded_class.submissions, graded_class.one


# -- layouts and bad input (no grading) ---------------------------------------------------------
def test_layouts_are_detected(tmp_path):
    nested = tmp_path / "nested"
    _variant(nested / "ada" / "week1", NB1)
    (nested / "ada" / "week1" / ".ipynb_checkpoints").mkdir()
    _variant(nested / "ada" / "week1" / ".ipynb_checkpoints", NB1, name=f"{NB1}-checkpoint")
    assert {k: [p.name for p in v[1]] for k, v in roster.discover(nested).items()} == {
        "ada": [f"{NB1}.ipynb"]}
    nbgrader = tmp_path / "course"
    _variant(nbgrader / "submitted" / "bob" / "ps1", NB2)
    assert list(roster.discover(nbgrader)) == ["bob"]
    flat = tmp_path / "flat"
    _variant(flat, NB1, name=f"cyd_{NB1}")
    shutil.copy(NOTEBOOKS / f"{NB2}.ipynb", flat / "cyd_late_resubmission.ipynb")
    found = roster.discover(flat, flat=True)
    assert list(found) == ["cyd"] and len(found["cyd"][1]) == 2
    work = roster.plan("cyd", *found["cyd"], SKIP)
    assert sorted(work.notebooks) == [NB1, NB2] and not work.problems  # metadata, then name


def test_bad_submissions_folder_exits_2_with_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    _variant(tmp_path / "loose", NB1)
    for folder in (tmp_path / "missing", tmp_path / "empty", tmp_path / "loose"):
        assert cli.main(["batch", str(folder), "--out", str(tmp_path / "out")]) == 2
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1 and str(folder) in error
    assert "--flat" in error  # the message names the layouts it expected
    assert not (tmp_path / "out").exists()


def test_duplicates_corrupt_files_and_other_courses_are_planned(tmp_path):
    learner = tmp_path / "eve"
    (learner / "draft").mkdir(parents=True)
    old = Path(shutil.copy(NOTEBOOKS / f"{NB1}.ipynb", learner / "draft"))
    new = Path(shutil.copy(NOTEBOOKS / f"{NB1}.ipynb", learner / "final.ipynb"))  # by metadata
    os.utime(old, (time.time() - 3600,) * 2)
    (learner / f"{NB2}.ipynb").write_text("[1, 2, 3]")
    other = nbformat.read(str(NOTEBOOKS / f"{NB2}.ipynb"), as_version=4)
    other.metadata.pop("grader", None)
    nbformat.write(other, str(learner / "essay.ipynb"))
    work = roster.plan("eve", learner, roster._notebooks_below(learner), SKIP)
    assert work.notebooks == {NB1: new}
    assert work.notes == [f"2 notebooks for {NB1}: graded the newest, final.ipynb"]
    assert list(work.unreadable) == [NB2] and "not a valid Jupyter notebook" in work.unreadable[NB2]
    assert any("essay.ipynb: not a notebook of this course" in p for p in work.problems)
    assert set(work.fingerprint["notebooks"]) == {"draft/01_permutation_invariance.ipynb",
                                                  "final.ipynb", f"{NB2}.ipynb", "essay.ipynb"}


def test_stop_kills_the_whole_tree_even_children_in_their_own_session():
    code = ("import subprocess, sys, time\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],"
            " start_new_session=True)\n"
            "print(child.pid, flush=True)\ntime.sleep(300)\n")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                               start_new_session=True)
    grandchild = int(process.stdout.readline())
    batch._stop(process)
    assert process.returncode == -9
    for _ in range(50):
        try:
            state = Path(f"/proc/{grandchild}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            break
        if state == "Z":
            break  # killed; waiting for init to reap it
        time.sleep(0.1)
    else:
        pytest.fail("the grandchild in its own session survived _stop")


# -- a graded class -----------------------------------------------------------------------------
@pytest.mark.slow
def test_gradebook_values_and_statuses(graded):
    submissions, out = graded
    rows = _rows(out)
    assert list(rows) == ["ada", "bob", "cyd", "dan"]  # learners only: no "points possible" row
    header = list(rows["ada"])
    assert header[:3] == ["student_id", NB1, f"{NB1}/scaled_dot_product_attention"]
    assert header[-5:] == ["total", "max_total", "percent", "grading_status", "notes"]
    possible = _possible(out)
    assert list(possible) == header[1:-5] + ["total"]
    assert possible["total"] == rows["ada"]["max_total"] == _num(sum(
        float(possible[c]) for c in header[1:-5] if "/" not in c))
    ada, bob, cyd, dan = rows["ada"], rows["bob"], rows["cyd"], rows["dan"]
    assert ada[NB1] == possible[NB1] and ada[NB2] == possible[NB2]
    assert ada["03_addition_vs_concatenation"] == "0"  # not submitted
    assert float(ada["total"]) == float(possible[NB1]) + float(possible[NB2])
    assert ada["grading_status"] == bob["grading_status"] == cyd["grading_status"] == "ok"
    assert bob["total"] == "0"
    for suite in (NB1, NB2):
        wrong = _wrong(suite)
        column = f"{suite}/{wrong.exercise}"
        assert float(cyd[column]) < float(possible[column])
        others = [c for c in header if c.startswith(f"{suite}/") and c != column]
        assert any(cyd[c] == possible[c] for c in others)  # the mistake costs only what uses it
    assert dan["total"] == "0" and dan["grading_status"].startswith("could not be graded: ")
    assert "homework3.ipynb: not a notebook of this course" in dan["grading_status"]
    assert f"{NB1}.ipynb: not a valid Jupyter notebook" in dan["grading_status"]
    statuses = {t["name"]: t for t in _results(out, "bob")["tests"]}
    assert any(t["output"].endswith("not submitted") for t in statuses.values())
    record = batch.read_record(out, "bob")
    assert {t["status"] for r in record["notebooks"] for t in r["tests"]} == {"not implemented"}


@pytest.mark.slow
def test_reports_summary_and_feedback_per_learner(graded):
    _, out = graded
    for student in ("ada", "bob", "cyd", "dan"):
        assert {p.name for p in (out / student).iterdir()} == {
            "results.json", "results.xml", "feedback.html", "record.json"}
    results = json.loads((out / "cyd" / "results.json").read_text())
    assert results["score"] == float(_rows(out)["cyd"]["total"])
    extra = results["extra_data"]
    assert set(extra["sha256"]["notebooks"]) == {f"work/{NB1}.ipynb", f"work/{NB2}.ipynb"}
    assert extra["sha256"]["suites"][NB1] == batch.sha256(batch.GRADER_ROOT / "grader" / "judge" / "suites"
                                                          / f"test_{NB1}.py")
    summary = json.loads((out / "summary.json").read_text())
    sdpa = summary[f"{NB1}/scaled_dot_product_attention"]
    assert sdpa["learners"] == 4 and sdpa["full_marks_share"] == 0.25
    assert sdpa["mistakes"][0]["mistake"].startswith(_wrong(NB1).mistake)
    assert (out / "summary.png").stat().st_size > 10_000
    page = (out / "cyd" / "feedback.html").read_text()
    assert f"Total: {_rows(out)['cyd']['total']}/" in page and "Likely mistake: <strong>" in page


@pytest.mark.slow
def test_regrade_only_what_changed(graded, tmp_path):
    submissions, copy = tmp_path / "submissions", tmp_path / "grades"
    shutil.copytree(graded[0], submissions)
    shutil.copytree(graded[1], copy)
    printed = []
    run.grade_class(run.ClassOptions(
        submissions=submissions, out=copy, jobs=2, grading=SKIP, echo=printed.append,
        progress=False))
    assert printed[-1].startswith("0 regraded, 4 up to date")
    stamps = {s: (copy / s / "results.json").stat().st_mtime_ns for s in ("ada", "bob", "cyd")}
    before = (copy / "gradebook.csv").read_text()
    stub = submissions / "bob" / f"{NB2}.ipynb"
    notebook = nbformat.read(str(stub), as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell("My notes."))
    nbformat.write(notebook, str(stub))
    run.grade_class(run.ClassOptions(
        submissions=submissions, out=copy, jobs=2, grading=SKIP, echo=printed.append,
        progress=False))
    assert printed[-1].startswith("1 regraded, 3 up to date")
    assert (copy / "bob" / "results.json").stat().st_mtime_ns != stamps["bob"]
    assert all((copy / s / "results.json").stat().st_mtime_ns == stamps[s] for s in ("ada", "cyd"))
    assert (copy / "gradebook.csv").read_text() == before  # same scores
    run.grade_class(run.ClassOptions(
        submissions=submissions, out=copy, jobs=2, students=["dan"], grading=SKIP,
        echo=printed.append, progress=False))
    assert printed[-1].startswith("1 regraded, 3 up to date")
    assert all((copy / s / "results.json").stat().st_mtime_ns == stamps[s] for s in ("ada", "cyd"))
    with pytest.raises(GraderError, match="no submissions for --student zed"):
        run.grade_class(run.ClassOptions(
            submissions=submissions, out=copy, students=["zed"], grading=SKIP, **QUIET))


@pytest.mark.slow
def test_learner_whose_setup_cell_never_ends_is_timed_out(graded, tmp_path):
    submissions = tmp_path / "submissions"
    _variant(submissions / "eve", NB1, extra_setup="while True:\n    pass")
    out = tmp_path / "grades"
    out.mkdir()
    shutil.copy(graded[1] / ".points.json", out)  # the hidden tests' list, cached by content
    start = time.monotonic()
    run.grade_class(run.ClassOptions(
        submissions=submissions, out=out, jobs=1, timeout_per_student=5,
        grading=batch.Options(cell_timeout=2), **QUIET))  # the loop spins a core until then
    assert time.monotonic() - start < 90
    row = _rows(out)["eve"]
    assert row["grading_status"] == "timed out" and row["total"] == "0"
    results = json.loads((out / "eve" / "results.json").read_text())
    assert any("not graded: timed out" in t["output"] for t in results["tests"])
    leftovers = subprocess.run(["pgrep", "-f", str(submissions)], capture_output=True, text=True)
    assert leftovers.stdout.strip() == "", "a process of the timed-out learner is still running"


@pytest.mark.slow
def test_assignments_are_scoped_nbgrader_folders_and_notebooks(graded, tmp_path):
    """nbgrader's ps1 (notebook 01) and ps2 (notebook 02) get a gradebook each, out of their own
    points; --notebooks 01 grades only 01 of a learner who handed in both."""
    for out in ("grades/ps1", "grades/ps2", "one"):  # the hidden tests' list, cached by content
        (tmp_path / out).mkdir(parents=True)
        shutil.copy(graded[1] / ".points.json", tmp_path / out)
    course = tmp_path / "course"
    _variant(course / "submitted" / "ada" / "ps1", NB1)
    shutil.copy(NOTEBOOKS / f"{NB1}.ipynb", _variant(course / "submitted" / "bob" / "ps1", NB1))
    _variant(course / "submitted" / "ada" / "ps2", NB2)
    # nbgrader's hand-in times: ada's ps1 is a day and a half late, bob's on time
    (course / "submitted" / "ada" / "ps1" / "timestamp.txt").write_text(
        "2026-03-03 10:00:00.000000 UTC\n")
    (course / "submitted" / "bob" / "ps1" / "timestamp.txt").write_text(
        "2026-03-01 10:00:00.000000 UTC\n")
    (course / "submitted" / "ada" / "ps2" / "timestamp.txt").write_text(
        "2026-03-01 10:00:00.000000 UTC\n")
    late = {"due": "2026-03-01T23:59", "late_policy": "10,50"}
    run.grade_class(run.ClassOptions(
        submissions=course, out=tmp_path / "grades", jobs=2, grading=SKIP, **late, **QUIET))
    ps1 = (tmp_path / "grades" / "ps1" / "gradebook.csv").read_bytes()
    lines: list[str] = []
    # given nbgrader's submitted/ itself: the same layout, times and gradebook; nothing regraded
    regraded = run.grade_class(run.ClassOptions(
        submissions=course / "submitted", out=tmp_path / "grades", assignment_name="ps1", jobs=2,
        grading=SKIP, **late, echo=lines.append, progress=False))
    assert (tmp_path / "grades" / "ps1" / "gradebook.csv").read_bytes() == ps1
    assert "0 regraded, 2 up to date" in "\n".join(lines) and len(regraded) == 2
    assert not any("file times" in line for line in lines)
    late_rows = _rows(tmp_path / "grades" / "ps1")
    assert (late_rows["ada"]["time_source"], late_rows["ada"]["days_late"],
            late_rows["ada"]["late_penalty_percent"]) == ("nbgrader timestamp.txt", "2", "20")
    assert (late_rows["bob"]["days_late"], late_rows["bob"]["late_penalty_percent"]) == ("0", "0")
    run.grade_class(run.ClassOptions(
        submissions=course, out=tmp_path / "grades", jobs=2, grading=SKIP, **QUIET))
    for folder, suite in (("ps1", NB1), ("ps2", NB2)):
        rows = _rows(tmp_path / "grades" / folder)
        assert [c for c in rows["ada"] if "/" not in c] == [
            "student_id", suite, "total", "max_total", "percent", "grading_status", "notes"]
        assert rows["ada"]["max_total"] == _possible(tmp_path / "grades" / folder)[suite]
        assert rows["ada"]["percent"] == "100" and rows["ada"]["grading_status"] == "ok"
    assert list(_rows(tmp_path / "grades" / "ps2")) == ["ada"]

    flat = tmp_path / "flat"
    _variant(flat / "cyd", NB1)
    _variant(flat / "cyd", NB2)
    assert cli.main(["batch", str(flat), "--out", str(tmp_path / "one"), "--notebooks", "1",
                     "--skip-execution", "--jobs", "1"]) == 0
    cyd = _rows(tmp_path / "one")["cyd"]
    assert NB2 not in cyd and cyd["percent"] == "100" and cyd["grading_status"] == "ok"
    assert f"{NB2}.ipynb: not part of this assignment ({NB1}); not graded" in cyd["notes"]
    assert [r["suite"] for r in batch.read_record(tmp_path / "one", "cyd")["notebooks"]] == [NB1]


@pytest.mark.slow
def test_one_nbgrader_assignment_is_written_to_its_own_folder(graded, tmp_path):
    """nbgrader's layout with a single assignment writes grades/ps1/, as with several (a
    corrupt notebook: nothing to execute, so nothing is graded but the plan)."""
    (tmp_path / "grades" / "ps1").mkdir(parents=True)
    shutil.copy(graded[1] / ".points.json", tmp_path / "grades" / "ps1")
    folder = tmp_path / "course" / "submitted" / "eve" / "ps1"
    folder.mkdir(parents=True)
    (folder / f"{NB1}.ipynb").write_text('{"cells": [ not json')
    lines: list[str] = []
    run.grade_class(run.ClassOptions(
        submissions=tmp_path / "course", out=tmp_path / "grades", jobs=1, grading=SKIP,
        echo=lines.append, progress=False))
    assert lines[0] == f"assignment ps1: gradebook in {tmp_path / 'grades' / 'ps1'}"
    assert list(_rows(tmp_path / "grades" / "ps1")) == ["eve"]
    assert not (tmp_path / "grades" / "gradebook.csv").exists()
