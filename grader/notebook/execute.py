"""Execute a notebook top to bottom with nbval (lax mode) in a child process.

The notebook is copied into a scratch folder laid out like the repository (``notebooks/`` beside
``assets/``), so a submission graded from anywhere finds the course's assets and the original file
is never touched. nbval runs under pytest in a child process with a sandbox's resource limits, a
process-count bound and optionally another user; where the host allows it, the kernel it starts
runs under bubblewrap (:mod:`grader.sandbox.confinement`), seeing only the Python environment, the course's
assets and the learner-side modules of the grader read-only and the notebook's folder read-write,
with its own PID namespace and no network, and nbval reaches it through Unix sockets
(:mod:`grader.notebook._nbval_plugin`). nbval applies a per-cell time-out and a budget for the whole
notebook; execution stops at the first cell that times out or kills its kernel
(:mod:`grader.notebook._nbval_plugin`), and the cells after it are reported as not run. Its JUnit XML says
which cells failed. When it ends, every process it started is killed, escaped ones included.

The kernel runs with ``GRADER_EXECUTION=1``, which makes the notebook's inline ``check()`` calls
return at once: the judge runs the same public checks itself, in its own process.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from grader.sandbox import supervise
from grader.sandbox.child import ALLOWED_GRADER_MODULES
from grader.notebook.read import (bound_names, code_cell_labels, code_cells, first_line,
                                  read_notebook)
from grader.notebook.time_limits import (  # noqa: F401 - UNKNOWN_BUDGET re-exported
    CELL_FLOOR, MARGIN, START_SECONDS, UNKNOWN_BUDGET)
from grader.results import CellFailure, ExecutionResult
from grader.sandbox.confinement import Confinement, Limits, learner_environment, mask_grader_only
from grader.sandbox.parent import GRADER_ROOT

ASSETS_DIR = GRADER_ROOT / "assets"
MESSAGE_CHARS = 600
KERNEL_GRADER_MODULES = (*ALLOWED_GRADER_MODULES, "grader.assets")
"""The grader's modules a confined kernel sees: the sandbox's, and the notebooks' asset finder."""

LEAN_MALLOC = {"MALLOC_ARENA_MAX": "2"}
"""glibc's setting for nbval and its kernel: at most two malloc arenas (not eight per core), so
the memory that the kernel's threads free is kept in fewer heaps and given back twice a second
(:data:`grader.notebook._nbval_plugin.GIVE_BACK_FREED_MEMORY`); without, notebook 05's kernel grows by
hundreds of MiB that it no longer uses."""

SOLUTION_SECONDS = {
    "01_permutation_invariance": {"cells": 2.66, "slowest_cell": 1.74},
    "02_sinusoidal_encoding": {"cells": 3.66, "slowest_cell": 1.54},
    "03_addition_vs_concatenation": {"cells": 13.55, "slowest_cell": 6.04},
    "04_rotary_embeddings": {"cells": 4.69, "slowest_cell": 1.12},
    "05_context_extension": {"cells": 28.01, "slowest_cell": 11.56},
    "06_gpu_rope_kernel": {"cells": 4.73, "slowest_cell": 1.14},
    "07_rope_in_practice": {"cells": 0.55, "slowest_cell": 0.45},
}
"""What each solution's execution takes, as the grader runs it: the sum of its code cells'
seconds and its slowest cell's, in CPU seconds of the kernel's processes (on a quiet machine a
single-threaded cell's wall time; a busy machine, which stretches the wall time by its load,
changes them far less). The kernel's start and its ``import torch`` are not included
(:data:`grader.notebook._nbval_plugin.IMPORT_TORCH`). Recorded, not guessed: ``python
scripts/record_solution_seconds.py --write`` (the smallest of its runs)."""

REFERENCE_SECONDS = {suite: figures["cells"] for suite, figures in SOLUTION_SECONDS.items()}
"""Seconds each solution's cells take in all (:data:`SOLUTION_SECONDS`)."""

