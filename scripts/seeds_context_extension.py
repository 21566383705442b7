#!/usr/bin/env python3
"""Repeat notebook 05's fine-tunes at 512 with more seeds and store their held-out losses as a table.

    python scripts/seeds_context_extension.py          # seeds 2 and 3 of five arms (~10 min, one core)

Seed 1 of every arm is the shipped checkpoint (`ctx05_<arm>_ft.pt`, trained by
scripts/train_context_extension.py); seeds 2 and 3 repeat the same recipe (150 steps on windows of 512
characters from `ctx05_base`, the scaling the only difference between arms) with another data order (the
fine-tunes have no other randomness). Their weights are not kept (the assets stay small): the script writes
`assets/ctx05_seeds.json`, the per-window loss (nats/char) of every arm and seed on the notebook's 16
held-out windows at 128 and 1,024 characters, which section 11 reads. Deterministic on one CPU thread.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_context_extension import ASSETS, FT_LEN, FT_SCALE, load_chapter, lm_batches, train  # noqa: E402

ARMS = {"none": ("none", 1.0), "PI": ("PI", FT_SCALE), "NTK-aware": ("NTK-aware", FT_SCALE),
        "dynamic NTK": ("dynamic NTK", 1.0), "YaRN": ("YaRN", FT_SCALE)}
"""Arm -> (make_rope's method, scale), as scripts/train_context_extension.py fine-tunes them."""
TAGS = {"none": "none", "PI": "pi", "NTK-aware": "ntk", "dynamic NTK": "dynamic", "YaRN": "yarn"}
SEEDS = (1, 2, 3)
LENGTHS = (128, 1024)
OUTPUT = ASSETS / "ctx05_seeds.json"


def main() -> None:
    torch.set_num_threads(1)
    ch = load_chapter()
    table = {"command": "python scripts/seeds_context_extension.py", "lengths": list(LENGTHS),
             "seeds": list(SEEDS), "windows": int(ch["N_WINDOWS"]), "losses": {}}
    for arm, (method, scale) in ARMS.items():
        rope = ch["make_rope"](method, scale)
        table["losses"][arm] = {}
        for seed in SEEDS:
            model = ch["TinyRoPELM"](ch["CFG"])
            if seed == 1:   # the shipped checkpoint
                model.load_state_dict(torch.load(ASSETS / f"ctx05_{TAGS[arm]}_ft.pt", weights_only=True))
            else:
                model.load_state_dict(torch.load(ASSETS / "ctx05_base.pt", weights_only=True))
                train(model, rope, lm_batches(ch["train_ids"], FT_LEN, 8, seed=seed), 150, 5e-4, seed,
                      f"{arm} seed {seed}")
            model.eval()
            eval_rope = ch["make_rope"](method, scale)      # a fresh function: the loss cache is keyed by it
            by_len = ch["losses_by_length"](model, eval_rope)
            table["losses"][arm][str(seed)] = {str(n): [round(float(v), 6) for v in by_len[n]] for n in LENGTHS}
            print(f"{arm} seed {seed}: " + ", ".join(f"{n}: {by_len[n].mean():.4f}" for n in LENGTHS), flush=True)
    OUTPUT.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
