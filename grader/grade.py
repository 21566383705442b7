"""Grade notebooks (validate, execute with nbval, judge with hidden tests, report)."""
from __future__ import annotations

import ctypes
import gc
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from grader.report import render as reporters
from grader.sandbox import supervise
from grader.sandbox.confinement import describe as describe_confinement
from grader.errors import GraderError
from grader.notebook.execute import default_budget, default_cell_timeout, execute
from grader.judge.proxy import exercise_order, known_suites, run_suite, suite_exercises
from grader.notebook.read import (cell_label, code_cells, exercise_names, first_line,
                                  read_notebook, sandbox_cells, suite_name, top_level_names)
from grader.results import MISSING, NotebookReport
from grader.judge.selection import refuse_unknown_exercises
from grader.notebook.written import learner_answers
from grader.sandbox.parent import (ExerciseMissing, Limits, Sandbox, StudentError,
                                     StudentOutOfMemory, StudentTimeout, Template, Zygote,
                                     ZygoteLost)


LARGE_BLOCK_BYTES = 8 << 20
"""Blocks of at least this size (8 MiB) that the judge allocates get pages of their own from the
system (``mmap``), given back the moment they are freed (:func:`_map_large_blocks`)."""

HEAP_TOP_BYTES = 2 * LARGE_BLOCK_BYTES
"""Free memory at the top of the judge's heap that ``free`` leaves there (16 MiB) for the next
allocations, rather than giving it back at once (:func:`_map_large_blocks`)."""

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter numbers of the trim and mmap thresholds (``malloc.h``)."""


def _map_large_blocks(size: int = LARGE_BLOCK_BYTES, top: int = HEAP_TOP_BYTES) -> bool:
    """Make glibc give every block of ``size`` bytes or more that this process allocates pages of
    its own, returned to the system when it is freed; False where the C library has no ``mallopt``
    (not glibc).

    By default glibc raises its threshold to the size of each large block freed (up to 32 MiB), so
    the tables a hidden test's reference allocates and frees in turn (a (65536, 64) float64 table
    is 32 MiB) come from, and stay in, the heap until the next ``malloc_trim``: the judge's peak
    while it served notebook 05's hidden rotary modules held up to 90 MiB of such freed blocks. A
    fixed threshold keeps them out of the heap; smaller blocks are reused as before, so it costs
    page faults on the large ones only (about 0.5 s of CPU time over notebook 05's hidden tests).
    The judge only: in a notebook's kernel it saved no memory that could be measured, and cost
    notebook 05's execution 2.5 s of CPU time in page faults.

    A fixed mmap threshold also fixes glibc's trim threshold, at 128 KiB unless set: every
    ``free`` that left more than that at the top of the heap gave it back to the system, and the
    next allocations faulted it in again. It is set to ``top`` bytes, twice the mmap threshold
    (the ratio glibc keeps between the two when it moves them itself); what lies above it waits
    for the trims every half second (:func:`grader.sandbox.supervise.give_back_freed_memory`).
    Over the hidden tests of all six solutions the judge then takes about 15% fewer page faults
    (909k and 980k against 822k and 766k, two runs each) at the same peak (417 to 425 MiB of
    PSS); 32 MiB (780k) raised the judge's peak to 463 MiB, 64 MiB (728k and 755k) to 442 and
    456 MiB.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, size)) and bool(mallopt(_M_TRIM_THRESHOLD, top))


_IMPORTS_FROZEN = False


def _freeze_judges_imports() -> None:
    """Import what every suite imports (torch, hypothesis) and move every object alive to the
    garbage collector's permanent generation (``gc.freeze``), once per process.

    The modules' objects live as long as the process, yet each full collection walked them all
    again: with torch and hypothesis loaded, a collection of the oldest generation takes 0.1 to
    0.3 s, and the hidden tests of six notebooks ran enough of them for 2.0 s of collection
    (0.6 s with the modules frozen). Once only: freezing again later would keep whatever garbage
    one run left for good.
    """
    global _IMPORTS_FROZEN
    if _IMPORTS_FROZEN:
        return
    _IMPORTS_FROZEN = True
    try:
        import hypothesis  # noqa: F401 - imported for its objects' sake, as the suites import it
        import torch  # noqa: F401
    except ImportError:  # pragma: no cover - the suites say so when they import them
        return
    gc.freeze()


