#!/usr/bin/env python3
"""Train the checkpoints of notebook 07's Part II (RoPE in practice) and its seed table, deterministically.

    python scripts/train_rope_in_practice.py                  # everything: 5 checkpoints, then the seed table
    python scripts/train_rope_in_practice.py --jobs 2         # the same, two runs at a time (one thread each)
    python scripts/train_rope_in_practice.py --only rip07_rope --only rip07_nope
    python scripts/train_rope_in_practice.py --list

Every variant is the same tiny character-level language model (07's `MixLM`) trained from scratch at the
same budget (`STEPS` steps of `BATCH` windows of 64 characters, the same learning rate and schedule); they
differ only in their positions: RoPE in every layer, every fourth layer NoPE (Llama 4's rule), NoPE
throughout, and p-RoPE with half or a quarter of the pairs turning. A seed sets both the initial weights and
the order of the training windows. Seed 1 of each variant is shipped as `assets/rip07_<variant>.pt` (a state
dict, loaded with `weights_only=True`); seeds 2 and 3 are trained by the `rip07_seeds` target, which keeps
only their held-out losses, in `assets/rip07_seeds.json`, beside seed 1's (evaluated from the shipped
checkpoints, which must exist first). About 15 minutes of CPU in all: the fifteen training runs took 749 s
of CPU (one thread each, `--jobs 2`, on a loaded two-core machine), the evaluations a minute or two more.

The model, the data and the evaluation are not defined here: they are read from the notebook (its
`setup` and `model` cells; `--notebook`, by default solutions/07_rope_in_practice.ipynb), so the chapter
and its checkpoints cannot drift apart.
One CPU thread per run and fixed seeds: for a given PyTorch build and CPU the files are identical from run
to run, whatever `--jobs` is.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
import types
from pathlib import Path

import nbformat
import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ASSETS = ROOT / "assets"
NOTEBOOK = ROOT / "solutions" / "07_rope_in_practice.ipynb"
CHAPTER_TAGS = ("setup", "model")
SEEDS = (1, 2, 3)
TABLE = "rip07_seeds"
STREAMING_VARIANT = "RoPE"
"""The variant whose seeds are also evaluated with a sliding window, with and without sinks."""


def default_notebook() -> Path:
    return NOTEBOOK


def load_chapter(notebook: Path | None = None) -> dict:
    """The notebook's setup and model cells, executed in a fresh namespace (a registered module)."""
    module = types.ModuleType("chapter07")  # registered: dataclasses look their class up there
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    exec("import json, math\nfrom dataclasses import dataclass\nimport numpy as np\nimport torch\n"
         "import torch.nn as nn\nimport torch.nn.functional as F\n", namespace)
    namespace["ASSETS"] = ASSETS
    path = notebook or default_notebook()
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type == "code" and set(cell.metadata.get("tags", [])) & set(CHAPTER_TAGS):
            # dont_inherit: the cells compile as in the notebook, without this file's __future__ imports
            exec(compile(cell.source, f"<{path.name} cell {index}>", "exec", dont_inherit=True), namespace)
    return namespace


def streaming_arms(ch: dict) -> dict:
    """The notebook's sliding-window arms: name -> (window, sinks, reindex)."""
    return dict(ch["STREAMING_ARMS"])


def evaluate(ch: dict, model, variant: str) -> dict:
    """Held-out losses of one trained model: per-window band means and the per-position curve."""
    inputs, targets = ch["held_windows"]()
    arms = {"full attention": (None, 0, False)}
    if variant == STREAMING_VARIANT:
        arms.update(streaming_arms(ch))
    out = {}
    for arm, (window, sinks, reindex) in arms.items():
        losses = ch["char_losses"](model, inputs, targets, window, sinks, reindex)   # (windows, 512)
        out[arm] = {"bands": {f"{a}-{b}": [round(float(v), 6) for v in means]
                              for (a, b), means in ch["by_band"](losses).items()},
                    "curve": [round(float(v), 6) for v in losses.mean(0)]}
    return out


_CHAPTER: dict | None = None
_KEEP: Path | None = None


def _init(notebook: str, keep: str | None = None) -> None:
    global _CHAPTER, _KEEP
    torch.set_num_threads(1)  # one thread: reductions in a fixed order, so the files reproduce
    _CHAPTER, _KEEP = load_chapter(Path(notebook)), keep and Path(keep)


