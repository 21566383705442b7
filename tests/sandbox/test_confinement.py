"""Learner code reaches nothing of the grader's: every route of a hostile submission is closed.

A submission that is a correct solution, but whose exercise cell (run in the hidden-test sandbox)
and whose ordinary cell (run by the executed notebook's kernel) look for the hidden tests, the
solutions and the catalogue (by the repository's path, through ``/proc/<pid>/cwd`` and
``/proc/<pid>/root``, beside the ``grader`` package), another learner's folder, a TCP port on
127.0.0.1 that the test listens on, a folder outside its scratch that it writes into, and the
kernel's settings (``/proc/sys`` writable), and that raises as soon as it reached any: it gets the solution's full marks and a clean execution
only when every route is closed. The same submission without bubblewrap (the fallback) proves
that the probe finds what is there.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import nbformat
import pytest

from grader.sandbox.confinement import Limits, bwrap_problem
from grader.grade import grade_notebook
from grader.notebook.read import read_notebook
from grader.results import PASSED
from grader.batch.variants import exercise_cell_index
from tests.conftest import (BWRAP_FAILS, ROOT, SOLUTIONS, environment_probe,
                            path_with_failing_bwrap)

SUITE = "01_permutation_invariance"
EXERCISE = "scaled_dot_product_attention"
NO_BWRAP = bwrap_problem()

needs_bwrap = pytest.mark.skipif(NO_BWRAP is not None,
                                 reason=f"bubblewrap cannot confine here: {NO_BWRAP}")

PROBE = '''
import os as _os, socket as _socket

def _reached(targets, port, outside, where):
    """What of the grader's this process can reach, by route (empty when every route is closed)."""
    found = {}
    found["path"] = [p for p in targets if _os.path.exists(p)]
    root = targets[0].rsplit("/grader/", 1)[0]
    relative = ["grader/judge/suites", "solutions", "tests/catalogue"]
    for pid in [p for p in _os.listdir("/proc") if p.isdigit()]:
        for base in (f"/proc/{pid}/cwd", f"/proc/{pid}/root{root}"):
            found.setdefault("proc", []).extend(
                f"{base}/{r}" for r in relative if _os.path.exists(f"{base}/{r}"))
    import grader
    package = _os.path.dirname(_os.path.abspath(grader.__file__))
    found["package"] = [r for r in ("judge/suites", "../solutions", "../tests/catalogue")
                        if _os.path.exists(_os.path.join(package, r))]
    if not _os.statvfs("/proc/sys").f_flag & _os.ST_RDONLY:  # the kernel's settings, writable
        found["sysctl"] = ["/proc/sys"]
    try:
        _socket.create_connection(("127.0.0.1", port), timeout=2).close()
        found["tcp"] = [f"127.0.0.1:{port}"]
    except OSError:
        pass
    try:
        with open(_os.path.join(outside, f"written-by-{where}-{_os.getpid()}"), "w") as handle:
            handle.write("escaped")
        found["write"] = [outside]
    except OSError:
        pass
    return {route: sorted(set(items)) for route, items in found.items() if items}


def _refuse_if_reached(where):
    reached = _reached(TARGETS, PORT, OUTSIDE, where)
    if reached:
        details = "; ".join(f"{route}: {', '.join(items)}" for route, items in reached.items())
        raise RuntimeError(f"the {where} reached [{' '.join(sorted(reached))}] {details}")
