"""The zygote: one confined process per grading run imports torch and forks each notebook's template.

It must hold nothing of one notebook's for the next, survive a notebook that ends its own process,
be replaced when it dies, and leave no process of a closed template behind.
"""
from __future__ import annotations

import os
import signal

import pytest

from grader.sandbox import supervise
from grader.sandbox.parent import Sandbox, StudentCrashed, Template, Zygote

PROBE = ("probe", (
    "import math, os, sys\n"
    "def probe():\n"
    "    return {'module': hasattr(math, 'LEAK'), 'global': 'LEAK' in globals(),\n"
    "            'environ': 'LEAK' in os.environ, 'tmp': os.path.exists('/tmp/leak'),\n"
    "            'cwd': sorted(os.listdir('.')), 'home': os.environ.get('HOME') == os.getcwd(),\n"
    "            'torch': 'torch' in sys.modules}\n"))

LEAKY = ("setup", (
    "import math, os\n"
    "math.LEAK = 1\n"
    "LEAK = 1\n"
    "os.environ['LEAK'] = '1'\n"
    "open('/tmp/leak', 'w').write('x')\n"
    "open('leak', 'w').write('x')\n"
    "def probe():\n"
    "    return 'first notebook'\n"))


def _call(template: Template, name: str):
    with Sandbox(template=template) as box:
        return box.call(name, (), {}, timeout=30)


@pytest.fixture
def zygote():
    with Zygote() as zygote:
        yield zygote


def test_a_template_holds_nothing_of_the_previous_notebooks_cells(zygote):
    with Template([LEAKY], zygote=zygote) as first:
        first.start()
        assert _call(first, "probe") == "first notebook"
    with Template([PROBE], zygote=zygote) as second:
        second.start()
        seen = _call(second, "probe")
    assert seen["module"] is False and seen["global"] is False and seen["environ"] is False
    assert seen["cwd"] == [] and seen["home"] is True  # a folder of its own, not the first's
    assert seen["torch"] is True  # imported by the zygote, before any cell
    if zygote.confinement.confined:  # the view's /tmp is the zygote's own: emptied between notebooks
        assert seen["tmp"] is False
    assert zygote.starts == 1


def test_a_setup_cell_that_ends_its_process_takes_down_only_its_own_notebook(zygote):
    with Template([("setup", "import os\nos._exit(3)\n")], zygote=zygote) as exits:
        with pytest.raises(StudentCrashed, match="exited with status 3"):
            exits.start()
    with Template([PROBE], zygote=zygote) as after:
        after.start()
        assert _call(after, "probe")["module"] is False
    assert zygote.starts == 1 and zygote.running()


def test_a_zygote_that_dies_is_replaced(zygote):
    with Template([PROBE], zygote=zygote) as first:
        first.start()
        _call(first, "probe")
    os.killpg(zygote.pid, signal.SIGKILL)
    supervise.kill_tree(zygote.pid)
    with Template([PROBE], zygote=zygote) as second:
        second.start()
        assert _call(second, "probe")["torch"] is True
    assert zygote.starts == 2


def test_a_template_that_dies_is_forked_again(zygote):
    with Template([PROBE, ("exercise", "import os\ndef die():\n    os._exit(0)\n")],
              zygote=zygote) as template:
        template.start()
        os.kill(template.pid, signal.SIGKILL)
        assert _call(template, "probe")["module"] is False  # a new template, the same zygote
    assert zygote.starts == 1


def test_a_closed_template_leaves_no_process_but_the_zygote(zygote):
    """A process the cells started and left behind (a double fork, re-parented inside the zygote's
    PID namespace) is killed when its notebook's template closes."""
    escape = ("setup", (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(300)\n"
        "    os._exit(0)\n"
        "time.sleep(0.2)\n"))
    with Template([escape, PROBE], zygote=zygote) as template:
        template.start()
        inside = _alive_below(zygote.pid)
    # Before: bubblewrap's init and the zygote (under bubblewrap), the template, the escaped one.
    # After: the zygote's own chain only.
    assert len(_alive_below(zygote.pid)) == len(inside) - 2
    assert zygote.running()


def _alive_below(pid: int) -> set[int]:
    return {p for p in supervise.descendants(pid) if supervise._alive(p)}


def test_a_template_whose_cells_started_cuda_spawns_its_sandboxes(zygote):
    """A forked copy of a process that started CUDA cannot use it (notebook 06 on a GPU): the
    zygote's template then serves no fork, and each sandbox loads the cells in a process of its own."""
    loaded_by = "import os\nLOADED_BY = os.getpid()\n"
    forked = ("exercise", "def forked():\n    return os.getppid() == LOADED_BY\n")
    pretend_cuda = "import torch\ntorch.cuda.is_initialized = lambda: True\n" + loaded_by
    with Template([("setup", pretend_cuda), forked], zygote=zygote) as template:
        template.start()
        assert template.forkable is False
        assert _call(template, "forked") is False


def test_a_zygote_started_before_the_grading_serves_it_and_is_closed_with_it():
    """``check --skip-execution`` starts the zygote before it imports the judge
    (:func:`grader.sandbox.parent.start_zygote`): the grading forks its template from that
    zygote, starts no other, and closes it (process and folder) when it ends."""
    from grader.grade import grade_notebooks
    from grader.sandbox.parent import start_zygote
    from tests.conftest import SOLUTIONS

    solution = SOLUTIONS / "01_permutation_invariance.ipynb"
    zygote = start_zygote()
    assert zygote is not None and zygote.running()
    (report,) = grade_notebooks([solution], skip_execution=True,
                                exercises={"permutation_matrix"}, zygote=zygote)
    assert report.tests and all(t.status == "passed" for t in report.tests), report.tests
    assert zygote.starts == 1 and not zygote.running() and not zygote.workdir.exists()
