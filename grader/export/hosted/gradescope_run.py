"""What the Gradescope autograder runs for each submission (``run_autograder`` calls ``main``).

1. Stage: copy the grader's runtime (the package and ``assets/``) to ``GRADER_HOME/app``, where the
   learner's user can import it, then close the hidden suites there and ``/autograder/source`` to
   everyone but root.
2. Collect the submission: every ``.ipynb`` in ``/autograder/submission`` and in any zip there,
   whatever the names; each is matched to its notebook of the course (by the metadata that released
   notebooks carry, else by a course name inside its file name) and copied under that name.
3. Grade with ``python -m grader check --run-as USER`` in a child process, sampling the memory of
   its whole process tree; notebooks that were not submitted score 0 with a message. The learner's
   code runs under bubblewrap (``setup.sh`` installs it); where bubblewrap cannot confine it,
   nothing is graded: score 0 and bubblewrap's reason in one line. With ``allow_unconfined`` in
   ``autograder.json`` (the export's ``--allow-unconfined``, or ``--allow-unconfined`` here) it is
   graded with the fallback (:mod:`grader.sandbox.confinement`), and the ``output``'s first line
   says so.
4. Write ``results/results.json``, checked against the JSON Schema of Gradescope's specification,
   with a warning in ``output`` when the run came close to the memory or time limit. Unless the
   hidden tests are ``visible``, the top-level ``output`` (which Gradescope always shows) depends
   on no hidden test: it gives the public checks' points, not the total. Whatever goes
   wrong, a valid ``results.json`` with score 0 and the reason is written.
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
import threading
import time
import traceback
import zipfile
from pathlib import Path

from grader.notebook._imports import skip_slow_optional_imports

skip_slow_optional_imports()  # before jsonschema: its optional IRI checker costs seconds

import jsonschema  # noqa: E402
import psutil  # noqa: E402

from grader.sandbox import confinement  # noqa: E402
from grader.report import render as reporters  # noqa: E402
from grader.errors import GraderError  # noqa: E402
from grader.grade import grade_notebook  # noqa: E402
from grader.export.hosted import SCHEMA  # noqa: E402
from grader.export.hosted.gradescope import MEMORY_LIMIT_MB, TIME_LIMIT_MINUTES  # noqa: E402
from grader.notebook.read import read_notebook, suite_name  # noqa: E402

NEAR_LIMIT = 0.8
"""Fraction of the time limit above which ``output`` carries a warning."""
NEAR_MEMORY_LIMIT = 0.95
"""Fraction of the memory limit above which ``output`` carries a warning: grading a learner's six
notebooks peaks at about nine tenths of Gradescope's default 768 MB by design
(``scripts/benchmark_grading.py --section memory``), so a warning at 80 % would be shown to every
learner."""
MAX_NOTEBOOK_BYTES = 50 << 20
"""Largest notebook taken out of a submitted zip."""


class MemorySampler(threading.Thread):
    """Samples the summed PSS and RSS of a process and all its descendants until stopped."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.root, self.interval = pid, interval
        self.peak_pss = self.peak_rss = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                root = psutil.Process(self.root)
                processes = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            pss = rss = 0
            for process in processes:
                try:
                    info = process.memory_full_info()
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                pss, rss = pss + info.pss, rss + info.rss
            self.peak_pss, self.peak_rss = max(self.peak_pss, pss), max(self.peak_rss, rss)
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def memory_limit_mb(configured: float) -> float:
    """The box's memory limit from its cgroup (v2, then v1), else ``configured``."""
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            value = Path(path).read_text().strip()
        except OSError:
            continue
        if value.isdigit() and int(value) < 1 << 50:
            return int(value) / (1 << 20)
    return configured


# -- 1. stage ---------------------------------------------------------------------------------
def stage(source: Path, app: Path) -> None:
    """Copy the runtime to ``app`` (readable by all), then close the suites and ``source``."""
    shutil.rmtree(app, ignore_errors=True)
    app.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(source / "grader", app / "grader", ignore=ignore)
    if (source / "assets").is_dir():
        shutil.copytree(source / "assets", app / "assets")
    for folder, dirs, files in os.walk(app):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(Path(folder) / name, 0o644)
    suites = app / "grader" / "judge" / "suites"
    for path in suites.iterdir():
        os.chmod(path, 0o600)
    os.chmod(suites, 0o700)
    os.chmod(app.parent, os.stat(app.parent).st_mode | 0o555)
    os.chmod(source, 0o700)


