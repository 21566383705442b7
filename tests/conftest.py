"""Shared helpers for the project's tests: solutions in-process, notebooks built inline."""
from __future__ import annotations

import fcntl
import os
import shutil
import sys
from pathlib import Path

# One torch thread per test process (and per process it starts: graders, batch jobs, nbval's
# kernels), as the learner's sandboxes already have. The suite runs two pytest-xdist workers on
# two cores, each judging beside its sandboxes; with torch's default of a thread per core, the
# intra-op threads of the two workers wait on each other at every barrier, and a catalogue entry
# took 4 to 9 times as long as with one thread (02's first wrong answer: 36-40 s against 4-8 s on
# a loaded machine). Set before torch is imported; a value given from outside is kept.
THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
for _name, _value in THREADS.items():
    os.environ.setdefault(_name, _value)
if "torch" in sys.modules:  # imported already by a plugin: the variables came too late for it
    sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
from typing import Callable
from types import SimpleNamespace

import pytest

from grader.notebook.read import SETUP_TAG, read_notebook, sandbox_cells, tags
from grader.batch.variants import exercise_cell_index, replaced  # noqa: F401 - exercise_cell_index for tests

import nbformat  # noqa: E402 - grader.notebook.read first: it makes this import cheaper
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"


def script_module(name: str):
    """``scripts/<name>.py`` imported as a module (the scripts are not a package), for tests of their logic;
    registered in ``sys.modules`` before it runs, as dataclasses defined in it look their module up there."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def solution_notebooks() -> list[Path]:
    """Every solution notebook, in course order."""
    return sorted(SOLUTIONS.glob("*.ipynb"))


def load_solution(name: str) -> SimpleNamespace:
    """The solution's setup and exercise cells, executed in this (trusted) process."""
    notebook = read_notebook(SOLUTIONS / f"{name}.ipynb")
    namespace: dict = {"__name__": f"solution_{name}"}
    for label, source in sandbox_cells(notebook, set()):
        exec(compile(source, f"<{name} {label}>", "exec"), namespace)
    return SimpleNamespace(**{k: v for k, v in namespace.items() if not k.startswith("__")})


@pytest.fixture(scope="session")
def solution():
    """``solution("04_rotary_embeddings")``: the solution's exercise functions, in-process."""
    cache: dict[str, SimpleNamespace] = {}

    def get(name: str) -> SimpleNamespace:
        if name not in cache:
            cache[name] = load_solution(name)
        return cache[name]

    return get


def one_worker_per_notebook(suite: str):
    """The xdist group of a notebook's variants (wrong answers and correct variants alike): one
    worker grades them all, so each notebook's template starts once per run, not once per worker
    and per file (course.py passes --dist loadgroup)."""
    return pytest.mark.xdist_group(f"variants-{suite}")


@pytest.fixture(scope="session")
def variant_grader():
    """``variant_grader("04_rotary_embeddings")``: a :class:`grader.batch.variants.VariantGrader` of
    that solution notebook, warm for the session (the two used last are kept; each holds a
    template process)."""
    from grader.batch.variants import VariantGrader

    graders: dict[str, VariantGrader] = {}

    def get(name: str) -> VariantGrader:
        if name not in graders:
            while len(graders) >= 2:
                graders.pop(next(iter(graders))).close()
            graders[name] = VariantGrader(SOLUTIONS / f"{name}.ipynb")
        else:
            graders[name] = graders.pop(name)  # most recently used last
        return graders[name]

    yield get
    for grader in graders.values():
        grader.close()


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder that ``build(folder)`` fills once per test run, shared by every xdist worker.

    For costly fixtures that tests only read (a class graded in shards, say): the first worker
    to ask builds it under a lock; a worker that asks later reuses it.
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    folder = base / name
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (base / f"{name}.built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (base / f"{name}.built").touch()
    return folder


@pytest.fixture(scope="session")
def hidden_points(tmp_path_factory) -> Path:
    """``.points.json``: the course's hidden tests with their points, as ``batch`` lists them
    before it grades (:func:`grader.batch.grading.cached_points`: the six suites collected in a
    child process, 4-8 s of CPU), listed once per run. ``batch`` reuses the file wherever it is
    copied into the output folder, as long as the suites are unchanged (it is keyed by their
    content)."""
    from grader.batch import grading

    return built_once(tmp_path_factory, "hidden-points", grading.cached_points) / ".points.json"


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory, hidden_points) -> SimpleNamespace:
    """The class of ``tests/graded_class.py``, graded once per run (tests only read it):
    ``submissions``, ``one`` (one run's output folder) and ``engine`` (shards, merged into
    ``engine/grades``)."""
    from tests import graded_class

    root = built_once(tmp_path_factory, "graded-class",
                      lambda folder: graded_class.grade(folder, points=hidden_points))
    return SimpleNamespace(submissions=root / "submissions", one=root / "one",
                           engine=root / "engine")


