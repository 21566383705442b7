"""Call every function a starter repository ships on the hidden cases of every exercise, and name
those that return the reference answer.

    python tests/export/starter_answers.py STARTER CASES [--plant SUITE:EXERCISE SOLUTIONS]

Run with the starter alone on the path (the course's own ``grader`` is dropped from the import
system first), so what it finds is what a learner holds. The functions: every function defined
at the top level of every Python module under ``STARTER/grader`` (the runtime, the public suites,
the trusted helpers), and of every released notebook: its setup cells run, then the imports and
definitions of its other code cells (their experiments are not run). The cases: ``CASES``, written by :mod:`tests.export.hidden_cases`.

A function returns the reference answer of an exercise when, called with each hidden case's
arguments (where they bind to its signature), it returns the solution's answer on every case,
within :func:`same`'s tolerance (the loosest the suites grant a float answer, so that nothing
close slips by), and the exercise's cases do not all have one answer (a constant is no reference
computation). Prints one JSON object: ``{"functions": N, "exercises": [checked],
"answers": ["module.function answers suite:exercise", ...]}``. ``--plant`` adds that exercise's
solution (from the notebook in the folder SOLUTIONS) to the functions, to show the search finds one.
"""
from __future__ import annotations

import sys

STARTER, CASES = sys.argv[1], sys.argv[2]
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()
                    and "editable" not in type(f).__name__.lower()]
sys.path_importer_cache.clear()
sys.path[:] = [STARTER] + [p for p in sys.path if p and "site-packages" in p or "lib/python" in p]

import ast  # noqa: E402
import importlib.util  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import grader  # noqa: E402

assert grader.__file__.startswith(STARTER), grader.__file__
from grader.notebook.read import read_notebook, sandbox_cells, to_python  # noqa: E402
from grader.sandbox import codec  # noqa: E402

RTOL, ATOL = 1e-3, 1e-5
"""Looser than every suite's tolerance of a float answer (float32 RoPE at 1e-6, R^2 at 0.05 is an
absolute one: a function off by as much would not be the reference computation, only near it)."""
CALL_SECONDS = 5


