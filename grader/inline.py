"""``check(name)``: a learner runs an exercise's public checks from inside the notebook.

The check sees what the grader sees. The grader loads only the notebook's ``setup`` and
``exercise`` cells (:func:`grader.notebook.read.sandbox_cells`); the check reads the same cells, from
the notebook's file (their tags, and their sources as the kernel last ran them where the front end
tells the kernel which cell runs), and hands the public checks a view of the kernel's globals
that holds only the names those cells bind. The notebook's functions in the view look their
globals up in the view, so a helper defined in an ordinary cell fails the check with the
grader's own reason (``NameError: name '...' is not defined``).
"""
from __future__ import annotations

import ast
import os
import sys
import types
from pathlib import Path
from typing import Any

from grader.sandbox import child as _child, codec
from grader.errors import GraderError
from grader.judge.proxy import known_suites, run_suite, suite_exercises, suite_path
from grader.notebook.read import exercise_names, read_notebook, sandbox_cells, suite_name
from grader.judge.recorded import hidden_note
from grader.results import PASSED
from grader.sandbox.parent import result_of_reply

NOT_FOUND = ("(this check could not read from the notebook's file which names the grader loads, "
             "so it saw every name the kernel holds; the grader loads only the setup and "
             "exercise cells)")
"""Said first when the check cannot tell what the grader loads (it then checks the kernel as is)."""


def _in_process(namespace: dict):
    """A call into ``namespace`` through the same messages the sandbox uses (no process)."""

    def call(name: str, args: tuple, kwargs: dict, timeout: float) -> Any:
        request = codec.encode({"op": "call", "name": name, "args": list(args), "kwargs": kwargs})
        return result_of_reply(name, codec.decode(_child.dispatch(namespace, request)))

    return lambda exercise: (call, [])


def suites_for(exercise: str) -> list[str]:
    """The suites whose source names ``exercise`` (so check() collects only those)."""
    return [s for s in known_suites() if f'"{exercise}"' in suite_path(s).read_text()]


# -- which notebook, which cells --------------------------------------------------------------
def notebook_path(namespace: dict, suites: list[str]) -> Path | None:
    """The file of the notebook whose kernel holds ``namespace``, if it can be found.

    Tried in order: the path VS Code (``__vsc_ipynb_file__``) and Jupyter Server (``__session__``,
    ``JPY_SESSION_NAME``) give the kernel, then ``SUITE.ipynb`` in the kernel's working folder
    (where nbval and ``jupyter nbconvert --execute`` start it) for each suite of the exercise.
    """
    given = [namespace.get("__vsc_ipynb_file__"), namespace.get("__session__"),
             os.environ.get("JPY_SESSION_NAME")]
    candidates = []
    for value in given:
        if isinstance(value, str) and value.endswith(".ipynb"):
            candidates += [Path(value), Path.cwd() / Path(value).name]
    candidates += [Path.cwd() / f"{suite}.ipynb" for suite in suites]
    return next((path for path in candidates if path.is_file()), None)


def executed_sources() -> dict[str, str]:
    """The source each cell last ran in this kernel, by cell id (recorded by :mod:`grader`)."""
    import grader

    return dict(getattr(grader, "_CELL_SOURCES", {}))


def grader_cells(path: Path, suites: list[str]) -> list[tuple[str, str]]:
    """The ``(label, source)`` cells the grader would load from the notebook at ``path``: its
    setup and exercise cells (:func:`grader.notebook.read.sandbox_cells`), each with the source the
    kernel last ran for it where the kernel knows (an edit not yet saved), else the file's."""
    notebook = read_notebook(path)
    ran = executed_sources()
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.get("id") in ran:
            cell.source = ran[cell.get("id")]
    suite = suite_name(notebook, path)
    exercises = set(exercise_names(notebook))
    for name in [suite, *suites] if suite in known_suites() else suites:
        exercises |= suite_exercises(name)
    return sandbox_cells(notebook, exercises)


