"""Train the reversal models of notebook 03, section 5, with every seed, and store their learning curves.

The model, its variants and its training loop are the notebook's own (``TinyReverser``, ``variants`` and
``train`` in solutions/03_addition_vs_concatenation.ipynb): this script runs those cells and then trains each
variant with seeds 0..19, writing assets/reversal03_curves.json (test accuracy every EVAL_EVERY steps). The
notebook retrains seed 0 of each variant on every run and prints its largest difference from the stored curve.

Deterministic: float64 on one CPU thread with fixed seeds. About 4 minutes of CPU time.

usage: python scripts/reversal_addition_vs_concatenation.py [--seeds 20]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the notebook's setup cell imports the grader
NOTEBOOK = ROOT / "solutions" / "03_addition_vs_concatenation.ipynb"
OUT = ROOT / "assets" / "reversal03_curves.json"


def notebook_namespace() -> dict:
    """The names of the notebook's setup, embed, TinyReverser/variants and train cells (nothing trained yet)."""
    cells = [c for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]

    def cell(needle):
        found = [c.source for c in cells if needle in c.source]
        assert len(found) == 1, f"{NOTEBOOK.name}: {len(found)} cells hold {needle!r}"
        return found[0]

    namespace: dict = {}
    os.chdir(NOTEBOOK.parent)
    for source in (cell("def sinusoids("), cell("def embed("), cell("class TinyReverser")):
        exec(compile(source, str(NOTEBOOK), "exec"), namespace)
    training = cell("def train(mode, positions")
    exec(compile(training[: training.index("\nlive = ")], str(NOTEBOOK), "exec"), namespace)
    return namespace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="seeds per variant (default 20)")
    args = parser.parse_args()
    ns = notebook_namespace()
    ns["torch"].set_num_threads(1)
    runs = {" ".join(key): [ns["train"](*key, *widths, seed)[0] for seed in range(args.seeds)]
            for key, widths in ns["variants"].items()}
    OUT.write_text(json.dumps({"steps": ns["STEPS"], "eval_every": ns["EVAL_EVERY"], "seeds": list(range(args.seeds)),
                               "curves": runs}))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
