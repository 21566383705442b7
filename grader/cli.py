"""Command line: ``python -m grader COMMAND`` for the commands ``release``, ``check``, ``batch``,
``merge``, ``written``, ``starter-repo``, ``gradescope``, ``classroom`` and ``class-workflow``. Parses
arguments and calls the stages (hosted exports live in :mod:`grader.export.hosted`)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from grader.errors import GraderError
from grader.notebook.time_limits import BUDGET_HELP, CELL_TIMEOUT_HELP
from grader.report.render import VISIBILITIES

ROOT = Path(__file__).resolve().parent.parent
GPU_MEMORY_GIB = 64.0
"""The default ``--memory-limit`` where an NVIDIA GPU is present: CUDA reserves a large address
space, and under the usual 6 GiB it cannot start at all (torch then sees no GPU)."""
REQUIRE_HELP = ("refuse to grade (exit status 2, one line) unless bubblewrap confines the "
                "learner's code here: its own filesystem view, PID namespace and no network "
                "(default: fall back to resource limits, saying so on the report's first line)")
ALLOW_HELP = ("grade a learner whose code bubblewrap cannot confine here with resource limits "
              "only (the reports' first line says so); default: that learner is not graded, "
              "with bubblewrap's reason in one line")
DEPRECATED = ("grader: --require-confinement is the default of {} now and does nothing; drop it "
              "(--allow-unconfined grades without bubblewrap)")
MEMORY_HELP = ("address space of each learner process, in GiB (default: 6, or "
               f"{GPU_MEMORY_GIB:g} where an NVIDIA GPU is present: CUDA cannot start below about 32)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grader", description="Release and grade the course's notebooks.")
    commands = parser.add_subparsers(dest="command", required=True)

    release = commands.add_parser("release", help="build notebooks/ from solutions/")
    release.add_argument("--source", type=Path, default=ROOT / "solutions",
                         help="folder of solution notebooks (default: solutions/)")
    release.add_argument("--dest", type=Path, default=ROOT / "notebooks",
                         help="folder for the student notebooks (default: notebooks/)")
    release.add_argument("--force", action="store_true",
                         help="overwrite (or remove) student notebooks changed since they were "
                              "released, keeping a copy of each as NAME.ipynb.bak-<time>")

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
    check.add_argument("--cell-timeout", type=float, metavar="SECONDS", help=CELL_TIMEOUT_HELP)
    check.add_argument("--execution-budget", type=float, metavar="SECONDS", help=BUDGET_HELP)
    check.add_argument("--run-as", metavar="USER",
                       help="run the learner's code as this unprivileged user (the grader must "
                            "run as root; the user must be able to read the grader and Python)")
    check.add_argument("--memory-limit", type=_gibibytes, metavar="GIB", help=MEMORY_HELP)
    check.add_argument("--require-confinement", action="store_true", help=REQUIRE_HELP)
    check.add_argument("--html", type=Path, metavar="FILE",
                       help="write a self-contained HTML feedback page to FILE")
    check.add_argument("--verbose", "-v", action="store_true",
                       help="list every failing test in the table (default: the first one per "
                            "exercise, and each named mistake once)")
    _add_hosted_options(check)
    check.add_argument("--reveal", action="store_true",
                       help="after grading, show each written answer you wrote beside its model "
                            "answer and rubric (never for an empty answer; see --model-answers)")
    check.add_argument("--model-answers", type=Path, metavar="FILE",
                       help="the model answers to --reveal: the file your instructor published "
                            "after the due date (default: the course's solutions/, else "
                            "model_answers.json at the course's root)")
    _add_batch(commands)
    _add_written(commands)
    _add_hosted_commands(commands)
    starter = commands.add_parser("starter-repo", help="build the repository learners get: "
                                  "notebooks, their assets, the runtime and the public checks")
    starter.add_argument("out", type=Path, metavar="OUT", help="a new (or empty) folder")
    starter.add_argument("--notebooks", nargs="+", metavar="NN",
                         help="only these notebooks, by number or name (default: all)")
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
    batch.add_argument("--cell-timeout", type=float, metavar="SECONDS",
                       help="time limit for one notebook cell (default: as for check)")
    batch.add_argument("--run-as", metavar="USER",
                       help="run the learners' code as this unprivileged user (grader as root)")
    batch.add_argument("--memory-limit", type=_gibibytes, metavar="GIB", help=MEMORY_HELP)
    batch.add_argument("--allow-unconfined", action="store_true", help=ALLOW_HELP)
    batch.add_argument("--require-confinement", action="store_true", help=argparse.SUPPRESS)
    batch.add_argument("--notebooks", nargs="+", metavar="NN",
                       help="the assignment's notebooks, by number or name: only these are "
                            "graded, and max_total and percent are out of their points "
                            "(default: every notebook; in nbgrader's layout, those handed in "
                            "for the assignment)")
    batch.add_argument("--assignment", metavar="NAME",
                       help="the assignment's name (canvas.csv's column); in nbgrader's "
                            "layout, grade only this assignment folder, into --out/NAME "
                            "(default: each assignment, into a folder of --out of its own)")
    batch.add_argument("--roster", type=Path, metavar="CSV",
                       help="the class list: a student_id column, optionally name, lms_id, "
                            "sis_id, login, section; learners on it with nothing handed in get "
                            "a 0 row (not submitted), others are noted")
    batch.add_argument("--lms", choices=("canvas",),
                       help="also write the gradebook in this LMS's import format "
                            "(canvas.csv; needs --roster with the LMS's ids)")
    batch.add_argument("--due", metavar="TIME",
                       help="when the work was due, ISO 8601 (e.g. 2026-03-01T23:59+01:00; UTC "
                            "without an offset): the gradebook says when each learner handed "
                            "in, by which source, and how late")
    batch.add_argument("--late-policy", metavar="PER_DAY[,CAP]",
                       help="percent of the points taken per day late (a started day counts), "
                            "at most CAP percent, e.g. 10,50; extensions come from the roster's "
                            "extension_days or due column")
    batch.add_argument("--no-file-times", action="store_true",
                       help="with --due: refuse to read a learner's hand-in time from file "
                            "times (the time of the copy, unless it kept them) where nbgrader's "
                            "timestamp.txt or Gradescope's metadata is missing")
    batch.add_argument("--shard", metavar="K/N",
                       help="grade only the K-th of N slices of the learners (by a hash of their "
                            "id) and write a shard record; join the shards with `merge`")
    _add_hidden_detail(batch, "each learner's results.json and feedback.html")
    merge = commands.add_parser("merge", help="join the folders of `batch --shard` runs into "
                                "one gradebook, summary and the learners' files")
    merge.add_argument("shards", nargs="+", type=Path, metavar="SHARD_DIR",
                       help="the --out folder of each `batch --shard K/N` run, every K once")
    merge.add_argument("--out", type=Path, default=Path("grades"),
                       help="folder for the class's files (default: grades/)")
    merge.add_argument("--roster", type=Path, metavar="CSV", help="as for batch")
    merge.add_argument("--lms", choices=("canvas",), help="as for batch (needed only where the "
                       "shards were graded without it: their own options travel in shard.json)")
    merge.add_argument("--assignment", metavar="NAME",
                       help="the assignment's name in canvas.csv, where the shards had none")


def _add_written(commands) -> None:
    """``written``: the written questions' loop (graded by a person, in files)."""
    written = commands.add_parser("written", help="written answers: pages and a CSV to grade "
                                  "them by hand, its import, the Gradescope export, model answers")
    steps = written.add_subparsers(dest="step", required=True)
    export = steps.add_parser("export", help="per written question, a page of every learner's "
                              "answer beside the rubric and model answer, and grades.csv to fill")
    export.add_argument("submissions", type=Path, help="folder of submissions (as for batch)")
    export.add_argument("--out", type=Path, default=Path("grades"),
                        help="the class's folder (batch's --out; default: grades/): writes "
                             "OUT/written/")
    for step in (export, steps.add_parser("gradescope", help="one HTML (and PDF) of the written "
                                          "answers per submission, a page per question, and "
                                          "the outline of Gradescope's manual questions")):
        step.add_argument("--solutions", type=Path, default=ROOT / "solutions",
                          help="the solution notebooks: questions, rubrics, model answers "
                               "(default: solutions/)")
        step.add_argument("--flat", action="store_true", help="as for batch")
        step.add_argument("--notebooks", nargs="+", metavar="NN",
                          help="only these notebooks' questions (default: all)")
    gradescope = steps.choices["gradescope"]
    gradescope.add_argument("submissions", type=Path, help="folder of submissions (as for batch, "
                            "e.g. Gradescope's export of the autograded assignment)")
    gradescope.add_argument("--out", type=Path, required=True, help="a folder for the files")
    gradescope.add_argument("--pdf", action="store_true",
                            help="also print each to PDF with a headless Chromium (one is needed)")
    load = steps.add_parser("import", help="read the filled grades.csv back into the class's "
                            "gradebook, Canvas file and feedback pages")
    load.add_argument("csv", type=Path, metavar="CSV", help="the filled OUT/written/grades.csv")
    load.add_argument("--out", type=Path, default=Path("grades"),
                      help="the class's folder (default: grades/)")
    publish = steps.add_parser("publish", help="write the model answers and rubrics learners may "
                               "read once the work is due (for `check --reveal`)")
    publish.add_argument("--out", type=Path, required=True, metavar="FILE",
                         help="the file to publish, e.g. model_answers.json")
    publish.add_argument("--notebooks", nargs="+", metavar="NN", help="only these notebooks")
    publish.add_argument("--due", metavar="TIME", help="refuse before this time (ISO 8601), "
                         "as the hidden tests' results are shown after the due date")
    publish.add_argument("--solutions", type=Path, default=ROOT / "solutions",
                         help="the solution notebooks (default: solutions/)")


