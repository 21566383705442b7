"""The Gradescope autograder: the zip's contents, and run_autograder in a simulated /autograder.

The simulation points AUTOGRADER_ROOT at a temporary folder laid out like Gradescope's, runs the
zip's own run_autograder with this interpreter, and passes --no-run-as: here the interpreter lives
in a folder that another user cannot read, so the learner's code cannot drop to an unprivileged
user. It passes --skip-execution too (the hidden tests are what these cases exercise).
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import jsonschema
import nbformat
import pytest

from grader.grade import grade_notebook
from grader.export.hosted import SCHEMA
from grader.export.hosted.gradescope import build
from tests.conftest import (BWRAP_FAILS, NOTEBOOKS, PLANTED, ROOT, SOLUTIONS, environment_probe,
                            one_worker_per_notebook, path_with_failing_bwrap, variant)

SUITES = ["01_permutation_invariance", "02_sinusoidal_encoding"]


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("zip") / "autograder.zip"
    build(out=out, notebooks=["01", "2"], hidden_visibility="after_published")
    return out


def _names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as archive:
        return archive.namelist()


def test_zip_holds_the_entry_points_and_the_grader_but_no_answers(autograder_zip):
    names = _names(autograder_zip)
    assert {"setup.sh", "run_autograder", "requirements.txt", "autograder.json",
            "grader/__init__.py", "grader/sandbox/child.py", "grader/sandbox/codec.py",
            "grader/fixtures/__init__.py", "grader/export/hosted/gradescope_results.schema.json",
            "assets/README.md"} <= set(names)
    # notebooks 01 and 02 read no asset: none of notebook 05's corpus or checkpoints is shipped
    assert [n for n in names if n.startswith("assets/")] == ["assets/README.md"]
    assert sorted(n for n in names if n.startswith("grader/judge/suites/test_")) == [
        f"grader/judge/suites/test_{suite}.py" for suite in SUITES]
    for name in names:
        assert not name.startswith(("solutions/", "tests/", "notebooks/", ".")), name
        assert "catalogue" not in name and "__pycache__" not in name, name
    config = json.loads(zipfile.ZipFile(autograder_zip).read("autograder.json"))
    assert config["suites"] == SUITES and config["hidden_visibility"] == "after_published"


def test_scripts_are_executable_lf_bash(autograder_zip, tmp_path):
    with zipfile.ZipFile(autograder_zip) as archive:
        for name in ("setup.sh", "run_autograder"):
            info = archive.getinfo(name)
            assert stat.S_IMODE(info.external_attr >> 16) == 0o755, name
            text = archive.read(name)
            assert b"\r" not in text and text.startswith(b"#!/usr/bin/env bash\n"), name
            (tmp_path / name).write_bytes(text)
            subprocess.run(["bash", "-n", str(tmp_path / name)], check=True)
            assert b"set -euo pipefail" in text or name == "run_autograder"


def test_setup_installs_its_own_python_and_cpu_torch(autograder_zip):
    setup = zipfile.ZipFile(autograder_zip).read("setup.sh").decode()
    assert "set -euo pipefail" in setup
    assert "python3.11 -m venv" in setup and "ppa:" not in setup  # Ubuntu's own python3.11
    assert "retry apt-get update" in setup and 'retry "$VENV/bin/python" -m pip install' in setup
    assert "TORCH_INDEX=https://download.pytorch.org/whl/cpu" in setup
    assert '--index-url "$TORCH_INDEX" "$torch_pin"' in setup
    for rebinding in ("update-alternatives", "/usr/bin/python3 ", "ln -s", "ln -sf"):
        assert rebinding not in setup, f"setup.sh must leave the image's python3 alone: {rebinding}"
    run = zipfile.ZipFile(autograder_zip).read("run_autograder").decode()
    assert "--run-as grader-learner" in run


def test_requirements_are_the_pinned_ones(autograder_zip):
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    lines = zipfile.ZipFile(autograder_zip).read("requirements.txt").decode().splitlines()
    # notebooks 01 and 02 import no Triton (only 06 does): the zip does not install it
    assert lines == [p for p in pins if not p.startswith(("jupyterlab", "triton"))]
    assert any(line.startswith("torch==") for line in lines)
    from grader.export.hosted.gradescope import requirements

    assert any(line.startswith("triton==") for line in requirements(["06_gpu_rope_kernel"])
               .splitlines())


# -- run_autograder in a simulated /autograder -----------------------------------------------
def _layout(tmp_path: Path, autograder_zip: Path, submission: dict[str, bytes]) -> Path:
    root = tmp_path / "autograder"
    source = root / "source"
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(source)
        for info in archive.infolist():  # as Gradescope's unzip does, keep the modes
            os.chmod(source / info.filename, stat.S_IMODE(info.external_attr >> 16))
    (root / "submission").mkdir(parents=True)
    for name, data in submission.items():
        (root / "submission" / name).write_bytes(data)
    return root


def _run(root: Path, tmp_path: Path, *, python: str = sys.executable,
         args: tuple[str, ...] = ("--no-run-as", "--skip-execution", "--allow-unconfined")) -> dict:
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "GRADER_HOME": str(tmp_path / "home"),
           "GRADER_PYTHON": python}
    env.pop("PYTHONPATH", None)
    process = subprocess.run([str(root / "source" / "run_autograder"), *args], env=env,
                             cwd=root, capture_output=True, text=True, timeout=600)
    assert process.returncode == 0, process.stdout + process.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(results, json.loads(SCHEMA.read_text()))
    return results


def _tests(results: dict, suite: str) -> list[dict]:
    return [t for t in results["tests"] if t["name"].startswith(suite)]


def _with_suite(path: Path, suite: str) -> bytes:
    """The notebook as a released copy would carry it: with its suite in the metadata."""
    notebook = nbformat.read(str(path), as_version=4)
    notebook.metadata["grader"] = {"suite": suite}
    return nbformat.writes(notebook).encode()


@pytest.mark.slow
def test_solution_in_a_zip_gets_full_marks_and_a_corrupt_file_its_reason(autograder_zip,
                                                                        tmp_path):
    solution = _with_suite(SOLUTIONS / f"{SUITES[0]}.ipynb", SUITES[0])
    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("my folder/Copy of homework (2).ipynb", solution)
        archive.writestr("__MACOSX/my folder/._Copy of homework (2).ipynb", b"\0\1")
    root = _layout(tmp_path, autograder_zip, {"answers.zip": bundle.read_bytes(),
                                              "notes.ipynb": b'{"cells": [ not json'})
    results = _run(root, tmp_path)
    first = _tests(results, SUITES[0])
    assert first and all(t["status"] == "passed" for t in first)
    assert results["score"] == sum(t["max_score"] for t in first) > 0
    assert "notes.ipynb: not a valid Jupyter notebook" in results["output"]
    # per notebook, the public checks' points: the hidden tests are after_published here
    public = f"{sum(t['max_score'] for t in first if t['visibility'] == 'visible'):g}"
    assert f"\n{SUITES[0]}: public checks {public}/{public} points.\n" in results["output"]
    assert results["output"].startswith("Graded 1 of 2 notebook(s); the hidden tests' results are "
                                        "shown when your instructor publishes the grades.\n")
    missing = _tests(results, SUITES[1])  # one line for the notebook, not one per hidden test
    assert len(missing) == 1 and missing[0]["output"].startswith("not submitted")
    assert missing[0]["number"] == "2.0" and missing[0]["score"] == 0
    assert missing[0]["max_score"] == sum(t.max_score for t in grade_notebook(
        tmp_path / "absent" / f"{SUITES[1]}.ipynb", skip_execution=True).tests)
    hidden = {t["visibility"] for t in first if t["tags"] != ["execution"]}
    assert "after_published" in hidden
    from grader.sandbox.confinement import bwrap_problem

    if bwrap_problem() is None:  # the learner's code ran under bubblewrap, and output says so
        assert "\nLearner code confined by: bubblewrap" in results["output"]
    # The learner's user could read neither the source nor the staged hidden suites.
    assert stat.S_IMODE((root / "source").stat().st_mode) == 0o700
    suites = tmp_path / "home" / "app" / "grader" / "judge" / "suites"
    assert stat.S_IMODE(suites.stat().st_mode) == 0o700
    assert stat.S_IMODE((suites.parents[1] / "sandbox" / "child.py").stat().st_mode) == 0o644


@pytest.mark.slow
def test_stub_scores_zero_and_os_exit_still_gives_valid_results(autograder_zip, tmp_path):
    stub = (NOTEBOOKS / f"{SUITES[1]}.ipynb").read_bytes()  # released: carries its suite
    exits = variant(tmp_path, SUITES[0], extra_setup="import os\nos._exit(3)")
    root = _layout(tmp_path, autograder_zip, {
        "renamed.ipynb": stub, "exits.ipynb": _with_suite(exits, SUITES[0])})
    results = _run(root, tmp_path)
    assert results["score"] == 0
    for suite in SUITES:
        tests = _tests(results, suite)
        assert tests and sum(t["max_score"] for t in tests) > 0
        assert all(t["status"] == "failed" for t in tests if t["max_score"] > 0)
    assert any("not implemented" in t["output"] for t in _tests(results, SUITES[1]))
    assert any("crashed" in t["output"] for t in _tests(results, SUITES[0]))


@pytest.mark.slow  # executes a (small) notebook
def test_no_secret_reaches_the_results_of_a_gradescope_run(autograder_zip, tmp_path, monkeypatch):
    """The Gradescope route of ``tests/sandbox/test_learner_environment.py``: secrets planted in
    the autograder's environment reach neither ``results.json`` nor anything else it writes."""
    from tests.sandbox.test_learner_environment import assert_no_secret

    notebook = environment_probe(tmp_path / "work")
    root = _layout(tmp_path, autograder_zip, {"mine.ipynb": _with_suite(notebook, SUITES[0])})
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    results = _run(root, tmp_path, args=("--no-run-as", "--allow-unconfined"))
    texts = {"output": results["output"],
             **{f"test {t['name']}": t["output"] for t in results["tests"]},
             **{str(p): p.read_text(errors="replace")
                for p in (root / "results").rglob("*") if p.is_file()}}
    assert_no_secret(texts)


