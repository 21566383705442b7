"""Build the Gradescope autograder zip from the repository.

The zip holds, at its root, Gradescope's two entry points (``setup.sh`` and ``run_autograder``,
mode 0755, LF line endings), the pinned requirements the grader needs, ``autograder.json`` (which
notebooks, which visibility) and what grading reads: the ``grader`` package with only the chosen
hidden suites, and the files of ``assets/`` those notebooks need. Never the solutions, the project's tests or the catalogue of wrong
answers. Specification: https://gradescope-autograders.readthedocs.io/en/latest/specs/
"""
from __future__ import annotations

import json
import re
import tomllib
import zipfile
from pathlib import Path

from grader.errors import GraderError
from grader.export.hosted import assets_for
from grader.judge.selection import select_suites

GRADER_DIR = Path(__file__).resolve().parents[2]
ROOT = GRADER_DIR.parent
TEMPLATES = Path(__file__).resolve().parent / "templates"

SCRIPTS = ("setup.sh", "run_autograder")
"""Gradescope's entry points, copied from ``templates/`` to the zip's root."""
NOT_NEEDED_TO_GRADE = {"jupyterlab"}
"""Pinned packages the autograder does not install (the learner's editor, not the grader's)."""
MEMORY_LIMIT_MB = 768
"""Gradescope's own default memory limit, within which grading one learner's notebooks fits
(``scripts/benchmark_grading.py`` prints the peak); ``--memory-mb`` gives a larger one set on the
assignment. ``run_autograder`` warns near the box's actual limit when it can read it, else near
this."""
TIME_LIMIT_MINUTES = 20
"""The time limit the README advises setting on Gradescope; ``run_autograder`` warns near it."""
MAX_MINUTES = 40
"""The longest time limit Gradescope lets an assignment have."""
_DATE = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same repository gives the same zip


ONLY_WHERE_IMPORTED = {"triton": "triton"}
"""Pinned package -> its import name, for packages only some notebooks use (notebook 06's Triton):
a zip installs one only when a chosen notebook, its hidden tests or a fixture module they import
imports it."""
_IMPORT = r"^[ \t\"]*(?:import|from)[ \t]+{}\b"
_FIXTURE = re.compile(r"grader[./]fixtures[./](\w+)")


def _imports(suites: list[str], name: str) -> bool:
    """Whether a notebook of ``suites``, its hidden tests or a fixture they name imports
    ``name``."""
    pattern = re.compile(_IMPORT.format(re.escape(name)), re.MULTILINE)
    texts = []
    for suite in suites:
        for path in (ROOT / "notebooks" / f"{suite}.ipynb",
                     GRADER_DIR / "judge" / "suites" / f"test_{suite}.py"):
            if path.is_file():
                texts.append(path.read_text())
    fixtures = {m for text in texts for m in _FIXTURE.findall(text)}
    texts += [(GRADER_DIR / "fixtures" / f"{m}.py").read_text() for m in sorted(fixtures)
              if (GRADER_DIR / "fixtures" / f"{m}.py").is_file()]
    return any(pattern.search(text) for text in texts)


def requirements(suites: list[str] | None = None) -> str:
    """The pinned requirements of ``pyproject.toml`` that grading ``suites`` (default: every
    notebook) needs, one per line: :data:`ONLY_WHERE_IMPORTED` only where they are imported."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    lines = []
    for requirement in pyproject["project"]["dependencies"]:
        name = re.split(r"[=<>!~; ]", requirement, maxsplit=1)[0].strip().lower()
        if name in NOT_NEEDED_TO_GRADE:
            continue
        if name in ONLY_WHERE_IMPORTED and suites is not None and not _imports(
                suites, ONLY_WHERE_IMPORTED[name]):
            continue
        lines.append(requirement)
    return "".join(f"{line}\n" for line in lines)


def _package_files(suites: list[str]) -> list[Path]:
    """The grader package's files, with only the chosen suites' hidden tests."""
    chosen = {f"test_{suite}.py" for suite in suites}
    files = []
    for path in sorted(GRADER_DIR.rglob("*")):
        relative = path.relative_to(GRADER_DIR)
        if not path.is_file() or "__pycache__" in relative.parts or path.suffix == ".pyc":
            continue
        if relative.parts[:2] == ("judge", "suites") and relative.name.startswith("test_") \
                and relative.name not in chosen:
            continue
        files.append(path)
    return files


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(name, date_time=_DATE)
    info.external_attr = (0o100000 | mode) << 16  # a regular file with these permissions
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def _script(name: str) -> bytes:
    text = (TEMPLATES / name).read_bytes()
    if b"\r" in text:
        raise GraderError(f"{TEMPLATES / name}: has CR line endings; Gradescope's shell needs LF "
                          "(convert it with dos2unix)")
    return text


def build(*, out: Path, notebooks: list[str] | None = None,
          hidden_visibility: str = "after_due_date", memory_limit_mb: int = MEMORY_LIMIT_MB,
          time_limit_minutes: float = TIME_LIMIT_MINUTES,
          allow_unconfined: bool = False, hidden_detail: str = "description") -> list[str]:
    """Write the autograder zip to ``out``; returns the names it holds.

    ``hidden_detail`` (:data:`grader.report.render.HIDDEN_DETAILS`) is what ``results.json`` shows
    of each hidden test.

    A submission is graded only where bubblewrap confines the learner's code on Gradescope's
    machine (else score 0 and bubblewrap's reason in one line), unless ``allow_unconfined``: then
    it is graded with resource limits only, and the output's first line says so."""
    if not 0 < time_limit_minutes <= MAX_MINUTES:
        raise GraderError(f"--minutes {time_limit_minutes:g}: Gradescope allows 1 to {MAX_MINUTES} "
                          "minutes; set the same number as the assignment's timeout")
    if memory_limit_mb <= 0:
        raise GraderError(f"--memory-mb {memory_limit_mb}: give the assignment's memory limit in "
                          "MB, e.g. 768")
    suites = select_suites(notebooks)
    config = {"suites": suites, "hidden_visibility": hidden_visibility,
              "memory_limit_mb": memory_limit_mb, "time_limit_minutes": time_limit_minutes,
              "allow_unconfined": allow_unconfined, "hidden_detail": hidden_detail}
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as archive:
        for name in SCRIPTS:
            _add(archive, name, _script(name), 0o755)
        _add(archive, "requirements.txt", requirements(suites).encode(), 0o644)
        _add(archive, "autograder.json", (json.dumps(config, indent=2) + "\n").encode(), 0o644)
        for path in _package_files(suites):
            _add(archive, f"grader/{path.relative_to(GRADER_DIR).as_posix()}", path.read_bytes(),
                 0o644)
        for path in assets_for(suites):
            _add(archive, f"assets/{path.relative_to(ROOT / 'assets').as_posix()}",
                 path.read_bytes(), 0o644)
        names = archive.namelist()
    return names
