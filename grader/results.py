"""Plain result records. The reporters render them; nothing else formats output."""
from __future__ import annotations

from dataclasses import dataclass, field

PASSED = "passed"
FAILED = "failed"  # the learner's answer is wrong
ERROR = "error"  # the learner's code raised
NOT_IMPLEMENTED = "not implemented"
TIMED_OUT = "timed out"
CRASHED = "crashed"  # the sandbox process died (os._exit, a signal, a resource limit)
MISSING = "missing"  # no function of that name in the notebook
GRADER_ERROR = "grader error"  # a bug in a hidden test: never the learner's fault


@dataclass
class TestResult:
    """The outcome of one hidden test (or public check) on one exercise."""

    exercise: str
    """Contract name of the exercise, e.g. ``"apply_rope"``."""
    name: str
    """The test's function name (with parameters, if parametrized)."""
    description: str
    """What the test checks: the first line of its docstring."""
    max_score: float
    """Points the test is worth."""
    status: str
    """One of the status constants of this module."""
    output: str = ""
    """Feedback for the learner: why it failed, bounded in size. When passed, empty or what the
    test reports (an informational test's figures, or why it was skipped)."""
    public: bool = False
    """Whether the learner can run this check inline with ``check(exercise)``."""

    @property
    def score(self) -> float:
        """Points earned: all of ``max_score`` when passed, else nothing."""
        return self.max_score if self.status == PASSED else 0.0


@dataclass
class CellFailure:
    """One notebook cell that did not execute cleanly."""

    cell: str
    """The cell, as every report names it: ``"Cell 19/50"`` (as JupyterLab numbers it: all
    cells counted from 1, and their number; :func:`grader.notebook.read.cell_label`)."""
    message: str
    """The first lines of the error, bounded in size."""
    line: str = ""
    """The cell's first line of source (:func:`grader.notebook.read.first_line`), quoted to
    say which cell it is."""
    cause: str = ""
    """Where this failure follows from an earlier one (a NameError for a name that an earlier
    failing cell should have defined): that earlier cell (``cell``), else empty."""


@dataclass
class ExecutionResult:
    """The outcome of running a notebook top to bottom with nbval (lax mode)."""

    cells: int = 0
    """Code cells that nbval ran or tried to run."""
    passed: int = 0
    """Cells that executed without an error."""
    failures: list[CellFailure] = field(default_factory=list)
    """The cells that failed, in order."""
    error: str | None = None
    """Why execution itself could not finish (kernel died, overall time-out), if it did not."""
    not_run: int = 0
    """Code cells never run because execution stopped early (a time-out, a dead kernel)."""
    seconds: float = 0.0
    """Wall-clock time of the run."""

    @property
    def ok(self) -> bool:
        """Every cell executed and the run finished."""
        return (self.error is None and not self.failures and self.passed == self.cells
                and not self.not_run)


@dataclass
class WrittenAnswer:
    """A learner's answer to one written question (``exercise_kind: written``): graded by a
    person with a rubric, never by the grader, which only says whether it was answered."""

    question: str
    """The question's id, e.g. ``"why_sine_and_cosine"`` (its cell's ``exercise_id``)."""
    points: float
    """Points the question is worth (the learner's notebook says so: never trusted for grades;
    the instructor's loop reads them from the course's notebooks)."""
    answered: bool
    """Whether the cell holds more than the released prompt."""
    text: str = ""
    """The answer as the learner wrote it (Markdown), bounded in size; empty when not answered."""
    sha256: str = ""
    """SHA-256 of the answer with its white space collapsed, which tells a grade given to this
    answer from one given to an earlier one; empty when not answered."""

    @property
    def status(self) -> str:
        """``"awaiting grading"`` or ``"empty"`` (0 points, nothing to grade)."""
        return "awaiting grading" if self.answered else "empty"


@dataclass
class NotebookReport:
    """Everything the grader found out about one notebook."""

    path: str
    """The notebook as given on the command line."""
    suite: str | None = None
    """The hidden-test suite used, e.g. ``"01_permutation_invariance"``."""
    error: str | None = None
    """Why this notebook could not be graded at all (corrupt file, no suite), if so."""
    execution: ExecutionResult | None = None
    """nbval's run, unless execution was skipped."""
    tests: list[TestResult] = field(default_factory=list)
    """Every hidden test and public check: exercise by exercise in the notebook's order, each
    exercise's tests in suite order."""
    load_errors: list[str] = field(default_factory=list)
    """Exercise or setup cells that raised while being loaded into the sandbox."""
    seconds: float = 0.0
    """Wall-clock time spent grading this notebook."""
    exercise_order: list[str] = field(default_factory=list)
    """Every exercise of the suite in the notebook's order, which numbers them (``N.E`` is the
    E-th) also when only some were graded; empty: numbered as the tests come."""
    blocked: dict[str, str] = field(default_factory=dict)
    """Exercises that no test could reach because the cell that defines them failed to load:
    exercise -> that cell, as :attr:`load_errors` names it."""
    confinement: str = ""
    """Which confinement held for the learner's processes (:func:`grader.sandbox.confinement.describe`)."""
    written: list[WrittenAnswer] = field(default_factory=list)
    """The notebook's written answers, in the notebook's order: graded by a person, so they are
    in no score or maximum of this report."""

    @property
    def score(self) -> float:
        """Points earned over all tests."""
        return sum(t.score for t in self.tests)

    @property
    def max_score(self) -> float:
        """Points available over all tests."""
        return sum(t.max_score for t in self.tests)

    def exercises(self) -> dict[str, list[TestResult]]:
        """Tests grouped by exercise, in the order the exercises first appear."""
        groups: dict[str, list[TestResult]] = {}
        for test in self.tests:
            groups.setdefault(test.exercise, []).append(test)
        return groups
