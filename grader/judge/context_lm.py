"""Notebook 05's character-level RoPE language model, rebuilt in trusted code to score scaling rules.

The challenge of notebook 05 asks for a training-free RoPE scaling rule (new inverse frequencies and
an attention factor). The grader judges a rule by what it does to the shipped base checkpoint
``assets/ctx05_base.pt``: the loss (nats per character) of text the model was not trained on. Two
texts: the notebook's held-out windows (the last 5% of ``corpus.txt``, 78 windows of 1,024
characters, all of which the notebook's stored tables and its temperature fit use: a learner may
search on them) and the grader's windows (``ctx05_grader_windows.txt``, 48 windows of the Python
library reference, a part of the documentation that the corpus leaves out and that no notebook
reads). The hidden tests choose which grader windows they score. The learner's code only returns
the frequencies; this module, imported by the tests and never by the sandbox, runs the model. It
mirrors the notebook's ``TinyRoPELM`` layer for layer (the state dict loads without renaming);
tests/judge/test_context_lm.py proves that both give the same logits on the checkpoint.

Source of the architecture: the notebook (section 8); RoPE in the half-split layout of Hugging Face
``transformers`` (Su et al., 2021, eq. 34), cos and sin both multiplied by the attention factor
(Peng et al., 2023, section 3.4).
"""
from __future__ import annotations

import functools
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from grader.assets import course_assets
from grader.sandbox.codec import one_torch_thread

VOCAB_SIZE, D_MODEL, N_HEADS, N_LAYERS = 96, 96, 3, 3
HEAD_DIM = D_MODEL // N_HEADS
BASE = 100.0
TRAIN_LEN = 128
"""The checkpoint's configuration: 16 rotary pairs of base 100, pre-trained on 128 characters."""
WINDOW = 1024
"""Length of the windows (eight times the training length)."""
GRADER_WINDOWS = 48
"""Windows in ``ctx05_grader_windows.txt`` (each WINDOW + 1 characters: the inputs and the next one)."""
SOURCES = ("held-out", "grader")
"""``held-out``: the notebook's held-out windows of corpus.txt; ``grader``: the text no notebook reads."""


def default_inv_freq() -> torch.Tensor:
    """The chapter model's frequencies theta_i = BASE^(-2i/HEAD_DIM), float32 (HEAD_DIM // 2,): a
    table of this model, not a function of any head_dim and base (notebook 04's rope_inv_freq is
    that, and the learner's to write)."""
    return (BASE ** (-torch.arange(0, HEAD_DIM, 2, dtype=torch.float64) / HEAD_DIM)).float()


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class _Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL, bias=False)
        self.proj = nn.Linear(D_MODEL, D_MODEL, bias=False)

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, N_HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)   # 3 x (B, H, T, hd)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)                   # (B, H, T, hd)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
        self.attn = _Attention()
        self.mlp = nn.Sequential(nn.Linear(D_MODEL, 4 * D_MODEL), nn.GELU(), nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x, cos, sin):
        x = x + self.attn(self.norm1(x), cos, sin)
        return x + self.mlp(self.norm2(x))


class ContextLM(nn.Module):
    """The notebook's TinyRoPELM, run with fixed inverse frequencies and attention factor."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB_SIZE, D_MODEL)
        self.blocks = nn.ModuleList(_Block() for _ in range(N_LAYERS))
        self.norm = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB_SIZE, bias=False)

    def forward(self, idx: torch.Tensor, inv_freq: torch.Tensor, attention_factor: float) -> torch.Tensor:
        """idx (B, T) int64 -> logits (B, T, vocab), positions 0..T-1."""
        angles = torch.arange(idx.shape[1], dtype=torch.float64)[:, None] * inv_freq.double()[None, :]
        angles = torch.cat([angles, angles], dim=-1)                                     # (T, hd)
        cos = (attention_factor * angles.cos()).float()
        sin = (attention_factor * angles.sin()).float()
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.head(self.norm(x))


def encode(text: str) -> torch.Tensor:
    """Characters to token ids as the notebook encodes them: newline 0, printable ASCII 1-95."""
    raw = np.frombuffer(text.encode("ascii"), dtype=np.uint8).astype(np.int64)
    return torch.from_numpy(np.where(raw == 10, 0, raw - 31))


@functools.lru_cache(maxsize=1)
def base_model() -> ContextLM:
    """The shipped base checkpoint, in eval mode (read with weights_only=True)."""
    model = ContextLM()
    state = torch.load(course_assets("ctx05_base.pt") / "ctx05_base.pt", weights_only=True)
    model.load_state_dict(state)
    return model.eval()


@functools.lru_cache(maxsize=1)
def held_out() -> torch.Tensor:
    """The held-out 5% of the corpus as token ids (N,), as the notebook splits it."""
    ids = encode((course_assets("corpus.txt") / "corpus.txt").read_text(encoding="ascii"))
    return ids[int(0.95 * len(ids)):]


@functools.lru_cache(maxsize=1)
def grader_text() -> torch.Tensor:
    """The grader's windows as token ids (GRADER_WINDOWS, WINDOW + 1)."""
    ids = encode((course_assets("ctx05_grader_windows.txt") / "ctx05_grader_windows.txt").read_text(encoding="ascii"))
    return ids.view(GRADER_WINDOWS, WINDOW + 1)


