"""Time the written answers' loop for a class: export the pages and CSV, import the filled CSV.

    python scripts/benchmark_written.py [--learners 200]

Each learner hands in notebook 01's solution (every stored output kept, so each file is as
large as an executed notebook) with a written question answered (a tenth left empty), and has
a graded record (as ``batch`` leaves it: the hidden tests' results of notebook 01); the import
writes the gradebook, the summary and every feedback page again. Budget: export and import of
a class of 200 in under 10 s.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from grader.batch import written_loop  # noqa: E402
from grader.batch.class_files import CLASS  # noqa: E402
from grader.notebook import written  # noqa: E402

SUITE = "01_permutation_invariance"
CELL = f"""**Written question** (`why_equivariant`, 3 points). Why did permuting the tokens permute
the outputs? Use the errors your cells printed.

{written.BEGIN_MODEL}
Attention without positions treats its input as a set.
{written.END_MODEL}
{written.BEGIN_RUBRIC}
- 2: names the missing order
- 1: quotes the printed error
{written.END_RUBRIC}"""


def _class(base: Path, learners: int) -> tuple[Path, Path, Path]:
    solution = nbformat.read(str(ROOT / "solutions" / f"{SUITE}.ipynb"), 4)
    cell = nbformat.v4.new_markdown_cell(CELL)
    cell.metadata.update({"tags": ["exercise"], "exercise_kind": "written",
                          "exercise_id": "why_equivariant", "points": 3})
    solution.cells.insert(1, cell)
    (base / "solutions").mkdir(parents=True)
    nbformat.write(solution, str(base / "solutions" / f"{SUITE}.ipynb"))
    released = written.released_source(written.questions(solution, "x")[0])
    out = base / "grades"
    tests = [{"exercise": "self_attention", "name": f"test_{i}", "description": "a test",
              "max_score": 1.0, "public": False} for i in range(40)]
    for index in range(learners):
        student = f"s{index:03d}"
        text = "" if index % 10 == 0 else f"Attention is a set function ({index} runs)."
        solution.cells[1].source = released.replace(written.ANSWER_PLACEHOLDER, text)
        (base / "submissions" / student).mkdir(parents=True)
        nbformat.write(solution, str(base / "submissions" / student / f"{SUITE}.ipynb"))
        answers = written.learner_answers(solution)
        report = {"path": f"{SUITE}.ipynb", "suite": SUITE, "error": None, "execution": None,
                  "tests": [{**t, "status": "passed", "output": ""} for t in tests],
                  "load_errors": [], "seconds": 1.0, "exercise_order": ["self_attention"],
                  "confinement": "", "written": [a.__dict__ for a in answers]}
        (out / student).mkdir(parents=True)
        (out / student / "record.json").write_text(json.dumps({
            "student_id": student, "grading_status": "ok", "notes": [],
            "fingerprint": {}, "submitted": [SUITE], "unreadable": {},
            "notebooks": [report], "seconds": 1.0}))
    (out / CLASS).write_text(json.dumps({"class_options": {
        "due": None, "late_policy": None, "assignment": None, "roster": None, "lms": None},
        "points": {SUITE: tests}}))
    return base / "solutions", base / "submissions", out


def run(base: Path, learners: int = 200) -> dict[str, float]:
    """Build the class under ``base``, then time its export and import (seconds)."""
    solutions, submissions, out = _class(base, learners)
    start = time.perf_counter()
    written_loop.export(submissions=submissions, out=out, solutions=solutions, echo=lambda _: 0)
    exported = time.perf_counter() - start
    grades = out / "written" / "grades.csv"
    table = list(csv.DictReader(io.StringIO(grades.read_text())))
    for row in table:
        if row["answer"] == "answered":
            row["rubric"], row["comment"] = "1", "Quote your numbers."
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=written_loop.COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    grades.write_text(buffer.getvalue())
    start = time.perf_counter()
    written_loop.import_csv(csv_path=grades, out=out, echo=lambda _: 0)
    return {"export": exported, "import": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        seconds = run(Path(scratch), args.learners)
    print(f"class of {args.learners}: export {seconds['export']:.2f} s, import (gradebook, "
          f"summary, {args.learners} feedback pages) {seconds['import']:.2f} s, together "
          f"{seconds['export'] + seconds['import']:.2f} s (budget 10 s)")


if __name__ == "__main__":
    main()