def ensure_user(name: str) -> None:
    """Create the unprivileged system user ``name`` unless it exists."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        name], check=True)


# -- 2. collect -------------------------------------------------------------------------------
def _unzip(archive: Path, into: Path, problems: list[str]) -> list[Path]:
    found = []
    try:
        with zipfile.ZipFile(archive) as opened:
            for index, member in enumerate(opened.infolist()):
                name = Path(member.filename)
                if member.is_dir() or name.suffix != ".ipynb" or "__MACOSX" in name.parts \
                        or ".ipynb_checkpoints" in name.parts:
                    continue
                if member.file_size > MAX_NOTEBOOK_BYTES:
                    problems.append(f"{archive.name}: {member.filename} is larger than "
                                    f"{MAX_NOTEBOOK_BYTES >> 20} MB; clear its outputs")
                    continue
                target = into / f"{index:03d}" / name.name  # never a path taken from the zip
                target.parent.mkdir(parents=True)
                target.write_bytes(opened.read(member))
                found.append(target)
    except (zipfile.BadZipFile, OSError) as exc:
        problems.append(f"{archive.name}: not a readable zip file ({exc})")
    return found


def collect(submission: Path, work: Path, suites: list[str]) -> tuple[dict[str, Path], list[str]]:
    """Match the submitted notebooks to the course's; returns ``{suite: copy}`` and problems."""
    problems: list[str] = []
    candidates = []
    files = sorted(p for p in submission.rglob("*") if p.is_file()) if submission.is_dir() else []
    for path in files:
        if path.suffix == ".zip":
            candidates += _unzip(path, work / "unzipped" / path.stem, problems)
        elif path.suffix == ".ipynb" and ".ipynb_checkpoints" not in path.parts:
            candidates.append(path)
    chosen: dict[str, Path] = {}
    for path in candidates:
        shown = path.name
        try:
            notebook = read_notebook(path)
        except GraderError as exc:
            problems.append(f"{shown}: {str(exc).split(': ', 1)[-1]}")
            continue
        suite = suite_name(notebook, path)
        if suite not in suites:
            named = [s for s in suites if s in path.stem]
            suite = named[0] if len(named) == 1 else None
        if suite is None:
            problems.append(f"{shown}: not one of this assignment's notebooks "
                            f"({', '.join(suites)}); submit the course's notebook files")
        elif suite in chosen:
            problems.append(f"{shown}: a second copy of {suite}; only {chosen[suite].name} "
                            "was graded")
        else:
            chosen[suite] = path
    graded = work / "graded"
    graded.mkdir(parents=True)
    copies = {}
    for suite, path in chosen.items():
        copies[suite] = graded / f"{suite}.ipynb"
        shutil.copyfile(path, copies[suite])
        os.chmod(copies[suite], 0o644)
    for folder in (work, graded):
        os.chmod(folder, 0o755)
    return copies, problems


# -- 3. grade ---------------------------------------------------------------------------------
def grade_in_child(notebooks: list[Path], *, app: Path, python: str, json_path: Path,
                   hidden_visibility: str, run_as: str | None, skip_execution: bool,
                   timeout: float, allow_unconfined: bool = False,
                   hidden_detail: str = "description") -> tuple[int, float, float]:
    """Run ``python -m grader check`` on ``notebooks``; returns its exit status and peak memory
    (PSS, RSS; MiB) of its process tree. Raises GraderError when it runs past ``timeout``."""
    command = [python, "-m", "grader", "check", *map(str, notebooks), "--json", str(json_path),
               "--hidden-visibility", hidden_visibility, "--hidden-detail", hidden_detail]
    if skip_execution:
        command.append("--skip-execution")
    if run_as:
        command += ["--run-as", run_as]
    if not allow_unconfined:
        command.append("--require-confinement")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADER_", "PYTHON"))}
    env.update({"PYTHONPATH": str(app), "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"})
    sys.stdout.flush()
    process = subprocess.Popen(command, cwd=app, env=env, stdin=subprocess.DEVNULL)
    sampler = MemorySampler(process.pid)
    sampler.start()
    try:
        status = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        for child in psutil.Process(process.pid).children(recursive=True) + [process]:
            child.kill()
        process.wait()
        raise GraderError(f"grading did not finish within {timeout / 60:.1f} minutes, the time "
                          "left under the assignment's time limit") from None
    finally:
        sampler.stop()
    return status, sampler.peak_pss / (1 << 20), sampler.peak_rss / (1 << 20)


