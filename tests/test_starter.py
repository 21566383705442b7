"""The starter repository: what learners get holds no answer, and its public checks run in it."""
from __future__ import annotations

import ast
import base64
import csv
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from grader.release import BEGIN_SOLUTION, END_SOLUTION
from tests.conftest import ROOT, SOLUTIONS, variant
from tests.test_hosted_workflows import _actionlint

SUITES = ["01_permutation_invariance", "02_sinusoidal_encoding"]


@pytest.fixture(scope="module")
def starter(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("starter") / "repo"
    # the command line, as an instructor runs it (recording imports the hidden suites, which
    # declare their own pytest markers: not inside this test session)
    process = subprocess.run([sys.executable, "-m", "grader", "starter-repo", str(out),
                              "--notebooks", "01", "2"], cwd=ROOT, text=True,
                             capture_output=True, timeout=600)
    assert process.returncode == 0, process.stdout + process.stderr
    assert "01_permutation_invariance: 10 public checks" in process.stdout
    return out


def _texts(root: Path) -> dict[str, str]:
    """Every text the starter holds: files as they are, notebooks' cells one by one."""
    texts = {}
    for path in root.rglob("*"):
        if not path.is_file() or path.suffix in (".recorded", ".pt"):
            continue
        relative = path.relative_to(root).as_posix()
        if path.suffix == ".ipynb":
            for index, cell in enumerate(nbformat.read(str(path), as_version=4).cells):
                texts[f"{relative}#{index}"] = cell.source
        else:
            texts[relative] = path.read_text()
    return texts


def _solution_regions(suite: str) -> list[str]:
    regions = []
    for cell in nbformat.read(str(SOLUTIONS / f"{suite}.ipynb"), as_version=4).cells:
        for region in re.findall(rf"{BEGIN_SOLUTION}\n(.*?){END_SOLUTION}", cell.source, re.S):
            body = "\n".join(line.strip() for line in region.splitlines() if line.strip())
            if len(body) > 20:
                regions.append(body)
    return regions


def _tests_of(source: str) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in ast.parse(source).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def _public_points(node: ast.FunctionDef) -> float | None:
    for decorator in node.decorator_list:
        keywords = {k.arg: k.value.value for k in getattr(decorator, "keywords", [])
                    if isinstance(k.value, ast.Constant)}
        if keywords.get("public") is True:
            return float(keywords.get("points", 1))
    return None


def test_starter_holds_no_solution_hidden_test_or_reference(starter):
    for forbidden in ("solutions", "tests", "scripts", "grader/hosted", "grader/starter.py"):
        assert not (starter / forbidden).exists(), forbidden
    assert not list(starter.rglob("*catalogue*"))
    texts = _texts(starter)
    flat = {name: "\n".join(line.strip() for line in text.splitlines()) for name, text in texts.items()}
    # (grader/release.py names the marker; the notebooks and suites must not hold one)
    assert not any(BEGIN_SOLUTION in text for name, text in texts.items()
                   if not name.startswith("grader/") or name.startswith("grader/suites/"))
    for suite in SUITES:
        hidden = (ROOT / "grader" / "suites" / f"test_{suite}.py").read_text()
        shipped = (starter / "grader" / "suites" / f"test_{suite}.py").read_text()
        public = {name for name, node in _tests_of(hidden).items() if _public_points(node)}
        assert set(_tests_of(shipped)) == public
        for name in set(_tests_of(hidden)) - public:  # no hidden test's name, anywhere
            assert not any(name in text for text in texts.values()), name
        for region in _solution_regions(suite):  # no solution region, anywhere
            assert not any(region in text for text in flat.values()), region[:60]
    shipped = (starter / "grader" / "suites" / "test_01_permutation_invariance.py").read_text()
    assert "def _attention(" in (ROOT / "grader/suites/test_01_permutation_invariance.py").read_text()
    assert "def _attention(" not in shipped and "_attention = replayed(" in shipped
    shipped = "\n".join(texts.values())
    assert "def _pe(" not in shipped and "def _reference_" not in shipped


def test_starter_ships_only_the_chosen_notebooks_and_their_assets(starter):
    assert sorted(p.name for p in (starter / "notebooks").iterdir()) == [f"{s}.ipynb" for s in SUITES]
    assert sorted(p.name for p in (starter / "assets").iterdir()) == ["README.md"]
    assert (starter / ".github/workflows/grade-my-notebooks.yml").is_file()
    readme = " ".join((starter / "README.md").read_text().split())
    assert "hidden tests" in readme and f"notebooks/{SUITES[0]}.ipynb" in readme
    assert "notebooks/03" not in readme


def _run(starter: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(starter)}
    process = subprocess.run([sys.executable, *args], cwd=starter, env=env, text=True,
                             capture_output=True, timeout=600)
    assert process.returncode == 0, process.stdout + process.stderr
    return process.stdout


def test_public_checks_run_in_the_starter_with_the_courses_public_points(starter):
    suite = SUITES[0]
    hidden = (ROOT / "grader" / "suites" / f"test_{suite}.py").read_text()
    points = sum(p for node in _tests_of(hidden).values() if (p := _public_points(node)))
    out = _run(starter, "-m", "grader", "check", f"notebooks/{suite}.ipynb",
               str(SOLUTIONS / f"{suite}.ipynb"), "--skip-execution")
    assert f"notebooks/{suite}.ipynb   score 0/{points:g}" in out
    assert f"{suite}.ipynb   score {points:g}/{points:g}" in out
    assert "hidden tests are run by your instructor" in out


def test_inline_check_of_a_released_stub_runs_in_the_starter(starter):
    script = (
        "import nbformat\n"
        "from grader.inline import check\n"
        "from grader.notebook import sandbox_cells\n"
        f"nb = nbformat.read('notebooks/{SUITES[0]}.ipynb', as_version=4)\n"
        "ns = {}\n"
        "for label, source in sandbox_cells(nb, {'permutation_matrix'}):\n"
        "    exec(source, ns)\n"
        "assert check('permutation_matrix', ns) is False\n")
    out = _run(starter, "-c", script)
    assert "not implemented" in out and "hidden tests are run by your instructor" in out


def test_cli_refuses_a_folder_that_is_not_empty(tmp_path, capsys):
    from grader import cli

    (tmp_path / "x").write_text("")
    assert cli.main(["starter-repo", str(tmp_path), "--notebooks", "01"]) == 2
    assert "not an empty folder" in capsys.readouterr().err


def test_classroom_points_are_the_public_checks_points_with_partial_credit(starter, tmp_path):
    suite = SUITES[0]
    wrong = importlib.import_module(f"tests.catalogue.{suite}").WRONG_ANSWERS[0]
    notebook = variant(tmp_path, suite, replace={wrong.exercise: wrong.source})
    output = tmp_path / "github_output"
    _run(starter, "-m", "grader", "check", str(notebook), "--skip-execution",
         "--json", str(tmp_path / "results.json"), "--classroom-output", str(output))
    results = json.loads((tmp_path / "results.json").read_text())
    (line,) = output.read_text().splitlines()
    assert line.startswith("result=")
    sent = json.loads(base64.b64decode(line.removeprefix("result=")))
    hidden = (ROOT / "grader" / "suites" / f"test_{suite}.py").read_text()
    points = sum(p for node in _tests_of(hidden).values() if (p := _public_points(node)))
    assert sent["max_score"] == points
    assert sum(t["score"] for t in sent["tests"]) == results["score"]
    assert 0 < results["score"] < points  # partial credit, not all or nothing
    assert all(t["name"].startswith("public check: ") for t in sent["tests"])
    document = yaml.safe_load((starter / ".github/workflows/classroom.yml").read_text())
    (job,) = document["jobs"].values()
    runs = [s["run"] for s in job["steps"] if "run" in s and "grader check" in s["run"]]
    assert runs == [f'python -m grader check notebooks/{s}.ipynb --classroom-output '
                    '"$GITHUB_OUTPUT"' for s in SUITES]
    actionlint = _actionlint()
    for name in ("classroom.yml", "grade-my-notebooks.yml"):
        lint = subprocess.run([actionlint, str(starter / ".github/workflows" / name)],
                              capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr


@pytest.mark.slow
def test_the_grading_repository_grades_a_folder_of_learner_repositories(starter, tmp_path):
    """What the instructor's private grading repository runs after the deadline: `batch` over
    the cloned learners' repositories (copies of the starter), with the roster."""
    suite = SUITES[0]
    repos = tmp_path / "ps1-submissions"
    for login in ("ada", "bob"):
        shutil.copytree(starter, repos / login)
    solution = nbformat.read(str(SOLUTIONS / f"{suite}.ipynb"), as_version=4)
    solution.metadata["grader"] = {"suite": suite}
    nbformat.write(solution, str(repos / "ada" / "notebooks" / f"{suite}.ipynb"))
    (tmp_path / "roster.csv").write_text("student_id,name,lms_id\nada,Ada,1\nbob,Bob,2\ncyd,Cyd,3\n")
    from grader import cli

    out = tmp_path / "grades"
    assert cli.main(["batch", str(repos), "--notebooks", "01", "--roster",
                     str(tmp_path / "roster.csv"), "--lms", "canvas", "--skip-execution",
                     "--due", "2000-01-01T00:00", "--late-policy", "10,50",
                     "--jobs", "2", "--out", str(out)]) == 0
    with open(out / "gradebook.csv", newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert rows["ada"]["percent"] == "100" and rows["ada"]["name"] == "Ada"
    assert rows["bob"]["total"] == "0" and rows["bob"]["grading_status"] == "ok"
    assert rows["cyd"]["grading_status"] == "not submitted"
    half = f"{float(rows['ada']['total']) / 2:g}"  # handed in long after 2000: the 50 % cap
    assert rows["ada"]["time_source"] == "file times" and rows["ada"]["total_after_penalty"] == half
    assert (out / "canvas.csv").read_text().splitlines()[2] == f"Ada,1,,,,{half}"


def test_recorded_values_answer_the_same_arguments_up_to_last_bit_noise(tmp_path):
    import torch

    from grader import codec, recorded

    x = torch.linspace(-1, 1, 12, dtype=torch.float32).reshape(3, 4)
    exact = recorded.key((x,), {"scale": 2})
    near, floats = recorded.near_key((x,), {"scale": 2})
    (tmp_path / "test_x.recorded").write_bytes(codec.encode(recorded.table(
        {"_reference": {exact: x * 2}}, {"_reference": [{"key": exact, "near": near,
                                                       "floats": floats}]})))
    helper = recorded.replayed(str(tmp_path / "test_x.py"), "_reference")
    assert torch.equal(helper(x, scale=2), x * 2)
    noisy = torch.nextafter(x, torch.full_like(x, 2.0))  # another machine's last bit
    assert torch.equal(helper(noisy, scale=2), x * 2)
    for args, kwargs in (((x + 1e-3,), {"scale": 2}), ((x,), {"scale": 3}), ((x.double(),), {})):
        with pytest.raises(recorded.NotRecorded, match="no reference value for this input"):
            helper(*args, **kwargs)
