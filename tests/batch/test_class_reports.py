"""The class's summary and statuses, built from learners' records (no grading here)."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from datetime import timedelta

import pytest

from grader.batch import grading as batch, deadlines, enrolment, lms
from grader.errors import GraderError
from grader.batch.gradebook import gradebook, points_possible, summary, summary_table
from grader import results
from grader.results import FAILED, NOT_IMPLEMENTED, PASSED, NotebookReport
from grader.batch.roster import Plan

from tests.conftest import NOTEBOOKS, ROOT

SUITE = "01_permutation_invariance"
MISTAKE = "missing the 1/sqrt(d_k) scaling"
POINTS = {SUITE: [
    {"exercise": "sdpa", "name": "test_named", "description": "named case", "max_score": 2.0,
     "public": True},
    {"exercise": "sdpa", "name": "test_property", "description": "property", "max_score": 2.0,
     "public": False},
]}


def _record(student_id: str, statuses: list[str] | None, outputs: tuple[str, str] = ("", "")):
    notebooks = []
    if statuses is not None:
        tests = [results.TestResult(**test, status=status, output=output)
                 for test, status, output in zip(POINTS[SUITE], statuses, outputs)]
        notebooks.append(dataclasses.asdict(NotebookReport(path=f"{SUITE}.ipynb", suite=SUITE,
                                                           tests=tests)))
    return {"student_id": student_id, "grading_status": "ok", "notes": [], "fingerprint": {},
            "submitted": [SUITE] if statuses is not None else [], "unreadable": {},
            "notebooks": notebooks}


def test_summary_counts_each_mistake_once_and_no_stub_and_says_who_handed_in():
    said = f"wrong values; this is what you get with: {MISTAKE}"
    records = [
        _record("ada", [FAILED, FAILED], (said, f"{said} [failing example: test_property(seed=3)]")),
        _record("bob", [FAILED, FAILED], (said, f"{said} [failing exa ... (cut)")),
        _record("cyd", [NOT_IMPLEMENTED, NOT_IMPLEMENTED], ("not implemented",) * 2),
        _record("dan", [PASSED, PASSED]),
        _record("eve", None),  # handed nothing in
    ]
    entry = summary(records, POINTS)[f"{SUITE}/sdpa"]
    assert entry["mistakes"] == [{"mistake": MISTAKE, "learners": 2}]  # once each, not 4 or 3
    assert {t["test"]: t["learners"] for t in entry["failed_tests"]} == {"named case": 2,
                                                                        "property": 2}
    assert entry["learners"] == 5 and entry["submitted"] == 4 and entry["not_submitted"] == 1
    assert entry["mean_score"] == 0.8 and entry["mean_score_of_submitters"] == 1.0
    table = summary_table({f"{SUITE}/sdpa": entry})
    assert "did not hand a notebook in as 0" in table and f"{MISTAKE} (2 learners)" in table


def test_a_learner_with_a_graded_and_a_corrupt_notebook_is_partly_graded(tmp_path):
    work = Plan(student_id="ada", folder=tmp_path,
                problems=["02_sinusoidal_encoding.ipynb: not a valid Jupyter notebook"])
    graded = batch.Outcome(reports={SUITE: NotebookReport(path=f"{SUITE}.ipynb", suite=SUITE)})
    assert batch._status(work, graded) == (
        f"partly graded: graded {SUITE}; not graded: 02_sinusoidal_encoding.ipynb: not a valid "
        "Jupyter notebook")
    assert batch._status(work, batch.Outcome(reports={})).startswith("could not be graded: ")


def test_roster_adds_absentees_notes_strangers_and_names_without_a_fake_learner(tmp_path):
    roster_csv = tmp_path / "roster.csv"
    roster_csv.write_text("student_id,name,lms_id,sis_id,section\n"
                          "dan,Dan Doe,101,S-1,A\neve,Eve Roe,102,S-2,B\n")
    people = enrolment.read(roster_csv)
    assert people.columns == ["name", "lms_id", "sis_id", "section"]
    records = enrolment.apply([_record("dan", [PASSED, PASSED]), _record("zed", [PASSED, FAILED])],
                              people)
    text = gradebook(records, POINTS, enrolment.columns(people), people.columns)
    rows = {r["student_id"]: r for r in csv.DictReader(io.StringIO(text))}
    assert list(rows) == ["dan", "eve", "zed"]  # every row a learner
    assert rows["dan"]["name"] == "Dan Doe" and rows["dan"]["lms_id"] == "101"
    assert rows["dan"]["total"] == rows["dan"]["max_total"] == "4"
    assert rows["eve"]["total"] == "0" and rows["eve"]["grading_status"] == "not submitted"
    assert rows["zed"]["notes"] == "not on the roster" and rows["zed"]["name"] == ""
    assert points_possible(POINTS).splitlines() == [
        "column,points_possible", f"{SUITE},4", f"{SUITE}/sdpa,4", "total,4"]

    lines = list(csv.reader(io.StringIO(lms.canvas(records, POINTS, enrolment.columns(people),
                                                    "ps1"))))
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ps1"]
    assert lines[1] == ["    Points Possible", "", "", "", "", "4"]  # Canvas's own convention
    assert lines[2:] == [["Dan Doe", "101", "S-1", "", "A", "4"],
                         ["Eve Roe", "102", "S-2", "", "B", "0"]]  # zed: Canvas cannot place


def test_bad_rosters_and_lms_requests_get_one_line(tmp_path, capsys):
    from grader import cli

    (tmp_path / "subs" / "ada").mkdir(parents=True)
    (tmp_path / "no_id.csv").write_text("name\nAda\n")
    (tmp_path / "twice.csv").write_text("student_id\nada\nada\n")
    for args, expected in (
            (["--roster", str(tmp_path / "absent.csv")], "give a CSV with a student_id column"),
            (["--roster", str(tmp_path / "no_id.csv")], "no student_id column"),
            (["--roster", str(tmp_path / "twice.csv")], "line 3: ada is listed twice"),
            (["--lms", "canvas"], "--lms canvas: needs --roster")):
        assert cli.main(["batch", str(tmp_path / "subs"), "--out", str(tmp_path / "out"),
                         *args]) == 2
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1 and expected in error, error
    records = [_record("ada", [PASSED, PASSED])]
    (tmp_path / "names.csv").write_text("student_id,name\nada,Ada\n")
    people = enrolment.read(tmp_path / "names.csv")
    with pytest.raises(GraderError, match="lms_id, sis_id or login"):
        lms.canvas(records, POINTS, enrolment.columns(people), "ps1")


def test_hand_in_times_come_from_nbgrader_gradescope_or_file_times(tmp_path):
    due = deadlines.parse_time("2026-03-01T23:59")  # UTC when no offset is given
    policy = deadlines.LatePolicy.parse("10,25")
    nbgrader = tmp_path / "submitted" / "ada" / "ps1"
    nbgrader.mkdir(parents=True)
    (nbgrader / "timestamp.txt").write_text("2026-03-02 00:30:00.000000 UTC\n")
    gradescope = tmp_path / "gradescope" / "submission_123"
    gradescope.mkdir(parents=True)
    (gradescope / "submission_metadata.json").write_text(
        json.dumps({"created_at": "2026-03-04T22:00:00.0+00:00"}))
    files = tmp_path / "files" / "cyd"
    files.mkdir(parents=True)
    notebook = files / f"{SUITE}.ipynb"
    notebook.write_text("{}")
    on_time = deadlines.parse_time("2026-03-01T12:00:00+00:00").timestamp()
    os.utime(notebook, (on_time, on_time))

    ada = deadlines.lateness(nbgrader, [], due, policy)
    assert (ada.source, ada.days_late, ada.penalty_percent) == ("nbgrader timestamp.txt", 1, 10)
    bob = deadlines.lateness(gradescope, [], due, policy)
    assert bob.source == "Gradescope submission_metadata.json"
    assert (bob.days_late, bob.penalty_percent) == (3, 25)  # 30 %, capped at 25 %
    cyd = deadlines.lateness(files, [notebook], due, policy)
    assert (cyd.source, cyd.days_late, cyd.penalty_percent) == ("file times", 0, 0)
    extended = deadlines.lateness(gradescope, [], due, policy, {"extension_days": "3"})
    assert extended.days_late == 0 and extended.due == due + timedelta(days=3)
    own = deadlines.lateness(nbgrader, [], due, policy, {"due": "2026-03-01T12:00"})
    assert own.days_late == 1  # its own due date, 12.5 hours before it was handed in

    records = [_record("ada", [PASSED, PASSED]), _record("bob", [PASSED, FAILED])]
    rows = {r["student_id"]: r for r in csv.DictReader(io.StringIO(
        gradebook(records, POINTS, late={"ada": ada, "bob": bob})))}
    assert rows["ada"]["time_source"] == "nbgrader timestamp.txt"
    assert rows["ada"]["submitted_at"] == "2026-03-02T00:30:00+00:00"
    assert rows["ada"]["total"] == "4" and rows["ada"]["total_after_penalty"] == "3.6"
    assert rows["bob"]["days_late"] == "3" and rows["bob"]["total_after_penalty"] == "1.5"
    people = {"ada": {"lms_id": "7"}, "bob": {"lms_id": "8"}}
    lines = lms.canvas(records, POINTS, people, "ps1", {"ada": 10.0, "bob": 25.0}).splitlines()
    assert lines[2:] == ["ada,7,,,,3.6", "bob,8,,,,1.5"]


def test_bad_deadlines_get_one_line(tmp_path, capsys):
    from grader import cli

    (tmp_path / "subs" / "ada").mkdir(parents=True)
    for args, expected in ((["--due", "tomorrow"], "--due 'tomorrow': not a date and time"),
                           (["--due", "2026-03-01", "--late-policy", "ten"],
                            "--late-policy 'ten': write PER_DAY[,CAP]"),
                           (["--late-policy", "10"], "--late-policy needs --due")):
        assert cli.main(["batch", str(tmp_path / "subs"), "--out", str(tmp_path / "out"),
                         *args]) == 2
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1 and expected in error, error


def test_nbgrader_layout_is_recognised_given_submitted_itself_or_its_parent(tmp_path):
    from grader.batch import roster

    course = tmp_path / "course"
    for learner in ("ada", "bob"):
        folder = course / "submitted" / learner / "ps1"
        folder.mkdir(parents=True)
        (folder / f"{SUITE}.ipynb").write_text("{}")
        (folder / "timestamp.txt").write_text("2026-03-02 00:30:00.000000 UTC\n")
    for given in (course, course / "submitted"):
        assert roster.submitted_folder(given) == course / "submitted"
        assert roster.nbgrader_assignments(given) == ["ps1"]
        found = roster.discover_assignment(given, "ps1")
        assert {s: folder for s, (folder, _) in found.items()} == {
            s: course / "submitted" / s / "ps1" for s in ("ada", "bob")}
    flat = tmp_path / "flat" / "submitted"  # one folder per learner, named "submitted"
    (flat / "cyd").mkdir(parents=True)
    (flat / "cyd" / f"{SUITE}.ipynb").write_text("{}")
    assert not roster.is_nbgrader(flat)


def test_file_times_are_named_and_can_be_refused(tmp_path, capsys):
    from grader import cli

    due = deadlines.parse_time("2026-03-01T23:59")
    stamped = tmp_path / "subs" / "ada"
    stamped.mkdir(parents=True)
    (stamped / "timestamp.txt").write_text("2026-03-01 10:00:00 UTC\n")
    late = {"ada": deadlines.lateness(stamped, [], due, None)}
    for student in ("bob", "cyd"):
        folder = tmp_path / "subs" / student
        folder.mkdir()
        (folder / f"{SUITE}.ipynb").write_text("{}")
        late[student] = deadlines.lateness(folder, [folder / f"{SUITE}.ipynb"], due, None)
    warning = deadlines.file_times_warning(late)
    assert warning.startswith("warning: the hand-in times of 2 learner(s) (bob, cyd) come from "
                              "file times") and "--no-file-times" in warning
    assert deadlines.file_times_warning({"ada": late["ada"]}) is None
    data = deadlines.summary(late, due, deadlines.LatePolicy.parse("10"))
    assert data["from_file_times"] == ["bob", "cyd"] and data["late"] == ["bob", "cyd"]
    assert data["time_sources"] == {"file times": 2, "nbgrader timestamp.txt": 1}
    # refused before anything is graded
    assert cli.main(["batch", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--due",
                     "2026-03-01T23:59", "--no-file-times"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "--no-file-times: no nbgrader timestamp.txt" in error
    assert "bob, cyd (2 learner(s))" in error and not (tmp_path / "out").exists()
    assert cli.main(["batch", str(tmp_path / "subs"), "--no-file-times"]) == 2
    assert "--no-file-times needs --due" in capsys.readouterr().err


def _forged(folder):
    """A learner's folder holding their notebook, dated 2026-11-28 12:00 UTC, and a
    ``timestamp.txt`` they wrote themselves, eight days earlier."""
    folder.mkdir(parents=True)
    (folder / "timestamp.txt").write_text("2026-11-20 12:00:00 UTC\n")
    notebook = folder / f"{SUITE}.ipynb"
    notebook.write_bytes((NOTEBOOKS / f"{SUITE}.ipynb").read_bytes())
    handed_in = deadlines.parse_time("2026-11-28T12:00").timestamp()
    os.utime(notebook, (handed_in, handed_in))
    return notebook


def test_a_timestamp_the_learner_wrote_is_not_their_hand_in_time(tmp_path):
    """In the plain layout a learner's own timestamp.txt (2026-11-20; their files are dated eight
    days later) is not trusted: the time comes from the instructor's side (here the files' times),
    and warnings name the learner; in nbgrader's layout the exchange wrote it, and it counts."""
    due = deadlines.parse_time("2026-11-21T00:00")
    notebook = _forged(tmp_path / "subs" / "amy")
    learners = {"amy": (notebook.parent, [notebook])}
    late = deadlines.class_lateness(learners, due, None, {}, own_folders=True)
    assert (late["amy"].source, late["amy"].days_late) == (deadlines.FILE_TIMES, 8)
    assert "(amy)" in deadlines.file_times_warning(late)
    assert "amy (timestamp.txt)" in deadlines.own_records_warning(learners)
    exchange = deadlines.class_lateness(learners, due, None, {})  # nbgrader's submitted/
    assert (exchange["amy"].source, exchange["amy"].days_late) == (deadlines.SOURCES[0], 0)


