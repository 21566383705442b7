"""Hidden tests and public checks for notebook 02, sinusoidal positional encodings.

Every reference is computed here in float64 from the formulas of Vaswani et al. (2017, section
3.5), never with the learner's code. The ``_pe`` switches reproduce catalogued mistakes so that
the feedback can name them.
"""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.judge import (expect_close, expect_dtype, expect_equal, expect_raises, expect_shape,
                          expect_true)
from grader.properties import FLOAT_DTYPES, dtypes, grading, laid_out, layouts, seeds, tensor

BASE = 10000.0
BASES = st.sampled_from([10000.0, 2.5, 777.7, 10000.5, 1e6])
"""Bases of the property tests: the paper's, small and large ones, and ones that are not whole numbers."""


def _pe(num_positions, d_model, base=BASE, *, swap=False, half_split=False, exponent="2i/d",
        first_position=0):
    """Reference encoding in float64, with switches that reproduce catalogued mistakes."""
    pos = torch.arange(first_position, first_position + num_positions, dtype=torch.float64)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float64)
    power = {"2i/d": 2 * i / d_model, "i/d": i / d_model,
             "2i/(d-2)": 2 * i / max(d_model - 2, 1)}[exponent]
    angles = pos / base ** power                                  # (P, d/2)
    first, second = torch.sin(angles), torch.cos(angles)
    if swap:
        first, second = second, first
    if half_split:
        return torch.cat([first, second], dim=1)
    return torch.stack([first, second], dim=-1).flatten(1)        # interleaved (P, d)


def _pe_mistakes(num_positions, d_model, base=BASE):
    return {
        "sin and cos swapped (even columns should hold the sine)": _pe(num_positions, d_model, base, swap=True),
        "half-split layout (all sines, then all cosines) instead of interleaved pairs":
            _pe(num_positions, d_model, base, half_split=True),
        "exponent i/d_model instead of 2i/d_model (i counts pairs)":
            _pe(num_positions, d_model, base, exponent="i/d"),
        "exponent 2i/(d_model - 2) instead of 2i/d_model": _pe(num_positions, d_model, base, exponent="2i/(d-2)"),
        "positions starting at 1 instead of 0": _pe(num_positions, d_model, base, first_position=1),
    }


# Values lie in [-1, 1]; a float32 result of a float64 computation is within 6e-8 of the
# reference. 1e-6 also accepts angles computed in float32 at these small positions (error
# ~ pos * 6e-8 < 1e-6 for pos < 16); the large-position test below is the one that is strict.
ATOL = 1e-6


# -- sinusoidal_encoding ------------------------------------------------------------------------
@pytest.mark.exercise("sinusoidal_encoding", points=2, public=True)
def test_encoding_matches_the_formula(student):
    """sinusoidal_encoding(10, 8) matches PE[pos, 2i] = sin(pos / 10000^(2i/8)), PE[pos, 2i+1] = cos(...)."""
    got = student.sinusoidal_encoding(10, 8)
    expect_shape(got, (10, 8), what="sinusoidal_encoding(10, 8)")
    expect_close(got, _pe(10, 8), atol=ATOL, rtol=0, what="sinusoidal_encoding(10, 8)",
                 mistakes=_pe_mistakes(10, 8))


@pytest.mark.exercise("sinusoidal_encoding", points=1, public=True)
def test_encoding_is_float32(student):
    """The table is a float32 tensor."""
    expect_dtype(student.sinusoidal_encoding(4, 6), torch.float32, what="sinusoidal_encoding(4, 6)")


@pytest.mark.exercise("sinusoidal_encoding", points=2)
def test_encoding_wide_table(student):
    """A (16, 64) table matches the formula in every column (interleaved, positions from 0)."""
    got = student.sinusoidal_encoding(16, 64)
    expect_close(got, _pe(16, 64), atol=ATOL, rtol=0, what="sinusoidal_encoding(16, 64)",
                 mistakes=_pe_mistakes(16, 64))


@pytest.mark.exercise("sinusoidal_encoding", points=1)
def test_encoding_position_zero(student):
    """Position 0 is (0, 1, 0, 1, ...): sines of 0 in even columns, cosines in odd ones."""
    got = student.sinusoidal_encoding(1, 12)
    expected = torch.tensor([[0.0, 1.0] * 6])
    expect_close(got, expected, atol=ATOL, rtol=0, what="sinusoidal_encoding(1, 12)",
                 mistakes={"sin and cos swapped (even columns should hold the sine)": torch.tensor([[1.0, 0.0] * 6]),
                           "half-split layout (all sines, then all cosines) instead of interleaved pairs":
                               torch.tensor([[0.0] * 6 + [1.0] * 6]),
                           "positions starting at 1 instead of 0": _pe(1, 12, first_position=1)})