def variant(tmp_path: Path, suite: str, replace: dict[str, str] | None = None,
            drop: tuple[str, ...] = (), extra_setup: str = "", name: str | None = None) -> Path:
    """A copy of a solution notebook with exercise cells replaced or dropped; returns its path."""
    notebook = replaced(read_notebook(SOLUTIONS / f"{suite}.ipynb"), replace or {})
    for exercise in drop:
        del notebook.cells[exercise_cell_index(notebook, exercise)]
    if extra_setup:
        for cell in notebook.cells:
            if cell.cell_type == "code" and SETUP_TAG in tags(cell):
                cell.source += "\n" + extra_setup
                break
    path = tmp_path / f"{name or suite}.ipynb"
    nbformat.write(notebook, str(path))
    return path


def exercise_score(report, exercise: str) -> tuple[float, float]:
    """(score, max score) of ``exercise``'s tests in ``report``."""
    tests = [t for t in report.tests if t.exercise == exercise]
    return sum(t.score for t in tests), sum(t.max_score for t in tests)


BWRAP_FAILS = ("bwrap: No permissions to create new namespace, likely because the kernel does "
               "not allow non-privileged user namespaces.")
"""What bubblewrap says where the host forbids it user namespaces (the fake of
:func:`path_with_failing_bwrap` says it too)."""


def path_with_failing_bwrap(folder: Path) -> str:
    """``PATH`` with a ``bwrap`` first that fails to start anything: it prints
    :data:`BWRAP_FAILS` and exits 1, as bubblewrap does on a host without user namespaces."""
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "bwrap"
    fake.write_text(f"#!/bin/sh\necho '{BWRAP_FAILS}' >&2\nexit 1\n")
    fake.chmod(0o755)
    return os.pathsep.join([str(folder), os.environ["PATH"]])


PLANTED = {"INSTRUCTOR_SECRET": "instructor-secret-6d1f", "GH_TOKEN": "ghp_token9c2e",
           "LC_TELEPHONE": "allowed-marker-41ab"}
"""Variables planted in the grader's environment: two it must never hand to a learner's code, and
one of the allow-list (``LC_*``), which proves that what the learner's code saw reaches the
reports."""


def environment_probe(folder: Path, outside: Path | None = None) -> Path:
    """Notebook 01 as a hostile learner could hand it in: its exercise ``permutation_matrix`` and
    an ordinary (top-level) cell print ``os.environ`` and raise with the planted variables
    (:data:`PLANTED`) they see, so whatever they see lands in the test's and the execution's
    messages. With ``outside``, each also writes a file there (it ran, and unconfined)."""
    mark = ("" if outside is None else
            f"    open(os.path.join({str(outside)!r}, where + str(os.getpid())), 'w').close()\n")
    probe = ("import os\n"
             f"PLANTED = {sorted(PLANTED)!r}\n"
             "def _seen(where):\n" + mark +
             "    print(dict(os.environ))\n"
             "    return {name: os.environ.get(name) for name in PLANTED}\n"
             "def permutation_matrix(perm):\n"
             "    raise RuntimeError(f'environment seen: {_seen(\"exercise\")}')\n")
    folder.mkdir(parents=True, exist_ok=True)
    return inline_notebook(folder / "01_permutation_invariance.ipynb", [
        ("code", "import torch", ["setup"]),
        ("code", probe, ["exercise"]),
        ("code", "raise RuntimeError(f'environment seen: {_seen(\"cell\")}')", []),
    ])


