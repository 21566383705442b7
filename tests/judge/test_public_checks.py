"""Public checks tell the truth: they never pass a catalogued wrong answer that a hidden test fails
on the public checks' own inputs, and a public check that fails because of another exercise's
mistake names that exercise.

What "on the public checks' own inputs" means here: every call a hidden test makes to the
learner's code (the exercise's name and its arguments, as the codec writes them) is one that a
public check of the same exercise makes too. Such a hidden test judges only answers the public
checks have seen; if it fails while every public check passes, the public checks accepted an
answer that the grader rejects, on the same inputs, and the learner is told "ok" where points
are lost. (A hidden test that also calls the learner on other inputs may fail on those, which
the public checks do not claim to cover.)

Each notebook's catalogue is judged in a process of its own (the suites import their fixtures,
and notebook 06's setup sets the Triton interpreter up) that runs the solution's setup and
exercise cells once and judges the solution, then forks a child per entry: the entry's source
replaces its exercise, and the tests run in the child through the same messages as the sandbox
(:func:`grader.sandbox.child.dispatch`), every call recorded per test. Which hidden tests call the
learner only on inputs the public checks also use is found once per notebook, on the solution;
for each entry only those run, with the public checks. Judging the solution before forking
imports the suite once and warms its memoised references (and the suite's ``SHARED_REFERENCES``
are computed then), so that no entry's child computes them again: entries took 0.7 s each, and
notebook 05's challenge entries 3 s, with the suite imported and its references computed in
every child. No sandbox is started; a call that
runs past :data:`CALL_SECONDS` raises in the learner's code (a catalogued answer that never
returns), and an entry whose child dies (memory corrupted by an out-of-bounds Triton kernel) is
left to the grader, which reports the crash.
"""
from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys

import pytest

from tests.catalogue import modules
from tests.conftest import ROOT, SOLUTIONS, solution_notebooks

CALL_SECONDS = 20.0
"""Longest one call into a catalogued answer may take before it raises TimeoutError."""


def _key(name: str, args: tuple, kwargs: dict) -> str:
    from grader.sandbox import codec

    data = codec.encode({"name": name, "args": list(args), "kwargs": kwargs})
    return hashlib.sha256(data).hexdigest()


def _raise_timeout(signum, frame):
    raise TimeoutError(f"the call ran past {CALL_SECONDS:g} s")


def _recording(namespace: dict, calls: list[set[str]]):
    """``connect`` for :func:`grader.judge.proxy.run_suite`: calls into ``namespace`` in this process,
    each test's calls (keys) recorded in ``calls``, one set per test in the order they run."""
    from grader.sandbox import child as _child, codec
    from grader.sandbox.parent import result_of_reply

    def call(name: str, args: tuple, kwargs: dict, timeout: float):
        calls[-1].add(_key(name, args, kwargs))
        request = codec.encode({"op": "call", "name": name, "args": list(args), "kwargs": kwargs})
        signal.signal(signal.SIGALRM, _raise_timeout)
        signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
        try:
            reply = _child.dispatch(namespace, request)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return result_of_reply(name, codec.decode(reply))

    def connect(exercise: str):
        calls.append(set())
        return call, []

    return connect


def _selecting(keep):
    """Make :class:`grader.judge.proxy.JudgePlugin` run the tests ``keep(exercise, public, name)``
    accepts (one run for an entry's own tests and the public checks of the exercises that call
    it)."""
    from grader.judge import proxy as judge

    def modifyitems(self, config, items):
        order = {name: index for index, name in enumerate(self._order)}
        chosen = [item for item in items
                  if keep(judge._exercise_marker(item)[0], judge._exercise_marker(item)[2], item.name)]
        chosen.sort(key=lambda item: order.get(judge._exercise_marker(item)[0], len(order)))
        items[:] = chosen

    judge.JudgePlugin.pytest_collection_modifyitems = modifyitems


def _on_public_inputs(suite: str, cells: dict, exercises: set[str]) -> tuple[set[str], set[str]]:
    """The hidden tests of ``exercises`` that call the solution only on inputs a public check of
    their exercise calls it on too: the only ones that can fail on the public checks' own inputs
    (the others are not run for every entry, which keeps this test lean); and the public checks
    of ``exercises``."""
    from grader.judge.proxy import run_suite

    _selecting(lambda exercise, public, name: exercise in exercises)
    calls: list[set[str]] = []
    results = run_suite(suite, _recording(dict(cells), calls))
    seen: dict[str, set[str]] = {}
    for result, called in zip(results, calls):
        if result.public:
            seen.setdefault(result.exercise, set()).update(called)
    return ({r.name for r, c in zip(results, calls)
             if not r.public and c and c <= seen.get(r.exercise, set())},
            {r.name for r in results if r.public})


