"""The solutions get full marks, the released stubs get zero, and stored outputs reproduce."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader.grade import grade_notebooks
from grader.notebook.execute import REFERENCE_SECONDS, UNUSED_PLUGINS
from grader.results import NOT_IMPLEMENTED, PASSED
from tests.conftest import NOTEBOOKS, ROOT, solution_notebooks

SOLUTIONS = [pytest.param(p, id=p.stem) for p in solution_notebooks()]
LONGEST_FIRST = sorted(SOLUTIONS, key=lambda p: -REFERENCE_SECONDS[p.id])
"""The solutions by their execution time (05 takes longest), longest first: the order the
workers take them in (tests.conftest.LONGEST_FIRST)."""


ONE_RUN = pytest.mark.xdist_group("solutions-graded")
"""The tests that read :func:`graded_solutions` and :func:`graded_stubs`: on one worker (course.py
passes --dist loadgroup), which grades each set once."""


def _selected(request, test) -> list:
    """The solution notebooks whose ``test`` this run selected (all six, or those ``-k`` chose)."""
    return [item.callspec.params["path"] for item in request.session.items
            if getattr(item, "originalname", None) == test]


@pytest.fixture(scope="module")
def graded_solutions(request) -> dict:
    """The selected solutions graded in one run, as a learner's six notebooks are (one zygote
    imports torch once for all of them), without execution (strict nbval below executes them):
    notebook name -> its report."""
    paths = _selected(request, "test_solution_gets_full_marks")
    return {path.name: report for path, report in zip(paths, grade_notebooks(
        paths, skip_execution=True))}


@pytest.fixture(scope="module")
def graded_stubs(request) -> dict:
    """The released stubs of the selected solutions executed and graded in one run, as a
    learner's six untouched notebooks are: notebook name -> its report."""
    paths = [NOTEBOOKS / path.name for path in _selected(request, "test_released_stub_gets_zero")]
    return {path.name: report for path, report in zip(paths, grade_notebooks(paths))}


@pytest.mark.slow  # grades the whole notebook
@ONE_RUN
@pytest.mark.parametrize("path", SOLUTIONS)
def test_solution_gets_full_marks(path, graded_solutions):
    report = graded_solutions[path.name]
    assert report.error is None
    assert report.max_score > 0
    failing = [(t.exercise, t.name, t.status, t.output) for t in report.tests if t.status != PASSED]
    assert not failing
    assert not report.load_errors


@pytest.mark.slow
@ONE_RUN
@pytest.mark.parametrize("path", SOLUTIONS)
def test_released_stub_gets_zero(path, graded_stubs):
    report = graded_stubs[path.name]
    assert report.error is None
    assert report.execution is not None and report.execution.error is None
    assert report.score == 0 and report.max_score > 0
    assert {t.status for t in report.tests} == {NOT_IMPLEMENTED}, \
        [(t.name, t.status, t.output) for t in report.tests if t.status != NOT_IMPLEMENTED]


@pytest.mark.slow
@ONE_RUN
def test_a_fresh_clones_grade_reads_in_sixty_lines(request, graded_stubs):
    """What `python3 course.py grade` prints on a fresh clone (the released stubs): once about 350
    lines, a failing test per exercise; now the exercises not implemented share a line per
    notebook, and a failing cell is named as JupyterLab numbers it, with its first line."""
    import re

    from grader.report.render import table

    if len(graded_stubs) < len(SOLUTIONS):
        pytest.skip("needs every released notebook (test_released_stub_gets_zero of each)")
    reports = list(graded_stubs.values())
    text = table(reports) + "\nJSON report written to reports/results.json"
    print(text)
    assert len(text.splitlines()) <= 60, text
    assert "code cell" not in text and "missing" not in text
    for report in reports:
        assert report.execution.failures, report.path  # a stub fails where the notebook calls it
        for failure in report.execution.failures:
            assert re.fullmatch(r"Cell \d+/\d+", failure.cell) and failure.line, failure
        first = report.execution.failures[0]
        named = f"{first.cell} (`{first.line}`)"
        assert " ".join(named.split()) in " ".join(text.split())  # wrapped: spaces may differ


@pytest.mark.slow
@pytest.mark.parametrize("path", LONGEST_FIRST)
def test_solution_outputs_reproduce_under_strict_nbval(path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    unused = [option for name in UNUSED_PLUGINS for option in ("-p", f"no:{name}")]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", *unused,
         "-q", "--nbval-cell-timeout=600", str(path.relative_to(ROOT))],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:]
