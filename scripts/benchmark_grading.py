#!/usr/bin/env python3
"""Print what grading costs: wall time and peak memory, against bare nbval and one torch import.

    python scripts/benchmark_grading.py [--section overhead|course|profile|inline|memory|hostile ...]
        [--only NOTEBOOK ...] [--case HOSTILE_CASE ...] [--slowest N]

Sections (all by default):

- ``overhead``: per notebook, executing the solution with bare nbval (``pytest --nbval-lax``);
  grading the solution (``python -m grader check``, execution included); the hidden tests alone
  (``--skip-execution``); grading the released stub and the solution with one catalogued wrong
  answer. Each run reports its wall time; the stub's and the wrong answer's also the peak
  proportional set size (PSS, shared pages split between the processes that map them) of the
  grader's whole process tree, sampled from ``/proc/PID/smaps_rollup`` every 50 ms. The runs that
  the ratios compare are not sampled: the sampling slows what it watches (9% on the hidden tests
  of all six), and the memory section measures the solutions' memory in runs of its own.
  Targets: grading all six notebooks within 1.10x bare nbval; hidden tests alone within 10x one
  ``import torch``; peak PSS within 768 MiB. It
  ends with the two ratios and the machine's load; ``--repeat N`` runs bare nbval, grading and
  the hidden tests N times each, one after the other, and takes the medians (a loaded machine's
  figures vary by a third from run to run; a ratio of two figures of the same run varies less).
- ``course``: the same in one run each over all the notebooks (bare nbval, ``check``, ``check
  --skip-execution``), the grader's own start-up paid once, as a learner or an autograder runs it;
  timed only (the memory section's last two rows are the same runs, sampled).
- ``inline``: the time of every exercise's inline ``check(name)`` on the solution (target: 2 s).
- ``memory``: the peak PSS of grading (execution included) each notebook's solution and its
  first catalogued wrong answer, then all the notebooks in one run (one learner), with and
  without execution, with whether bubblewrap held and the processes at each peak (``role
  PSS/USS`` in MiB; USS: the pages only that process maps). Target: at most 768 MiB (Gradescope's
  default box) for every run.
- ``profile``: where the hidden tests' seconds go, all the notebooks in one ``--skip-execution``
  run inside this script's own child (nothing measured runs twice; it starts the sandbox's
  zygote first, as ``check --skip-execution`` does): the judge's start and ``import torch``, then
  per suite pytest's collection, the wait for the notebook's template (the
  sandbox's zygote imports torch once per run and forks one template per notebook), the calls
  into the learner's sandbox (their own compute and the black boxes' callbacks) and the judge's
  own compute (references, comparisons), with the slowest tests (``--slowest N`` lists N per
  suite, each with its seconds in the learner's sandbox).
- ``hostile``: notebook 01 with one exercise that never returns, ignores SIGTERM, allocates until
  the memory limit, prints without end, or calls ``os._exit``; graded with execution. Target:
  each within 3x the solution's grading time and 3 minutes, other exercises' scores unchanged.
  The solution is graded before the first case and after each (a case's ratio is against the
  mean of the two beside it). ``--case`` picks cases by the start of their name (e.g. ``--case
  allocates``).

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

from grader.notebook.execute import UNUSED_PLUGINS  # noqa: E402
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


BARE_PLUGINS = [option for name in UNUSED_PLUGINS for option in ("-p", f"no:{name}")]
"""Bare nbval starts without the plugins the grader's own nbval child leaves out (equal
conditions: the ratio measures grading, not pytest's plugins)."""


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def _memory_kib(pid: int) -> tuple[int, int]:
    """(PSS, USS) of one process in KiB, from ``/proc/PID/smaps_rollup`` (0, 0 once it is gone).
    USS: the pages only this process maps (what killing it would give back)."""
    pss = uss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
                elif line.startswith(("Private_Clean:", "Private_Dirty:")):
                    uss += int(line.split()[1])
    except OSError:
        pass
    return pss, uss


def _pss_kib(pid: int) -> int:
    return _memory_kib(pid)[0]