def default_budget(suite: str | None) -> float:
    """Seconds a learner's notebook may take in all: :data:`MARGIN` times what the solution's
    cells take (:data:`SOLUTION_SECONDS`), plus :data:`START_SECONDS`."""
    figures = SOLUTION_SECONDS.get(suite or "")
    if figures is None:
        return UNKNOWN_BUDGET
    return round(MARGIN * figures["cells"] + START_SECONDS)


def default_cell_timeout(budget: float, suite: str | None = None) -> float:
    """Seconds one cell may take by default: :data:`MARGIN` times the solution's slowest cell, at
    least :data:`CELL_FLOOR`, at most the budget.

    A cell that never returns then costs a few times the course's slowest cell, not a share of the
    whole budget. Without a recorded time for ``suite``: a sixth of the budget, between 15 s and
    120 s."""
    figures = SOLUTION_SECONDS.get(suite or "")
    if figures is None:
        return min(120.0, max(15.0, budget / 6))
    return min(budget, max(CELL_FLOOR, round(MARGIN * figures["slowest_cell"], 1)))


def _scratch_copy(notebook: Path, scratch: Path) -> Path:
    folder = scratch / "notebooks"
    folder.mkdir(parents=True)
    copy = folder / notebook.name
    shutil.copyfile(notebook, copy)
    if ASSETS_DIR.is_dir():
        (scratch / "assets").symlink_to(ASSETS_DIR, target_is_directory=True)
    return copy


CPU_PROPERTY = "cpu_seconds"
"""The JUnit property in which :mod:`grader.notebook._nbval_plugin` gives the CPU seconds that the
kernel's processes spent in a cell (its ``CPU_PROPERTY``)."""

_ANSI = re.compile(r"(?:\x1b|#x1B)\[[0-9;]*[A-Za-z]")


def _first_lines(text: str) -> str:
    text = _ANSI.sub("", text or "")
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    message = " | ".join(lines[:3])
    return message[:MESSAGE_CHARS]


def _code_cell(nbval_name: str) -> int | None:
    """The code cell (counted from 0) that nbval's ``Cell K`` names."""
    match = re.fullmatch(r"Cell (\d+)", nbval_name.strip())
    return int(match.group(1)) if match else None


def _learners_name(nbval_name: str, cells: list[tuple[str, str, set[str]]]) -> str:
    """nbval's ``Cell K`` (the K-th code cell, from 0) as every report names it: ``Cell N/M``
    (:func:`grader.notebook.read.cell_label`); ``cells`` is :func:`_cells`'."""
    index = _code_cell(nbval_name)
    return cells[index][0] if index is not None and index < len(cells) else nbval_name


def _parse_junit(path: Path, timings: dict[str, tuple] | None = None,
                 cells_of: list[tuple[str, str, set[str]]] | None = None
                 ) -> tuple[int, int, list[CellFailure]]:
    """(cells run, cells without error, failures) from nbval's JUnit XML; ``timings``, where
    given, receives each cell's (wall seconds, CPU seconds of the kernel's processes or None) by
    its label (``Cell N/M``). ``cells_of`` (:func:`_cells`) names the cells, quotes their first
    lines and finds the failures that follow from an earlier one (:func:`_follow_from`)."""
    cells_of = cells_of or []
    root = ElementTree.parse(path).getroot()
    cells = passed = 0
    failures = []
    for case in root.iter("testcase"):
        if case.find("skipped") is not None:
            continue
        cells += 1
        if timings is not None:
            cpu = [float(prop.get("value") or 0) for prop in case.iter("property")
                   if prop.get("name") == CPU_PROPERTY]
            timings[_learners_name(case.get("name", "?"), cells_of)] = (
                float(case.get("time") or 0), cpu[0] if cpu else None)
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is None:
            passed += 1
        else:
            detail = problem.get("message") or ""
            text = problem.text or ""
            index = _code_cell(case.get("name", "?"))
            known = index is not None and index < len(cells_of)
            failures.append(CellFailure(_learners_name(case.get("name", "?"), cells_of),
                                        _first_lines(_cell_error(text) or detail),
                                        line=cells_of[index][1] if known else ""))
    return cells, passed, _follow_from(failures, {label: names for label, _, names in cells_of})


_NAME_ERROR = re.compile(r"NameError: name '(\w+)' is not defined")