def bound_names(source: str) -> set[str] | None:
    """The global names that running ``source`` binds (``None`` if it cannot tell: a syntax
    error, or ``from ... import *``). Names bound inside functions and classes do not count,
    unless declared ``global`` there."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    names: set[str] = set()

    def visit(node: ast.AST, top: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if top:
                names.add(node.name)
            for inner in ast.walk(node):
                if isinstance(inner, ast.Global):
                    names.update(inner.names)
            return
        if isinstance(node, ast.Lambda):
            return
        if top and isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    raise LookupError("star import")
                names.add(alias.asname or alias.name.split(".")[0])
        elif top and isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif top and isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif top and isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        comprehension = isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp,
                                          ast.GeneratorExp))
        for child in ast.iter_child_nodes(node):
            visit(child, top and not comprehension)

    try:
        for statement in tree.body:
            visit(statement, True)
    except LookupError:
        return None
    return names


def _rebound(value: Any, kernel: dict, view: dict) -> Any:
    """A function defined in the kernel's globals, as a copy that looks its globals up in
    ``view``; anything else unchanged."""
    if not isinstance(value, types.FunctionType) or value.__globals__ is not kernel:
        return value
    copy = types.FunctionType(value.__code__, view, value.__name__, value.__defaults__,
                              value.__closure__)
    copy.__kwdefaults__ = value.__kwdefaults__
    copy.__qualname__, copy.__doc__ = value.__qualname__, value.__doc__
    copy.__module__, copy.__annotations__ = value.__module__, value.__annotations__
    copy.__dict__.update(value.__dict__)
    return copy


def grader_view(namespace: dict, cells: list[tuple[str, str]]) -> dict | None:
    """The names of ``namespace`` (the kernel's globals) that ``cells`` bind, in a namespace
    like the sandbox's (:func:`grader.sandbox.child.fresh_namespace`); ``None`` when a cell's names
    cannot be told (then the caller checks the kernel as is)."""
    names: set[str] = set()
    for _, source in cells:
        bound = bound_names(source)
        if bound is None:
            return None
        names |= bound
    view = _child.fresh_namespace()
    view.update({name: namespace[name] for name in names if name in namespace})
    for name in names & view.keys():
        view[name] = _rebound(view[name], namespace, view)
    return view


def check(name: str, namespace: dict | None = None, *, notebook: Path | None = None) -> bool:
    """Run the public checks of exercise ``name`` on the function defined in the notebook.

    Prints one line per check and a summary, and returns True when every public check passed.
    Public checks are a subset of what the grader runs: passing them is not full marks.
    ``namespace`` defaults to the caller's globals (the notebook's). The checks see only what
    the grader loads from ``notebook`` (default: found by :func:`notebook_path`), the setup and
    exercise cells; when no notebook file is found they see ``namespace`` whole, and say so.
    """
    if namespace is None:
        namespace = sys._getframe(1).f_globals
    suites = suites_for(name)
    path = notebook if notebook is not None else notebook_path(namespace, suites)
    view = None
    if path is not None:
        try:
            view = grader_view(namespace, grader_cells(path, suites))
        except GraderError:
            view = None
    if view is None and suites:
        print(NOT_FOUND)
    results = []
    for suite in suites:
        results += run_suite(suite, _in_process(namespace if view is None else view),
                             exercises={name}, public_only=True)
    if not results:
        print(f"{name}: no public checks found; check the spelling of the exercise's name")
        return False
    passed = sum(r.status == PASSED for r in results)
    for result in results:
        mark = "ok  " if result.status == PASSED else "FAIL"
        print(f"  {mark} {result.description or result.name}")
        if result.status != PASSED:
            print(f"       {result.output}")
    failing = [r.description or r.name for r in results if r.status != PASSED]
    verdict = f"{name}: {passed} of {len(results)} public checks passed"
    if failing:
        verdict += f"; failing: {'; '.join(failing)}"
    print(f"{verdict}. {hidden_note()}")
    return not failing
