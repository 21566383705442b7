"""Grading a class in shards: the shards run by the generated workflow's own commands, merged,
give the files of one run (timing aside); merge refuses shards that do not belong together."""
from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from grader.batch import grading as batch, merge, shards
from grader.batch import run
from grader import cli
from tests.conftest import variant
from tests.graded_class import LEARNERS, NB1, NB2, ROUTES, SKIP

TIMING = re.compile(r' time="[0-9.]+"')


# The class graded once per run (tests.graded_class) is shared with tests/batch/test_batch.py: both
# files go to one xdist worker where the scheduler can (course.py passes --dist loadgroup).
pytestmark = pytest.mark.xdist_group("graded-class")


@pytest.fixture(scope="session")
def graded(graded_class):
    """(one run's folder, the workflow's working folder) of the class of tests.graded_class."""
    return graded_class.one, graded_class.engine


def _without_timing(path: Path) -> object:
    if path.suffix == ".xml":
        return TIMING.sub("", path.read_text())
    if path.suffix != ".json":
        return path.read_bytes()

    def drop(value):
        if isinstance(value, dict):
            return {k: drop(v) for k, v in value.items() if k not in ("seconds", "execution_time")}
        return [drop(v) for v in value] if isinstance(value, list) else value

    return drop(json.loads(path.read_text()))


@pytest.mark.slow
def test_shards_slice_the_class_and_record_it(graded):
    one, engine = graded
    first, second = (shards.read(engine / "shards" / f"shard-{k}") for k in (1, 2))
    assert (first["shard"], first["shards"], first["learners"]) == (1, 2, ["ada", "bob"])
    assert (second["shard"], second["learners"]) == (2, ["cyd", "dan"])
    assert first["options"]["skip_execution"] is True and first["class"]["learners"] == 4
    assert first["assignment"]["points"] == json.loads((one / ".points.json").read_text())["points"]
    for index, learners in ((1, {"ada", "bob"}), (2, {"cyd", "dan"})):
        folder = engine / "shards" / f"shard-{index}"
        assert {p.name for p in folder.iterdir() if p.is_dir()} == learners
        assert not (folder / "gradebook.csv").exists()  # the merge writes the class's files


@pytest.mark.slow
def test_a_shard_with_nobody_in_its_slice_still_records_itself(graded, tmp_path):
    submissions = tmp_path / "submissions"
    (submissions / "ada").mkdir(parents=True)
    variant(submissions / "ada", NB1)  # slice 1 of 2
    out = tmp_path / "shard-2"
    out.mkdir()
    shutil.copy(graded[0] / ".points.json", out)  # cached by content: nothing is graded here
    printed = []
    assert run.grade_class(run.ClassOptions(
        submissions=submissions, out=out, grading=SKIP, shard=shards.Shard(2, 2),
        echo=printed.append, progress=False)) == []
    data = shards.read(out)
    assert data["learners"] == [] and data["class"]["learners"] == 1
    assert printed == [f"shard 2/2: 0 regraded, 0 up to date of the class's 1; shard record "
                       f"written to {out / 'shard.json'} (join the shards with `python -m grader "
                       "merge`)"]
    assert sorted(p.name for p in out.iterdir()) == [".points.json", "shard.json"]


