"""Join the shards of a class (``batch --shard K/N`` runs) into the files of one run.

``python -m grader merge SHARD_DIR... --out DIR`` checks that the shards belong together (the
same class, hidden tests, grader version and options; every slice 1 to N exactly once; a record
for every learner of every slice), copies each learner's folder, and writes ``gradebook.csv``,
``summary.json`` and ``summary.png`` with :mod:`grader.batch.class_files`, from the same records
in the same order as a single run: the files are byte-identical to grading the class in one run, apart
from the timing fields (``execution_time`` in ``results.json``, ``seconds`` in ``record.json``,
``time`` in ``results.xml``). The options that shape the class's files rather than a learner's
grading (``--due``, ``--late-policy``, ``--roster``, ``--lms``, ``--assignment``) travel in each
shard's record, and shards given different ones are refused.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import grader
from grader.batch import enrolment, shards
from grader.batch import written as written_grades
from grader.batch import lms as lms_formats
from grader.errors import GraderError
from grader.batch.gradebook import read_record


def _differing(a: dict, b: dict) -> str:
    """The keys whose values differ between ``a`` and ``b``, comma-separated (the class options'
    own keys where those differ: due, late_policy, assignment, roster, lms)."""
    keys = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            inner = a.get(key), b.get(key)
            keys += ([_differing(*inner)] if key == "class" and all(isinstance(v, dict)
                                                                    for v in inner) else [key])
    return ", ".join(keys)


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


def _class_options(base: dict, *, roster: Path | None, lms: str | None,
                   assignment_name: str | None) -> dict:
    """The shards' class options (due time, late policy, assignment, roster, LMS), with those
    that ``merge`` was given: each must be what the shards were graded with, or one they lacked
    (a roster only where no due time made its extensions count)."""
    from grader.batch.class_files import roster_from_record, roster_record

    settings = dict(base.get("class") or {"due": None, "late_policy": None, "assignment": None,
                                          "roster": None, "lms": None})
    if roster is not None:
        given = roster_record(enrolment.read(roster))
        recorded = settings["roster"]
        if recorded is not None and (recorded["learners"], recorded["columns"]) != (
                given["learners"], given["columns"]):
            raise GraderError(f"--roster {roster} is not the roster the shards were graded with "
                              f"({recorded['path']}); merge without --roster, or grade the "
                              "shards again with this one")
        if recorded is None and settings["due"] is not None:
            raise GraderError(f"--roster {roster}: the shards were graded with --due but no "
                              "roster, so its extensions did not count; grade the shards again "
                              "with --roster")
        settings["roster"] = recorded or given
    if lms is not None:
        if settings["lms"] not in (None, lms):
            raise GraderError(f"--lms {lms}: the shards were graded with --lms {settings['lms']}")
        settings["lms"] = lms
    if assignment_name is not None:
        if settings["assignment"] not in (None, assignment_name):
            raise GraderError(f"--assignment {assignment_name}: the shards were graded as "
                              f"assignment {settings['assignment']}; merge without --assignment")
        settings["assignment"] = assignment_name
    if settings["lms"] is not None and settings["roster"] is None:
        raise GraderError(f"--lms {settings['lms']}: needs --roster (with the LMS's ids), given "
                          "to the shards or to merge")
    return settings


def main(*, shard_dirs: list[Path], out: Path, echo=print, roster: Path | None = None,
         lms: str | None = None, assignment_name: str | None = None) -> list[dict]:
    """Entry point of ``python -m grader merge``: check the shards, write the class's files.

    Returns the records of every learner, sorted by id. Raises GraderError (one line) when the
    shards do not make up one class's grading, or ``out`` is one of them. The shards' class
    options (``--due``, ``--late-policy``, ``--roster``, ``--lms``, ``--assignment``) travel in
    their records and each learner's hand-in time in their record, so the merge writes what one
    run would; ``roster``, ``lms`` and ``assignment_name`` add those the shards were not given.
    Shards of nbgrader's layout (a folder per assignment in each) merge into ``out/ASSIGNMENT``.
    """
    if lms is not None and lms not in lms_formats.SYSTEMS:
        raise GraderError(f"--lms {lms}: one of: {', '.join(lms_formats.SYSTEMS)}")
    if shard_dirs and all(not (f / shards.RECORD).is_file() and f.is_dir() for f in shard_dirs):
        names = sorted({p.parent.name for f in shard_dirs for p in f.glob(f"*/{shards.RECORD}")})
        if names:  # nbgrader's layout: each shard holds a folder per assignment
            merged = []
            for name in names:
                echo(f"assignment {name}: gradebook in {out / name}")
                merged += main(shard_dirs=[f / name for f in shard_dirs], out=out / name,
                               echo=echo, roster=roster, lms=lms, assignment_name=name
                               if assignment_name in (None, name) else assignment_name)
            return merged
    records = {folder: shards.read(folder) for folder in shard_dirs}
    resolved = {folder.resolve() for folder in shard_dirs}
    if out.resolve() in resolved:
        raise GraderError(f"--out {out} is one of the shards; write the merged files to a "
                          "folder of their own")
    if len(resolved) < len(shard_dirs):
        raise GraderError("a shard's folder is given twice; give each shard's folder once")
    check(records)
    base = next(iter(records.values()))["options"]
    settings = _class_options(base, roster=roster, lms=lms, assignment_name=assignment_name)
    from grader.batch.class_files import roster_from_record, write_class

    out.mkdir(parents=True, exist_ok=True)
    for folder, data in records.items():
        for student_id in data["learners"]:
            shutil.rmtree(out / student_id, ignore_errors=True)
            shutil.copytree(folder / student_id, out / student_id)
    points = next(iter(records.values()))["assignment"]["points"]
    learners = sorted(s for data in records.values() for s in data["learners"])
    merged = [read_record(out, student_id) for student_id in learners]
    # written grades imported into a shard, or into the merged folder before: kept, joined
    parts = [d for d in (written_grades.read(f) for f in [*records, out]) if d is not None]
    if parts:
        written_grades.write(out, written_grades.merged(parts))
    write_class(out, merged, points, people=roster_from_record(settings["roster"]),
                class_options=settings, echo=echo)
    echo(f"{len(records)} shards merged, {len(merged)} learners; gradebook written to "
         f"{out / 'gradebook.csv'}")
    return merged
