"""Hidden tests and public checks for notebook 02, sinusoidal positional encodings.

Every reference is computed here in float64 from the formulas of Vaswani et al. (2017, section
3.5), never with the learner's code. The ``_pe`` switches reproduce catalogued mistakes so that
the feedback can name them.
"""
import math
import re

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.hidden import sinusoidal_encoding as hidden
from grader.judge import (expect_close, expect_dtype, expect_equal, expect_raises, expect_shape,
                          expect_true)
from grader.properties import FLOAT_DTYPES, dtypes, grading, laid_out, layouts, seeds, tensor

BASE = 10000.0
BASES = st.sampled_from([10000.0, 2.5, 777.7, 10000.5, 1e6])
"""Bases of the property tests: the paper's, small and large ones, and ones that are not whole numbers."""

TRUSTED_PREREQUISITES = {
    "relative_attention_projections": {"offset_matrix": hidden.offset_matrix},
    "offset_head_share": {"relative_attention_projections": hidden.relative_attention_projections,
                          "sinusoidal_encoding": hidden.sinusoidal_encoding},
}
"""Exercises judged with the trusted version of the earlier ones they call (grader.judge): one
mistake costs once."""


def _pe(num_positions, d_model, base=BASE, *, swap=False, half_split=False, exponent="2i/d",
        first_position=0):
    """Reference encoding in float64, with switches that reproduce catalogued mistakes."""
    pos = torch.arange(first_position, first_position + num_positions, dtype=torch.float64)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float64)
    # 2i/(d-2) is 0/0 = NaN at d_model = 2, as the mistake computes it.
    power = {"2i/d": 2 * i / d_model, "i/d": i / d_model, "2i/(d-2)": 2 * i / (d_model - 2)}[exponent]
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
# One mistake costs once: each named test owns one property, and accepts the tables of the mistakes
# that another test owns (OWNED_BY names them), so a single wrong line fails one test, not six.
def _owned_mistakes(num_positions, d_model, base=BASE):
    """The tables of the catalogued mistakes, grouped by the property (and test) that owns them."""
    return {
        "layout": [_pe(num_positions, d_model, base, swap=True), _pe(num_positions, d_model, base, half_split=True),
                   _pe(num_positions, d_model, base, swap=True, half_split=True)],
        "exponent": [_pe(num_positions, d_model, base, exponent="i/d"),
                     _pe(num_positions, d_model, base, exponent="2i/(d-2)")],
        "first position": [_pe(num_positions, d_model, base, first_position=1)],
        "base": [_pe(num_positions, d_model)],
    }


def _expect_encoding(got, num_positions, d_model, base=BASE, *, what, owned_elsewhere, atol=ATOL, rows=None):
    """Pass if got (or its rows) matches the formula, or a mistake whose property another test owns;
    otherwise fail against the formula, naming the mistake where one matches."""
    rows = slice(None) if rows is None else rows
    table = torch.as_tensor(got).double()
    if table.shape == (num_positions, d_model):
        owned = _owned_mistakes(num_positions, d_model, base)
        for name in owned_elsewhere:
            if any(torch.allclose(table[rows], wrong[rows], atol=atol, rtol=0, equal_nan=True)
                   for wrong in owned[name]):
                return
    mistakes = {"base ignored (always 10000)": _pe(num_positions, d_model)[rows]} if base != BASE else {}
    mistakes.update({name: wrong[rows] for name, wrong in _pe_mistakes(num_positions, d_model, base).items()})
    expect_close(table[rows], _pe(num_positions, d_model, base)[rows], atol=atol, rtol=0, what=what,
                 mistakes=mistakes)


@pytest.mark.exercise("sinusoidal_encoding", points=2, public=True)
def test_encoding_matches_the_formula(student):
    """sinusoidal_encoding(10, 8): sine and cosine of pair i in columns 2i and 2i+1, at the frequencies 10000^(-2i/8)."""
    got = student.sinusoidal_encoding(10, 8)
    expect_shape(got, (10, 8), what="sinusoidal_encoding(10, 8)")
    _expect_encoding(got, 10, 8, what="sinusoidal_encoding(10, 8)", owned_elsewhere=("first position",))


@pytest.mark.exercise("sinusoidal_encoding", points=1, public=True)
def test_encoding_is_float32(student):
    """The table is a float32 tensor."""
    expect_dtype(student.sinusoidal_encoding(4, 6), torch.float32, what="sinusoidal_encoding(4, 6)")


@pytest.mark.exercise("sinusoidal_encoding", points=1)
def test_encoding_position_zero(student):
    """The first row is position 0 (its sines are 0 and its cosines 1), and the next rows follow from it."""
    got = student.sinusoidal_encoding(5, 12)
    _expect_encoding(got, 5, 12, what="sinusoidal_encoding(5, 12)", owned_elsewhere=("layout", "exponent"))


