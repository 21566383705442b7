#!/usr/bin/env python3
"""The smallest RoPE base that meets Men et al.'s criterion, for notebook 04's section 8.

    python scripts/rope_base_minima.py            # a few minutes on one core (8,192 tokens dominates)

The criterion (Men et al. 2024, *Base of RoPE Bounds Context Length*): S(Delta) = mean_j cos(Delta
base^(-2j/d)) > 0 for every integer offset 0 <= Delta <= L. The bases that meet it do not form an
interval, and the first passing window can be narrower than 0.1 %, so a grid or a bisection misses
it. This script runs the grader's branch-and-bound search (``_smallest_base`` in
grader/suites/test_04_rotary_embeddings.py: no window wider than 1e-7 in log(base) escapes it) for
head_dim 128 and prints each smallest base with ten significant digits; the notebook's section 8
states them and checks each live (S > 0 at the base, S <= 0 a millionth below it).
Deterministic (float64, one CPU thread).
"""
from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import torch

SUITE = Path(__file__).resolve().parents[1] / "grader" / "suites" / "test_04_rotary_embeddings.py"
CONTEXTS = (1024, 2048, 4096, 8192)
HEAD_DIM = 128


def load_search():
    """``_smallest_base`` and ``_worst_score`` of the hidden suite (loaded by path: suites are no package)."""
    spec = importlib.util.spec_from_file_location("suite_04", SUITE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._smallest_base, module._worst_score


def main() -> None:
    torch.set_num_threads(1)
    smallest_base, worst_score = load_search()
    print(f"head_dim {HEAD_DIM}: the smallest base with S(Delta) > 0 for every offset 0..L")
    for length in CONTEXTS:
        start = time.process_time()
        base = smallest_base(length, HEAD_DIM)
        assert worst_score(base, length, HEAD_DIM) > 0 >= worst_score(base * (1 - 1e-6), length, HEAD_DIM)
        print(f"L = {length:5d}: {base:.10g}   ({time.process_time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
