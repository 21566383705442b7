#!/usr/bin/env python3
"""Grade a synthetic class with ``python -m grader batch`` and print learners per minute and memory.

    python scripts/benchmark_batch.py N [--notebooks 01_permutation_invariance ...]
                                        [--jobs 1 2] [--skip-execution] [--shards S]

Builds N learners from the repository's own material, in turn: every solution; the released
stubs; one catalogued wrong answer per notebook; only the first two notebooks; a corrupt first
notebook with the other solutions. Grades the class once per ``--jobs`` value (``--force``, so
every learner is graded) and prints, per run: learners per minute, the peak resident memory of
the whole process tree (the sum of every process's RSS, sampled from /proc every 0.2 s) and the
largest peak of any one learner's subtree (its worker, nbval and sandboxes together).

With ``--shards S``, a last row grades the class as S shards (``batch --shard K/S --jobs 1``),
run as S processes two at a time (as ``--jobs 2`` grades two learners at a time), then joins
them with ``python -m grader merge``: its wall time includes the merge, and it says whether the
merged gradebook is byte-identical to the first run's. Every run reuses the hidden tests'
list, collected once beforehand; the time that collection took, which each shard on a machine
of its own pays once, is printed first.

Targets on the 2-core CPU machine: 30 learners with all six notebooks within 30 minutes with
``--jobs 2`` (so at least 1 learner per minute), and no learner above 1.5 GiB resident. This
prints figures; it asserts nothing.
"""
from __future__ import annotations

import argparse
import importlib
import os
from concurrent.futures import ThreadPoolExecutor
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.batch import grading as batch  # noqa: E402
from tests.conftest import NOTEBOOKS, SOLUTIONS, variant  # noqa: E402

KINDS = ["solutions", "stubs", "wrong", "two notebooks", "corrupt"]
PAGE = os.sysconf("SC_PAGE_SIZE")


def build_class(folder: Path, count: int, suites: list[str]) -> dict[str, str]:
    """``count`` learners under ``folder``; returns learner id -> kind."""
    kinds = {}
    for index in range(count):
        kind = KINDS[index % len(KINDS)]
        learner = folder / f"learner{index:03d}"
        learner.mkdir(parents=True)
        kinds[learner.name] = kind
        for position, suite in enumerate(suites):
            if kind == "stubs":
                shutil.copy(NOTEBOOKS / f"{suite}.ipynb", learner)
            elif kind == "wrong":
                wrong = importlib.import_module(f"tests.catalogue.{suite}").WRONG_ANSWERS
                pick = wrong[index % len(wrong)]
                variant(learner, suite, replace={pick.exercise: pick.source})
            elif kind == "two notebooks" and position >= 2:
                continue
            elif kind == "corrupt" and position == 0:
                (learner / f"{suite}.ipynb").write_text('{"cells": [ truncated')
            else:
                variant(learner, suite)
    return kinds


def _processes() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, resident bytes, command line) for every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            resident = int(Path(f"/proc/{entry}/statm").read_text().split()[1]) * PAGE
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        table[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), resident, command)
    return table


def _subtree(table: dict, root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, queue = [root], [root]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


class Sampler(threading.Thread):
    """Samples the RSS of a process tree, and of each learner's worker subtree, until stopped."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.peak_total = 0
        self.peak_learner = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.2):
            table = _processes()
            tree = _subtree(table, self.root)
            self.peak_total = max(self.peak_total, sum(table[p][1] for p in tree if p in table))
            for pid in tree:
                if pid in table and "grader.batch.grading --worker" in table[pid][2]:
                    learner = sum(table[p][1] for p in _subtree(table, pid) if p in table)
                    self.peak_learner = max(self.peak_learner, learner)


def run_batch(submissions: Path, out: Path, jobs: int, skip_execution: bool) -> tuple[float, Sampler]:
    command = [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out),
               "--jobs", str(jobs), "--force"] + (["--skip-execution"] if skip_execution else [])
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                               env=dict(os.environ, PYTHONPATH=str(ROOT)))
    sampler = Sampler(process.pid)
    sampler.start()
    process.wait()
    sampler.stopped.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"batch --jobs {jobs} failed with exit status {process.returncode}")
    return time.monotonic() - start, sampler


def _grader(args: list[str]) -> None:
    subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def run_shards(submissions: Path, out: Path, count: int, skip_execution: bool,
               points: Path) -> float:
    """Grade the class as ``count`` shards, two processes at a time, and merge them: wall time."""
    folders = [out / f"shard-{index}" for index in range(1, count + 1)]
    for folder in folders:
        folder.mkdir(parents=True)
        shutil.copy(points, folder)  # the hidden tests' list, as for the other runs
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda index: _grader(
            ["batch", str(submissions), "--out", str(folders[index - 1]), "--shard",
             f"{index}/{count}", "--jobs", "1", "--force"]
            + (["--skip-execution"] if skip_execution else [])), range(1, count + 1)))
    _grader(["merge", *map(str, folders), "--out", str(out / "merged")])
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("learners", type=int, help="size of the synthetic class")
    parser.add_argument("--notebooks", nargs="+", metavar="NAME",
                        help="grade only these notebooks (default: all six)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--skip-execution", action="store_true")
    parser.add_argument("--shards", type=int, metavar="S",
                        help="also grade the class as S shards, two at a time, and merge them")
    args = parser.parse_args()
    suites = args.notebooks or sorted(p.stem for p in SOLUTIONS.glob("*.ipynb"))
    with tempfile.TemporaryDirectory(prefix="benchmark-batch-") as scratch:
        submissions = Path(scratch) / "submissions"
        kinds = build_class(submissions, args.learners, suites)
        print(f"{args.learners} learners ({', '.join(sorted(set(kinds.values())))}), notebooks: "
              f"{', '.join(suites)}, execution: {'skipped' if args.skip_execution else 'yes'}")
        print(f"load before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
        points = Path(scratch) / "points" / ".points.json"
        start = time.monotonic()
        batch.cached_points(points.parent)  # collected once, outside the timed runs
        print(f"collecting the hidden tests: {time.monotonic() - start:.1f} s")
        print(f"{'jobs':>4} {'wall':>9} {'learners/min':>13} {'peak RSS, tree':>15} "
              f"{'peak RSS, one learner':>22}")
        for jobs in args.jobs:
            out = Path(scratch) / f"out-{jobs}"
            out.mkdir()
            shutil.copy(points, out)
            wall, sampler = run_batch(submissions, out, jobs, args.skip_execution)
            print(f"{jobs:>4} {wall:8.1f}s {args.learners / wall * 60:13.2f} "
                  f"{sampler.peak_total / 2**30:13.2f} GiB {sampler.peak_learner / 2**30:20.2f} GiB",
                  flush=True)
        if args.shards:
            out = Path(scratch) / "sharded"
            wall = run_shards(submissions, out, args.shards, args.skip_execution, points)
            same = ((out / "merged" / "gradebook.csv").read_bytes()
                    == (Path(scratch) / f"out-{args.jobs[0]}" / "gradebook.csv").read_bytes())
            print(f"{args.shards} shards, 2 at a time, merged: {wall:.1f}s, "
                  f"{args.learners / wall * 60:.2f} learners/min; gradebook "
                  f"{'identical to' if same else 'DIFFERS from'} the --jobs {args.jobs[0]} run's",
                  flush=True)
        print(f"load after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
