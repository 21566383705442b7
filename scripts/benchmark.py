#!/usr/bin/env python3
"""Print wall times: executing each solution notebook, and grading each released notebook.

    python scripts/benchmark.py [--only 01_permutation_invariance]

Targets on the 2-core CPU machine: grading notebook 01 in 30 s or less; executing each notebook in
60 s or less (90 s for notebook 05). This prints figures; it asserts nothing.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.notebook.execute import execute  # noqa: E402
from grader.grade import grade_notebook  # noqa: E402

TARGETS = {"05_context_extension": 90.0, "07_rope_in_practice": 90.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="a notebook's name (repeatable)")
    args = parser.parse_args()
    rows = []
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        if args.only and path.stem not in args.only:
            continue
        start = time.monotonic()
        result = execute(path, cell_timeout=600)
        executed = time.monotonic() - start
        start = time.monotonic()
        report = grade_notebook(ROOT / "notebooks" / path.name)
        graded = time.monotonic() - start
        start = time.monotonic()
        hidden = grade_notebook(path, skip_execution=True)
        judged = time.monotonic() - start
        ok = "ok" if result.ok and hidden.score == hidden.max_score else "PROBLEM"
        rows.append((path.stem, executed, TARGETS.get(path.stem, 60.0), graded, judged, ok))
    print(f"{'notebook':32} {'execute solution':>17} {'target':>7} {'grade stub':>11} "
          f"{'hidden tests on solution':>25}")
    for name, executed, target, graded, judged, ok in rows:
        print(f"{name:32} {executed:16.1f}s {target:6.0f}s {graded:10.1f}s {judged:24.1f}s  {ok}")


if __name__ == "__main__":
    main()
