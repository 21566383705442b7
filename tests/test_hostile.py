"""Bad and hostile submissions are graded correctly, and the report is always complete."""
from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from grader.grade import grade_notebook, grade_notebooks, main as grade_main
from grader.results import CRASHED, ERROR, FAILED, MISSING, PASSED, TIMED_OUT
from grader.sandbox.parent import Limits
from grader.notebook.read import read_notebook
from grader.notebook.release import release_notebook
from tests.conftest import ROOT, SOLUTIONS, exercise_score, variant

SUITE = "01_permutation_invariance"
EXERCISES = {"scaled_dot_product_attention", "self_attention", "permutation_matrix",
             "max_equivariance_error"}
FAST = Limits(call_timeout=3.0)


def _statuses(report, exercise):
    return {t.status for t in report.tests if t.exercise == exercise}


def _full_marks(report, exercise):
    tests = [t for t in report.tests if t.exercise == exercise]
    return tests and all(t.status == PASSED for t in tests)


# -- submissions graded together -----------------------------------------------------------------
OS_EXIT = "import os\ndef permutation_matrix(perm):\n    os._exit(0)\n"
FIFTY_GIGABYTES = ("def permutation_matrix(perm):\n"
                   "    waste = torch.ones(50 * 2**30, dtype=torch.uint8)\n"
                   "    return torch.eye(len(perm))[torch.as_tensor(perm)]\n")
PRINTS_ALL_PASSED = ("print('All tests passed! Score: 31/31')\n"
                     "def permutation_matrix(perm):\n"
                     "    print('All tests passed')\n"
                     "    return torch.zeros(len(perm), len(perm))\n")
MONKEYPATCHES = ("import numpy, numpy.testing\n"
                 "torch.allclose = lambda *a, **k: True\n"
                 "torch.equal = lambda *a, **k: True\n"
                 "numpy.allclose = lambda *a, **k: True\n"
                 "numpy.array_equal = lambda *a, **k: True\n"
                 "numpy.testing.assert_allclose = lambda *a, **k: None\n"
                 "def permutation_matrix(perm):\n    return torch.zeros(len(perm), len(perm))\n")
LIAR = ("class Liar:\n"
        "    def __eq__(self, other):\n        return True\n"
        "    def __float__(self):\n        return 0.0\n"
        "def max_equivariance_error(fn, x, perm):\n    return Liar()\n")
SLOW_BUT_CORRECT = ("import time\n"
                    "_started = []\n"
                    "def _once(perm):\n"
                    "    perm = torch.as_tensor(perm)\n"
                    "    if perm.dim() != 1:\n"
                    "        raise ValueError('perm must be 1-D')\n"
                    "    t = perm.numel()\n"
                    "    if not torch.equal(torch.sort(perm.long()).values, torch.arange(t)):\n"
                    "        raise ValueError('perm must hold each of 0..T-1 once')\n"
                    "    p = torch.zeros(t, t, dtype=torch.float32)\n"
                    "    p[torch.arange(t), perm.long()] = 1.0\n"
                    "    return p\n"
                    "def permutation_matrix(perm):\n"
                    "    if not _started:\n"
                    "        _started.append(time.sleep(2.0))\n"
                    "    return [_once(perm) for _ in range(4)][-1]\n")
"""A learner's exercise that does four times the solution's work in every call, and waits 2 s in
its first (building something once)."""
TOGETHER = {"missing cell": {"drop": ("permutation_matrix",)},
            "os._exit": {"replace": {"permutation_matrix": OS_EXIT}},
            "50 GB": {"replace": {"permutation_matrix": FIFTY_GIGABYTES}},
            "prints all passed": {"replace": {"permutation_matrix": PRINTS_ALL_PASSED}},
            "monkeypatches": {"replace": {"permutation_matrix": MONKEYPATCHES}},
            "liar": {"replace": {"max_equivariance_error": LIAR}},
            "slow but correct": {"replace": {"permutation_matrix": SLOW_BUT_CORRECT}},
            "renamed release": None}