@pytest.mark.slow  # a batch (the hidden tests of a released stub)
def test_batch_takes_no_hand_in_time_from_a_learners_own_timestamp(tmp_path, hidden_points):
    import shutil
    import subprocess
    import sys

    _forged(tmp_path / "subs" / "amy")
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(hidden_points, out)
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(tmp_path / "subs"),
                           "--out", str(out), "--skip-execution", "--allow-unconfined",
                           "--due", "2026-11-21T00:00", "--late-policy", "10"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text())))
    assert (row["student_id"], row["time_source"], row["days_late"]) == ("amy", "file times", "8")
    assert row["submitted_at"] == "2026-11-28T12:00:00+00:00"
    warnings = [line for line in done.stdout.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2 and all("amy" in line for line in warnings), done.stdout


def test_lateness_travels_in_records_and_shows_on_the_feedback_page():
    from grader.report import feedback

    due = deadlines.parse_time("2026-03-01T23:59")
    entry = deadlines.Lateness(deadlines.parse_time("2026-03-03T09:30"), "nbgrader timestamp.txt",
                               due, 2, 20.0)
    stored = json.loads(json.dumps(deadlines.to_dict(entry)))
    assert deadlines.from_dict(stored) == entry
    report = NotebookReport(path=f"{SUITE}.ipynb", suite=SUITE, tests=[
        results.TestResult(**test, status=PASSED) for test in POINTS[SUITE]])
    page = feedback.render([report], lateness=stored)
    assert "Total: 4/4 points" in page and "2 days late" in page
    assert "Late penalty: 20%; total after the penalty: 3.2/4 points" in page
    assert "Late penalty" not in feedback.render([report])


def test_one_cell_numbering_and_a_cell_that_did_not_load_is_named_in_the_summary():
    import nbformat

    from grader.notebook.execute import _learners_name
    from grader.notebook.read import cell_label, sandbox_cells

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# title"),
        nbformat.v4.new_code_cell("import math", metadata={"tags": ["setup"]}),
        nbformat.v4.new_markdown_cell("text"),
        nbformat.v4.new_code_cell("def f(:\n    pass", metadata={"tags": ["exercise"]})])
    labels = [label for label, _ in sandbox_cells(notebook, {"f"})]
    # As JupyterLab numbers them: every cell counts, markdown too.
    assert labels == ["Cell 2/4", "Cell 4/4"] == [cell_label(1, 4), cell_label(3, 4)]
    cells = [("Cell 2/4", "import math", set()), ("Cell 4/4", "def f(:", set())]
    assert _learners_name("Cell 1", cells) == "Cell 4/4"  # nbval counts code cells from 0
    output = ("f is missing: is the cell that defines it still in the notebook? (cells that "
              "failed to load: Cell 4/4: SyntaxError: invalid syntax (line 1))")
    data = summary([_record("ada", [FAILED, FAILED], (output, output))], POINTS)
    assert data[f"{SUITE}/sdpa"]["mistakes"] == [
        {"mistake": "error in Cell 4/4 (SyntaxError)", "learners": 1}]
    assert "error in Cell 4/4 (SyntaxError) (1 learners)" in summary_table(data)


