"""Hidden sequence functions that notebook 01's tests hand to ``symmetry_of`` as black boxes.

Trusted-side only: they run in the grader, never in the learner's process (see
:class:`grader.codec.BlackBox`), so no name or docstring here reaches a detector.
"""
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
