"""Trusted references of notebook 07's exercises, and the heads its interpret exercise is graded on.

Trusted-side only: :func:`rope_init_fn` computes the answers of an implement exercise (it is handed
to the learner's ``proportional_loses_position`` only as a black box) and :func:`planted_head` builds
the hidden cases, so nothing here may reach the learner's process or the starter repository.
The formulas follow Hugging Face transformers 5.23 (``modeling_rope_utils``), which
tests/test_oracle_07_rope_in_practice.py checks them against. ``mistake`` switches reproduce
catalogued wrong answers, so that a test can name them or accept them where another test owns them.
"""
from __future__ import annotations

import math

import torch

TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")


def ladder(dim: int, base: float) -> torch.Tensor:
    """RoPE's frequencies base^(-2i/dim), i < dim/2, float64."""
    return base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)


def _mscale(scale: float, m: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0


def reference(rope_parameters: dict, head_dim: int, max_position_embeddings: int,
              seq_len: int | None = None, mistake: str | None = None) -> tuple[torch.Tensor, float]:
    """float64 inverse frequencies and the attention factor; ``mistake`` reproduces a wrong answer."""
    p = rope_parameters
    kind = p.get("rope_type", p.get("type", "default"))
    base = float(p.get("rope_theta", 10000.0))
    share = float(p.get("partial_rotary_factor", 1.0))
    if kind == "proportional":
        kept = int(share * head_dim // 2)
        out = torch.zeros(head_dim // 2, dtype=torch.float64)
        exponent_dim = 2 * kept if mistake == "proportional over kept" else head_dim
        out[:kept] = base ** (-torch.arange(0, 2 * kept, 2, dtype=torch.float64) / max(exponent_dim, 1))
        out = out / float(p.get("factor") or 1.0)
        if mistake == "proportional drops stopped pairs":
            out = out[:kept]
        return out, 1.0
    dim = int(head_dim * share)
    if mistake == "partial ignored":
        dim = head_dim
    theta = ladder(dim, base)
    if mistake == "partial exponent over head_dim":
        theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / head_dim)
    original = p.get("original_max_position_embeddings") or max_position_embeddings
    factor = p.get("factor")
    if kind == "default":
        return theta, 1.0
    if kind == "linear":
        return theta / factor, 1.0
    if kind == "dynamic":
        length = seq_len or max_position_embeddings
        if mistake != "dynamic unclamped":
            length = max(length, max_position_embeddings)
        new_base = base * (factor * length / max_position_embeddings - (factor - 1)) ** (dim / (dim - 2))
        return ladder(dim, new_base), 1.0
    if kind == "llama3":
        low, high = float(p["low_freq_factor"]), float(p["high_freq_factor"])
        wavelength = 2 * math.pi / theta
        mu = (original / wavelength - low) / (high - low)
        blended = (1 - mu) * theta / factor + mu * theta
        return torch.where(wavelength < original / high, theta,
                           torch.where(wavelength > original / low, theta / factor, blended)), 1.0
    if factor is None:
        factor = max_position_embeddings / original
    attention = p.get("attention_factor")
    if kind == "longrope":
        if attention is None:
            denominator = max_position_embeddings if mistake == "longrope factor over L_max" else original
            attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(denominator))
        if mistake == "longrope long at original":
            long = seq_len is not None and seq_len >= original
        else:
            long = seq_len is not None and seq_len > original
        chosen = p["long_factor"] if long else p["short_factor"]
        return theta / torch.tensor(chosen, dtype=torch.float64), float(attention)
    if attention is None:
        if p.get("mscale") and p.get("mscale_all_dim") and mistake != "mscale ignored":
            attention = _mscale(factor, p["mscale"]) / _mscale(factor, p["mscale_all_dim"])
        else:
            attention = _mscale(factor)
    fast, slow = p.get("beta_fast") or 32.0, p.get("beta_slow") or 1.0

    def cut(rotations):
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))
    lo, hi = cut(fast), cut(slow)
    if p.get("truncate", True) or mistake == "truncate ignored":
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, dim - 1)
    if lo == hi:
        hi += 0.001
    ramp = ((torch.arange(dim // 2, dtype=torch.float64) - lo) / (hi - lo)).clamp(0, 1)
    return (1 - ramp) * theta + ramp * theta / factor, float(attention)


def rope_init_fn(rope_parameters: dict, head_dim: int, max_position_embeddings: int,
                  seq_len: int | None = None) -> tuple[torch.Tensor, float]:
    """The trusted version of notebook 07's ``rope_init_fn`` (float32 frequencies, a float)."""
    kind = rope_parameters.get("rope_type", rope_parameters.get("type", "default"))
    if kind not in TYPES or head_dim < 2 or head_dim % 2:
        raise ValueError("invalid rope_parameters or head_dim")
    inv_freq, factor = reference(rope_parameters, head_dim, max_position_embeddings, seq_len)
    return inv_freq.float(), float(factor)


def mrope_ids(segments, merge=2, *, resume="max", offset_image=True, row_major=True, merged=True):
    """M-RoPE ids (3, T) of a sequence of ("text", n) and ("image", h, w) segments; the switches reproduce
    catalogued mistakes (where the text resumes, the image's offset, its order, the merging)."""
    parts, start = [], 0
    for segment in segments:
        if segment[0] == "text":
            parts.append(torch.arange(segment[1]).expand(3, -1) + start)
            start += segment[1]
            continue
        h, w = (segment[1] // merge, segment[2] // merge) if merged else (segment[1], segment[2])
        if row_major:
            rows, cols = torch.arange(h).repeat_interleave(w), torch.arange(w).repeat(h)
        else:
            rows, cols = torch.arange(h).repeat(w), torch.arange(w).repeat_interleave(h)
        ids = torch.stack((torch.zeros(h * w, dtype=torch.int64), rows, cols))
        parts.append(ids + (start if offset_image else 0))
        start += {"max": max(h, w), "count": h * w, "max+1": max(h, w) + 1}[resume]
    return torch.cat(parts, 1) if parts else torch.zeros(3, 0, dtype=torch.int64)


# -- planted heads of proportional_loses_position -------------------------------------------------
def planted_head(head_dim: int, roles: dict, *, n_seq: int = 8, T: int = 64, seed: int = 0,
                 noise: float = 0.02) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and keys (n_seq, T, head_dim), float32, half-split, whose pair i plays ``roles[i]``.

    "position": one fixed query and key phase in every token, so the pair's logit follows the distance;
    "content": an independent random query and key per token, so it depends on the tokens and averages
    out over them; any other pair is unused (noise of size ``noise``).
    """
    g = torch.Generator().manual_seed(seed)
    half = head_dim // 2
    q = noise * torch.randn(n_seq, T, half, dtype=torch.complex128, generator=g)
    k = noise * torch.randn(n_seq, T, half, dtype=torch.complex128, generator=g)
    for i, role in roles.items():
        if role == "position":
            q[..., i] += torch.exp(2j * math.pi * torch.rand((), dtype=torch.float64, generator=g))
            k[..., i] += torch.exp(2j * math.pi * torch.rand((), dtype=torch.float64, generator=g))
        elif role == "content":
            q[..., i] += torch.randn(n_seq, T, dtype=torch.complex128, generator=g)
            k[..., i] += torch.randn(n_seq, T, dtype=torch.complex128, generator=g)
    return torch.cat((q.real, q.imag), -1).float(), torch.cat((k.real, k.imag), -1).float()


TURNS = 3.5
"""A planted positional pair carries position over distances 0..max_offset when theta * max_offset is
at least this (its logit then swings by at least 1 - cos(1.75) = 1.18 of its size, whatever its phase)."""
STILL = 0.2
"""... and is a bias when theta * max_offset is at most this (a swing of at most 0.2 of its size)."""


def loses_position(head_dim: int, rope_theta: float, partial_rotary_factor: float, roles: dict,
                   max_offset: int) -> bool:
    """The answer by construction: a stopped pair is planted for position and turns over the distances.

    Raises AssertionError when a planted positional pair is neither clearly turning nor clearly still
    (a case whose answer would depend on a threshold)."""
    kept = int(partial_rotary_factor * head_dim // 2)
    theta = ladder(head_dim, rope_theta)
    answer = False
    for i, role in roles.items():
        if role != "position":
            continue
        angle = float(theta[i]) * max_offset
        assert angle >= TURNS or angle <= STILL, (i, angle)
        if i >= kept and angle >= TURNS:
            answer = True
    return answer
