"""``check(name)``: a learner runs an exercise's public checks from inside the notebook."""
from __future__ import annotations

import sys
from typing import Any

from grader import _child, codec
from grader.judge import known_suites, run_suite, suite_path
from grader.recorded import hidden_note
from grader.results import PASSED
from grader.sandbox import result_of_reply


def _in_process(namespace: dict):
    """A call into ``namespace`` through the same messages the sandbox uses (no process)."""

    def call(name: str, args: tuple, kwargs: dict, timeout: float) -> Any:
        request = codec.encode({"op": "call", "name": name, "args": list(args), "kwargs": kwargs})
        return result_of_reply(name, codec.decode(_child.dispatch(namespace, request)))

    return lambda exercise: (call, [])


def suites_for(exercise: str) -> list[str]:
    """The suites whose source names ``exercise`` (so check() collects only those)."""
    return [s for s in known_suites() if f'"{exercise}"' in suite_path(s).read_text()]


def check(name: str, namespace: dict | None = None) -> bool:
    """Run the public checks of exercise ``name`` on the function defined in the notebook.

    Prints one line per check and a summary, and returns True when every public check passed.
    Public checks are a subset of what the grader runs: passing them is not full marks.
    ``namespace`` defaults to the caller's globals (the notebook's).
    """
    if namespace is None:
        namespace = sys._getframe(1).f_globals
    results = []
    for suite in suites_for(name):
        results += run_suite(suite, _in_process(namespace), exercises={name}, public_only=True)
    if not results:
        print(f"{name}: no public checks found; check the spelling of the exercise's name")
        return False
    passed = sum(r.status == PASSED for r in results)
    for result in results:
        mark = "ok  " if result.status == PASSED else "FAIL"
        print(f"  {mark} {result.description or result.name}")
        if result.status != PASSED:
            print(f"       {result.output}")
    failing = [r.description or r.name for r in results if r.status != PASSED]
    verdict = f"{name}: {passed} of {len(results)} public checks passed"
    if failing:
        verdict += f"; failing: {'; '.join(failing)}"
    print(f"{verdict}. {hidden_note()}")
    return not failing