def _written(args) -> None:
    """Run a ``written`` step."""
    from grader.judge.selection import select_suites

    suites = select_suites(args.notebooks) if getattr(args, "notebooks", None) else None
    if args.step == "export":
        from grader.batch import written_loop

        written_loop.export(submissions=args.submissions, out=args.out, solutions=args.solutions,
                            flat=args.flat, suites=suites)
    elif args.step == "import":
        from grader.batch import written_loop

        written_loop.import_csv(csv_path=args.csv, out=args.out)
    elif args.step == "gradescope":
        from grader.export.hosted import gradescope_written

        gradescope_written.main(submissions=args.submissions, out=args.out,
                                solutions=args.solutions, flat=args.flat, suites=suites,
                                pdf=args.pdf)
    else:
        from grader.batch import written_loop

        written_loop.publish(out=args.out, solutions=args.solutions, suites=suites, due=args.due)


def _gibibytes(text: str) -> float:
    """A ``--memory-limit``: a positive number of GiB."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value != value:
        raise argparse.ArgumentTypeError(f"expected a positive number of GiB, got {text!r}")
    return value


def _batch(args) -> None:
    from grader.batch import run, shards
    from grader.batch.roster import Options
    from grader.sandbox import supervise

    shard = None if args.shard is None else shards.parse(args.shard)
    from grader.sandbox.confinement import describe

    if args.require_confinement:
        print(DEPRECATED.format("batch"), file=sys.stderr)
    held = describe(_limits(args.run_as))  # validates the user
    if held.startswith("bubblewrap"):
        print(f"learner code confined by: {held}")
    elif args.allow_unconfined:
        print(f"NOT CONFINED (--allow-unconfined): the learners' code runs with {held}")
    else:
        print(f"not confined here: {held}; no learner is graded (each one's row says why); pass "
              "--allow-unconfined to grade with resource limits only")
    supervise.become_subreaper()  # batch starts nothing but learners' workers
    run.grade_class(run.ClassOptions(
        submissions=args.submissions, out=args.out, jobs=args.jobs, students=args.student,
        force=args.force, flat=args.flat, timeout_per_student=args.timeout_per_student,
        grading=Options(skip_execution=args.skip_execution, cell_timeout=args.cell_timeout,
                        run_as=args.run_as, require_confinement=not args.allow_unconfined,
                        memory_limit=_memory_limit(args.memory_limit)),
        shard=shard, notebooks=args.notebooks, assignment_name=args.assignment,
        roster=args.roster, lms=args.lms, due=args.due, late_policy=args.late_policy,
        no_file_times=args.no_file_times, hidden_detail=args.hidden_detail))


def _limits(run_as: str | None, memory_limit: float | None = None, *, require: bool = False):
    from grader.sandbox import supervise
    from grader.sandbox.parent import Limits

    if run_as is not None:
        try:
            supervise.account(run_as)
        except LookupError as exc:
            raise GraderError(str(exc)) from None
        if os.geteuid() != 0:
            raise GraderError(f"--run-as {run_as} needs the grader to run as root")
    return Limits(run_as=run_as, require_confinement=require,
                  **supervise.memory_bytes(_memory_limit(memory_limit)))


def _memory_limit(chosen: float | None) -> float | None:
    """The ``--memory-limit`` in GiB: the one chosen, else a GPU's default, else None."""
    if chosen is not None:
        return chosen
    return GPU_MEMORY_GIB if Path("/dev/nvidiactl").exists() else None


