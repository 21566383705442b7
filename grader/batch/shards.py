"""Slices of a class: which learners ``batch --shard K/N`` grades, and the record each shard writes.

A learner's slice depends on their id alone: the first eight bytes of the SHA-256 of the id
(UTF-8), as a big-endian integer, modulo N, plus one. It is the same on every machine and in
every Python (the built-in ``hash`` of a string is salted per process), and a learner keeps
their slice when others join or leave the class. Slices are therefore near equal in size only
for classes much larger than N.

Each shard writes ``shard.json`` beside its learners' folders, last, once every learner of its
slice has a record; :mod:`grader.batch.merge` reads these records and refuses shards that do not
belong together.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from grader.report import render as reporters
from grader.errors import GraderError

RECORD = "shard.json"
FORMAT = 2
"""Version of the shard record's layout."""
_SPEC = re.compile(r"(\d+)/(\d+)")


@dataclass(frozen=True)
class Shard:
    """The K-th of N slices of a class (1 <= K <= N)."""

    index: int
    """K, counted from 1."""
    count: int
    """N, the number of slices."""

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, student_id: str) -> bool:
        """Whether learner ``student_id`` belongs to this slice."""
        return slice_of(student_id, self.count) == self.index


def parse(text: str) -> Shard:
    """A ``--shard K/N`` value; raises GraderError unless 1 <= K <= N."""
    match = _SPEC.fullmatch(text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise GraderError(f"--shard {text}: expected K/N with 1 <= K <= N, e.g. --shard 2/8")
    return Shard(int(match.group(1)), int(match.group(2)))


def slice_of(student_id: str, count: int) -> int:
    """The slice (1 to ``count``) of learner ``student_id``."""
    digest = hashlib.sha256(student_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def class_digest(student_ids: list[str]) -> str:
    """SHA-256 of the sorted ids of the whole class, one per line: every shard must see the same."""
    return hashlib.sha256("\n".join(sorted(student_ids)).encode("utf-8")).hexdigest()


def record(shard: Shard, *, class_ids: list[str], learners: list[str], grader_version: str,
           options: dict, suites: dict[str, str], points: dict[str, list[dict]]) -> dict:
    """The shard record: what was graded (the class, the hidden tests and their points), how
    (grader version, options) and which slice (K, N and its learners' ids)."""
    return {
        "format": FORMAT, "shard": shard.index, "shards": shard.count,
        "grader_version": grader_version, "options": options,
        "assignment": {"suites": suites, "points": points},
        "class": {"learners": len(class_ids), "sha256": class_digest(class_ids)},
        "learners": sorted(learners),
    }


def write(out: Path, data: dict) -> None:
    """Write ``out/shard.json``."""
    reporters.write_text(out / RECORD, json.dumps(data, indent=1) + "\n")


def read(folder: Path) -> dict:
    """The shard record in ``folder``; raises GraderError when there is none or it is unreadable."""
    path = folder / RECORD
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise GraderError(f"{folder}: no {RECORD}; give the --out folders of finished "
                          "`batch --shard K/N` runs") from None
    except (OSError, ValueError) as exc:
        raise GraderError(f"{path}: unreadable shard record ({exc}); grade that shard "
                          "again") from None
    keys = {"format", "shard", "shards", "grader_version", "options", "assignment", "class",
            "learners"}
    if not isinstance(data, dict) or not keys <= set(data) or data["format"] != FORMAT:
        raise GraderError(f"{path}: not a shard record of this grader; grade that shard again")
    return data
