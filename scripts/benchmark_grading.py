#!/usr/bin/env python3
"""Print what grading costs: wall time and peak memory, against bare nbval and one torch import.

    python scripts/benchmark_grading.py [--section overhead|inline|hostile ...] [--only NOTEBOOK ...]

Sections (all by default):

- ``overhead``: per notebook, executing the solution with bare nbval (``pytest --nbval-lax``);
  grading the solution (``python -m grader check``, execution included); the hidden tests alone
  (``--skip-execution``); grading the released stub and the solution with one catalogued wrong
  answer. Each grading run reports its wall time and the peak proportional set size (PSS, shared
  pages split between the processes that map them) of the grader's whole process tree, sampled
  from ``/proc/PID/smaps_rollup`` every 50 ms. Targets: grading all six notebooks within 1.25x
  bare nbval; hidden tests alone within 16x one ``import torch``; peak PSS within 768 MiB.
- ``course``: the same in one run each over all the notebooks (bare nbval, ``check``, ``check
  --skip-execution``), the grader's own start-up paid once, as a learner or an autograder runs it.
- ``inline``: the time of every exercise's inline ``check(name)`` on the solution (target: 2 s).
- ``hostile``: notebook 01 with one exercise that never returns, ignores SIGTERM, allocates until
  the memory limit, prints without end, or calls ``os._exit``; graded with execution. Target:
  each within 3x the solution's grading time and 3 minutes, other exercises' scores unchanged.

It prints figures and the machine's load beside them; it asserts nothing.
"""
from __future__ import annotations

import argparse
import copy
import importlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from grader.sandbox import supervise  # noqa: E402
from grader.notebook.read import EXERCISE_TAG, read_notebook, sandbox_cells, tags, top_level_names  # noqa: E402

