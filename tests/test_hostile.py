"""Bad and hostile submissions are graded correctly, and the report is always complete."""
from __future__ import annotations

import json
import subprocess
import sys

import nbformat

from grader.grade import grade_notebook, main as grade_main
from grader.results import CRASHED, ERROR, FAILED, MISSING, PASSED, TIMED_OUT
from grader.sandbox import Limits
from grader.notebook import read_notebook
from grader.release import release_notebook
from tests.conftest import ROOT, SOLUTIONS, variant

SUITE = "01_permutation_invariance"
EXERCISES = {"scaled_dot_product_attention", "self_attention", "permutation_matrix",
             "max_equivariance_error"}
FAST = Limits(call_timeout=3.0)


def _statuses(report, exercise):
    return {t.status for t in report.tests if t.exercise == exercise}


def _full_marks(report, exercise):
    tests = [t for t in report.tests if t.exercise == exercise]
    return tests and all(t.status == PASSED for t in tests)


def test_corrupt_notebook_is_reported_and_others_still_graded(tmp_path):
    corrupt = tmp_path / f"{SUITE}.ipynb"
    corrupt.write_text('{"cells": [ this is not json')
    (tmp_path / "good").mkdir()
    good = variant(tmp_path / "good", SUITE)
    reports = grade_main(paths=[corrupt, good], skip_execution=True,
                         json_path=tmp_path / "results.json", echo=lambda *_: None)
    bad_report, good_report = reports
    assert "not a valid Jupyter notebook" in bad_report.error
    assert bad_report.score == 0 and bad_report.max_score == good_report.max_score > 0
    assert {t.status for t in bad_report.tests} == {MISSING}
    assert good_report.score == good_report.max_score
    results = json.loads((tmp_path / "results.json").read_text())
    assert sum(t["max_score"] for t in results["tests"]) == 2 * good_report.max_score
    assert any("not a valid Jupyter notebook" in t["output"] for t in results["tests"])


def test_missing_exercise_cell_costs_only_that_exercise(tmp_path):
    report = grade_notebook(variant(tmp_path, SUITE, drop=("permutation_matrix",)),
                            skip_execution=True)
    assert _statuses(report, "permutation_matrix") == {MISSING}
    assert all("no function named 'permutation_matrix'" in t.output
               for t in report.tests if t.status == MISSING)
    for exercise in EXERCISES - {"permutation_matrix"}:
        assert _full_marks(report, exercise), exercise


def test_exercise_that_never_returns_times_out_and_is_restarted(tmp_path):
    source = "def permutation_matrix(perm):\n    while True:\n        pass\n"
    report = grade_notebook(variant(tmp_path, SUITE, replace={"permutation_matrix": source}),
                            skip_execution=True, exercises={"permutation_matrix", "self_attention"},
                            limits=FAST)
    assert _statuses(report, "permutation_matrix") == {TIMED_OUT}
    assert _full_marks(report, "self_attention")


def test_os_exit_crashes_only_its_own_tests(tmp_path):
    source = "import os\ndef permutation_matrix(perm):\n    os._exit(0)\n"
    report = grade_notebook(variant(tmp_path, SUITE, replace={"permutation_matrix": source}),
                            skip_execution=True, exercises={"permutation_matrix", "self_attention"})
    assert _statuses(report, "permutation_matrix") == {CRASHED}
    assert all("exited with status 0" in t.output for t in report.tests if t.status == CRASHED)
    assert _full_marks(report, "self_attention")


def test_fifty_gigabyte_allocation_fails_cleanly(tmp_path):
    source = ("def permutation_matrix(perm):\n"
              "    waste = torch.ones(50 * 2**30, dtype=torch.uint8)\n"
              "    return torch.eye(len(perm))[torch.as_tensor(perm)]\n")
    report = grade_notebook(variant(tmp_path, SUITE, replace={"permutation_matrix": source}),
                            skip_execution=True, exercises={"permutation_matrix", "self_attention"})
    assert PASSED not in _statuses(report, "permutation_matrix")
    assert any("allocate" in t.output or "memory" in t.output.lower() for t in report.tests)
    assert _full_marks(report, "self_attention")