def _shared_references(suite: str, tests: set[str]) -> None:
    """Compute, in this process, the memoised references of ``tests`` that the suite lists in
    ``SHARED_REFERENCES`` (pure functions of its constants): every entry's child inherits them
    instead of computing them again."""
    import sys as _sys

    from grader.judge.proxy import suite_path

    path = str(suite_path(suite))
    module = next((m for m in list(_sys.modules.values()) if getattr(m, "__file__", None) == path), None)
    for name, compute in getattr(module, "SHARED_REFERENCES", {}).items():
        if name in tests:
            compute()


def _judge_entry(suite: str, wrong, cells: dict, candidates: set[str]) -> dict:
    """One catalogued answer's record (see :func:`judge_catalogue`), judged in this process:
    the public checks of its exercise and of those that call it, and the hidden tests of its
    exercise among ``candidates``."""
    from grader.inline import _rebound
    from grader.judge.proxy import run_suite

    # a fresh copy of the cells' globals, the functions looking their globals up in it (so that
    # an exercise calling the replaced one calls the entry's)
    namespace = {"__name__": "__main__", **cells}
    namespace.update({k: _rebound(v, cells, namespace) for k, v in cells.items()})
    record = {"exercise": wrong.exercise, "mistake": wrong.mistake}
    try:
        exec(compile(wrong.source, f"<{wrong.mistake}>", "exec"), namespace)
    except Exception as exc:  # noqa: BLE001 - an entry that does not load: the grader's case
        return {**record, "load_error": f"{type(exc).__name__}: {exc}"}
    callers = {name for name, value in cells.items() if name != wrong.exercise
               and wrong.exercise in getattr(getattr(value, "__code__", None), "co_names", ())}
    _selecting(lambda exercise, public, name: (public and exercise in {wrong.exercise, *callers})
               or (exercise == wrong.exercise and name in candidates))
    calls: list[set[str]] = []
    results = run_suite(suite, _recording(namespace, calls))
    assert len(calls) == len(results), (wrong.mistake, len(calls), len(results))
    tested = [(r, c) for r, c in zip(results, calls) if r.exercise == wrong.exercise]
    passes = all(r.status == "passed" for r, _ in tested if r.public) \
        and any(r.public for r, _ in tested)
    seen = set().union(*(c for r, c in tested if r.public))
    return {**record, "public_passes": passes,
            "failing": [{"exercise": r.exercise, "name": r.name, "output": r.output}
                        for r in results if r.public and r.status != "passed"],
            "hidden_failed": [r.name for r, _ in tested if not r.public and r.status != "passed"],
            "slipped": [r.name for r, c in tested if passes and not r.public
                        and r.status != "passed" and c and c <= seen]}


def judge_catalogue(suite: str, exercises: set[str] | None = None) -> list[dict]:
    """Judge every catalogued answer of ``suite`` (of ``exercises``, by default all), each in a
    child forked from this process. This process holds the solution's cells, judged once on the
    tests of ``exercises`` (which warms the suite's memoised references, and those it lists in
    ``SHARED_REFERENCES``, for every child); a catalogued answer may crash its process, as a
    Triton kernel that writes out of bounds does. One record per entry: its exercise and mistake,
    the public checks it fails (its exercise's, and those of the exercises whose solution calls its
    exercise, with what they say), and the hidden tests of its exercise that fail on the public
    checks' own inputs while every public check of its exercise passes; ``crashed`` instead when
    its process died."""
    import importlib
    import os

    from tests.conftest import load_solution

    import torch

    torch.set_num_threads(1)  # one thread per child (and none left mid-lock in a fork)
    os.environ["GRADER_SANDBOX"] = "1"  # check() in the cells does nothing, as in the sandbox
    solution = vars(load_solution(suite))
    catalogue = importlib.import_module(f"tests.catalogue.{suite}")
    entries = [w for w in catalogue.WRONG_ANSWERS if exercises is None or w.exercise in exercises]
    cells = solution[catalogue.WRONG_ANSWERS[0].exercise].__globals__  # the cells' globals
    candidates, public = _on_public_inputs(suite, cells, {w.exercise for w in entries})
    _shared_references(suite, candidates | public)
    _expect_one_thread(suite)
    records = []
    for wrong in entries:
        record = _in_child(lambda: _judge_entry(suite, wrong, cells, candidates))
        named = {"exercise": wrong.exercise, "mistake": wrong.mistake}
        records.append(record if record and ("slipped" in record or "load_error" in record)
                       else {**named, **(record or {"crashed": True})})
    return records


