#!/usr/bin/env python3
"""One entry point for learners, instructors and CI; needs only Python 3.11+ and pip.

    python3 course.py grade [PATH ...] [grader options]   grade notebooks/ (or PATHs)
    python3 course.py grade --reveal                      then show each written answer you wrote
                                                          beside its model answer and rubric
    python3 course.py batch SUBMISSIONS [options]         grade a class: gradebook, feedback
    python3 course.py test [pytest options]               run the project's whole test suite
    python3 course.py test --quick [pytest options]       the everyday loop: no notebook executed,
                                                          no catalogue graded (tests not marked slow)
    python3 course.py lab                                 open the course in JupyterLab (as root,
                                                          on a course machine, in a container or
                                                          on Colab: with JupyterLab's --allow-root)
    python3 course.py release [--force]                   rebuild notebooks/ from solutions/; a
                                                          notebook changed since its release (your
                                                          work) is kept, unless --force (which
                                                          keeps a copy beside it)
    python3 course.py site                                build the course's website into site/html
                                                          (from the stored outputs; fails on a warning)
    python3 course.py colab                               on Google Colab: install what the notebooks
                                                          need that Colab lacks (the first cell of each
                                                          released notebook runs it there)

A command is offered only where what it needs ships: ``test`` needs ``tests/``, ``release``
needs ``solutions/``, ``batch`` the hidden tests (a learner's starter repository has none of
them). Each command first makes sure that the virtual environment ``.venv`` exists and holds the
pinned packages of ``pyproject.toml``: it creates and installs it when missing or when
``pyproject.toml`` has changed since the last install, and does nothing otherwise.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTHON = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


SITE = ROOT / "site"
"""The website's build folder (ignored by git): ``html/`` is the site, the rest Sphinx's caches."""
COLAB_PRESENT = {"torch", "numpy", "matplotlib", "jupyterlab", "ipykernel", "triton", "tqdm",
                 "psutil", "pyyaml", "nbformat", "jsonschema"}
"""Packages Google Colab's runtime already has (its own builds and versions are kept: replacing
its torch would download gigabytes); ``colab`` installs the course's other pins."""


def _target(extra: str) -> str:
    return f".[{extra}]" if extra else "."


def _stamp(extra: str) -> Path:
    return VENV / f".installed{'-' + extra if extra else ''}"


def _fingerprint(extra: str) -> str:
    """Changes whenever pyproject.toml (the pins) or the installed extra changes."""
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + _target(extra).encode()).hexdigest()


def is_current(extra: str) -> bool:
    """Whether ``.venv`` already holds the current install with ``extra``."""
    stamp = _stamp(extra)
    return PYTHON.exists() and stamp.exists() and stamp.read_text() == _fingerprint(extra)


def ensure_environment(extra: str = "") -> None:
    """Create ``.venv`` and install the project (with ``extra``) unless already up to date."""
    if is_current(extra) or (extra != "test,site" and is_current("test,site")):
        return  # the test install (with the site's builder) is a superset of the others
    target = _target(extra)
    if not PYTHON.exists():
        print(f"course: creating the virtual environment {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print(f"course: installing the pinned packages ({target}); this takes a few minutes once",
          flush=True)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "-e", target], cwd=ROOT, check=True)
    _stamp(extra).write_text(_fingerprint(extra))


def run(args: list[str]) -> int:
    """Run a command with the environment's Python, from the repository's root."""
    return subprocess.run([str(PYTHON), *args], cwd=ROOT).returncode


