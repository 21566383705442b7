"""The course's grader: release student notebooks, execute them, judge their exercises, report.

The pipeline, one module per stage: :mod:`grader.release` (solutions -> student notebooks),
:mod:`grader.execute` (nbval in a child process), :mod:`grader.judge` (hidden tests against a
sandboxed learner, :mod:`grader.sandbox`), :mod:`grader.report` (terminal, Gradescope JSON,
JUnit XML), tied together by :mod:`grader.grade`. :func:`check` is the learner's inline
self-check.
"""
from __future__ import annotations

import os

__version__ = "0.1.0"


def check(name: str) -> None:
    """Run the public checks of exercise ``name`` on the notebook's own function and print them.

    Inside the grading sandbox, and while the grader executes the notebook, this does nothing:
    the grader runs the same checks itself, in its own process.
    """
    if os.environ.get("GRADER_SANDBOX") == "1" or os.environ.get("GRADER_EXECUTION") == "1":
        return
    import sys

    from grader.inline import check as run_checks

    run_checks(name, sys._getframe(1).f_globals)
