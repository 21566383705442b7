#!/usr/bin/env python3
"""Repeat notebook 05's language-model fine-tunes with three seeds and store their held-out losses as a table.

    python scripts/seeds_context_extension.py                 # fine-tunes at 512   -> assets/ctx05_seeds.json
    python scripts/seeds_context_extension.py --length 1024   # fine-tunes at 1,024 -> assets/ctx05_seeds1024.json

They take about 15 and 19 minutes on one core. Seed 1 of every arm is the shipped checkpoint (`ctx05_<arm>_ft.pt`
or `ctx05_<arm>_ft1024.pt`, trained by scripts/train_context_extension.py); seeds 2 and 3 repeat the same
recipe (150 steps from `ctx05_base` on windows of 512 characters, batch 8, or of 1,024 characters, batch 4; the
scaling the only difference between arms) with another data order (the fine-tunes have no other randomness).
Their weights are not kept (the assets stay small): the script writes the per-window loss (nats/char) of every
arm and seed on every held-out window of 1,024 characters (78, from several documents), at 128 and 1,024
characters, which section 11 of the notebook reads. Deterministic on one CPU thread.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_context_extension import ASSETS, FT_LEN, FT_SCALE, load_chapter, load_checkpoint, lm_batches, train  # noqa: E402
from windows_context_extension import LENGTH, held_out_windows, per_window  # noqa: E402

ARMS = {"none": ("none", 1.0), "PI": ("PI", FT_SCALE), "NTK-aware": ("NTK-aware", FT_SCALE),
        "dynamic NTK": ("dynamic NTK", 1.0), "YaRN": ("YaRN", FT_SCALE)}
"""Arm -> (make_rope's method, scale), as scripts/train_context_extension.py fine-tunes them."""
TAGS = {"none": "none", "PI": "pi", "NTK-aware": "ntk", "dynamic NTK": "dynamic", "YaRN": "yarn"}
SEEDS = (1, 2, 3)
LENGTHS = (128, LENGTH)
RECIPES = {  # fine-tuning length -> (batch size, checkpoint suffix of seed 1, output)
    FT_LEN: (8, "_ft", ASSETS / "ctx05_seeds.json"),
    2 * FT_LEN: (4, "_ft1024", ASSETS / "ctx05_seeds1024.json"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=FT_LEN,
                        help=f"fine-tuning length in characters: {' or '.join(map(str, RECIPES))} (default {FT_LEN})")
    args = parser.parse_args()
    if args.length not in RECIPES:
        raise SystemExit(f"--length must be one of {sorted(RECIPES)}, got {args.length}")
    batch, suffix, output = RECIPES[args.length]
    torch.set_num_threads(1)
    ch = load_chapter()
    inputs, targets = held_out_windows(ch)
    command = "python scripts/seeds_context_extension.py" + ("" if args.length == FT_LEN else f" --length {args.length}")
    table = {"command": command, "fine_tune_length": args.length, "batch": batch, "steps": 150,
             "lengths": list(LENGTHS), "seeds": list(SEEDS), "windows": len(inputs), "losses": {}}
    for arm, (method, scale) in ARMS.items():
        rope = ch["make_rope"](method, scale)
        table["losses"][arm] = {}
        for seed in SEEDS:
            # seed 1: the shipped checkpoint; the others repeat its recipe from the base model
            model = load_checkpoint(ch, f"ctx05_{TAGS[arm]}{suffix}" if seed == 1 else "ctx05_base")
            if seed != 1:
                train(model, rope, lm_batches(ch["train_ids"], args.length, batch, seed=seed), 150, 5e-4, seed,
                      f"{arm} at {args.length}, seed {seed}")
            by_len = per_window(model.eval(), rope, inputs, targets, lengths=LENGTHS)
            table["losses"][arm][str(seed)] = {str(n): [round(v, 6) for v in by_len[n]] for n in LENGTHS}
            print(f"{arm} at {args.length}, seed {seed}: "
                  + ", ".join(f"{n}: {sum(by_len[n]) / len(by_len[n]):.4f}" for n in LENGTHS), flush=True)
    output.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
