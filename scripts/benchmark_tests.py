#!/usr/bin/env python3
"""Time the project's test suite: the total, the slowest tests, and the seconds per notebook.

    python scripts/benchmark_tests.py                  run `python3 course.py test` and report
    python scripts/benchmark_tests.py --quick          the same for `python3 course.py test --quick`
    python scripts/benchmark_tests.py --from-junit reports/junit.xml [--markdown] [--csv FILE]

The first two forms run the suite (what CI runs, through the README's command) with a JUnit report
and print the wall time, the machine's load before and after, and the slowest tests; the third
only reads a JUnit report written earlier (CI's workflow publishes its table this way). Targets
on the 2-core machine: the whole suite within 6 minutes, the quick loop within 90 seconds. This
prints figures; it asserts nothing.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = re.compile(r"\d\d_[a-z_]+[a-z]")


def cases(junit: Path) -> list[tuple[str, float, str]]:
    """``(test id, seconds, outcome)`` of every test case in a JUnit report (all phases)."""
    found = []
    for case in ElementTree.parse(junit).iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")),
                       "passed")
        found.append((f"{module}.py::{case.get('name', '')}", float(case.get("time", 0)), outcome))
    return found


def per_notebook(found: list[tuple[str, float, str]]) -> dict[str, float]:
    """Seconds of the tests that name a notebook (``NN_name``), summed per notebook."""
    seconds: collections.Counter = collections.Counter()
    for test, spent, _ in found:
        match = NOTEBOOK.search(test)
        seconds[match.group(0) if match else "(no notebook)"] += spent
    return dict(sorted(seconds.items()))


def report(found: list[tuple[str, float, str]], *, top: int, markdown: bool) -> str:
    slowest = sorted(found, key=lambda case: -case[1])[:top]
    outcomes = collections.Counter(outcome for _, _, outcome in found)
    total = sum(spent for _, spent, _ in found)
    counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
    if markdown:
        lines = [f"**{len(found)} tests** ({counts}); test time summed over the workers: "
                 f"{total:.0f} s", "", f"| slowest {top} | seconds |", "|---|---:|"]
        lines += [f"| `{test}` | {spent:.1f} |" for test, spent, _ in slowest]
        lines += ["", "| notebook | seconds |", "|---|---:|"]
        lines += [f"| {name} | {spent:.1f} |" for name, spent in per_notebook(found).items()]
        return "\n".join(lines)
    lines = [f"{len(found)} tests ({counts}); test time summed over the workers: {total:.1f} s",
             f"slowest {top}:"]
    lines += [f"  {spent:7.1f} s  {test}" for test, spent, _ in slowest]
    lines += ["per notebook:"] + [f"  {spent:7.1f} s  {name}"
                                  for name, spent in per_notebook(found).items()]
    return "\n".join(lines)


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="time the quick loop instead")
    parser.add_argument("--from-junit", type=Path, metavar="FILE",
                        help="read this JUnit report instead of running the suite")
    parser.add_argument("--top", type=int, default=15, help="how many of the slowest (15)")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--csv", type=Path, metavar="FILE", help="also write seconds per notebook")
    args = parser.parse_args()
    junit = args.from_junit
    if junit is None:
        junit = ROOT / "reports" / ("junit-quick.xml" if args.quick else "junit-full.xml")
        command = [sys.executable, str(ROOT / "course.py"), "test", *(["--quick"] * args.quick),
                   f"--junitxml={junit}", "-p", "no:cacheprovider", "-q"]
        print(f"$ {' '.join(command[1:])}\nload before: {_load()}", flush=True)
        start = time.monotonic()
        status = subprocess.run(command, cwd=ROOT).returncode
        print(f"\nwall time: {time.monotonic() - start:.1f} s (exit {status}); "
              f"load after: {_load()}; {os.cpu_count()} cores")
    elif not junit.is_file():
        print(f"benchmark_tests: {junit}: no such JUnit report; run the tests with "
              "--junitxml=FILE first", file=sys.stderr)
        return 2
    found = cases(junit)
    print(report(found, top=args.top, markdown=args.markdown))
    if args.csv is not None:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        args.csv.write_text("notebook,seconds\n" + "".join(
            f"{name},{spent:.1f}\n" for name, spent in per_notebook(found).items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
