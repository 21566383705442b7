"""A grading run's tests in the format GitHub Classroom's grading reporter sums.

``classroom-resources/autograding-grading-reporter`` reads, for each step id it is given, the
environment variable ``<ID>_RESULTS``: base64 of a JSON object with ``version``, ``status``
(``pass``, ``fail`` or ``error``), ``max_score`` and ``tests`` (each with ``name``, ``status``,
``score`` and ``message``). It adds up the tests' ``score`` and the objects' ``max_score``, so one
step can give partial credit, test by test. ``check --classroom-output "$GITHUB_OUTPUT"``
appends ``result=<base64>`` built from the same results as ``--json``, so the points GitHub
Classroom shows are the points ``check`` reports.
"""
from __future__ import annotations

import base64
import json
from pathlib import Path

LABEL = "public check"
"""How a test is labelled where only public checks run (a learner's repository)."""


def payload(results: dict, *, label: str | None = None) -> dict:
    """The reporter's object from a Gradescope ``results.json`` (``report.gradescope``)."""
    tests = []
    for test in results.get("tests", []):
        if not test.get("max_score"):
            continue  # the execution record and informational tests carry no points
        name = test.get("name", "")
        tests.append({"name": f"{label}: {name}" if label else name,
                      "status": "pass" if test.get("score") == test["max_score"] else "fail",
                      "score": test.get("score", 0), "max_score": test["max_score"],
                      "message": (test.get("output") or "")[:1000]})
    maximum = sum(t["max_score"] for t in tests)
    status = "pass" if all(t["status"] == "pass" for t in tests) else "fail"
    return {"version": 1, "status": status, "max_score": maximum, "tests": tests}


def append_output(path: Path, results: dict, *, label: str | None = None) -> None:
    """Append ``result=<base64 of the payload>`` to ``path`` (a step's ``$GITHUB_OUTPUT``)."""
    encoded = base64.b64encode(json.dumps(payload(results, label=label)).encode()).decode()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"result={encoded}\n")
