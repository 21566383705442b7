#!/usr/bin/env python3
"""Write the worked example of docs/learners.md ("What a wrong answer looks like") from a run.

    python scripts/worked_example.py [--check]

Grades notebook 01's solution with `scaled_dot_product_attention` replaced by the catalogue's
"missing 1/sqrt(d_k)" entry (tests/catalogue/01_permutation_invariance.py), as a learner would:
``python -m grader check work/01_permutation_invariance.ipynb --skip-execution --exercise
scaled_dot_product_attention``, and puts what it printed (the report, up to its total line,
without the line on which confinement held, which depends on the machine) between the guide's
markers. ``--check`` writes nothing: it exits 1 if the guide's text differs
from the run's (``tests/test_worked_example.py`` runs it so).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GUIDE = ROOT / "docs" / "learners.md"
SUITE = "01_permutation_invariance"
EXERCISE = "scaled_dot_product_attention"
MISTAKE = "missing 1/sqrt(d_k)"
BEGIN = "<!-- worked example: written by scripts/worked_example.py -->"
END = "<!-- end of the worked example -->"
COMMAND = (f".venv/bin/python -m grader check work/{SUITE}.ipynb --skip-execution "
           f"--exercise {EXERCISE}")


def run() -> str:
    """The report that grading the wrong notebook prints: its table, up to the total line."""
    import nbformat

    from grader.batch.variants import replaced
    from grader.notebook.read import read_notebook
    from tests.catalogue import modules

    (_, catalogue), = modules([ROOT / "solutions" / f"{SUITE}.ipynb"])
    wrong = next(w for w in catalogue.WRONG_ANSWERS if w.exercise == EXERCISE and w.mistake == MISTAKE)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder) / "work"
        work.mkdir()
        notebook = replaced(read_notebook(ROOT / "solutions" / f"{SUITE}.ipynb"), {EXERCISE: wrong.source})
        nbformat.write(notebook, str(work / f"{SUITE}.ipynb"))
        process = subprocess.run(
            [sys.executable, "-m", "grader", "check", f"work/{SUITE}.ipynb", "--skip-execution",
             "--exercise", EXERCISE], cwd=folder, text=True, capture_output=True, timeout=600,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
    if process.returncode != 0:
        raise SystemExit(f"grading the example failed ({process.returncode}): {process.stderr[-2000:]}")
    lines = process.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("====="))
    last = next(i for i, line in enumerate(lines) if line.startswith("Total:"))
    kept, machine = [], False
    for line in lines[first:last + 1]:  # which confinement held depends on the machine: left out
        said = line.lstrip().startswith("learner code confined by:")  # under the table or a notebook
        machine = said or (machine and line.startswith("  ") and not line.lstrip().startswith(("=", "Total")))
        if not machine:
            kept.append(line)
    return "\n".join(kept)


def section(report: str) -> str:
    """The guide's text between the markers: the command, then the report."""
    return (f"{BEGIN}\nWhat a wrong answer looks like: notebook 01 with the $1/\\sqrt{{d_k}}$ scaling "
            f"left out of\n`{EXERCISE}` (the catalogued mistake \"{MISTAKE}\"), graded with\n"
            f"`{COMMAND}`:\n\n```\n{report}\n```\n{END}")


def current() -> str:
    text = GUIDE.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{GUIDE}: the markers {BEGIN!r} and {END!r} are missing")
    return text[text.index(BEGIN):text.index(END) + len(END)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when the guide differs from the run")
    args = parser.parse_args()
    wanted = section(run())
    if args.check:
        if current() != wanted:
            print(f"{GUIDE.relative_to(ROOT)}: the worked example differs from a run; "
                  "run python scripts/worked_example.py\n--- the run gives:\n" + wanted)
            raise SystemExit(1)
        print("the worked example matches a run")
        return
    GUIDE.write_text(GUIDE.read_text().replace(current(), wanted))
    print(f"wrote the worked example into {GUIDE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
