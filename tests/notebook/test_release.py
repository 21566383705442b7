"""Release: notebooks/ is in step with solutions/, stubs replace solutions, errors name the cell."""
from __future__ import annotations

import nbformat
import pytest

from grader.errors import GraderError
from grader.notebook.read import EXERCISE_TAG, tags
from grader.notebook.release import (BEGIN_SOLUTION, COLAB_TAG, CONCLUSION_PROMPT, END_SOLUTION,
                                     EXPERIMENT_PROMPT, release)
from tests.conftest import NOTEBOOKS, SOLUTIONS, inline_notebook


def test_notebooks_are_in_step_with_solutions(tmp_path):
    """Fails when someone edits solutions/ without running `python -m grader release`."""
    written = release(source=SOLUTIONS, dest=tmp_path)
    assert sorted(p.name for p in written) == sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    for path in written:
        assert path.read_text() == (NOTEBOOKS / path.name).read_text(), \
            f"{path.name} is out of date: run `python -m grader release` and commit notebooks/"


def test_release_is_idempotent(tmp_path):
    first = {p.name: p.read_text() for p in release(source=SOLUTIONS, dest=tmp_path / "a")}
    second = {p.name: p.read_text() for p in release(source=SOLUTIONS, dest=tmp_path / "a")}
    assert first == second


def _exercise(body: str) -> str:
    return (
        "import math\n\ndef f(x):\n    \"\"\"Doc.\"\"\"\n    " + BEGIN_SOLUTION + "\n" + body +
        "\n    " + END_SOLUTION + "\n")


def test_stub_keeps_signature_and_docstring_and_drops_hidden_material(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    inline_notebook(source / "99_demo.ipynb", [
        ("markdown", "# Demo", []),
        ("code", "import torch\nprint('setup output kept')", ["setup"]),
        ("code", _exercise("    return x + 1"), ["exercise"]),
        ("code", "print(f(1))\n### BEGIN HIDDEN TESTS\nassert f(1) == 2\n### END HIDDEN TESTS", []),
        ("code", "secret = 42", ["instructor"]),
    ])
    notebook = nbformat.read(str(source / "99_demo.ipynb"), 4)
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="kept\n")]
    notebook.cells[1].execution_count = 1
    notebook.cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    notebook.cells[3].execution_count = 2
    nbformat.write(notebook, str(source / "99_demo.ipynb"))

    release(source=source, dest=tmp_path / "out")
    student = nbformat.read(str(tmp_path / "out" / "99_demo.ipynb"), 4)
    sources = [c.source for c in student.cells]
    assert len(student.cells) == 4, "the instructor cell must be removed"
    assert 'def f(x):\n    """Doc."""\n    raise NotImplementedError(' in sources[2]
    assert "return x + 1" not in sources[2] and BEGIN_SOLUTION not in sources[2]
    assert "assert f(1) == 2" not in sources[3] and sources[3].strip() == "print(f(1))"
    assert student.cells[1].outputs, "outputs before the first exercise are kept"
    assert not student.cells[3].outputs and student.cells[3].execution_count is None
    assert student.metadata["grader"]["suite"] == "99_demo"
    assert EXERCISE_TAG in tags(student.cells[2])


def test_a_conclusion_region_in_markdown_becomes_the_learners_prompt(tmp_path):
    """The prose that reads a thinking exercise's result never reaches the learner."""
    inline_notebook(tmp_path / "96_demo.ipynb", [
        ("code", _exercise("    return x + 1"), ["exercise"]),
        ("markdown", "## What it shows\n" + BEGIN_SOLUTION + "\nThe spread is 0.40: equivariant.\n"
         + END_SOLUTION + "\nNext section.", []),
    ])
    release(source=tmp_path, dest=tmp_path / "out")
    text = nbformat.read(str(tmp_path / "out" / "96_demo.ipynb"), 4).cells[1].source
    assert text == "## What it shows\n" + CONCLUSION_PROMPT + "\nNext section."