@pytest.mark.exercise("sinusoidal_encoding", points=1)
def test_encoding_honours_base(student):
    """With base=100 and d_model=6, the frequencies are 100^(-2i/6)."""
    got = student.sinusoidal_encoding(12, 6, base=100.0)
    _expect_encoding(got, 12, 6, 100.0, what="sinusoidal_encoding(12, 6, base=100)",
                     owned_elsewhere=("layout", "exponent", "first position"))


@pytest.mark.exercise("sinusoidal_encoding", points=1)
def test_encoding_large_positions_are_accurate(student):
    """Positions up to 30000 are accurate to 1e-5: the angles are computed in float64."""
    got = student.sinusoidal_encoding(30000, 8)
    expect_shape(got, (30000, 8), what="sinusoidal_encoding(30000, 8)")
    # Casting float64 values to float32 costs at most 6e-8. Angles computed in float32 are off by
    # up to pos * 2^-24 ~ 2e-3 rad at pos = 30000, far above 1e-5.
    table = torch.as_tensor(got).double()
    rows = slice(-64, None)
    owned = _owned_mistakes(30000, 8)
    if any(torch.allclose(table[rows], wrong[rows], atol=1e-5, rtol=0)
           for name in ("layout", "exponent", "first position") for wrong in owned[name]):
        return
    expect_close(table[rows], _pe(30000, 8)[rows], atol=1e-5, rtol=0, what="rows 29936..29999",
                 mistakes={"angles computed in float32 (pos * inv_freq loses precision at large pos)":
                           _float32_angles(30000, 8)[rows]})


def _float32_angles(num_positions, d_model):
    pos = torch.arange(num_positions, dtype=torch.float32)[:, None]
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(BASE) / d_model))
    angles = (pos * inv_freq).double()
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)


@pytest.mark.exercise("sinusoidal_encoding", points=1)
def test_encoding_rejects_bad_sizes(student):
    """An odd d_model, and a num_positions or d_model that is zero or negative, are rejected with ValueError."""
    for args in ((4, 7), (0, 8), (-3, 8), (5, 0), (3, -4), (-1, 4)):
        expect_raises(ValueError, student.sinusoidal_encoding, *args, what=f"sinusoidal_encoding{args}")


@pytest.mark.exercise("sinusoidal_encoding", points=2)
@grading(max_examples=10)
@given(num_positions=st.integers(1, 300), d_model=st.sampled_from([2, 4, 6, 10, 64]), base=BASES)
def test_encoding_over_its_inputs(student, num_positions, d_model, base):
    """Any size (d_model = 2 and one position included) and base (not only whole numbers), to 5e-5."""
    got = student.sinusoidal_encoding(num_positions, d_model, base=base)
    what = f"sinusoidal_encoding({num_positions}, {d_model}, base={base})"
    expect_shape(got, (num_positions, d_model), what=what)
    # The named tests own the layout, the exponent, the first position, the base, the dtype and float64
    # angles; this test owns the rest of the input space (any size, a base that is not a whole
    # number). 5e-5 leaves float32 angles (off by up to 300 * 6e-8 rad here) to the large-position test.
    _expect_encoding(got, num_positions, d_model, base, what=what, atol=5e-5,
                     owned_elsewhere=("layout", "exponent", "first position", "base"))


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


def _offset_float32_angles(k, d_model, base=BASE):
    omega = (base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)).float()
    angle = (k * omega).double()                                   # rounded the float32 way
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    e = torch.arange(0, d_model, 2)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = angle.cos(), angle.sin(), -angle.sin(), angle.cos()
    return m


def _expect_offset(got, k, d_model, base=BASE, *, what, owned_elsewhere, atol=ATOL_OFFSET):
    """Pass if got matches M_k, or a mistake whose property another test owns (one mistake costs one
    test): "blocks" (the block formula), "base" (base ignored), "float64 angles"."""
    matrix = torch.as_tensor(got).double()
    if matrix.shape == (d_model, d_model):
        owned = {"blocks": list(_offset_mistakes(k, d_model, base).values()), "base": [_offset_matrix(k, d_model)],
                 "float64 angles": [_offset_float32_angles(k, d_model, base)]}
        if any(torch.allclose(matrix, wrong, atol=atol, rtol=0)
               for name in owned_elsewhere for wrong in owned[name]):
            return
    mistakes = {"base ignored (always 10000)": _offset_matrix(k, d_model)} if base != BASE else {}
    mistakes["angles computed in float32"] = _offset_float32_angles(k, d_model, base)
    mistakes.update(_offset_mistakes(k, d_model, base))
    expect_close(matrix, _offset_matrix(k, d_model, base), atol=atol, rtol=0, what=what, mistakes=mistakes)


@pytest.mark.exercise("offset_matrix", points=1)
def test_offset_matrix_negative_offset(student):
    """offset_matrix(-7, 12) moves PE[p] back to PE[p - 7]: negative offsets are handled."""
    _expect_offset(student.offset_matrix(-7, 12), -7, 12, what="offset_matrix(-7, 12)", owned_elsewhere=("blocks",))


