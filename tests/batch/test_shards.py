"""Slices of a class: stable on every machine, disjoint, complete; bad --shard values refused."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from grader.batch import grading as batch, shards
from grader.batch import run
from grader import cli
from grader.errors import GraderError
from tests.conftest import ROOT

IDS = [f"learner{i:03d}" for i in range(400)] + ["ada", "Zoë", "o'brien", "x"]


def test_slices_are_disjoint_complete_and_near_equal_for_a_large_class():
    for count in (1, 2, 7):
        found = {k: [s for s in IDS if shards.Shard(k, count).holds(s)]
                 for k in range(1, count + 1)}
        assert sorted(s for members in found.values() for s in members) == sorted(IDS)
        assert all(abs(len(m) - len(IDS) / count) < 0.25 * len(IDS) / count
                   for m in found.values()), {k: len(m) for k, m in found.items()}


def test_a_learners_slice_is_the_same_in_every_process_whatever_the_hash_seed():
    code = ("from grader.batch import shards; "
            f"print([shards.slice_of(s, 5) for s in {IDS!r}])")
    printed = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, cwd=ROOT,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout
               for seed in ("0", "1", "12345")}
    assert printed == {f"{[shards.slice_of(s, 5) for s in IDS]}\n"}
    assert len(set(json.loads(printed.pop()))) == 5


def test_a_learner_keeps_their_slice_when_the_class_changes():
    before = {s: shards.slice_of(s, 4) for s in IDS[:100]}
    assert {s: shards.slice_of(s, 4) for s in IDS[:100] + ["newcomer"]
            if s != "newcomer"} == before


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", "1/2/3", ""])
def test_bad_shard_values_are_refused_with_one_line(text, tmp_path, capsys):
    with pytest.raises(GraderError, match="expected K/N with 1 <= K <= N"):
        shards.parse(text)
    (tmp_path / "ada").mkdir()
    out = tmp_path / "out"
    assert cli.main(["batch", str(tmp_path), f"--shard={text}", "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "--shard" in error
    assert not out.exists()


def test_parse_accepts_k_of_n():
    assert shards.parse("2/8") == shards.Shard(2, 8) and str(shards.parse(" 8/8 ")) == "8/8"


def test_student_and_shard_together_are_refused(tmp_path):
    with pytest.raises(GraderError, match="--student and --shard cannot be combined"):
        run.grade_class(run.ClassOptions(
            submissions=tmp_path, out=tmp_path / "out", students=["ada"], shard=shards.Shard(1, 2),
            echo=lambda *_: None, progress=False))
    assert not (tmp_path / "out").exists()


def test_a_record_that_is_not_a_shard_record_is_refused(tmp_path):
    (tmp_path / "shard.json").write_text('{"shard": 1}')
    with pytest.raises(GraderError, match="not a shard record of this grader"):
        shards.read(tmp_path)
    (tmp_path / "shard.json").write_text("{ not json")
    with pytest.raises(GraderError, match="unreadable shard record"):
        shards.read(tmp_path)
