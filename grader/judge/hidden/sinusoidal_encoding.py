"""Trusted versions of notebook 02's exercises that later exercises call (trusted prerequisites).

Trusted-side only (see :class:`grader.sandbox.codec.BlackBox`): they are answers of implement exercises.
"""
import torch


# -- trusted prerequisites: an earlier exercise, for the exercises that call it -------------------
# A later exercise's tests hand the learner's code this version as a black box in place of the
# learner's own (grader.judge.proxy, TRUSTED_PREREQUISITES of the suite): one mistake costs once.
def sinusoidal_encoding(num_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """Trusted ``sinusoidal_encoding`` (notebook 02): (P, d_model) float32, sin in even columns and
    cos in odd ones (Vaswani et al. 2017, section 3.5)."""
    if num_positions <= 0 or d_model <= 0:
        raise ValueError(f"num_positions and d_model must be positive, got {num_positions} and {d_model}")
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even (sine/cosine pairs), got {d_model}")
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None]                   # (P, 1)
    inv_freq = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d/2,) omega_i
    angles = pos * inv_freq                                                           # (P, d/2)
    pe = torch.empty(num_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)  # even columns: sine
    pe[:, 1::2] = torch.cos(angles)  # odd columns: cosine of the same frequency
    return pe.float()



def offset_matrix(k: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """Trusted ``offset_matrix`` (notebook 02): the (d_model, d_model) float32 matrix M_k with
    PE[m + k] = PE[m] @ M_k for rows PE (each sin/cos pair rotated by omega_i k)."""
    if d_model <= 0 or d_model % 2 != 0:
        raise ValueError(f"d_model must be a positive even number, got {d_model}")
    inv_freq = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d/2,)
    cos, sin = torch.cos(k * inv_freq), torch.sin(k * inv_freq)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    even = torch.arange(0, d_model, 2)
    m[even, even], m[even, even + 1] = cos, -sin       # row (sin, cos) @ [[cos wk, -sin wk],
    m[even + 1, even], m[even + 1, even + 1] = sin, cos   #                  [sin wk,  cos wk]] = R(wk)
    return m.float()



def relative_attention_projections(k: int, d_model: int, temperature: float = 1.0,
                                   base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Trusted ``relative_attention_projections`` (notebook 02): (W_q, W_k), float32 (d_model, d_model),
    with (PE W_q)(PE W_k)^T peaking at offset k; W_q = M_{-k} / temperature, W_k = I."""
    if d_model <= 0 or d_model % 2 != 0:
        raise ValueError(f"d_model must be a positive even number, got {d_model}")
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    # PE[m - k] = PE[m] @ M_{-k} (rows).
    w_q = offset_matrix(-k, d_model, base).double() / temperature
    w_k = torch.eye(d_model, dtype=torch.float64)
    return w_q.float(), w_k.float()