@pytest.mark.exercise("offset_matrix", points=1)
def test_offset_matrix_zero_is_identity(student):
    """offset_matrix(0, 6) is the identity, as a float32 tensor."""
    got = student.offset_matrix(0, 6)
    expect_dtype(got, torch.float32, what="offset_matrix(0, 6)")
    expect_close(got, torch.eye(6), atol=ATOL_OFFSET, rtol=0, what="offset_matrix(0, 6)")


@pytest.mark.exercise("offset_matrix", points=1)
def test_offset_matrix_honours_base_and_large_offsets(student):
    """offset_matrix(250, 10, base=50) matches the formula with omega_i = 50^(-2i/10), angles in float64."""
    # Angles up to 250 rad, computed in float64 as the docstring promises: every entry is within
    # float32 rounding (6e-8) of the formula. (float32 angles are off by up to 250 * 6e-8 = 1.5e-5.)
    _expect_offset(student.offset_matrix(250, 10, base=50.0), 250, 10, 50.0,
                   what="offset_matrix(250, 10, base=50)", owned_elsewhere=("blocks",))


@pytest.mark.exercise("offset_matrix", points=1)
def test_offset_matrix_rejects_bad_d_model(student):
    """An odd, zero or negative d_model is rejected with a ValueError."""
    for d_model in (5, 0, -4):
        expect_raises(ValueError, student.offset_matrix, 2, d_model, what=f"offset_matrix(2, {d_model})")


@pytest.mark.exercise("offset_matrix", points=2)
@grading(max_examples=10)
@given(k=st.one_of(st.integers(-12, 12), st.integers(-40000, 40000)), d_model=st.sampled_from([2, 4, 6, 12, 32]),
       base=BASES)
def test_offset_matrix_over_its_inputs(student, k, d_model, base):
    """Any offset (large and negative ones included), d_model (2 included) and base."""
    got = student.offset_matrix(k, d_model, base=base)
    what = f"offset_matrix({k}, {d_model}, base={base})"
    expect_shape(got, (d_model, d_model), what=what)
    # The named tests own the block formula, negative offsets, the base, float64 angles and the dtype;
    # this test owns the rest of the input space (d_model = 2, non-integer bases, any offset).
    # Float32 angles are off by up to |k| * 6e-8 rad: the tolerance leaves them to that test.
    _expect_offset(got, k, d_model, base, what=what, owned_elsewhere=("blocks", "base"),
                   atol=ATOL_OFFSET + abs(k) * 1.2e-7)


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


# One mistake costs once: each property is owned by one test, and every other test accepts the
# residual of a mistake another test owns. "value": what the residual is divided by (and not
# squared), owned by test_shift_residual_of_a_random_table; "direction": which rows are predicted
# from which (for k < 0, fitting the other way and reading k as |k| agree), owned by
# test_shift_residual_negative_offset; "ends": rows without a partner are dropped, not wrapped
# around, owned by test_shift_residual_is_zero_for_a_rotating_table. Leaving the table unchanged
# and computing in float64 belong to test_shift_residual_over_its_inputs.
def _shift_owned(table, k):
    """The residuals of the catalogued mistakes, grouped by the property (and test) that owns them."""
    x, y = _pairs(table, k)
    rolled_y = torch.roll(table.double(), -k, dims=0)
    forward = table.double()[: len(table) - abs(k)], table.double()[abs(k):]  # k read as |k|
    return {
        "value": [_residual(x, y).item(), (_residual(x, y) / x.norm()).item(),
                  ((_residual(x, y) / y.norm()) ** 2).item()],
        "direction": [(_residual(y, x) / x.norm()).item(),
                      (_residual(*forward) / forward[1].norm()).item()],
        "ends": [(_residual(table.double(), rolled_y) / rolled_y.norm()).item()],
    }


def _shift_accepted(table, k, owner=None):
    """The residuals this test lets pass: those of the mistakes that a test other than ``owner`` owns."""
    return [value for name, values in _shift_owned(table, k).items() if name != owner for value in values]


def _sine_code():
    """A sine-only code of 6 frequencies over 60 positions: no linear map moves it by 3 (residual 0.65)."""
    pos = torch.arange(60, dtype=torch.float64)[:, None]
    return torch.sin(pos * torch.tensor([1.0, 0.7, 0.45, 0.3, 0.2, 0.13], dtype=torch.float64))


# Well-conditioned float64 tables: every correct least-squares solver agrees to ~1e-12.
ATOL_SHIFT = 1e-8


