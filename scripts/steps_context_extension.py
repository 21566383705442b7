#!/usr/bin/env python3
"""Loss against fine-tuning steps for notebook 05's fine-tunes at 512, stored as a table.

    python scripts/steps_context_extension.py               # nine runs of 400 steps (about 12 min of CPU, one thread each)
    python scripts/steps_context_extension.py --seeds 2 3   # only these seeds; the others are kept from the file

The shipped fine-tunes stop at 150 steps. This script runs the same recipe (windows of 512 characters from
`ctx05_base`, batch 8, AdamW at 5e-4 with warm-up and cosine decay) for 400 steps with no
scaling, PI and YaRN (s = 8), and every 50 steps records the mean held-out loss at 1,024 characters on the
notebook's 16 windows; three runs per arm, seeds 1, 2 and 3 (the data order and the dropout-free training's only
other randomness; run k of every arm sees the same batches, as in scripts/seeds_context_extension.py). The schedule
spans 400 steps, so step 150 here is not the shipped checkpoint. It writes `assets/ctx05_steps.json` (curves by
arm, then seed, then step); section 11 reads it. Deterministic on one CPU thread; `--jobs 2` runs two at once.
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
from train_context_extension import ASSETS, FT_LEN, FT_SCALE, load_chapter, load_checkpoint, lm_batches  # noqa: E402

ARMS = {"none": 1.0, "PI": FT_SCALE, "YaRN": FT_SCALE}
STEPS, EVERY, LR, SEEDS = 400, 50, 5e-4, (1, 2, 3)
OUTPUT = ASSETS / "ctx05_steps.json"


@torch.no_grad()
def held_out_loss(ch, model, rope):
    model.eval()
    logits = model(ch["EVAL_INPUTS"], rope)
    loss = F.cross_entropy(logits.transpose(1, 2), ch["EVAL_TARGETS"]).item()
    model.train()
    return round(loss, 6)


def run(ch, method, scale, seed):
    """The recipe of scripts/train_context_extension.py's train(), evaluated every EVERY steps."""
    torch.manual_seed(seed)
    model = load_checkpoint(ch, "ctx05_base")
    rope = ch["make_rope"](method, scale)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.95), weight_decay=0.01)
    warmup = max(1, STEPS // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: min(1.0, (t + 1) / warmup) *
                                              (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t / STEPS))))
    curve = {0: held_out_loss(ch, model, rope)}
    model.train()
    for step, (x, y, _) in zip(range(STEPS), lm_batches(ch["train_ids"], FT_LEN, 8, seed=seed)):
        loss = F.cross_entropy(model(x, rope).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if (step + 1) % EVERY == 0:
            curve[step + 1] = held_out_loss(ch, model, rope)
            print(f"{method} seed {seed}: step {step + 1} held-out loss at 1024 {curve[step + 1]:.4f}", flush=True)
    return curve


def one_run(arm_seed):
    arm, seed = arm_seed
    torch.set_num_threads(1)
    curve = run(load_chapter(), arm, ARMS[arm], seed)
    return arm, seed, {str(k): v for k, v in curve.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS), choices=SEEDS,
                        help="seeds to run (default all); the others' curves are kept from the existing file")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    args = parser.parse_args()
    curves = {arm: {} for arm in ARMS}
    if set(args.seeds) != set(SEEDS):
        kept = json.loads(OUTPUT.read_text())["curves"]
        curves = {arm: {seed: kept[arm][seed] for seed in kept[arm] if int(seed) not in args.seeds} for arm in ARMS}
    with ProcessPoolExecutor(args.jobs) as pool:
        for arm, seed, curve in pool.map(one_run, [(arm, seed) for seed in args.seeds for arm in ARMS]):
            curves[arm][str(seed)] = curve
    table = {"command": "python scripts/steps_context_extension.py", "length": 1024, "steps": STEPS,
             "seeds": list(SEEDS), "curves": {arm: dict(sorted(curves[arm].items())) for arm in ARMS}}
    OUTPUT.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