def windows(indices, source: str = "grader") -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets (len(indices), WINDOW) of windows ``indices`` of ``source`` (see SOURCES).

    Held-out window k starts at k * WINDOW of the held-out text, as the notebook cuts it. Raises
    ValueError for an unknown source or a window past its end.
    """
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    if source == "held-out":
        data = held_out()
        available = (len(data) - 1) // WINDOW
        rows = lambda ks: torch.stack([data[k * WINDOW: k * WINDOW + WINDOW + 1] for k in ks])
    else:
        available, rows = GRADER_WINDOWS, lambda ks: grader_text()[list(ks)]
    indices = list(indices)
    if not indices or any(not 0 <= k < available for k in indices):
        raise ValueError(f"{source} windows must be in [0, {available}), got {indices}")
    chosen = rows(indices)                                                              # (n, WINDOW + 1)
    return chosen[:, :-1], chosen[:, 1:]


TOKENS_AT_ONCE = 2048
"""Tokens that held_out_loss runs through the model at a time (whole windows): the widest activation,
the MLP's (2048, 384) float32, takes 3 MiB, below the size from which the grader's allocator maps
fresh pages for every block (grader.grade.LARGE_BLOCK_BYTES), so the passes reuse the same memory."""

PASSES_AT_ONCE = 2
"""Passes of TOKENS_AT_ONCE tokens that held_out_loss runs at once, each on a thread of its own.

torch runs each pass's operations on one thread (the grader's setting, :func:`one_torch_thread`) and
releases the interpreter's lock while they run, so two passes use two cores: while the grader scores
the model, the learner's sandbox waits for it. Each pass computes what it computed alone (the same rows,
the same order of operations), so the losses do not depend on this number; the memory of one more
pass's activations is the price (a few MiB)."""


def held_out_loss(inv_freq: torch.Tensor, attention_factor: float, length: int, indices,
                  source: str = "grader") -> float:
    """Mean next-character loss (nats/char) of the base checkpoint over the first ``length`` characters
    of windows ``indices`` of ``source``, with RoPE frequencies ``inv_freq`` (HEAD_DIM // 2,) and cos and
    sin multiplied by ``attention_factor``. One thread per pass, so the figure reproduces on any machine;
    the windows go through the model TOKENS_AT_ONCE tokens at a time (each window's logits do not depend
    on the others), PASSES_AT_ONCE passes at once, and the mean is taken in float64 over every
    character's loss."""
    if not 1 <= length <= WINDOW:
        raise ValueError(f"length must be in [1, {WINDOW}], got {length}")
    inputs, targets = windows(indices, source)
    inputs, targets = inputs[:, :length], targets[:, :length]
    per_pass = max(1, TOKENS_AT_ONCE // length)
    losses = torch.empty(targets.shape, dtype=torch.float32)                            # (n, length)
    model, inv_freq, attention_factor = base_model(), inv_freq.float(), float(attention_factor)

    def one_pass(start: int) -> None:
        # Both set here, in the pass's own thread: grad mode and a thread's OpenMP and MKL thread
        # counts are per thread, and a new thread's count defaults to every core (without this line
        # each pass's matrix products ran on two threads: four threads on two cores).
        torch.set_num_threads(1)
        rows = slice(start, start + per_pass)
        with torch.no_grad():
            logits = model(inputs[rows], inv_freq, attention_factor)
            losses[rows] = F.cross_entropy(logits.transpose(1, 2), targets[rows], reduction="none")

    starts = range(0, len(inputs), per_pass)
    with one_torch_thread(torch):
        if len(starts) == 1:
            one_pass(0)
        else:
            with ThreadPoolExecutor(min(PASSES_AT_ONCE, len(starts)), "grader-lm") as pool:
                for _ in pool.map(one_pass, starts):  # raises a pass's exception here
                    pass
    value = float(losses.double().mean())
    return value if math.isfinite(value) else math.inf