def _expect_one_thread(suite: str) -> None:
    """Raise unless this process runs one thread: every entry's child is forked from it, and a
    fork copies no other thread (a lock one held stays held in the child). A thread that has been
    joined is given up to two seconds to be gone: ``Thread.join`` returns once the thread has
    finished its Python code, a moment before the system's thread exits (suite 05's scoring model
    runs its passes on threads of their own, joined before it returns)."""
    import os
    import time

    def count() -> int:
        return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1
    deadline = time.monotonic() + 2.0
    while (threads := count()) != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    if threads != 1:
        raise RuntimeError(f"judging the solution of {suite} left {threads} threads in the process "
                           "the entries are forked from; judge the solution in a child instead")


def _in_child(work):
    """``work()``'s JSON value, computed in a child forked from this process (which itself never
    runs the tests, so no fork copies a thread pool mid-lock); ``{"error": ...}`` when it raised,
    ``None`` when the child died first."""
    import os

    read, write = os.pipe()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            data = json.dumps(work()).encode()
        except BaseException as exc:  # noqa: BLE001 - the parent reads what happened
            data = json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
        with os.fdopen(write, "wb") as stream:
            stream.write(data)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        data = stream.read()
    os.waitpid(pid, 0)
    return json.loads(data) if data else None


def _notebooks():
    return [pytest.param(name, id=name) for name, _ in modules(solution_notebooks())]


def _challenges(suite: str) -> set[str]:
    """The notebook's challenge exercises: their hidden tests score the learner's design on data
    held out from the public check (other windows, other noise draws), so a design that clears
    the public check's low threshold may miss a hidden one on the same call by design."""
    from grader.notebook.read import read_notebook, top_level_names

    notebook = read_notebook(SOLUTIONS / f"{suite}.ipynb")
    return {name for cell in notebook.cells if cell.metadata.get("exercise_kind") == "challenge"
            for name in top_level_names(cell.source) if not name.startswith("_")}


@pytest.mark.slow
@pytest.mark.parametrize("suite", _notebooks())
def test_public_checks_tell_the_truth(suite):
    """For every catalogued wrong answer of the notebook: when its exercise's public checks all
    pass, no hidden test fails on their own inputs (a challenge's hidden tests score on held-out
    data, :func:`_challenges`); and a public check of an exercise whose
    solution calls the wrong one, if it fails, names the exercise to fix in what it says. (A failing
    public check of the entry's own exercise is reported under that exercise's name, by check()
    and by every report.)"""
    process = subprocess.run([sys.executable, "-m", "tests.judge.test_public_checks", suite], cwd=ROOT,
                             text=True, capture_output=True, timeout=1800)
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-3000:]
    records = json.loads(process.stdout.splitlines()[-1])
    assert records and not [r for r in records if "load_error" in r or "error" in r], records
    records = [r for r in records if "crashed" not in r]  # (the grader reports the crash)
    challenges = _challenges(suite)
    slipped = [f"{r['exercise']} / {r['mistake']}: its public checks pass, and the hidden "
               f"{', '.join(r['slipped'])} fail on their inputs" for r in records
               if r["slipped"] and r["exercise"] not in challenges]
    misleading = [f"{r['exercise']} / {r['mistake']}: the public check {f['name']} of "
                  f"{f['exercise']} fails without naming {r['exercise']}: {f['output'][:200]!r}"
                  for r in records for f in r["failing"]
                  if f["exercise"] != r["exercise"] and r["exercise"] not in f["output"]]
    assert not slipped + misleading, "\n".join(slipped + misleading)


if __name__ == "__main__":  # python -m tests.judge.test_public_checks NOTEBOOK [EXERCISE ...]
    sys.stdout.write(json.dumps(judge_catalogue(sys.argv[1], set(sys.argv[2:]) or None)) + "\n")