def test_an_experiment_region_in_a_code_cell_becomes_the_learners_empty_cell(tmp_path):
    """The code that measures a thinking exercise's answer never reaches the learner; the rest stays."""
    inline_notebook(tmp_path / "94_demo.ipynb", [
        ("code", _exercise("    return x + 1"), ["exercise"]),
        ("code", "data = [1, 2]\n" + BEGIN_SOLUTION + "\nfor s in data:\n    print(f(s))\n" + END_SOLUTION, []),
        ("code", "for s in [3]:\n    " + BEGIN_SOLUTION + "\n    print(f(s))\n    " + END_SOLUTION, []),
    ])
    release(source=tmp_path, dest=tmp_path / "out")
    cells = nbformat.read(str(tmp_path / "out" / "94_demo.ipynb"), 4).cells
    assert cells[1].source == "data = [1, 2]\n" + EXPERIMENT_PROMPT
    assert cells[2].source == "for s in [3]:\n    pass  " + EXPERIMENT_PROMPT, "a block keeps a body"


def test_the_colab_cell_follows_the_title_only_where_the_course_names_its_repository(tmp_path):
    inline_notebook(tmp_path / "95_demo.ipynb", [
        ("markdown", "# Demo", []),
        ("code", "import torch", ["setup"]),
    ])
    plain = release(source=tmp_path, dest=tmp_path / "plain", repository="")
    assert [c.cell_type for c in nbformat.read(str(plain[0]), 4).cells] == ["markdown", "code"]
    first = release(source=tmp_path, dest=tmp_path / "a", repository="teacher/pe-course")[0].read_text()
    again = release(source=tmp_path, dest=tmp_path / "b", repository="teacher/pe-course")[0].read_text()
    assert first == again, "releasing twice gives the same bytes"
    cells = nbformat.reads(first, 4).cells
    assert COLAB_TAG in tags(cells[1]) and tags(cells[2]) == ["setup"]
    assert 'if "google.colab" in sys.modules:' in cells[1].source
    assert "https://github.com/teacher/pe-course" in cells[1].source
    with pytest.raises(GraderError, match="is not a GitHub 'owner/name'"):
        release(source=tmp_path, dest=tmp_path / "c", repository="https://github.com/x")


@pytest.mark.parametrize("body, message", [
    ("    " + BEGIN_SOLUTION + "\n    return 1", "without '### END SOLUTION'"),
    ("    " + BEGIN_SOLUTION + "\n    return 1\n    " + END_SOLUTION + "\n    " + END_SOLUTION,
     "without '### BEGIN SOLUTION'"),
])
def test_unbalanced_regions_name_the_notebook_and_cell(tmp_path, body, message):
    inline_notebook(tmp_path / "98_bad.ipynb", [
        ("markdown", "# Bad", []),
        ("code", "def g():\n" + body, ["exercise"]),
    ])
    with pytest.raises(GraderError, match=r"98_bad\.ipynb, cell 1, line \d+: .*" + message.replace("(", r"\(")):
        release(source=tmp_path, dest=tmp_path / "out")


def test_exercise_cell_without_region_is_an_error(tmp_path):
    inline_notebook(tmp_path / "97_bad.ipynb", [("code", "def g():\n    return 1", ["exercise"])])
    with pytest.raises(GraderError, match="97_bad.ipynb, cell 0: an exercise cell needs"):
        release(source=tmp_path, dest=tmp_path / "out")


def test_every_exercise_cell_of_the_released_notebooks_raises_not_implemented():
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        notebook = nbformat.read(str(path), 4)
        exercise_cells = [c for c in notebook.cells if EXERCISE_TAG in tags(c)
                          and c.cell_type == "code"]  # written questions are markdown
        assert exercise_cells, path.name
        for cell in exercise_cells:
            assert "raise NotImplementedError(" in cell.source, (path.name, cell.source[:80])
            assert BEGIN_SOLUTION not in cell.source


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_the_two_rules_of_every_exercise_are_said_in_the_first_exercise_section(path):
    cells = nbformat.read(str(path), 4).cells
    first = next(i for i, c in enumerate(cells) if c.cell_type == "code" and EXERCISE_TAG in tags(c))
    before = [c.source for c in cells[:first] if c.cell_type == "markdown"][-1]
    text = " ".join(before.split())
    assert "Leave your inputs unchanged" in text and "`x = x * s`, not `x *= s`" in text
    assert "accept non-contiguous tensors" in text and "`.reshape`, not `.view`" in text


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_no_notebook_finds_its_data_relative_to_its_own_folder(path):
    """A copy of a notebook outside notebooks/ must still find assets/ (grader.assets)."""
    for cell in nbformat.read(str(path), 4).cells:
        if cell.cell_type == "code":
            assert 'Path("..")' not in cell.source and "'..'" not in cell.source, cell.source[:200]


