"""Command line: ``python -m grader {release,check,gradescope,classroom}``. Parses arguments and
calls the stages (hosted exports live in :mod:`grader.hosted`)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from grader.errors import GraderError
from grader.report import VISIBILITIES

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
    _add_hosted_options(check)
    _add_hosted_commands(commands)
    return parser


def _add_hosted_options(check: argparse.ArgumentParser) -> None:
    """``check``'s options for hosted graders and CI: Markdown summary, pass mark, visibility."""
    check.add_argument("--markdown", type=Path, metavar="FILE",
                       help="write a Markdown summary to FILE (e.g. \"$GITHUB_STEP_SUMMARY\")")
    check.add_argument("--min-score", type=float, metavar="POINTS",
                       help="exit with status 1 when the total score is below POINTS (for graders "
                            "that give all or nothing per command)")
    check.add_argument("--hidden-visibility", choices=VISIBILITIES, default="after_due_date",
                       help="Gradescope visibility of hidden tests in --json (default: "
                            "after_due_date)")


def _add_hosted_commands(commands) -> None:
    gradescope = commands.add_parser("gradescope", help="build a Gradescope autograder zip")
    gradescope.add_argument("--out", type=Path, required=True, metavar="ZIP",
                            help="the zip to write, e.g. autograder.zip")
    gradescope.add_argument("--notebooks", nargs="+", metavar="NN",
                            help="grade only these notebooks, by number or name (default: all)")
    gradescope.add_argument("--hidden-visibility", choices=VISIBILITIES, default="after_due_date",
                            help="when learners see the hidden tests' results "
                                 "(default: after_due_date)")
    gradescope.add_argument("--memory-mb", type=int, default=768, metavar="MB",
                            help="the memory limit set on Gradescope, for warnings near it when "
                                 "the box does not report its own (default: 768)")
    gradescope.add_argument("--minutes", type=float, default=10, metavar="MINUTES",
                            help="the time limit set on Gradescope (default: 10)")

    classroom = commands.add_parser("classroom", help="print a GitHub Classroom grading workflow")
    classroom.add_argument("--out", type=Path, metavar="FILE",
                           help="write the workflow to FILE instead of printing it, e.g. "
                                ".github/workflows/classroom.yml")
    classroom.add_argument("--notebooks", nargs="+", metavar="NN",
                           help="grade only these notebooks, by number or name (default: all)")
    classroom.add_argument("--per-exercise", action="store_true",
                           help="one all-or-nothing step per exercise (partial credit) instead "
                                "of one per notebook")


def _hosted(args: argparse.Namespace) -> None:
    """Run ``gradescope`` or ``classroom``."""
    if args.command == "gradescope":
        from grader.hosted import gradescope

        gradescope.build(out=args.out, notebooks=args.notebooks,
                         hidden_visibility=args.hidden_visibility, memory_limit_mb=args.memory_mb,
                         time_limit_minutes=args.minutes)
        print(f"Gradescope autograder written to {args.out}")
    else:
        from grader.hosted import classroom

        text = classroom.workflow(notebooks=args.notebooks, per_exercise=args.per_exercise)
        if args.out is None:
            print(text, end="")
        else:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text)
            print(f"GitHub Classroom workflow written to {args.out}", file=sys.stderr)


def _check_reports(args: argparse.Namespace, reports: list, seconds: float) -> int:
    """Write ``check``'s JSON and Markdown reports; the exit status that ``--min-score`` asks for."""
    from grader import report as reporters

    if args.json is not None:
        reporters.write_json(args.json, reporters.gradescope(
            reports, seconds, hidden_visibility=args.hidden_visibility))
        print(f"JSON report written to {args.json}")
    if args.markdown is not None:
        reporters.write_text(args.markdown, reporters.markdown(reports) + "\n")
        print(f"Markdown report written to {args.markdown}")
    score = sum(r.score for r in reports)
    if args.min_score is not None and score < args.min_score:
        print(f"score {score:g} is below --min-score {args.min_score:g}")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 graded, 1 below ``--min-score``, 2 the
    grader could not run)."""
    args = _parser().parse_args(argv)
    status = 0
    try:
        if args.command in ("gradescope", "classroom"):
            _hosted(args)
        elif args.command == "release":
            from grader import release

            written = release.main(source=args.source, dest=args.dest)
            print(f"released {len(written)} notebook(s) into {args.dest}")
        else:
            from grader import grade

            start = time.monotonic()
            reports = grade.main(paths=args.paths or [ROOT / "notebooks"], json_path=None,
                                 junit_path=args.junit, skip_execution=args.skip_execution,
                                 exercises=set(args.exercise) if args.exercise else None,
                                 cell_timeout=args.cell_timeout)
            status = _check_reports(args, reports, time.monotonic() - start)
    except GraderError as exc:
        print(f"grader: {exc}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