def _role(pid: int, parents: dict[int, int], commands: dict[int, str]) -> str:
    """A short name for a process of the grader's tree: what its command line runs, and for a
    forked process (the same command line as its parent's) what it was forked from."""
    def command(p: int) -> str:
        if p not in commands:
            try:
                with open(f"/proc/{p}/cmdline", "rb") as handle:
                    words = handle.read().split(b"\0")
            except OSError:
                words = []
            text = " ".join(w.decode(errors="replace") for w in words if w)
            if text.startswith("bwrap") or "/bwrap " in text:
                name = "bwrap"
            elif "grader.sandbox.child" in text:
                name = "sandbox " + ("zygote" if "--zygote" in text else
                                     "template" if "--template" in text else "child")
            elif "ipykernel" in text:
                name = "notebook kernel"
            elif "--nbval" in text:
                name = "nbval (pytest)"
            elif "-m grader" in text or "--profile-worker" in text:
                name = "judge (grader)"
            else:
                name = text[:40] or "(exiting)"
            commands[p] = name
        return commands[p]

    name, depth, here = command(pid), 0, pid
    raw = {}

    def cmdline(p: int) -> bytes:
        if p not in raw:
            try:
                with open(f"/proc/{p}/cmdline", "rb") as handle:
                    raw[p] = handle.read()
            except OSError:
                raw[p] = b""
        return raw[p]
    while parents.get(here) and cmdline(parents[here]) == cmdline(here) and cmdline(here):
        depth, here = depth + 1, parents[here]
    if name == "sandbox zygote":
        return ["sandbox zygote", "template (forked from the zygote)", "sandbox (forked)"][
            min(depth, 2)]
    if name == "sandbox template":
        return ["sandbox template", "sandbox (forked)"][min(depth, 1)]
    return name + (f" (fork {depth})" if depth else "")


def measure(command: list[str], cwd: Path = ROOT, *, memory: bool = True) -> dict:
    """Run ``command``; its wall time, exit code, output, and with ``memory`` the peak PSS and
    process count of its tree (sampled every 50 ms; ``pss_mib`` is NaN without ``memory``).

    The sampling slows what it watches: each pass reads every process's ``smaps_rollup``, which
    walks its page tables under its memory-map lock, and ``/proc`` for the tree. The hidden tests of
    all six notebooks took 10.3 s sampled against 9.4 s not (four paired runs, medians), so the
    timings that the ratios compare are taken without it (``memory=False``) and the memory in runs
    of their own."""
    if not memory:
        start = time.monotonic()
        process = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return {"seconds": time.monotonic() - start, "code": process.returncode,
                "output": process.stdout.decode(errors="replace"), "pss_mib": float("nan"),
                "processes": 0, "at_peak": [], "stages_mib": {}, "stages_at_peak": {}}
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peak = {"pss": 0, "processes": 0, "at_peak": []}
    stages: dict[str, tuple[int, list]] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            parents = supervise._parents()
            tree = supervise.descendants(process.pid, parents) | {process.pid}
            sizes = {pid: _memory_kib(pid) for pid in tree}
            total = sum(pss for pss, _ in sizes.values())
            commands: dict[int, str] = {}
            roles = {pid: _role(pid, parents, commands) for pid, (pss, _) in sizes.items() if pss}
            # The stage: executing (nbval or a notebook's kernel is alive) or judging.
            stage = ("execution" if any(r.startswith(("notebook kernel", "nbval"))
                                        for r in roles.values()) else "judging")
            if total > stages.get(stage, (0, []))[0]:
                stages[stage] = (total, sorted(
                    ((roles[pid], pss / 1024, uss / 1024)
                     for pid, (pss, uss) in sizes.items() if pid in roles), key=lambda row: -row[1]))
            if total > peak["pss"]:
                peak["pss"], peak["at_peak"] = total, stages[stage][1]
            peak["processes"] = max(peak["processes"], len(tree))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    done.set()
    sampler.join()
    return {"seconds": time.monotonic() - start, "code": process.returncode,
            "output": output.decode(errors="replace"), "pss_mib": peak["pss"] / 1024,
            "processes": peak["processes"], "at_peak": peak["at_peak"],
            "stages_mib": {stage: kib / 1024 for stage, (kib, _) in stages.items()},
            "stages_at_peak": {stage: rows for stage, (_, rows) in stages.items()}}


def _rows(rows: list) -> str:
    return ", ".join(f"{role} {pss:.0f}/{uss:.0f}" for role, pss, uss in rows if pss >= 1)


def at_peak(result: dict) -> str:
    """The processes of the tree at the peak of each stage (execution: nbval or a notebook's
    kernel is alive; judging: the rest), ``role PSS/USS`` in MiB, largest first."""
    return "; ".join(f"{stage} {result['stages_mib'][stage]:.0f}: {_rows(rows)}"
                     for stage, rows in sorted(result.get("stages_at_peak", {}).items()))


