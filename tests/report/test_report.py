"""Reporters: Gradescope's results.json (checked against its schema) and the Markdown summary."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import jsonschema
import pytest

from grader.report import render as reporters
from grader.export.hosted import SCHEMA
from grader.grade import grade_notebook
from grader.judge.proxy import exercise_order, known_suites, run_suite, suite_exercises
from grader.notebook.read import exercise_names, read_notebook
from grader.sandbox.parent import ExerciseMissing
from grader.results import CRASHED, FAILED, PASSED, CellFailure, ExecutionResult, NotebookReport
from grader.results import TestResult as Result
from tests.catalogue import modules
from tests.conftest import solution_notebooks, variant

ROOT = Path(__file__).resolve().parents[2]


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
    assert "| 4.1 `rope_inv_freq` | 3/5 | ❌ failed (1 of 2 tests) | float32 out -- got float64 |" in text
    assert "Execution: 2/3 cells ran without error (first failure, Cell 2: ValueError" in text
    assert "| 4.2 `apply_rope` | 0/5 | ❌ crashed (1 of 1 tests) |" in text
    assert "shapes \\| differ" in text and "shapes | differ" not in text
    assert "Could not be graded: x.ipynb: not a valid Jupyter notebook" in text
    rows = [line for line in text.splitlines() if line.startswith(("| 4.", "| 1."))]
    assert len(rows) == 3 and all(row.count(" | ") == 3 for row in rows)


# -- exercises in the notebook's order ------------------------------------------------------------
def _missing(exercise):
    def call(name, args, kwargs, timeout):
        raise ExerciseMissing(f"no function named {name}")
    return call, []


@pytest.mark.slow  # runs the whole suite
@pytest.mark.parametrize("suite", known_suites())
def test_numbering_follows_the_cells_of_the_notebook(suite):
    cells = [n for n in exercise_names(read_notebook(ROOT / "notebooks" / f"{suite}.ipynb"))
             if n in suite_exercises(suite)]
    assert sorted(cells) == sorted(suite_exercises(suite))
    assert exercise_order(suite) == cells, "set EXERCISE_ORDER in the suite to the cells' order"
    report = NotebookReport(path=f"{suite}.ipynb", suite=suite, exercise_order=exercise_order(suite),
                            tests=run_suite(suite, _missing, exercises=set(cells[-2:] + cells[:2])))
    graded = cells[:2] + cells[-2:]
    assert list(report.exercises()) == graded  # results come in the notebook's order
    number = reporters.notebook_number(suite)
    numbers = {cells.index(name) + 1 for name in graded}
    assert {t["tags"][0]: t["number"] for t in reporters.gradescope([report], 1.0)["tests"]} == {
        name: f"{number}.{cells.index(name) + 1}" for name in graded}
    table = reporters.table([report])
    rows = [table.index(f"{number}.{n} {name}") for n, name in zip(sorted(numbers), graded)]
    assert rows == sorted(rows)
    cases = list(ElementTree.fromstring(reporters.junit([report])).iter("testcase"))
    assert [c.get("classname").split(".", 1)[1] for c in cases] == [t.exercise for t in report.tests]
    assert [c.find("properties/property[@name='number']").get("value") for c in cases] == [
        f"{number}.{cells.index(t.exercise) + 1}" for t in report.tests]
    markdown = [line.split(" | ")[0] for line in reporters.markdown([report]).splitlines()
                if line.startswith(f"| {number}.")]
    assert markdown == [f"| {number}.{cells.index(name) + 1} `{name}`" for name in graded]


# -- the feedback of a catalogued wrong answer ----------------------------------------------------
WRONG = ("04_rotary_embeddings", "tables repeated in the interleaved pattern for rotate_half")


@pytest.fixture(scope="module")
def wrong_report(tmp_path_factory):
    """A catalogued wrong answer of apply_rope that also changes x in place and validates nothing,
    graded: one mistake costs once, so its owning test names the catalogued mistake and two
    more tests fail (the in-place change, the promised errors)."""
    suite, mistake = WRONG
    wrong = next(w for _, module in modules(solution_notebooks()) for w in module.WRONG_ANSWERS
                 if w.mistake == mistake)
    body = wrong.source[wrong.source.index("    dt = "):].replace("    return (xf * c + rotated * s).to(x.dtype)",
                                                               "    x.copy_((xf * c + rotated * s).to(x.dtype))\n"
                                                               "    return x")
    source = "def apply_rope(x, cos, sin, interleaved=False):\n    half = x.shape[-1] // 2\n" + body
    path = variant(tmp_path_factory.mktemp("wrong"), suite, replace={wrong.exercise: source})
    report = grade_notebook(path, skip_execution=True, exercises={wrong.exercise})
    named = {reporters.named_mistake(t.output) for t in report.tests if t.status != PASSED}
    assert wrong.feedback in " ".join(filter(None, named))  # the suite names this mistake
    return report


def _unwrapped(text: str) -> str:
    return " ".join(text.split())


def test_terminal_report_says_each_named_mistake_whole_and_once(wrong_report):
    failing = [t for t in wrong_report.tests if t.status != PASSED]
    named = [t for t in failing if reporters.named_mistake(t.output)]
    assert named and len(failing) >= 3  # the mistake's own test names it; two more tests fail
    mistake = reporters.named_mistake(named[0].output)
    assert len(mistake) > 40
    naming = [t for t in named if reporters.named_mistake(t.output) == mistake]
    cost = sum(t.max_score for t in naming)
    where = "1 test" if len(naming) == 1 else f"{len(naming)} tests"
    for verbose in (False, True):
        table = reporters.table([wrong_report], verbose=verbose)
        notice = reporters.unconfined_notice([wrong_report])  # one line, never wrapped
        long = [line for line in table.splitlines() if len(line) > 100 and " " in line.strip()
                and line != notice and "failing example" not in line
                and not line.strip().startswith("test_")]
        assert not long, long
        flat = _unwrapped(table)
        assert flat.count(mistake) == 1
        assert f"likely mistake: {mistake} (cost {cost:g} points, {where})" in flat
        shown = [t for t in failing if _unwrapped(t.description) in flat]
        assert len(shown) == (len(failing) if verbose else 1)
    assert f"+ {len(failing) - 1} more failing tests: `--verbose` lists every failing test" in \
        _unwrapped(reporters.table([wrong_report]))


def test_top_level_output_of_results_json_is_a_summary(wrong_report, tmp_path, monkeypatch):
    from grader import cli, grade

    calls = []
    monkeypatch.setattr(grade, "main", lambda **kwargs: calls.append(kwargs) or [wrong_report])
    out = tmp_path / "results.json"
    assert cli.main(["check", "x.ipynb", "--json", str(out), "--verbose",
                     "--hidden-visibility", "visible"]) == 0
    assert calls[0]["verbose"] is True
    results = json.loads(out.read_text())
    mistake = reporters.named_mistake(next(t.output for t in wrong_report.tests if t.status != PASSED
                                           and reporters.named_mistake(t.output)))
    lines = results["output"].splitlines()
    score, maximum = f"{wrong_report.score:g}", f"{wrong_report.max_score:g}"
    assert lines[0] == f"Graded 1 notebook(s): {score}/{maximum} points."
    assert lines[1] == (f"04_rotary_embeddings: {score}/{maximum} points; look first at exercise 4.5 "
                        f"apply_rope (lost {wrong_report.max_score - wrong_report.score:g} points; "
                        f"likely mistake: {mistake})")
    assert results["output"] not in {t["output"] for t in results["tests"]}


# -- the terminal table a learner reads ----------------------------------------------------------
def _learners_report() -> NotebookReport:
    """Notebook 01 half done: one exercise passed, one failed, one whose cell did not load, two
    not implemented; its execution failed in two cells, then in one because of the first."""
    from grader.results import MISSING, NOT_IMPLEMENTED

    report = NotebookReport(
        path="notebooks/01_permutation_invariance.ipynb", suite="01_permutation_invariance",
        exercise_order=["scaled_dot_product_attention", "self_attention", "permutation_matrix",
                        "max_equivariance_error", "unchanged_outputs"],
        execution=ExecutionResult(cells=9, passed=6, failures=[
            CellFailure("Cell 7/20", "NotImplementedError: permutation_matrix: replace this line",
                        line="p = permutation_matrix([2, 0, 1])"),
            CellFailure("Cell 9/20", "NameError: name 'p' is not defined", line="print(p @ x)",
                        cause="Cell 7/20"),
            CellFailure("Cell 15/20", "ValueError: too many values", line="a, b = outputs")]),
        load_errors=["Cell 5/20 (`def self_attention(x, w_q, w_k, w_v:`): SyntaxError: invalid "
                     "syntax (line 1)"],
        blocked={"self_attention": "Cell 5/20 (`def self_attention(x, w_q, w_k, w_v:`)"})
    report.tests = [
        Result("scaled_dot_product_attention", "test_a", "scaled", 14, PASSED),
        Result("self_attention", "test_b", "self", 6, MISSING, "self_attention is missing"),
        Result("self_attention", "test_c", "self", 5, MISSING, "self_attention is missing"),
        Result("permutation_matrix", "test_d", "perm", 7, NOT_IMPLEMENTED, "not implemented"),
        Result("max_equivariance_error", "test_e", "max error", 3, FAILED, "got 1, expected 0"),
        Result("max_equivariance_error", "test_f", "max error", 3, PASSED),
        Result("unchanged_outputs", "test_g", "unchanged", 14, NOT_IMPLEMENTED, "not implemented")]
    return report


def test_cells_are_named_as_jupyterlab_numbers_them_with_their_first_line():
    text = reporters.table([_learners_report()])
    assert "first failure, Cell 7/20 (`p = permutation_matrix([2, 0, 1])`): NotImplementedError" \
        in " ".join(text.split())
    assert "code cell" not in text


def test_exercises_not_implemented_share_one_line():
    text = reporters.table([_learners_report()])
    lines = [line for line in text.splitlines() if "not implemented" in line]
    assert lines == ["  not implemented yet (21 points): 1.3 permutation_matrix, "
                     "1.5 unchanged_outputs"], text
    assert "1.1 scaled_dot_product_attention" in text and "1.4 max_equivariance_error" in text


def test_a_failure_that_follows_from_an_earlier_one_is_grouped_under_it():
    """A NameError for a name the failing cell before should have defined, and an exercise whose
    cell did not load, are said under their cause, not as failures of their own."""
    report = _learners_report()
    verbose = reporters.table([report], verbose=True).splitlines()
    short = " ".join(reporters.table([report]).split())
    assert "2 more failed, 1 of them on a name that a failing cell above did not define" in short
    causes = [i for i, line in enumerate(verbose) if line.strip().startswith("Cell ")]
    assert [verbose[i].split(" (")[0].strip() for i in causes] == ["Cell 7/20", "Cell 15/20"]
    assert verbose[causes[0] + 2].strip() == \
        "then, on a name it did not define: Cell 9/20 (`print(p @ x)`)"
    at = next(i for i, line in enumerate(verbose) if "cell failed to load: Cell 5/20" in line)
    below = [line.strip() for line in verbose[at + 1:at + 4]]  # after the error, wrapped
    assert "so no test found 1.2 self_attention (11 points)" in below, verbose
    assert not any(line.strip().startswith("1.2 self_attention") for line in verbose)
    assert "missing" not in "\n".join(verbose)
    from grader.report import feedback

    page = feedback.render([report])
    assert "<pre>Cell 7/20 (`p = permutation_matrix([2, 0, 1])`): NotImplementedError" in page
    assert "then, on a name it did not define: Cell 9/20 (`print(p @ x)`)" in page
    assert "<pre>Cell 9/20" not in page


def test_a_name_error_follows_from_the_earlier_cell_that_binds_the_name():
    from grader.notebook.execute import _follow_from
    from grader.notebook.read import bound_names

    failures = [CellFailure("Cell 2/9", "NotImplementedError: f"),
                CellFailure("Cell 4/9", "NameError: name 'y' is not defined"),
                CellFailure("Cell 6/9", "NameError: name 'z' is not defined"),
                CellFailure("Cell 8/9", "NameError: name 'w' is not defined")]
    binds = {"Cell 2/9": bound_names("import torch as t\ny, (a, b) = f(1), (2, 3)"),
             "Cell 4/9": bound_names("for z in range(y):\n    pass")}
    assert binds["Cell 2/9"] == {"t", "y", "a", "b"}
    assert [f.cause for f in _follow_from(failures, binds)] == ["", "Cell 2/9", "Cell 2/9", ""]


def test_check_shows_hidden_tests_by_description_unless_told(wrong_report, tmp_path, monkeypatch):
    """`check --json/--html`: a failing hidden test shows its description and status, not what it
    found (the values it compared), unless `--hidden-detail full`; public checks show theirs."""
    from html import escape

    from grader import cli, grade

    monkeypatch.setattr(grade, "main", lambda **kwargs: [wrong_report])
    hidden = [t for t in wrong_report.tests if not t.public and t.status == "failed" and t.output]
    public = [t for t in wrong_report.tests if t.public and t.status != PASSED and t.output]
    assert hidden and public
    for detail in ("description", "full"):
        out, page = tmp_path / f"{detail}.json", tmp_path / f"{detail}.html"
        extra = [] if detail == "description" else ["--hidden-detail", detail]
        assert cli.main(["check", "x.ipynb", "--json", str(out), "--html", str(page),
                         "--hidden-visibility", "visible", *extra]) == 0
        results = json.loads(out.read_text())
        outputs = {t["name"].rsplit(" / ", 1)[1]: t["output"] for t in results["tests"]}
        html = page.read_text()
        for test in hidden:
            message = " ".join(test.output.split())[:60]
            assert (message in " ".join(outputs[test.name].split())) == (detail == "full"), test.name
            assert (escape(message) in " ".join(html.split())) == (detail == "full"), test.name
            assert outputs[test.name].startswith(test.description)
        for test in public:
            assert " ".join(test.output.split())[:60] in " ".join(outputs[test.name].split())
