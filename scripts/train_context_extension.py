#!/usr/bin/env python3
"""Train the checkpoints of notebook 05 (context extension) into assets/, deterministically.

    python scripts/train_context_extension.py              # every checkpoint, in order (about 16 min of CPU, one thread)
    python scripts/train_context_extension.py --only ctx05_base --only ctx05_passkey
    python scripts/train_context_extension.py --list
    python scripts/train_context_extension.py --time 12    # CPU time per step of each kind, scaled to the recipes

The model, the data and the scaling methods are not defined here: they are read from the solution
notebook (its `setup`, `exercise` and `model` cells), so the chapter and its checkpoints cannot
drift apart. Training uses one CPU thread and fixed seeds: for a given PyTorch build and CPU the
files are identical from run to run. Each checkpoint is a state dict saved with `torch.save` and
loaded with `torch.load(..., weights_only=True)`.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat
import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
NOTEBOOK = ROOT / "solutions" / "05_context_extension.ipynb"
ASSETS = ROOT / "assets"
CHAPTER_TAGS = ("setup", "exercise", "model")


def load_chapter() -> dict:
    """The notebook's setup, exercise and model cells, executed in a fresh namespace."""
    module = types.ModuleType("chapter05")  # a registered module: dataclasses look their class up there
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    exec("import math, re, time\nfrom dataclasses import dataclass\nfrom pathlib import Path\n"
         "import numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n",
         namespace)
    namespace["ASSETS"] = ASSETS
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code" and set(cell.metadata.get("tags", [])) & set(CHAPTER_TAGS):
            # dont_inherit: the cells compile as in the notebook, without this file's __future__ imports
            exec(compile(cell.source, f"<05 cell {index}>", "exec", dont_inherit=True), namespace)
    return namespace


def lm_batches(data, seq_len, batch_size, seed):
    """Endless (inputs, targets, weights) batches of random windows of `data`; weights None = uniform."""
    g = torch.Generator().manual_seed(seed)
    while True:
        starts = torch.randint(len(data) - seq_len - 1, (batch_size,), generator=g)
        chunk = torch.stack([data[s: s + seq_len + 1] for s in starts.tolist()])  # (B, T + 1)
        yield chunk[:, :-1], chunk[:, 1:], None


def passkey_batches(ch, batch_size, seed, min_len, max_len):
    """Endless batches of passkey prompts followed by their answer, all within max_len tokens.

    Every batch has one prompt length, drawn in [min_len, max_len - 6]; the needle depth is uniform.
    Weights: 1 on the six answer characters (" 12345"), 0.1 on the rest (the filler is cheap to predict).
    """
    answer_chars = ch["ANSWER_CHARS"]
    rng = np.random.default_rng(seed)
    while True:
        length = int(rng.integers(min_len, max_len - answer_chars + 1))       # prompt characters
        rows = []
        for _ in range(batch_size):
            passkey = int(rng.integers(10000, 100000))
            rows.append(ch["encode"](ch["passkey_prompt"](length, float(rng.random()), passkey, rng) + f" {passkey}"))
        chunk = torch.stack(rows)                                              # (B, length + 6)
        weights = torch.full((batch_size, chunk.shape[1] - 1), 0.1)
        weights[:, -answer_chars:] = 1.0
        yield chunk[:, :-1], chunk[:, 1:], weights


def train(model, rope, batches, steps, lr, seed, name):
    """AdamW with linear warm-up and cosine decay to a tenth; prints the loss every 100 steps."""
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.01)
    warmup = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: min(1.0, (t + 1) / warmup) *
                                              (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t / steps))))
    model.train()
    losses, start = [], time.time()
    for step, (x, y, w) in zip(range(steps), batches):
        per_token = F.cross_entropy(model(x, rope).flatten(0, 1), y.flatten(), reduction="none")
        loss = per_token.mean() if w is None else (per_token * w.flatten()).sum() / w.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if (step + 1) % 100 == 0 or step + 1 == steps:
            recent = losses[-100:]
            print(f"{name}: step {step + 1}/{steps} loss {sum(recent) / len(recent):.4f} "
                  f"({time.time() - start:.0f} s)", flush=True)
    return model.eval()


@dataclass
class Recipe:
    """One checkpoint: where it starts, which scaling it trains under, on what data, for how long."""
    name: str
    parent: str | None        # checkpoint to start from, or None for a fresh model
    method: str               # scaling method during training (make_rope's name)
    batches: Callable         # chapter -> iterator of (inputs, targets, weights)
    steps: int
    lr: float
    seed: int


FT_LEN, FT_SCALE = 512, 8.0   # fine-tunes: windows/prompts of at most 512 characters, s = 8 (built for 1024)


