"""Build the starter repository: what learners clone (or a GitHub Classroom assignment starts from).

It holds the released notebooks, the assets those notebooks need, the grading runtime, the
learner's README and a workflow that grades the learner's notebooks with the public checks. It
holds no ``solutions/``, no hidden test, no reference implementation and no catalogue of wrong
answers: a fork of a public repository is public, so a class's answers would be too.

The public checks keep their code, so ``check()`` and ``python3 course.py grade`` judge exactly
as the course's grader does. What a public check compares against comes from the reference
helpers of the hidden suite; those are run once here, with the solution notebook as the learner,
and each is replaced by the values it returned (:mod:`grader.judge.recorded`). A helper that is handed
the learner's own answer cannot be recorded (the answer is not known in advance) and stays as
code; :func:`build` returns their names so the instructor can read what is shipped.
"""
from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.sandbox import child as _child, codec
from grader.errors import GraderError
from grader.export.hosted import assets_for, classroom_public
from grader.judge.selection import select_suites
from grader.judge.proxy import StudentProxy, suite_exercises, suite_path
from grader.notebook.read import code_cells, read_notebook, sandbox_cells, to_python
from grader.judge.recorded import PUBLIC_ONLY, SUFFIX, key, near_key, table
from grader.sandbox.parent import result_of_reply

GRADER_DIR = Path(__file__).resolve().parents[1]
ROOT = GRADER_DIR.parent
TEMPLATES = GRADER_DIR / "export" / "hosted" / "templates"
COURSE_FILES = ("course.py", "pyproject.toml", "environment.yml", "LICENSE", ".gitignore")
"""Files of the course's root that a learner's copy needs, copied as they are."""
WORKFLOW = Path(".github/workflows/grade-my-notebooks.yml")
CLASSROOM_WORKFLOW = Path(".github/workflows/classroom.yml")
"""GitHub Classroom's autograding: the public checks, partial credit per check."""
RUNTIME = ("__init__", "__main__", "assets", "cli", "errors", "grade", "inline", "results",
           "sandbox/__init__", "sandbox/child", "sandbox/codec", "sandbox/confinement",
           "sandbox/parent", "sandbox/supervise",
           "notebook/__init__", "notebook/_imports", "notebook/_nbval_plugin", "notebook/execute",
           "notebook/given", "notebook/overwrite", "notebook/read", "notebook/release",
           "notebook/time_limits",
           "notebook/written",
           "judge/__init__", "judge/properties", "judge/proxy", "judge/recorded", "judge/selection",
           "report/__init__", "report/classroom_points", "report/feedback", "report/render",
           "report/written",
           "batch/__init__", "batch/assignment", "batch/class_files", "batch/deadlines",
           "batch/enrolment", "batch/gradebook", "batch/grading", "batch/lms", "batch/merge",
           "batch/roster", "batch/shards", "batch/written", "batch/written_loop")
"""The grader's modules every starter ships (an allow-list: a new module is shipped only once it
is named here). Never ``starter``, ``variants`` (the catalogue's grading), ``hosted`` (the
Gradescope zip and the class workflows carry hidden tests), the suites or the fixtures, which are
shipped per notebook, cut to what the public checks use."""
PER_NOTEBOOK = ("judge/context_lm",)
"""Modules of one notebook's checks, shipped only when a shipped suite or notebook imports them."""


@dataclass
class PublicSuite:
    """A notebook's public checks as shipped: the suite's source and its recorded values."""
    suite: str
    source: str
    records: dict[str, dict[str, Any]]
    near: dict[str, list[dict]]
    tests: list[str]
    kept: list[str] = field(default_factory=list)
    """Helpers shipped as code because they are handed the learner's answer."""
    fixtures: list[str] = field(default_factory=list)
    """The trusted helpers (``module.function`` of :mod:`grader.fixtures`) the public checks
    handed the learner's code while they were recorded."""