'''


def _targets(extra: list[Path] = ()) -> list[str]:
    found = [ROOT / "grader" / "judge" / "suites" / f"test_{SUITE}.py", SOLUTIONS / f"{SUITE}.ipynb",
             *sorted((ROOT / "tests" / "catalogue").glob("01_*.py")), *extra]
    assert all(path.exists() for path in found[:3])
    return [str(path) for path in found]


class _Listener:
    """A TCP port on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def listener():
    server = _Listener()
    yield server
    server.close()


def hostile(folder: Path, *, port: int, outside: Path, extra_targets: list[Path] = (),
            name: str = SUITE) -> Path:
    """The solution of notebook 01 whose exercise cell and an ordinary cell probe every route."""
    notebook = read_notebook(SOLUTIONS / f"{SUITE}.ipynb")
    index = exercise_cell_index(notebook, EXERCISE)
    constants = (f"TARGETS = {_targets(extra_targets)!r}\nPORT = {port}\n"
                 f"OUTSIDE = {str(outside)!r}\n")
    notebook.cells[index].source = "\n".join([
        PROBE, constants, notebook.cells[index].source,
        "import functools as _functools",
        "_solution = scaled_dot_product_attention",
        "@_functools.wraps(_solution)",
        f"def {EXERCISE}(*args, **kwargs):",
        "    _refuse_if_reached('sandbox')",
        "    return _solution(*args, **kwargs)",
    ])
    # An ordinary cell: the kernel runs it, the sandbox does not load it.
    notebook.cells.insert(index + 1, nbformat.v4.new_code_cell("_refuse_if_reached('kernel')"))
    path = folder / f"{name}.ipynb"
    nbformat.write(notebook, str(path))
    return path


def _outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    folder.chmod(0o777)
    return folder


def _exercise_tests(report) -> list:
    return [t for t in report.tests if t.exercise == EXERCISE]


@needs_bwrap
def test_sandbox_reaches_nothing_and_the_probe_finds_routes_without_bubblewrap(
        tmp_path, listener, monkeypatch):
    outside = _outside(tmp_path)
    path = hostile(tmp_path, port=listener.port, outside=outside)
    confined = grade_notebook(path, skip_execution=True, exercises={EXERCISE})
    tests = _exercise_tests(confined)
    assert tests and all(t.status == PASSED for t in tests), [t.output for t in tests]
    assert confined.score == confined.max_score > 0
    assert confined.confinement.startswith("bubblewrap")
    assert listener.accepted == 0 and not list(outside.iterdir())

    monkeypatch.setenv("GRADER_NO_BWRAP", "1")  # the control: the same submission, unconfined
    unconfined = grade_notebook(path, skip_execution=True, exercises={EXERCISE},
                                limits=Limits(call_timeout=30.0))
    failed = [t for t in _exercise_tests(unconfined) if t.status != PASSED]
    assert failed, "the probe found nothing without bubblewrap: it proves nothing with it"
    text = " ".join(t.output for t in failed)
    assert "the sandbox reached [package path proc " in text, text
    assert "tcp write]" in text, text  # (and sysctl where the machine's /proc/sys is writable)
    assert "no bubblewrap" in unconfined.confinement


@needs_bwrap
@pytest.mark.slow  # executes the notebook, under GRADER_NO_BWRAP=1 too
def test_kernel_probe_finds_routes_without_bubblewrap(tmp_path, listener, monkeypatch):
    """The control of the batch test below: unconfined, the kernel's ordinary cell does raise."""
    monkeypatch.setenv("GRADER_NO_BWRAP", "1")
    outside = _outside(tmp_path)
    path = hostile(tmp_path, port=listener.port, outside=outside)
    report = grade_notebook(path, exercises={EXERCISE})
    messages = " ".join(f.message for f in report.execution.failures)
    assert "the kernel reached [package path proc " in messages, messages
    assert "tcp write]" in messages, messages
    assert listener.accepted > 0 and list(outside.iterdir())


@needs_bwrap
@pytest.mark.slow  # a batch, with execution
def test_batch_learner_reaches_no_other_learner(tmp_path, listener, hidden_points):
    """In a batch, one learner's kernel (a clean execution: the ordinary cell did not raise) and
    sandbox (full marks) see neither another learner's folder nor anything else of the routes
    above."""
    from grader.batch import grading as batch, run

    submissions = tmp_path / "submissions"
    (submissions / "amy").mkdir(parents=True)
    (submissions / "bob").mkdir()
    bob = (SOLUTIONS / f"{SUITE}.ipynb").read_bytes()
    (submissions / "bob" / f"{SUITE}.ipynb").write_bytes(bob)
    outside = _outside(tmp_path)
    hostile(submissions / "amy", port=listener.port, outside=outside,
            extra_targets=[submissions / "bob" / f"{SUITE}.ipynb", submissions / "bob"])
    out = tmp_path / "grades"
    out.mkdir()
    shutil.copy(hidden_points, out)  # the hidden tests' list, cached by content
    run.grade_class(run.ClassOptions(
        submissions=submissions, out=out, jobs=1, students=["amy"],
        grading=batch.Options(require_confinement=True), echo=lambda *_: None, progress=False))
    results = json.loads((out / "amy" / "results.json").read_text())
    execution = [t for t in results["tests"] if "executes top to bottom" in t["name"]]
    assert execution and execution[0]["status"] == "passed", execution
    exercise = [t for t in results["tests"] if EXERCISE in t["name"]]
    assert exercise and all(t["status"] == "passed" for t in exercise), exercise
    assert "confined by: bubblewrap" in results["output"]
    assert listener.accepted == 0 and not list(outside.iterdir())


def test_require_confinement_refuses_without_bubblewrap_in_one_line(tmp_path):
    """Without bubblewrap (here: turned off), check --require-confinement grades nothing, exit 2;
    batch's --require-confinement (its default now) is accepted with one line saying so."""
    env = {**os.environ, "GRADER_NO_BWRAP": "1"}
    done = subprocess.run([sys.executable, "-m", "grader", "check",
                           str(SOLUTIONS / f"{SUITE}.ipynb"), "--skip-execution",
                           "--require-confinement"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "not graded: bubblewrap cannot confine the learner's code here" in done.stderr
    assert "GRADER_NO_BWRAP" in done.stderr
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(tmp_path), "--out",
                           str(tmp_path / "out"), "--require-confinement"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert "--require-confinement is the default of batch now and does nothing" in done.stderr


@pytest.mark.slow  # a batch, twice, with execution
def test_batch_grades_no_learner_whose_code_bubblewrap_cannot_confine(tmp_path, hidden_points):
    """Where bubblewrap fails to start (a ``bwrap`` that exits 1, as on a host without user
    namespaces), ``batch`` does not grade the learner: one line, bubblewrap's own, and nothing of
    their code ran (their top-level cell and exercise would each leave a file outside). With
    --allow-unconfined they are graded (again: the refusal kept no grade), and the first line of
    the run, of their results.json's output and of their feedback page says so."""
    outside = _outside(tmp_path)
    environment_probe(tmp_path / "submissions" / "amy", outside=outside)
    out = tmp_path / "grades"
    out.mkdir()
    shutil.copy(hidden_points, out)
    env = {**os.environ, "PATH": path_with_failing_bwrap(tmp_path / "bin")}
    command = [sys.executable, "-m", "grader", "batch", str(tmp_path / "submissions"), "--out",
               str(out), "--jobs", "1"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("not confined here: ") and BWRAP_FAILS in done.stdout
    record = json.loads((out / "amy" / "record.json").read_text())
    status = record["grading_status"]
    assert status.startswith("not graded: bubblewrap cannot confine the learner's code here (")
    assert BWRAP_FAILS in status and "\n" not in status and record["notebooks"] == []
    assert not list(outside.iterdir()), "the learner's code ran unconfined"
    assert "amy," in (out / "gradebook.csv").read_text()

    done = subprocess.run([*command, "--allow-unconfined"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("NOT CONFINED (--allow-unconfined): the learners' code runs "
                                  "with resource limits only; no bubblewrap (bwrap failed: ")
    record = json.loads((out / "amy" / "record.json").read_text())
    assert record["grading_status"] == "ok" and record["notebooks"]
    output = json.loads((out / "amy" / "results.json").read_text())["output"]
    assert output.startswith("NOT CONFINED: the learner's code ran with resource limits only")
    page = (out / "amy" / "feedback.html").read_text()
    assert page.index("NOT CONFINED: ") < page.index("<h1>")
    assert {p.name.rstrip("0123456789") for p in outside.iterdir()} == {"cell", "exercise"}


@needs_bwrap
def test_python_environment_behind_a_symbolic_link_is_launched_confined(tmp_path):
    """With the Python environment reached through a symbolic link (``course/.venv``, a link to
    the environment elsewhere, as ``course.py`` users set it up), bubblewrap starts the learner's
    Python by that path (``bwrap: execvp ... No such file or directory`` before), and it is the
    same environment: its ``sys.prefix`` is the link's, its packages the environment's."""
    link = tmp_path / "course" / ".venv"
    link.parent.mkdir()
    link.symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    python = link / "bin" / Path(sys.executable).name
    assert python.exists()
    script = (
        "from grader.sandbox.confinement import bwrap_problem\n"
        "from grader.sandbox.parent import Sandbox\n"
        "print(bwrap_problem())\n"
        "cells = [('cell', 'import sys, numpy\\ndef where():\\n"
        "    return [sys.prefix, sys.executable, numpy.__file__]')]\n"
        "with Sandbox(cells) as sandbox:\n"
        "    print(sandbox.call('where', (), {}, timeout=60))\n")
    done = subprocess.run([str(python), "-c", script], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    problem, where = done.stdout.strip().splitlines()
    assert problem == "None"  # the probe launched through the link, confined
    prefix, executable, numpy_file = ast.literal_eval(where)
    assert prefix == str(link) and executable == str(python)
    assert numpy_file.startswith(f"{link}/lib/")


def test_reports_say_which_confinement_held(tmp_path):
    """The terminal report and the JSON report (Gradescope's ``output``) name the confinement."""
    env = {**os.environ, "GRADER_NO_BWRAP": "1"}
    report = tmp_path / "results.json"
    solution = str(SOLUTIONS / f"{SUITE}.ipynb")
    done = subprocess.run([sys.executable, "-m", "grader", "check", solution, "--skip-execution",
                           "--exercise", "permutation_matrix", "--json", str(report)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "confined by: resource limits only; no bubblewrap" in done.stdout
    # a learner's own check falls back, and says so on the report's first line
    assert done.stdout.startswith("NOT CONFINED: the learner's code ran with resource limits "
                                  "only; no bubblewrap (turned off (GRADER_NO_BWRAP=1))")
    output = json.loads(report.read_text())["output"]
    assert "Learner code confined by: resource limits only; no bubblewrap" in output
    assert output.startswith("NOT CONFINED: ")


@needs_bwrap
def test_grader_only_assets_are_out_of_the_learners_view(tmp_path):
    """The text a challenge is scored on (grader.assets.GRADER_ONLY) cannot be read from a
    learner's process, while the notebook's assets beside it can; the starter never ships it."""
    from grader.assets import GRADER_ONLY
    from grader.sandbox.confinement import bwrap_arguments
    from grader.export.hosted import assets_for

    assets = ROOT / "assets"
    hidden = [assets / name for name in GRADER_ONLY if (assets / name).exists()]
    assert hidden, "no grader-only asset to hide"
    probe = ("import sys\nfor path in sys.argv[1:]:\n    try:\n        print(len(open(path).read()))\n"
             "    except OSError as exc:\n        print(type(exc).__name__)\n")
    result = subprocess.run(
        [*bwrap_arguments(writable=[tmp_path], readable=[assets], workdir=tmp_path), sys.executable,
         "-c", probe, *map(str, hidden), str(assets / "corpus.txt")],
        capture_output=True, text=True, timeout=60)
    lines = result.stdout.split()
    assert lines[:-1] == ["PermissionError"] * len(hidden), result.stdout + result.stderr
    assert int(lines[-1]) > 1_000_000  # the corpus the notebook reads is there
    shipped = {path.name for path in assets_for(["05_context_extension"], learners=True)}
    assert "corpus.txt" in shipped and not shipped & set(GRADER_ONLY)
