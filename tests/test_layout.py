"""The grader's house: one folder per stage, and every import points down (grader/README.md).

Every module of ``grader/`` (its hidden suites included) is read with ``ast``; each import of a
grader module, at the top of a file or inside a function, must go to a lower floor: a floor may
import any floor below it, never one above (upward) nor another folder of its own floor
(sideways). Nothing may sit at ``grader/``'s top level but the few files named here.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "grader"

FLOORS = {
    # what every stage may read: the package's face (__version__), its one error type, the plain
    # result records, the assets' finder and the fixtures a learner's notebook imports
    "grader": 0, "errors": 0, "results": 0, "assets": 0, "fixtures": 0,
    "sandbox": 1,                             # the learner's side
    "notebook": 2, "judge": 2, "report": 2,  # read and execute; judge; report
    "grade": 3, "inline": 3,                  # one learner: the grader's, and check() in a notebook
    "batch": 4,                               # a class
    "export": 5,                              # what leaves the repository (may read a class's files)
    "cli": 6,                                 # the command line
    "__main__": 7,                            # python -m grader: the command line's door
}
"""Each unit of the house (a folder, or a file at the top level) and its floor, ground first."""

EXCEPTIONS = {
    ("grader", "grader.inline"): "grader.check() hands on to grader.inline.check when called "
                                 "(learners' notebooks run `from grader import check`)",
}
"""Imports allowed against the floors, each with its reason."""


def module_name(path: Path, root: Path = PACKAGE) -> str:
    """``grader/sandbox/child.py`` -> ``grader.sandbox.child``; a package is its folder's name."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(name: str, root: Path) -> str:
    """The module ``name`` names: itself where it is a module or package of ``root``, else the
    module that defines it (``grader.X`` where X is a name ``grader/__init__.py`` defines)."""
    relative = Path(*name.split(".")[1:]) if "." in name else Path()
    base = root / relative
    if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
        return name
    return name.rsplit(".", 1)[0]


def imports_of(path: Path, root: Path = PACKAGE) -> set[str]:
    """The grader modules ``path`` imports, anywhere in it (top level or inside a function)."""
    this = module_name(path, root)
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package that holds this module
                package = this.split(".")[:len(this.split(".")) - node.level
                                          + (path.name == "__init__.py")]
                base = ".".join(package + ([node.module] if node.module else []))
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {_resolve(name, root) for name in names if name.split(".")[0] == root.name}
    return found


def unit(module: str) -> str:
    """The unit of the house that ``module`` belongs to (``grader.judge.proxy`` -> ``judge``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def violations(imports: dict[str, set[str]]) -> list[str]:
    """One line per import that breaks the house: from a module outside every unit, upward, or
    sideways (another unit of the same floor)."""
    found = []
    for module, targets in sorted(imports.items()):
        home = unit(module)
        if home not in FLOORS:
            found.append(f"{module}: not in a folder of the house ({', '.join(FLOORS)})")
            continue
        for target in sorted(targets):
            there = unit(target)
            if there == home or (module, target) in EXCEPTIONS:
                continue
            if there not in FLOORS:
                found.append(f"{module} imports {target}, which is in no folder of the house")
            elif FLOORS[there] > FLOORS[home]:
                found.append(f"{module} imports {target}: upward ({home} is on floor "
                             f"{FLOORS[home]}, {there} on floor {FLOORS[there]})")
            elif FLOORS[there] == FLOORS[home]:
                found.append(f"{module} imports {target}: sideways ({home} and {there} are both "
                             f"on floor {FLOORS[home]})")
    return found


def house(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Every module of ``root`` -> the grader modules it imports."""
    return {module_name(path, root): imports_of(path, root) for path in sorted(root.rglob("*.py"))}


def test_every_import_of_the_grader_points_down():
    modules = house()
    assert len(modules) > 50 and "grader.sandbox.child" in modules
    assert sum(len(targets) for targets in modules.values()) > 100
    assert violations(modules) == []


def test_the_top_level_holds_only_the_few_allowed_files():
    top = sorted(p.name for p in PACKAGE.iterdir()
                 if p.name != "__pycache__" and not p.name.startswith("."))
    units = {"grader" if p == "__init__.py" else p.removesuffix(".py") for p in top}
    assert units <= set(FLOORS) | {"README.md"}, sorted(units - set(FLOORS))
    folders = {"sandbox", "notebook", "judge", "report", "batch", "export", "fixtures"}
    assert all((PACKAGE / name).is_dir() for name in folders)


def test_the_class_walk_is_called_only_from_the_command_line():
    """No step of a class imports the walk that calls it (grader.batch.run)."""
    importers = {m for m, targets in house().items() if "grader.batch.run" in targets}
    assert importers == {"grader.cli"}


@pytest.mark.parametrize("module, target, kind", [
    ("grader.sandbox.parent", "grader.batch.run", "upward"),
    ("grader.judge.proxy", "grader.export.hosted", "upward"),
    ("grader.judge.proxy", "grader.notebook.read", "sideways"),
    ("grader.batch.gradebook", "grader.export.starter", "upward"),
    ("grader.results", "grader.sandbox.codec", "upward"),
    ("grader.grade", "grader.inline", "sideways"),
    ("grader.helpers", "grader.errors", "not in a folder"),
])
def test_the_check_fails_on_an_import_that_breaks_the_house(module, target, kind):
    assert violations({module: {target}}) and kind in violations({module: {target}})[0]
    assert violations({"grader.batch.run": {"grader.grade", "grader.sandbox.parent"}}) == []


def test_imports_are_read_wherever_they_stand(tmp_path):
    """A fake package: imports inside functions, relative ones, and names of the package's face
    are all found, and an upward one among them fails the check."""
    root = tmp_path / "grader"
    (root / "sandbox").mkdir(parents=True)
    (root / "batch").mkdir()
    (root / "__init__.py").write_text("__version__ = '1'\n")
    (root / "errors.py").write_text("")
    (root / "batch" / "__init__.py").write_text("")
    (root / "batch" / "run.py").write_text("")
    (root / "sandbox" / "__init__.py").write_text("")
    (root / "sandbox" / "codec.py").write_text("")
    (root / "sandbox" / "child.py").write_text(
        "from . import codec\nfrom grader import __version__\n\n"
        "def later():\n    from grader.batch.run import grade_class\n    import grader.errors\n")
    found = imports_of(root / "sandbox" / "child.py", root)
    assert found == {"grader.sandbox.codec", "grader", "grader.batch.run", "grader.errors"}
    assert violations({"grader.sandbox.child": found}) == [
        "grader.sandbox.child imports grader.batch.run: upward (sandbox is on floor 1, batch on "
        "floor 4)"]
