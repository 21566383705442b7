"""Deterministic scores: no call finds the files of an earlier one, and the learner's output never
fails a call.

Each call starts in an empty scratch folder (its working folder, ``HOME`` and ``TMPDIR``) and,
under bubblewrap, an empty ``/tmp`` and ``/dev/shm`` (:func:`grader.sandbox.child.fresh_scratch`):
so an exercise scores the same graded alone (``--exercise``) or after the others, whatever ran
before it on the route. The learner's printed output goes nowhere: no log fills up to the
file-size limit and then fails the calls that print (``[Errno 27] File too large``).
"""
from __future__ import annotations

from grader.batch.variants import exercise_cell_index
from grader.grade import grade_notebook
from grader.notebook.read import read_notebook
from grader.sandbox.parent import Limits, Sandbox, Template
from tests.conftest import SOLUTIONS

LEAVE = ("cell", (
    "import os, tempfile\n"
    "def leave(tag):\n"
    "    seen = {'cwd': sorted(os.listdir('.')), 'tmp': os.path.exists('/tmp/left-by-a-call'),\n"
    "            'tmpdir': sorted(os.listdir(tempfile.gettempdir())),\n"
    "            'home': os.environ['HOME'] == os.getcwd()}\n"
    "    open('left-' + tag, 'w').write(tag)\n"
    "    with tempfile.NamedTemporaryFile(delete=False) as handle:\n"
    "        handle.write(b'x')\n"
    "    if os.access('/tmp', os.W_OK):\n"
    "        open('/tmp/left-by-a-call', 'w').write(tag)\n"
    "    os.makedirs('elsewhere', exist_ok=True)\n"
    "    os.chdir('elsewhere')  # the next call starts in the scratch folder all the same\n"
    "    return seen\n"))


def test_every_call_starts_with_an_empty_scratch_folder_and_tmp():
    """Two calls in one sandbox, then one in a sandbox forked from the same template (another
    exercise's): none finds what an earlier call wrote."""
    with Template([LEAVE]) as template:
        template.start()
        with Sandbox(template=template) as first:
            seen = [first.call("leave", (f"call{i}",), {}, timeout=60) for i in range(2)]
        with Sandbox(template=template) as second:
            seen.append(second.call("leave", ("other",), {}, timeout=60))
        confined = template.confinement.confined
    for each in seen:
        assert each["cwd"] == [] and each["tmpdir"] == [] and each["home"], seen
        if confined:  # /tmp is the view's own; without bubblewrap it is the machine's
            assert each["tmp"] is False, seen


def test_printed_output_never_fails_a_call():
    """Each call prints half the file-size limit: before, the sandbox's log reached the limit at
    the third call, whose print then raised ``OSError: [Errno 27] File too large``."""
    cells = [("cell", "def loud(x):\n    print('x' * (1 << 19), flush=True)\n    return x\n")]
    with Sandbox(cells, limits=Limits(file_bytes=1 << 20)) as sandbox:
        assert [sandbox.call("loud", (i,), {}, timeout=60) for i in range(6)] == list(range(6))


def _order_dependent(folder) -> object:
    """Notebook 01's solution, with ``permutation_matrix`` leaving a file in its scratch folder
    and in ``/tmp`` at each call, and ``max_equivariance_error`` answering wrongly where it finds
    either: its score would depend on whether the first ran before it."""
    import nbformat

    notebook = read_notebook(SOLUTIONS / "01_permutation_invariance.ipynb")
    wrappers = {
        "permutation_matrix": ["    for _path in ('left-by-permutation', '/tmp/left-by-permutation'):",
                               "        try:",
                               "            open(_path, 'w').close()",
                               "        except OSError:",
                               "            pass"],
        "max_equivariance_error": ["    import os as _os",
                                   "    if _os.path.exists('left-by-permutation') or "
                                   "_os.path.exists('/tmp/left-by-permutation'):",
                                   "        return 123.0"],
    }
    for name, lines in wrappers.items():
        index = exercise_cell_index(notebook, name)
        notebook.cells[index].source = "\n".join([
            notebook.cells[index].source, "import functools as _functools",
            f"_solution_{name} = {name}", f"@_functools.wraps(_solution_{name})",
            f"def {name}(*args, **kwargs):", *lines,
            f"    return _solution_{name}(*args, **kwargs)"])
    path = folder / "01_permutation_invariance.ipynb"
    nbformat.write(notebook, str(path))
    return path


def test_an_exercise_scores_the_same_alone_and_after_the_others(tmp_path):
    path = _order_dependent(tmp_path)
    exercise = "max_equivariance_error"

    def score(report):
        tests = [t for t in report.tests if t.exercise == exercise]
        return sum(t.score for t in tests), sum(t.max_score for t in tests)

    alone = score(grade_notebook(path, skip_execution=True, exercises={exercise}))
    after = score(grade_notebook(path, skip_execution=True))
    assert alone == after and alone[0] == alone[1] > 0, (alone, after)