@pytest.mark.exercise("linear_shift_residual", points=3, public=True)
def test_shift_residual_of_a_random_table(student):
    """A random (30, 4) table with k = 2, and a sine-only code of 6 frequencies with k = 3: the relative residual."""
    student.may_modify_arguments = True  # a hidden test owns leaving the table unchanged
    # The sine-only code is well conditioned too (condition number 1.3): pinv, lstsq and the normal
    # equations agree on it far below the 1e-6 allowed.
    for name, table, k, atol in (("a random (30, 4) table", _random_table(80, 30, 4), 2, ATOL_SHIFT),
                                 ("the sine-only code", _sine_code(), 3, 1e-6)):
        got = student.linear_shift_residual(table, k)
        expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
        expect_close(got, _shift_residual(table, k), atol=atol, rtol=0, what=f"linear_shift_residual({name}, {k})",
                     mistakes=_shift_mistakes(table, k), accepted=_shift_accepted(table, k, "value"))


@pytest.mark.exercise("linear_shift_residual", points=2)
def test_shift_residual_negative_offset(student):
    """A random (25, 3) table, k = -4: rows p - 4 are predicted from rows p (the direction of the map)."""
    student.may_modify_arguments = True
    table = _random_table(81, 25, 3)
    got = student.linear_shift_residual(table, -4)
    expect_close(got, _shift_residual(table, -4), atol=ATOL_SHIFT, rtol=0,
                 what="linear_shift_residual(table, -4)", mistakes=_shift_mistakes(table, -4),
                 accepted=_shift_accepted(table, -4, "direction"))


@pytest.mark.exercise("linear_shift_residual", points=1)
def test_shift_residual_is_zero_for_a_rotating_table(student):
    """Rows E[p] = A^p E[0] for a fixed matrix A: one linear map moves every row that has a partner, residual 0."""
    student.may_modify_arguments = True
    a = torch.linalg.qr(_random_table(82, 6, 6)).Q * 0.97
    rows = [_random_table(83, 1, 6)[0]]
    for _ in range(39):
        rows.append(a @ rows[-1])
    table = torch.stack(rows)  # (40, 6)
    got = student.linear_shift_residual(table, 5)
    # Every other catalogued mistake also gives 0 here (A is invertible); wrapping rows around does not.
    expect_close(got, 0.0, atol=1e-9, rtol=0, what="linear_shift_residual of E[p] = A^p E[0]",
                 mistakes=_shift_mistakes(table, 5))


@pytest.mark.exercise("linear_shift_residual", points=2)
@grading(max_examples=10)
@given(rows=st.integers(2, 40), cols=st.integers(1, 6), offset=st.floats(-0.99, 0.99),
       dtype=dtypes("float32", "float64"), layout=layouts("contiguous", "transposed", "strided"), seed=seeds())
def test_shift_residual_over_its_inputs(student, rows, cols, offset, dtype, layout, seed):
    """Any table size (one pair of rows, fewer pairs than columns), offset sign, float32 or float64, layout; the table is left unchanged."""
    k = int(offset * rows)  # |k| <= rows - 1
    table = tensor(seed, rows, cols, dtype=FLOAT_DTYPES[dtype])
    got = student.linear_shift_residual(laid_out(table, layout), k)
    expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
    # The docstring promises a float64 computation whatever the table's dtype: the reference is the
    # float64 residual of the same (rounded) table, and random tables are well conditioned, so every
    # correct solver agrees to ~1e-12 (a float32 solve is off by ~1e-7). The named tests own the
    # value, the direction and the ends: their mistakes pass here.
    expect_close(got, _shift_residual(table.double(), k), atol=ATOL_SHIFT, rtol=0,
                 what=f"linear_shift_residual(<{rows} x {cols} table>, {k})",
                 mistakes=_shift_mistakes(table.double(), k), accepted=_shift_accepted(table.double(), k))


@pytest.mark.exercise("linear_shift_residual", points=1)
def test_shift_residual_of_a_rank_deficient_sinusoidal_table(student):
    """A (300, 64) sinusoidal table, whose slow columns are nearly collinear, moves by one linear map: residual ~0."""
    student.may_modify_arguments = True
    table = _pe(300, 64)
    got = student.linear_shift_residual(table, 11)
    # The exact answer is 0 (PE[p + 11] = M_11 PE[p]). Solvers with a cut-off on small singular
    # values give 1e-14 (lstsq's gelsd, gelss) to 4e-10 (SVD at 1e-9) and 2e-6 (pinv's default
    # cut-off); the normal equations happen to stay below 1e-7 here, while lstsq's default CPU
    # driver (gelsy, pivoted QR) gives 0.18 to 0.41 (its result varies with the thread count).
    # Rows wrapped around (another test's mistake) pass.
    expect_close(got, 0.0, atol=1e-3, rtol=0, what="linear_shift_residual(sinusoidal_encoding(300, 64), 11)",
                 accepted=_shift_owned(table, 11)["ends"])