MIB = 1 << 20
EXERCISE = "max_equivariance_error"  # notebook 01's experiments call it in several cells
HOSTILE = {
    "never returns": "def max_equivariance_error(fn, x, perm):\n    while True:\n        pass\n",
    "ignores SIGTERM": ("import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                        "def max_equivariance_error(fn, x, perm):\n    while True:\n        pass\n"),
    "allocates until the limit": ("def max_equivariance_error(fn, x, perm):\n    hoard = []\n"
                                  "    while True:\n"
                                  "        hoard.append(torch.ones(1 << 26))\n"),
    "prints without end": ("def max_equivariance_error(fn, x, perm):\n    while True:\n"
                           "        print('spam ' * 200)\n"),
    "os._exit": "import os\ndef max_equivariance_error(fn, x, perm):\n    os._exit(0)\n",
}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(command: list[str], cwd: Path = ROOT) -> dict:
    """Run ``command``; its wall time, exit code, output, peak PSS and process count of its tree."""
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peak = {"pss": 0, "processes": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            tree = supervise.descendants(process.pid) | {process.pid}
            peak["pss"] = max(peak["pss"], sum(_pss_kib(pid) for pid in tree))
            peak["processes"] = max(peak["processes"], len(tree))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    done.set()
    sampler.join()
    return {"seconds": time.monotonic() - start, "code": process.returncode,
            "output": output.decode(errors="replace"), "pss_mib": peak["pss"] / 1024,
            "processes": peak["processes"]}


def grade(path: Path, *extra: str) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "results.json"
        result = measure([sys.executable, "-m", "grader", "check", str(path), "--json",
                          str(report), *extra])
        data = json.loads(report.read_text()) if report.is_file() else {}
    result["score"] = data.get("score")
    result["tests"] = data.get("tests", [])
    return result


def bare_nbval(path: Path) -> dict:
    return measure([sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env",
                    "-p", "no:xdist", "-p", "no:cacheprovider", "-q", str(path)])


def with_exercise(suite: str, exercise: str, source: str, folder: Path) -> Path:
    """The solution of ``suite`` with one exercise cell replaced by ``source``."""
    notebook = copy.deepcopy(read_notebook(ROOT / "solutions" / f"{suite}.ipynb"))
    for cell in notebook.cells:
        if cell.cell_type == "code" and EXERCISE_TAG in tags(cell) \
                and exercise in top_level_names(cell.source):
            cell.source = source
    path = folder / f"{suite}.ipynb"
    nbformat.write(notebook, str(path))
    return path


def torch_import_seconds() -> float:
    best = float("inf")
    for _ in range(3):
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        best = min(best, time.monotonic() - start)
    return best


def overhead(notebooks: list[Path]) -> None:
    torch_s = torch_import_seconds()
    print(f"\n## Overhead ({load()}); one `import torch`: {torch_s:.2f} s")
    header = (f"{'notebook':30} {'bare nbval':>10} {'grade':>8} {'ratio':>6} {'hidden':>8} "
              f"{'stub':>8} {'wrong':>8} {'peak PSS MiB (grade/hidden/stub/wrong)':>40}")
    print(header)
    totals = {"nbval": 0.0, "grade": 0.0, "hidden": 0.0}
    worst_pss = 0.0
    for path in notebooks:
        suite = path.stem
        nbval = bare_nbval(path)
        graded = grade(path)
        hidden = grade(path, "--skip-execution")
        stub = grade(ROOT / "notebooks" / path.name)
        wrong = {"seconds": float("nan"), "pss_mib": float("nan")}
        try:
            catalogue = importlib.import_module(f"tests.catalogue.{suite}").WRONG_ANSWERS
        except ModuleNotFoundError:
            catalogue = []
        if catalogue:
            with tempfile.TemporaryDirectory() as folder:
                wrong = grade(with_exercise(suite, catalogue[0].exercise, catalogue[0].source,
                                            Path(folder)))
        totals["nbval"] += nbval["seconds"]
        totals["grade"] += graded["seconds"]
        totals["hidden"] += hidden["seconds"]
        runs = [graded, hidden, stub, wrong]
        worst_pss = max([worst_pss] + [r["pss_mib"] for r in runs if r["pss_mib"] == r["pss_mib"]])
        pss = "/".join(f"{r['pss_mib']:.0f}" for r in runs)
        print(f"{suite:30} {nbval['seconds']:9.1f}s {graded['seconds']:7.1f}s "
              f"{graded['seconds'] / nbval['seconds']:6.2f} {hidden['seconds']:7.1f}s "
              f"{stub['seconds']:7.1f}s {wrong['seconds']:7.1f}s {pss:>40}   score {graded['score']}")
    print(f"{'sum of the rows':30} {totals['nbval']:9.1f}s {totals['grade']:7.1f}s "
          f"{totals['grade'] / totals['nbval']:6.2f} {totals['hidden']:7.1f}s")
    print(f"worst peak PSS of these runs: {worst_pss:.0f} MiB (target <= 768)")
    print(load())


def course(notebooks: list[Path]) -> None:
    """A learner's notebooks in one run each, as a learner or an autograder runs them."""
    torch_s = torch_import_seconds()
    print(f"\n## The course in one run ({load()}); one `import torch`: {torch_s:.2f} s")
    paths = [str(p) for p in notebooks]
    nbval = measure([sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env",
                     "-p", "no:xdist", "-p", "no:cacheprovider", "-q", *paths])
    with tempfile.TemporaryDirectory() as scratch:
        graded = measure([sys.executable, "-m", "grader", "check", *paths, "--json",
                          str(Path(scratch) / "r.json")])
        hidden = measure([sys.executable, "-m", "grader", "check", *paths, "--skip-execution",
                          "--json", str(Path(scratch) / "h.json")])
    print(f"bare nbval {nbval['seconds']:.1f} s; grading {graded['seconds']:.1f} s "
          f"(ratio {graded['seconds'] / nbval['seconds']:.2f}, target <= 1.25, peak PSS "
          f"{graded['pss_mib']:.0f} MiB); hidden tests alone {hidden['seconds']:.1f} s = "
          f"{hidden['seconds'] / torch_s:.1f}x one import torch (target <= 16x, peak PSS "
          f"{hidden['pss_mib']:.0f} MiB)")
    print(load())


def inline(notebooks: list[Path]) -> None:
    print(f"\n## Inline check() on the solutions ({load()})")
    code = (
        "import sys, time, json\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from grader.notebook.read import read_notebook, sandbox_cells\n"
        "from grader.inline import check\n"
        "import contextlib, io\n"
        "path = sys.argv[1]\n"
        "namespace = {'__name__': '__main__'}\n"
        "for label, source in sandbox_cells(read_notebook(path), set()):\n"
        "    exec(compile(source, label, 'exec'), namespace)\n"
        "times = {}\n"
        "for name in sys.argv[2:]:\n"
        "    start = time.monotonic()\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        ok = check(name, namespace)\n"
        "    times[name] = (time.monotonic() - start, ok)\n"
        "print(json.dumps(times))\n"
    )
    worst = 0.0
    for path in notebooks:
        notebook = read_notebook(path)
        names = sorted({n for c in notebook.cells if c.cell_type == "code"
                        and EXERCISE_TAG in tags(c) for n in top_level_names(c.source)
                        if not n.startswith("_")})  # private helpers are not exercises
        env = dict(os.environ, MPLBACKEND="Agg")
        done = subprocess.run([sys.executable, "-c", code, str(path), *names], cwd=path.parent,
                              capture_output=True, text=True, env=env)
        if done.returncode != 0:
            print(f"{path.stem}: could not run ({done.stderr.strip().splitlines()[-1:]})")
            continue
        times = json.loads(done.stdout.strip().splitlines()[-1])
        for name, (seconds, ok) in times.items():
            worst = max(worst, seconds)
            print(f"  {path.stem:30} {name:30} {seconds:6.2f} s  {'passed' if ok else 'FAILED'}")
    print(f"slowest check(): {worst:.2f} s (target <= 2 s); {load()}")


def hostile() -> None:
    suite = "01_permutation_invariance"
    print(f"\n## Hostile submissions of notebook 01, graded with execution ({load()})")
    solution = grade(ROOT / "solutions" / f"{suite}.ipynb")
    reference = {t["name"]: t["score"] for t in solution["tests"]}
    print(f"{'case':28} {'seconds':>8} {'x solution':>10} {'peak PSS MiB':>13} {'others unchanged':>17}")
    print(f"{'solution':28} {solution['seconds']:7.1f}s {1:10.2f} {solution['pss_mib']:13.0f}")
    for case, source in HOSTILE.items():
        with tempfile.TemporaryDirectory() as folder:
            result = grade(with_exercise(suite, EXERCISE, source, Path(folder)))
        others = all(reference.get(t["name"]) == t["score"] for t in result["tests"]
                     if f"/ {EXERCISE} /" not in t["name"] and t["name"] in reference)
        print(f"{case:28} {result['seconds']:7.1f}s {result['seconds'] / solution['seconds']:10.2f} "
              f"{result['pss_mib']:13.0f} {str(others):>17}")
    print(load())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", action="append",
                        choices=["overhead", "course", "inline", "hostile"])
    parser.add_argument("--only", action="append", metavar="NOTEBOOK",
                        help="a notebook's name or number, e.g. 01_permutation_invariance or 01 "
                             "(repeatable)")
    args = parser.parse_args()
    sections = args.section or ["overhead", "course", "inline", "hostile"]
    notebooks = [p for p in sorted((ROOT / "solutions").glob("*.ipynb"))
                 if not args.only or any(p.stem == name or p.stem.startswith(f"{name}_")
                                         for name in args.only)]
    if not notebooks:
        parser.error(f"--only {' '.join(args.only)}: no such notebook in solutions/; give a "
                     "notebook's name or number, e.g. 01_permutation_invariance or 01")
    print(f"# Grading benchmark: {load()}")
    if "overhead" in sections:
        overhead(notebooks)
    if "course" in sections:
        course(notebooks)
    if "inline" in sections:
        inline(notebooks)
    if "hostile" in sections:
        hostile()


if __name__ == "__main__":
    main()