def find_notebooks(paths: list[Path]) -> list[Path]:
    """Expand folders into the notebooks below them (checkpoints excluded), in sorted order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
            if not inside:
                raise GraderError(f"{path}: no notebooks (*.ipynb) in this folder")
            found += inside
        elif path.exists():
            found.append(path)
        else:
            raise GraderError(f"{path}: no such file or folder")
    return found


class _Connections:
    """The learner's side of the hidden tests: one template per notebook, one sandbox at a time.

    The template (started by :meth:`prepare`, or when the first test needs it) imports torch and
    loads the cells once; each exercise gets a child forked from it, closed as soon as a test of
    another exercise starts, so at most one sandbox runs at any moment (the one closed may take
    a few milliseconds more to exit, SIGKILLed, while the next forks). An exercise whose
    call timed out is not called again: its remaining tests fail at once (``TIMED_OUT``), which
    bounds the time a never-returning exercise can cost; nor is one whose call ran out of memory
    (each call would fill the memory up to the limit again).

    With a ``zygote`` (:class:`grader.sandbox.parent.Zygote`, one per learner's run), the template
    is forked from it, torch already imported, instead of spawned.
    """

    def __init__(self, notebook, limits: Limits, suite_exercises: set[str] = frozenset(),
                 zygote: Zygote | None = None) -> None:
        self.notebook = notebook
        self.limits = limits
        self.zygote = zygote
        self.template: Template | None = None
        self.current: tuple[str, Sandbox] | None = None
        self.failures: dict[str, StudentError] = {}
        self.timed_out: set[str] = set()
        self.out_of_memory: set[str] = set()
        self.template_failure: StudentError | None = None
        self.tagged = set(exercise_names(notebook)) if notebook is not None else set()
        self.exercises = self.tagged | set(suite_exercises)
        self._starting: threading.Thread | None = None
        self._prepared: Template | None = None
        self._asked_again = False
        self._start_error: BaseException | None = None

    def prepare(self) -> None:
        """Start the template in the background, while this process sets the suite up.

        The template's start (its own ``import torch``, then the cells) and this process's
        start of the suite (pytest, the suite module, torch on the first notebook) each take about
        a second and wait on nothing of the other's: on two cores they overlap. It adds no
        memory at the peak, which comes later, when a sandbox forked from the template runs
        beside this process. The first test that needs the template waits for it
        (:meth:`_template`); a failure to start is raised there, as without :meth:`prepare`.
        """
        if (self.notebook is None or self.template is not None or self._starting is not None
                or self.template_failure is not None):
            return
        # The cells are read and the process is started here, the thread only waits for it:
        # Python 3.11's ast.parse is not safe in two threads at once (the suite's import parses
        # too), and the template dies with the thread that started it (--die-with-parent).
        template = self._new_template()
        try:
            template.spawn()
        except Exception:  # noqa: BLE001 - the first test starts it again, and fails as it would
            template.close()
            return

        def start() -> None:
            try:
                template.wait_loaded()  # waits only: the answer is read in the caller's thread
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                self._start_error = exc

        self._prepared = template
        self._starting = threading.Thread(target=start, name="template start", daemon=True)
        self._starting.start()

    def _started(self) -> None:
        """Wait for :meth:`prepare`'s start, if one is under way, and read the template's answer
        here; a StudentError is kept in ``template_failure`` (raised by :meth:`_template`)."""
        if self._starting is None:
            return
        self._starting.join()
        self._starting = None
        template, self._prepared = self._prepared, None
        error, self._start_error = self._start_error, None
        if error is None:
            try:
                self._start_template(template, spawned=True)
            except StudentError:
                pass
            return
        template.close()
        if not isinstance(error, StudentError):
            raise error
        self.template_failure = error

    def _template(self) -> Template:
        self._started()
        if isinstance(self.template_failure, ZygoteLost) and not self._asked_again:
            # The zygote died before it forked this notebook's template (not this notebook's
            # doing): ask a new one, once, from this thread, which outlives it.
            self.template_failure, self._asked_again = None, True
        if self.template_failure is not None:
            raise self.template_failure
        if self.template is None:
            self._start_template(self._new_template())
        return self.template

    def _new_template(self) -> Template:
        return Template(sandbox_cells(self.notebook, self.exercises), limits=self.limits,
                        zygote=self.zygote)

    def _start_template(self, template: Template, *, spawned: bool = False) -> None:
        try:
            template.load() if spawned else template.start()
        except StudentError as exc:
            template.close()
            self.template_failure = exc
            raise
        self.template = template

    def _sandbox(self, exercise: str) -> Sandbox:
        if self.current is not None and self.current[0] == exercise:
            return self.current[1]
        if self.current is not None:
            # Not waited for: the next sandbox forks while this one exits (about 10 ms of giving
            # its memory back, on the other core); closing the template waits for both.
            self.current[1].close(wait=False)
            self.current = None
        if exercise in self.failures:
            raise self.failures[exercise]
        sandbox = self._new_sandbox()
        try:
            sandbox.start()
        except StudentError as exc:
            self.failures[exercise] = exc
            raise
        self.current = (exercise, sandbox)
        return sandbox

    def _new_sandbox(self) -> Sandbox:
        return Sandbox(template=self._template())

    def __call__(self, exercise: str):
        if self.notebook is None:
            def unreadable(name, args, kwargs, timeout, trusted=None, probe=False):
                raise ExerciseMissing("the notebook could not be graded (its report says why), so "
                                      "no exercise was found")
            return unreadable, []

        def call(name, args, kwargs, timeout, trusted=None, probe=False):
            # probe: a second run with the learner's own earlier exercises (grader.judge.proxy), whose
            # time-out says nothing about this exercise's own code.
            if exercise in self.timed_out:
                raise StudentTimeout("not run: an earlier test of this exercise did not finish "
                                     "within the time limit")
            if exercise in self.out_of_memory:
                raise StudentOutOfMemory("not run: an earlier test of this exercise ran out of "
                                         "memory")
            try:
                return self._sandbox(exercise).call(name, args, kwargs, timeout=timeout,
                                                    trusted=trusted)
            except StudentTimeout:
                if not probe:
                    self.timed_out.add(exercise)
                raise
            except StudentOutOfMemory:
                if not probe:
                    self.out_of_memory.add(exercise)
                raise

        if exercise not in self.timed_out:
            self._sandbox(exercise)  # start it now: a failure to start fails the test's setup
        return call, self.load_errors()

    def load_errors(self) -> list[str]:
        return list(self.template.load_errors) if self.template is not None else []

    def close(self) -> None:
        try:
            self._started()
        except BaseException:  # noqa: BLE001 - closing: what failed to start has nothing to close
            pass
        if self.current is not None:
            self.current[1].close()
            self.current = None
        if self.template is not None:
            self.template.close()


@dataclass
class _Grading:
    """One notebook on its way through the stages: read, executed, judged.

    Each stage adds the time it took to ``report.seconds``."""

    path: Path
    report: NotebookReport
    notebook: object | None


def _read(path: Path) -> _Grading:
    """Read the notebook and find its suite; problems go into the report."""
    start = time.monotonic()
    report = NotebookReport(path=str(path))
    try:
        notebook = read_notebook(path)
        report.suite = suite_name(notebook, path)
        report.written = learner_answers(notebook)  # said, never scored: a person grades them
    except GraderError as exc:
        notebook, report.error = None, str(exc)
        report.suite = path.stem
    if report.error is None and report.suite not in known_suites():
        report.error = (f"no hidden tests for a notebook named {report.suite!r}; keep the course's "
                        f"file name (one of: {', '.join(known_suites())})")
    elif report.error is None and not _of_the_course(notebook, report.suite):
        notebook, report.error = None, (
            f"{path}: not the course's notebook {report.suite} (no cell defines any of its "
            "exercises, and it was not released by the course); grade the notebook the course "
            f"gave you (notebooks/{report.suite}.ipynb)")
    report.seconds = time.monotonic() - start
    return _Grading(path, report, notebook)


def _of_the_course(notebook, suite: str) -> bool:
    """Whether ``notebook`` is one of the course's: released by it (its ``grader`` metadata names
    the suite) or one of its code cells defines an exercise of ``suite``, tagged or not."""
    if notebook.metadata.get("grader", {}).get("suite"):
        return True
    exercises = suite_exercises(suite)
    return any(top_level_names(cell.source) & exercises for _, cell in code_cells(notebook))


def _gradable(grading: _Grading) -> bool:
    return grading.report.suite in known_suites()


def _execute(grading: _Grading, *, cell_timeout: float | None, execution_budget: float | None,
             limits: Limits) -> None:
    if grading.notebook is None or not _gradable(grading):
        return
    budget = execution_budget or default_budget(grading.report.suite)
    cell = (cell_timeout if cell_timeout is not None
            else default_cell_timeout(budget, grading.report.suite))
    grading.report.execution = execute(grading.path, cell_timeout=min(cell, budget),
                                       budget=budget, limits=limits)
    grading.report.seconds += grading.report.execution.seconds


def _judge(grading: _Grading, *, exercises: set[str] | None,
           connect: Callable[[object, set[str]], _Connections]) -> NotebookReport:
    """Run the hidden tests; ``connect(notebook, suite_exercises)`` gives the learner's side."""
    report, start = grading.report, time.monotonic()
    if _gradable(grading):
        judged = suite_exercises(report.suite)
        connections = connect(grading.notebook, judged)
        try:
            if exercises is None or exercises & judged:  # else no test will need the template
                connections.prepare()
            report.tests = run_suite(report.suite, connections, exercises=exercises,
                                     trusted_prerequisites=True)
        finally:
            connections.close()
        report.load_errors = connections.load_errors()
        report.exercise_order = exercise_order(report.suite)
        if grading.notebook is not None and report.load_errors:
            _name_failed_cells(report, grading.notebook)
    report.seconds += time.monotonic() - start
    return report