def _run(job: tuple[str, int, bool]) -> tuple[str, int, dict | None]:
    """Train (variant, seed); seed 1 saves its checkpoint; evaluate when asked (seeds 2 and 3)."""
    variant, seed, keep_losses = job
    ch = _CHAPTER
    start = time.process_time()
    model = ch["train_variant"](ch["VARIANTS"][variant], seed,
                                log=lambda line: print(f"{variant}, seed {seed}: {line}", flush=True))
    if seed == 1:
        torch.save(model.state_dict(), ASSETS / f"{ch['CHECKPOINT_NAMES'][variant]}.pt")
    elif _KEEP is not None:  # --keep: the other seeds' weights too, outside assets/
        torch.save(model.state_dict(), _KEEP / f"{ch['CHECKPOINT_NAMES'][variant]}_seed{seed}.pt")
    losses = evaluate(ch, model, variant) if keep_losses else None
    print(f"{variant}, seed {seed}: done, {time.process_time() - start:.0f} s of CPU", flush=True)
    return variant, seed, losses


def load_checkpoint(ch: dict, variant: str):
    model = ch["MixLM"](ch["VARIANTS"][variant])
    model.load_state_dict(torch.load(ASSETS / f"{ch['CHECKPOINT_NAMES'][variant]}.pt", weights_only=True))
    return model.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="a checkpoint's or the table's name (repeatable)")
    parser.add_argument("--list", action="store_true", help="list what this script writes and exit")
    parser.add_argument("--jobs", type=int, default=1, help="training runs at a time, one thread each")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="also save seeds 2 and 3's weights in DIR (not shipped; to evaluate them again)")
    parser.add_argument("--notebook", type=Path, default=None,
                        help="the notebook whose cells define the model (default: %(prog)s's chapter)")
    args = parser.parse_args()
    notebook = args.notebook or default_notebook()
    torch.set_num_threads(1)
    ch = load_chapter(notebook)
    names = {name: variant for variant, name in ch["CHECKPOINT_NAMES"].items()}
    if args.list:
        for name, variant in names.items():
            print(f"{name:20s} seed 1 of {variant!r}: {ch['STEPS']} steps x {ch['BATCH']} windows of "
                  f"{ch['VARIANTS'][variant].train_len}")
        print(f"{TABLE:20s} seeds 2 and 3 of every variant (weights not kept) and seed 1's checkpoints, "
              "evaluated on every held-out window")
        return
    wanted = list(args.only or [*names, TABLE])
    unknown = set(wanted) - set(names) - {TABLE}
    if unknown:
        raise SystemExit(f"unknown name(s) {sorted(unknown)}; --list shows the names")
    jobs = [(names[n], 1, False) for n in names if n in wanted]
    if TABLE in wanted:
        jobs += [(variant, seed, True) for variant in ch["VARIANTS"] for seed in SEEDS[1:]]
    start = time.time()
    if args.jobs > 1:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
        with multiprocessing.get_context("spawn").Pool(args.jobs, _init, (str(notebook), args.keep and str(args.keep))) as pool:
            results = pool.map(_run, jobs, chunksize=1)   # seed 1's checkpoints come first in the list
    else:
        global _CHAPTER, _KEEP
        _CHAPTER, _KEEP = ch, args.keep
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
        results = [_run(job) for job in jobs]
    if TABLE in wanted:
        table = {"command": "python scripts/train_rope_in_practice.py --only rip07_seeds",
                 "steps": ch["STEPS"], "batch": ch["BATCH"], "train_len": ch["VARIANTS"]["RoPE"].train_len,
                 "eval_len": ch["EVAL_LEN"], "windows": len(ch["held_windows"]()[0]), "seeds": list(SEEDS),
                 "streaming_variant": STREAMING_VARIANT,
                 "streaming_arms": {k: list(v) for k, v in streaming_arms(ch).items()},
                 "losses": {variant: {} for variant in ch["VARIANTS"]}}
        for variant in ch["VARIANTS"]:  # seed 1: the shipped checkpoint, evaluated as the notebook loads it
            table["losses"][variant]["1"] = evaluate(ch, load_checkpoint(ch, variant), variant)
        for variant, seed, losses in results:
            if losses is not None:
                table["losses"][variant][str(seed)] = losses
        for variant in table["losses"]:
            table["losses"][variant] = dict(sorted(table["losses"][variant].items()))
        (ASSETS / f"{TABLE}.json").write_text(json.dumps(table, separators=(",", ":")) + "\n")
        print(f"wrote assets/{TABLE}.json")
    print(f"all done in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
