#!/usr/bin/env python3
"""Record what each solution takes, from which the grader's time-outs follow.

    python scripts/record_solution_seconds.py [--only NOTEBOOK ...] [--repeat N] [--write]

Per solution notebook, as the grader runs it (confined, resource limits, the kernel's start-up):

- the execution: each code cell's CPU seconds (those of the kernel's processes during the cell,
  which a busy machine changes far less than the cell's wall time), their sum, and the slowest
  cell;
- the hidden tests (``--skip-execution``): per exercise, the slowest call into the learner's
  sandbox (the exercise's own compute and the black boxes' callbacks it makes).

Each figure is the smallest of ``--repeat`` runs (default 3): on a shared machine a run is
slowed by the others, and the figure wanted is what the solution takes on a quiet one; the
time-outs built on it carry the margin for a busy machine and a slower learner
(:func:`grader.notebook.execute.default_cell_timeout`, :func:`grader.judge.proxy.call_timeout`).

It prints the tables; with ``--write`` it replaces ``SOLUTION_SECONDS`` in
``grader/notebook/execute.py`` and ``SOLUTION_CALL_SECONDS`` in ``grader/judge/proxy.py`` (the
notebooks measured; the others' entries are kept). Run it on a quiet machine when a notebook or
a suite gets slower or faster, and commit the two files.
"""
from __future__ import annotations

import argparse
import os
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import grade  # noqa: E402
from grader.judge import proxy  # noqa: E402
from grader.notebook import execute  # noqa: E402
from grader.sandbox import supervise  # noqa: E402


RECORDING_TIMEOUT = 1200.0
"""The time-out of a cell, a call and an execution while recording (the grader's follow from the
figures being recorded)."""


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def execution_seconds(path: Path) -> dict[str, float]:
    """Each cell's CPU seconds (the kernel's processes') in one execution of ``path`` as the
    grader runs it; its wall seconds where the CPU's cannot be read."""
    timings: dict[str, tuple] = {}
    # Time-outs of their own: not the ones the figures recorded before would give.
    result = execute.execute(path, cell_timeout=RECORDING_TIMEOUT, budget=RECORDING_TIMEOUT,
                             timings=timings)
    if result.error or result.failures:
        raise SystemExit(f"{path.name}: the solution did not execute cleanly ({result.error or ''}"
                         f" {result.failures[:1]}); fix it before recording its time")
    return {cell: wall if cpu is None else cpu for cell, (wall, cpu) in timings.items()}


def call_seconds(path: Path) -> dict[str, float]:
    """Per exercise, the slowest call into the learner's sandbox in one run of ``path``'s hidden
    tests against the solution."""
    slowest: dict[str, float] = {}
    original = grade._Connections.__call__

    def timed_connect(self, exercise):
        call, errors = original(self, exercise)

        def timed(*args, **kwargs):
            start = time.monotonic()
            try:
                return call(*args, **kwargs)
            finally:
                slowest[exercise] = max(slowest.get(exercise, 0.0), time.monotonic() - start)
        return timed, errors

    grade._Connections.__call__ = timed_connect
    recorded, proxy.SOLUTION_CALL_SECONDS = proxy.SOLUTION_CALL_SECONDS, {}  # no recorded limits
    proxy.DEFAULT_CALL_TIMEOUT, default = RECORDING_TIMEOUT, proxy.DEFAULT_CALL_TIMEOUT
    try:
        report = grade.grade_notebooks([path], skip_execution=True)[0]
    finally:
        grade._Connections.__call__ = original
        proxy.SOLUTION_CALL_SECONDS, proxy.DEFAULT_CALL_TIMEOUT = recorded, default
    if report.score != report.max_score:
        raise SystemExit(f"{path.name}: the solution scored {report.score}/{report.max_score}; "
                         "fix it before recording its time")
    return slowest


def _smallest(runs: list[dict[str, float]]) -> dict[str, float]:
    keys = {key for run in runs for key in run}
    return {key: min(run.get(key, 0.0) for run in runs) for key in sorted(keys)}


def _replace(path: Path, name: str, table: dict) -> None:
    """Replace the literal ``NAME = {...}`` (up to its closing ``}`` at the line's start) in
    ``path`` by ``table``."""
    text = path.read_text()
    pattern = re.compile(rf"^{name} = \{{.*?^\}}\n", re.S | re.M)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no `{name} = {{...}}` to replace")
    lines = []
    for key, inner in sorted(table.items()):
        items = [f"{json.dumps(k)}: {v!r}" for k, v in sorted(inner.items())]
        line = f"    {json.dumps(key)}: {{{', '.join(items)}}},"
        if len(line) <= 100:
            lines.append(line)
        else:
            lines += [f"    {json.dumps(key)}: {{", *(f"        {item}," for item in items), "    },"]
    body = "\n".join(lines)
    text = pattern.sub(lambda _: f"{name} = {{\n{body}\n}}\n", text, count=1)
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", metavar="NOTEBOOK",
                        help="a notebook's name or number, e.g. 01 (repeatable; default: all)")
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="runs per notebook; each figure is the smallest (default 3)")
    parser.add_argument("--write", action="store_true",
                        help="write the figures into grader/notebook/execute.py and "
                             "grader/judge/proxy.py")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat {args.repeat}: give a number of runs of at least 1")
    notebooks = [p for p in sorted((ROOT / "solutions").glob("*.ipynb"))
                 if not args.only or any(p.stem == name or p.stem.startswith(f"{name}_")
                                         for name in args.only)]
    if not notebooks:
        parser.error(f"--only {' '.join(args.only)}: no such notebook in solutions/")
    supervise.become_subreaper()
    print(f"# Solution seconds, the smallest of {args.repeat} runs ({load()})")
    cells: dict[str, dict] = {}
    calls: dict[str, dict] = {}
    for path in notebooks:
        suite = path.stem
        timings = _smallest([execution_seconds(path) for _ in range(args.repeat)])
        slowest_cell = max(timings, key=timings.get)
        cells[suite] = {"cells": round(sum(timings.values()), 2),
                        "slowest_cell": round(timings[slowest_cell], 2)}
        calls[suite] = {name: round(seconds, 3) for name, seconds in
                        _smallest([call_seconds(path) for _ in range(args.repeat)]).items()}
        slowest_call = max(calls[suite], key=calls[suite].get)
        print(f"{suite:30} cells {cells[suite]['cells']:6.2f} s of CPU, slowest {slowest_cell} "
              f"{cells[suite]['slowest_cell']:.2f} s; slowest call {slowest_call} "
              f"{calls[suite][slowest_call]:.3f} s ({load()})", flush=True)
        for name, seconds in calls[suite].items():
            print(f"    {name:36} {seconds:7.3f} s -> time-out "
                  f"{proxy.call_timeout(seconds):g} s")
    if args.write:
        _replace(ROOT / "grader" / "notebook" / "execute.py", "SOLUTION_SECONDS",
                 {**execute.SOLUTION_SECONDS, **cells})
        _replace(ROOT / "grader" / "judge" / "proxy.py", "SOLUTION_CALL_SECONDS",
                 {**proxy.SOLUTION_CALL_SECONDS, **calls})
        print("written: grader/notebook/execute.py (SOLUTION_SECONDS), grader/judge/proxy.py "
              "(SOLUTION_CALL_SECONDS)")


if __name__ == "__main__":
    main()
