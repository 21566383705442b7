"""The time limits of a notebook's execution: how many times what the solution takes a learner's
notebook and cell may take (:func:`grader.notebook.execute.default_budget`,
:func:`grader.notebook.execute.default_cell_timeout`), and the command line's words for them.

Imports nothing, so that the command line's help says the numbers the code uses without the cost
of importing the stages.
"""

MARGIN = 10.0
"""How many times what the solution takes a learner's notebook may take before it is stopped:
code four times slower than the solution's, on a machine two and a half times slower than a quiet
one (two cores shared with other work: the figures of ``scripts/benchmark_grading.py`` at a load
of 4 to 6 are 2 to 2.5 times its quiet ones)."""

START_SECONDS = 30.0
"""The budget's allowance for what the cells' seconds leave out: the kernel's start (with its
``import torch``) and nbval's own."""

CELL_FLOOR = 5.0
"""The shortest time-out of a cell: a cell the solution runs in milliseconds may still wait that
long on a busy machine (a first plot, a file read, a descheduled process)."""

UNKNOWN_BUDGET = 430.0
"""The budget of a notebook without a recorded time (a suite added but not yet recorded)."""

BUDGET_HELP = (f"time limit for executing a whole notebook (default: {MARGIN:g} times the CPU "
               f"seconds of the solution's cells, plus {START_SECONDS:g})")
"""``--execution-budget``'s help, from the constants above."""

CELL_TIMEOUT_HELP = (f"time limit for one notebook cell (default: {MARGIN:g} times the solution's "
                     f"slowest cell, at least {CELL_FLOOR:g}, at most the execution budget)")
"""``--cell-timeout``'s help, from the constants above."""