@pytest.mark.exercise("sinusoidal_encoding", points=1)
def test_encoding_honours_base(student):
    """With base=100 and d_model=6, the frequencies are 100^(-2i/6)."""
    got = student.sinusoidal_encoding(12, 6, base=100.0)
    expect_close(got, _pe(12, 6, 100.0), atol=ATOL, rtol=0, what="sinusoidal_encoding(12, 6, base=100)",
                 mistakes={"base ignored (always 10000)": _pe(12, 6), **_pe_mistakes(12, 6, 100.0)})


@pytest.mark.exercise("sinusoidal_encoding", points=1)
def test_encoding_large_positions_are_accurate(student):
    """Positions up to 30000 are accurate to 1e-5: the angles are computed in float64."""
    got = student.sinusoidal_encoding(30000, 8)
    expect_shape(got, (30000, 8), what="sinusoidal_encoding(30000, 8)")
    expected = _pe(30000, 8)
    # Casting float64 values to float32 costs at most 6e-8. Angles computed in float32 are off by
    # up to pos * 2^-24 ~ 2e-3 rad at pos = 30000, far above 1e-5.
    expect_close(got[-64:], expected[-64:], atol=1e-5, rtol=0, what="rows 29936..29999",
                 mistakes={"angles computed in float32 (pos * inv_freq loses precision at large pos)":
                           _float32_angles(30000, 8)[-64:]})


def _float32_angles(num_positions, d_model):
    pos = torch.arange(num_positions, dtype=torch.float32)[:, None]
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(BASE) / d_model))
    angles = (pos * inv_freq).double()
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)


@pytest.mark.exercise("sinusoidal_encoding", points=1)
def test_encoding_rejects_odd_d_model(student):
    """An odd d_model is rejected with a ValueError (sines and cosines come in pairs)."""
    expect_raises(ValueError, student.sinusoidal_encoding, 4, 7, what="sinusoidal_encoding(4, 7)")


@pytest.mark.exercise("sinusoidal_encoding", points=1)
def test_encoding_rejects_non_positive_sizes(student):
    """num_positions = 0, num_positions < 0 and d_model = 0 are rejected with ValueError."""
    expect_raises(ValueError, student.sinusoidal_encoding, 0, 8, what="sinusoidal_encoding(0, 8)")
    expect_raises(ValueError, student.sinusoidal_encoding, -3, 8, what="sinusoidal_encoding(-3, 8)")
    expect_raises(ValueError, student.sinusoidal_encoding, 5, 0, what="sinusoidal_encoding(5, 0)")


@pytest.mark.exercise("sinusoidal_encoding", points=2)
@grading(max_examples=10)
@given(num_positions=st.integers(1, 300), d_model=st.sampled_from([2, 4, 6, 10, 64]), base=BASES)
def test_encoding_over_its_inputs(student, num_positions, d_model, base):
    """Any size (d_model = 2 and one position included) and base (not only whole numbers): float32, to 1e-6."""
    got = student.sinusoidal_encoding(num_positions, d_model, base=base)
    what = f"sinusoidal_encoding({num_positions}, {d_model}, base={base})"
    expect_dtype(got, torch.float32, what=what)
    expect_shape(got, (num_positions, d_model), what=what)
    # The docstring promises float64 angles: casting the float64 values costs at most 6e-8, while
    # float32 angles or frequencies are off by pos * 6e-8 (over 1e-6 from position ~20 on).
    expect_close(got, _pe(num_positions, d_model, base), atol=ATOL, rtol=0, what=what,
                 mistakes={"base ignored (always 10000)": _pe(num_positions, d_model),
                           **_pe_mistakes(num_positions, d_model, base)})


@pytest.mark.exercise("sinusoidal_encoding", points=1)
def test_encoding_rejects_a_negative_even_d_model(student):
    """d_model = -4 (even but not positive) is rejected with a ValueError; d_model = 2 works."""
    expect_raises(ValueError, student.sinusoidal_encoding, 3, -4, what="sinusoidal_encoding(3, -4)")
    expect_close(student.sinusoidal_encoding(3, 2), _pe(3, 2), atol=ATOL, rtol=0, what="sinusoidal_encoding(3, 2)")