_DEFINITION = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)
"""A top-level definition's name, read from a cell that does not parse (a SyntaxError)."""


def _name_failed_cells(report: NotebookReport, notebook) -> None:
    """Quote the first line of each cell that failed to load (``Cell N/M (`line`): error``), and
    note the exercises it should have defined that no test found (``report.blocked``)."""
    cells = {cell_label(index, len(notebook.cells)): cell for index, cell in code_cells(notebook)}
    missing = {name for name, tests in report.exercises().items()
               if all(t.status == MISSING for t in tests)}
    named = []
    for problem in report.load_errors:
        label, _, message = problem.partition(": ")
        cell = cells.get(label)
        if cell is None:
            named.append(problem)
            continue
        described = f"{label} (`{first_line(cell.source)}`)"
        named.append(f"{described}: {message}")
        defined = top_level_names(cell.source) or set(_DEFINITION.findall(cell.source))
        for name in sorted(defined & missing):
            report.blocked.setdefault(name, described)
    report.load_errors = named


def grade_notebook(path: Path, *, skip_execution: bool = False,
                   exercises: set[str] | None = None, cell_timeout: float | None = None,
                   execution_budget: float | None = None,
                   limits: Limits | None = None) -> NotebookReport:
    """Grade one notebook; a problem with the notebook ends up in the report, never raised.

    ``execution_budget`` bounds the notebook's whole execution in seconds (default: a few times
    what the solution takes, :func:`grader.notebook.execute.default_budget`), ``cell_timeout`` one cell
    (default: a few times the solution's slowest cell,
    :func:`grader.notebook.execute.default_cell_timeout`).
    """
    return grade_notebooks([path], skip_execution=skip_execution, exercises=exercises,
                           cell_timeout=cell_timeout, execution_budget=execution_budget,
                           limits=limits)[0]