"""The submissions of notebook 01 graded without execution and with the default limits: in one
grading run, as one learner's notebooks are (one zygote imports torch once for all of them), on
every exercise; each test below reads its own report. One hostile notebook of a run spoiling
another's report would fail the tests of the other."""
ONE_RUN = pytest.mark.xdist_group("hostile-graded")
"""The tests that read :func:`graded_together`: on one worker (course.py passes --dist loadgroup),
which grades the submissions once."""


@pytest.fixture(scope="module")
def graded_together(tmp_path_factory) -> dict:
    """Name of :data:`TOGETHER` -> its report, all graded in one run."""
    folder = tmp_path_factory.mktemp("hostile")
    paths = {}
    for index, (name, edits) in enumerate(TOGETHER.items()):
        (folder / str(index)).mkdir()
        if edits is None:  # the solution released (its exercises stubbed), under another name
            notebook = release_notebook(read_notebook(SOLUTIONS / f"{SUITE}.ipynb"), "solution",
                                        SUITE)
            paths[name] = folder / str(index) / "renamed submission.ipynb"
            nbformat.write(notebook, str(paths[name]))
        else:
            paths[name] = variant(folder / str(index), SUITE, **edits)
    return dict(zip(paths, grade_notebooks(list(paths.values()), skip_execution=True)))


def test_corrupt_notebook_is_reported_and_others_still_graded(tmp_path):
    corrupt = tmp_path / f"{SUITE}.ipynb"
    corrupt.write_text('{"cells": [ this is not json')
    (tmp_path / "good").mkdir()
    good = variant(tmp_path / "good", SUITE)
    reports = grade_main(paths=[corrupt, good], skip_execution=True,  # one exercise is enough
                         exercises={"permutation_matrix"},
                         json_path=tmp_path / "results.json", echo=lambda *_: None)
    bad_report, good_report = reports
    assert "not a valid Jupyter notebook" in bad_report.error
    assert bad_report.score == 0 and bad_report.max_score == good_report.max_score > 0
    assert {t.status for t in bad_report.tests} == {MISSING}
    assert good_report.score == good_report.max_score
    results = json.loads((tmp_path / "results.json").read_text())
    assert sum(t["max_score"] for t in results["tests"]) == 2 * good_report.max_score
    assert any("not a valid Jupyter notebook" in t["output"] for t in results["tests"])


@ONE_RUN
def test_missing_exercise_cell_costs_only_that_exercise(graded_together):
    report = graded_together["missing cell"]
    assert _statuses(report, "permutation_matrix") == {MISSING}
    assert all("no function named 'permutation_matrix'" in t.output
               for t in report.tests if t.status == MISSING)
    for exercise in EXERCISES - {"permutation_matrix"}:
        assert _full_marks(report, exercise), exercise


def test_exercise_that_never_returns_times_out_and_is_restarted(tmp_path):
    source = "def permutation_matrix(perm):\n    while True:\n        pass\n"
    report = grade_notebook(variant(tmp_path, SUITE, replace={"permutation_matrix": source}),
                            skip_execution=True, exercises={"permutation_matrix", "self_attention"},
                            limits=FAST)
    assert _statuses(report, "permutation_matrix") == {TIMED_OUT}
    assert _full_marks(report, "self_attention")


@ONE_RUN
def test_os_exit_crashes_only_its_own_tests(graded_together):
    report = graded_together["os._exit"]
    assert _statuses(report, "permutation_matrix") == {CRASHED}
    assert all("exited with status 0" in t.output for t in report.tests if t.status == CRASHED)
    assert _full_marks(report, "self_attention")


