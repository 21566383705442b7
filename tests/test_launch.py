"""The launch routes name the course's repository in one place: every released notebook's first
code cell sets the course up on Colab and does nothing elsewhere; the website's buttons open the
repository that pyproject.toml names, or on GitHub Actions the one the workflow runs in."""
from __future__ import annotations

import importlib.util
import sys
import time
import types

import pytest

from grader.notebook.read import read_notebook
from grader.notebook.release import COLAB_TAG, colab_cell, course_repository
from tests.conftest import NOTEBOOKS, ROOT

REPOSITORY = course_repository(ROOT)


def _conf():
    spec = importlib.util.spec_from_file_location("site_conf", ROOT / "docs" / "site" / "conf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_launch_buttons_open_the_named_repository_or_on_actions_the_one_it_runs_in():
    conf = _conf()
    assert REPOSITORY and conf.launch_repository({}) == REPOSITORY
    assert conf.launch_repository({"GITHUB_REPOSITORY": "someone/elsewhere"}) == REPOSITORY
    on_actions = {"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "someone/fork"}
    assert conf.launch_repository(on_actions) == "someone/fork"


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_the_first_code_cell_is_the_colab_cell_of_the_named_repository(path):
    cells = read_notebook(path).cells
    first = next(cell for cell in cells if cell.cell_type == "code")
    assert COLAB_TAG in first.metadata.get("tags", []), f"{path.name}: the first code cell is not the Colab cell"
    assert first.source == colab_cell(REPOSITORY, path.stem).source
    assert f"https://github.com/{REPOSITORY}" in first.source
    assert not first.outputs and first.execution_count is None


def test_the_colab_cell_does_nothing_off_colab(monkeypatch):
    """Run as nbval runs it while grading (no ``google.colab``): no process, no change of folder,
    and no time to speak of."""
    import subprocess

    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("the cell ran a process off Colab"))
    before = list(sys.path)
    namespace = {}
    start = time.perf_counter()
    exec(colab_cell(REPOSITORY, "01_permutation_invariance").source, namespace)
    assert time.perf_counter() - start < 0.05
    assert sys.path == before and "COURSE" not in namespace
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    with pytest.raises(pytest.fail.Exception, match="ran a process"):
        exec(colab_cell(REPOSITORY, "01_permutation_invariance").source, {})
