"""Command line: ``python -m grader {release,check,batch}``: parses arguments, calls the stages."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grader.errors import GraderError

ROOT = Path(__file__).resolve().parent.parent


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grader", description="Release and grade the course's notebooks.")
    commands = parser.add_subparsers(dest="command", required=True)

    release = commands.add_parser("release", help="build notebooks/ from solutions/")
    release.add_argument("--source", type=Path, default=ROOT / "solutions",
                         help="folder of solution notebooks (default: solutions/)")
    release.add_argument("--dest", type=Path, default=ROOT / "notebooks",
                         help="folder for the student notebooks (default: notebooks/)")

    check = commands.add_parser("check", help="grade notebooks and report")
    check.add_argument("paths", nargs="*", type=Path,
                       help="notebooks or folders to grade (default: notebooks/)")
    check.add_argument("--json", type=Path, metavar="FILE",
                       help="write a Gradescope results.json to FILE")
    check.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML to FILE")
    check.add_argument("--skip-execution", action="store_true",
                       help="run the hidden tests only, not the notebook top to bottom")
    check.add_argument("--exercise", action="append", metavar="NAME",
                       help="grade only this exercise (repeatable)")
    check.add_argument("--cell-timeout", type=float, default=120.0, metavar="SECONDS",
                       help="time limit for one notebook cell (default: 120)")
    check.add_argument("--execution-budget", type=float, metavar="SECONDS",
                       help="time limit for executing a whole notebook (default: three times "
                            "what the solution takes, plus start-up)")
    check.add_argument("--run-as", metavar="USER",
                       help="run the learner's code as this unprivileged user (the grader must "
                            "run as root; the user must be able to read the grader and Python)")
    check.add_argument("--html", type=Path, metavar="FILE",
                       help="write a self-contained HTML feedback page to FILE")
    _add_batch(commands)
    return parser


def _add_batch(commands) -> None:
    batch = commands.add_parser("batch", help="grade a whole class: gradebook, feedback, summary")
    batch.add_argument("submissions", type=Path, help="folder of submissions (one folder per "
                       "learner, nbgrader's submitted/, or a flat folder with --flat)")
    batch.add_argument("--out", type=Path, default=Path("grades"),
                       help="folder for the gradebook and reports (default: grades/)")
    batch.add_argument("--jobs", type=int, default=None, metavar="N",
                       help="learners graded at once (default: the number of cores)")
    batch.add_argument("--student", action="append", metavar="ID",
                       help="(re)grade only this learner (repeatable); other rows are kept")
    batch.add_argument("--force", action="store_true",
                       help="regrade every learner, even those whose files did not change")
    batch.add_argument("--flat", action="store_true",
                       help="submissions are STUDENT_<anything>.ipynb files in one folder")
    batch.add_argument("--timeout-per-student", type=float, default=1200.0, metavar="SECONDS",
                       help="wall-clock limit for grading one learner (default: 1200)")
    batch.add_argument("--skip-execution", action="store_true",
                       help="run the hidden tests only, not the notebooks top to bottom")
    batch.add_argument("--cell-timeout", type=float, default=120.0, metavar="SECONDS",
                       help="time limit for one notebook cell (default: 120)")
    batch.add_argument("--run-as", metavar="USER",
                       help="run the learners' code as this unprivileged user (grader as root)")


def _batch(args) -> None:
    from grader import batch, supervise

    _limits(args.run_as)  # validates the user
    supervise.become_subreaper()  # batch starts nothing but learners' workers
    batch.main(submissions=args.submissions, out=args.out, jobs=args.jobs, students=args.student,
               force=args.force, flat=args.flat, timeout_per_student=args.timeout_per_student,
               options=batch.Options(skip_execution=args.skip_execution,
                                     cell_timeout=args.cell_timeout, run_as=args.run_as))


def _limits(run_as: str | None):
    from grader import supervise
    from grader.sandbox import Limits

    if run_as is not None:
        try:
            supervise.account(run_as)
        except LookupError as exc:
            raise GraderError(str(exc)) from None
        if os.geteuid() != 0:
            raise GraderError(f"--run-as {run_as} needs the grader to run as root")
    return Limits(run_as=run_as)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 graded, 2 the grader could not run)."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "release":
            from grader import release

            written = release.main(source=args.source, dest=args.dest)
            print(f"released {len(written)} notebook(s) into {args.dest}")
        elif args.command == "batch":
            _batch(args)
        else:
            from grader import grade, supervise

            supervise.become_subreaper()  # this process starts nothing but the learner's code
            reports = grade.main(paths=args.paths or [ROOT / "notebooks"], json_path=args.json,
                                 junit_path=args.junit, skip_execution=args.skip_execution,
                                 exercises=set(args.exercise) if args.exercise else None,
                                 cell_timeout=args.cell_timeout,
                                 execution_budget=args.execution_budget,
                                 limits=_limits(args.run_as))
            if args.html is not None:
                from grader import feedback

                feedback.write(args.html, reports)
                print(f"HTML feedback written to {args.html}")
    except GraderError as exc:
        print(f"grader: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("grader: interrupted (files already written are complete)", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
