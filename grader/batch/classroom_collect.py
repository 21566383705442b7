"""Collect a GitHub Classroom assignment's repositories for grading: one folder per learner, each
at the commit that counts.

``python3 -m grader.batch.classroom_collect --organization ORG --prefix ps1 --out submissions``
lists the organization's repositories with ``gh``, keeps the learners' ones (named
``PREFIX-USERNAME`` and not a template repository: Classroom's starter is one, so
``ORG/ps1-starter`` is never graded as a learner called "starter"; ``--starter`` names a starter
that is not marked as a template), clones each into ``OUT/USERNAME`` and checks out:

* with ``--due`` and no ``--late-policy``: the learner's last commit at or before their due time
  (``--due`` plus the roster's ``extension_days``, or the roster's own ``due``:
  :func:`grader.batch.deadlines.due_for`); a learner with no commit by then gets no folder;
* otherwise: the newest commit, whose time ``batch --due --late-policy`` then reads as the
  hand-in time.

``OUT/commits.csv`` lists which commit was graded for whom, and when it was committed: the
hand-in time :mod:`grader.batch.deadlines` reads (a hand-in record the learner committed,
``timestamp.txt`` or ``submission_metadata.json``, is removed from their folder), and ``batch``
records the commit in each learner's record and ``results.json``. Times are git's committer times,
which the committer's clock sets. Needs only the standard library, ``gh`` and ``git``: the grader
need not be installed.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from grader.batch import deadlines, enrolment
from grader.errors import GraderError

COMMITS = deadlines.COMMITS
"""The list of graded commits, in the output folder."""
FORGEABLE = ("timestamp.txt", "submission_metadata.json")
"""Hand-in records a learner could commit themselves: removed from every clone."""


def _run(command: list[str], **kwargs) -> str:
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise GraderError(f"{' '.join(command[:3])} failed: {tail}")
    return result.stdout


def learner_repositories(organization: str, prefix: str,
                         starter: str | None = None) -> dict[str, str]:
    """Username -> repository name, for the learners' repositories of the assignment: named
    ``PREFIX-USERNAME``, not a template repository, not ``starter``; sorted by username."""
    listed = json.loads(_run(["gh", "repo", "list", organization, "--limit", "100000",
                              "--json", "name,isTemplate"]) or "[]")
    found = {}
    for repository in listed:
        name = repository["name"]
        if (not name.startswith(f"{prefix}-") or repository.get("isTemplate")
                or name == starter or name == prefix):
            continue
        found[name.removeprefix(f"{prefix}-")] = name
    return dict(sorted(found.items()))


def _commits(folder: Path) -> list[tuple[str, datetime]]:
    """The commits of ``folder``'s HEAD, newest first, with their committer times."""
    lines = _run(["git", "-C", str(folder), "log", "--format=%H %ct", "HEAD"]).split("\n")
    return [(commit, datetime.fromtimestamp(int(stamp), tz=timezone.utc))
            for commit, stamp in (line.split() for line in lines if line.strip())]


def collect(organization: str, prefix: str, out: Path, *, due: str | None = None,
            late_policy: bool = False, roster: Path | None = None,
            starter: str | None = None, echo=print) -> list[dict]:
    """Clone the learners' repositories into ``out`` at the commit that counts; returns the rows
    of ``commits.csv`` (student_id, repository, commit, committed_at, due, note)."""
    due_at = deadlines.parse_time(due) if due is not None else None
    people = enrolment.columns(enrolment.read(roster)) if roster is not None else {}
    repositories = learner_repositories(organization, prefix, starter)
    if not repositories:
        raise GraderError(f"no learners' repositories {prefix}-* in {organization} (templates "
                          "left out): check the prefix and the token's access")
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for student_id, repository in repositories.items():
        folder = out / student_id
        shutil.rmtree(folder, ignore_errors=True)
        _run(["gh", "repo", "clone", f"{organization}/{repository}", str(folder), "--",
              "--quiet"])
        history = _commits(folder)
        deadline = None if due_at is None else deadlines.due_for(due_at, people.get(student_id))
        if deadline is not None and not late_policy:
            history = [(c, t) for c, t in history if t <= deadline]
        row = {"student_id": student_id, "repository": f"{organization}/{repository}",
               "commit": "", "committed_at": "",
               "due": "" if deadline is None else deadline.isoformat(timespec="seconds"),
               "note": ""}
        if not history:
            shutil.rmtree(folder)
            row["note"] = "no commit by the due time: nothing graded"
            rows.append(row)
            continue
        commit, moment = history[0]
        _run(["git", "-C", str(folder), "checkout", "--quiet", "--detach", commit])
        shutil.rmtree(folder / ".git")
        for name in FORGEABLE:
            (folder / name).unlink(missing_ok=True)
        row.update(commit=commit, committed_at=moment.isoformat(timespec="seconds"))
        rows.append(row)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (out / COMMITS).write_text(buffer.getvalue())
    skipped = sum(not row["commit"] for row in rows)
    echo(f"{len(rows) - skipped} learners' repositories collected into {out}"
         + (f"; {skipped} with no commit by their due time" if skipped else "")
         + f"; the graded commits are listed in {out / COMMITS}")
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python3 -m grader.batch.classroom_collect``: see the module's description."""
    parser = argparse.ArgumentParser(prog="python3 -m grader.batch.classroom_collect",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--organization", required=True)
    parser.add_argument("--prefix", required=True, help="learners' repositories are PREFIX-USER")
    parser.add_argument("--out", type=Path, default=Path("submissions"))
    parser.add_argument("--due", metavar="TIME", help="as for batch: grade the last commit by "
                        "then (plus the roster's extensions)")
    parser.add_argument("--late-policy", action="store_true",
                        help="grade the newest commit; batch --late-policy takes the penalty")
    parser.add_argument("--roster", type=Path, metavar="CSV", help="as for batch (extensions)")
    parser.add_argument("--starter", metavar="REPOSITORY",
                        help="the starter repository's name, where it is not a template")
    args = parser.parse_args(argv)
    try:
        collect(args.organization, args.prefix, args.out, due=args.due,
                late_policy=args.late_policy, roster=args.roster, starter=args.starter)
    except GraderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