@pytest.mark.exercise("linear_shift_residual", points=1)
def test_shift_residual_rejects_bad_inputs(student):
    """|k| >= the number of rows (either sign), a 1-D table and a 3-D table are rejected with ValueError."""
    student.may_modify_arguments = True
    table = _random_table(84, 5, 2)
    expect_raises(ValueError, student.linear_shift_residual, table, -5, what="linear_shift_residual(<5 rows>, -5)")
    expect_raises(ValueError, student.linear_shift_residual, table, 5, what="linear_shift_residual(<5 rows>, 5)")
    expect_raises(ValueError, student.linear_shift_residual, _random_table(86, 6, 1)[:, 0], 1,
                  what="linear_shift_residual(<table of shape (6,)>, 1)")
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


# One mistake costs once: "scale" (how the temperature enters, no extra factor) is owned by
# test_head_product_is_the_offset_map; "key" (which key the head picks: the sign of the offset,
# the map on one side only) by test_head_attends_k_back_at_every_position; "base" by
# test_head_negative_offset_and_base; the dtype by test_head_returns_float32. Every other test
# accepts the product of a mistake that another test owns.
def _head_owned(k, d_model, temperature, base=BASE):
    """The products W_q W_k^T of the catalogued mistakes, grouped by the property (and test) that owns them."""
    m = _offset_matrix(k, d_model, base)
    return {
        "scale": [m * temperature, m / temperature ** 2, m, m / (temperature * math.sqrt(d_model))],
        "key": [m.T / temperature, torch.eye(d_model, dtype=torch.float64) / temperature],
        "base": [_head_product(k, d_model, temperature)],
    }


def _head_accepted(k, d_model, temperature, base=BASE, owner=None):
    return [wrong for name, products in _head_owned(k, d_model, temperature, base).items() if name != owner
            for wrong in products]


# Entries of M_k / tau are at most 1/tau; float32 rounding is ~6e-8 relative, hence 1e-5 absolute.
ATOL_HEAD = 1e-5


@pytest.mark.exercise("relative_attention_projections", points=2, public=True)
def test_head_product_is_the_offset_map(student):
    """k = 3, d_model = 8, tau = 0.5: w_q @ w_k.T makes PE[m] . PE[n] scores equal PE[m-3] . PE[n] / tau."""
    w_q, w_k = student.relative_attention_projections(3, 8, temperature=0.5)
    expect_shape(w_q, (8, 8), what="w_q")
    expect_shape(w_k, (8, 8), what="w_k")
    expect_close(_bilinear(w_q, w_k), _head_product(3, 8, 0.5), atol=ATOL_HEAD, rtol=0, what="w_q @ w_k.T",
                 mistakes=_head_mistakes(3, 8, 0.5), accepted=_head_accepted(3, 8, 0.5, owner="scale"))


@pytest.mark.exercise("relative_attention_projections", points=2)
def test_head_attends_k_back_at_every_position(student):
    """d_model = 64, k = 5, tau = 0.1: on PE rows 0..79 every query m >= 5 puts its largest score on m - 5."""
    w_q, w_k = student.relative_attention_projections(5, 64, temperature=0.1)
    pe = _pe(80, 64)
    # Which key wins, not the scores' size: a positive factor (how the temperature enters, another
    # test's property) leaves it unchanged.
    argmax = (pe @ _bilinear(w_q, w_k) @ pe.T)[5:].argmax(dim=-1)
    expect_equal(argmax, torch.arange(75), what="key with the largest score for queries 5..79",
                 mistakes={name: (pe @ wrong @ pe.T)[5:].argmax(dim=-1)
                           for name, wrong in _head_mistakes(5, 64, 0.1).items()})


@pytest.mark.exercise("relative_attention_projections", points=1)
def test_head_negative_offset_and_base(student):
    """k = -2 (attend ahead), d_model = 12, tau = 2, base = 100."""
    w_q, w_k = student.relative_attention_projections(-2, 12, temperature=2.0, base=100.0)
    expect_close(_bilinear(w_q, w_k), _head_product(-2, 12, 2.0, 100.0), atol=ATOL_HEAD, rtol=0,
                 what="w_q @ w_k.T", mistakes={"base ignored (always 10000)": _head_product(-2, 12, 2.0),
                                               **_head_mistakes(-2, 12, 2.0, 100.0)},
                 accepted=_head_accepted(-2, 12, 2.0, 100.0, owner="base"))


@pytest.mark.exercise("relative_attention_projections", points=1)
def test_head_returns_float32(student):
    """Both maps are float32 tensors."""
    w_q, w_k = student.relative_attention_projections(1, 6)
    expect_dtype(w_q, torch.float32, what="w_q")
    expect_dtype(w_k, torch.float32, what="w_k")


