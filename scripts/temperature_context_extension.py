#!/usr/bin/env python3
"""Fit YaRN's attention temperature on notebook 05's base model at s = 2, 4, 8 and 16, stored as a table.

    python scripts/temperature_context_extension.py       # about 5 minutes on one core

YaRN multiplies cos and sin by sqrt(1/t) and recommends sqrt(1/t) = 0.1 ln s + 1 (Peng et al. 2023,
arXiv:2309.00071v2, eq. 22), a line fitted on LLaMA. For each s this script evaluates the
training-free YaRN of the notebook (beta_fast 5, beta_slow 1, s fixed) on the base checkpoint at the
length it is built for, 128 s characters, on every whole held-out window of that length (313 of 256
characters, 156 of 512, 78 of 1,024, 39 of 2,048), with sqrt(1/t) from 1.0 to 1.5 in steps of 0.05
and at the paper's value (key "paper"). It writes `assets/ctx05_temperature.json`: the per-window
mean loss (nats/char) for each s and sqrt(1/t); section 10 reads it and fits the best sqrt(1/t)
against ln s. Deterministic on one CPU thread.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_context_extension import ASSETS, load_chapter, load_checkpoint  # noqa: E402
from windows_context_extension import held_out_windows, per_window  # noqa: E402

SCALES = (2.0, 4.0, 8.0, 16.0)
FACTORS = tuple(round(1.0 + 0.05 * k, 2) for k in range(11))      # sqrt(1/t) = 1.00, 1.05, ..., 1.50
OUTPUT = ASSETS / "ctx05_temperature.json"


def main() -> None:
    torch.set_num_threads(1)
    ch = load_chapter()
    model = load_checkpoint(ch, "ctx05_base").eval()
    table = {"command": "python scripts/temperature_context_extension.py", "checkpoint": "ctx05_base",
             "beta_fast": ch["BETA_FAST"], "beta_slow": ch["BETA_SLOW"], "losses": {}}
    for s in SCALES:
        length = int(ch["TRAIN_LEN"] * s)
        inputs, targets = held_out_windows(ch, length)
        paper = 0.1 * math.log(s) + 1
        rows = {}
        for factor in (*FACTORS, None):                               # None: the paper's 0.1 ln s + 1
            rope = ch["make_rope"]("YaRN", s, attention_factor=factor)
            key = "paper" if factor is None else f"{factor:.2f}"
            rows[key] = [round(v, 6) for v in per_window(model, rope, inputs, targets, lengths=(length,))[length]]
        table["losses"][f"{s:g}"] = {"length": length, "windows": len(inputs), "paper": round(paper, 6), "loss": rows}
        best = min((f for f in rows if f != "paper"), key=lambda f: sum(rows[f]))
        print(f"s = {s:g} at {length} ({len(inputs)} windows): best sqrt(1/t) on the grid {best}, paper {paper:.3f}; "
              f"loss {sum(rows[best]) / len(inputs):.4f} vs {sum(rows['paper']) / len(inputs):.4f}",
              flush=True)
    OUTPUT.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