@pytest.mark.exercise("sinusoidal_encoding", points=1)
def test_encoding_rejects_a_negative_num_positions(student):
    """num_positions = -1 is rejected with a ValueError; num_positions = 1 works."""
    expect_raises(ValueError, student.sinusoidal_encoding, -1, 4, what="sinusoidal_encoding(-1, 4)")
    expect_close(student.sinusoidal_encoding(1, 4), _pe(1, 4), atol=ATOL, rtol=0, what="sinusoidal_encoding(1, 4)")


# -- binary_encoding ----------------------------------------------------------------------------
def _bits(num_positions, num_bits, *, msb_first=False, first_position=0, modulo=True):
    pos = torch.arange(first_position, first_position + num_positions, dtype=torch.int64)[:, None]
    bits = pos // 2 ** torch.arange(num_bits, dtype=torch.int64)
    if modulo:
        bits = bits % 2
    if msb_first:
        bits = bits.flip(1)
    return bits.double()


def _bit_mistakes(num_positions, num_bits):
    return {
        "most significant bit first (column 0 should be the fastest bit)": _bits(num_positions, num_bits, msb_first=True),
        "positions starting at 1 instead of 0": _bits(num_positions, num_bits, first_position=1),
        "floor(pos / 2^j) without the 'mod 2'": _bits(num_positions, num_bits, modulo=False),
    }


@pytest.mark.exercise("binary_encoding", points=2, public=True)
def test_binary_counts_to_seven(student):
    """binary_encoding(8, 3): row pos is pos in binary, least significant bit first."""
    got = student.binary_encoding(8, 3)
    expect_equal(got, _bits(8, 3), what="binary_encoding(8, 3)", mistakes=_bit_mistakes(8, 3))


@pytest.mark.exercise("binary_encoding", points=1)
def test_binary_is_float32(student):
    """The code is a float32 tensor of 0.0 and 1.0."""
    expect_dtype(student.binary_encoding(5, 4), torch.float32, what="binary_encoding(5, 4)")


@pytest.mark.exercise("binary_encoding", points=2)
def test_binary_wraps_around(student):
    """With 3 bits, position 8 has the code of position 0 (the counter wraps): binary_encoding(20, 3)."""
    got = student.binary_encoding(20, 3)
    expect_equal(got, _bits(20, 3), what="binary_encoding(20, 3)", mistakes=_bit_mistakes(20, 3))


@pytest.mark.exercise("binary_encoding", points=1)
def test_binary_many_bits(student):
    """binary_encoding(1000, 12) matches floor(pos / 2^j) mod 2 everywhere."""
    got = student.binary_encoding(1000, 12)
    expect_equal(got, _bits(1000, 12), what="binary_encoding(1000, 12)", mistakes=_bit_mistakes(1000, 12))


@pytest.mark.exercise("binary_encoding", points=1)
def test_binary_rejects_non_positive_sizes(student):
    """num_positions = 0 and num_bits = 0 are rejected with ValueError."""
    expect_raises(ValueError, student.binary_encoding, 0, 4, what="binary_encoding(0, 4)")
    expect_raises(ValueError, student.binary_encoding, 4, 0, what="binary_encoding(4, 0)")


@pytest.mark.exercise("binary_encoding", points=2)
@grading(max_examples=10)
@given(num_positions=st.integers(1, 300), num_bits=st.sampled_from([1, 2, 3, 5, 8, 13, 40]))
def test_binary_over_its_inputs(student, num_positions, num_bits):
    """Any number of positions and bits (1 included, more bits than needed, fewer so that it wraps): exact, float32."""
    got = student.binary_encoding(num_positions, num_bits)
    what = f"binary_encoding({num_positions}, {num_bits})"
    expect_dtype(got, torch.float32, what=what)
    expect_equal(got, _bits(num_positions, num_bits), what=what, mistakes=_bit_mistakes(num_positions, num_bits))


@pytest.mark.exercise("binary_encoding", points=1)
def test_binary_rejects_a_negative_num_positions(student):
    """num_positions = -2 is rejected with a ValueError; binary_encoding(1, 1) is [[0.]]."""
    expect_raises(ValueError, student.binary_encoding, -2, 3, what="binary_encoding(-2, 3)")
    expect_equal(student.binary_encoding(1, 1), torch.zeros(1, 1), what="binary_encoding(1, 1)")