@pytest.mark.exercise("relative_attention_projections", points=1)
def test_head_rejects_bad_arguments(student):
    """A zero or negative temperature, and an odd, zero or negative d_model, are rejected with a ValueError."""
    for args, kwargs in (((1, 8), {"temperature": 0.0}), ((1, 8), {"temperature": -0.5}), ((1, 7), {}),
                         ((1, 0), {}), ((1, -4), {})):
        expect_raises(ValueError, student.relative_attention_projections, *args, **kwargs,
                      what=f"relative_attention_projections{args} {kwargs}")


@pytest.mark.exercise("relative_attention_projections", points=2)
@grading(max_examples=10)
@given(k=st.integers(-50, 50), d_model=st.sampled_from([2, 4, 8, 12, 32]),
       temperature=st.sampled_from([0.05, 0.3, 1.0, 2.5, 7.3]), base=BASES)
def test_head_over_its_inputs(student, k, d_model, temperature, base):
    """Any offset sign, d_model (2 included), temperature and base (not only whole numbers): w_q @ w_k.T = M_k / tau."""
    w_q, w_k = student.relative_attention_projections(k, d_model, temperature=temperature, base=base)
    for name, w in (("w_q", w_q), ("w_k", w_k)):
        expect_shape(w, (d_model, d_model), what=name)
    # Entries of the product are at most 1/tau; float32 factors (relative rounding 6e-8, angles up
    # to 50 rad) put it within ~3e-6/tau of the exact M_k / tau for any split, hence 1e-5/tau.
    # The named tests own the scale, the key, the base and the dtype: their mistakes pass here.
    expect_close(_bilinear(w_q, w_k), _head_product(k, d_model, temperature, base), atol=ATOL_HEAD / temperature,
                 rtol=0, what="w_q @ w_k.T", mistakes={"base ignored (always 10000)": _head_product(k, d_model, temperature),
                                                     **_head_mistakes(k, d_model, temperature, base)},
                 accepted=_head_accepted(k, d_model, temperature, base))


# -- offset_head_share --------------------------------------------------------------------------
def _head_share(tokens, k, temperature=1.0, base=BASE, *, bare=False, wrap=False, argmax=False,
                over_queries=False, scaled=False):
    """The reference protocol in float64, with switches that reproduce catalogued mistakes."""
    tokens = tokens.double()
    num, d_model = tokens.shape
    x = _pe(num, d_model, base) + (0 if bare else tokens)
    scores = x @ _head_product(k, d_model, temperature, base) @ x.T            # (T, T): query m, key n
    if scaled:
        scores = scores / math.sqrt(d_model)
    weights = torch.softmax(scores, dim=0 if over_queries else -1)
    queries = torch.arange(num) if wrap else torch.arange(max(0, k), min(num, num + k))
    targets = (queries - k) % num
    if argmax:
        return (weights[queries].argmax(dim=-1) == targets).double().mean().item()
    return weights[queries, targets].mean().item()


def _head_share_mistakes(tokens, k, temperature=1.0, base=BASE):
    return {
        "measured on the bare encoding (the tokens were not added)": _head_share(tokens, k, temperature, base, bare=True),
        "every query averaged, those whose key m - k falls outside the sequence too (an index that wraps around)":
            _head_share(tokens, k, temperature, base, wrap=True),
        "the fraction of queries whose largest weight is on m - k, not the weight itself":
            _head_share(tokens, k, temperature, base, argmax=True),
        "softmax over the queries instead of over the keys": _head_share(tokens, k, temperature, base, over_queries=True),
        "an extra 1/sqrt(d_model) on the scores": _head_share(tokens, k, temperature, base, scaled=True),
    }


# Shares lie in [0, 1]; the float64 protocol is reproduced to ~1e-12, float32 inputs are converted first.
ATOL_SHARE = 1e-6

# One mistake costs once: test_head_share_on_tokens_plus_positions owns the protocol (what is
# attended over, which queries count, what is averaged); the other tests accept the shares of
# its mistakes and own the sign of the offset (negative offsets) and the inputs (any size, dtype,
# layout).


@pytest.mark.exercise("offset_head_share", points=2, public=True)
def test_head_share_on_tokens_plus_positions(student):
    """20 positions, d_model = 16, k = 2, tau = 0.5, tokens of std 0.25: the weight on key m - 2."""
    tokens = tensor(90, 20, 16, scale=0.25)
    got = student.offset_head_share(tokens, 2, temperature=0.5)
    expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
    expect_close(got, _head_share(tokens, 2, 0.5), atol=ATOL_SHARE, rtol=0, what="offset_head_share(<20 x 16>, 2)",
                 mistakes=_head_share_mistakes(tokens, 2, 0.5))


@pytest.mark.exercise("offset_head_share", points=1)
def test_head_share_negative_offset(student):
    """k = -3 (the head looks ahead): queries m = 0..T-4, weight on key m + 3; 30 positions, d_model = 8, base 100."""
    tokens = tensor(91, 30, 8, scale=0.2)
    got = student.offset_head_share(tokens, -3, temperature=0.3, base=100.0)
    mistakes = _head_share_mistakes(tokens, -3, 0.3, 100.0)  # owned by the public test: they pass here
    expect_close(got, _head_share(tokens, -3, 0.3, 100.0), atol=ATOL_SHARE, rtol=0,
                 what="offset_head_share(<30 x 8>, -3, temperature=0.3, base=100)",
                 mistakes=mistakes, accepted=mistakes.values())