def recipes() -> list[Recipe]:
    out = [Recipe("ctx05_base", None, "none", lambda ch: lm_batches(ch["train_ids"], 128, 32, seed=0),
                  steps=1500, lr=3e-3, seed=0),
           Recipe("ctx05_passkey", "ctx05_base", "none",
                  lambda ch: passkey_batches(ch, 32, seed=2, min_len=72, max_len=128), steps=800, lr=1e-3, seed=2)]
    for method in ("none", "PI", "YaRN"):  # the same fine-tune for each: only the scaling differs
        tag = method.lower()
        out.append(Recipe(f"ctx05_{tag}_ft", "ctx05_base", method,
                          lambda ch: lm_batches(ch["train_ids"], FT_LEN, 8, seed=1), steps=150, lr=5e-4, seed=1))
        out.append(Recipe(f"ctx05_passkey_{tag}_ft", "ctx05_passkey", method,
                          lambda ch: passkey_batches(ch, 8, seed=3, min_len=128, max_len=FT_LEN),
                          steps=200, lr=5e-4, seed=3))
    for method, tag in (("NTK-aware", "ntk"), ("dynamic NTK", "dynamic")):  # the same language-model fine-tune
        out.append(Recipe(f"ctx05_{tag}_ft", "ctx05_base", method,
                          lambda ch: lm_batches(ch["train_ids"], FT_LEN, 8, seed=1), steps=150, lr=5e-4, seed=1))
    for method, tag in (("none", "none"), ("PI", "pi"), ("YaRN", "yarn"), ("NTK-aware", "ntk"),
                        ("dynamic NTK", "dynamic")):  # fine-tuned at the target length 1,024, as Chen et al. do:
        out.append(Recipe(f"ctx05_{tag}_ft1024", "ctx05_base", method,   # batch 4, as many characters per step
                          lambda ch: lm_batches(ch["train_ids"], 2 * FT_LEN, 4, seed=1), steps=150, lr=5e-4, seed=1))
    out.append(Recipe("ctx05_passkey_ntk_ft", "ctx05_passkey", "NTK-aware",  # the passkey fine-tune, NTK-aware
                      lambda ch: passkey_batches(ch, 8, seed=3, min_len=128, max_len=FT_LEN), steps=200, lr=5e-4, seed=3))
    return out


def load_checkpoint(ch: dict, name: str):
    """A new ``TinyRoPELM`` holding ``assets/<name>.pt`` (a state dict, loaded with ``weights_only=True``)."""
    model = ch["TinyRoPELM"](ch["CFG"])
    model.load_state_dict(torch.load(ASSETS / f"{name}.pt", weights_only=True))
    return model


def build(ch: dict, recipe: Recipe) -> None:
    model = ch["TinyRoPELM"](ch["CFG"]) if recipe.parent is None else load_checkpoint(ch, recipe.parent)
    # dynamic NTK takes s = 1 (its scale follows the length, as in the notebook); the others s = 8
    scale = 1.0 if recipe.method in ("none", "dynamic NTK") else FT_SCALE
    start = time.time()
    train(model, ch["make_rope"](recipe.method, scale), recipe.batches(ch), recipe.steps, recipe.lr,
          recipe.seed, recipe.name)
    torch.save(model.state_dict(), ASSETS / f"{recipe.name}.pt")
    print(f"{recipe.name}: saved after {time.time() - start:.0f} s", flush=True)


def time_recipes(ch: dict, all_recipes: list[Recipe], steps: int) -> None:
    """CPU time (one thread) of ``steps`` training steps of each kind of checkpoint, scaled to the recipes."""
    kinds: dict[tuple, list[Recipe]] = {}
    for r in all_recipes:  # same parent, data and steps: the same cost per step, whatever the scaling
        kinds.setdefault((r.parent, r.name.startswith("ctx05_passkey"), r.name.endswith("1024"), r.steps), []).append(r)
    total = 0.0
    for group in kinds.values():
        r = group[0]
        model = ch["TinyRoPELM"](ch["CFG"]) if r.parent is None else load_checkpoint(ch, r.parent)
        scale = 1.0 if r.method in ("none", "dynamic NTK") else FT_SCALE
        start = time.process_time()
        train(model, ch["make_rope"](r.method, scale), r.batches(ch), steps, r.lr, r.seed, r.name)
        per_step = (time.process_time() - start) / steps
        total += per_step * r.steps * len(group)
        print(f"{r.name:24s} and {len(group) - 1} like it: {per_step:.3f} s per step x {r.steps} steps "
              f"= {per_step * r.steps * len(group) / 60:.1f} min", flush=True)
    print(f"all {len(all_recipes)} checkpoints: about {total / 60:.0f} minutes of CPU time on one thread")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="a checkpoint's name (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the checkpoints and exit")
    parser.add_argument("--time", type=int, metavar="STEPS",
                        help="train STEPS steps of each kind of checkpoint (nothing saved) and print the CPU time of "
                             "one thread per step, scaled to every recipe's steps")
    args = parser.parse_args()
    all_recipes = recipes()
    if args.list:
        for r in all_recipes:
            print(f"{r.name:26s} from {r.parent or 'scratch':14s} {r.method:11s} {r.steps} steps")
        return
    known = {r.name for r in all_recipes}
    unknown = set(args.only or ()) - known
    if unknown:
        raise SystemExit(f"unknown checkpoint(s) {sorted(unknown)}; --list shows the names")
    torch.set_num_threads(1)  # one thread: reductions in a fixed order, so the files reproduce
    ch = load_chapter()
    if args.time:
        time_recipes(ch, all_recipes, args.time)
        return
    for recipe in all_recipes:
        if not args.only or recipe.name in args.only:
            build(ch, recipe)


if __name__ == "__main__":
    main()
