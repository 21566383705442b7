"""Join the shards of a class (``batch --shard K/N`` runs) into the files of one run.

``python -m grader merge SHARD_DIR... --out DIR`` checks that the shards belong together (the
same class, hidden tests, grader version and options; every slice 1 to N exactly once; a record
for every learner of every slice), copies each learner's folder, and writes ``gradebook.csv``,
``summary.json`` and ``summary.png`` with :mod:`grader.gradebook`, from the same records in the
same order as a single run: the files are byte-identical to grading the class in one run, apart
from the timing fields (``execution_time`` in ``results.json``, ``seconds`` in ``record.json``,
``time`` in ``results.xml``).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import grader
from grader import enrolment, shards
from grader import lms as lms_formats
from grader import report as reporters
from grader.errors import GraderError
from grader.gradebook import read_record, summary_table, write_gradebook, write_summary


def _differing(a: dict, b: dict) -> str:
    """The keys whose values differ between ``a`` and ``b``, comma-separated."""
    return ", ".join(sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)))


_AGREE = {
    "shards": (lambda a, b: f"were cut into different numbers of shards ({a} and {b})",
               "cut every shard from the same N"),
    "grader_version": (lambda a, b: f"were graded by different grader versions ({a} and {b})",
                       "grade every shard with the same grader"),
    "assignment": (lambda a, b: "were graded against different assignments (hidden tests of "
                                f"{_differing(a['suites'], b['suites']) or 'equal files'} differ)",
                   "grade every shard with the same course repository"),
    "class": (lambda a, b: f"were cut from different classes ({a['learners']} and "
                           f"{b['learners']} learners, not the same ids)",
              "grade every shard from the same submissions"),
    "options": (lambda a, b: f"were graded with different options ({_differing(a, b)})",
                "grade every shard with the same options"),
}
"""What every shard must agree on: key -> (what differs, what to do)."""


def check(records: dict[Path, dict]) -> None:
    """Raise GraderError, with one line, unless ``records`` (folder -> shard record) are the
    complete set of slices of one grading of one class."""
    (first, base), *others = records.items()
    for folder, data in others:
        for key, (what, todo) in _AGREE.items():
            if data[key] != base[key]:
                raise GraderError(f"{first} and {folder} {what(base[key], data[key])}; {todo}")
    if base["grader_version"] != grader.__version__:
        raise GraderError(f"the shards were graded by grader {base['grader_version']}, this is "
                          f"{grader.__version__}; merge with the grader that graded them")
    count, seen = base["shards"], {}
    for folder, data in records.items():
        if data["shard"] in seen:
            raise GraderError(f"shard {data['shard']}/{count} is given twice ({seen[data['shard']]}"
                              f" and {folder}); give each shard's folder once")
        seen[data["shard"]] = folder
    missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in seen]
    if missing:
        raise GraderError(f"shard {', '.join(missing)} missing: grade each with `batch --shard "
                          "K/N` and give its folder too")
    _check_learners(records)


def _check_learners(records: dict[Path, dict]) -> None:
    everyone = []
    for folder, data in records.items():
        shard = shards.Shard(data["shard"], data["shards"])
        strays = [s for s in data["learners"] if not shard.holds(s)]
        if strays:
            raise GraderError(f"{folder}: learner {strays[0]} does not belong to shard {shard}; "
                              "grade that shard again")
        absent = [s for s in data["learners"] if read_record(folder, s) is None]
        if absent:
            raise GraderError(f"{folder}: no record for learner {absent[0]} of shard {shard}; "
                              "grade that shard again")
        everyone += data["learners"]
    expected = next(iter(records.values()))["class"]
    if shards.class_digest(everyone) != expected["sha256"]:
        raise GraderError(f"the shards hold {len(everyone)} learners, not the class's "
                          f"{expected['learners']}; grade every shard again")


def main(*, shard_dirs: list[Path], out: Path, echo=print, roster: Path | None = None,
         lms: str | None = None) -> list[dict]:
    """Entry point of ``python -m grader merge``: check the shards, write the class's files.

    Returns the records of every learner, sorted by id. Raises GraderError (one line) when the
    shards do not make up one class's grading, or ``out`` is one of them. ``roster`` and
    ``lms`` do what they do for ``batch`` (:mod:`grader.enrolment`, :mod:`grader.lms`).
    """
    if lms is not None and (lms not in lms_formats.SYSTEMS or roster is None):
        raise GraderError(f"--lms {lms}: needs --roster (with the LMS's ids) and one of: "
                          f"{', '.join(lms_formats.SYSTEMS)}")
    people = enrolment.read(roster) if roster is not None else None
    records = {folder: shards.read(folder) for folder in shard_dirs}
    resolved = {folder.resolve() for folder in shard_dirs}
    if out.resolve() in resolved:
        raise GraderError(f"--out {out} is one of the shards; write the merged files to a "
                          "folder of their own")
    if len(resolved) < len(shard_dirs):
        raise GraderError("a shard's folder is given twice; give each shard's folder once")
    check(records)
    out.mkdir(parents=True, exist_ok=True)
    for folder, data in records.items():
        for student_id in data["learners"]:
            shutil.rmtree(out / student_id, ignore_errors=True)
            shutil.copytree(folder / student_id, out / student_id)
    points = next(iter(records.values()))["assignment"]["points"]
    learners = sorted(s for data in records.values() for s in data["learners"])
    merged = [read_record(out, student_id) for student_id in learners]
    everyone = merged if people is None else enrolment.apply(merged, people)
    write_gradebook(out, everyone, points, enrolment.columns(people),
                    people.columns if people else [])
    echo(summary_table(write_summary(out, everyone, points)))
    if lms == "canvas":
        title = "notebooks " + " ".join(suite.split("_")[0] for suite in points)
        reporters.write_text(out / "canvas.csv", lms_formats.canvas(
            everyone, points, enrolment.columns(people), title))
        echo(f"Canvas import file written to {out / 'canvas.csv'} (assignment {title!r})")
    echo(f"{len(records)} shards merged, {len(merged)} learners; gradebook written to "
         f"{out / 'gradebook.csv'}")
    return merged