def test_results_are_written_when_the_grader_cannot_start(autograder_zip, tmp_path):
    root = _layout(tmp_path, autograder_zip, {"x.ipynb": b"{}"})
    results = _run(root, tmp_path, python=str(tmp_path / "no-such-python"))
    assert results["score"] == 0 and "could not run" in results["output"]


def test_results_are_written_when_grading_fails(autograder_zip, tmp_path):
    root = _layout(tmp_path, autograder_zip, {"x.ipynb": b"{}"})
    (root / "source" / "autograder.json").unlink()
    results = _run(root, tmp_path)
    assert results["score"] == 0 and results["tests"] == []
    assert "could not grade this submission" in results["output"]
    assert "autograder.json" in results["output"]


def test_no_submission_is_graded_without_confinement_unless_allowed(autograder_zip, tmp_path,
                                                                   monkeypatch):
    """By default nothing is graded where bubblewrap fails to start (here: a ``bwrap`` that exits
    1, as on a host without user namespaces): score 0 and bubblewrap's reason in one line. With
    ``allow_unconfined`` in autograder.json (the export's --allow-unconfined) it is graded, and
    the output's first line says it ran unconfined."""
    config = json.loads(zipfile.ZipFile(autograder_zip).read("autograder.json"))
    assert config["allow_unconfined"] is False and "require_confinement" not in config
    submission = {"01_permutation_invariance.ipynb": _with_suite(
        SOLUTIONS / "01_permutation_invariance.ipynb", "01_permutation_invariance")}
    root = _layout(tmp_path / "refused", autograder_zip, submission)
    monkeypatch.setenv("PATH", path_with_failing_bwrap(tmp_path / "bin"))
    results = _run(root, tmp_path / "refused", args=("--no-run-as", "--skip-execution"))
    assert results["score"] == 0 and results["tests"] == []
    reason = results["output"].splitlines()[0]
    assert "not graded: bubblewrap cannot confine the learner's code here" in reason
    assert BWRAP_FAILS in reason and "--allow-unconfined" in reason

    root = _layout(tmp_path / "allowed", autograder_zip, submission)
    path = root / "source" / "autograder.json"
    path.write_text(json.dumps({**config, "allow_unconfined": True}))
    results = _run(root, tmp_path / "allowed", args=("--no-run-as", "--skip-execution"))
    assert results["score"] > 0
    assert results["output"].splitlines()[0].startswith(
        "NOT CONFINED: the learner's code ran with resource limits only; no bubblewrap")