@ONE_RUN
def test_fifty_gigabyte_allocation_fails_cleanly(graded_together):
    report = graded_together["50 GB"]
    assert PASSED not in _statuses(report, "permutation_matrix")
    assert any("allocate" in t.output or "memory" in t.output.lower() for t in report.tests)
    # The first call that ran out of memory says so; the exercise is not called again (each call
    # would fill the memory up to the limit again), and its other tests say why they did not run.
    outputs = [t.output for t in report.tests if t.exercise == "permutation_matrix"]
    assert sum("permutation_matrix ran out of memory" in o for o in outputs) == 1, outputs
    assert sum("not run: an earlier test of this exercise ran out of memory" in o
               for o in outputs) >= 1, outputs
    assert _full_marks(report, "self_attention")


@ONE_RUN
def test_printing_all_tests_passed_changes_nothing(graded_together):
    report = graded_together["prints all passed"]
    assert exercise_score(report, "permutation_matrix")[0] == 0
    assert all("All tests passed" not in t.output for t in report.tests)


@ONE_RUN
def test_monkeypatched_comparisons_do_not_reach_the_judge(graded_together):
    report = graded_together["monkeypatches"]
    assert exercise_score(report, "permutation_matrix")[0] == 0
    assert _statuses(report, "permutation_matrix") <= {FAILED, ERROR}


@ONE_RUN
def test_object_whose_eq_is_always_true_is_rejected(graded_together):
    report = graded_together["liar"]
    assert exercise_score(report, "max_equivariance_error")[0] == 0
    assert any("cannot read" in t.output for t in report.tests)


@pytest.mark.slow  # executes the notebook
def test_hidden_exceptions_are_still_seen_by_execution_and_judge(tmp_path):
    hide = "get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)"
    path = variant(tmp_path, SUITE, extra_setup=hide,
                   replace={"scaled_dot_product_attention":
                            "def scaled_dot_product_attention(q, k, v, mask=None):\n"
                            "    raise NotImplementedError\n"})
    report = grade_notebook(path, exercises={"scaled_dot_product_attention"})
    assert report.execution is not None and report.execution.failures, \
        "execution should fail where the notebook hid its own errors"
    assert any("replied 'error'" in f.message for f in report.execution.failures)
    assert report.score == 0


def test_cli_exit_codes_and_one_line_errors(tmp_path):
    missing = subprocess.run([sys.executable, "-m", "grader", "check", str(tmp_path / "nope.ipynb")],
                             cwd=ROOT, capture_output=True, text=True)
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "no such file" in missing.stderr
    corrupt = tmp_path / f"{SUITE}.ipynb"
    corrupt.write_text("not json")
    graded = subprocess.run([sys.executable, "-m", "grader", "check", str(corrupt),
                             "--skip-execution", "--json", str(tmp_path / "r.json"),
                             "--junit", str(tmp_path / "r.xml")],
                            cwd=ROOT, capture_output=True, text=True)
    assert graded.returncode == 0, graded.stderr
    assert json.loads((tmp_path / "r.json").read_text())["score"] == 0
    assert "<testsuites>" in (tmp_path / "r.xml").read_text()


@ONE_RUN
def test_renamed_released_notebook_is_graded_by_its_suite(graded_together):
    report = graded_together["renamed release"]
    assert report.suite == SUITE and report.error is None
    assert report.max_score > 0 and report.score == 0


# -- processes that try to outlive grading ---------------------------------------------------------
FORGER = '''
import json, os, time
def _forge(delay, pid_file):
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    with open(pid_file, "a") as f:
        f.write(f"{os.getpid()}\\n")
    time.sleep(delay)
    for parent in range(1, 1 << 22):
        try:
            words = open(f"/proc/{parent}/cmdline", "rb").read().split(b"\\0")
        except OSError:
            continue
        if b"--json" in words:
            path = os.path.join(os.readlink(f"/proc/{parent}/cwd"),
                                words[words.index(b"--json") + 1].decode())
            with open(path, "w") as f:
                json.dump({"score": 999, "max_score": 999}, f)
    os._exit(0)
'''


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def _grade_cli(path, report, *extra, env=None):
    return subprocess.run([sys.executable, "-m", "grader", "check", str(path), "--json", str(report),
                           *extra], cwd=path.parent, capture_output=True, text=True, timeout=600,
                          env=env)