def grade_notebooks(paths: list[Path], *, skip_execution: bool = False,
                    exercises: set[str] | None = None, cell_timeout: float | None = None,
                    execution_budget: float | None = None,
                    limits: Limits | None = None,
                    zygote: Zygote | None = None) -> list[NotebookReport]:
    """Grade several notebooks: every one is executed before any is judged.

    Judging imports torch and the suites into this process for good; executing first keeps this
    process small while the learner's kernels run, so the peak memory of the whole grading is
    that of one notebook's execution or of one notebook's judging, not of both at once.

    ``zygote``: one the caller started already (:func:`grader.sandbox.parent.start_zygote`, with
    these ``limits``; the command line's ``--skip-execution`` starts it before it imports this
    module), closed here. Without it, a run that skips execution starts its own as soon as the
    notebooks are read, one that executes them after the last execution.
    """
    try:
        return _grade_notebooks(paths, skip_execution=skip_execution, exercises=exercises,
                                cell_timeout=cell_timeout, execution_budget=execution_budget,
                                limits=zygote.limits if zygote is not None else limits or Limits(),
                                zygote=zygote)
    finally:
        if zygote is not None:
            zygote.close()


def _grade_notebooks(paths: list[Path], *, skip_execution: bool, exercises: set[str] | None,
                     cell_timeout: float | None, execution_budget: float | None, limits: Limits,
                     zygote: Zygote | None) -> list[NotebookReport]:
    supervise.give_back_freed_memory()  # the judge's freed tensors, back to the system
    _map_large_blocks()  # and its large ones at once
    held = describe_confinement(limits)  # refuses here, before anything runs, if required
    gradings = [_read(path) for path in paths]
    if exercises is not None:
        refuse_unknown_exercises(exercises, [g.report.suite for g in gradings if _gradable(g)])
    for grading in gradings:
        grading.report.confinement = held
    if not skip_execution:
        for grading in gradings:
            _execute(grading, cell_timeout=cell_timeout, execution_budget=execution_budget,
                     limits=limits)
    # One zygote for this learner's notebooks: torch is imported once in a confined process, and
    # each notebook's template is forked from it (started after every notebook was executed, so
    # that it adds nothing to the execution's peak memory, and before this process imports the
    # first suite and torch, so that the two imports overlap).
    own = zygote is None
    if own:
        zygote = Zygote(limits)
    if not zygote.running() and (exercises is None or exercises) \
            and any(_gradable(grading) and grading.notebook is not None for grading in gradings):
        zygote.start_early()

    def connect(notebook, suite_exercises: set[str]) -> _Connections:
        return _Connections(notebook, limits, suite_exercises, zygote)

    _freeze_judges_imports()  # beside the zygote's own import of torch
    try:
        return [_judge(grading, exercises=exercises, connect=connect) for grading in gradings]
    finally:
        if own:
            zygote.close()