def _follow_from(failures: list[CellFailure], binds: dict[str, set[str]]) -> list[CellFailure]:
    """Mark each failure that follows from an earlier one: a NameError for a name that an earlier
    failing cell binds at top level (it failed before it could). Its ``cause`` is the first
    failure of the chain; returns ``failures``."""
    for number, failure in enumerate(failures):
        match = _NAME_ERROR.search(failure.message)
        if match is None:
            continue
        for earlier in reversed(failures[:number]):
            if match.group(1) in binds.get(earlier.cell, set()):
                failure.cause = earlier.cause or earlier.cell
                break
    return failures


_NBVAL_CELL = re.compile(r"^Cell \d+: ")
"""nbval's name of the cell before its message (reports name the cell themselves)."""


def _cell_error(text: str) -> str:
    """The learner-facing part of nbval's failure text: the exception line, if there is one."""
    text = _ANSI.sub("", text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    hidden = [line for line in lines if "replied 'error'" in line]
    for line in reversed(lines):
        if ("Error" in line or "Exception" in line or "Timeout" in line) and not line.startswith(("File ", "---")):
            return " ".join(hidden + [_NBVAL_CELL.sub("", line)])
    return lines[-1] if lines else ""


def _cells(notebook: Path) -> list[tuple[str, str, set[str]]]:
    """``(label, first line, names bound at top level)`` of each code cell, in order (none where
    the notebook cannot be read: nbval reports that itself)."""
    try:
        read = read_notebook(notebook)
    except Exception:  # noqa: BLE001 - nbval reports an unreadable notebook itself
        return []
    return [(label, first_line(cell.source), bound_names(cell.source))
            for label, (_, cell) in zip(code_cell_labels(read), code_cells(read))]


def _seed_font_cache(target: Path, confinement: Confinement) -> None:
    """Copy matplotlib's font list from the grader's cache to ``target`` (the confined kernel's
    own, empty, cache), so that its first plot does not rebuild it (about half a second)."""
    cache = Path(os.environ.get("MPLCONFIGDIR") or Path(os.environ.get(
        "XDG_CACHE_HOME") or Path.home() / ".cache") / "matplotlib")
    try:
        found = sorted(cache.glob("fontlist-v*.json"))
        if found:
            target.mkdir(parents=True, exist_ok=True)
            for path in found:
                shutil.copyfile(path, target / path.name)
            for made in (target.parent, target, *target.iterdir()):
                supervise.give_to(made, confinement.user)
    except OSError:
        pass  # the kernel then builds its own


def _kernel_options(scratch: Path, folder: Path, confinement: Confinement) -> list[str]:
    """nbval's options that start the kernel under bubblewrap (none without it).

    The kernel's view holds the notebook's folder and a folder for the Unix sockets it talks
    through, read-write; the course's assets, read-only, where the notebook looks for them (beside
    its folder, and beside the ``grader`` package); the grader's learner-side modules. Not the
    rest of the scratch folder: nbval's report and stop file stay out of the kernel's reach.
    """
    if not confinement.confined:
        return []
    ipc = scratch / "kernel"
    ipc.mkdir()
    supervise.give_to(ipc, confinement.user)
    readable = [ASSETS_DIR] if ASSETS_DIR.is_dir() else []
    prefix = confinement.command([], scratch=[folder, ipc], workdir=folder, readable=readable,
                                 grader_modules=KERNEL_GRADER_MODULES, unset=("JPY_PARENT_PID",))
    if readable:
        prefix += ["--ro-bind", str(ASSETS_DIR), str(scratch / "assets"),
                   *mask_grader_only(ASSETS_DIR, scratch / "assets")]
    _seed_font_cache(folder / ".cache" / "matplotlib", confinement)  # the kernel's HOME
    spec = scratch / "kernel.json"
    spec.write_text(json.dumps({"prefix": prefix, "ipc": str(ipc)}))
    return [f"--grader-kernel={spec}"]


def execute(notebook: Path, *, cell_timeout: float = 120.0, budget: float | None = None,
            limits: Limits | None = None, timings: dict[str, tuple] | None = None
            ) -> ExecutionResult:
    """Run ``notebook`` with nbval in lax mode; never raises for a problem in the notebook.

    ``budget`` bounds the whole run in seconds (None: ``cell_timeout`` times the number of code
    cells, as before budgets existed). Every process the run started is gone when this returns.
    ``timings``, where given, receives each cell that ran, by its label (``Cell N/M``): its
    wall seconds and the CPU seconds its kernel spent (None where unknown), from nbval's report
    (``scripts/record_solution_seconds.py`` records them).
    """
    limits = limits or Limits()
    start = time.monotonic()
    cells_of = _cells(notebook)
    total = len(cells_of)
    if budget is None:
        budget = cell_timeout * max(total, 1)
    confinement = Confinement(limits)
    scratch = confinement.scratch("grader-execute-")
    try:
        return _run_nbval(notebook, scratch, confinement, cells_of=cells_of, start=start,
                          cell_timeout=cell_timeout, budget=budget, timings=timings)
    finally:
        confinement.release()
        shutil.rmtree(scratch, ignore_errors=True)


UNUSED_PLUGINS = ("cacheprovider", "xdist", "hypothesispytest", "anyio")
"""pytest plugins that executing a notebook under nbval does not use: without them its process
starts in 0.5 s of CPU instead of 1.3 to 1.4 s (hypothesis's plugin imports all of hypothesis)."""


def _run_nbval(notebook: Path, scratch: Path, confinement: Confinement, *,
               cells_of: list[tuple[str, str, set[str]]], start: float, cell_timeout: float,
               budget: float,
               timings: dict[str, tuple] | None = None) -> ExecutionResult:
    total = len(cells_of)
    copy = _scratch_copy(notebook, scratch)
    supervise.give_to(copy.parent, confinement.user)
    junit, stop_file = scratch / "cells.xml", scratch / "stopped.txt"
    # JUnit times of the cells themselves (the first cell's would hold the kernel's start).
    (scratch / "pytest.ini").write_text("[pytest]\njunit_duration_report = call\n")
    kernel = _kernel_options(scratch, copy.parent, confinement)
    command = [
        sys.executable, "-m", "pytest", str(copy), "--nbval-lax", "--nbval-current-env",
        f"--nbval-cell-timeout={cell_timeout:g}", "-p", "grader.notebook._nbval_plugin",
        f"--grader-budget={budget:g}", f"--grader-stop-file={stop_file}",
        *(option for name in UNUSED_PLUGINS for option in ("-p", f"no:{name}")),
        "-c", str(scratch / "pytest.ini"), "--rootdir", str(scratch),
        f"--junitxml={junit}", "-q", "--no-header", "-W", "ignore::DeprecationWarning", *kernel,
    ]
    # The allow-list, with the notebook's folder as home: nbval passes it on to the kernel.
    env = learner_environment(copy.parent, {"GRADER_EXECUTION": "1", **LEAN_MALLOC})
    process = subprocess.Popen(command, cwd=scratch, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True,
                               preexec_fn=lambda: confinement.preexec(cpu=False))
    error = None
    try:
        # nbval stops itself at the budget; this is the backstop for a stuck kernel shutdown.
        output, _ = process.communicate(timeout=budget + 30)
    except subprocess.TimeoutExpired:
        output, error = b"", f"execution did not finish within its budget of {budget:g} s"
    finally:
        supervise.kill_tree(process.pid)
        process.wait()
        supervise.kill_strays()
    seconds = time.monotonic() - start
    if error is None and not junit.is_file():
        tail = _first_lines("\n".join(output.decode(errors="replace").splitlines()[-5:]))
        error = f"nbval could not run the notebook: {tail}"
    if error is not None:
        return ExecutionResult(error=error, cells=total, not_run=total, seconds=seconds)
    cells, passed, failures = _parse_junit(junit, timings, cells_of)
    result = ExecutionResult(cells=cells, passed=passed, failures=failures, seconds=seconds,
                             not_run=max(total - cells, 0))
    if stop_file.is_file():
        result.error = (f"execution stopped early: {stop_file.read_text()[:MESSAGE_CHARS]}; "
                        f"{result.not_run} later cell(s) not run")
    elif cells == 0:
        result.error = "nbval found no code cells to run"
    return result