def same(got, want) -> bool:
    """Whether ``got`` is ``want``: tensors and arrays of the same shape, close within RTOL/ATOL
    (integers and booleans exactly), numbers likewise, lists, tuples and dicts item by item,
    anything else by ``==``."""
    if isinstance(want, (torch.Tensor, np.ndarray)):
        if not isinstance(got, (torch.Tensor, np.ndarray)):
            return False
        g = got.detach().cpu().double().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
        w = want.detach().cpu().double().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
        if g.shape != w.shape:
            return False
        if g.dtype.kind in "biu" and w.dtype.kind in "biu":
            return bool(np.array_equal(g, w))
        try:
            return bool(np.allclose(g.astype(np.complex128), w.astype(np.complex128), rtol=RTOL,
                                    atol=ATOL, equal_nan=True))
        except (TypeError, ValueError):
            return False
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        if isinstance(want, int) and isinstance(got, int):
            return got == want
        return math.isclose(got, want, rel_tol=RTOL, abs_tol=ATOL) or (math.isnan(got) and math.isnan(want))
    if isinstance(want, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(want) \
            and all(same(g, w) for g, w in zip(got, want))
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() \
            and all(same(got[k], want[k]) for k in want)
    try:
        return bool(type(got) is type(want) and got == want)
    except Exception:  # noqa: BLE001
        return False


def _plain(value):
    """A case's argument as a function receives it (a view is handed over as its values)."""
    if isinstance(value, codec.View):
        return value.value.clone() if isinstance(value.value, torch.Tensor) else value.value.copy()
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def functions() -> dict[str, object]:
    """``{"module.function": function}`` of every top-level function the starter ships."""
    found = {}
    root = Path(STARTER)
    for path in sorted((root / "grader").rglob("*.py")):
        relative = path.relative_to(root).with_suffix("")
        name = ".".join(relative.parts).removesuffix(".__init__")
        if relative.name == "__main__":  # `python -m grader` itself: importing it runs the CLI
            continue
        if relative.parts[-2:-1] == ("suites",):  # the public suites: loaded by path
            spec = importlib.util.spec_from_file_location(f"_shipped_{relative.name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if inspect.isfunction(value) and value.__module__ == module.__name__:
                found[f"{name}.{attribute}"] = value
    os.environ["GRADER_SANDBOX"] = "1"  # a check() in a cell does nothing
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        namespace = {"__name__": f"released_{path.stem}"}
        notebook = read_notebook(path)
        for label, source in sandbox_cells(notebook, set()):
            exec(compile(source, f"{path.name} {label}", "exec"), namespace)
        for index, cell in enumerate(notebook.cells):  # the definitions of every other code cell
            if cell.cell_type != "code" or "setup" in cell.metadata.get("tags", []):
                continue
            try:
                tree = ast.parse(to_python(cell.source))
            except SyntaxError:
                continue
            tree.body = [node for node in tree.body if isinstance(
                node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef))]
            try:
                exec(compile(tree, f"{path.name} cell {index}", "exec"), namespace)
            except Exception:  # noqa: BLE001 - a definition that needs the cells' data: left out
                continue
        for attribute, value in namespace.items():
            if inspect.isfunction(value) and value.__module__ == namespace["__name__"]:
                found[f"notebooks/{path.name}.{attribute}"] = value
    return found


class _Late(Exception):
    pass


def _alarm(signum, frame):
    raise _Late


def binds(function, case: dict) -> bool:
    """Whether ``case``'s arguments fit ``function``'s signature."""
    try:
        inspect.signature(function).bind(*case["args"], **case["kwargs"])
    except (TypeError, ValueError):
        return False
    return True


def search(found: dict[str, object], groups: dict[str, list[dict]]) -> list[str]:
    """``"function answers exercise"`` for every function of ``found`` that :func:`answers` every
    case of an exercise of ``groups``. The calls run in a forked process of its own session: a
    shipped function may set limits, change signals or folders, exit, or kill its process group
    (the runtime's supervision does); that process, not this one, bears it. It says which
    function it tries before each; where one ends it, another process goes on from the next."""
    names, shown, start = list(found), [], 0
    while start < len(names):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: tries the functions from ``start`` on
            try:
                os.close(read)
                os.setsid()
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                for index in range(start, len(names)):
                    os.write(write, f"try {index}\n".encode())
                    for exercise, cases in groups.items():
                        if binds(found[names[index]], cases[0]) and answers(found[names[index]], cases):
                            os.write(write, f"hit {index} {exercise}\n".encode())
                os.write(write, b"done\n")
            finally:
                os._exit(0)
        os.close(write)
        current, finished, buffer = start, False, b""
        deadline = time.monotonic() + CALL_SECONDS * 40
        while not finished:
            ready, _, _ = select.select([read], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(read, 65536) if ready else b""
            if not chunk:  # the process ended, or one function ran past its time
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                kind, *rest = line.decode().split(" ", 2)
                if kind == "try":
                    current, deadline = int(rest[0]), time.monotonic() + CALL_SECONDS * 40
                elif kind == "hit":
                    shown.append(f"{names[int(rest[0])]} answers {rest[1]}")
                else:
                    finished = True
        os.close(read)
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        start = len(names) if finished else current + 1
    return shown


def answers(function, cases: list[dict]) -> bool:
    """Whether ``function`` gives the solution's answer on every one of ``cases``."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return False
    for case in cases:
        args, kwargs = _plain(case["args"]), _plain(case["kwargs"])
        try:
            signature.bind(*args, **kwargs)
        except TypeError:
            return False
        signal.alarm(CALL_SECONDS)
        try:
            got = function(*args, **kwargs)
        except BaseException:  # noqa: BLE001 - any failure is not an answer (SystemExit included)
            return False
        finally:
            signal.alarm(0)
        if not same(got, case["answer"]):
            return False
    return True


def main() -> None:
    signal.signal(signal.SIGALRM, _alarm)
    cases = codec.decode(Path(CASES).read_bytes())
    found = functions()
    if "--plant" in sys.argv:  # the solution of one exercise, as if a starter shipped it
        suite, exercise = sys.argv[sys.argv.index("--plant") + 1].split(":")
        solutions = Path(sys.argv[sys.argv.index("--plant") + 2])
        namespace = {"__name__": "planted"}
        for label, source in sandbox_cells(read_notebook(solutions / f"{suite}.ipynb"), {exercise}):
            exec(compile(source, label, "exec"), namespace)
        found[f"planted.{exercise}"] = namespace[exercise]
    by_exercise: dict[tuple[str, str], list[dict]] = {}
    for case in cases:
        by_exercise.setdefault((case["suite"], case["exercise"]), []).append(case)
    groups = {}
    for (suite, exercise), group in sorted(by_exercise.items()):
        distinct = []
        for case in group:
            if not any(same(case["answer"], d) for d in distinct):
                distinct.append(case["answer"])
        if len(distinct) >= 2:  # (one answer for every case: a constant would match)
            groups[f"{suite}:{exercise}"] = group
    os.chdir(tempfile.mkdtemp(prefix="starter-answers-"))
    torch.manual_seed(0)
    shown = search(found, groups)
    print(json.dumps({"functions": len(found), "exercises": list(groups), "answers": shown}))


if __name__ == "__main__":
    main()