# -- the public checks ---------------------------------------------------------------------------
def _is_public(node: ast.AST) -> bool:
    for decorator in getattr(node, "decorator_list", []):
        for keyword in ast.walk(decorator):
            if isinstance(keyword, ast.keyword) and keyword.arg == "public" \
                    and isinstance(keyword.value, ast.Constant) and keyword.value.value is True:
                return True
    return False


def _defined(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return []


def _closure(tree: ast.Module) -> tuple[dict[str, ast.AST], list[str], set[str]]:
    """The suite's top-level definitions, its public tests, and every name they need."""
    definitions = {name: node for node in tree.body for name in _defined(node)}
    tests = [name for name, node in definitions.items()
             if name.startswith("test_") and _is_public(node)]
    return definitions, tests, _needed(definitions, [*tests, "EXERCISE_ORDER"])


def _needed(definitions: dict[str, ast.AST], roots: list[str],
            opaque: set[str] = frozenset()) -> set[str]:
    """The names ``roots`` use, directly or through others, not looking inside ``opaque`` ones
    (recorded helpers: their code is not shipped, so what only they use is not needed)."""
    needed, stack = set(), list(roots)
    while stack:
        name = stack.pop()
        if name in needed or name not in definitions:
            continue
        needed.add(name)
        if name not in opaque:
            stack += [n.id for n in ast.walk(definitions[name])
                      if isinstance(n, ast.Name) and n.id in definitions]
    return needed


def _solution_namespace(suite: str, solutions: Path) -> dict:
    """The solution notebook's setup and exercise cells, executed here (trusted code)."""
    path = solutions / f"{suite}.ipynb"
    if not path.is_file():
        raise GraderError(f"{path}: no solution notebook to record the public checks from")
    namespace: dict = {"__name__": f"solution_{suite}"}
    previous = os.environ.get("GRADER_SANDBOX")
    os.environ["GRADER_SANDBOX"] = "1"  # check() calls in the cells do nothing
    try:
        for label, source in sandbox_cells(read_notebook(path), suite_exercises(suite)):
            exec(compile(source, f"{path.name} {label}", "exec"), namespace)
    finally:
        if previous is None:
            del os.environ["GRADER_SANDBOX"]
        else:
            os.environ["GRADER_SANDBOX"] = previous
    return namespace


def _fixture_refs(value: Any) -> set[str]:
    """The names of the :class:`grader.sandbox.codec.FixtureRef` inside ``value`` (lists, tuples, dicts)."""
    if isinstance(value, codec.FixtureRef):
        return {value.name}
    if isinstance(value, (list, tuple)):
        return set().union(*map(_fixture_refs, value)) if value else set()
    if isinstance(value, dict):
        return set().union(*map(_fixture_refs, value.values())) if value else set()
    return set()


def _ids(value: Any, into: set[int]) -> None:
    """The ids of ``value`` and of what it holds, but of no number, string, bool or None: those
    are shared objects (every ``3`` of a process may be one object), so an id of one says
    nothing about whose answer it came from. A helper handed the learner's number is told by
    the second pass (its nudged answers)."""
    if not (value is None or isinstance(value, (bool, int, float, complex, str, bytes))):
        into.add(id(value))
    if isinstance(value, (list, tuple)):
        for item in value:
            _ids(item, into)
    elif isinstance(value, dict):
        for item in value.values():
            _ids(item, into)


def _nudged(value: Any) -> Any:
    """``value`` with every float moved by a couple of units in the last place."""
    if isinstance(value, float):
        return value * (1 + 4e-16) + 1e-300
    if isinstance(value, (list, tuple)):
        return type(value)(_nudged(v) for v in value)
    if isinstance(value, dict):
        return {k: _nudged(v) for k, v in value.items()}
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor) and value.is_floating_point():
        return value + value.abs() * (2 * torch.finfo(value.dtype).eps)
    if hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "f":
        import numpy as np

        return value + np.abs(value) * (2 * np.finfo(value.dtype).eps)
    return value


