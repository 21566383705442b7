"""A class's walk (grader/batch/run.py): each gradebook visits its step modules once, in order.

Every ``grader`` module that ``run.py`` holds is swapped for a recorder that logs each name read
from it (a function called, a class or constant read) with the function that read it; grading and
the class's files are fakes, so no learner is graded. The options are read and checked first
(``_settings``); after that each gradebook must go discovery -> scoping -> lateness -> grading ->
the class's files, leaving a module only once.
"""
from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from grader.batch import class_files, grading, run
from grader.batch.shards import Shard
from grader.judge.proxy import known_suites

WALK = ("roster", "assignment", "deadlines", "grading", "class_files")
"""One gradebook's walk: the last part of the name of each module visited, in order."""


class _Recorder:
    """Stands for ``module``: logs (module, name, reading function) for each name read."""

    def __init__(self, module: ModuleType, log: list[tuple[str, str, str]]):
        self._module, self._log = module, log

    def __getattr__(self, name: str):
        caller = sys._getframe(1).f_code.co_name
        self._log.append((self._module.__name__.rsplit(".", 1)[-1], name, caller))
        return getattr(self._module, name)


def check_walk(log: list[tuple[str, str, str]]) -> int:
    """Assert that ``log`` checks the options first, then walks :data:`WALK` once per gradebook;
    returns how many gradebooks were walked."""
    checking = [i for i, (_, _, caller) in enumerate(log) if caller == "_settings"]
    assert checking == list(range(len(checking))), (
        f"the options are read after the walk began: {log}")
    modules = [module for module, _, caller in log if caller != "_settings"]
    visits = [m for i, m in enumerate(modules) if i == 0 or m != modules[i - 1]]
    walks = len(visits) // len(WALK)
    assert walks >= 1 and visits == list(WALK) * walks, (
        f"modules visited {' -> '.join(visits)}; each gradebook must visit "
        f"{' -> '.join(WALK)}, each once")
    return walks


def _notebook(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / f"{known_suites()[0]}.ipynb").write_text("{}")


@pytest.fixture
def recorded(monkeypatch, tmp_path):
    """The log of names ``run.py`` reads from its modules, with grading and the class's files
    faked (each learner a record, nothing written)."""
    log: list[tuple[str, str, str]] = []
    for name, value in list(vars(run).items()):
        if isinstance(value, ModuleType) and value.__name__.startswith("grader."):
            monkeypatch.setattr(run, name, _Recorder(value, log))
    monkeypatch.setattr(grading, "cached_points", lambda out, suites=None: {})
    monkeypatch.setattr(grading, "grade_all", lambda plans, **_: (
        [{"student_id": p.student_id} for p in plans], len(plans)))
    monkeypatch.setattr(class_files, "write_class", lambda out, records, *_, **__: records)
    monkeypatch.setattr(class_files, "write_shard", lambda *_, **__: None)
    return log


def _options(submissions: Path, out: Path, **given) -> run.ClassOptions:
    return run.ClassOptions(submissions=submissions, out=out, echo=lambda *_: None,
                            progress=False, **given)


def test_one_class_visits_each_module_once_in_order(recorded, tmp_path):
    for learner in ("ada", "bob"):
        _notebook(tmp_path / "submissions" / learner)
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,lms_id\nada,1\nbob,2\ncyd,3\n")
    run.grade_class(_options(tmp_path / "submissions", tmp_path / "out", roster=roster,
                             lms="canvas", due="2026-03-01T23:59", late_policy="10,50",
                             notebooks=["01"]))
    assert check_walk(recorded) == 1
    steps = [(module, name) for module, name, caller in recorded if caller != "_settings"]
    assert ("roster", "discover") in steps and ("assignment", "scope") in steps
    assert ("deadlines", "class_lateness") in steps and ("grading", "grade_all") in steps
    assert steps[-1] == ("class_files", "write_class")


def test_each_nbgrader_assignment_walks_once_and_a_shard_ends_on_its_record(recorded, tmp_path):
    for learner in ("ada", "bob"):
        for name in ("ps1", "ps2"):
            _notebook(tmp_path / "course" / "submitted" / learner / name)
    run.grade_class(_options(tmp_path / "course", tmp_path / "out", due="2026-03-01T23:59"))
    assert check_walk(recorded) == 2
    recorded.clear()
    run.grade_class(_options(tmp_path / "course", tmp_path / "shard", shard=Shard(1, 2),
                             due="2026-03-01T23:59"))
    assert check_walk(recorded) == 2
    assert [name for module, name, _ in recorded if module == "class_files"][-1] == "write_shard"


def test_a_module_visited_twice_or_out_of_order_fails(recorded, tmp_path, monkeypatch):
    # the walk before the class's walk was straightened: nbgrader's discovery in assignment.py,
    # the assignment's points scoped between two visits of grading.py, the class's files in it
    before = [("assignment", "is_nbgrader", "grade_class"), ("roster", "discover", "x"),
              ("assignment", "scope", "x"), ("deadlines", "class_lateness", "x"),
              ("grading", "cached_points", "x"), ("assignment", "scope_points", "x"),
              ("grading", "grade_all", "x"), ("grading", "write_class", "x")]
    with pytest.raises(AssertionError, match="each once"):
        check_walk(before)
    swapped = [("roster", "discover", "x"), ("assignment", "scope", "x"),
               ("grading", "grade_all", "x"), ("deadlines", "class_lateness", "x"),
               ("class_files", "write_class", "x")]
    with pytest.raises(AssertionError, match="each once"):
        check_walk(swapped)
    late_options = [(m, n, "x") for m, n, _ in swapped[:2]] + [("deadlines", "parse_time",
                                                                "_settings")]
    with pytest.raises(AssertionError, match="options are read after"):
        check_walk(late_options)
    # a live walk that goes back to lateness after grading is caught too
    _notebook(tmp_path / "submissions" / "ada")
    graded = grading.grade_all

    def back_to_deadlines(plans, **given):
        run.deadlines.to_dict  # noqa: B018 (a read of the module is a visit)
        return graded(plans, **given)

    monkeypatch.setattr(grading, "grade_all", back_to_deadlines)
    run.grade_class(_options(tmp_path / "submissions", tmp_path / "out"))
    with pytest.raises(AssertionError, match="grading -> deadlines -> class_files"):
        check_walk(recorded)
