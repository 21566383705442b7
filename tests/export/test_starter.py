"""The starter repository: what learners get holds no answer, and its public checks run in it."""
from __future__ import annotations

import ast
import base64
import csv
import importlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from grader.notebook.release import BEGIN_SOLUTION, END_SOLUTION
from tests.conftest import ROOT, SOLUTIONS, variant
from tests.export.test_hosted_workflows import _actionlint

SUITES = ["01_permutation_invariance", "02_sinusoidal_encoding"]

# One xdist worker runs this file (course.py passes --dist loadgroup): each starter below is
# built once per run, not once per worker (the two builds take 5-20 s each on two cores).
pytestmark = pytest.mark.xdist_group("starter")


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
    for forbidden in ("solutions", "tests", "scripts", "grader/export/hosted", "grader/export/starter.py"):
        assert not (starter / forbidden).exists(), forbidden
    assert not list(starter.rglob("*catalogue*"))
    texts = _texts(starter)
    flat = {name: "\n".join(line.strip() for line in text.splitlines()) for name, text in texts.items()}
    # (grader/notebook/release.py names the marker; the notebooks and suites must not hold one)
    assert not any(BEGIN_SOLUTION in text for name, text in texts.items()
                   if not name.startswith("grader/") or name.startswith("grader/judge/suites/"))
    for suite in SUITES:
        hidden = (ROOT / "grader" / "judge" / "suites" / f"test_{suite}.py").read_text()
        shipped = (starter / "grader" / "judge" / "suites" / f"test_{suite}.py").read_text()
        public = {name for name, node in _tests_of(hidden).items() if _public_points(node)}
        assert set(_tests_of(shipped)) == public
        for name in set(_tests_of(hidden)) - public:  # no hidden test's name, anywhere
            assert not any(name in text for text in texts.values()), name
        for region in _solution_regions(suite):  # no solution region, anywhere
            assert not any(region in text for text in flat.values()), region[:60]
    shipped = (starter / "grader" / "judge" / "suites" / "test_01_permutation_invariance.py").read_text()
    assert "def _attention(" in (ROOT / "grader/judge/suites/test_01_permutation_invariance.py").read_text()
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
    hidden = (ROOT / "grader" / "judge" / "suites" / f"test_{suite}.py").read_text()
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
        "from grader.notebook.read import sandbox_cells\n"
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
    hidden = (ROOT / "grader" / "judge" / "suites" / f"test_{suite}.py").read_text()
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
def test_the_grading_repository_grades_a_folder_of_learner_repositories(starter, tmp_path,
                                                                        hidden_points):
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
    out.mkdir()
    shutil.copy(hidden_points, out)  # the hidden tests' list, cached by content
    assert cli.main(["batch", str(repos), "--notebooks", "01", "--roster",
                     str(tmp_path / "roster.csv"), "--lms", "canvas", "--skip-execution",
                     "--due", "2000-01-01T00:00", "--late-policy", "10,50",
                     "--jobs", "2", "--out", str(out), "--allow-unconfined"]) == 0
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

    from grader.sandbox import codec


    from grader.judge import recorded
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


# -- a starter of all six notebooks gives nothing away -------------------------------------------
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@pytest.fixture(scope="module")
def full_build(tmp_path_factory) -> tuple[Path, set[str]]:
    """The starter of every notebook, built as ``starter-repo`` builds it (in a process of its
    own: recording imports the hidden suites, which declare their own pytest markers), and the
    trusted helpers (``module.function``) its public checks handed the learner's code while
    they were recorded on the solutions (the same recording: each suite's is done once)."""
    out = tmp_path_factory.mktemp("full-starter") / "repo"
    script = ("import json, sys\nfrom pathlib import Path\n"
              "from grader.export.starter import build\n"
              "publics = build(Path(sys.argv[1]))\n"
              "print(json.dumps(sorted({f for public in publics for f in public.fixtures})))")
    process = subprocess.run([sys.executable, "-c", script, str(out)], cwd=ROOT, text=True,
                             capture_output=True, timeout=900)
    assert process.returncode == 0, process.stdout + process.stderr
    assert sorted(p.stem for p in (out / "notebooks").iterdir()) == ALL_SUITES
    return out, set(json.loads(process.stdout.splitlines()[-1]))


@pytest.fixture(scope="module")
def full_starter(full_build) -> Path:
    return full_build[0]


