"""Finding the course's ``assets/`` folder from wherever a notebook runs.

A notebook in ``notebooks/`` could read ``Path("..") / "assets"``, but a copy of it elsewhere (a
home folder, a hosted JupyterLab, a learner's fork laid out differently) could not. The notebooks
call :func:`course_assets` instead, which looks, in order:

1. in the folder named by the environment variable ``COURSE_ASSETS``, if it is set;
2. in ``assets/`` of the working folder and of each folder above it (a clone of the course, or a
   grading scratch folder laid out like one);
3. in ``assets/`` beside the installed ``grader`` package (the course's own clone, which
   ``python3 course.py`` installs in editable mode, or a hosted grader's copy of the runtime).

The first ``assets/`` that holds every file asked for wins. Light on purpose: it imports nothing
beyond the standard library, since a notebook's first cells import it.
"""
from __future__ import annotations

import os
from pathlib import Path

GRADER_ONLY = ("ctx05_grader_windows.txt",)
"""Assets only the grader reads (the text a challenge is scored on): never shipped to learners
(the starter repository) and hidden from the learner's processes (:mod:`grader.sandbox.confinement`)."""
ENVIRONMENT_VARIABLE = "COURSE_ASSETS"
"""Names a folder to use as the course's ``assets/`` (it then has to hold the files asked for)."""
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
"""The folder that holds the ``grader`` package (the course's root in a clone)."""


def _holds(folder: Path, names: tuple[str, ...]) -> bool:
    return folder.is_dir() and all((folder / name).exists() for name in names)


def candidates(start: Path | None = None) -> list[Path]:
    """The ``assets/`` folders looked in after ``COURSE_ASSETS``, nearest first."""
    here = (start or Path.cwd()).resolve()
    found = [folder / "assets" for folder in (here, *here.parents)]
    return list(dict.fromkeys(found + [PACKAGE_ROOT / "assets"]))


def course_assets(*names: str, start: Path | None = None) -> Path:
    """The course's ``assets/`` folder, one that holds every file in ``names``.

    ``start`` is where the search upwards begins (default: the working folder, which for a
    notebook is the notebook's own folder). Raises ``FileNotFoundError`` with one line saying
    what to do when no such folder is found, or when ``COURSE_ASSETS`` names a folder that lacks
    a file asked for.
    """
    wanted = ", ".join(names) if names else "the course's files"
    chosen = os.environ.get(ENVIRONMENT_VARIABLE)
    if chosen:
        folder = Path(chosen).expanduser()
        if _holds(folder, names):
            return folder
        raise FileNotFoundError(f"{ENVIRONMENT_VARIABLE}={chosen} is not a folder holding "
                                f"{wanted}; point it at the assets/ folder of your copy of the "
                                "course")
    for folder in candidates(start):
        if _holds(folder, names):
            return folder
    raise FileNotFoundError(f"cannot find the course's assets/ folder (with {wanted}) above "
                            f"{(start or Path.cwd()).resolve()} or beside the grader package; "
                            f"set {ENVIRONMENT_VARIABLE}=/path/to/the/course/assets before "
                            "starting Jupyter, or open the notebook inside the course's folder")
