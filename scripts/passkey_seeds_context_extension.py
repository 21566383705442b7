#!/usr/bin/env python3
"""Repeat notebook 05's passkey fine-tunes with three seeds and store their passkey scores as a table.

    python scripts/passkey_seeds_context_extension.py     # seeds 2 and 3 of four arms (~10 min, one core)

Seed 1 of every arm is the shipped checkpoint (`ctx05_passkey_<arm>_ft.pt`, trained by
scripts/train_context_extension.py: 200 steps from `ctx05_passkey` on passkey prompts of 128 to 506 characters
plus the answer, batch 8, data seed 3); seeds 2 and 3 repeat the same recipe with data seeds 4 and 5 (the
prompts, their lengths, depths and passkeys; the fine-tunes have no other randomness). Their weights are not
kept (the assets stay small): the script writes `assets/ctx05_passkey_seeds.json`, the teacher-forced scores
of every arm and seed on the notebook's passkey grid (lengths 128 to 1,024 x depths 0, 0.5, 1, 16 prompts per
cell, the same prompts for every model: the notebook's `passkey_grid`): per-prompt per-digit accuracy and
log-probability of the five digits (nats). Section 12 reads it. Deterministic on one CPU thread.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_context_extension import ASSETS, FT_LEN, FT_SCALE, load_chapter, load_checkpoint, passkey_batches, train  # noqa: E402

ARMS = {"none": ("none", 1.0), "PI": ("PI", FT_SCALE), "NTK-aware": ("NTK-aware", FT_SCALE), "YaRN": ("YaRN", FT_SCALE)}
"""Arm -> (make_rope's method, scale), as scripts/train_context_extension.py fine-tunes them."""
TAGS = {"none": "none", "PI": "pi", "NTK-aware": "ntk", "YaRN": "yarn"}
SEEDS = (1, 2, 3)
DATA_SEED = {1: 3, 2: 4, 3: 5}      # seed -> passkey_batches' seed (seed 1: the shipped checkpoints' recipe)
LENGTHS = (128, 256, 512, 1024)
OUTPUT = ASSETS / "ctx05_passkey_seeds.json"


def main() -> None:
    torch.set_num_threads(1)
    ch = load_chapter()
    table = {"command": "python scripts/passkey_seeds_context_extension.py", "seeds": list(SEEDS),
             "data_seeds": [DATA_SEED[s] for s in SEEDS], "lengths": list(LENGTHS),
             "depths": [float(d) for d in ch["GRID_DEPTHS"]], "prompts": int(ch["PROMPTS"]), "scores": {}}
    for arm, (method, scale) in ARMS.items():
        rope = ch["make_rope"](method, scale)
        table["scores"][arm] = {}
        for seed in SEEDS:
            # seed 1: the shipped checkpoint; the others repeat its recipe from the passkey model
            model = load_checkpoint(ch, f"ctx05_passkey_{TAGS[arm]}_ft" if seed == 1 else "ctx05_passkey")
            if seed != 1:
                batches = passkey_batches(ch, 8, seed=DATA_SEED[seed], min_len=128, max_len=FT_LEN)
                train(model, rope, batches, 200, 5e-4, DATA_SEED[seed], f"passkey {arm} seed {seed}")
            grid = ch["passkey_grid"](model.eval(), rope, LENGTHS)
            table["scores"][arm][str(seed)] = {
                f"{n} {d:g}": {"digit_accuracy": [round(float(v), 4) for v in grid[(n, d)][1]],
                               "log_prob": [round(float(v), 4) for v in grid[(n, d)][0]]}
                for n, d in grid}
            print(f"passkey {arm} seed {seed}: per-digit accuracy by length " + ", ".join(
                f"{n}: {sum(grid[(n, d)][1].mean() for d in ch['GRID_DEPTHS']) / len(ch['GRID_DEPTHS']):.3f}"
                for n in LENGTHS), flush=True)
    OUTPUT.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