UNCONFINED = {**os.environ, "GRADER_NO_BWRAP": "1"}
"""The fallback (no bubblewrap): the tests below prove what holds without it. Under bubblewrap a
learner process cannot even write outside its scratch folder or see the grader's processes
(tests/sandbox/test_confinement.py), so these submissions could not report what they did."""


def _pids(pid_file):
    return [int(line) for line in pid_file.read_text().split()] if pid_file.exists() else []


FORGER_DELAY = 4
"""Seconds the forger below waits before it rewrites the report."""


def test_forger_that_escapes_the_sandbox_is_killed_before_the_report(tmp_path):
    """A double-fork + setsid process started by an exercise cannot rewrite the report later."""
    pid_file = tmp_path / "forgers.txt"
    source = FORGER + ("def permutation_matrix(perm):\n"
                       f"    _forge({FORGER_DELAY}, {str(pid_file)!r})\n"
                       "    return torch.eye(len(perm))[torch.as_tensor(perm)]\n")
    (tmp_path / "nb").mkdir()
    path = variant(tmp_path / "nb", SUITE, replace={"permutation_matrix": source})
    done = _grade_cli(path, tmp_path / "report.json", "--skip-execution",
                      "--exercise", "permutation_matrix", "--exercise", "self_attention",
                      env=UNCONFINED)
    assert done.returncode == 0, done.stderr
    forgers = _pids(pid_file)
    assert forgers, "the forger never ran"
    assert not [pid for pid in forgers if _alive(pid)], "a learner process outlived grading"
    # past the last forger's delay (each wrote its pid as it started), with 2 s to spare
    time.sleep(max(0.0, pid_file.stat().st_mtime + FORGER_DELAY + 2 - time.time()))
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["score"] != 999 and report["score"] == sum(t["score"] for t in report["tests"])
    assert any("self_attention" in t["name"] and t["score"] > 0 for t in report["tests"])


@pytest.mark.slow  # executes the notebook
def test_forger_started_by_the_executed_notebook_is_killed_too(tmp_path):
    """A process that the notebook's kernel starts (waiting 60 s) is gone when grading ends."""
    pid_file = tmp_path / "forgers.txt"
    (tmp_path / "nb").mkdir()
    path = variant(tmp_path / "nb", SUITE, extra_setup=FORGER + f"_forge(60, {str(pid_file)!r})")
    done = _grade_cli(path, tmp_path / "report.json", "--exercise", "permutation_matrix",
                      env=UNCONFINED)
    assert done.returncode == 0, done.stderr
    forgers = _pids(pid_file)
    assert len(forgers) >= 2, "the forger should have started from the kernel and the sandbox"
    assert not [pid for pid in forgers if _alive(pid)], "a learner process outlived grading"
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["score"] == sum(t["score"] for t in report["tests"]) > 0


def test_fork_bomb_is_bounded_and_cleaned_up(tmp_path, monkeypatch):
    """Forking without end stops at the process-count bound; nothing is left afterwards."""
    from grader.sandbox import supervise

    monkeypatch.setenv("GRADER_NO_BWRAP", "1")  # the bound, not bubblewrap (see UNCONFINED)
    bound = supervise.process_limit(64)
    bound.release()
    if "not bounded" in bound.how:
        pytest.skip(f"the process count cannot be bounded here ({bound.how}); not running a fork bomb")
    pid_file = tmp_path / "bomb.txt"
    source = ("import os, time\n"
              "def permutation_matrix(perm):\n"
              "    for _ in range(10):\n"
              "        try:\n"
              "            if os.fork() == 0:\n"
              f"                with open({str(pid_file)!r}, 'a') as f:\n"
              "                    f.write(f'{os.getpid()}\\n')\n"
              "        except OSError:\n"
              "            pass\n"
              "    time.sleep(60)\n")
    report = grade_notebook(variant(tmp_path, SUITE, replace={"permutation_matrix": source}),
                            skip_execution=True, exercises={"permutation_matrix", "self_attention"},
                            limits=Limits(call_timeout=3.0, processes=64))
    pids = _pids(pid_file)
    assert 1 < len(pids) <= 64, f"{len(pids)} processes: the bound of 64 did not hold"
    assert not [pid for pid in pids if _alive(pid)], "fork-bomb processes outlived grading"
    assert _statuses(report, "permutation_matrix") == {TIMED_OUT}
    assert _full_marks(report, "self_attention")


