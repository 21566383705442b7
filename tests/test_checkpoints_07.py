"""Notebook 07's Part II: its shipped checkpoints load into the model cells, its seed table matches them, and its
sliding-window attention with sink tokens is the key/value cache that streaming generation keeps.

The model and evaluation code come from the notebook itself, through the loader that
scripts/train_rope_in_practice.py uses (cells tagged `setup` and `model`), so the test, the script and
the chapter cannot drift apart. Tolerance 1e-4 on a per-window loss: the table stores 6 decimals and was written on
one thread; another CPU or thread count changes float32 sums by less than 1e-5.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from tests.conftest import script_module

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
CHECKPOINTS = ["rip07_rope", "rip07_interleaved", "rip07_nope", "rip07_prope50", "rip07_prope25"]
WINDOWS = 3  # held-out windows recomputed per variant (of 512 characters each): a few, to stay fast


def _script():
    return script_module("train_rope_in_practice")


@pytest.fixture(scope="module")
def script():
    return _script()


@pytest.fixture(scope="module")
def chapter(script):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield script.load_chapter()
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def table():
    return json.loads((ASSETS / "rip07_seeds.json").read_text())


def test_names_match_the_chapter(chapter):
    assert sorted(chapter["CHECKPOINT_NAMES"].values()) == sorted(CHECKPOINTS)


def test_part_two_assets_stay_small():
    files = list(ASSETS.glob("rip07_*"))
    assert files, "no rip07_* assets"
    assert all(p.stat().st_size < 10 * 2**20 for p in files)
    assert sum(p.stat().st_size for p in files) < 15 * 2**20


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_checkpoint_loads_into_the_model_cells(chapter, name):
    variant = {v: k for k, v in chapter["CHECKPOINT_NAMES"].items()}[name]
    state = torch.load(ASSETS / f"{name}.pt", weights_only=True)
    model = chapter["MixLM"](chapter["VARIANTS"][variant])
    model.load_state_dict(state)  # strict: the same keys and shapes as the notebook's model
    assert all(t.dtype == torch.float32 and torch.isfinite(t).all() for t in state.values())


def test_table_holds_every_variant_and_seed(chapter, table):
    inputs, _ = chapter["held_windows"]()
    assert table["seeds"] == [1, 2, 3] and table["windows"] == len(inputs)
    assert set(table["losses"]) == set(chapter["VARIANTS"])
    for variant, seeds in table["losses"].items():
        assert sorted(seeds) == ["1", "2", "3"], variant
        for runs in seeds.values():
            for arm in runs.values():
                assert all(len(v) == len(inputs) for v in arm["bands"].values())
                assert len(arm["curve"]) == chapter["EVAL_LEN"]
    # seeds differ: the table is not one run copied three times
    bands = table["losses"]["RoPE"]
    assert bands["1"]["full attention"]["curve"] != bands["2"]["full attention"]["curve"]


def test_seed_one_of_the_table_is_the_shipped_checkpoint(script, chapter, table):
    """Recompute seed 1's per-window losses from each checkpoint on a few windows, every arm of the table."""
    inputs, targets = chapter["held_windows"]()
    inputs, targets = inputs[:WINDOWS], targets[:WINDOWS]
    arms = {"full attention": (None, 0, False), **chapter["STREAMING_ARMS"]}
    for variant, runs in table["losses"].items():
        model = script.load_checkpoint(chapter, variant)
        for arm, stored in runs["1"].items():
            window, sinks, reindex = arms[arm]
            bands = chapter["by_band"](chapter["char_losses"](model, inputs, targets, window, sinks, reindex))
            for (a, b), got in bands.items():
                want = torch.tensor(stored["bands"][f"{a}-{b}"][:WINDOWS], dtype=torch.float64)
                assert torch.allclose(torch.from_numpy(got), want, atol=1e-4), (variant, arm, a, b)


@torch.no_grad()
def _streaming_logits(model, idx, window, sinks, reindex):
    """Token by token through a cache that keeps the first `sinks` and the last `window` keys (StreamingLLM),
    rotating each kept key at its original position or at its slot in the cache. idx (T,) -> logits (T, vocab)."""
    keys = [[] for _ in model.blocks]    # per layer: unrotated keys (H, hd) and values, one per token so far
    values = [[] for _ in model.blocks]
    out = []
    for i in range(len(idx)):
        x = model.embed(idx[i:i + 1])[0]                                   # (d_model,)
        kept = sorted(set(range(min(sinks, i + 1))) | set(range(max(0, i - window + 1), i + 1)))
        positions = list(range(len(kept))) if reindex else kept          # the kept keys' positions
        for layer, block in enumerate(model.blocks):
            attn = block.attn
            q, k, v = attn.qkv(block.norm1(x)).view(3, attn.n_heads, attn.head_dim)
            keys[layer].append(k)
            values[layer].append(v)
            K = torch.stack([keys[layer][j] for j in kept], 1)           # (H, n, hd)
            V = torch.stack([values[layer][j] for j in kept], 1)
            if attn.freqs is not None:
                def rot(t, p):                                            # rotate pair m of t by p * freqs[m]
                    half = attn.head_dim // 2
                    angle = p * attn.freqs.double()
                    c, s = angle.cos().float(), angle.sin().float()
                    a, b = t[..., :half], t[..., half:]
                    return torch.cat([a * c - b * s, a * s + b * c], -1)
                q = rot(q, positions[-1])
                K = torch.stack([rot(K[:, n], p) for n, p in enumerate(positions)], 1)
            weights = ((q[:, None, :] * K).sum(-1) / math.sqrt(attn.head_dim)).softmax(-1)  # (H, n)
            y = (weights[..., None] * V).sum(1).reshape(-1)
            x = x + attn.proj(y)
            x = x + block.mlp(block.norm2(x))
        out.append(model.head(model.norm(x)))
    return torch.stack(out)


@pytest.mark.parametrize("sinks, reindex", [(0, False), (2, False), (2, True)])
def test_one_pass_windows_match_a_streaming_cache(chapter, script, sinks, reindex):
    """The model's one-pass mask (and its re-indexed sink angles) equals a real rolling cache, token by token."""
    model = script.load_checkpoint(chapter, "RoPE")
    idx = chapter["HELD_IDS"][:40]
    want = _streaming_logits(model, idx, window=8, sinks=sinks, reindex=reindex)
    with torch.no_grad():
        got = model(idx[None], window=8, sinks=sinks, reindex=reindex)[0]
    assert torch.allclose(got, want, atol=2e-4), (got - want).abs().max()
    if sinks:  # the arms differ: positions in the cache matter once the window has slid past the sinks
        other = _streaming_logits(model, idx, window=8, sinks=sinks, reindex=not reindex)
        assert (other - want).abs().max() > 1e-3


def test_partial_rotary_keeps_the_fastest_pairs(chapter):
    """p-RoPE as transformers' `proportional` type: int(p * d // 2) pairs at base^(-2i/d), then zeros."""
    freqs = chapter["pair_frequencies"](32, 100.0, 0.25)
    full = 100.0 ** (-torch.arange(0, 32, 2, dtype=torch.float64) / 32)
    assert torch.allclose(freqs[:4].double(), full[:4]) and (freqs[4:] == 0).all()
    assert torch.allclose(chapter["pair_frequencies"](32, 100.0).double(), full)