def _add_hosted_options(check: argparse.ArgumentParser) -> None:
    """``check``'s options for hosted graders and CI: Markdown summary, pass mark, visibility."""
    check.add_argument("--markdown", type=Path, metavar="FILE",
                       help="write a Markdown summary to FILE (e.g. \"$GITHUB_STEP_SUMMARY\")")
    check.add_argument("--min-score", type=float, metavar="POINTS",
                       help="exit with status 1 when the total score is below POINTS (for graders "
                            "that give all or nothing per command)")
    check.add_argument("--classroom-output", type=Path, metavar="FILE",
                       help="append the tests' points for GitHub Classroom's grading reporter "
                            "to FILE (a step's \"$GITHUB_OUTPUT\"), partial credit per test")
    check.add_argument("--hidden-visibility", choices=VISIBILITIES, default="after_due_date",
                       help="Gradescope visibility of hidden tests in --json (default: "
                            "after_due_date)")
    _add_hidden_detail(check, "--json and --html")


def _add_hidden_detail(parser: argparse.ArgumentParser, where: str) -> None:
    from grader.report.render import HIDDEN_DETAIL, HIDDEN_DETAILS

    parser.add_argument("--hidden-detail", choices=tuple(HIDDEN_DETAILS), default=HIDDEN_DETAIL,
                        help=f"what {where} show of each hidden test: " + "; ".join(
                            f"{name}: {text}" for name, text in HIDDEN_DETAILS.items())
                        + f" (default: {HIDDEN_DETAIL})")


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
                                 "the box does not report its own (default: 768, Gradescope's "
                                 "own default; give the larger value set on the assignment)")
    gradescope.add_argument("--minutes", type=float, default=20, metavar="MINUTES",
                            help="the time limit set on Gradescope, at most 40 (default: 20, as "
                                 "advised)")
    gradescope.add_argument("--allow-unconfined", action="store_true",
                            help="grade a submission with resource limits only where bubblewrap "
                                 "cannot confine the learner's code on Gradescope's machine "
                                 "(default: score 0 and bubblewrap's reason in one line)")
    gradescope.add_argument("--require-confinement", action="store_true", help=argparse.SUPPRESS)
    _add_hidden_detail(gradescope, "results.json")

    classroom = commands.add_parser("classroom", help="print a GitHub Classroom grading workflow")
    classroom.add_argument("--out", type=Path, metavar="FILE",
                           help="write the workflow to FILE instead of printing it, e.g. "
                                ".github/workflows/classroom.yml")
    classroom.add_argument("--notebooks", nargs="+", metavar="NN",
                           help="grade only these notebooks, by number or name (default: all)")
    classroom.add_argument("--per-exercise", action="store_true",
                           help="one all-or-nothing step per exercise (partial credit) instead "
                                "of one per notebook")

    shards = commands.add_parser("class-workflow", help="print a workflow that grades a class in "
                                 "shards (GitHub Actions matrix, Slurm job array, Kubernetes)")
    shards.add_argument("--shards", type=int, metavar="N",
                        help="number of shards, each graded by a job of its own (required, but "
                             "with --dockerfile)")
    shards.add_argument("--out", type=Path, metavar="FILE",
                        help="write to FILE instead of printing it, e.g. "
                             ".github/workflows/grade-class.yml")
    engine = shards.add_mutually_exclusive_group()
    engine.add_argument("--slurm", action="store_true",
                        help="a Slurm job-array script (run it with bash) instead of a workflow")
    engine.add_argument("--k8s", metavar="IMAGE",
                        help="a bash script that runs Kubernetes Jobs (an indexed Job of shards, "
                             "then the merge) of IMAGE: the course repository with the grader "
                             "installed (see --dockerfile)")
    engine.add_argument("--dockerfile", action="store_true",
                        help="the recipe of the --k8s image (a Dockerfile of the pinned "
                             "packages) instead of a workflow")
    shards.add_argument("--jobs", type=int, default=2, metavar="N",
                        help="learners graded at once in each shard (default: 2)")
    shards.add_argument("--skip-execution", action="store_true",
                        help="run the hidden tests only, not the notebooks top to bottom")
    shards.add_argument("--notebooks", nargs="+", metavar="NN",
                        help="the assignment's notebooks (batch --notebooks): the gradebook is "
                             "out of their points (default: every notebook)")
    shards.add_argument("--roster", metavar="CSV",
                        help="as for batch: its path inside the course repository")
    shards.add_argument("--lms", choices=("canvas",), help="as for batch: the merge writes "
                        "canvas.csv")
    shards.add_argument("--due", metavar="TIME", help="as for batch; the Actions workflow also "
                        "clones each learner's last commit by then (plus the roster's extensions)")
    shards.add_argument("--late-policy", metavar="PER_DAY[,CAP]", help="as for batch; the Actions "
                        "workflow then clones each learner's newest commit, penalised by its time")
    shards.add_argument("--assignment", metavar="NAME",
                        help="the assignment's name (canvas.csv's column; nbgrader's folder)")
    shards.add_argument("--allow-unconfined", action="store_true",
                        help="let shards grade without bubblewrap (default: a learner whose "
                             "code bubblewrap cannot confine is not graded)")