@pytest.mark.slow  # executes the notebook
def test_execution_stops_at_the_first_cell_that_times_out(tmp_path):
    """A never-returning exercise (deaf to SIGINT and SIGTERM too) stops execution at its first
    use; the kernel is stopped, not interrupted, and later cells are not run."""
    source = ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "def max_equivariance_error(fn, x, perm):\n    while True:\n        pass\n")
    report = grade_notebook(variant(tmp_path, SUITE, replace={"max_equivariance_error": source}),
                            exercises={"max_equivariance_error", "permutation_matrix"},
                            cell_timeout=3, limits=FAST)  # the loop spins a core until then
    execution = report.execution
    assert execution is not None and execution.not_run > 0
    assert "stopped early" in execution.error and "did not finish within 3 s" in execution.error
    assert [f.message for f in execution.failures] == [
        "Timeout: the cell did not finish within 3 s; the kernel was stopped"]
    assert _statuses(report, "max_equivariance_error") == {TIMED_OUT}
    assert sum(t.output.startswith("not run") for t in report.tests) >= 1
    assert _full_marks(report, "permutation_matrix")


@pytest.mark.slow  # executes the notebook
def test_a_kernel_that_dies_is_not_waited_for(tmp_path):
    """``os._exit`` in an exercise kills the kernel at its first use: execution stops there at
    once (not at the cell's time-out), and only that exercise's tests fail."""
    source = "import os\ndef max_equivariance_error(fn, x, perm):\n    os._exit(0)\n"
    report = grade_notebook(variant(tmp_path, SUITE, replace={"max_equivariance_error": source}),
                            exercises={"max_equivariance_error", "permutation_matrix"},
                            cell_timeout=300)
    execution = report.execution
    assert execution is not None and execution.not_run > 0
    assert re.search(r"the kernel died while running Cell \d+/\d+", execution.error), \
        execution.error  # as JupyterLab numbers the cell
    assert len(execution.failures) == 1 and "KernelDiedError" in execution.failures[0].message
    assert execution.seconds < 150, "the dead kernel was waited for until the cell's time-out"
    assert _statuses(report, "max_equivariance_error") == {CRASHED}
    assert _full_marks(report, "permutation_matrix")


def test_time_outs_follow_what_the_solution_takes():
    """Every notebook and every exercise has its solution's time recorded
    (scripts/record_solution_seconds.py), and its time-outs leave the margin the docs promise:
    code four times slower, on a machine two and a half times slower, with a floor."""
    from grader.judge.proxy import (CALL_FLOOR, SOLUTION_CALL_SECONDS, call_timeout, known_suites,
                                    suite_exercises)
    from grader.notebook.execute import (CELL_FLOOR, SOLUTION_SECONDS, default_budget,
                                         default_cell_timeout)

    assert set(SOLUTION_SECONDS) == set(SOLUTION_CALL_SECONDS) == set(known_suites())
    for suite, figures in SOLUTION_SECONDS.items():
        assert 0 < figures["slowest_cell"] <= figures["cells"], suite
        budget = default_budget(suite)
        assert budget >= 4 * 2.5 * figures["cells"] + 20, suite
        assert default_cell_timeout(budget, suite) >= min(  # the time-out is rounded to a tenth of a second
            budget, max(CELL_FLOOR, 4 * 2.5 * figures["slowest_cell"])) - 0.05, suite
        assert set(SOLUTION_CALL_SECONDS[suite]) == suite_exercises(suite), suite
        for exercise, seconds in SOLUTION_CALL_SECONDS[suite].items():
            assert call_timeout(seconds) >= max(CALL_FLOOR, 4 * 2.5 * seconds), exercise
    assert call_timeout(None) == 10.0 and default_cell_timeout(90) == 15.0  # not recorded