def not_submitted(suites: list[str], work: Path, hidden_visibility: str) -> list[dict]:
    """One zero-score test per notebook that was not submitted, worth the notebook's points
    (not one failed test per hidden test, each asking whether a cell is still there)."""
    tests = []
    for suite in suites:
        report = grade_notebook(work / "absent" / f"{suite}.ipynb", skip_execution=True)
        tests.append({"name": f"{suite} / not submitted",
                      "number": f"{reporters.notebook_number(suite)}.0", "score": 0,
                      "max_score": report.max_score, "status": "failed",
                      "output": f"not submitted: upload {suite}.ipynb (or a zip that holds it)",
                      "tags": ["not submitted"], "visibility": "visible"})
    return tests


def _number_key(test: dict) -> tuple[int, ...]:
    return tuple(int(part) for part in test.get("number", "0").split(".") if part.isdigit())


# -- 4. report --------------------------------------------------------------------------------
def message(check_output: str, *, tests: list[dict], score: float, graded: int,
            suites: list[str], problems: list[str], hidden_visibility: str) -> list[str]:
    """The lines of the top-level ``output``, which Gradescope shows whatever the visibility:
    how many notebooks were graded, then ``check``'s line per notebook (its score and what to
    look at first), then the files that were not graded.

    Unless ``hidden_visibility`` is ``visible``, no line depends on a hidden test: ``check``'s
    lines then give the public checks' points, and the total (which holds the hidden tests'
    points) is left to Gradescope, which shows it once the hidden tests are shown.
    """
    head = f"Graded {graded} of {len(suites)} notebook(s)"
    if reporters.shows_hidden(hidden_visibility):
        maximum = sum(t.get("max_score", 0) for t in tests)
        head += f": {reporters._points(score)}/{reporters._points(maximum)} points."
    else:
        head += f"; the hidden tests' results {reporters.HIDDEN_WHEN[hidden_visibility]}."
    lines = check_output.splitlines()
    notice = lines[:1] if lines and lines[0].startswith(reporters.UNCONFINED) else []
    per_notebook = lines[len(notice) + 1:]  # check's first line (after the notice) is its total
    return [*notice, head, *per_notebook, *(f"Not graded: {problem}" for problem in problems)]


def failure_results(reason: str, seconds: float) -> dict:
    """A valid ``results.json`` that says grading failed and why, with score 0."""
    return {"score": 0, "execution_time": round(seconds, 3),
            "output": f"The autograder could not grade this submission: {reason}\n"
                      "Your score is 0 for now; please tell your instructor.",
            "output_format": "text", "stdout_visibility": "hidden", "tests": []}


def validate(results: dict) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``results`` meets Gradescope's specification."""
    jsonschema.validate(results, json.loads(SCHEMA.read_text()))