@pytest.mark.exercise("offset_head_share", points=1)
def test_head_share_rejects_bad_inputs(student):
    """|k| >= T (either sign) and tokens that are not 2-D are rejected with a ValueError."""
    tokens = tensor(92, 6, 4)
    expect_raises(ValueError, student.offset_head_share, tokens, 6, what="offset_head_share(<6 x 4>, 6)")
    expect_raises(ValueError, student.offset_head_share, tokens, -6, what="offset_head_share(<6 x 4>, -6)")
    expect_raises(ValueError, student.offset_head_share, tokens.reshape(2, 3, 4), 1,
                  what="offset_head_share(<2 x 3 x 4>, 1)")


@pytest.mark.exercise("offset_head_share", points=2)
@grading(max_examples=10)
@given(num=st.integers(2, 60), d_model=st.sampled_from([2, 8, 16, 64]), offset=st.floats(0.01, 0.99),
       temperature=st.sampled_from([0.1, 0.5, 1.0, 3.0]), scale=st.sampled_from([0.0, 0.125, 0.25, 1.0, 8.0]),
       dtype=dtypes("float32", "float64"), layout=layouts("contiguous", "transposed", "strided"), seed=seeds())
def test_head_share_over_its_inputs(student, num, d_model, offset, temperature, scale, dtype, layout, seed):
    """Any length, width, offset k >= 1, temperature, token scale (0 and sqrt(d) included), dtype and layout."""
    k = max(1, int(offset * num))  # 1 <= k <= num - 1 (negative offsets have their own test)
    if k >= num:
        k = num - 1
    tokens = tensor(seed, num, d_model, dtype=FLOAT_DTYPES[dtype], scale=scale)
    got = student.offset_head_share(laid_out(tokens, layout), k, temperature=temperature)
    expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
    mistakes = _head_share_mistakes(tokens, k, temperature)  # owned by the other tests: they pass here
    expect_close(got, _head_share(tokens, k, temperature), atol=ATOL_SHARE, rtol=0,
                 what=f"offset_head_share(<{num} x {d_model} tokens of std {scale}>, {k}, temperature={temperature})",
                 mistakes=mistakes, accepted=mistakes.values())


# -- best_band ----------------------------------------------------------------------------------
BANDS = {"fast": list(range(16)), "middle": list(range(24, 40)), "slow": list(range(48, 64)),
         "fast+slow": list(range(8)) + list(range(56, 64))}
"""The four 16-dimensional bands of the d_model = 64 encoding that best_band chooses from."""


def _band_accuracies(sigma, num_positions=1024, seeds_=(0, 1)):
    """Fraction of positions decoded exactly by each band, on the grader's own noise draws."""
    pe = _pe(num_positions, 64)
    truth = torch.arange(num_positions)
    found = dict.fromkeys(BANDS, 0.0)
    for seed in seeds_:
        noisy = pe + sigma * torch.randn(pe.shape, generator=torch.Generator().manual_seed(1000 + seed), dtype=torch.float64)
        for name, dims in BANDS.items():
            found[name] += (torch.cdist(noisy[:, dims], pe[:, dims]).argmin(dim=1) == truth).double().mean().item()
    return {name: value / len(seeds_) for name, value in found.items()}


def _expect_band_name(got, what):
    expect_true(isinstance(got, str) and got in BANDS,
                f"{what} should be one of {sorted(BANDS)}, not {got!r}")


@pytest.mark.exercise("best_band", points=1, public=True)
def test_best_band_names_a_band(student):
    """best_band(0.1) names one of the four bands ("fast", "middle", "slow", "fast+slow")."""
    _expect_band_name(student.best_band(0.1), "best_band(0.1)")


_DIMENSION_RANGE = re.compile(r"(\d+)\s*(?:\.\.|-)\s*(\d+)")
"""A range of dimensions written "a..b" or "a-b" (both ends included)."""


def _band_meant(got):
    """The band an answer means: its name, or its dimensions ("0..15", "0..7, 56..63" or a list of
    ints); None if it means none. The measurement judges what the answer means, and
    test_best_band_names_a_band the form it takes (one mistake costs once)."""
    if isinstance(got, str) and got in BANDS:
        return got
    dims = None
    if isinstance(got, str) and _DIMENSION_RANGE.search(got):
        dims = [d for a, b in _DIMENSION_RANGE.findall(got) for d in range(int(a), int(b) + 1)]
    elif isinstance(got, (list, tuple)) and all(isinstance(d, int) for d in got):
        dims = list(got)
    return next((name for name, band in BANDS.items() if dims == band), None)