def test_cli_builds_the_zip_and_rejects_an_unknown_notebook(tmp_path, capsys):
    from grader import cli

    out = tmp_path / "autograder.zip"
    assert cli.main(["gradescope", "--out", str(out), "--notebooks", "01_permutation_invariance",
                     "--minutes", "30"]) == 0
    config = json.loads(zipfile.ZipFile(out).read("autograder.json"))
    assert config["suites"] == [SUITES[0]] and config["time_limit_minutes"] == 30
    assert cli.main(["gradescope", "--out", str(out), "--notebooks", "01"]) == 0
    config = json.loads(zipfile.ZipFile(out).read("autograder.json"))
    assert (config["time_limit_minutes"], config["memory_limit_mb"]) == (20, 768)  # the guide's advice
    assert cli.main(["gradescope", "--out", str(out), "--notebooks", "01", "--memory-mb", "1536"]) == 0
    assert json.loads(zipfile.ZipFile(out).read("autograder.json"))["memory_limit_mb"] == 1536
    capsys.readouterr()
    assert cli.main(["gradescope", "--out", str(tmp_path / "y.zip"), "--minutes", "60"]) == 2
    error = capsys.readouterr().err
    assert "Gradescope allows 1 to 40 minutes" in error and len(error.strip().splitlines()) == 1
    assert cli.main(["gradescope", "--out", str(tmp_path / "x.zip"), "--notebooks", "9"]) == 2
    assert "--notebooks 9: no single notebook of the course matches" in capsys.readouterr().err