def grade_submission(*, root: Path, home: Path, python: str, run_as: str | None,
                     skip_execution: bool, start: float, allow_unconfined: bool = False) -> dict:
    """Steps 1-4 for one submission; returns the results (raises when the grader fails)."""
    source = root / "source"
    config = json.loads((source / "autograder.json").read_text())
    suites, visibility = config["suites"], config["hidden_visibility"]
    app, work = home / "app", home / "work"
    stage(source, app)
    if run_as:
        ensure_user(run_as)
    allow_unconfined = allow_unconfined or bool(config.get("allow_unconfined"))
    if not allow_unconfined:  # refuse before anything of the learner's runs, with the reason
        confinement.describe(confinement.Limits(run_as=run_as, require_confinement=True))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    copies, problems = collect(root / "submission", work, suites)
    minutes = float(config.get("time_limit_minutes", TIME_LIMIT_MINUTES))
    graded, peak_pss, peak_rss = {"tests": [], "score": 0.0, "output": ""}, 0.0, 0.0
    if copies:
        json_path = work / "check.json"
        status, peak_pss, peak_rss = grade_in_child(
            list(copies.values()), app=app, python=python, json_path=json_path,
            hidden_visibility=visibility, run_as=run_as, skip_execution=skip_execution,
            allow_unconfined=allow_unconfined,
            hidden_detail=config.get("hidden_detail", "description"),
            timeout=max(60.0, minutes * 60 - (time.monotonic() - start) - 30))
        if status != 0 or not json_path.is_file():
            raise GraderError(f"the grader stopped with exit status {status} before writing "
                              "its report")
        graded = json.loads(json_path.read_text())
    missing = [s for s in suites if s not in copies]
    tests = sorted(graded["tests"] + not_submitted(missing, work, visibility), key=_number_key)
    score = graded["score"]
    seconds = time.monotonic() - start
    output = message(graded.get("output", ""), tests=tests, score=score, graded=len(copies),
                     suites=suites, problems=problems, hidden_visibility=visibility)
    memory_limit = memory_limit_mb(float(config.get("memory_limit_mb", MEMORY_LIMIT_MB)))
    if peak_pss >= NEAR_MEMORY_LIMIT * memory_limit:
        output.append(f"Warning: grading used {peak_pss:.0f} MB of memory at its peak, close to "
                      f"the {memory_limit:.0f} MB limit; ask your instructor to raise it.")
    if seconds >= NEAR_LIMIT * minutes * 60:
        output.append(f"Warning: grading took {seconds:.0f} s, close to the "
                      f"{minutes:g}-minute limit; ask your instructor to raise it.")
    results = {"score": score, "execution_time": round(seconds, 3), "output": "\n".join(output),
               "output_format": "text", "stdout_visibility": "hidden", "tests": tests,
               "extra_data": {"peak_pss_mb": round(peak_pss), "peak_rss_mb": round(peak_rss),
                              "memory_limit_mb": round(memory_limit)}}
    validate(results)
    return results


def main(*, root: Path, home: Path, python: str, run_as: str | None,
         skip_execution: bool = False, allow_unconfined: bool = False) -> int:
    """Grade the submission under ``root`` and write ``root/results/results.json``; returns 0."""
    start = time.monotonic()
    results_path = root / "results" / "results.json"
    try:
        results = grade_submission(root=root, home=home, python=python, run_as=run_as,
                                   skip_execution=skip_execution, start=start,
                                   allow_unconfined=allow_unconfined)
    except Exception as exc:  # noqa: BLE001 - any failure must still leave a valid results.json
        traceback.print_exc()
        reason = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        results = failure_results(reason, time.monotonic() - start)
    reporters.write_json(results_path, results)
    print(f"results written to {results_path}: score {results['score']:g}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grader.export.hosted.gradescope_run",
                                     description="Grade one Gradescope submission.")
    parser.add_argument("--root", type=Path, default=Path("/autograder"),
                        help="Gradescope's folder (default: /autograder)")
    parser.add_argument("--home", type=Path, default=Path("/opt/course-grader"),
                        help="where the runtime is staged (default: /opt/course-grader)")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter that grades (default: this one)")
    parser.add_argument("--run-as", metavar="USER",
                        help="run the learner's code as USER (created if missing)")
    parser.add_argument("--no-run-as", action="store_true",
                        help="keep the learner's code under this user (simulations only)")
    parser.add_argument("--skip-execution", action="store_true",
                        help="run the hidden tests only (simulations only)")
    parser.add_argument("--allow-unconfined", action="store_true",
                        help="grade with resource limits only where bubblewrap cannot confine "
                             "the learner's code (also set by the export's --allow-unconfined)")
    parser.add_argument("--require-confinement", action="store_true",
                        help="the default; accepted and ignored")
    return parser


if __name__ == "__main__":
    arguments = _parser().parse_args()
    sys.exit(main(root=arguments.root, home=arguments.home, python=arguments.python,
                  run_as=None if arguments.no_run_as else arguments.run_as,
                  skip_execution=arguments.skip_execution,
                  allow_unconfined=arguments.allow_unconfined))