def record(suite: str, *, solutions: Path | None = None) -> PublicSuite:
    """Run ``suite``'s public checks against its solution and write what learners get."""
    path = suite_path(suite)
    text = path.read_text()
    tree = ast.parse(text)
    definitions, tests, needed = _closure(tree)
    helpers = {n for n in needed if not n.startswith("test_")
               and isinstance(definitions[n], (ast.FunctionDef, ast.AsyncFunctionDef))}
    # a helper called while the module is imported has to exist as code
    at_import = {n.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                 and set(_defined(node)) & needed for n in ast.walk(node)
                 if isinstance(n, ast.Name)}
    kept = set(helpers & at_import)
    namespace = _solution_namespace(suite, solutions or ROOT / "solutions")

    spec = importlib.util.spec_from_file_location(f"_starter_record_{suite}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    answers: set[int] = set()
    alive: list = []  # keeps the learner's answers alive so that their ids stay theirs

    perturb = [False]  # the second pass nudges the answers: who then sees new inputs uses them

    fixtures: set[str] = set()  # the trusted helpers the public checks hand the learner

    def call(name: str, args: tuple, kwargs: dict, timeout: float) -> Any:
        fixtures.update(_fixture_refs((args, kwargs)))
        request = codec.encode({"op": "call", "name": name, "args": list(args), "kwargs": kwargs})
        result = result_of_reply(name, codec.decode(_child.dispatch(namespace, request)))
        if perturb[0]:
            result = _nudged(result)
        alive.append(result)
        _ids(result, answers)
        return result

    records: dict[str, dict[str, Any]] = {name: {} for name in helpers}
    near: dict[str, list[dict]] = {}

    def recorder(name: str, original):
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            seen: set[int] = set()
            _ids((args, kwargs), seen)
            if name in kept or seen & answers:
                kept.add(name)
                return result
            try:
                wanted = key(args, kwargs)
                if perturb[0]:
                    if wanted not in records[name]:
                        kept.add(name)  # its inputs follow the learner's answer
                elif wanted not in records[name]:
                    records[name][wanted] = codec.decode(codec.encode(result))
                    shape, floats = near_key(args, kwargs)
                    near.setdefault(name, []).append({"key": wanted, "near": shape,
                                                      "floats": floats})
            except codec.CodecError:
                kept.add(name)
            return result
        return wrapper

    for name in helpers:
        setattr(module, name, recorder(name, getattr(module, name)))
    for test in tests:
        try:
            getattr(module, test)(StudentProxy(call))
        except Exception as exc:
            raise GraderError(f"{path.name}::{test} fails on the solution notebook ({exc}); "
                              "fix the suite or the solution before building a starter") from None
    perturb[0] = True
    for test in tests:
        try:
            getattr(module, test)(StudentProxy(call))
        except Exception:  # a nudge past a test's tolerance: the keys seen so far still count
            pass
    records = {name: values for name, values in records.items() if name not in kept}
    needed = _needed(definitions, [*tests, "EXERCISE_ORDER"], opaque=set(records))
    records = {name: values for name, values in records.items() if name in needed}
    kept &= needed
    near = {name: entries for name, entries in near.items() if name in records}
    return PublicSuite(suite=suite, source=_source(suite, text, tree, needed, set(records)),
                       records=records, near=near, tests=tests, kept=sorted(kept),
                       fixtures=sorted(fixtures))


def _source(suite: str, text: str, tree: ast.Module, needed: set[str], recorded: set[str]) -> str:
    lines = text.splitlines()
    parts = [f'"""The public checks of notebook {suite}, generated by `python -m grader '
             'starter-repo`.\n\nThe hidden tests are not here: your instructor runs them. Values '
             'the checks compare against\nare read from the file beside this one.\n"""',
             "from grader.judge.recorded import replayed"]
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) \
                and (node.module or "").split(".")[:3] == ["grader", "judge", "hidden"]:
            # grader/judge/hidden is never shipped: a stand-in that says so when a check uses it
            parts.append("from grader.judge.recorded import unshipped\n" + "\n".join(
                f"{alias.asname or alias.name} = unshipped({node.module + '.' + alias.name!r})"
                for alias in node.names))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            parts.append(ast.get_source_segment(text, node))
            continue
        names = set(_defined(node)) & needed
        if not names:
            continue
        if names <= recorded:
            parts.append("\n".join(f"{n} = replayed(__file__, {n!r})" for n in sorted(names)))
            continue
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        parts.append("\n".join(lines[start - 1:node.end_lineno]))
    return "\n\n\n".join(parts) + "\n"