def main(*, paths: list[Path], json_path: Path | None = None, junit_path: Path | None = None,
         skip_execution: bool = False, exercises: set[str] | None = None,
         cell_timeout: float | None = None, execution_budget: float | None = None,
         limits: Limits | None = None, echo=print, verbose: bool = False,
         zygote: Zygote | None = None) -> list[NotebookReport]:
    """Entry point of ``python -m grader check``: grade, print the table, write the reports.

    ``zygote``: one the caller started already (see :func:`grade_notebooks`), closed here.

    The table lists every failing test when ``verbose``, else the first one per exercise.

    Every process the learner's code started is gone before a report is written (where this
    process is a subreaper, :func:`grader.sandbox.supervise.become_subreaper`, escaped ones included).
    """
    start = time.monotonic()
    try:
        notebooks = find_notebooks(paths)
    except BaseException:
        if zygote is not None:
            zygote.close()
        raise
    reports = grade_notebooks(notebooks, skip_execution=skip_execution, exercises=exercises,
                              cell_timeout=cell_timeout, execution_budget=execution_budget,
                              limits=limits, zygote=zygote)
    supervise.kill_strays()
    echo(reporters.table(reports, verbose=verbose))
    if json_path is not None:
        reporters.write_json(json_path, reporters.gradescope(reports, time.monotonic() - start))
        echo(f"JSON report written to {json_path}")
    if junit_path is not None:
        reporters.write_text(junit_path, reporters.junit(reports))
        echo(f"JUnit report written to {junit_path}")
    return reports