def inline_notebook(path: Path, cells: list[tuple[str, str, list[str]]]) -> Path:
    """Write a notebook built from ``(kind, source, tags)`` triples ('code' or 'markdown')."""
    built = []
    for kind, source, cell_tags in cells:
        cell = new_code_cell(source) if kind == "code" else new_markdown_cell(source)
        if cell_tags:
            cell.metadata["tags"] = list(cell_tags)
        built.append(cell)
    notebook = new_notebook(cells=built)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, str(path))
    return path


# -- what the run proved about the catalogue ------------------------------------------------------
_PROOFS = {"test_wrong_answer_is_rejected": "catalogued wrong answers rejected",
           "test_correct_variant_gets_full_marks": "correct variants given full marks"}
_proved: dict[str, int] = {name: 0 for name in _PROOFS}


def pytest_runtest_logreport(report) -> None:
    """Count the catalogue entries and correct variants that passed (workers' reports too)."""
    name = report.nodeid.rpartition("::")[2].partition("[")[0]
    if name in _proved and report.when == "call" and report.passed:
        _proved[name] += 1


def pytest_terminal_summary(terminalreporter) -> None:
    """One line after every run that graded the catalogue: how much of it was checked."""
    if not any(_proved.values()):
        return
    from tests.catalogue import modules

    found = modules(solution_notebooks())
    catalogued = {"test_wrong_answer_is_rejected": sum(len(m.WRONG_ANSWERS) for _, m in found),
                  "test_correct_variant_gets_full_marks":
                      sum(len(getattr(m, "CORRECT_VARIANTS", [])) for _, m in found)}
    held = [(name, len(m.WRONG_ANSWERS)) for name, m in found if getattr(m, "COSTS_ONCE", False)]
    terminalreporter.write_line("catalogue: " + ", ".join(
        f"{_proved[name]} of {catalogued[name]} {what}" for name, what in _PROOFS.items())
        + f"; one mistake costs once is checked for {sum(n for _, n in held)} wrong answers"
        + f" ({', '.join(name[:2] for name, _ in held) or 'no notebook'})")


# -- the order tests are handed to pytest-xdist's two workers ------------------------------------
_STRICT_NBVAL = "test_solutions.py::test_solution_outputs_reproduce_under_strict_nbval"
_PUBLIC_CHECKS = "test_public_checks.py::test_public_checks_tell_the_truth"
LONGEST_FIRST = (f"{_STRICT_NBVAL}[05_context_extension]",
                 f"{_PUBLIC_CHECKS}[05_context_extension]", f"{_PUBLIC_CHECKS}[04_rotary_embeddings]",
                 _STRICT_NBVAL, "test_public_checks.py",
                 "test_hostile.py", "test_confinement.py", "test_hosted_gradescope.py")
"""The tests that take longest one by one (5 to 45 s each on a quiet 2-core machine, measured
with ``--durations``), as ``FILE`` or ``FILE::TEST`` prefixes (a test's id included or not),
longest first: they are collected before the others (each in its own order; the first prefix a
test matches places it, so strict nbval's and the public checks' two longest come first, the
others of each after them). With ``--dist loadgroup`` the workers first take the
groups (``xdist_group``: largest first), then the single tests in the order collected, each
worker the next one when it is free; a long test that came last would leave one worker running
it alone at the end of the run, while short ones at the end let both finish together. (The
solutions' full marks and the stubs' zeros are a group, ``solutions-graded``, read from one
grading run of each set.)"""


def _longest_first_rank(item) -> int:
    name = f"{item.path.name}::{item.name}"
    return next((index for index, prefix in enumerate(LONGEST_FIRST)
                 if name.startswith(prefix if "::" in prefix else prefix + "::")),
                len(LONGEST_FIRST))


def pytest_collection_modifyitems(config, items) -> None:
    """Collect :data:`LONGEST_FIRST`'s tests first (a stable sort: every other test keeps its
    place, and the workers' collections stay equal)."""
    items.sort(key=_longest_first_rank)