# -- the repository ------------------------------------------------------------------------------
def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def fixtures_used(sources: list[str], recorded: list[str] = ()) -> dict[str, set[str]]:
    """``{module: names}`` of :mod:`grader.fixtures` that the Python ``sources`` (shipped suites,
    notebooks' code cells) name (``from grader.fixtures.M import a``, ``grader.fixtures.M.a``,
    ``alias.a`` after ``from grader.fixtures import M as alias``, ``fixture("M.a")``), with
    ``recorded`` (the ``M.a`` the public checks handed the learner while they were recorded).
    An empty set: a module named whole, in a way that does not say which of its names are used."""
    used: dict[str, set[str]] = {}
    for ref in recorded:
        module, _, name = ref.partition(".")
        used.setdefault(module, set()).add(name)
    for text in sources:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("grader.fixtures."):
                module = node.module.split(".")[2]
                used.setdefault(module, set()).update(a.name for a in node.names if a.name != "*")
                if any(a.name == "*" for a in node.names):
                    used[module] = set()
            elif isinstance(node, ast.ImportFrom) and node.module == "grader.fixtures":
                for alias in node.names:
                    aliases[alias.asname or alias.name] = alias.name
                    used.setdefault(alias.name, set())
        for alias, module in aliases.items():
            names = set(re.findall(rf"(?<![\w.]){alias}\.(\w+)", text))
            used[module] |= names
            if not names or re.search(rf"(?<![\w.]){alias}\b(?!\.)", _without_imports(text)):
                used[module] = set()  # the module itself is handed around: ship it whole
        for module, name in re.findall(r"grader\.fixtures\.(\w+)\.(\w+)", text):
            used.setdefault(module, set()).add(name)
        for module, name in re.findall(r"fixture\([\"'](\w+)\.(\w+)[\"']", text):
            used.setdefault(module, set()).add(name)
    return used


def _without_imports(text: str) -> str:
    return "\n".join(line for line in text.splitlines()
                     if not line.lstrip().startswith(("import ", "from ")))


def fixture_source(module: str, names: set[str]) -> str:
    """The shipped copy of ``grader/fixtures/<module>.py``: its imports and the definitions that
    ``names`` need (directly or through others), in the file's order; the module's docstring and
    everything the public checks do not reach are left out."""
    text = (GRADER_DIR / "fixtures" / f"{module}.py").read_text()
    tree = ast.parse(text)
    definitions = {name: node for node in tree.body for name in _defined(node)}
    needed = _needed(definitions, sorted(names))
    lines = text.splitlines()
    parts = [f'"""The trusted helpers of notebook {module} that the public checks use, generated '
             'by `python -m grader starter-repo`."""']
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            parts.append(ast.get_source_segment(text, node))
        elif set(_defined(node)) & needed:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            parts.append("\n".join(lines[start - 1:node.end_lineno]))
    return "\n\n\n".join(parts) + "\n"


def readme(suites: list[str]) -> str:
    """The learner's README of the starter repository."""
    listing = "\n".join(f"- `notebooks/{suite}.ipynb`" for suite in suites)
    return (TEMPLATES / "starter_README.md").read_text().replace("{{NOTEBOOKS}}", listing)


