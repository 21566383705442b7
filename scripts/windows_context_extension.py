#!/usr/bin/env python3
"""Evaluate notebook 05's main arms on every held-out window and store the losses as a table.

    python scripts/windows_context_extension.py        # about 2 minutes on one core

The notebook evaluates on the first 16 held-out windows of 1,024 characters, within its time budget. This
script evaluates the same models and methods on all of them (the held-out 5% of the corpus holds 78 whole
windows, from several documents) and writes `assets/ctx05_windows.json`: per-window mean loss (nats/char) at
128 and 1,024 characters for each arm. Section 11 reads it to check that the verdicts drawn on 16 windows
hold on all 78. Deterministic on one CPU thread.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_context_extension import ASSETS, load_chapter  # noqa: E402

ARMS = {  # name -> (checkpoint, make_rope's method, scale, sliding window)
    "none": ("ctx05_base", "none", 1.0, None),
    "none, sliding window 128": ("ctx05_base", "none", 1.0, 128),
    "NTK-aware": ("ctx05_base", "NTK-aware", 8.0, None),
    "YaRN": ("ctx05_base", "YaRN", 8.0, None),
    "Llama 3": ("ctx05_base", "Llama 3", 8.0, None),
    "none + fine-tune": ("ctx05_none_ft", "none", 1.0, None),
    "PI + fine-tune": ("ctx05_pi_ft", "PI", 8.0, None),
    "NTK-aware + fine-tune": ("ctx05_ntk_ft", "NTK-aware", 8.0, None),
    "YaRN + fine-tune": ("ctx05_yarn_ft", "YaRN", 8.0, None),
}
LENGTH = 1024
OUTPUT = ASSETS / "ctx05_windows.json"


@torch.no_grad()
def per_window(model, rope, inputs, targets, window):
    """(128-character loss, 1,024-character loss) per window, float lists; batches of 8 windows."""
    short, full = [], []
    for start in range(0, len(inputs), 8):
        logits = model(inputs[start:start + 8], rope, window=window)
        loss = F.cross_entropy(logits.transpose(1, 2), targets[start:start + 8], reduction="none").double()
        short += loss[:, :128].mean(1).tolist()
        full += loss.mean(1).tolist()
    return short, full


def main() -> None:
    torch.set_num_threads(1)
    ch = load_chapter()
    val = ch["val_ids"]
    n = (len(val) - 1) // LENGTH
    held = val[: n * LENGTH + 1]
    inputs, targets = held[:-1].view(n, LENGTH), held[1:].view(n, LENGTH)
    table = {"command": "python scripts/windows_context_extension.py", "windows": n, "losses": {}}
    for arm, (checkpoint, method, scale, window) in ARMS.items():
        model = ch["TinyRoPELM"](ch["CFG"])
        model.load_state_dict(torch.load(ASSETS / f"{checkpoint}.pt", weights_only=True))
        short, full = per_window(model.eval(), ch["make_rope"](method, scale), inputs, targets, window)
        table["losses"][arm] = {"128": [round(v, 6) for v in short], "1024": [round(v, 6) for v in full]}
        print(f"{arm:26s} 128: {sum(short) / n:.4f}  1024: {sum(full) / n:.4f}", flush=True)
    OUTPUT.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {OUTPUT} ({n} windows)")


if __name__ == "__main__":
    main()
