"""The course's grader: release student notebooks, execute them, judge their exercises, report.

One folder per stage (``grader/README.md``): :mod:`grader.notebook` (read, release, execute with
nbval), :mod:`grader.judge` (hidden tests against a learner kept in :mod:`grader.sandbox`),
:mod:`grader.report` (terminal, Gradescope JSON, JUnit XML, Markdown, HTML), tied together by
:mod:`grader.grade`; a class is :mod:`grader.batch`, and what leaves the repository is
:mod:`grader.export`. :func:`check` is the learner's inline self-check.
"""
from __future__ import annotations

import os
import sys

__version__ = "0.1.0"

_CELL_SOURCES: dict[str, str] = {}
"""In a notebook's kernel: the source each cell last ran, by cell id, where the front end says
which cell runs (JupyterLab, VS Code). :func:`check` reads the notebook's cells as the grader
does, and takes a cell's source from here when the file holds an older one (an unsaved edit)."""


def _remember_cell(result) -> None:
    info = getattr(result, "info", None)
    cell_id, source = getattr(info, "cell_id", None), getattr(info, "raw_cell", None)
    if cell_id and isinstance(source, str):
        _CELL_SOURCES[cell_id] = source


def _record_cells() -> None:
    """Record each cell this IPython kernel runs from now on (no-op outside a kernel)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None and _remember_cell not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _remember_cell)


def check(name: str) -> None:
    """Run the public checks of exercise ``name`` on the notebook's own function and print them.

    Inside the grading sandbox, and while the grader executes the notebook, this does nothing:
    the grader runs the same checks itself, in its own process.
    """
    if os.environ.get("GRADER_SANDBOX") == "1" or os.environ.get("GRADER_EXECUTION") == "1":
        return
    from grader.inline import check as run_checks

    run_checks(name, sys._getframe(1).f_globals)


if os.environ.get("GRADER_SANDBOX") != "1" and os.environ.get("GRADER_EXECUTION") != "1":
    _record_cells()