@pytest.mark.slow
def test_merge_equals_one_run_whatever_the_number_of_jobs(graded):
    """The shards graded one learner at a time (--jobs 1), the one run two at once (--jobs 2):
    the merged files equal the one run's, timing aside, byte for byte where nothing is timed."""
    one, engine = graded
    merged = engine / "grades"
    for name in ("gradebook.csv", "summary.json", "summary.png"):
        assert (merged / name).read_bytes() == (one / name).read_bytes(), name
    assert sorted(p.name for p in merged.iterdir() if p.is_dir()) == list(LEARNERS)
    for student in LEARNERS:
        files = sorted(p.name for p in (one / student).iterdir())
        assert sorted(p.name for p in (merged / student).iterdir()) == files
        for name in files:
            assert _without_timing(merged / student / name) == \
                _without_timing(one / student / name), f"{student}/{name}"
    with open(merged / "gradebook.csv", newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    with open(merged / "points_possible.csv", newline="") as handle:
        points = {r["column"]: r["points_possible"] for r in csv.DictReader(handle)}
    for suite in (NB1, NB2):
        possible = float(points[suite])
        assert float(rows["ada"][suite]) == possible > 0
        assert 0 < float(rows["cyd"][suite]) < possible  # graded, not just copied empty
    assert rows["bob"][NB2] == "0" and rows["dan"]["total"] == "0"


# -- refusals (no grading: copies of the graded shards, edited) ---------------------------------
def _edit(key: str, value):
    def edit(data: dict) -> None:
        target = data
        *path, last = key.split(".")
        for part in path:
            target = target[part]
        target[last] = value
    return edit


REFUSALS = {
    "missing slice": (None, ["1"], "shard 2/2 missing"),
    "duplicated slice": (None, ["1", "1-copy", "2"], "shard 1/2 is given twice"),
    "other grader version": (_edit("grader_version", "0.0.9"), ["1", "2"],
                             "different grader versions (0.1.0 and 0.0.9)"),
    "other options": (_edit("options.skip_execution", False), ["1", "2"],
                      "different options (skip_execution)"),
    "other assignment": (_edit(f"assignment.suites.{NB1}", "0" * 64), ["1", "2"],
                         f"different assignments (hidden tests of {NB1} differ)"),
    "other class": (_edit("class.learners", 5), ["1", "2"], "different classes (4 and 5"),
    "other shard count": (_edit("shards", 3), ["1", "2"], "different numbers of shards"),
    "other due time": (_edit("options.class.due", "2026-03-02T00:00:00+00:00"), ["1", "2"],
                       "different options (due)"),
    "other roster": (_edit("options.class.roster", {"path": "r.csv", "columns": [],
                                                    "learners": {}}), ["1", "2"],
                     "different options (roster)"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(REFUSALS))
def test_merge_refuses_shards_that_do_not_belong_together(graded, tmp_path, case, capsys):
    edit, given, message = REFUSALS[case]
    source = graded[1] / "shards"
    shutil.copytree(source / "shard-1", tmp_path / "1")
    shutil.copytree(source / "shard-1", tmp_path / "1-copy")
    shutil.copytree(source / "shard-2", tmp_path / "2")
    if edit is not None:
        data = json.loads((tmp_path / "2" / "shard.json").read_text())
        edit(data)
        shards.write(tmp_path / "2", data)
    out = tmp_path / "grades"
    assert cli.main(["merge", *(str(tmp_path / g) for g in given), "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and message in error, error
    assert not out.exists()


@pytest.mark.slow
def test_merge_refuses_an_unfinished_shard_and_its_own_input(graded, tmp_path, capsys):
    source = graded[1] / "shards"
    for index in (1, 2):
        shutil.copytree(source / f"shard-{index}", tmp_path / str(index))
    (tmp_path / "2" / "cyd" / "record.json").unlink()
    folders = [str(tmp_path / "1"), str(tmp_path / "2")]
    assert cli.main(["merge", *folders, "--out", str(tmp_path / "grades")]) == 2
    assert "no record for learner cyd of shard 2/2" in capsys.readouterr().err
    (tmp_path / "2" / "shard.json").unlink()  # what an interrupted shard leaves
    assert cli.main(["merge", *folders, "--out", str(tmp_path / "grades")]) == 2
    assert f"{tmp_path / '2'}: no shard.json" in capsys.readouterr().err
    shutil.copytree(source / "shard-2", tmp_path / "2", dirs_exist_ok=True)
    assert cli.main(["merge", *folders, "--out", folders[0]]) == 2
    assert "is one of the shards" in capsys.readouterr().err


@pytest.mark.slow
def test_merge_adds_the_roster_and_writes_canvas_csv(graded, tmp_path):
    _, engine = graded
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,name,lms_id\n" + "".join(
        f"{s},{s.title()},{i}\n" for i, s in enumerate([*LEARNERS, "zoe"], start=1)))
    out = tmp_path / "grades"
    merge.main(shard_dirs=sorted((engine / "shards").iterdir()), out=out, echo=lambda *_: None,
               roster=roster, lms="canvas", assignment_name="ps1")
    with open(out / "gradebook.csv", newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert list(rows) == sorted([*LEARNERS, "zoe"]) and rows["zoe"]["grading_status"] == \
        "not submitted"
    assert all(rows[s]["name"] == s.title() for s in LEARNERS)
    canvas = (out / "canvas.csv").read_text().splitlines()
    assert canvas[1].startswith("    Points Possible,") and len(canvas) == 2 + len(LEARNERS) + 1
    assert canvas[0].endswith(",ps1")  # merge --assignment names the column, as batch's does


# -- the class's options on every route (tests.graded_class.grade_with_options) -----------------
def _rows(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "gradebook.csv", newline="") as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


def _class_files(graded_class) -> dict[str, Path]:
    classes = graded_class.engine.parent / "classes"
    return {route: classes / route / ("grades" if route != "one" else "") for route in ROUTES}


@pytest.mark.slow
def test_every_route_gives_one_runs_gradebook_and_canvas_csv_with_the_penalties(graded_class):
    """batch, and the shards merged by the Actions workflow, the Slurm script (stand-in sbatch)
    and the Kubernetes script (stand-in kubectl), all given the roster, Canvas, --due,
    --late-policy and --assignment: the same bytes, and the penalty where it is due."""
    folders = _class_files(graded_class)
    for name in ("gradebook.csv", "canvas.csv", "points_possible.csv", "summary.json"):
        first = (folders["one"] / name).read_bytes()
        for route, folder in folders.items():
            assert (folder / name).read_bytes() == first, f"{route}: {name}"
    for student in LEARNERS:
        page = (folders["one"] / student / "feedback.html").read_bytes()
        assert all((f / student / "feedback.html").read_bytes() == page for f in folders.values())
    rows = _rows(folders["one"])
    ada, bob, cyd, dan, zoe = (rows[s] for s in ("ada", "bob", "cyd", "dan", "zoe"))
    assert (ada["time_source"], ada["days_late"], ada["late_penalty_percent"]) == (
        "git commit time", "2", "20")  # 33.5 hours late: a started day counts
    assert float(ada["total_after_penalty"]) == pytest.approx(0.8 * float(ada["total"]))
    assert (cyd["days_late"], cyd["total_after_penalty"]) == ("0", cyd["total"])
    assert dan["time_source"] == "file times"  # his own folder's metadata is not trusted
    assert bob["time_source"] == "file times"
    assert zoe["grading_status"] == "not submitted" and zoe["time_source"] == "nothing handed in"
    canvas = list(csv.reader((folders["one"] / "canvas.csv").read_text().splitlines()))
    assert canvas[0][-1] == "ps1"  # --assignment names Canvas's column on every route
    scores = {row[0]: float(row[-1]) for row in canvas[2:]}
    assert float(ada["total"]) > 0 and scores["Ada"] == pytest.approx(0.8 * float(ada["total"]))
    assert scores["Cyd"] == float(cyd["total"]) and scores["Zoe"] == 0
    deadline = json.loads((folders["one"] / "summary.json").read_text())["deadline"]
    assert deadline["late"] == ["ada", "bob", "dan"]
    assert deadline["from_file_times"] == ["bob", "dan"]
    for route in ("actions", "slurm", "k8s"):
        record = shards.read(folders[route].parent / "shards" / "shard-1")
        assert record["options"]["class"]["due"] == "2026-03-01T23:59:00+00:00"


@pytest.mark.slow
def test_a_late_learners_feedback_page_and_results_show_the_penalty(graded_class):
    one = _class_files(graded_class)["one"]
    ada = _rows(one)["ada"]
    page = (one / "ada" / "feedback.html").read_text()
    assert f"Total: {ada['total']}/{ada['max_total']} points" in page
    assert "2 days late" in page and "git commit time" in page
    assert (f"Late penalty: 20%; total after the penalty: {ada['total_after_penalty']}/"
            f"{ada['max_total']} points") in page
    lateness = json.loads((one / "ada" / "results.json").read_text())["extra_data"]["lateness"]
    assert (lateness["days_late"], lateness["penalty_percent"]) == (2, 20.0)
    assert lateness["total_after_penalty"] == float(ada["total_after_penalty"])
    assert batch.read_record(one, "ada")["lateness"]["submitted_at"] == "2026-03-03T09:30:00+00:00"
    on_time = (one / "cyd" / "feedback.html").read_text()
    assert "on time" in on_time and "Late penalty" not in on_time
    plain = (graded_class.one / "ada" / "feedback.html").read_text()  # graded without --due
    assert "Late penalty" not in plain and "Handed in" not in plain


@pytest.mark.slow
def test_shards_of_nbgrader_assignments_merge_into_a_folder_each(graded, tmp_path):
    """`batch --shard` in nbgrader's layout writes a folder per assignment in each shard; `merge`
    of the shards' folders writes each assignment's files into OUT/ASSIGNMENT."""
    _, engine = graded
    for index in (1, 2):
        shutil.copytree(engine / "shards" / f"shard-{index}", tmp_path / f"s{index}" / "ps1")
    lines: list[str] = []
    merge.main(shard_dirs=[tmp_path / "s1", tmp_path / "s2"], out=tmp_path / "grades",
               echo=lines.append)
    assert (tmp_path / "grades" / "ps1" / "gradebook.csv").read_bytes() == \
        (engine / "grades" / "gradebook.csv").read_bytes()
    assert lines[0] == f"assignment ps1: gradebook in {tmp_path / 'grades' / 'ps1'}"


@pytest.mark.slow
def test_merge_refuses_options_that_contradict_the_shards(graded_class, tmp_path, capsys):
    shards_dir = graded_class.engine.parent / "classes" / "actions" / "shards"
    folders = [str(shards_dir / f"shard-{k}") for k in (1, 2)]
    other = tmp_path / "other.csv"
    other.write_text("student_id,lms_id\nada,9\n")
    for args, message in ((["--assignment", "ps2"], "the shards were graded as assignment ps1"),
                          (["--roster", str(other)], "is not the roster the shards were graded")):
        assert cli.main(["merge", *folders, "--out", str(tmp_path / "out"), *args]) == 2
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1 and message in error, error
    plain = [str(graded_class.engine / "shards" / f"shard-{k}") for k in (1, 2)]
    with_due = tmp_path / "due"
    for k, folder in enumerate(plain, start=1):  # shards graded with --due but no roster
        shutil.copytree(folder, with_due / str(k))
        record = json.loads((with_due / str(k) / "shard.json").read_text())
        record["options"]["class"]["due"] = "2026-03-01T23:59:00+00:00"
        (with_due / str(k) / "shard.json").write_text(json.dumps(record))
    assert cli.main(["merge", str(with_due / "1"), str(with_due / "2"), "--out",
                     str(tmp_path / "out"), "--roster", str(other)]) == 2
    assert "its extensions did not count" in capsys.readouterr().err
