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
from grader.hosted import SCHEMA
from grader.hosted.gradescope import build
from tests.conftest import NOTEBOOKS, ROOT, SOLUTIONS, variant

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
            "grader/__init__.py", "grader/_child.py", "grader/codec.py",
            "grader/fixtures/__init__.py", "grader/hosted/gradescope_results.schema.json",
            "assets/README.md"} <= set(names)
    # notebooks 01 and 02 read no asset: none of notebook 05's corpus or checkpoints is shipped
    assert [n for n in names if n.startswith("assets/")] == ["assets/README.md"]
    assert sorted(n for n in names if n.startswith("grader/suites/test_")) == [
        f"grader/suites/test_{suite}.py" for suite in SUITES]
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
    assert lines == [p for p in pins if not p.startswith("jupyterlab")]
    assert any(line.startswith("torch==") for line in lines)


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
         args: tuple[str, ...] = ("--no-run-as", "--skip-execution")) -> dict:
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
    total = f"{results['score']:g}"
    assert f"\n{SUITES[0]}: {total}/{total} points.\n" in results["output"]  # per notebook
    missing = _tests(results, SUITES[1])  # one line for the notebook, not one per hidden test
    assert len(missing) == 1 and missing[0]["output"].startswith("not submitted")
    assert missing[0]["number"] == "2.0" and missing[0]["score"] == 0
    assert missing[0]["max_score"] == sum(t.max_score for t in grade_notebook(
        tmp_path / "absent" / f"{SUITES[1]}.ipynb", skip_execution=True).tests)
    hidden = {t["visibility"] for t in first if t["tags"] != ["execution"]}
    assert "after_published" in hidden
    from grader.confinement import bwrap_problem

    if bwrap_problem() is None:  # the learner's code ran under bubblewrap, and output says so
        assert "\nLearner code confined by: bubblewrap" in results["output"]
    # The learner's user could read neither the source nor the staged hidden suites.
    assert stat.S_IMODE((root / "source").stat().st_mode) == 0o700
    suites = tmp_path / "home" / "app" / "grader" / "suites"
    assert stat.S_IMODE(suites.stat().st_mode) == 0o700
    assert stat.S_IMODE((suites.parent / "_child.py").stat().st_mode) == 0o644


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


def test_required_confinement_refuses_to_grade_without_bubblewrap(autograder_zip, tmp_path,
                                                                  monkeypatch):
    """With require_confinement in autograder.json, nothing is graded where bubblewrap cannot
    confine the learner's code (here: turned off): score 0 and the one-line reason."""
    root = _layout(tmp_path, autograder_zip, {"x.ipynb": b"{}"})
    config = root / "source" / "autograder.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "require_confinement": True}))
    monkeypatch.setenv("GRADER_NO_BWRAP", "1")
    results = _run(root, tmp_path)
    assert results["score"] == 0 and results["tests"] == []
    assert "--require-confinement: bubblewrap cannot confine" in results["output"]


def test_cli_builds_the_zip_and_rejects_an_unknown_notebook(tmp_path, capsys):
    from grader import cli

    out = tmp_path / "autograder.zip"
    assert cli.main(["gradescope", "--out", str(out), "--notebooks", "01_permutation_invariance",
                     "--minutes", "30"]) == 0
    config = json.loads(zipfile.ZipFile(out).read("autograder.json"))
    assert config["suites"] == [SUITES[0]] and config["time_limit_minutes"] == 30
    assert cli.main(["gradescope", "--out", str(out), "--notebooks", "01"]) == 0
    config = json.loads(zipfile.ZipFile(out).read("autograder.json"))
    assert (config["time_limit_minutes"], config["memory_limit_mb"]) == (20, 1536)  # README's advice
    capsys.readouterr()
    assert cli.main(["gradescope", "--out", str(tmp_path / "y.zip"), "--minutes", "60"]) == 2
    error = capsys.readouterr().err
    assert "Gradescope allows 1 to 40 minutes" in error and len(error.strip().splitlines()) == 1
    assert cli.main(["gradescope", "--out", str(tmp_path / "x.zip"), "--notebooks", "9"]) == 2
    assert "--notebooks 9: no single notebook of the course matches" in capsys.readouterr().err
