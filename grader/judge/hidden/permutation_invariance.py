"""Hidden sequence functions that notebook 01's tests hand to ``symmetry_of`` as black boxes, and
the trusted ``scaled_dot_product_attention`` that ``self_attention`` is graded with.

Trusted-side only: they run in the grader, never in the learner's process (see
:class:`grader.sandbox.codec.BlackBox`), so no name or docstring here reaches a detector.
"""
import math

import torch

from grader.fixtures.permutation_invariance import _attend, _scores, _weights, plain_attention  # noqa: F401

# -- sequence functions that symmetry_of must classify ----------------------------------------
def tokenwise_mlp(x: torch.Tensor) -> torch.Tensor:
    """The same two-layer MLP on every token: equivariant. (T, d) -> (T, d)."""
    return torch.tanh(x @ _weights(x.shape[-1], 4)) @ _weights(x.shape[-1], 5)


def mean_pooling(x: torch.Tensor) -> torch.Tensor:
    """Attention followed by the mean over tokens: invariant. (T, d) -> (d,)."""
    return plain_attention(x).mean(dim=0)


def query_pooling(x: torch.Tensor) -> torch.Tensor:
    """Attention pooling with one learned query: invariant. (T, d) -> (d,)."""
    query = _weights(x.shape[-1], 6)[0]                                   # (d,)
    weights = torch.softmax((x @ _weights(x.shape[-1], 2)) @ query, dim=0)  # (T,)
    return weights @ x


def broadcast_mean(x: torch.Tensor) -> torch.Tensor:
    """The mean token, repeated at every position: invariant (the output does not change). (T, d) -> (T, d)."""
    return x.mean(dim=0, keepdim=True).expand_as(x).clone()


def causal_attention(x: torch.Tensor) -> torch.Tensor:
    """Attention with a causal mask: neither. (T, d) -> (T, d)."""
    t = x.shape[0]
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    return _attend(x, _scores(x).masked_fill(~mask, float("-inf")))


def absolute_bias(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Attention on x plus a learned vector per position (scaled): neither. (T, d) -> (T, d)."""
    positions = scale * torch.randn(x.shape[0], x.shape[1], generator=torch.Generator().manual_seed(7),
                                    dtype=torch.float64)
    return plain_attention(x + positions)


def symmetric_relative_bias(x: torch.Tensor) -> torch.Tensor:
    """Attention with a score bias -|i - j| (ALiBi-like, symmetric): neither, yet it commutes with
    reversing the sequence. (T, d) -> (T, d)."""
    t = torch.arange(x.shape[0], dtype=torch.float64)
    return _attend(x, _scores(x) - (t[:, None] - t[None, :]).abs())


def position_scaled_scores(x: torch.Tensor) -> torch.Tensor:
    """Attention whose query t has its scores multiplied by 1 + t: neither. (T, d) -> (T, d)."""
    t = torch.arange(x.shape[0], dtype=torch.float64)
    return _attend(x, _scores(x) * (1 + t)[:, None])


def last_token_scaled(x: torch.Tensor) -> torch.Tensor:
    """Attention in which only the last position's scores are doubled: neither, though swapping
    the first two tokens of a long sequence cannot show it. (T, d) -> (T, d)."""
    scale = torch.ones(x.shape[0], dtype=torch.float64)
    scale[-1] = 2.0
    return _attend(x, _scores(x) * scale[:, None])


def _order_parity(x: torch.Tensor) -> float:
    """+1 or -1: the parity of the permutation that sorts the tokens by their coordinate sum. Shuffling
    the tokens by an even permutation keeps it, by an odd one flips it (ties have probability zero)."""
    order = torch.argsort(x.sum(dim=-1), stable=True).tolist()
    inversions = sum(a > b for i, a in enumerate(order) for b in order[i + 1:])
    return 1.0 - 2.0 * (inversions % 2)


def order_parity_attention(x: torch.Tensor) -> torch.Tensor:
    """Attention scaled by 1 + parity / 2: it commutes with every even permutation and with no odd
    one, so half of all permutations (a random one, with probability 1/2) cannot show that it
    depends on the order: neither. (T, d) -> (T, d)."""
    return plain_attention(x) * (1.0 + 0.5 * _order_parity(x))


def order_parity_pooling(x: torch.Tensor) -> torch.Tensor:
    """Mean pooling scaled the same way: unchanged by every even permutation, changed by every odd
    one: neither. (T, d) -> (d,)."""
    return mean_pooling(x) * (1.0 + 0.5 * _order_parity(x))


# -- trusted prerequisites: an earlier exercise, for the exercises that call it -------------------
# A later exercise's tests hand the learner's code this version as a black box in place of the
# learner's own (grader.judge.proxy, TRUSTED_PREREQUISITES of the suite): one mistake costs once.
def scaled_dot_product_attention(q, k, v, mask=None):
    """Trusted ``scaled_dot_product_attention`` (notebook 01's exercise 1.1): softmax(q k^T / sqrt(d_k)) v
    with an optional bool mask (Vaswani et al. 2017, eq. 1); rows with no allowed key are 0."""
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share the last dimension d_k, got {q.shape[-1]} and {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of keys T_k, got {k.shape[-2]} and {v.shape[-2]}")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor (True = may attend), got dtype {mask.dtype}")
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # each row sums to 1 over the keys
    if mask is not None:  # rows with no allowed key are all -inf, softmax gives NaN: make them 0
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v  # (..., T_q, d_v)