# -- visibility: nothing a learner reads before the hidden tests are shown depends on them -------
HIDDEN_UNTIL_LATER = ("after_due_date", "after_published", "hidden")


def _learner_visible(results: dict) -> dict:
    """What a learner reads while the hidden tests are not shown: the top-level ``output`` and
    every ``visible`` test whole (the total ``score`` Gradescope hides, by its specification:
    "If test cases are hidden, students will not be able to see their total score")."""
    return {"output": results["output"],
            "tests": [t for t in results["tests"] if t["visibility"] == "visible"]}


def _hosted_output(results: dict, visibility: str) -> list[str]:
    """run_autograder's top-level output for one graded notebook, built from check's results."""
    from grader.export.hosted.gradescope_run import message

    return message(results["output"], tests=results["tests"], score=results["score"], graded=1,
                   suites=SUITES, problems=[], hidden_visibility=visibility)


def _all_hidden_passed(report):
    """``report`` with the same public checks and every hidden test passed: a submission that
    differs from it only where the learner cannot yet look."""
    import dataclasses

    from grader.results import PASSED

    return dataclasses.replace(report, tests=[
        t if t.public else dataclasses.replace(t, status=PASSED, output="") for t in report.tests])


@pytest.mark.slow
@one_worker_per_notebook(SUITES[0])  # on the worker whose template of that notebook is warm
def test_nothing_shown_before_the_hidden_tests_depends_on_them(variant_grader):
    """A wrong submission and one that differs from it only in its hidden tests' results (every
    hidden test passed) read the same to a learner, in results.json (``check --json`` and
    run_autograder's output) and on the feedback page, under each visibility that hides the
    hidden tests; and a right submission reads the same as a wrong one whose public checks pass.
    Under ``visible`` they differ, so the comparison can fail."""
    import dataclasses

    from grader.report import feedback, render as reporters
    from grader.results import PASSED
    from tests.catalogue import modules
    from tests.conftest import solution_notebooks

    suite = SUITES[0]
    catalogue = dict(modules(solution_notebooks()))[suite].WRONG_ANSWERS
    grader = variant_grader(suite)
    right = {e: grader.grade({}, exercises={e}) for e in {w.exercise for w in catalogue}}
    chosen = [w for e in right for w in [w for w in catalogue if w.exercise == e][:3]]
    public_passes = hidden_fails = 0
    for wrong in chosen:
        report = grader.grade({wrong.exercise: wrong.source}, exercises={wrong.exercise})
        hidden_failed = any(t.status != PASSED and not t.public for t in report.tests)
        hidden_fails += hidden_failed
        twins = [_all_hidden_passed(report)]
        if all(t.status == PASSED for t in report.tests if t.public):
            # the right answer, which passes them too (under the same file name)
            twins.append(dataclasses.replace(right[wrong.exercise], path=report.path))
            public_passes += 1
        for twin in twins:
            for visibility in HIDDEN_UNTIL_LATER:
                shown = reporters.gradescope([report], 1.0, hidden_visibility=visibility)
                other = reporters.gradescope([twin], 1.0, hidden_visibility=visibility)
                assert _learner_visible(shown) == _learner_visible(other), (wrong.mistake,
                                                                            visibility)
                assert _hosted_output(shown, visibility) == _hosted_output(other, visibility)
                assert feedback.render([report], hidden_visibility=visibility) == \
                    feedback.render([twin], hidden_visibility=visibility), wrong.mistake
            if hidden_failed:
                shown = reporters.gradescope([report], 1.0, hidden_visibility="visible")
                other = reporters.gradescope([twin], 1.0, hidden_visibility="visible")
                assert _learner_visible(shown) != _learner_visible(other)
                assert feedback.render([report]) != feedback.render([twin])
    assert hidden_fails and public_passes, "a case of this test is void"