def grade(path: Path, *extra: str, memory: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "results.json"
        result = measure([sys.executable, "-m", "grader", "check", str(path), "--json",
                          str(report), *extra], memory=memory)
        data = json.loads(report.read_text()) if report.is_file() else {}
    result["score"] = data.get("score")
    result["tests"] = data.get("tests", [])
    return result


def bare_nbval(path: Path) -> dict:
    return measure([sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env",
                    *BARE_PLUGINS, "-q", str(path)], memory=False)


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


def _median_run(runs: list[dict]) -> dict:
    """The run of median wall time among ``runs`` (the lower middle one of an even number)."""
    return sorted(runs, key=lambda r: r["seconds"])[(len(runs) - 1) // 2]


def _timed_runs(path: Path, repeat: int) -> tuple[dict, dict, dict]:
    """Bare nbval, grading and the hidden tests alone of ``path``, each the median of ``repeat``
    runs taken in turn (nbval, grade, hidden, nbval, ...), so that a change in the machine's load
    weighs on the three alike."""
    runs: dict[str, list[dict]] = {"nbval": [], "grade": [], "hidden": []}
    for _ in range(repeat):
        runs["nbval"].append(bare_nbval(path))
        runs["grade"].append(grade(path, memory=False))
        runs["hidden"].append(grade(path, "--skip-execution", memory=False))
    return _median_run(runs["nbval"]), _median_run(runs["grade"]), _median_run(runs["hidden"])


def print_ratios(totals: dict, torch_s: float) -> None:
    """The two targets of grading's speed, over the notebooks benchmarked, with the load."""
    grading = totals["grade"] / totals["nbval"]
    hidden = totals["hidden"] / torch_s
    print(f"grading / bare nbval: {totals['grade']:.1f} s / {totals['nbval']:.1f} s = {grading:.2f} "
          f"(target <= 1.10); hidden tests / one import torch: {totals['hidden']:.1f} s / "
          f"{torch_s:.2f} s = {hidden:.1f}x (target <= 10x); {load()}")


def overhead(notebooks: list[Path], repeat: int = 1) -> None:
    torch_s = torch_import_seconds()
    print(f"\n## Overhead ({load()}); one `import torch`: {torch_s:.2f} s"
          + (f"; medians of {repeat} runs" if repeat > 1 else ""))
    header = (f"{'notebook':30} {'bare nbval':>10} {'grade':>8} {'ratio':>6} {'hidden':>8} "
              f"{'stub':>8} {'wrong':>8} {'peak PSS MiB (stub/wrong)':>26}")
    print(header)
    totals = {"nbval": 0.0, "grade": 0.0, "hidden": 0.0}
    worst_pss = 0.0
    for path in notebooks:
        suite = path.stem
        nbval, graded, hidden = _timed_runs(path, repeat)
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
        runs = [stub, wrong]  # the three timed runs are not sampled (see measure)
        worst_pss = max([worst_pss] + [r["pss_mib"] for r in runs if r["pss_mib"] == r["pss_mib"]])
        pss = "/".join(f"{r['pss_mib']:.0f}" for r in runs)
        print(f"{suite:30} {nbval['seconds']:9.1f}s {graded['seconds']:7.1f}s "
              f"{graded['seconds'] / nbval['seconds']:6.2f} {hidden['seconds']:7.1f}s "
              f"{stub['seconds']:7.1f}s {wrong['seconds']:7.1f}s {pss:>26}   score {graded['score']}")
    print(f"{'sum of the rows':30} {totals['nbval']:9.1f}s {totals['grade']:7.1f}s "
          f"{totals['grade'] / totals['nbval']:6.2f} {totals['hidden']:7.1f}s")
    print(f"worst peak PSS of the stubs and wrong answers: {worst_pss:.0f} MiB (target <= 768; the "
          f"solutions' in the memory section)")
    torch_s = min(torch_s, torch_import_seconds())  # the best of six, before and after
    print_ratios(totals, torch_s)


def course(notebooks: list[Path]) -> None:
    """A learner's notebooks in one run each, as a learner or an autograder runs them (timed
    without memory sampling: the memory section grades the same runs with it)."""
    torch_s = torch_import_seconds()
    print(f"\n## The course in one run ({load()}); one `import torch`: {torch_s:.2f} s")
    paths = [str(p) for p in notebooks]
    nbval = measure([sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env",
                     *BARE_PLUGINS, "-q", *paths], memory=False)
    with tempfile.TemporaryDirectory() as scratch:
        graded = measure([sys.executable, "-m", "grader", "check", *paths, "--json",
                          str(Path(scratch) / "r.json")], memory=False)
        hidden = measure([sys.executable, "-m", "grader", "check", *paths, "--skip-execution",
                          "--json", str(Path(scratch) / "h.json")], memory=False)
    print(f"bare nbval {nbval['seconds']:.1f} s; grading {graded['seconds']:.1f} s; hidden tests "
          f"alone {hidden['seconds']:.1f} s (their peak PSS: the memory section's last two rows)")
    print_ratios({"nbval": nbval["seconds"], "grade": graded["seconds"],
                  "hidden": hidden["seconds"]}, min(torch_s, torch_import_seconds()))


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


def _confined(result: dict) -> str:
    """Whether the run's report says bubblewrap held (``-`` where the report was not written)."""
    output = result.get("confinement") or ""
    return "-" if not output else ("yes" if output.startswith("bubblewrap") else "NO")


def _graded_with_memory(command: list[str]) -> dict:
    """``measure`` of a ``grader check`` command that writes its JSON report to a scratch file;
    adds the report's score and which confinement held."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "results.json"
        result = measure([*command, "--json", str(report)])
        data = json.loads(report.read_text()) if report.is_file() else {}
    held = [line.split(": ", 1)[1] for line in str(data.get("output", "")).splitlines()
            if line.startswith("Learner code confined by: ")]
    result.update(score=data.get("score"), confinement=held[0] if held else "")
    return result


def memory(notebooks: list[Path]) -> None:
    """Peak PSS of grading each notebook (solution, first catalogued wrong answer) and of all of
    them in one run, as one learner's grading on one box."""
    print(f"\n## Peak PSS of grading, execution included ({load()}); target <= 768 MiB")
    print(f"{'notebook':30} {'solution MiB':>12} {'wrong MiB':>10} {'score':>6} {'seconds':>8} "
          f"{'processes':>9} {'bubblewrap':>10}")
    worst = 0.0
    check = [sys.executable, "-m", "grader", "check"]
    for path in notebooks:
        suite = path.stem
        solution = _graded_with_memory([*check, str(path)])
        wrong = {"pss_mib": float("nan")}
        try:
            catalogue = importlib.import_module(f"tests.catalogue.{suite}").WRONG_ANSWERS
        except ModuleNotFoundError:
            catalogue = []
        if catalogue:
            with tempfile.TemporaryDirectory() as folder:
                wrong = _graded_with_memory([*check, str(with_exercise(
                    suite, catalogue[0].exercise, catalogue[0].source, Path(folder)))])
        worst = max([worst] + [r["pss_mib"] for r in (solution, wrong)
                               if r["pss_mib"] == r["pss_mib"]])
        print(f"{suite:30} {solution['pss_mib']:12.0f} {wrong['pss_mib']:10.0f} "
              f"{solution['score']!s:>6} {solution['seconds']:7.1f}s {solution['processes']:9d} "
              f"{_confined(solution):>10}", flush=True)
        print(f"    at the solution's peak: {at_peak(solution)}")
        if "at_peak" in wrong:
            print(f"    at the wrong answer's peak: {at_peak(wrong)}", flush=True)
    for label, extra in ((f"all {len(notebooks)} in one run", []),
                         (f"all {len(notebooks)}, hidden tests alone", ["--skip-execution"])):
        together = _graded_with_memory([*check, *map(str, notebooks), *extra])
        worst = max(worst, together["pss_mib"])
        print(f"{label:30} {together['pss_mib']:12.0f} {'':10} "
              f"{together['score']!s:>6} {together['seconds']:7.1f}s {together['processes']:9d} "
              f"{_confined(together):>10}")
        print(f"    at the peak: {at_peak(together)}", flush=True)
    print(f"worst peak PSS: {worst:.0f} MiB ({'within' if worst <= 768 else 'ABOVE'} 768 MiB); "
          f"{load()}")


def hostile(cases: list[str] | None = None) -> None:
    """Each hostile case of notebook 01 between two gradings of the solution (solution, case,
    solution, case, ..., solution): a case's ratio is against the mean of the two solution runs
    beside it, so that a change of the machine's load weighs on both alike."""
    suite = "01_permutation_invariance"
    print(f"\n## Hostile submissions of notebook 01, graded with execution ({load()})")
    chosen = [case for case in HOSTILE if not cases or any(case.startswith(c) for c in cases)]
    solution = grade(ROOT / "solutions" / f"{suite}.ipynb")
    reference = {t["name"]: t["score"] for t in solution["tests"]}
    print(f"{'case':28} {'seconds':>8} {'solution s':>10} {'x solution':>10} {'peak PSS MiB':>13} "
          f"{'others unchanged':>17}  load (1 min)")
    before, worst = solution["seconds"], 0.0
    for case in chosen:
        with tempfile.TemporaryDirectory() as folder:
            result = grade(with_exercise(suite, EXERCISE, HOSTILE[case], Path(folder)))
        after = grade(ROOT / "solutions" / f"{suite}.ipynb")["seconds"]
        others = all(reference.get(t["name"]) == t["score"] for t in result["tests"]
                     if f"/ {EXERCISE} /" not in t["name"] and t["name"] in reference)
        beside = (before + after) / 2
        worst = max(worst, result["seconds"] / beside)
        print(f"{case:28} {result['seconds']:7.1f}s {beside:9.1f}s {result['seconds'] / beside:10.2f} "
              f"{result['pss_mib']:13.0f} {str(others):>17}  {os.getloadavg()[0]:.2f}", flush=True)
        before = after
    print(f"worst: {worst:.2f} times the solution's grading (target <= 3); {load()}")


def _profile_worker(paths: list[str], slowest: int = 3) -> None:
    """The ``profile`` section's child: grade ``paths`` without execution, timing each stage.

    ``slowest``: how many of each suite's slowest tests to name (with their seconds in the
    learner's sandbox, ``calls``, beside their whole time); 3 fit on the suite's row, more are
    listed below it.
    """
    started = time.monotonic()
    from grader.sandbox import parent

    zygote = parent.start_zygote()  # as `check --skip-execution` does, before the judge's imports
    before_torch = time.monotonic()
    import torch  # noqa: F401 - the judge's own import, timed
    torch_s = time.monotonic() - before_torch
    import pytest

    from grader import grade
    from grader.judge import proxy

    suite: list[str] = [""]
    current: list[str] = [""]
    rows: dict[str, dict] = {}
    test_calls: dict[tuple[str, str], float] = {}

    class Timer:
        def __init__(self) -> None:
            self.entered = time.monotonic()
            self.collected = self.entered
            self.tests: dict[str, float] = {}

        def pytest_collection_finish(self, session) -> None:
            self.collected = time.monotonic()

        @pytest.hookimpl(wrapper=True)
        def pytest_runtest_protocol(self, item, nextitem):
            start = time.monotonic()
            current[0] = item.name
            try:
                return (yield)
            finally:
                current[0] = ""
                self.tests[item.name] = time.monotonic() - start

    def timed(owner, name: str, key: str) -> None:
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            start = time.monotonic()
            try:
                return original(*args, **kwargs)
            finally:
                row = rows.setdefault(suite[0], {})
                row[key] = row.get(key, 0.0) + time.monotonic() - start
                if key == "calls" and current[0]:
                    where = (suite[0], current[0])
                    test_calls[where] = test_calls.get(where, 0.0) + time.monotonic() - start
        setattr(owner, name, wrapper)

    timed(grade._Connections, "_started", "template wait")
    timed(parent.Sandbox, "start", "sandbox forks")
    timed(parent.Sandbox, "call", "calls")
    timers: dict[str, Timer] = {}
    main = pytest.main

    def pytest_main(args, plugins=()):
        timers[suite[0]] = timer = Timer()
        return main(args, plugins=[*plugins, timer])
    proxy.pytest.main = pytest_main
    run_suite = grade.run_suite

    def suite_run(name, *args, **kwargs):
        suite[0] = name
        start = time.monotonic()
        try:
            return run_suite(name, *args, **kwargs)
        finally:
            rows.setdefault(name, {})["suite"] = time.monotonic() - start
    grade.run_suite = suite_run
    before = time.monotonic()
    grade.grade_notebooks([Path(p) for p in paths], skip_execution=True, zygote=zygote)
    total = time.monotonic() - before
    print(f"judge's start (interpreter, grader, import torch {torch_s:.2f} s): "
          f"{before - started:.2f} s; judging {total:.2f} s")
    print(f"{'suite':30} {'all':>6} {'collect':>8} {'template':>9} {'forks':>6} {'calls':>6} "
          f"{'judge':>6}  slowest tests")
    sums: dict[str, float] = {}
    for name, timer in timers.items():
        row = rows.get(name, {})
        collect = timer.collected - timer.entered
        parts = {"all": row.get("suite", 0.0), "collect": collect,
                 "template": row.get("template wait", 0.0), "forks": row.get("sandbox forks", 0.0),
                 "calls": row.get("calls", 0.0)}
        parts["judge"] = parts["all"] - sum(v for k, v in parts.items() if k != "all")
        for key, value in parts.items():
            sums[key] = sums.get(key, 0.0) + value
        ranked = sorted(timer.tests.items(), key=lambda kv: -kv[1])
        print(f"{name:30} " + " ".join(f"{parts[k]:{w}.2f}" for k, w in
                                        (("all", 6), ("collect", 8), ("template", 9), ("forks", 6),
                                         ("calls", 6), ("judge", 6)))
              + "  " + ", ".join(f"{n[:36]} {v:.2f}" for n, v in ranked[:min(slowest, 3)]))
        if slowest > 3:
            for test, seconds in ranked[:slowest]:
                print(f"    {seconds:6.2f} s ({test_calls.get((name, test), 0.0):5.2f} s in calls) "
                      f"{test}")
    print(f"{'sum':30} " + " ".join(f"{sums.get(k, 0):{w}.2f}" for k, w in
                                    (("all", 6), ("collect", 8), ("template", 9), ("forks", 6),
                                     ("calls", 6), ("judge", 6))))


def profile(notebooks: list[Path], slowest: int = 3) -> None:
    """Where the hidden tests' time goes (see the module docstring), beside one ``import torch``."""
    torch_s = torch_import_seconds()
    print(f"\n## Profile of the hidden tests alone, all in one run ({load()}); one `import torch` "
          f"(a fresh interpreter): {torch_s:.2f} s")
    print("template: waiting for the notebook's template (forked from the zygote, loading the "
          "cells); forks: a sandbox per exercise; calls: in the learner's sandbox, callbacks "
          "included; judge: the rest (references, comparisons, pytest)")
    result = measure([sys.executable, str(Path(__file__).resolve()), "--profile-worker",
                      str(slowest), *map(str, notebooks)])
    print(result["output"].rstrip())
    print(f"wall time of the run {result['seconds']:.1f} s = {result['seconds'] / torch_s:.1f}x one "
          f"`import torch`; peak PSS {result['pss_mib']:.0f} MiB; {load()}")
    print(f"at the peak (PSS/USS MiB): {at_peak(result)}")


def main() -> None:
    if sys.argv[1:2] == ["--profile-worker"]:
        _profile_worker(sys.argv[3:], int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", action="append",
                        choices=["overhead", "course", "profile", "inline", "memory", "hostile"])
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="overhead: run bare nbval, grading and the hidden tests N times each "
                             "and print the medians (default 1)")
    parser.add_argument("--only", action="append", metavar="NOTEBOOK",
                        help="a notebook's name or number, e.g. 01_permutation_invariance or 01 "
                             "(repeatable)")
    parser.add_argument("--case", action="append", metavar="HOSTILE_CASE",
                        help="hostile cases whose names start with this, e.g. allocates "
                             f"(repeatable; default: all of {', '.join(HOSTILE)})")
    parser.add_argument("--slowest", type=int, default=3, metavar="N",
                        help="profile: list each suite's N slowest tests with their seconds in "
                             "the learner's sandbox (default 3, on the suite's row)")
    args = parser.parse_args()
    sections = args.section or ["overhead", "course", "profile", "inline", "memory", "hostile"]
    notebooks = [p for p in sorted((ROOT / "solutions").glob("*.ipynb"))
                 if not args.only or any(p.stem == name or p.stem.startswith(f"{name}_")
                                         for name in args.only)]
    if not notebooks:
        parser.error(f"--only {' '.join(args.only)}: no such notebook in solutions/; give a "
                     "notebook's name or number, e.g. 01_permutation_invariance or 01")
    print(f"# Grading benchmark: {load()}")
    if args.repeat < 1:
        parser.error(f"--repeat {args.repeat}: give a number of runs of at least 1")
    if "overhead" in sections:
        overhead(notebooks, args.repeat)
    if "course" in sections:
        course(notebooks)
    if "profile" in sections:
        profile(notebooks, args.slowest)
    if "inline" in sections:
        inline(notebooks)
    if "memory" in sections:
        memory(notebooks)
    if "hostile" in sections:
        hostile(args.case)


if __name__ == "__main__":
    main()