@pytest.fixture(scope="module")
def handed_by_public_checks(full_build) -> set[str]:
    return full_build[1]


def _definitions(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """A module's top-level statements by the names they bind."""
    found: dict[str, list[ast.AST]] = {}
    for node in tree.body:
        if isinstance(node, DEFINITIONS):
            names = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        else:
            names = []
        for name in names:
            found.setdefault(name, []).append(node)
    return found


def _defaults(node: ast.AST) -> list[tuple[str, ast.AST, bool]]:
    """``(parameter, default, positional)`` of a function's parameters that have a default."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    positional = node.args.posonlyargs + node.args.args
    pairs = [(a.arg, d, True) for a, d in zip(positional[len(positional) - len(node.args.defaults):],
                                               node.args.defaults)]
    return pairs + [(a.arg, d, False) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults)
                    if d is not None]


def _walk(node: ast.AST) -> list[ast.AST]:
    """Every node of a definition but its parameters' defaults (read only where used)."""
    inside = {id(n) for _, default, _ in _defaults(node) for n in ast.walk(default)}
    return [n for n in ast.walk(node) if id(n) not in inside]


def _used_defaults(function: ast.AST, call: ast.Call | None) -> list[ast.AST]:
    """The defaults of ``function`` that ``call`` leaves in place (all of them: no call seen)."""
    if call is None or any(isinstance(a, ast.Starred) for a in call.args) \
            or any(k.arg is None for k in call.keywords):
        return [default for _, default, _ in _defaults(function)]
    positional = function.args.posonlyargs + function.args.args
    passed = {a.arg for a in positional[:len(call.args)]} | {k.arg for k in call.keywords}
    return [default for name, default, _ in _defaults(function) if name not in passed]


def _reach(definitions: dict[str, list[ast.AST]], roots: list[str], *, all_defaults: bool,
           opaque: set[str] = frozenset()) -> tuple[set[str], list[ast.AST]]:
    """The module-level names ``roots`` read, directly or through others, and the nodes read.

    Without ``all_defaults``, a parameter's default is read only where a call leaves it in place
    (a public check that passes its own windows does not read the hidden ones a helper defaults
    to). ``opaque`` names are not looked into (helpers whose code is not shipped)."""
    names, read, stack = set(), [], [(root, None) for root in roots]
    while stack:
        name, call = stack.pop()
        for node in definitions.get(name, []):
            defaults = [d for _, d, _ in _defaults(node)] if all_defaults or name in roots \
                else _used_defaults(node, call)
            read += [n for d in defaults for n in ast.walk(d)]
            stack += [(n.id, None) for d in defaults for n in ast.walk(d)
                      if isinstance(n, ast.Name) and n.id in definitions]
        if name in names or name not in definitions:
            continue
        names.add(name)
        if name in opaque:
            continue
        for node in definitions[name]:
            walked = _walk(node)
            read += walked
            called = {id(n.func): n for n in walked if isinstance(n, ast.Call)}
            stack += [(n.id, called.get(id(n))) for n in walked
                      if isinstance(n, ast.Name) and n.id in definitions]
    return names, read


def _literals(nodes: list[ast.AST]) -> set:
    """The constants among ``nodes`` that could be a case's parameter: numbers (no small integer)
    and strings with words in them (no docstring, no part of an f-string)."""
    skip = set()
    for node in nodes:
        if isinstance(node, (*DEFINITIONS, ast.Module)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            skip.add(id(node.body[0].value))
        if isinstance(node, ast.JoinedStr):
            skip |= {id(v) for v in node.values}
    found = set()
    for node in nodes:
        if not isinstance(node, ast.Constant) or id(node) in skip:
            continue
        value = node.value
        if value is None or isinstance(value, (bool, bytes, complex)) or value is Ellipsis:
            continue
        if isinstance(value, (int, float)) and (-2 <= value <= 16 and value == int(value)
                                                or value in (0.5, 0.25)):
            continue
        if isinstance(value, float) and 0 < abs(value) < 1 \
                and math.log10(abs(value)) == round(math.log10(abs(value))):
            continue  # a tolerance (1e-3, 1e-9), not a case
        if isinstance(value, str) and (len(value) < 4 or not re.search(r"\s", value.strip())):
            continue  # a name ('float32', 'strided') is the runtime's vocabulary, not a case
        found.add(value)
    return found


def _identifiers(tree: ast.AST) -> set[str]:
    """The names a module's code uses or binds (not the words of its docstrings and comments)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, (*DEFINITIONS,)):
            found.add(node.name)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            found.add(node.arg)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name)
    return found


def _body(node: ast.AST) -> str:
    """A function's body without its name and docstring, for comparing implementations."""
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return ast.dump(ast.Module(body=body, type_ignores=[]))


def _notebook_code(suite: str) -> str:
    from grader.notebook.read import code_cells, read_notebook, to_python

    return "\n".join(to_python(c.source) for _, c in code_cells(read_notebook(
        ROOT / "notebooks" / f"{suite}.ipynb")))


def _shipped_python(starter: Path) -> dict[str, ast.Module]:
    return {path.relative_to(starter).as_posix(): ast.parse(path.read_text())
            for path in sorted(starter.rglob("*.py"))}


def _functions(trees: dict[str, ast.Module]) -> dict[str, list[tuple[str, ast.AST]]]:
    """Every function any shipped module defines (at any depth), by name: ``(file, node)``."""
    found: dict[str, list[tuple[str, ast.AST]]] = {}
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.setdefault(node.name, []).append((name, node))
    return found


def _fstring_prefixes(nodes: list[ast.AST]) -> set[str]:
    """The constant beginnings of f-strings among ``nodes`` (``f"module.launch_{name}"`` gives
    ``"module.launch_"``): a fixture named so is any whose rest is a string read too."""
    return {node.values[0].value for node in nodes if isinstance(node, ast.JoinedStr)
            and node.values and isinstance(node.values[0], ast.Constant)}


def _names(name: str, keys: set[str], strings: set[str], prefixes: set[str]) -> bool:
    return bool(keys & strings) or any(
        key.startswith(prefix) and key[len(prefix):] in strings for key in keys for prefix in prefixes)


class _Suite:
    """What a hidden suite's public checks read, and what only its hidden tests read."""

    def __init__(self, suite: str, starter: Path) -> None:
        tree = ast.parse((ROOT / "grader" / "judge" / "suites" / f"test_{suite}.py").read_text())
        shipped = (starter / "grader" / "judge" / "suites" / f"test_{suite}.py").read_text()
        self.definitions = definitions = _definitions(tree)
        tests = [n for n in definitions if n.startswith("test_")]
        public = [n for n in tests if any(_public_points(x) for x in definitions[n])]
        hidden = [n for n in tests if n not in public]
        self.recorded = set(re.findall(r"^(\w+) = replayed\(", shipped, re.M))
        self.public, public_read = _reach(definitions, [*public, "EXERCISE_ORDER"],
                                          all_defaults=False, opaque=self.recorded)
        self.hidden, hidden_read = _reach(definitions, hidden, all_defaults=True)
        notebook = _notebook_code(suite)
        known = set(re.findall(r"\w+", notebook))  # what the learner's notebook shows anyway
        self.hidden_only = {n for n in self.hidden - self.public
                            if not n.startswith("test_") and n not in known}
        self.hidden_literals = _literals(hidden_read) - _literals(public_read) \
            - _literals(list(ast.walk(ast.parse(notebook))))
        self.strings_read = {n.value for n in hidden_read
                             if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        self.public_attributes = {n.attr for n in public_read if isinstance(n, ast.Attribute)}
        self.hidden_attributes = {n.attr for n in hidden_read if isinstance(n, ast.Attribute)}
        source = (ROOT / "grader" / "judge" / "suites" / f"test_{suite}.py").read_text()
        self.modules = {f"grader/fixtures/{m}.py" for m in re.findall(
            r"grader\.fixtures import (\w+)|fixture\(f?[\"'](\w+)\.", source) for m in m if m}
        self.modules |= {f"grader/{package}/{m}.py" if package else f"grader/{m}.py"
                         for package, m in re.findall(r"from grader(?:\.(\w+))? import (\w+)", source)
                         if package in ("", "judge") and m not in ("proxy", "properties", "recorded")}
        self.hidden_prefixes = _fstring_prefixes(hidden_read)
        self.not_shipped = {n for n, nodes in definitions.items()
                            if any(isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef))
                                   for x in nodes)
                            and not re.search(rf"^def {n}\(", shipped, re.M)}


def _hidden_fixtures(suites: list[_Suite], notebooks: str, handed: set[str]) -> dict[str, ast.AST]:
    """``{module.function: node}`` of the trusted helpers only hidden tests hand the learner (or
    read), with what only they reach inside their module. Public: what the notebooks name, what
    the public checks read in-process (``fixtures.name``) and what they ``handed`` the learner;
    hidden: any other helper whose name a hidden test reads (``"module.name"``, an f-string's
    ``"module."`` and the name, ``fixtures.name``)."""
    hidden = {}
    for path in sorted((ROOT / "grader" / "fixtures").glob("[!_]*.py")):
        module = path.stem
        definitions = _definitions(ast.parse(path.read_text()))
        named_public, named_hidden = [], []
        for name, nodes in definitions.items():
            keys = {name, f"{module}.{name}"}
            if re.search(rf"\b{name}\b", notebooks) or f"{module}.{name}" in handed \
                    or any(name in s.public_attributes for s in suites):
                named_public.append(name)
            elif any(_names(name, keys, s.strings_read, s.hidden_prefixes)
                     or name in s.hidden_attributes for s in suites):
                named_hidden.append(name)
        public, _ = _reach(definitions, named_public, all_defaults=True)
        hidden_reach, _ = _reach(definitions, named_hidden, all_defaults=True)
        for name in hidden_reach - public:
            hidden[f"{module}.{name}"] = definitions[name][0]
    return hidden


ALL_SUITES = ["01_permutation_invariance", "02_sinusoidal_encoding",
              "03_addition_vs_concatenation", "04_rotary_embeddings", "05_context_extension",
              "06_gpu_rope_kernel", "07_rope_in_practice"]


@pytest.mark.slow
def test_the_starter_holds_no_model_answer_or_rubric(full_starter):
    """No file of the starter holds a written question's model answer or a rubric item (as
    text, or as a notebook's JSON string), and none but the grader's code the markers that open
    them; its notebooks keep each written question with the answer heading."""
    from grader.notebook import written

    secrets = []
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        for question in written.questions(json.loads(path.read_text()), path.name):
            secrets += [question.model_answer, *(item.text for item in question.rubric)]
    forms = {form for secret in secrets for form in (secret, json.dumps(secret)[1:-1])}
    for file in sorted(p for p in full_starter.rglob("*") if p.is_file()):
        text = file.read_bytes().decode("utf-8", errors="replace")
        markers = set(written.MARKERS) if file.suffix != ".py" else set()  # the grader's names
        found = [form[:60] for form in forms | markers if form in text]
        assert not found, f"{file.relative_to(full_starter)} holds {found}"
    for path in sorted((full_starter / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        for cell in filter(written.is_written, cells):
            assert "**Your answer**" in "".join(cell["source"]), path.name


@pytest.mark.slow
def test_no_module_of_the_starter_defines_a_hidden_fixture(full_starter, handed_by_public_checks):
    """No shipped module defines (by name, or with the same body under another name) a trusted
    helper that only hidden tests use (the diagnose exercises' hidden implementations among
    them), and no shipped helper keeps a keyword-only switch that only a hidden fixture sets
    (``_rope(..., decode_shift=1)`` is a hidden implementation). Reference answers are looked for
    by behaviour: :func:`test_no_function_of_the_starter_returns_a_reference_answer`."""
    trees = _shipped_python(full_starter)
    functions = _functions(trees)
    bodies = {_body(node): f"{file}::{name}" for name, found in functions.items()
              for file, node in found if len(_body(node)) > 400}  # more than a line or two
    suites = [_Suite(suite, full_starter) for suite in ALL_SUITES]
    notebooks = "\n".join(_notebook_code(suite) for suite in ALL_SUITES)
    problems = []
    hidden = _hidden_fixtures(suites, notebooks, handed_by_public_checks)
    assert "permutation_invariance.causal_mean" in hidden  # a hidden case handed over as a fixture
    # The black boxes' implementations (the diagnose exercises' cases, the reference answers) live
    # in grader/judge/hidden: never shipped, and none of them defined, by name or by body, elsewhere.
    assert not any(name.startswith("grader/judge/hidden/") for name in trees), "grader/judge/hidden is shipped"
    for path in sorted((ROOT / "grader" / "judge" / "hidden").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for file, shipped in trees.items():  # a trusted helper of the same name
                    if file.startswith("grader/fixtures/") and node.name in _definitions(shipped) \
                            and not node.name.startswith("__"):
                        problems.append(f"grader/judge/hidden/{path.name}'s {node.name} is defined in {file}")
                if _body(node) in bodies:
                    problems.append(f"grader/judge/hidden/{path.name}'s {node.name} has the body of {bodies[_body(node)]}")
    for ref, node in sorted(hidden.items()):
        module, name = ref.split(".")
        shipped = trees.get(f"grader/fixtures/{module}.py")
        if shipped is not None and name in _definitions(shipped):
            problems.append(f"hidden fixture {ref} defined in grader/fixtures/{module}.py")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body(node) in bodies:
            problems.append(f"hidden fixture {ref}'s body is {bodies[_body(node)]}")
    # A switch that only hidden cases set (a keyword-only parameter of a shipped helper, which a
    # hidden fixture of its module sets to turn a bug on) hands the learner every hidden case.
    switches = set()
    for ref, node in hidden.items():
        module = ref.split(".")[0]
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                switches |= {(f"{module}.{call.func.id}", k.arg) for k in call.keywords if k.arg}
    for ref, switch in sorted(switches):
        module, name = ref.split(".")
        shipped = trees.get(f"grader/fixtures/{module}.py")
        found = _definitions(shipped).get(name, []) if shipped is not None else []
        set_in_shipped = any(k.arg == switch for n in ast.walk(shipped or ast.Module(body=[]))
                             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                             and n.func.id == name for k in n.keywords)
        if not set_in_shipped and any(switch in {a.arg for a in node.args.kwonlyargs}
                                      for node in found if isinstance(node, ast.FunctionDef)):
            problems.append(f"{ref}, shipped, keeps the switch {switch}= that only hidden cases "
                            "set")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_no_hidden_parameter_appears_in_the_starter(full_starter):
    """Of each suite, no module-level name that only its hidden tests read (a public check that
    overrides a helper's default does not read the default) and no literal that only they read
    (a number, or a string with words) is in its shipped suite or in the fixtures and notebook
    modules it reads (what the learner's notebook shows is no secret); recorded values are those
    of helpers its public checks call."""
    trees = _shipped_python(full_starter)
    problems = []
    for suite in ALL_SUITES:
        found = _Suite(suite, full_starter)
        # the suite's shipped file, and the fixtures and notebook modules it reads
        scope = {f"grader/judge/suites/test_{suite}.py", *found.modules} & set(trees)
        assert f"grader/judge/suites/test_{suite}.py" in scope
        for file in sorted(scope):
            problems += [f"{suite}: {name} (read only by hidden tests) appears in {file}"
                         for name in sorted(found.hidden_only & _identifiers(trees[file]))]
            leaked = _literals(list(ast.walk(trees[file]))) & found.hidden_literals
            problems += [f"{suite}: {value!r} (read only by hidden tests) is a constant of {file}"
                         for value in sorted(leaked, key=repr)]
        assert found.recorded <= found.public, (suite, found.recorded - found.public)
    assert not problems, "\n".join(problems)


_ONLY_THE_STARTER = """\
import sys
# The course's own checkout must not supply what the starter lacks: drop the editable install's
# finders, so that `grader` and everything under it come from the starter alone.
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()
                    and "editable" not in type(f).__name__.lower()]
sys.path_importer_cache.clear()
sys.path.insert(0, sys.argv[1])
import grader
assert grader.__file__.startswith(sys.argv[1]), grader.__file__
try:
    import grader.judge.hidden
except ImportError:
    pass
else:
    raise SystemExit("grader.judge.hidden is importable from the starter")
from grader.cli import main
sys.exit(main(sys.argv[2:]))
"""


WITHOUT_HIDDEN = ["04_rotary_embeddings", "05_context_extension"]


@pytest.fixture(scope="module")
def checked_without_hidden(request, full_starter, tmp_path_factory
                           ) -> tuple[subprocess.CompletedProcess, list]:
    """The solutions of :data:`WITHOUT_HIDDEN` (those this run selected) checked in the full
    starter in one ``grader check`` run, as a learner checks their notebooks (torch imported
    once): the process and its results' tests."""
    suites = [item.callspec.params["suite"] for item in request.session.items
              if getattr(item, "originalname", None)
              == "test_the_starters_public_checks_run_without_the_hidden_implementations"]
    folder = tmp_path_factory.mktemp("without-hidden")
    for suite in suites:
        shutil.copy(SOLUTIONS / f"{suite}.ipynb", folder / f"{suite}.ipynb")
    report = folder / "results.json"
    process = subprocess.run(
        [sys.executable, "-c", _ONLY_THE_STARTER, str(full_starter), "check",
         *(str(folder / f"{suite}.ipynb") for suite in suites), "--skip-execution",
         "--json", str(report), "--hidden-visibility", "visible"],
        cwd=full_starter, text=True, capture_output=True, timeout=600,
        env={**os.environ, "GRADER_NO_BWRAP": "1"})
    return process, json.loads(report.read_text())["tests"] if report.is_file() else []


@pytest.mark.slow
@pytest.mark.parametrize("suite", WITHOUT_HIDDEN)
def test_the_starters_public_checks_run_without_the_hidden_implementations(checked_without_hidden,
                                                                           suite):
    """In a starter, where grader/judge/hidden is absent, notebooks 04's and 05's public checks load and
    pass on the solution, the diagnose exercises' among them (their public cases are built in the
    suite from shipped code)."""
    process, tests = checked_without_hidden
    assert process.returncode == 0, process.stdout[-2000:] + process.stderr[-2000:]
    tests = [t for t in tests if t["name"].startswith(suite)]
    assert tests
    diagnose = {"04_rotary_embeddings": "rope_is_faithful", "05_context_extension": "diagnose_rope"}[suite]
    assert any(diagnose in t["tags"] for t in tests)
    failing = {t["name"]: t["output"] for t in tests if t["score"] < t["max_score"]}
    assert not failing, failing


@pytest.fixture(scope="module")
def hidden_cases(tmp_path_factory) -> Path:
    """The hidden cases of every exercise with the solution's answers (tests/export/hidden_cases.py,
    in a process of its own: it runs the hidden suites, which declare their own pytest markers)."""
    out = tmp_path_factory.mktemp("hidden-cases") / "cases.bin"
    process = subprocess.run([sys.executable, "-m", "tests.export.hidden_cases", str(out)], cwd=ROOT,
                             text=True, capture_output=True, timeout=900)
    assert process.returncode == 0, process.stdout[-2000:] + process.stderr[-2000:]
    return out


def _starter_answers(starter: Path, cases: Path, *extra: str) -> dict:
    process = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "export" / "starter_answers.py"), str(starter), str(cases),
         *extra], cwd=starter, text=True, capture_output=True, timeout=1200,
        env={**os.environ, "GRADER_NO_BWRAP": "1"})
    assert process.returncode == 0, process.stdout[-2000:] + process.stderr[-2000:]
    return json.loads(process.stdout.splitlines()[-1])


KNOWN_ANSWERS = {
    "notebooks/03_addition_vs_concatenation.ipynb.sinusoids answers 02_sinusoidal_encoding:sinusoidal_encoding":
        "notebook 03's setup cell computes notebook 02's encoding (float64) for its experiments, so a "
        "starter that holds both notebooks hands over sinusoidal_encoding's values; still open: "
        "notebook 03 should get the tables it uses, not the function",
}
"""Reference answers a starter still ships, each with what it is; the test fails when one is
closed (remove it here) as when a new one appears."""


@pytest.mark.slow
def test_no_function_of_the_starter_returns_a_reference_answer(full_starter, hidden_cases):
    """Every function the starter ships (its runtime, public suites, trusted helpers, and the
    functions the released notebooks define), called on the hidden cases of every
    exercise whose cases' arguments are data, returns the solution's answers on none of them
    (within a tolerance looser than any exercise's): it holds no reference computation. The
    search is shown to work: the solution of unchanged_outputs, added to the functions, is found
    (the public checks of notebook 01 once shipped its reference, ``_unchanged(perm)``)."""
    found = _starter_answers(full_starter, hidden_cases, "--plant",
                             "01_permutation_invariance:unchanged_outputs", str(SOLUTIONS))
    assert found["functions"] > 200
    checked = {name.split(":")[1] for name in found["exercises"]}
    assert {"unchanged_outputs", "scaled_dot_product_attention", "rope_cost", "apply_rope",
            "sinusoidal_encoding", "embed"} <= checked, checked
    planted = "planted.unchanged_outputs answers 01_permutation_invariance:unchanged_outputs"
    assert planted in found["answers"]
    assert sorted(set(found["answers"]) - {planted}) == sorted(KNOWN_ANSWERS)