def pins(exclude: set[str] = frozenset()) -> list[str]:
    """The pinned requirements of ``pyproject.toml`` (the course's runtime), less ``exclude``."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [r for r in project["dependencies"]
            if r.split("==")[0].strip().lower() not in exclude]


def colab() -> int:
    """On Google Colab: install the course (editable, so its assets are found) and the pins
    Colab lacks, into Colab's own Python; nothing else of Colab's runtime is replaced."""
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*install, *pins(COLAB_PRESENT)], check=True)
    subprocess.run([*install, "--no-deps", "-e", str(ROOT)], check=True)
    print(f"course: ready; the notebooks are in {ROOT / 'notebooks'}", flush=True)
    return 0


def site(rest: list[str]) -> int:
    """Build the website into ``site/html`` with Sphinx and MyST-NB, warnings as errors."""
    html = SITE / "html"
    code = run(["-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-c", "docs/site",
                "-d", str(SITE / "doctrees"), *rest, ".", str(html)])
    if code == 0:
        print(f"course: the site is in {html}; open {html / 'docs' / 'index.html'}", flush=True)
    return code


NEEDS = {"test": ("tests", "the project's tests"),
         "release": ("solutions", "the solution notebooks"),
         "batch": ("grader/judge/suites/PUBLIC_ONLY.txt", "the hidden tests"),
         "site": ("docs/site", "the website's sources"),
         "colab": ("solutions", "the course's own repository (the one the Colab cell clones)")}
"""Command -> (the path it needs, what that is); ``batch`` needs that path to be absent."""


def offered() -> list[str]:
    """The commands this copy of the course can run (see :data:`NEEDS`)."""
    commands = []
    for command in ("grade", "batch", "test", "lab", "release", "site", "colab"):
        path, _ = NEEDS.get(command, ("", ""))
        present = (ROOT / path).exists() if path else True
        if present != (command == "batch"):
            commands.append(command)
    return commands


def usage() -> str:
    """The module's usage, without the lines of commands this copy does not offer."""
    lines, keep = [], True
    for line in __doc__.splitlines():
        if line.startswith("    python3 course.py "):
            keep = line.split()[2] in offered()
        elif not line.startswith("      "):
            keep = True
        if keep:
            lines.append(line)
    return "\n".join(lines)


LAB_OPENS = "--LabApp.default_url=/lab/tree/notebooks"
"""JupyterLab serves the repository's root (the guides in ``docs/`` beside the notebooks) and
opens with its file browser in ``notebooks/``."""


def lab_arguments(rest: list[str]) -> list[str]:
    """``jupyter lab``'s arguments: the repository's root, opened at the notebooks, then ``rest``;
    as root, JupyterLab's own ``--allow-root`` (it refuses to start as root without it), said on
    stderr."""
    arguments = ["-m", "jupyter", "lab", LAB_OPENS, *rest]
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in rest:
        print("course: running as root (a course machine, a container or Colab): starting "
              "JupyterLab with its --allow-root", file=sys.stderr)
        arguments.append("--allow-root")
    return arguments


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"grade", "batch", "test", "lab", "release", "site", "colab"}:
        print(usage())
        return 2
    command, rest = argv[0], argv[1:]
    if command not in offered():
        path, what = NEEDS[command]
        print(f"course: `{command}` needs {what}, which this copy of the course does not hold "
              f"({'it holds ' if command == 'batch' else 'no '}{path}); commands here: "
              f"{', '.join(offered())}", file=sys.stderr)
        return 2
    if command == "colab":
        return colab()
    try:
        ensure_environment({"test": "test,site", "site": "site"}.get(command, ""))
    except subprocess.CalledProcessError as exc:
        print(f"course: installing the packages failed (exit {exc.returncode}); "
              "check the network and run the command again", file=sys.stderr)
        return 1
    if command == "grade":
        if "--json" not in rest:
            rest += ["--json", str(Path("reports") / "results.json")]
        return run(["-m", "grader", "check", *rest])
    if command == "batch":
        return run(["-m", "grader", "batch", *rest])
    if command == "test":
        if "--quick" in rest:
            rest = ["-m", "not slow", *(arg for arg in rest if arg != "--quick")]
        # loadgroup: the tests that share an expensive module fixture run on one worker.
        return run(["-m", "pytest", "-n", "auto", "--dist", "loadgroup", *rest])
    if command == "release":
        return run(["-m", "grader", "release", *rest])
    if command == "site":
        return site(rest)
    return run(lab_arguments(rest))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