def _hosted(args: argparse.Namespace) -> None:
    """Run ``gradescope``, ``classroom`` or ``class-workflow``."""
    if args.command == "class-workflow":
        from grader.export.hosted import class_workflow

        if args.dockerfile:
            _emit(class_workflow.dockerfile(), args.out, "Dockerfile")
            return
        if args.shards is None:
            raise GraderError("class-workflow needs --shards N (the number of shards)")
        options = {"jobs": args.jobs, "skip_execution": args.skip_execution,
                   "notebooks": args.notebooks, "roster": args.roster, "lms": args.lms,
                   "due": args.due, "late_policy": args.late_policy,
                   "assignment": args.assignment,
                   "allow_unconfined": args.allow_unconfined}
        if args.k8s:
            _emit(class_workflow.k8s(args.shards, image=args.k8s, **options), args.out,
                  "Kubernetes script")
        else:
            write = class_workflow.slurm if args.slurm else class_workflow.actions
            _emit(write(args.shards, **options), args.out,
                  "Slurm job-array script" if args.slurm else "GitHub Actions workflow")
    elif args.command == "gradescope":
        from grader.export.hosted import gradescope

        if args.require_confinement:
            print(DEPRECATED.format("gradescope"), file=sys.stderr)
        gradescope.build(out=args.out, notebooks=args.notebooks,
                         hidden_visibility=args.hidden_visibility, memory_limit_mb=args.memory_mb,
                         time_limit_minutes=args.minutes,
                         allow_unconfined=args.allow_unconfined,
                         hidden_detail=args.hidden_detail)
        print(f"Gradescope autograder written to {args.out}")
    else:
        from grader.export.hosted import classroom

        _emit(classroom.workflow(notebooks=args.notebooks, per_exercise=args.per_exercise),
              args.out, "GitHub Classroom workflow")