def build(out: Path, *, notebooks: list[str] | None = None,
          solutions: Path | None = None) -> list[PublicSuite]:
    """Write the starter repository for ``notebooks`` (default: all) into the empty or new
    folder ``out``; returns each notebook's public suite (tests, kept helpers)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise GraderError(f"{out} already exists and is not an empty folder; name a new folder")
    suites = select_suites(notebooks)
    publics = [record(suite, solutions=solutions) for suite in suites]
    out.mkdir(parents=True, exist_ok=True)
    for suite in suites:
        _copy(ROOT / "notebooks" / f"{suite}.ipynb", out / "notebooks" / f"{suite}.ipynb")
    for path in assets_for(suites, learners=True):
        _copy(path, out / "assets" / path.relative_to(ROOT / "assets"))
    texts = [p.source for p in publics] + [to_python(cell.source) for suite in suites
                                           for _, cell in code_cells(read_notebook(
                                               ROOT / "notebooks" / f"{suite}.ipynb"))]
    per_notebook = {m for m in PER_NOTEBOOK
                    if any(re.search(rf"\bgrader\.{m.replace('/', '.')}\b|\bfrom grader\."
                                     rf"{m.rpartition('/')[0]} import {m.rpartition('/')[2]}\b", t)
                           for t in texts)}
    for name in (*RUNTIME, *sorted(per_notebook)):
        _copy(GRADER_DIR / f"{name}.py", out / "grader" / f"{name}.py")
    suites_dir = out / "grader" / "judge" / "suites"
    _copy(GRADER_DIR / "judge" / "suites" / "pytest.ini", suites_dir / "pytest.ini")
    for public in publics:
        (suites_dir / f"test_{public.suite}.py").write_text(public.source)
        (suites_dir / f"test_{public.suite}{SUFFIX}").write_bytes(
            codec.encode(table(public.records, public.near)))
    (suites_dir / PUBLIC_ONLY.name).write_text(
        "The suites in this folder hold the public checks only; the hidden tests are run by the "
        "instructor.\n")
    _copy(GRADER_DIR / "fixtures" / "__init__.py", out / "grader" / "fixtures" / "__init__.py")
    recorded = [ref for public in publics for ref in public.fixtures]
    for module, names in sorted(fixtures_used(texts, recorded).items()):
        source = GRADER_DIR / "fixtures" / f"{module}.py"
        if not source.is_file():
            continue
        target = out / "grader" / "fixtures" / f"{module}.py"
        if names:
            target.write_text(fixture_source(module, names))
        else:  # named whole: shipped whole
            _copy(source, target)
    for name in COURSE_FILES:
        if (ROOT / name).is_file():
            _copy(ROOT / name, out / name)
    (out / WORKFLOW).parent.mkdir(parents=True, exist_ok=True)
    (out / WORKFLOW).write_text(classroom_public.starter_grading_workflow(
        (ROOT / WORKFLOW).read_text()))  # by hand only: classroom.yml grades every push
    classroom = out / CLASSROOM_WORKFLOW
    classroom.write_text(classroom_public.workflow(suites))
    (out / "README.md").write_text(readme(suites))
    return publics


def main(out: Path, notebooks: list[str] | None = None) -> None:
    """``python -m grader starter-repo``: build, then say what was written."""
    publics = build(out, notebooks=notebooks)
    for public in publics:
        kept = f"; shipped as code (handed the learner's answer): {', '.join(public.kept)}" \
            if public.kept else ""
        print(f"{public.suite}: {len(public.tests)} public checks, {len(public.records)} "
              f"reference helpers replaced by recorded values{kept}")
    print(f"starter repository written to {out}", flush=True)
    print("push it as a new repository (a template for GitHub Classroom); never give learners a "
          "fork of the course", file=sys.stderr)
