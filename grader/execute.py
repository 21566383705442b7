"""Execute a notebook top to bottom with nbval (lax mode) in a child process.

The notebook is copied into a scratch folder laid out like the repository (``notebooks/`` beside
``assets/``), so a submission graded from anywhere finds the course's assets and the original file
is never touched. nbval runs under pytest in a child process with resource limits and a per-cell
time-out; its JUnit XML says which cells failed.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from grader.results import CellFailure, ExecutionResult
from grader.sandbox import GRADER_ROOT, Limits, apply_limits

ASSETS_DIR = GRADER_ROOT / "assets"
MESSAGE_CHARS = 600


def _scratch_copy(notebook: Path, scratch: Path) -> Path:
    folder = scratch / "notebooks"
    folder.mkdir(parents=True)
    copy = folder / notebook.name
    shutil.copyfile(notebook, copy)
    if ASSETS_DIR.is_dir():
        (scratch / "assets").symlink_to(ASSETS_DIR, target_is_directory=True)
    return copy


_ANSI = re.compile(r"(?:\x1b|#x1B)\[[0-9;]*[A-Za-z]")


def _first_lines(text: str) -> str:
    text = _ANSI.sub("", text or "")
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    message = " | ".join(lines[:3])
    return message[:MESSAGE_CHARS]


def _parse_junit(path: Path) -> tuple[int, int, list[CellFailure]]:
    root = ElementTree.parse(path).getroot()
    cells = passed = 0
    failures = []
    for case in root.iter("testcase"):
        cells += 1
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if case.find("skipped") is not None:
            continue
        if problem is None:
            passed += 1
        else:
            detail = problem.get("message") or ""
            text = problem.text or ""
            failures.append(CellFailure(case.get("name", "?"), _first_lines(_cell_error(text) or detail)))
    return cells, passed, failures


def _cell_error(text: str) -> str:
    """The learner-facing part of nbval's failure text: the exception line, if there is one."""
    text = _ANSI.sub("", text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    hidden = [line for line in lines if "replied 'error'" in line]
    for line in reversed(lines):
        if ("Error" in line or "Exception" in line or "Timeout" in line) and not line.startswith(("File ", "---")):
            return " ".join(hidden + [line])
    return lines[-1] if lines else ""


def execute(notebook: Path, *, cell_timeout: float = 120.0, timeout: float = 900.0,
            limits: Limits | None = None) -> ExecutionResult:
    """Run ``notebook`` with nbval in lax mode; never raises for a problem in the notebook."""
    limits = limits or Limits()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="grader-execute-") as scratch_name:
        scratch = Path(scratch_name)
        copy = _scratch_copy(notebook, scratch)
        junit = scratch / "cells.xml"
        (scratch / "pytest.ini").write_text("[pytest]\n")
        command = [
            sys.executable, "-m", "pytest", str(copy), "--nbval-lax", "--nbval-current-env",
            f"--nbval-cell-timeout={cell_timeout:g}", "-p", "grader._nbval_plugin",
            "-p", "no:cacheprovider", "-c", str(scratch / "pytest.ini"), "--rootdir", str(scratch),
            f"--junitxml={junit}", "-q", "--no-header", "-W", "ignore::DeprecationWarning",
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GRADER_"))}
        env.update({"PYTHONPATH": str(GRADER_ROOT), "MPLBACKEND": "Agg",
                    "PYTHONDONTWRITEBYTECODE": "1"})
        process = subprocess.Popen(command, cwd=scratch, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   start_new_session=True,
                                   preexec_fn=lambda: apply_limits(limits, cpu=False))
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
            return ExecutionResult(error=f"execution did not finish within {timeout:g} s",
                                   seconds=time.monotonic() - start)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, 9)
        seconds = time.monotonic() - start
        if not junit.is_file():
            tail = _first_lines("\n".join(output.decode(errors="replace").splitlines()[-5:]))
            return ExecutionResult(error=f"nbval could not run the notebook: {tail}", seconds=seconds)
        cells, passed, failures = _parse_junit(junit)
        result = ExecutionResult(cells=cells, passed=passed, failures=failures, seconds=seconds)
        if cells == 0:
            result.error = "nbval found no code cells to run"
        return result