def _emit(text: str, out: Path | None, what: str) -> None:
    """Print ``text``, or write it to ``out`` and say so on stderr."""
    if out is None:
        print(text, end="")
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"{what} written to {out}", file=sys.stderr)


def _check_reports(args: argparse.Namespace, reports: list, seconds: float) -> int:
    """Write ``check``'s reports; the exit status that ``--min-score`` asks for.

    Every report (JSON, JUnit, Markdown, HTML) is rendered before any is written, and each is
    written to a temporary file moved into place (:func:`grader.report.render.write_text`): a
    failure on the way leaves every earlier report whole, as it was."""
    from grader.report import render as reporters

    rendered: list[tuple[Path, str, str]] = []
    if args.json is not None:
        rendered.append((args.json, "JSON report", json.dumps(reporters.gradescope(
            reports, seconds, hidden_visibility=args.hidden_visibility,
            hidden_detail=args.hidden_detail), indent=2) + "\n"))
    if args.junit is not None:
        rendered.append((args.junit, "JUnit report", reporters.junit(reports)))
    if args.markdown is not None:
        rendered.append((args.markdown, "Markdown report", reporters.markdown(reports) + "\n"))
    if args.html is not None:
        from grader.report import feedback

        rendered.append((args.html, "HTML feedback",
                         feedback.render(reports, hidden_detail=args.hidden_detail)))
    for path, what, text in rendered:
        reporters.write_text(path, text)
        print(f"{what} written to {path}")
    if args.classroom_output is not None:
        from grader.report import classroom_points as classroom_results
        from grader.judge import recorded

        classroom_results.append_output(
            args.classroom_output, reporters.gradescope(reports, seconds),
            label=classroom_results.LABEL if recorded.is_starter() else None)
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
        if args.command in ("gradescope", "classroom", "class-workflow"):
            _hosted(args)
        elif args.command == "release":
            from grader.notebook import release

            written = release.main(source=args.source, dest=args.dest, force=args.force)
            print(f"released {len(written)} notebook(s) into {args.dest}")
        elif args.command == "batch":
            _batch(args)
        elif args.command == "written":
            _written(args)
        elif args.command == "starter-repo":
            from grader.export import starter

            starter.main(args.out, notebooks=args.notebooks)
        elif args.command == "merge":
            from grader.batch import merge

            merge.main(shard_dirs=args.shards, out=args.out, roster=args.roster, lms=args.lms,
                       assignment_name=args.assignment)
        else:
            from grader.sandbox import parent, supervise

            supervise.become_subreaper()  # this process starts nothing but the learner's code
            start = time.monotonic()
            limits = _limits(args.run_as, args.memory_limit, require=args.require_confinement)
            # Nothing to execute first: the sandbox's zygote starts now, so that its import of
            # torch runs beside this process's imports of the grader's stages, suites and torch.
            zygote = parent.start_zygote(limits) if args.skip_execution else None
            try:
                from grader import grade
                from grader.judge import recorded
            except BaseException:
                if zygote is not None:
                    zygote.close()
                raise
            reports = grade.main(paths=args.paths or [ROOT / "notebooks"], json_path=None,
                                 junit_path=None, skip_execution=args.skip_execution,
                                 exercises=set(args.exercise) if args.exercise else None,
                                 cell_timeout=args.cell_timeout,
                                 execution_budget=args.execution_budget, limits=limits,
                                 verbose=args.verbose, zygote=zygote)
            status = _check_reports(args, reports, time.monotonic() - start)
            if args.reveal:
                from grader.notebook.written import model_answers
                from grader.report.written import reveal

                print(reveal(reports, *model_answers(file=args.model_answers, root=ROOT)))
            if recorded.is_starter():
                print(recorded.hidden_note())
    except GraderError as exc:
        print(f"grader: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("grader: interrupted (files already written are complete)", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
