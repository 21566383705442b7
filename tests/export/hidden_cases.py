"""Record the hidden cases of every exercise: what each hidden test hands the exercise, and what
the solution answers.

    python -m tests.export.hidden_cases OUT [SUITE ...]

Runs each suite's hidden tests (not its public checks) through the judge
(:func:`grader.judge.proxy.run_suite`) against the solution notebook, executed in this process
(trusted code), and writes to OUT one :mod:`grader.sandbox.codec` message: a list of
``{"suite", "exercise", "args", "kwargs", "answer"}``, at most :data:`PER_EXERCISE` distinct
cases of each exercise whose arguments are plain data (no function: a black box or a helper
handed over is left out) and whose answer is a value (not an exception). The starter's test
(tests/export/test_starter.py) calls every function a starter ships on them.
"""
from __future__ import annotations

import sys
from pathlib import Path

from grader.export.starter import ROOT, _solution_namespace
from grader.judge.proxy import IN_PUBLIC_CHECK, run_suite, suite_exercises
from grader.judge.selection import select_suites
from grader.sandbox import child, codec
from grader.sandbox.parent import StudentError, result_of_reply

PER_EXERCISE = 12
"""Distinct hidden cases kept per exercise (the first ones its tests make)."""


def _plain(value) -> bool:
    """Whether ``value`` holds no function (a black box, a fixture, the learner's own)."""
    if isinstance(value, (codec.BlackBox, codec.FixtureRef, codec.StudentRef)):
        return False
    if isinstance(value, codec.View):
        return True
    if isinstance(value, (list, tuple)):
        return all(map(_plain, value))
    if isinstance(value, dict):
        return all(map(_plain, value.values()))
    return not callable(value)


def cases(suite: str) -> list[dict]:
    """The hidden cases of ``suite``'s exercises, answered by the solution."""
    namespace = _solution_namespace(suite, ROOT / "solutions")
    found: list[dict] = []
    seen: dict[str, set[bytes]] = {}

    def call(name, args, kwargs, timeout, **_extra):
        request = codec.encode({"op": "call", "name": name, "args": list(args), "kwargs": kwargs})
        reply = codec.decode(child.dispatch(namespace, request))
        answer = result_of_reply(name, reply)  # raises the learner's error, as the judge's call does
        keys = seen.setdefault(name, set())
        if not IN_PUBLIC_CHECK.get() and len(keys) < PER_EXERCISE and _plain((args, kwargs)):
            try:
                message = codec.encode({"args": list(args), "kwargs": kwargs, "answer": answer})
            except codec.CodecError:
                return answer
            if message not in keys:
                keys.add(message)
                found.append({"suite": suite, "exercise": name, "args": list(args),
                              "kwargs": kwargs, "answer": answer})
        return answer

    run_suite(suite, lambda exercise: (call, []), exercises=suite_exercises(suite))
    return found


def main(argv: list[str]) -> None:
    out, suites = Path(argv[0]), select_suites(argv[1:] or None)
    recorded = [case for suite in suites for case in cases(suite)]
    out.write_bytes(codec.encode(recorded))
    print(f"{len(recorded)} hidden cases of {len({c['exercise'] for c in recorded})} exercises")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except StudentError as exc:  # the solution raised where no test expects it
        raise SystemExit(f"the solution failed: {exc}") from None
