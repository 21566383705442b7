"""Hidden rotary modules that notebook 05's tests hand to ``diagnose_rope`` as black boxes.

Trusted-side only (see :class:`grader.sandbox.codec.BlackBox`): ``_yarn``, ``_llama3`` and
``_dynamic_base`` compute answers of notebook 05's implement exercises, so nothing here may reach
the learner's process or the starter repository.
"""
from __future__ import annotations

import math as _math
import re

import numpy as np

import torch as _torch


# -- RoPE tables of scaled models, correct or with a bug that real implementations shipped --------
# Inputs of notebook 05's `diagnose_rope`: each behaves like a model's rotary-embedding module, which
# returns the cos and sin tables (seq_len, head_dim) for positions 0..seq_len-1 in the half-split
# layout, both multiplied by the attention factor.
def _theta(head_dim, base):
    return base ** (-_torch.arange(0, head_dim, 2, dtype=_torch.float64) / head_dim)


def _dynamic_base(base, scale, head_dim, seq_len, original):
    length = max(seq_len, original)
    return base * (scale * length / original - (scale - 1)) ** (head_dim / (head_dim - 2))


def _yarn(head_dim, base, scale, original, beta_fast=32.0, beta_slow=1.0):
    def cut(rotations):
        return head_dim * _math.log(original / (rotations * 2 * _math.pi)) / (2 * _math.log(base))
    low = max(_math.floor(cut(beta_fast)), 0)
    high = min(_math.ceil(cut(beta_slow)), head_dim - 1)
    if low == high:
        high += 0.001
    i = _torch.arange(head_dim // 2, dtype=_torch.float64)
    gamma = ((i - low) / (high - low)).clamp(0, 1)
    theta = _theta(head_dim, base)
    return (1 - gamma) * theta + gamma * theta / scale, 0.1 * _math.log(scale) + 1.0 if scale > 1 else 1.0


def _llama3(head_dim, base, scale, original, low=1.0, high=4.0, reversed_ramp=False):
    theta = _theta(head_dim, base)
    wavelength = 2 * _math.pi / theta
    mu = (original / wavelength - low) / (high - low)
    if reversed_ramp:
        mu = 1 - mu
    blended = (1 - mu) * theta / scale + mu * theta
    return _torch.where(wavelength < original / high, theta,
                        _torch.where(wavelength > original / low, theta / scale, blended))


ROWS_AT_ONCE = 1024
"""Rows of the tables that scaled_rope computes at a time (its float64 buffers: 1024 x head_dim / 2)."""


def scaled_rope(seq_len: int, *, method: str, head_dim: int, base: float, scale: float,
                original_max_position_embeddings: int, bug: str | None = None):
    """cos and sin tables, float32 (seq_len, head_dim), of a RoPE scaling method, as a model computes them.

    method: "PI", "dynamic NTK" (Hugging Face's formula, factor ``scale``), "YaRN" (betas 32 and 1)
    or "Llama 3" (factors 1 and 4). bug: None, or one that real implementations shipped:
    "stale base" (dynamic NTK's base computed once, for scale * L_orig, and reused at every length),
    "scaled twice" (positions divided by the scale as well as the frequencies),
    "wrong original length" (L_orig taken from the extended length scale * L_orig),
    "reversed ramp" (Llama 3's blend weights swapped between theta and theta / s).
    """
    original = original_max_position_embeddings
    if bug == "wrong original length":
        original = int(round(scale * original))
    factor, positions = 1.0, _torch.arange(int(seq_len), dtype=_torch.float64)
    if method == "PI":
        inv_freq = _theta(head_dim, base) / scale
    elif method == "dynamic NTK":
        length = int(round(scale * original)) if bug == "stale base" else int(seq_len)
        inv_freq = _theta(head_dim, _dynamic_base(base, scale, head_dim, length, original))
    elif method == "YaRN":
        inv_freq, factor = _yarn(head_dim, base, scale, original)
    elif method == "Llama 3":
        inv_freq = _llama3(head_dim, base, scale, original, reversed_ramp=bug == "reversed ramp")
    else:
        raise ValueError(f"unknown method {method!r}")
    if bug == "scaled twice":
        positions = positions / scale
    # Pair i fills columns i and i + head_dim / 2 (half-split): each cos and sin is computed once, in
    # float64, rounded to float32 in its first column and copied to the second (the same floats as the
    # cos of the duplicated angles, at a third of the cost; a factor of 1 multiplies nothing). The rows
    # go ROWS_AT_ONCE at a time through two float64 buffers that stay in cache and in the allocator's
    # heap: only the two float32 tables are fresh memory (a (65536, 128) call of the Llama 3.1
    # configuration would otherwise touch three more tables of float64 angles and waves).
    half, n = inv_freq.shape[0], len(positions)
    cos, sin = (_torch.empty(n, 2 * half, dtype=_torch.float32) for _ in range(2))
    rows = max(1, min(n, ROWS_AT_ONCE))
    angles, wave = _torch.empty(rows, half, dtype=_torch.float64), _torch.empty(rows, half, dtype=_torch.float64)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        block = _torch.mul(positions[start:stop, None], inv_freq[None, :], out=angles[:stop - start])
        for function, table in ((_torch.cos, cos), (_torch.sin, sin)):
            values = function(block, out=wave[:stop - start])
            if factor != 1.0:
                values.mul_(factor)
            table[start:stop, :half] = values
            table[start:stop, half:] = table[start:stop, :half]
    return cos, sin


# -- trusted prerequisites: an earlier exercise, for the exercises that call it -------------------
# passkey_accuracy's tests hand the learner's code this passkey_prompt as a black box in place of
# the learner's own (TRUSTED_PREREQUISITES of the suite): one mistake costs once. The random
# generator the learner passes crosses as a seed drawn from it (grader.sandbox.child.Box).
FILLER_SENTENCES = ("The grass is green.", "The sky is blue.", "The sun is yellow.",
                    "Here we go.", "There and back again.")
NEEDLE = "The pass key is {passkey}. "
QUESTION = "What is the pass key? The pass key is"


def passkey_prompt(context_length: int, depth: float, passkey: int, rng) -> str:
    """Trusted ``passkey_prompt`` (notebook 05): a prompt of exactly ``context_length`` characters,
    filler sentences with the needle at the sentence boundary nearest ``depth`` of the filler, then
    QUESTION (Mohtashami & Jaggi 2023)."""
    if not 0.0 <= depth <= 1.0:
        raise ValueError(f"depth must be in [0, 1], got {depth}")
    if passkey < 0:
        raise ValueError(f"passkey must be a non-negative integer, got {passkey}")
    needle = NEEDLE.format(passkey=int(passkey))
    n_filler = context_length - len(needle) - len(QUESTION)
    if n_filler < 0:
        raise ValueError(f"context_length={context_length} is too short: the needle and the question "
                         f"alone take {len(needle) + len(QUESTION)} characters")
    rng = np.random.default_rng(rng)
    pieces, total = [], -1  # total = length of " ".join(pieces)
    while total < n_filler:
        sentence = FILLER_SENTENCES[int(rng.integers(len(FILLER_SENTENCES)))]
        pieces.append(sentence)
        total += len(sentence) + 1
    filler = " ".join(pieces)[:n_filler]
    boundaries = [0] + [m.end() for m in re.finditer(r"\. ", filler)] + [n_filler]
    target = depth * n_filler
    at = min(boundaries, key=lambda b: (abs(b - target), b))
    return filler[:at] + needle + filler[at:] + QUESTION