def test_printing_all_tests_passed_changes_nothing(tmp_path):
    source = ("print('All tests passed! Score: 31/31')\n"
              "def permutation_matrix(perm):\n"
              "    print('All tests passed')\n"
              "    return torch.zeros(len(perm), len(perm))\n")
    report = grade_notebook(variant(tmp_path, SUITE, replace={"permutation_matrix": source}),
                            skip_execution=True, exercises={"permutation_matrix"})
    assert report.score == 0
    assert all("All tests passed" not in t.output for t in report.tests)


def test_monkeypatched_comparisons_do_not_reach_the_judge(tmp_path):
    patch = ("import numpy, numpy.testing\n"
             "torch.allclose = lambda *a, **k: True\n"
             "torch.equal = lambda *a, **k: True\n"
             "numpy.allclose = lambda *a, **k: True\n"
             "numpy.array_equal = lambda *a, **k: True\n"
             "numpy.testing.assert_allclose = lambda *a, **k: None\n")
    source = patch + "def permutation_matrix(perm):\n    return torch.zeros(len(perm), len(perm))\n"
    report = grade_notebook(variant(tmp_path, SUITE, replace={"permutation_matrix": source}),
                            skip_execution=True, exercises={"permutation_matrix"})
    assert report.score == 0
    assert _statuses(report, "permutation_matrix") <= {FAILED, ERROR}


def test_object_whose_eq_is_always_true_is_rejected(tmp_path):
    source = ("class Liar:\n"
              "    def __eq__(self, other):\n        return True\n"
              "    def __float__(self):\n        return 0.0\n"
              "def max_equivariance_error(fn, x, perm):\n    return Liar()\n")
    report = grade_notebook(variant(tmp_path, SUITE, replace={"max_equivariance_error": source}),
                            skip_execution=True, exercises={"max_equivariance_error"})
    assert report.score == 0
    assert any("cannot read" in t.output for t in report.tests)


def test_hidden_exceptions_are_still_seen_by_execution_and_judge(tmp_path):
    hide = "get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)"
    path = variant(tmp_path, SUITE, extra_setup=hide,
                   replace={"scaled_dot_product_attention":
                            "def scaled_dot_product_attention(q, k, v, mask=None):\n"
                            "    raise NotImplementedError\n"})
    report = grade_notebook(path, exercises={"scaled_dot_product_attention"})
    assert report.execution is not None and report.execution.failures, \
        "execution should fail where the notebook hid its own errors"
    assert any("replied 'error'" in f.message for f in report.execution.failures)
    assert report.score == 0


def test_cli_exit_codes_and_one_line_errors(tmp_path):
    missing = subprocess.run([sys.executable, "-m", "grader", "check", str(tmp_path / "nope.ipynb")],
                             cwd=ROOT, capture_output=True, text=True)
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "no such file" in missing.stderr
    corrupt = tmp_path / f"{SUITE}.ipynb"
    corrupt.write_text("not json")
    graded = subprocess.run([sys.executable, "-m", "grader", "check", str(corrupt),
                             "--skip-execution", "--json", str(tmp_path / "r.json"),
                             "--junit", str(tmp_path / "r.xml")],
                            cwd=ROOT, capture_output=True, text=True)
    assert graded.returncode == 0, graded.stderr
    assert json.loads((tmp_path / "r.json").read_text())["score"] == 0
    assert "<testsuites>" in (tmp_path / "r.xml").read_text()


def test_renamed_released_notebook_is_graded_by_its_suite(tmp_path):
    notebook = release_notebook(read_notebook(SOLUTIONS / f"{SUITE}.ipynb"), "solution", SUITE)
    path = tmp_path / "renamed submission.ipynb"
    nbformat.write(notebook, str(path))
    report = grade_notebook(path, skip_execution=True, exercises={"permutation_matrix"})
    assert report.suite == SUITE and report.error is None
    assert report.max_score > 0 and report.score == 0
