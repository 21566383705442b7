#!/usr/bin/env python3
"""Evaluate notebook 05's main arms on every held-out window and store the losses as a table.

    python scripts/windows_context_extension.py        # about 2 minutes on one core

The notebook evaluates its first 16 held-out windows of 1,024 characters live, within its time budget. This
script evaluates the same models and methods on all of them (the held-out 5% of the corpus holds 78 whole
windows, from several documents) and writes `assets/ctx05_windows.json`: per-window mean loss (nats/char) at
128 and 1,024 characters for each arm. Section 9 reads its verdicts from it and prints the largest difference
between the stored first 16 windows and its live run, so a stale table shows. Deterministic on one CPU thread.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_context_extension import ASSETS, load_chapter, load_checkpoint  # noqa: E402

ARMS = {  # name -> (checkpoint, make_rope's method, scale, sliding window)
    "none": ("ctx05_base", "none", 1.0, None),
    "none, sliding window 128": ("ctx05_base", "none", 1.0, 128),
    "PI": ("ctx05_base", "PI", 8.0, None),
    "NTK-aware": ("ctx05_base", "NTK-aware", 8.0, None),
    "dynamic NTK": ("ctx05_base", "dynamic NTK", 1.0, None),
    "YaRN": ("ctx05_base", "YaRN", 8.0, None),
    "Llama 3": ("ctx05_base", "Llama 3", 8.0, None),
    "none + fine-tune": ("ctx05_none_ft", "none", 1.0, None),
    "PI + fine-tune": ("ctx05_pi_ft", "PI", 8.0, None),
    "NTK-aware + fine-tune": ("ctx05_ntk_ft", "NTK-aware", 8.0, None),
    "YaRN + fine-tune": ("ctx05_yarn_ft", "YaRN", 8.0, None),
}
LENGTH = 1024
OUTPUT = ASSETS / "ctx05_windows.json"


def held_out_windows(ch, length=LENGTH):
    """(inputs, targets), int64 (n, length) each: every whole held-out window of `length` characters, in order."""
    val = ch["val_ids"]
    n = (len(val) - 1) // length
    held = val[: n * length + 1]
    return held[:-1].view(n, length), held[1:].view(n, length)


@torch.no_grad()
def per_window(model, rope, inputs, targets, window=None, lengths=(128, LENGTH)):
    """{length: per-window mean loss over the first `length` characters, float list}; batches of 8 windows.

    One pass over the whole windows when the method's angles do not depend on the length; otherwise (dynamic
    NTK) one pass per length, as the notebook's losses_by_length does.
    """
    static = all(torch.equal(a, b) if torch.is_tensor(a) else a == b
                 for a, b in zip(rope(min(lengths)), rope(max(lengths))))

    def losses(size):                                 # (windows, size) per-character loss, float64
        rows = [F.cross_entropy(model(inputs[i:i + 8, :size], rope, window=window).transpose(1, 2),
                                targets[i:i + 8, :size], reduction="none").double() for i in range(0, len(inputs), 8)]
        return torch.cat(rows)

    if static:
        full = losses(max(lengths))
        return {n: full[:, :n].mean(1).tolist() for n in lengths}
    return {n: losses(n).mean(1).tolist() for n in lengths}


def main() -> None:
    torch.set_num_threads(1)
    ch = load_chapter()
    inputs, targets = held_out_windows(ch)
    n = len(inputs)
    table = {"command": "python scripts/windows_context_extension.py", "windows": n, "losses": {}}
    for arm, (checkpoint, method, scale, window) in ARMS.items():
        model = load_checkpoint(ch, checkpoint)
        by_len = per_window(model.eval(), ch["make_rope"](method, scale), inputs, targets, window)
        table["losses"][arm] = {str(k): [round(v, 6) for v in by_len[k]] for k in (128, LENGTH)}
        print(f"{arm:26s} 128: {sum(by_len[128]) / n:.4f}  1024: {sum(by_len[LENGTH]) / n:.4f}", flush=True)
    OUTPUT.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {OUTPUT} ({n} windows)")


if __name__ == "__main__":
    main()
