"""A notebook finds the course's assets/ from wherever it runs, or says in one line what to do."""
from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

from grader import assets
from grader.assets import course_assets
from grader.notebook.read import SETUP_TAG, tags
from tests.conftest import NOTEBOOKS, ROOT


@pytest.fixture(autouse=True)
def _no_variable(monkeypatch):
    monkeypatch.delenv(assets.ENVIRONMENT_VARIABLE, raising=False)


def test_found_above_the_working_folder_first(tmp_path, monkeypatch):
    course = tmp_path / "my-course"
    (course / "assets").mkdir(parents=True)
    (course / "assets" / "corpus.txt").write_text("text")
    (course / "notebooks" / "drafts").mkdir(parents=True)
    monkeypatch.chdir(course / "notebooks" / "drafts")
    assert course_assets("corpus.txt") == course / "assets"
    # a folder that lacks the file asked for is passed over, for the course's own
    assert course_assets("ctx05_base.pt") == ROOT / "assets"


def test_found_beside_the_grader_from_anywhere_else(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert course_assets("corpus.txt", "reversal03_curves.json") == ROOT / "assets"


def test_the_environment_variable_wins_and_is_checked(tmp_path, monkeypatch):
    (tmp_path / "corpus.txt").write_text("text")
    monkeypatch.setenv(assets.ENVIRONMENT_VARIABLE, str(tmp_path))
    assert course_assets("corpus.txt") == tmp_path
    with pytest.raises(FileNotFoundError) as error:
        course_assets("ctx05_base.pt")
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"COURSE_ASSETS={tmp_path} is not a folder")


def test_nowhere_to_be_found_says_what_to_do_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(assets, "PACKAGE_ROOT", tmp_path / "elsewhere")
    with pytest.raises(FileNotFoundError) as error:
        course_assets("corpus.txt")
    message = str(error.value)
    assert "\n" not in message and "corpus.txt" in message
    assert "set COURSE_ASSETS=/path/to/the/course/assets" in message


@pytest.mark.slow  # executes notebook cells
def test_a_copied_notebook_finds_its_assets(tmp_path):
    """Notebook 05's setup and the cell that finds assets/, run by a kernel in a folder outside
    the course (the notebook's own folder, as Jupyter starts it), then a check of what it found."""
    notebook = nbformat.read(str(NOTEBOOKS / "05_context_extension.ipynb"), 4)
    setup = [c for c in notebook.cells if c.cell_type == "code" and SETUP_TAG in tags(c)]
    finding = [c for c in notebook.cells if c.cell_type == "code" and "course_assets(" in c.source]
    assert setup and len(finding) == 1
    check = nbformat.v4.new_code_cell(
        'import os\n'
        'assert (ASSETS / "ctx05_base.pt").is_file() and (ASSETS / "corpus.txt").is_file()\n'
        "print(os.getcwd())\n"
        "print(ASSETS.resolve())")
    notebook.cells = setup + finding + [check]
    copy = tmp_path / "my copy" / "05_context_extension.ipynb"
    copy.parent.mkdir()
    nbformat.write(notebook, str(copy))
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(copy.parent)}}).execute()
    where, found = notebook.cells[-1].outputs[0]["text"].strip().splitlines()
    assert where == str(copy.parent) and found == str((ROOT / "assets").resolve())