@ONE_RUN
def test_slow_but_correct_exercise_is_not_timed_out(graded_together):
    """A learner's exercise that does four times the solution's work in every call, and waits 2 s
    in its first (building something once), gets full marks: a call's time-out follows the
    solution's slowest call with a margin, and a floor for the ones that take milliseconds."""
    report = graded_together["slow but correct"]
    assert _full_marks(report, "permutation_matrix"), [t.output for t in report.tests]


def test_reports_are_written_atomically(tmp_path):
    """A report replaces the old file in one step and leaves no temporary file behind."""
    from grader.report.render import write_json

    target = tmp_path / "out" / "results.json"
    write_json(target, {"score": 1})
    write_json(target, {"score": 2})
    assert json.loads(target.read_text()) == {"score": 2}
    assert [p.name for p in target.parent.iterdir()] == ["results.json"]


def _readable_as(user: str) -> str:
    """Why ``user`` cannot run this Python and read the grader ('' when it can)."""
    from grader.sandbox import supervise

    account = supervise.account(user)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        answer = "the test could not become that user"
        try:
            supervise.drop_privileges(account)
            answer = ", ".join(p for p in (os.path.realpath(sys.executable),
                                           str(ROOT / "grader" / "sandbox" / "child.py"))
                               if not os.access(p, os.R_OK))
        finally:
            os.write(write, (answer or "ok").encode())
            os._exit(0)
    os.close(write)
    answer = os.read(read, 4096).decode()
    os.close(read)
    os.waitpid(pid, 0)
    return "" if answer == "ok" else answer


def test_run_as_rejects_an_unknown_user_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "grader", "check", str(SOLUTIONS / f"{SUITE}.ipynb"),
                           "--skip-execution", "--run-as", "no-such-user-here"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no user named 'no-such-user-here'" in done.stderr


def test_learner_code_runs_as_the_unprivileged_user(tmp_path):
    """With --run-as, the learner's code runs as that user and cannot write the report's folder."""
    if os.geteuid() != 0:
        pytest.skip("--run-as needs the grader to run as root")
    problems = _readable_as("nobody")
    if problems:
        pytest.skip(f"user 'nobody' cannot read {problems} on this machine")
    probe = Path(tempfile.mkdtemp(prefix="grader-probe-"))  # pytest's own tmp_path is 0700
    probe.chmod(0o777)
    reports = tmp_path / "reports"
    reports.mkdir()
    source = ("import os\n"
              "def permutation_matrix(perm):\n"
              f"    open({str(probe / 'uid')!r}, 'w').write(str(os.getuid()))\n"
              "    try:\n"
              f"        open({str(reports / 'forged.json')!r}, 'w').write('{{}}')\n"
              "    except OSError:\n"
              "        pass\n"
              "    return torch.eye(len(perm))[torch.as_tensor(perm)]\n")
    (tmp_path / "nb").mkdir()
    path = variant(tmp_path / "nb", SUITE, replace={"permutation_matrix": source})
    done = _grade_cli(path, reports / "results.json", "--skip-execution", "--run-as", "nobody",
                      "--exercise", "permutation_matrix", env=UNCONFINED)
    assert done.returncode == 0, done.stderr
    assert (probe / "uid").read_text() == str(pwd.getpwnam("nobody").pw_uid)
    assert not (reports / "forged.json").exists()
    assert json.loads((reports / "results.json").read_text())["score"] > 0
    shutil.rmtree(probe)
