"""Exports of the grading pipeline to hosts: each module builds what one host runs.

:mod:`grader.export.hosted.gradescope` builds the Gradescope autograder zip and
:mod:`grader.export.hosted.gradescope_run` is what that zip runs for each submission;
:mod:`grader.export.hosted.classroom` writes the GitHub Classroom grading workflow;
:mod:`grader.export.hosted.class_workflow` writes what grades a whole class in shards on GitHub Actions,
Slurm or Kubernetes (``batch --shard`` and ``merge``). They import
:mod:`grader.grade` and :mod:`grader.report.render`; nothing in the pipeline imports them.
"""
from __future__ import annotations

import re
from pathlib import Path


ROOT = Path(__file__).resolve().parents[3]
_ASSET_OF_NOTEBOOK = re.compile(r"^[a-z]+(\d\d)_")
"""An asset named like ``ctx05_base.pt`` belongs to notebook 05."""
SCHEMA = Path(__file__).resolve().parent / "gradescope_results.schema.json"
"""JSON Schema of Gradescope's ``results.json``, written from its published specification."""


def assets_for(suites: list[str], *, assets: Path | None = None,
               notebooks: Path | None = None, learners: bool = False) -> list[Path]:
    """The files of ``assets/`` that the notebooks of ``suites`` need: the assets' README, every
    file whose name starts with a notebook's number (``ctx05_*`` for 05), and every file whose
    name the released notebook mentions; for ``learners`` (the starter repository), never the
    grader-only ones (:data:`grader.assets.GRADER_ONLY`)."""
    from grader.assets import GRADER_ONLY

    assets = assets or ROOT / "assets"
    notebooks = notebooks or ROOT / "notebooks"
    numbers = {suite.split("_", 1)[0] for suite in suites}
    texts = [(notebooks / f"{suite}.ipynb").read_text() for suite in suites
             if (notebooks / f"{suite}.ipynb").is_file()]
    chosen = []
    for path in sorted(assets.rglob("*")) if assets.is_dir() else []:
        if not path.is_file() or (learners and path.name in GRADER_ONLY):
            continue
        owner = _ASSET_OF_NOTEBOOK.match(path.name)
        if path.name == "README.md" or (owner and owner.group(1) in numbers) \
                or (not owner and any(path.name in text for text in texts)):
            chosen.append(path)
    return chosen
