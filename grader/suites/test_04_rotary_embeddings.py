"""Hidden tests and public checks for notebook 04, rotary position embeddings (RoPE) and ALiBi.

Every reference is computed here, in float64, from the papers' formulas written independently of
the solution: RoFormer (Su et al., 2021) eqs. (13)-(15) and (34), GPT-NeoX's rotate_half layout,
the reference code of ALiBi (Press et al., 2021) for the slopes, explicit loops over the diagonals
of a score grid, and flop and byte counts written from their definitions.
"""
import math

import pytest
import torch

from grader.judge import (expect_close, expect_dtype, expect_equal, expect_raises, expect_shape,
                          expect_true)


def _randn(*shape, seed, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


# -- references (float64) -----------------------------------------------------------------------
def _theta(head_dim, base=10000.0, *, exponent=lambda j, d: -2 * j / d):
    j = torch.arange(head_dim // 2, dtype=torch.float64)
    return base ** exponent(j, head_dim)


def _tables(positions, inv_freq, factor=1.0):
    """cos and sin of positions x inv_freq in float64, (..., T, d/2) each."""
    angles = torch.as_tensor(positions).double()[..., None] * torch.as_tensor(inv_freq).double()
    return angles.cos() * factor, angles.sin() * factor


def _rotate(x, cos, sin, interleaved, *, sign=1.0):
    """Reference RoPE in float64: pair (a, b) -> (a cos - b sin, a sin + b cos); sign=-1 rotates backwards."""
    x, cos, sin = x.double(), cos.double(), sign * sin.double()
    half = x.shape[-1] // 2
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    a, b = x[..., :half], x[..., half:]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


def _apply_mistakes(x, cos, sin, interleaved):
    """What plausible wrong versions of apply_rope return on these inputs."""
    x64 = x.double()
    half = x.shape[-1] // 2
    swapped_halves = torch.cat((x64[..., half:], x64[..., :half]), dim=-1)
    cos_full, sin_full = torch.cat((cos, cos), -1).double(), torch.cat((sin, sin), -1).double()
    return {
        "sign of sin flipped (rotating by -m*theta)": _rotate(x, cos, sin, interleaved, sign=-1.0),
        "layout swapped (interleaved pairs (2j, 2j+1) vs half-split pairs (j, j+d/2))":
            _rotate(x, cos, sin, not interleaved),
        "rotate_half without the minus sign: cat(x2, x1) instead of cat(-x2, x1)":
            x64 * cos_full + swapped_halves * sin_full,
        "cos/sin repeated as (c0, c0, c1, c1, ...) while rotating halves":
            x64 * cos.double().repeat_interleave(2, -1)
            + torch.cat((-x64[..., half:], x64[..., :half]), -1) * sin.double().repeat_interleave(2, -1),
        "cos and sin swapped": _rotate(x, sin, cos, interleaved),
    }


def _rotation_matrix(position, head_dim, base=10000.0, interleaved=True, *, sign=1.0,
                     exponent=lambda j, d: -2 * j / d):
    angles = float(position) * _theta(head_dim, base, exponent=exponent)
    cos, sin = angles.cos(), sign * angles.sin()
    half = head_dim // 2
    r = torch.zeros(head_dim, head_dim, dtype=torch.float64)
    for j in range(half):
        a, b = (2 * j, 2 * j + 1) if interleaved else (j, j + half)
        r[a, a], r[a, b], r[b, a], r[b, b] = cos[j], -sin[j], sin[j], cos[j]
    return r


def _matrix_mistakes(position, head_dim, base=10000.0, interleaved=True):
    return {
        "sign of sin flipped (the transpose, a rotation by -m*theta)":
            _rotation_matrix(position, head_dim, base, interleaved, sign=-1.0),
        "layout swapped (interleaved vs half-split pairs)":
            _rotation_matrix(position, head_dim, base, not interleaved),
        "exponent -j/d instead of -2j/d": _rotation_matrix(position, head_dim, base, interleaved,
                                                            exponent=lambda j, d: -j / d),
        "exponent counts pairs from 1: -2(j+1)/d": _rotation_matrix(
            position, head_dim, base, interleaved, exponent=lambda j, d: -2 * (j + 1) / d),
        "position off by one (m+1)": _rotation_matrix(position + 1, head_dim, base, interleaved),
    }


def _reference_slopes(n):
    """ALiBi's get_slopes (Press et al., reference code), written recursively as in the paper."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + _reference_slopes(2 * closest)[0::2][: n - closest]


def _reference_bias(slopes, seq_len, *, fill=-math.inf):
    slopes = torch.tensor(slopes, dtype=torch.float64)
    i = torch.arange(seq_len)[:, None]
    j = torch.arange(seq_len)[None, :]
    bias = slopes[:, None, None] * (j - i).double()
    return bias.masked_fill(j > i, fill)


def _bias_mistakes(slopes, seq_len):
    i = torch.arange(seq_len)[:, None]
    j = torch.arange(seq_len)[None, :]
    s = torch.tensor(slopes, dtype=torch.float64)[:, None, None]
    return {
        "the masked upper triangle holds 0 instead of -inf": _reference_bias(slopes, seq_len, fill=0.0),
        "slope sign flipped: +m(i-j) rewards distant keys":
            (s * (i - j).double()).masked_fill(j > i, -math.inf),
        "transposed: the mask hides the past instead of the future":
            _reference_bias(slopes, seq_len).transpose(-2, -1),
        "no causal mask: -m|i-j| everywhere": -s * (i - j).abs().double(),
        "the slopes of the naive formula 2^(-8(h+1)/n)":
            _reference_bias([2 ** (-8 * (h + 1) / len(slopes)) for h in range(len(slopes))], seq_len),
    }


# -- rope_inv_freq ------------------------------------------------------------------------------
def _inv_freq_mistakes(head_dim, base=10000.0):
    return {
        "exponent -j/d instead of -2j/d": _theta(head_dim, base, exponent=lambda j, d: -j / d),
        "exponent counts pairs from 1: -2(j+1)/d": _theta(head_dim, base,
                                                         exponent=lambda j, d: -2 * (j + 1) / d),
        "positive exponent base^(2j/d) (wavelength-like, not a frequency)":
            _theta(head_dim, base, exponent=lambda j, d: 2 * j / d),
        "one frequency per dimension (length head_dim) instead of one per pair":
            base ** (-torch.arange(head_dim, dtype=torch.float64) / head_dim),
    }


# float32 holds 24 bits: a correctly rounded value is within 6e-8 relative; 1e-6 also accepts a
# float32 pow that is off by a few ulps, as in Hugging Face's own float32 computation.
INV_FREQ_RTOL = 1e-6


@pytest.mark.exercise("rope_inv_freq", points=2, public=True)
def test_inv_freq_head_dim_8(student):
    """For head_dim=8 and base 10000 the frequencies are 1, 0.1, 0.01, 0.001."""
    got = student.rope_inv_freq(8)
    expect_close(got, _theta(8), rtol=INV_FREQ_RTOL, atol=0, what="rope_inv_freq(8)",
                 mistakes=_inv_freq_mistakes(8))


@pytest.mark.exercise("rope_inv_freq", points=1, public=True)
def test_inv_freq_shape_and_dtype(student):
    """head_dim=128 with base 500000 (Llama 3) gives a float32 tensor of shape (64,)."""
    got = student.rope_inv_freq(128, base=500000.0)
    expect_dtype(got, torch.float32, what="rope_inv_freq(128, base=500000)")
    expect_shape(got, (64,), what="rope_inv_freq(128, base=500000)")


@pytest.mark.exercise("rope_inv_freq", points=2)
def test_inv_freq_head_dim_64(student):
    """head_dim=64, base 10000: theta_j = 10000^(-2j/64) for j = 0..31."""
    got = student.rope_inv_freq(64)
    expect_close(got, _theta(64), rtol=INV_FREQ_RTOL, atol=0, what="rope_inv_freq(64)",
                 mistakes=_inv_freq_mistakes(64))


@pytest.mark.exercise("rope_inv_freq", points=1)
def test_inv_freq_llama3_values(student):
    """head_dim=128, base 500000: the values match base^(-2j/d) to float32 precision."""
    got = student.rope_inv_freq(128, base=500000.0)
    expect_close(got, _theta(128, 500000.0), rtol=INV_FREQ_RTOL, atol=0,
                 what="rope_inv_freq(128, base=500000)", mistakes=_inv_freq_mistakes(128, 500000.0))


@pytest.mark.exercise("rope_inv_freq", points=1)
def test_inv_freq_rejects_odd_head_dim(student):
    """An odd head_dim cannot be split into pairs: ValueError."""
    expect_raises(ValueError, student.rope_inv_freq, 7, what="rope_inv_freq(7)")


# -- rope_rotation_matrix -----------------------------------------------------------------------
# Entries are cos/sin values rounded once to float32 (error <= 6e-8); 1e-6 leaves room for a
# different correct order of operations.
MATRIX_ATOL = 1e-6


@pytest.mark.exercise("rope_rotation_matrix", points=2, public=True)
def test_rotation_matrix_interleaved(student):
    """Position 3, head_dim 8, interleaved: 2x2 blocks [[cos, -sin], [sin, cos]] on the diagonal."""
    got = student.rope_rotation_matrix(3, 8)
    expect_shape(got, (8, 8), what="rope_rotation_matrix(3, 8)")
    expect_close(got, _rotation_matrix(3, 8), atol=MATRIX_ATOL, rtol=0, what="R_3",
                 mistakes=_matrix_mistakes(3, 8))


@pytest.mark.exercise("rope_rotation_matrix", points=2)
def test_rotation_matrix_half_split(student):
    """Position 5, head_dim 16, interleaved=False: pair j is the dimensions (j, j + 8)."""
    got = student.rope_rotation_matrix(5, 16, interleaved=False)
    expect_close(got, _rotation_matrix(5, 16, interleaved=False), atol=MATRIX_ATOL, rtol=0,
                 what="R_5 (half-split)", mistakes=_matrix_mistakes(5, 16, interleaved=False))


@pytest.mark.exercise("rope_rotation_matrix", points=1)
def test_rotation_matrix_large_position_and_base(student):
    """Position 1000, head_dim 64, base 500000 (interleaved) matches the float64 rotation."""
    got = student.rope_rotation_matrix(1000, 64, base=500000.0)
    # Angles up to 1000 rad: computed in float32 they would be off by up to ~3e-5; the contract
    # asks for float64 angles, but 2e-4 does not punish that finer point here.
    expect_close(got, _rotation_matrix(1000, 64, 500000.0), atol=2e-4, rtol=0, what="R_1000",
                 mistakes=_matrix_mistakes(1000, 64, 500000.0))


@pytest.mark.exercise("rope_rotation_matrix", points=1)
def test_rotation_matrix_zero_is_identity_float32(student):
    """R_0 is exactly the identity, as a float32 (head_dim, head_dim) tensor, in both layouts."""
    for interleaved in (True, False):
        got = student.rope_rotation_matrix(0, 12, interleaved=interleaved)
        expect_dtype(got, torch.float32, what="rope_rotation_matrix(0, 12)")
        expect_close(got, torch.eye(12), atol=0, rtol=0, what=f"R_0 (interleaved={interleaved})")


@pytest.mark.exercise("rope_rotation_matrix", points=1)
def test_rotation_matrix_relative_and_inverse(student):
    """R_4^T R_11 equals R_7 and R_7^T equals R_-7 (head_dim 32, half-split)."""
    r4, r7, r11, r_7 = (student.rope_rotation_matrix(m, 32, interleaved=False).double()
                        for m in (4, 7, 11, -7))
    # Products of float32-rounded rotations: errors ~1e-7 per entry times 32 terms.
    expect_close(r4.T @ r11, _rotation_matrix(7, 32, interleaved=False), atol=1e-5, rtol=0,
                 what="R_4^T R_11")
    expect_close(r7.T, r_7, atol=1e-6, rtol=0, what="R_7^T vs R_-7")


@pytest.mark.exercise("rope_rotation_matrix", points=1)
def test_rotation_matrix_rejects_odd_head_dim(student):
    """An odd head_dim is rejected with a ValueError."""
    expect_raises(ValueError, student.rope_rotation_matrix, 2, 9, what="rope_rotation_matrix(2, 9)")


# -- rope_cos_sin -------------------------------------------------------------------------------
def _cos_sin_mistakes(positions, inv_freq, factor=1.0):
    cos, sin = _tables(positions, inv_freq, factor)
    plain_cos, plain_sin = _tables(positions, inv_freq)
    off_cos, off_sin = _tables(torch.as_tensor(positions) + 1, inv_freq, factor)
    scaled_cos, scaled_sin = _tables(torch.as_tensor(positions) * factor, inv_freq)
    return {
        "cos": {
            "cos and sin swapped": sin,
            "positions off by one (m+1)": off_cos,
            "full-width tables cat(freqs, freqs) instead of half-width (..., T, head_dim // 2)":
                torch.cat((cos, cos), -1),
            "attention_factor ignored": plain_cos,
            "attention_factor multiplies the angles instead of the tables": scaled_cos,
        },
        "sin": {
            "cos and sin swapped": cos,
            "sign of sin flipped": -sin,
            "positions off by one (m+1)": off_sin,
            "full-width tables cat(freqs, freqs) instead of half-width (..., T, head_dim // 2)":
                torch.cat((sin, sin), -1),
            "attention_factor applied to cos only": plain_sin,
            "attention_factor multiplies the angles instead of the tables": scaled_sin,
        },
    }


def _expect_tables(got, positions, inv_freq, factor=1.0, *, atol, what="rope_cos_sin"):
    expect_true(isinstance(got, (tuple, list)) and len(got) == 2,
                f"{what} should return a pair (cos, sin), got {type(got).__name__}")
    cos, sin = _tables(positions, inv_freq, factor)
    mistakes = _cos_sin_mistakes(positions, inv_freq, factor)
    expect_close(got[0], cos, atol=atol, rtol=0, what=f"cos from {what}", mistakes=mistakes["cos"])
    expect_close(got[1], sin, atol=atol, rtol=0, what=f"sin from {what}", mistakes=mistakes["sin"])


@pytest.mark.exercise("rope_cos_sin", points=2, public=True)
def test_cos_sin_small(student):
    """Positions 0..5 with head_dim 8: cos and sin of m*theta_j, each of shape (6, 4)."""
    positions, inv_freq = torch.arange(6), _theta(8).float()
    got = student.rope_cos_sin(positions, inv_freq)
    # Angles below 6 rad: float32 rounding of m*theta and of cos/sin stays below 1e-6.
    _expect_tables(got, positions, inv_freq, atol=1e-6)


@pytest.mark.exercise("rope_cos_sin", points=2)
def test_cos_sin_batched_positions(student):
    """position_ids of shape (2, 5) (two shifted sequences) give tables of shape (2, 5, 8)."""
    positions = torch.stack((torch.arange(5), torch.arange(17, 22)))
    inv_freq = _theta(16).float()
    got = student.rope_cos_sin(positions, inv_freq)
    # Angles below 22 rad: float32 angle rounding is below 1e-6; 2e-6 adds the cos/sin rounding.
    _expect_tables(got, positions, inv_freq, atol=2e-6)


@pytest.mark.exercise("rope_cos_sin", points=1)
def test_cos_sin_attention_factor(student):
    """attention_factor=0.5 multiplies both tables (not the angles)."""
    positions, inv_freq = torch.arange(7), _theta(12).float()
    got = student.rope_cos_sin(positions, inv_freq, attention_factor=0.5)
    _expect_tables(got, positions, inv_freq, 0.5, atol=1e-6)


@pytest.mark.exercise("rope_cos_sin", points=1)
def test_cos_sin_float32_and_large_positions(student):
    """Positions up to 4095 with float64 inv_freq: float32 tables that match to float32 angle rounding."""
    positions, inv_freq = torch.arange(0, 4096, 7), _theta(32)
    got = student.rope_cos_sin(positions, inv_freq)
    expect_true(isinstance(got, (tuple, list)) and len(got) == 2, "rope_cos_sin should return (cos, sin)")
    expect_dtype(got[0], torch.float32, what="cos")
    expect_dtype(got[1], torch.float32, what="sin")
    # Angles reach 4095 rad; a float32 angle of that size is rounded by up to 2.4e-4 (half an ulp).
    _expect_tables(got, positions, inv_freq, atol=3e-4)


@pytest.mark.exercise("rope_cos_sin", points=1)
def test_cos_sin_rejects_scalar_positions(student):
    """A 0-d position_ids has no token axis: ValueError."""
    expect_raises(ValueError, student.rope_cos_sin, torch.tensor(3), _theta(8).float(),
                  what="rope_cos_sin(torch.tensor(3), inv_freq)")


# -- apply_rope ---------------------------------------------------------------------------------
# Inputs are O(1) and the tables are given, so a float32 rotation is within ~2e-7 of the float64
# reference; 1e-6 allows any correct order of operations.
ROPE_ATOL = 1e-6


def _inputs(shape, positions, seed):
    x = _randn(*shape, seed=seed)
    cos, sin = _tables(positions, _theta(shape[-1]))
    return x, cos.float(), sin.float()


@pytest.mark.exercise("apply_rope", points=2, public=True)
def test_apply_rope_half_split(student):
    """Half-split layout (default) on x of shape (2, 3, 5, 8): matches x*cos + rotate_half(x)*sin."""
    x, cos, sin = _inputs((2, 3, 5, 8), torch.arange(5), seed=40)
    got = student.apply_rope(x, cos, sin)
    expect_shape(got, x.shape, what="apply_rope(x, cos, sin)")
    expect_close(got, _rotate(x, cos, sin, False), atol=ROPE_ATOL, rtol=0, what="apply_rope",
                 mistakes=_apply_mistakes(x, cos, sin, False))


@pytest.mark.exercise("apply_rope", points=2, public=True)
def test_apply_rope_interleaved(student):
    """Interleaved layout on x of shape (4, 6, 8): pairs (2j, 2j+1) are rotated."""
    x, cos, sin = _inputs((4, 6, 8), torch.arange(6), seed=41)
    got = student.apply_rope(x, cos, sin, interleaved=True)
    expect_close(got, _rotate(x, cos, sin, True), atol=ROPE_ATOL, rtol=0,
                 what="apply_rope(..., interleaved=True)", mistakes=_apply_mistakes(x, cos, sin, True))


@pytest.mark.exercise("apply_rope", points=2)
def test_apply_rope_shifted_positions_head_dim_64(student):
    """Positions 100..131, head_dim 64, half-split, x of shape (1, 2, 32, 64)."""
    x, cos, sin = _inputs((1, 2, 32, 64), torch.arange(100, 132), seed=42)
    got = student.apply_rope(x, cos, sin)
    expect_close(got, _rotate(x, cos, sin, False), atol=ROPE_ATOL, rtol=0, what="apply_rope",
                 mistakes=_apply_mistakes(x, cos, sin, False))


@pytest.mark.exercise("apply_rope", points=1)
def test_apply_rope_broadcasts_batch_tables_over_heads(student):
    """Tables of shape (B, T, d/2) are broadcast over the heads of x (B, H, T, d)."""
    x = _randn(2, 3, 4, 8, seed=43)
    positions = torch.stack((torch.arange(4), torch.arange(10, 14)))  # (B, T): two offsets
    cos, sin = (t.float() for t in _tables(positions, _theta(8)))      # (B, T, d/2)
    got = student.apply_rope(x, cos, sin)
    expected = _rotate(x, cos[:, None], sin[:, None], False)
    expect_close(got, expected, atol=ROPE_ATOL, rtol=0, what="apply_rope with (B, T, d/2) tables",
                 mistakes=_apply_mistakes(x, cos[:, None], sin[:, None], False))


@pytest.mark.exercise("apply_rope", points=1)
def test_apply_rope_bfloat16_in_float32(student):
    """bfloat16 x gives bfloat16 output, computed in float32: correctly rounded to bfloat16."""
    x, cos, sin = _inputs((2, 16, 32), torch.arange(1000, 1016), seed=44)
    x = x.bfloat16()
    got = student.apply_rope(x, cos, sin, interleaved=True)
    expect_dtype(got, torch.bfloat16, what="apply_rope(bfloat16 x)")
    reference = _rotate(x.double(), cos, sin, True)
    # float32 arithmetic then one rounding to bfloat16 (8 significant bits): relative error <= 2^-8;
    # arithmetic in bfloat16 rounds each product and the sum, and exceeds that bound.
    a, b = x[..., 0::2], x[..., 1::2]
    c, s = cos.bfloat16(), sin.bfloat16()
    in_bf16 = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    expect_close(got, reference, rtol=2 ** -8 * 1.001, atol=1e-6, what="apply_rope(bfloat16 x)",
                 mistakes={"arithmetic done in bfloat16 instead of float32": in_bf16})


@pytest.mark.exercise("apply_rope", points=1)
def test_apply_rope_position_zero_and_norms(student):
    """At position 0 RoPE is the identity, and at every position it preserves norms (float64 x)."""
    x = _randn(3, 9, 16, seed=45, dtype=torch.float64)
    cos, sin = _tables(torch.arange(9), _theta(16))
    got = student.apply_rope(x, cos, sin)
    expect_dtype(got, torch.float64, what="apply_rope(float64 x)")
    # float64 in, float64 tables: the norms agree to ~1e-15; 1e-6 also accepts float32 arithmetic.
    expect_close(got.norm(dim=-1), x.norm(dim=-1), atol=1e-6, rtol=1e-6, what="norms of RoPE(x)")
    expect_close(got[:, 0], x[:, 0], atol=1e-6, rtol=0, what="RoPE(x) at position 0")


@pytest.mark.exercise("apply_rope", points=1)
def test_apply_rope_rejects_full_width_tables(student):
    """Full-width (T, head_dim) tables are rejected with a ValueError (the contract is half-width)."""
    x, cos, sin = _inputs((2, 5, 8), torch.arange(5), seed=46)
    expect_raises(ValueError, student.apply_rope, x, torch.cat((cos, cos), -1), torch.cat((sin, sin), -1),
                  what="apply_rope with (T, head_dim) tables")


@pytest.mark.exercise("apply_rope", points=1)
def test_apply_rope_rejects_odd_head_dim(student):
    """x with an odd head_dim is rejected with a ValueError."""
    x = _randn(4, 7, seed=47)
    cos, sin = torch.ones(4, 3), torch.zeros(4, 3)
    expect_raises(ValueError, student.apply_rope, x, cos, sin, what="apply_rope(x of head_dim 7)")


# -- layout_permutation -------------------------------------------------------------------------
def _perm(head_dim):
    return torch.tensor([2 * j for j in range(head_dim // 2)] + [2 * j + 1 for j in range(head_dim // 2)])


def _perm_mistakes(head_dim):
    perm = _perm(head_dim)
    return {
        "the inverse permutation (argsort): x[..., perm] must put dimension 2j at position j":
            torch.argsort(perm),
        "the identity (layouts treated as equal)": torch.arange(head_dim),
        "odd dimensions first": torch.cat((perm[head_dim // 2:], perm[: head_dim // 2])),
    }


@pytest.mark.exercise("layout_permutation", points=2, public=True)
def test_layout_permutation_head_dim_8(student):
    """For head_dim 8 the permutation is [0, 2, 4, 6, 1, 3, 5, 7]."""
    got = student.layout_permutation(8)
    expect_equal(got, _perm(8), what="layout_permutation(8)", mistakes=_perm_mistakes(8))


@pytest.mark.exercise("layout_permutation", points=2)
def test_layout_permutation_converts_layouts(student):
    """half-split RoPE of x[..., perm] equals interleaved RoPE of x, permuted (head_dim 16 and 64)."""
    for head_dim, seed in ((16, 50), (64, 51)):
        perm = student.layout_permutation(head_dim)
        expect_shape(perm, (head_dim,), what=f"layout_permutation({head_dim})")
        perm = torch.as_tensor(perm).long()
        expect_true(torch.equal(perm.sort().values, torch.arange(head_dim)),
                    f"layout_permutation({head_dim}) is not a permutation of 0..{head_dim - 1}")
        x, cos, sin = _inputs((3, 10, head_dim), torch.arange(10), seed=seed)
        lhs = _rotate(x[..., perm], cos, sin, False)
        rhs = _rotate(x, cos, sin, True)[..., perm]
        # Both sides are the same float64 operations on the same numbers: they agree to ~1e-16.
        expect_close(lhs, rhs, atol=1e-12, rtol=0,
                     what=f"half-split(x[..., perm]) vs interleaved(x)[..., perm], head_dim={head_dim}")


@pytest.mark.exercise("layout_permutation", points=1)
def test_layout_permutation_int64_head_dim_128(student):
    """head_dim 128 gives an int64 tensor equal to [0, 2, ..., 126, 1, 3, ..., 127]."""
    got = student.layout_permutation(128)
    expect_dtype(got, torch.int64, what="layout_permutation(128)")
    expect_equal(got, _perm(128), what="layout_permutation(128)", mistakes=_perm_mistakes(128))


@pytest.mark.exercise("layout_permutation", points=1)
def test_layout_permutation_rejects_odd(student):
    """An odd head_dim has no pairs: ValueError."""
    expect_raises(ValueError, student.layout_permutation, 5, what="layout_permutation(5)")


# -- alibi_slopes -------------------------------------------------------------------------------
def _slope_mistakes(n):
    return {
        "the naive formula 2^(-8(h+1)/n) for a head count that is not a power of two":
            [2 ** (-8 * (h + 1) / n) for h in range(n)],
        "slopes start at 2^0: 2^(-8h/n) instead of 2^(-8(h+1)/n)": [2 ** (-8 * h / n) for h in range(n)],
        "slopes in reverse order": _reference_slopes(n)[::-1],
    }


# Slopes are powers of two (or of 2^(1/2)): float32 holds them to 6e-8 relative.
SLOPE_RTOL = 1e-6


@pytest.mark.exercise("alibi_slopes", points=2, public=True)
def test_alibi_slopes_8_heads(student):
    """8 heads: 1/2, 1/4, ..., 1/256."""
    got = student.alibi_slopes(8)
    expect_close(got, [2.0 ** -(h + 1) for h in range(8)], rtol=SLOPE_RTOL, atol=0,
                 what="alibi_slopes(8)", mistakes=_slope_mistakes(8))


@pytest.mark.exercise("alibi_slopes", points=2)
def test_alibi_slopes_12_heads(student):
    """12 heads (not a power of two): the 8-head slopes, then every other slope of 16 heads."""
    got = student.alibi_slopes(12)
    expect_close(got, _reference_slopes(12), rtol=SLOPE_RTOL, atol=0, what="alibi_slopes(12)",
                 mistakes=_slope_mistakes(12))


@pytest.mark.exercise("alibi_slopes", points=1)
def test_alibi_slopes_other_counts(student):
    """1, 2, 6 and 20 heads follow the reference code; the result is float32."""
    for n in (1, 2, 6, 20):
        got = student.alibi_slopes(n)
        expect_dtype(got, torch.float32, what=f"alibi_slopes({n})")
        expect_close(got, _reference_slopes(n), rtol=SLOPE_RTOL, atol=0, what=f"alibi_slopes({n})",
                     mistakes=_slope_mistakes(n))


@pytest.mark.exercise("alibi_slopes", points=1)
def test_alibi_slopes_rejects_zero_heads(student):
    """num_heads=0 is rejected with a ValueError."""
    expect_raises(ValueError, student.alibi_slopes, 0, what="alibi_slopes(0)")


# -- alibi_bias ---------------------------------------------------------------------------------
# Bias entries are slope * integer distance, one float32 rounding: 1e-6 relative is ample.
BIAS_RTOL = 1e-6


@pytest.mark.exercise("alibi_bias", points=2, public=True)
def test_alibi_bias_two_heads(student):
    """2 heads, 4 tokens: bias[h, i, j] = -m_h (i - j) below the diagonal, -inf above it."""
    got = student.alibi_bias(2, 4)
    slopes = _reference_slopes(2)
    expect_shape(got, (2, 4, 4), what="alibi_bias(2, 4)")
    expect_close(got, _reference_bias(slopes, 4), rtol=BIAS_RTOL, atol=0, what="alibi_bias(2, 4)",
                 mistakes=_bias_mistakes(slopes, 4))


@pytest.mark.exercise("alibi_bias", points=2)
def test_alibi_bias_eight_heads(student):
    """8 heads, 16 tokens: float32 values equal to the reference."""
    got = student.alibi_bias(8, 16)
    slopes = _reference_slopes(8)
    expect_dtype(got, torch.float32, what="alibi_bias(8, 16)")
    expect_close(got, _reference_bias(slopes, 16), rtol=BIAS_RTOL, atol=0, what="alibi_bias(8, 16)",
                 mistakes=_bias_mistakes(slopes, 16))


@pytest.mark.exercise("alibi_bias", points=1)
def test_alibi_bias_mask_is_minus_inf_and_diagonal_zero(student):
    """Every entry above the diagonal is exactly -inf, and the diagonal is exactly 0."""
    got = torch.as_tensor(student.alibi_bias(4, 9)).double()
    upper = torch.ones(9, 9, dtype=torch.bool).triu(1).expand(4, 9, 9)
    expect_true(bool(torch.isneginf(got[upper]).all()),
                "entries above the diagonal (future keys) must be -inf, so the softmax gives them weight 0")
    expect_true(bool(torch.isfinite(got[~upper]).all()),
                "entries on and below the diagonal must be finite")
    expect_close(got.diagonal(dim1=-2, dim2=-1), torch.zeros(4, 9), atol=0, rtol=0,
                 what="the diagonal (distance 0)")


@pytest.mark.exercise("alibi_bias", points=1)
def test_alibi_bias_twelve_heads(student):
    """12 heads, 5 tokens: uses the paper's slopes for a head count that is not a power of two."""
    got = student.alibi_bias(12, 5)
    slopes = _reference_slopes(12)
    expect_close(got, _reference_bias(slopes, 5), rtol=BIAS_RTOL, atol=0, what="alibi_bias(12, 5)",
                 mistakes=_bias_mistakes(slopes, 5))


@pytest.mark.exercise("alibi_bias", points=1)
def test_alibi_bias_rejects_empty_sequence(student):
    """seq_len=0 is rejected with a ValueError."""
    expect_raises(ValueError, student.alibi_bias, 4, 0, what="alibi_bias(4, 0)")


# -- diagonal_spread ----------------------------------------------------------------------------
def _spread(grid, *, anti=False, offsets="all", statistic="range", reduce="max"):
    """Reference: loop over m - n = c explicitly, with switches that reproduce catalogued mistakes."""
    grid = torch.as_tensor(grid).double()
    if anti:
        grid = grid.flip(-1)
    rows, cols = grid.shape
    if offsets == "all":
        cs = range(-(cols - 1), rows)
    elif offsets == "non-negative":
        cs = range(0, rows)
    else:  # the offsets a square rows x rows grid would have
        cs = range(-(rows - 1), rows)
    spreads = []
    for c in cs:
        values = torch.stack([grid[m, m - c] for m in range(rows) if 0 <= m - c < cols]) \
            if any(0 <= m - c < cols for m in range(rows)) else torch.zeros(1, dtype=torch.float64)
        spreads.append(values.max() - values.min() if statistic == "range" else values.std(correction=0))
    spreads = torch.stack(spreads)
    return (spreads.max() if reduce == "max" else spreads.mean()).item()


def _spread_mistakes(grid):
    grid = torch.as_tensor(grid).double()
    mistakes = {
        "anti-diagonals (m + n = const) instead of diagonals (m - n = const)": _spread(grid, anti=True),
        "only the diagonals with m - n >= 0": _spread(grid, offsets="non-negative"),
        "standard deviation along a diagonal instead of max - min": _spread(grid, statistic="std"),
        "mean of the spreads instead of the largest": _spread(grid, reduce="mean"),
        "max - min of the whole grid": (grid.max() - grid.min()).item(),
    }
    if grid.shape[0] != grid.shape[1]:
        mistakes["only the offsets of a square grid (range(-(T_q - 1), T_q))"] = _spread(grid, offsets="square")
    return mistakes


def _relative_grid(rows, cols, seed):
    """A grid that depends on m - n only (a random function of the offset)."""
    values = _randn(rows + cols, seed=seed, dtype=torch.float64)
    m, n = torch.arange(rows)[:, None], torch.arange(cols)[None, :]
    return values[m - n + cols - 1]


@pytest.mark.exercise("diagonal_spread", points=2, public=True)
def test_diagonal_spread_random_grid(student):
    """A random 5 x 5 grid: the largest max - min along the diagonals m - n = c."""
    grid = _randn(5, 5, seed=300, dtype=torch.float64)
    got = student.diagonal_spread(grid)
    expect_close(got, _spread(grid), atol=1e-12, rtol=0, what="diagonal_spread", mistakes=_spread_mistakes(grid))


@pytest.mark.exercise("diagonal_spread", points=2)
def test_diagonal_spread_finds_one_bad_diagonal(student):
    """A grid that depends on m - n only, except one entry above the main diagonal: the spread is that bump."""
    grid = _relative_grid(6, 6, seed=301)
    grid[1, 4] += 2.5                          # the diagonal m - n = -3
    got = student.diagonal_spread(grid)
    expect_close(got, 2.5, atol=1e-12, rtol=0, what="diagonal_spread", mistakes=_spread_mistakes(grid))
    expect_close(student.diagonal_spread(_relative_grid(6, 6, seed=301)), 0.0, atol=1e-12, rtol=0,
                 what="diagonal_spread of a grid that depends on m - n only")


@pytest.mark.exercise("diagonal_spread", points=2)
def test_diagonal_spread_non_square(student):
    """Grids of 3 x 7 and 7 x 3 (queries x keys): every diagonal counts, including those only wide grids have."""
    wide = _relative_grid(3, 7, seed=302)
    wide[0, 5] += 1.5       # m - n = -5: a diagonal that a 3 x 3 grid does not have; spread 1.5
    wide[1, 2] += 0.5       # m - n = -1: spread 0.5
    tall = _relative_grid(7, 3, seed=303)
    tall[6, 1] -= 1.0       # m - n = 5: a diagonal that a 3 x 3 grid does not have; spread 1.0
    for grid in (wide, tall):
        rows, cols = grid.shape
        got = student.diagonal_spread(grid)
        expect_close(got, _spread(grid), atol=1e-12, rtol=0, what=f"diagonal_spread of a {rows} x {cols} grid",
                     mistakes=_spread_mistakes(grid))


@pytest.mark.exercise("diagonal_spread", points=1)
def test_diagonal_spread_float32_and_type(student):
    """A float32 grid gives a Python float."""
    grid = _randn(4, 4, seed=304)
    got = student.diagonal_spread(grid)
    expect_true(isinstance(got, float), f"diagonal_spread should return a Python float, not {type(got).__name__}")
    # float32 entries are exact; their differences in float32 or float64 agree to ~1e-7.
    expect_close(got, _spread(grid), atol=1e-6, rtol=0, what="diagonal_spread", mistakes=_spread_mistakes(grid))


@pytest.mark.exercise("diagonal_spread", points=1)
def test_diagonal_spread_rejects_non_grids(student):
    """A 1-D or 3-D tensor, or an integer grid, is rejected with a ValueError."""
    expect_raises(ValueError, student.diagonal_spread, _randn(5, seed=305), what="diagonal_spread of a 1-D tensor")
    expect_raises(ValueError, student.diagonal_spread, _randn(2, 3, 3, seed=306),
                  what="diagonal_spread of a (2, 3, 3) tensor")
    expect_raises(ValueError, student.diagonal_spread, torch.arange(9).reshape(3, 3),
                  what="diagonal_spread of an int64 grid")


# -- rope_cost ----------------------------------------------------------------------------------
def _cost(b, h, t, d, method, nbytes=4, *, fma_as_one=False, matrices_per_head=False, no_output=False,
          full_tables=False, elements=False, multiplies_only=False):
    """Reference counts, written from the definitions, with switches for catalogued mistakes."""
    n = b * h * t * d
    if method == "matrix":
        flops = (1 if fma_as_one else 2) * n * d
        stored = (b * h if matrices_per_head else 1) * t * d * d
    else:
        flops = (2 if multiplies_only else 3) * n
        stored = (2 if full_tables else 1) * t * d
    moved = (stored + (1 if no_output else 2) * n) * (1 if elements else nbytes)
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}


def _cost_mistakes(b, h, t, d, method, nbytes, key):
    variants = {
        "a multiply-add counted as one flop": dict(fma_as_one=True),
        "the matrices counted once per batch and head (they are shared)": dict(matrices_per_head=True),
        "the output write is missing": dict(no_output=True),
        "full-width cos and sin tables (T, d) instead of (T, d/2)": dict(full_tables=True),
        "elements counted instead of bytes (bytes_per_element ignored)": dict(elements=True),
        "only the 4 multiplies per pair counted, not the 2 adds": dict(multiplies_only=True),
    }
    right = _cost(b, h, t, d, method, nbytes)[key]
    out = {}
    for name, switches in variants.items():
        wrong = _cost(b, h, t, d, method, nbytes, **switches)[key]
        if wrong != right:
            out[name] = wrong
    if key == "intensity":
        out["bytes per flop instead of flops per byte"] = 1 / right
    return out


def _expect_cost(student, b, h, t, d, method, nbytes):
    got = student.rope_cost(b, h, t, d, method, nbytes)
    expect_true(isinstance(got, dict) and {"flops", "bytes", "intensity"} <= set(got),
                f"rope_cost should return a dict with keys 'flops', 'bytes', 'intensity', got {got!r:.200}")
    want = _cost(b, h, t, d, method, nbytes)
    where = f"rope_cost({b}, {h}, {t}, {d}, {method!r}, {nbytes})"
    for key in ("flops", "bytes"):
        # Counts are integers: exact.
        expect_close(got[key], want[key], atol=0, rtol=0, what=f"{where}[{key!r}]",
                     mistakes=_cost_mistakes(b, h, t, d, method, nbytes, key))
    expect_close(got["intensity"], want["intensity"], atol=0, rtol=1e-12, what=f"{where}['intensity']",
                 mistakes=_cost_mistakes(b, h, t, d, method, nbytes, "intensity"))


@pytest.mark.exercise("rope_cost", points=2, public=True)
def test_rope_cost_small(student):
    """(B, H, T, d) = (2, 3, 5, 8) in float32, both methods: flops 2BHTd^2 / 3BHTd, bytes of one pass."""
    for method in ("matrix", "elementwise"):
        _expect_cost(student, 2, 3, 5, 8, method, 4)


@pytest.mark.exercise("rope_cost", points=2)
def test_rope_cost_bf16_llama_layer(student):
    """(1, 32, 8192, 128) in bf16 (2 bytes per number), both methods."""
    for method in ("matrix", "elementwise"):
        _expect_cost(student, 1, 32, 8192, 128, method, 2)


@pytest.mark.exercise("rope_cost", points=1)
def test_rope_cost_default_is_float32(student):
    """Without bytes_per_element, a number takes 4 bytes."""
    got = student.rope_cost(3, 2, 7, 6, "elementwise")
    want = _cost(3, 2, 7, 6, "elementwise", 4)
    expect_close(got["bytes"], want["bytes"], atol=0, rtol=0, what="rope_cost(3, 2, 7, 6, 'elementwise')['bytes']",
                 mistakes=_cost_mistakes(3, 2, 7, 6, "elementwise", 4, "bytes"))


@pytest.mark.exercise("rope_cost", points=1)
def test_rope_cost_returns_integers(student):
    """flops and bytes are Python ints (exact counts), intensity a float."""
    got = student.rope_cost(1, 8, 1024, 128, "matrix")
    expect_true(isinstance(got["flops"], int) and isinstance(got["bytes"], int)
                and not isinstance(got["flops"], bool),
                f"flops and bytes should be Python ints, got {type(got['flops']).__name__} and "
                f"{type(got['bytes']).__name__}")
    expect_true(isinstance(got["intensity"], float), "intensity should be a Python float")


@pytest.mark.exercise("rope_cost", points=1)
def test_rope_cost_rejects_bad_arguments(student):
    """An unknown method, an odd head_dim, or a zero size is rejected with a ValueError."""
    expect_raises(ValueError, student.rope_cost, 1, 1, 4, 8, "complex", what="rope_cost(..., method='complex')")
    expect_raises(ValueError, student.rope_cost, 1, 1, 4, 7, "elementwise", what="rope_cost with head_dim 7")
    expect_raises(ValueError, student.rope_cost, 0, 1, 4, 8, "matrix", what="rope_cost with batch 0")
