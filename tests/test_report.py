"""Reporters: Gradescope's results.json (checked against its schema) and the Markdown summary."""
from __future__ import annotations

import json

import jsonschema
import pytest

from grader import report as reporters
from grader.hosted import SCHEMA
from grader.results import CRASHED, FAILED, PASSED, CellFailure, ExecutionResult, NotebookReport
from grader.results import TestResult as Result


def _reports() -> list[NotebookReport]:
    rope = NotebookReport(path="submission/anything.ipynb", suite="04_rotary_embeddings",
                          execution=ExecutionResult(cells=3, passed=2, failures=[
                              CellFailure("Cell 2", "ValueError: shapes | differ")]))
    rope.tests = [
        Result("rope_inv_freq", "test_values", "inv_freq matches", 3, PASSED, public=True),
        Result("rope_inv_freq", "test_dtype", "float32 out", 2, FAILED, "got float64"),
        Result("apply_rope", "test_rotation", "rotates pairs", 5, CRASHED, "os._exit"),
    ]
    broken = NotebookReport(path="x.ipynb", suite="01_permutation_invariance",
                            error="x.ipynb: not a valid Jupyter notebook (bad JSON)")
    broken.tests = [Result("permutation_matrix", "test_shape", "shape", 4, "missing", "gone")]
    return [rope, broken]


def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_results_json_meets_gradescopes_schema():
    results = reporters.gradescope(_reports(), 12.5)
    assert list(_validator().iter_errors(results)) == []
    assert "max_score" not in results  # not in Gradescope's specification at the top level
    assert results["score"] == 3
    assert sum(t["max_score"] for t in results["tests"]) == 14


def test_schema_rejects_keys_and_values_the_specification_lacks():
    validator = _validator()
    good = reporters.gradescope(_reports(), 1.0)
    for bad in ({**good, "max_score": 14}, {**good, "tests": [{**good["tests"][0], "points": 1}]},
                {**good, "tests": [{**good["tests"][0], "status": "error"}]},
                {**good, "tests": [{**good["tests"][0], "visibility": "later"}]},
                {"output": "no score anywhere"}):
        assert list(validator.iter_errors(bad)), bad


def test_tests_carry_number_and_tags():
    tests = reporters.gradescope(_reports(), 1.0)["tests"]
    by_name = {t["name"].split(" / ", 1)[1]: t for t in tests}
    assert by_name["rope_inv_freq / test_values"]["number"] == "4.1"
    assert by_name["rope_inv_freq / test_dtype"]["number"] == "4.1"
    assert by_name["apply_rope / test_rotation"]["number"] == "4.2"
    assert by_name["apply_rope / test_rotation"]["tags"] == ["apply_rope"]
    assert by_name["executes top to bottom (nbval)"]["number"] == "4.0"
    assert by_name["notebook"]["number"] == "1.0"
    assert by_name["permutation_matrix / test_shape"]["number"] == "1.1"


def test_hidden_visibility_is_chosen_and_public_checks_stay_visible():
    tests = reporters.gradescope(_reports(), 1.0, hidden_visibility="hidden")["tests"]
    visibility = {t["name"].rsplit(" / ", 1)[1]: t["visibility"] for t in tests}
    assert visibility["test_values"] == "visible"  # a public check
    assert visibility["test_dtype"] == visibility["test_rotation"] == "hidden"
    assert visibility["notebook"] == visibility["executes top to bottom (nbval)"] == "visible"
    with pytest.raises(ValueError, match="hidden_visibility"):
        reporters.gradescope(_reports(), 1.0, hidden_visibility="later")


def test_markdown_has_a_row_per_exercise_and_escapes_pipes():
    text = reporters.markdown(_reports())
    assert text.startswith("## Grade: 3/14 points over 2 notebook(s)")
    assert "| `rope_inv_freq` | 3/5 | ❌ failed (1/2 tests) | float32 out -- got float64 |" in text
    assert "Execution: 2/3 cells ran without error (first failure, Cell 2: ValueError" in text
    assert "| `apply_rope` | 0/5 | ❌ crashed (1/1 tests) |" in text
    assert "shapes \\| differ" in text and "shapes | differ" not in text
    assert "Could not be graded: x.ipynb: not a valid Jupyter notebook" in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == 3 and all(row.count(" | ") == 3 for row in rows)