def _released_demo(tmp_path, body: str = "    return x + 1"):
    """A one-exercise course released into ``tmp_path/notebooks``; (source, dest, student)."""
    source, dest = tmp_path / "solutions", tmp_path / "notebooks"
    source.mkdir(exist_ok=True)
    inline_notebook(source / "95_demo.ipynb", [("markdown", "# Demo", []),
                                               ("code", _exercise(body), ["exercise"])])
    release(source=source, dest=dest, repository="")
    return source, dest, dest / "95_demo.ipynb"


def _solve(student) -> str:
    """Answer the exercise in the released notebook, as a learner would; its new text."""
    notebook = nbformat.read(str(student), 4)
    notebook.cells[1].source = notebook.cells[1].source.replace(
        'raise NotImplementedError("f: replace this line with your implementation")',
        "return x + 1  # my answer")
    nbformat.write(notebook, str(student))
    return student.read_text()


def test_release_refuses_to_overwrite_a_solved_notebook(tmp_path):
    """A learner who runs `release` after solving an exercise keeps their work: one line names the
    notebook, and nothing is written; only --force overwrites it, keeping a copy."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    source, dest, student = _released_demo(tmp_path)
    solved = _solve(student)
    with pytest.raises(GraderError, match="95_demo.ipynb is not what release last wrote"):
        release(source=source, dest=dest, repository="")
    assert student.read_text() == solved
    run = subprocess.run([sys.executable, "-m", "grader", "release", "--source", str(source),
                          "--dest", str(dest)], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert str(student) in run.stderr and "--force" in run.stderr
    assert student.read_text() == solved and list(dest.iterdir()) == [student]

    forced = subprocess.run([sys.executable, "-m", "grader", "release", "--source", str(source),
                             "--dest", str(dest), "--force"], cwd=ROOT, capture_output=True,
                            text=True)
    assert forced.returncode == 0, forced.stderr
    backups = [p for p in dest.iterdir() if p != student]
    assert len(backups) == 1 and backups[0].name.startswith("95_demo.ipynb.bak-")
    assert backups[0].read_text() == solved and str(backups[0]) in forced.stdout
    assert "# my answer" not in student.read_text() and "NotImplementedError" in student.read_text()


def test_release_refuses_to_remove_a_changed_notebook_without_a_solution(tmp_path):
    source, dest, student = _released_demo(tmp_path)
    _solve(student)
    (source / "95_demo.ipynb").rename(source / "94_other.ipynb")
    with pytest.raises(GraderError, match="95_demo.ipynb is not what release"):
        release(source=source, dest=dest, repository="")
    assert student.is_file() and not (dest / "94_other.ipynb").exists()


def test_release_overwrites_what_it_released_itself(tmp_path):
    """The maintainer's path: an edited solution is released over the untouched student notebook,
    which saved again by Jupyter unchanged (other key order and indentation) is untouched too; so
    is a notebook released before release recorded a digest, where it equals the new release."""
    import json

    source, dest, student = _released_demo(tmp_path)
    content = json.loads(student.read_text())
    student.write_text(json.dumps(content, indent=2))  # saved again, nothing changed
    inline_notebook(source / "95_demo.ipynb", [
        ("markdown", "# Demo, edited", []), ("code", _exercise("    return x + 2"), ["exercise"])])
    release(source=source, dest=dest, repository="")
    assert "# Demo, edited" in student.read_text()
    content = json.loads(student.read_text())
    del content["metadata"]["grader"]["released"]
    student.write_text(json.dumps(content))
    release(source=source, dest=dest, repository="")
    assert json.loads(student.read_text())["metadata"]["grader"]["released"]
