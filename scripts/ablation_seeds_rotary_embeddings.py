#!/usr/bin/env python3
"""Repeat notebook 04's pair ablation (section 8) on three independently trained models; store the table.

    python scripts/ablation_seeds_rotary_embeddings.py            # -> assets/rope04_ablation_seeds.json
    python scripts/ablation_seeds_rotary_embeddings.py --jobs 1   # one training at a time

Notebook 04 removes five rotary pairs at a time from every query and key of notebook 05's base checkpoint
(`ctx05_base.pt`, trained by scripts/train_context_extension.py with seed 0) and reads the rise of the
held-out loss: the five fastest, five middle and five slowest pairs, and ten random sets of five. That is
one trained model. This script trains two more with notebook 05's own model and base recipe (1,500 steps of
batches of 32 windows of 128 characters, AdamW at 3e-3; seeds 1 and 2 set the initial weights and the data
order, nothing else differs) and measures the same rises on the same 32 held-out windows, with the same ten
random sets; model 0 is the shipped checkpoint. Their weights are not kept (the assets stay small).

Removing pair j from q and k is done here by zeroing column j and j + head_dim/2 of cos and sin: the pair's
rotated query and key are then zero, as in the notebook's `tiny_lm`, which zeroes them before rotating
(tests/test_ablation_seeds_04.py checks that model 0's rises are the ones the notebook prints). About 5
minutes of CPU time per model on one thread; deterministic on one thread.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_context_extension import ASSETS, load_chapter, load_checkpoint, lm_batches, train  # noqa: E402

OUTPUT = ASSETS / "rope04_ablation_seeds.json"
SEEDS = (0, 1, 2)
"""Model 0 is the shipped ctx05_base.pt; 1 and 2 are trained here."""
STEPS, LR, BATCH, LENGTH = 1500, 3e-3, 32, 128
"""scripts/train_context_extension.py's recipe for ctx05_base."""
N_WINDOWS = 32
FAST, MIDDLE, SLOW = tuple(range(0, 5)), tuple(range(5, 10)), tuple(range(11, 16))
DRAW_SEED, N_DRAWS = 10, 10
"""Notebook 04's ten random sets of five pairs: torch.Generator seeded 10, randperm(16)[:5], sorted."""


def held_out_windows() -> torch.Tensor:
    """Notebook 04's 32 held-out windows of 129 characters (its cell reading corpus.txt), int64 (32, 129)."""
    text = (ASSETS / "corpus.txt").read_text(encoding="ascii")
    raw = torch.tensor(list(text[int(0.95 * len(text)):].encode("ascii")))
    chars = torch.where(raw == 10, 0, raw - 31)
    return chars[: N_WINDOWS * (LENGTH + 1)].view(N_WINDOWS, LENGTH + 1)


def random_sets(n_pairs: int) -> list[list[int]]:
    gen = torch.Generator().manual_seed(DRAW_SEED)
    return [sorted(torch.randperm(n_pairs, generator=gen)[:5].tolist()) for _ in range(N_DRAWS)]


def window_losses(ch: dict, model, windows: torch.Tensor, removed=()) -> torch.Tensor:
    """Held-out loss per window (nats/char), float64 (32,), with the pairs ``removed`` zeroed in q and k."""
    tables = ch["rope_tables"]
    half = ch["CFG"].head_dim // 2

    def without_pairs(inv_freq, attention_factor, positions):
        cos, sin = tables(inv_freq, attention_factor, positions)            # (T, head_dim) each
        keep = torch.ones(half)
        keep[list(removed)] = 0
        keep = torch.cat([keep, keep])                                        # half-split layout
        return cos * keep, sin * keep

    ch["rope_tables"] = without_pairs
    try:
        with torch.no_grad():
            logits = model(windows[:, :-1], ch["make_rope"]("none", 1.0))      # (32, 128, 96)
    finally:
        ch["rope_tables"] = tables
    return F.cross_entropy(logits.transpose(1, 2), windows[:, 1:], reduction="none").double().mean(dim=1)


def ablation(ch: dict, model) -> dict:
    """The mean held-out loss with all pairs, and the mean rise (over the windows) for each set removed."""
    windows = held_out_windows()
    full = window_losses(ch, model, windows)
    rise = lambda pairs: (window_losses(ch, model, windows, pairs) - full).mean().item()  # noqa: E731
    return {"full": full.mean().item(), "fastest": rise(FAST), "middle": rise(MIDDLE), "slowest": rise(SLOW),
            "random": [rise(pairs) for pairs in random_sets(ch["CFG"].head_dim // 2)]}


def one_model(seed: int) -> dict:
    torch.set_num_threads(1)  # one thread: reductions in a fixed order, so the figures reproduce
    ch = load_chapter()
    if seed == 0:
        model = load_checkpoint(ch, "ctx05_base")
    else:
        torch.manual_seed(seed)
        model = ch["TinyRoPELM"](ch["CFG"])
        train(model, ch["make_rope"]("none", 1.0), lm_batches(ch["train_ids"], LENGTH, BATCH, seed=seed), STEPS, LR,
              seed, f"base seed {seed}")
    return {"seed": seed, **ablation(ch, model.eval())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="models trained at once (default 2)")
    args = parser.parse_args()
    with ProcessPoolExecutor(args.jobs) as pool:
        models = list(pool.map(one_model, SEEDS))
    record = {"command": "python scripts/ablation_seeds_rotary_embeddings.py",
              "recipe": f"notebook 05's TinyRoPELM, {STEPS} steps, batch {BATCH} x {LENGTH} characters, lr {LR}",
              "windows": N_WINDOWS, "sets": {"fastest": FAST, "middle": MIDDLE, "slowest": SLOW},
              "random_sets": random_sets(16), "models": models}
    OUTPUT.write_text(json.dumps(record, indent=1) + "\n")
    for m in models:
        print(f"seed {m['seed']}: full {m['full']:.3f}; rise fastest {m['fastest']:.3f}, middle {m['middle']:.3f}, "
              f"slowest {m['slowest']:.3f}, random mean {sum(m['random']) / len(m['random']):.3f}")
    print(f"wrote {OUTPUT.relative_to(ASSETS.parent)}")


if __name__ == "__main__":
    main()