@pytest.mark.exercise("binary_encoding", points=1)
def test_binary_rejects_a_negative_num_bits(student):
    """num_bits = -1 is rejected with a ValueError; binary_encoding(2, 1) is [[0.], [1.]]."""
    expect_raises(ValueError, student.binary_encoding, 4, -1, what="binary_encoding(4, -1)")
    expect_equal(student.binary_encoding(2, 1), torch.tensor([[0.0], [1.0]]), what="binary_encoding(2, 1)")


# -- offset_matrix ------------------------------------------------------------------------------
def _offset_matrix(k, d_model, base=BASE, *, transpose=False, no_frequency=False, half_split=False,
                   exponent="2i/d"):
    i = torch.arange(d_model // 2, dtype=torch.float64)
    power = {"2i/d": 2 * i / d_model, "i/d": i / d_model}[exponent]
    angle = k * (torch.ones_like(i) if no_frequency else base ** -power)
    cos, sin = torch.cos(angle), torch.sin(angle)
    if transpose:
        sin = -sin
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    a = torch.arange(d_model // 2) if half_split else 2 * torch.arange(d_model // 2)
    b = a + d_model // 2 if half_split else a + 1
    m[a, a], m[a, b], m[b, a], m[b, b] = cos, sin, -sin, cos
    return m


def _offset_mistakes(k, d_model, base=BASE):
    return {
        "blocks transposed ([[cos, -sin], [sin, cos]] moves by -k)": _offset_matrix(k, d_model, base, transpose=True),
        "angle k instead of k * omega_i (frequency missing)": _offset_matrix(k, d_model, base, no_frequency=True),
        "blocks for the half-split layout (pair i at columns i and i + d/2), not interleaved":
            _offset_matrix(k, d_model, base, half_split=True),
        "exponent i/d_model instead of 2i/d_model": _offset_matrix(k, d_model, base, exponent="i/d"),
    }


# Entries are cosines and sines in [-1, 1]; float32 rounding is 6e-8.
ATOL_OFFSET = 1e-6


@pytest.mark.exercise("offset_matrix", points=2, public=True)
def test_offset_matrix_blocks(student):
    """offset_matrix(3, 8) is block diagonal with [[cos 3w_i, sin 3w_i], [-sin 3w_i, cos 3w_i]] blocks."""
    got = student.offset_matrix(3, 8)
    expect_shape(got, (8, 8), what="offset_matrix(3, 8)")
    expect_close(got, _offset_matrix(3, 8), atol=ATOL_OFFSET, rtol=0, what="offset_matrix(3, 8)",
                 mistakes=_offset_mistakes(3, 8))


@pytest.mark.exercise("offset_matrix", points=2, public=True)
def test_offset_matrix_moves_the_encoding(student):
    """offset_matrix(5, 16) @ PE[p] equals PE[p + 5] for p = 0..39."""
    pe = _pe(45, 16)
    m = student.offset_matrix(5, 16)
    expect_shape(m, (16, 16), what="offset_matrix(5, 16)")
    moved = pe[:40] @ torch.as_tensor(m).double().T  # row p: M @ PE[p]
    expect_close(moved, pe[5:], atol=1e-5, rtol=0, what="offset_matrix(5, 16) @ PE[p]",
                 mistakes={"blocks transposed ([[cos, -sin], [sin, cos]] moves by -k)": _pe(45, 16, first_position=-5)[:40]})


@pytest.mark.exercise("offset_matrix", points=2)
def test_offset_matrix_negative_offset(student):
    """offset_matrix(-7, 12) moves PE[p] back to PE[p - 7] (and matches the block formula)."""
    got = student.offset_matrix(-7, 12)
    expect_close(got, _offset_matrix(-7, 12), atol=ATOL_OFFSET, rtol=0, what="offset_matrix(-7, 12)",
                 mistakes=_offset_mistakes(-7, 12))
    pe = _pe(30, 12)
    expect_close(pe[7:] @ torch.as_tensor(got).double().T, pe[:23], atol=1e-5, rtol=0,
                 what="offset_matrix(-7, 12) @ PE[p]")


@pytest.mark.exercise("offset_matrix", points=1)
def test_offset_matrix_zero_is_identity(student):
    """offset_matrix(0, 6) is the identity, as a float32 tensor."""
    got = student.offset_matrix(0, 6)
    expect_dtype(got, torch.float32, what="offset_matrix(0, 6)")
    expect_close(got, torch.eye(6), atol=ATOL_OFFSET, rtol=0, what="offset_matrix(0, 6)")


@pytest.mark.exercise("offset_matrix", points=1)
def test_offset_matrix_honours_base_and_large_offsets(student):
    """offset_matrix(250, 10, base=50) matches the formula with omega_i = 50^(-2i/10)."""
    got = student.offset_matrix(250, 10, base=50.0)
    # Angles up to 250 rad, computed in float64 as the docstring promises: every entry is within
    # float32 rounding (6e-8) of the formula. (float32 angles are off by up to 250 * 6e-8 = 1.5e-5.)
    expect_close(got, _offset_matrix(250, 10, 50.0), atol=ATOL_OFFSET, rtol=0,
                 what="offset_matrix(250, 10, base=50)",
                 mistakes={"base ignored (always 10000)": _offset_matrix(250, 10),
                           **_offset_mistakes(250, 10, 50.0)})


@pytest.mark.exercise("offset_matrix", points=1)
def test_offset_matrix_rejects_odd_d_model(student):
    """An odd d_model is rejected with a ValueError."""
    expect_raises(ValueError, student.offset_matrix, 2, 5, what="offset_matrix(2, 5)")


@pytest.mark.exercise("offset_matrix", points=2)
@grading(max_examples=10)
@given(k=st.one_of(st.integers(-12, 12), st.integers(-40000, 40000)), d_model=st.sampled_from([2, 4, 6, 12, 32]),
       base=BASES)
def test_offset_matrix_over_its_inputs(student, k, d_model, base):
    """Any offset (large and negative ones included), d_model (2 included) and base: float32, to 1e-6."""
    got = student.offset_matrix(k, d_model, base=base)
    what = f"offset_matrix({k}, {d_model}, base={base})"
    expect_dtype(got, torch.float32, what=what)
    expect_shape(got, (d_model, d_model), what=what)
    # The docstring promises float64 angles, so every entry is a float32 rounding (<= 6e-8) of the
    # exact cosine or sine; float32 frequencies are off by |k| * 6e-8 rad (over 1e-6 for |k| > 20).
    expect_close(got, _offset_matrix(k, d_model, base), atol=ATOL_OFFSET, rtol=0, what=what,
                 mistakes={"base ignored (always 10000)": _offset_matrix(k, d_model),
                           **_offset_mistakes(k, d_model, base)})


@pytest.mark.exercise("offset_matrix", points=1)
def test_offset_matrix_rejects_zero_d_model(student):
    """d_model = 0 is rejected with a ValueError; d_model = 2 gives the single 2x2 block."""
    expect_raises(ValueError, student.offset_matrix, 1, 0, what="offset_matrix(1, 0)")
    expect_close(student.offset_matrix(1, 2), _offset_matrix(1, 2), atol=ATOL_OFFSET, rtol=0,
                 what="offset_matrix(1, 2)", mistakes=_offset_mistakes(1, 2))


@pytest.mark.exercise("offset_matrix", points=1)
def test_offset_matrix_rejects_a_negative_d_model(student):
    """d_model = -4 (even but not positive) is rejected with a ValueError."""
    expect_raises(ValueError, student.offset_matrix, 1, -4, what="offset_matrix(1, -4)")


# -- linear_shift_residual ----------------------------------------------------------------------
def _pairs(table, k):
    src = torch.arange(max(0, -k), min(len(table), len(table) - k))
    return table[src].double(), table[src + k].double()


def _residual(x, y):
    """|y - x M^T| for the least-squares M, through the pseudo-inverse (tables here are well conditioned)."""
    return (y - x @ torch.linalg.pinv(x) @ y).norm()


def _shift_residual(table, k):
    x, y = _pairs(table, k)
    return (_residual(x, y) / y.norm()).item()


def _shift_mistakes(table, k):
    x, y = _pairs(table, k)
    rolled_y = torch.roll(table.double(), -k, dims=0)
    other_way = "the map fitted the other way (table[p] from table[p + k])"
    if k < 0:
        other_way += ", which for k < 0 is also what reading k as |k| gives"
    return {
        other_way: (_residual(y, x) / x.norm()).item(),
        "rows wrapped around (torch.roll) instead of dropped at the ends":
            (_residual(table.double(), rolled_y) / rolled_y.norm()).item(),
        "absolute residual, not divided by |table[p + k]|": _residual(x, y).item(),
        "divided by |table[p]| instead of |table[p + k]|": (_residual(x, y) / x.norm()).item(),
        "squared relative residual (fraction of the energy unexplained)": ((_residual(x, y) / y.norm()) ** 2).item(),
    }


def _random_table(seed, rows, cols):
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# Well-conditioned float64 tables: every correct least-squares solver agrees to ~1e-12.
ATOL_SHIFT = 1e-8


@pytest.mark.exercise("linear_shift_residual", points=2, public=True)
def test_shift_residual_of_a_random_table(student):
    """A random (30, 4) table, k = 2: the relative residual of the best linear map."""
    table = _random_table(80, 30, 4)
    got = student.linear_shift_residual(table, 2)
    expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
    expect_close(got, _shift_residual(table, 2), atol=ATOL_SHIFT, rtol=0, what="linear_shift_residual(table, 2)",
                 mistakes=_shift_mistakes(table, 2))


@pytest.mark.exercise("linear_shift_residual", points=2)
def test_shift_residual_negative_offset(student):
    """A random (25, 3) table, k = -4: rows p pair with rows p - 4."""
    table = _random_table(81, 25, 3)
    got = student.linear_shift_residual(table, -4)
    expect_close(got, _shift_residual(table, -4), atol=ATOL_SHIFT, rtol=0,
                 what="linear_shift_residual(table, -4)", mistakes=_shift_mistakes(table, -4))


@pytest.mark.exercise("linear_shift_residual", points=1)
def test_shift_residual_is_zero_for_a_rotating_table(student):
    """Rows E[p] = A^p E[0] for a fixed matrix A: one linear map moves every row, residual 0."""
    a = torch.linalg.qr(_random_table(82, 6, 6)).Q * 0.97
    rows = [_random_table(83, 1, 6)[0]]
    for _ in range(39):
        rows.append(a @ rows[-1])
    table = torch.stack(rows)  # (40, 6)
    got = student.linear_shift_residual(table, 5)
    expect_close(got, 0.0, atol=1e-9, rtol=0, what="linear_shift_residual of E[p] = A^p E[0]")


@pytest.mark.exercise("linear_shift_residual", points=1)
def test_shift_residual_sine_only_code(student):
    """A sine-only code of 6 frequencies over 60 positions, k = 3: a clearly non-zero residual."""
    pos = torch.arange(60, dtype=torch.float64)[:, None]
    table = torch.sin(pos * torch.tensor([1.0, 0.7, 0.45, 0.3, 0.2, 0.13], dtype=torch.float64))
    got = student.linear_shift_residual(table, 3)
    expect_close(got, _shift_residual(table, 3), atol=1e-6, rtol=0, what="linear_shift_residual(sines, 3)",
                 mistakes=_shift_mistakes(table, 3))


@pytest.mark.exercise("linear_shift_residual", points=1)
def test_shift_residual_rejects_too_large_offsets(student):
    """An offset with |k| >= the number of rows leaves no pair: ValueError."""
    expect_raises(ValueError, student.linear_shift_residual, _random_table(84, 5, 2), -5,
                  what="linear_shift_residual(<5 rows>, -5)")


@pytest.mark.exercise("linear_shift_residual", points=2)
@grading(max_examples=10)
@given(rows=st.integers(2, 40), cols=st.integers(1, 6), offset=st.floats(-0.99, 0.99),
       dtype=dtypes("float32", "float64"), layout=layouts("contiguous", "transposed", "strided"), seed=seeds())
def test_shift_residual_over_its_inputs(student, rows, cols, offset, dtype, layout, seed):
    """Any table size (one pair of rows, fewer pairs than columns), offset sign, float32 or float64, layout."""
    k = int(offset * rows)  # |k| <= rows - 1
    table = tensor(seed, rows, cols, dtype=FLOAT_DTYPES[dtype])
    got = student.linear_shift_residual(laid_out(table, layout), k)
    expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
    # The docstring promises a float64 computation whatever the table's dtype: the reference is the
    # float64 residual of the same (rounded) table, and random tables are well conditioned, so every
    # correct solver agrees to ~1e-12 (a float32 solve is off by ~1e-7).
    expect_close(got, _shift_residual(table.double(), k), atol=ATOL_SHIFT, rtol=0,
                 what=f"linear_shift_residual(<{rows} x {cols} table>, {k})",
                 mistakes=_shift_mistakes(table.double(), k))


@pytest.mark.exercise("linear_shift_residual", points=1)
def test_shift_residual_of_a_rank_deficient_sinusoidal_table(student):
    """A (300, 64) sinusoidal table, whose slow columns are nearly collinear, moves by one linear map: residual ~0."""
    got = student.linear_shift_residual(_pe(300, 64), 11)
    # The exact answer is 0 (PE[p + 11] = M_11 PE[p]). Solvers with a cut-off on small singular
    # values give 1e-14 (lstsq's gelsd, gelss) to 4e-10 (SVD at 1e-9) and 2e-6 (pinv's default
    # cut-off); the normal equations happen to stay below 1e-7 here, while lstsq's default CPU
    # driver (gelsy, pivoted QR) gives 0.18 to 0.41 (its result varies with the thread count).
    expect_close(got, 0.0, atol=1e-3, rtol=0, what="linear_shift_residual(sinusoidal_encoding(300, 64), 11)")


@pytest.mark.exercise("linear_shift_residual", points=1)
def test_shift_residual_rejects_an_offset_of_the_table_length(student):
    """k = +5 on a 5-row table is rejected with a ValueError; k = 4 (a single pair of rows) works."""
    table = _random_table(85, 5, 2)
    expect_raises(ValueError, student.linear_shift_residual, table, 5, what="linear_shift_residual(<5 rows>, 5)")
    expect_close(student.linear_shift_residual(table, 4), _shift_residual(table, 4), atol=ATOL_SHIFT, rtol=0,
                 what="linear_shift_residual(<5 rows>, 4)")


@pytest.mark.exercise("linear_shift_residual", points=1)
def test_shift_residual_rejects_a_1d_table(student):
    """A 1-D table (one feature, no feature axis) is rejected with a ValueError."""
    expect_raises(ValueError, student.linear_shift_residual, _random_table(86, 6, 1)[:, 0], 1,
                  what="linear_shift_residual(<table of shape (6,)>, 1)")


@pytest.mark.exercise("linear_shift_residual", points=1)
def test_shift_residual_rejects_a_3d_table(student):
    """A 3-D table (a batch of tables) is rejected with a ValueError."""
    expect_raises(ValueError, student.linear_shift_residual, _random_table(87, 12, 3).reshape(2, 6, 3), 1,
                  what="linear_shift_residual(<table of shape (2, 6, 3)>, 1)")


# -- relative_attention_projections -------------------------------------------------------------
def _bilinear(w_q, w_k):
    return torch.as_tensor(w_q).double() @ torch.as_tensor(w_k).double().T


def _head_product(k, d_model, temperature, base=BASE):
    """W_q W_k^T = M_k / tau: then PE[m] W_q W_k^T PE[n]^T = PE[m - k] . PE[n] / tau."""
    return _offset_matrix(k, d_model, base) / temperature


def _head_mistakes(k, d_model, temperature, base=BASE):
    m = _offset_matrix(k, d_model, base)
    return {
        "attends k positions ahead instead of back (M_{-k} where M_k belongs)": m.T / temperature,
        "temperature multiplied instead of divided": m * temperature,
        "temperature applied to both w_q and w_k (1/tau^2)": m / temperature ** 2,
        "temperature ignored": m,
        "the offset map applied to both queries and keys (it cancels: every query attends to itself)":
            torch.eye(d_model, dtype=torch.float64) / temperature,
        "an extra 1/sqrt(d_model) factor": m / (temperature * math.sqrt(d_model)),
    }


# Entries of M_k / tau are at most 1/tau; float32 rounding is ~6e-8 relative, hence 1e-5 absolute.
ATOL_HEAD = 1e-5


@pytest.mark.exercise("relative_attention_projections", points=2, public=True)
def test_head_product_is_the_offset_map(student):
    """k = 3, d_model = 8, tau = 0.5: w_q @ w_k.T makes PE[m] . PE[n] scores equal PE[m-3] . PE[n] / tau."""
    w_q, w_k = student.relative_attention_projections(3, 8, temperature=0.5)
    expect_shape(w_q, (8, 8), what="w_q")
    expect_shape(w_k, (8, 8), what="w_k")
    expect_close(_bilinear(w_q, w_k), _head_product(3, 8, 0.5), atol=ATOL_HEAD, rtol=0, what="w_q @ w_k.T",
                 mistakes=_head_mistakes(3, 8, 0.5))


@pytest.mark.exercise("relative_attention_projections", points=2)
def test_head_attends_k_back_at_every_position(student):
    """d_model = 64, k = 5, tau = 0.1: on PE rows 0..79 every query m >= 5 puts its largest score on m - 5."""
    w_q, w_k = student.relative_attention_projections(5, 64, temperature=0.1)
    pe = _pe(80, 64)
    scores = pe @ _bilinear(w_q, w_k) @ pe.T  # (80, 80)
    expected = pe[torch.arange(80) - 5] @ pe.T / 0.1  # row m: PE[m-5] . PE[n] / tau (rows m >= 5 used)
    expect_close(scores[5:], expected[5:], atol=1e-3, rtol=1e-5, what="scores PE[m] W_q W_k^T PE[n]",
                 mistakes={name: (pe @ wrong @ pe.T)[5:] for name, wrong in _head_mistakes(5, 64, 0.1).items()})
    argmax = scores[5:].argmax(dim=-1)
    expect_equal(argmax, torch.arange(75), what="key with the largest score for queries 5..79")


@pytest.mark.exercise("relative_attention_projections", points=1)
def test_head_negative_offset_and_base(student):
    """k = -2 (attend ahead), d_model = 12, tau = 2, base = 100."""
    w_q, w_k = student.relative_attention_projections(-2, 12, temperature=2.0, base=100.0)
    expect_close(_bilinear(w_q, w_k), _head_product(-2, 12, 2.0, 100.0), atol=ATOL_HEAD, rtol=0,
                 what="w_q @ w_k.T", mistakes={"base ignored (always 10000)": _head_product(-2, 12, 2.0),
                                               **_head_mistakes(-2, 12, 2.0, 100.0)})


@pytest.mark.exercise("relative_attention_projections", points=1)
def test_head_returns_float32(student):
    """Both maps are float32 tensors."""
    w_q, w_k = student.relative_attention_projections(1, 6)
    expect_dtype(w_q, torch.float32, what="w_q")
    expect_dtype(w_k, torch.float32, what="w_k")


@pytest.mark.exercise("relative_attention_projections", points=1)
def test_head_rejects_bad_arguments(student):
    """A non-positive temperature or an odd d_model is rejected with a ValueError."""
    expect_raises(ValueError, student.relative_attention_projections, 1, 8, temperature=0.0,
                  what="relative_attention_projections(1, 8, temperature=0)")
    expect_raises(ValueError, student.relative_attention_projections, 1, 7,
                  what="relative_attention_projections(1, 7)")


@pytest.mark.exercise("relative_attention_projections", points=2)
@grading(max_examples=10)
@given(k=st.integers(-50, 50), d_model=st.sampled_from([2, 4, 8, 12, 32]),
       temperature=st.sampled_from([0.05, 0.3, 1.0, 2.5, 7.3]), base=BASES)
def test_head_over_its_inputs(student, k, d_model, temperature, base):
    """Any offset sign, d_model (2 included), temperature and base: w_q @ w_k.T = M_k / tau, float32 maps."""
    w_q, w_k = student.relative_attention_projections(k, d_model, temperature=temperature, base=base)
    for name, w in (("w_q", w_q), ("w_k", w_k)):
        expect_dtype(w, torch.float32, what=name)
        expect_shape(w, (d_model, d_model), what=name)
    # Entries of the product are at most 1/tau; float32 factors (relative rounding 6e-8, angles up
    # to 50 rad) put it within ~3e-6/tau of the exact M_k / tau for any split, hence 1e-5/tau.
    expect_close(_bilinear(w_q, w_k), _head_product(k, d_model, temperature, base), atol=ATOL_HEAD / temperature,
                 rtol=0, what="w_q @ w_k.T", mistakes={"base ignored (always 10000)": _head_product(k, d_model, temperature),
                                                     **_head_mistakes(k, d_model, temperature, base)})


@pytest.mark.exercise("relative_attention_projections", points=1)
def test_head_rejects_a_negative_temperature(student):
    """temperature = -0.5 is rejected with a ValueError; d_model = 2 with temperature = 0.01 works."""
    expect_raises(ValueError, student.relative_attention_projections, 1, 8, temperature=-0.5,
                  what="relative_attention_projections(1, 8, temperature=-0.5)")
    w_q, w_k = student.relative_attention_projections(1, 2, temperature=0.01)
    expect_close(_bilinear(w_q, w_k), _head_product(1, 2, 0.01), atol=ATOL_HEAD / 0.01, rtol=0,
                 what="w_q @ w_k.T for d_model = 2, tau = 0.01")


@pytest.mark.exercise("relative_attention_projections", points=1)
def test_head_rejects_zero_d_model(student):
    """d_model = 0 is rejected with a ValueError."""
    expect_raises(ValueError, student.relative_attention_projections, 1, 0,
                  what="relative_attention_projections(1, 0)")