@pytest.mark.slow  # executes notebook 01
def test_a_syntax_error_is_the_same_cell_in_the_hidden_tests_and_the_execution(tmp_path):
    """nbval's execution and the hidden tests' text name one cell the same way."""
    import nbformat

    from grader.grade import grade_notebook
    from grader.notebook.read import cell_label, read_notebook
    from grader.batch.variants import exercise_cell_index
    from tests.conftest import SOLUTIONS, variant
    from tests.graded_class import NB1, wrong_answer

    exercise = wrong_answer(NB1).exercise
    index = exercise_cell_index(read_notebook(SOLUTIONS / f"{NB1}.ipynb"), exercise)
    path = variant(tmp_path, NB1, replace={exercise: f"def {exercise}(:\n    pass\n"})
    notebook = read_notebook(path)
    label = cell_label(index, len(notebook.cells))
    report = grade_notebook(path, cell_timeout=120, exercises={exercise})  # the one asserted
    assert f"{label} (`def {exercise}(:`): SyntaxError" in " ".join(report.load_errors)
    assert report.blocked == {exercise: f"{label} (`def {exercise}(:`)"}
    assert any(f.cell == label and "SyntaxError" in f.message
               for f in report.execution.failures), report.execution.failures
    texts = [t.output for t in report.tests if t.exercise == exercise]
    assert texts and all(f"{label}: SyntaxError" in text for text in texts)
    from grader.batch.gradebook import _mistake_name

    assert {_mistake_name(text) for text in texts} == {f"error in {label} (SyntaxError)"}
    assert nbformat.validate(nbformat.read(str(path), as_version=4)) is None