@pytest.mark.exercise("best_band", points=3)
@grading(max_examples=8)
@given(sigma=st.floats(0.02, 0.5))
def test_best_band_matches_the_measurement(student, sigma):
    """At noise levels from 0.02 to 0.5, the named band decodes within 0.01 of the best band (measured by the grader)."""
    answer = student.best_band(sigma)
    got = _band_meant(answer)
    expect_true(got is not None, f"best_band({sigma:.3f}) = {answer!r} means none of the bands {sorted(BANDS)}")
    accuracy = _band_accuracies(sigma)
    best = max(accuracy.values())
    measured = ", ".join(f"{name} {value:.3f}" for name, value in accuracy.items())
    expect_true(accuracy[got] >= best - 0.01,
                f"at sigma = {sigma:.3f} the grader measured the fraction decoded exactly as {measured}: "
                f"{got!r} is not within 0.01 of the best")


# -- decoding_inv_freq --------------------------------------------------------------------------
def _decoding_accuracy(inv_freq, num_positions, sigma, seeds_=(0, 1, 2)):
    """Fraction of positions 0..L-1 decoded exactly by the nearest clean row, from PE + noise (float64)."""
    angles = torch.arange(num_positions, dtype=torch.float64)[:, None] * inv_freq
    table = torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)  # (L, 16)
    truth = torch.arange(num_positions)
    hits = 0.0
    for seed in seeds_:
        gen = torch.Generator().manual_seed(2000 + seed)
        noisy = table + sigma * torch.randn(table.shape, generator=gen, dtype=torch.float64)
        hits += (torch.cdist(noisy, table).argmin(dim=1) == truth).double().mean().item()
    return hits / len(seeds_)


def _design(student, num_positions):
    """The learner's 8 frequencies for num_positions, checked for shape and finiteness, as float64."""
    got = student.decoding_inv_freq(num_positions)
    expect_true(isinstance(got, torch.Tensor) and got.is_floating_point(),
                f"decoding_inv_freq({num_positions}) should return a float tensor, not {type(got).__name__}")
    expect_shape(got, (8,), what=f"decoding_inv_freq({num_positions})")
    got = got.double()
    expect_true(bool(torch.isfinite(got).all()), f"decoding_inv_freq({num_positions}) has non-finite frequencies")
    return got


def _expect_decodes(student, num_positions, sigma, threshold, seeds_=(0, 1, 2)):
    accuracy = _decoding_accuracy(_design(student, num_positions), num_positions, sigma, seeds_)
    expect_true(accuracy >= threshold,
                f"L = {num_positions}, sigma = {sigma}: your frequencies decoded {accuracy:.4f} of the positions "
                f"exactly; the threshold is {threshold}")


@pytest.mark.exercise("decoding_inv_freq", points=1, public=True)
def test_design_decodes_256_positions_at_low_noise(student):
    """L = 256, sigma = 0.1: at least 0.99 of the positions decoded exactly (the feedback prints the measurement)."""
    _expect_decodes(student, 256, 0.1, 0.99, seeds_=(7,))


# Thresholds at L = 1024, three noise draws each (3072 decodings: a standard error near 0.002 at
# these accuracies). The paper's ladder 10000^(-2i/16) measures 1.000, 0.989, 0.904, 0.734; a
# geometric ladder from 2 rad to 2/L rad per position measures 1.000, 1.000, 0.997, 0.949.
@pytest.mark.exercise("decoding_inv_freq", points=1)
def test_design_at_sigma_0_1(student):
    """L = 1024, sigma = 0.1: at least 0.99 of the positions decoded exactly."""
    _expect_decodes(student, 1024, 0.1, 0.99)


@pytest.mark.exercise("decoding_inv_freq", points=2)
def test_design_at_sigma_0_2(student):
    """L = 1024, sigma = 0.2: at least 0.995 of the positions decoded exactly."""
    _expect_decodes(student, 1024, 0.2, 0.995)


@pytest.mark.exercise("decoding_inv_freq", points=2)
def test_design_at_sigma_0_3(student):
    """L = 1024, sigma = 0.3: at least 0.98 of the positions decoded exactly."""
    _expect_decodes(student, 1024, 0.3, 0.98)


@pytest.mark.exercise("decoding_inv_freq", points=2)
def test_design_at_sigma_0_4(student):
    """L = 1024, sigma = 0.4: at least 0.93 of the positions decoded exactly."""
    _expect_decodes(student, 1024, 0.4, 0.93)


@pytest.mark.exercise("decoding_inv_freq", points=2)
@grading(max_examples=8)
@given(num_positions=st.integers(64, 2048))
def test_design_over_lengths(student, num_positions):
    """Any length from 64 to 2048 positions, sigma = 0.2: at least 0.99 decoded exactly."""
    _expect_decodes(student, num_positions, 0.2, 0.99, seeds_=(5,))
