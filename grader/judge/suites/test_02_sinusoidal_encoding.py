"""Hidden tests and public checks for notebook 02, sinusoidal positional encodings.

Every reference is computed here in float64 from the formulas of Vaswani et al. (2017, section
3.5), never with the learner's code. The ``_pe`` switches reproduce catalogued mistakes so that
the feedback can name them.
"""
import functools
import math
import re

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.judge.hidden import sinusoidal_encoding as hidden
from grader.judge.proxy import (expect_close, expect_dtype, expect_equal, expect_finite, expect_raises,
                          expect_shape, expect_true, within)
from grader.judge.properties import FLOAT_DTYPES, dtypes, grading, laid_out, layouts, seeds, tensor

EXERCISE_ORDER = ("sinusoidal_encoding", "breakdown_noise", "shiftable_encoding", "offset_matrix",
                  "linear_shift_residual", "relative_attention_projections", "offset_head_share", "best_band",
                  "decoding_inv_freq")

BASE = 10000.0
BASES = st.sampled_from([10000.0, 2.5, 777.7, 10000.5, 1e6])
"""Bases of the property tests: the paper's, small and large ones, and ones that are not whole numbers."""

TRUSTED_PREREQUISITES = {
    "relative_attention_projections": {"offset_matrix": hidden.offset_matrix},
    "offset_head_share": {"relative_attention_projections": hidden.relative_attention_projections,
                          "sinusoidal_encoding": hidden.sinusoidal_encoding},
    "best_band": {"sinusoidal_encoding": hidden.sinusoidal_encoding},
}
"""Exercises judged with the trusted version of the earlier ones they call (grader.judge.proxy): one
mistake costs once."""


def _pe(num_positions, d_model, base=BASE, *, swap=False, half_split=False, exponent="2i/d",
        first_position=0):
    """Reference encoding in float64, with switches that reproduce catalogued mistakes."""
    pos = torch.arange(first_position, first_position + num_positions, dtype=torch.float64)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float64)
    # 2i/(d-2) is 0/0 = NaN at d_model = 2, as the mistake computes it.
    power = {"2i/d": 2 * i / d_model, "i/d": i / d_model, "2i/(d-2)": 2 * i / (d_model - 2),
             "-2i/d": -2 * i / d_model}[exponent]
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
        "frequencies base^(+2i/d_model) instead of base^(-2i/d_model) (the sign of the exponent)":
            _pe(num_positions, d_model, base, exponent="-2i/d"),
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
                     _pe(num_positions, d_model, base, exponent="2i/(d-2)"),
                     _pe(num_positions, d_model, base, exponent="-2i/d")],
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


# The defining property (DESIGN.md: a core mistake costs at least half): the layout, the exponent and
# the first position are what make the table the paper's, so the public check that sees all three
# weighs more than half of the exercise. A core mistake fails it (8 of 15 points) and, at most, the
# one hidden test that owns its property (the first position: 9 of 15).
@pytest.mark.exercise("sinusoidal_encoding", points=8, public=True)
def test_encoding_matches_the_formula(student):
    """sinusoidal_encoding(10, 8): sin, cos of pos * 10000^(-2i/8) in columns 2i, 2i+1, pos from 0."""
    got = student.sinusoidal_encoding(10, 8)
    expect_shape(got, (10, 8), what="sinusoidal_encoding(10, 8)")
    _expect_encoding(got, 10, 8, what="sinusoidal_encoding(10, 8)", owned_elsewhere=())


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


# -- breakdown_noise ----------------------------------------------------------------------------
# Codes whose breakdown noise is known by construction, so the grader needs no simulation of its
# own. Nearest-clean-row decoding of the +-c code of b bits (all 2^b sign patterns) reads each
# coordinate's sign on its own: a position comes back exactly with probability Phi(c/sigma)^b.
# For L points spaced delta apart on a line, only the noise along the line matters: an inner
# point comes back if that noise stays within delta/2 (probability 2 Phi(delta / 2 sigma) - 1), an
# end point if it does not cross towards its one neighbour (Phi(delta / 2 sigma)). A grid of
# such lines in orthogonal directions decodes line by line, so the probabilities multiply.
# Rotations, added offsets, zero columns and a shuffled row order change none of this.
def _phi(x):
    return float(torch.special.ndtr(torch.tensor(x, dtype=torch.float64)))


def _bits_fraction(sigma, num_bits, amplitude=1.0):
    return _phi(amplitude / sigma) ** num_bits


def _line_fraction(sigma, num_points, spacing):
    p = _phi(spacing / (2 * sigma))
    return ((num_points - 2) * (2 * p - 1) + 2 * p) / num_points


def _solve_sigma(fraction, accuracy):
    """The sigma at which the decreasing function fraction(sigma) equals accuracy (bisection in log sigma)."""
    lo, hi = 1e-4, 1e4
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if fraction(mid) > accuracy else (lo, mid)
    return math.sqrt(lo * hi)


def _bits_breakdown(num_bits, accuracy, amplitude=1.0):
    """The exact breakdown noise of the +-amplitude code of num_bits bits."""
    return _solve_sigma(lambda s: _bits_fraction(s, num_bits, amplitude), accuracy)


def _line_breakdown(num_points, spacing, accuracy):
    """The exact breakdown noise of num_points points spaced apart on a line."""
    return _solve_sigma(lambda s: _line_fraction(s, num_points, spacing), accuracy)


def _grid_breakdown(shape, spacings, accuracy):
    """The exact breakdown noise of a grid of lines of shape[j] points spaced spacings[j] apart."""
    return _solve_sigma(lambda s: math.prod(_line_fraction(s, n, d) for n, d in zip(shape, spacings)), accuracy)


def _orthogonal(seed, d):
    q, r = torch.linalg.qr(tensor(seed, d, d))
    return q * torch.sign(torch.diagonal(r))


def _bit_code(num_bits, amplitude=1.0):
    """The +-amplitude code of num_bits bits: all 2^num_bits sign patterns, binary counting order."""
    pos = torch.arange(2 ** num_bits)[:, None]
    return amplitude * (2.0 * ((pos >> torch.arange(num_bits)) & 1).double() - 1.0)


def _disguised(table, seed, width):
    """table (P, d) with zero columns up to width, turned by a random rotation, moved by a random
    offset and its rows shuffled: the same code for nearest-row decoding."""
    gen = torch.Generator().manual_seed(seed)
    padded = torch.cat([table, torch.zeros(len(table), width - table.shape[1], dtype=torch.float64)], dim=1)
    moved = padded @ _orthogonal(seed, width).T + tensor(seed + 1, width)
    return moved[torch.randperm(len(table), generator=gen)]


def _line_code(num_points, spacing, width, seed):
    direction = tensor(seed, width)
    direction = direction / direction.norm()
    return torch.arange(num_points, dtype=torch.float64)[:, None] * spacing * direction + tensor(seed + 1, width)


# A sound protocol (enough noise draws for a few thousand decodings per noise level, then a
# bisection, a fine grid or an interpolation in sigma) lands within 1-2% of the exact breakdown
# where the fraction falls steeply, and within about 4% where it falls slowly (an accuracy close
# to 1/P: the property test keeps a quarter of the way above it). 8% leaves room for any of them
# and still rejects a noise level off by sqrt(d), a decoder that is not the nearest row, or half
# the smallest gap between rows (18% off on the 3-bit code), all catalogued.
RTOL_BREAKDOWN = 0.08


def _expect_breakdown(student, table, accuracy, truth, what):
    got = student.breakdown_noise(table, accuracy)
    expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
    expect_finite(got, what)
    expect_true(got > 0, f"{what} = {got!r}: the noise level should be a positive number")
    expect_true(within(got, truth, rtol=RTOL_BREAKDOWN, what=what),
                f"{what} = {got:.4g}, which is off by more than 8% from the noise level at which this code "
                f"(built with a known breakdown) decodes {accuracy:g} of its positions exactly")


@pytest.mark.exercise("breakdown_noise", points=2, public=True)
def test_breakdown_of_a_three_bit_code(student):
    """The +-1 code of 3 bits (8 positions): the noise level at which half the positions decode."""
    student.may_modify_arguments = True  # a hidden test owns leaving the table unchanged
    truth = _bits_breakdown(3, 0.5)
    _expect_breakdown(student, _bit_code(3), 0.5, truth, "breakdown_noise(<the +-1 code of 3 bits>, 0.5)")


@pytest.mark.exercise("breakdown_noise", points=2)
def test_breakdown_of_a_disguised_bit_code(student):
    """A +-0.7 code of 5 bits, rows shuffled, padded to width 7, rotated and moved: accuracy 0.5."""
    student.may_modify_arguments = True
    truth = _bits_breakdown(5, 0.5, 0.7)
    _expect_breakdown(student, _disguised(_bit_code(5, 0.7), 301, 7), 0.5, truth,
                      "breakdown_noise(<a +-0.7 code of 5 bits, turned and moved in 7 dimensions>, 0.5)")


@pytest.mark.exercise("breakdown_noise", points=2)
def test_breakdown_of_points_on_a_line(student):
    """16 positions spaced 0.8 apart on a line in 6 dimensions (rows of different norms): accuracy 0.5."""
    student.may_modify_arguments = True
    truth = _line_breakdown(16, 0.8, 0.5)
    _expect_breakdown(student, _line_code(16, 0.8, 6, 302), 0.5, truth,
                      "breakdown_noise(<16 points 0.8 apart on a line>, 0.5)")


@pytest.mark.exercise("breakdown_noise", points=2)
def test_breakdown_of_a_grid(student):
    """A 5 x 4 grid (spacings 1.0 and 0.6), turned in 4 dimensions: accuracy 0.7."""
    student.may_modify_arguments = True
    a, b = torch.meshgrid(torch.arange(5, dtype=torch.float64), torch.arange(4, dtype=torch.float64), indexing="ij")
    grid = torch.stack([1.0 * a.flatten(), 0.6 * b.flatten()], dim=1)              # (20, 2)
    truth = _grid_breakdown((5, 4), (1.0, 0.6), 0.7)
    _expect_breakdown(student, _disguised(grid, 303, 4), 0.7, truth, "breakdown_noise(<a 5 x 4 grid>, 0.7)")


@pytest.mark.exercise("breakdown_noise", points=1)
def test_breakdown_at_a_high_accuracy(student):
    """The +-1 code of 4 bits, accuracy 0.95: where the first errors appear."""
    student.may_modify_arguments = True
    truth = _bits_breakdown(4, 0.95)
    _expect_breakdown(student, _bit_code(4), 0.95, truth, "breakdown_noise(<the +-1 code of 4 bits>, 0.95)")


@pytest.mark.exercise("breakdown_noise", points=2)
@grading(max_examples=6)
@given(num_points=st.integers(3, 24), spacing=st.floats(0.2, 3.0), width=st.integers(1, 5),
       level=st.floats(0.25, 0.85), dtype=dtypes("float32", "float64"),
       layout=layouts("contiguous", "transposed", "strided"), seed=seeds())
def test_breakdown_over_its_inputs(student, num_points, spacing, width, level, dtype, layout, seed):
    """Points on a line: any number, spacing, width, accuracy, float32 or float64 and layout; the table is left unchanged."""
    accuracy = 1 / num_points + level * (1 - 1 / num_points)       # strictly between 1/P and 1
    table = _line_code(num_points, spacing, width, seed % 10_000).to(FLOAT_DTYPES[dtype])
    truth = _line_breakdown(num_points, spacing, accuracy)
    _expect_breakdown(student, laid_out(table, layout), accuracy, truth,
                      f"breakdown_noise(<{num_points} points {spacing:.3g} apart on a line in {width} dimensions>, "
                      f"{accuracy:.3g})")


@pytest.mark.exercise("breakdown_noise", points=1)
def test_breakdown_rejects_bad_inputs(student):
    """A table that is not 2-D or has one row, and an accuracy outside (1/P, 1), are rejected with ValueError."""
    student.may_modify_arguments = True
    code = _bit_code(2)                                                         # 4 positions
    for args, what in (((code, 1.0), "accuracy 1"), ((code, 0.0), "accuracy 0"), ((code, 1.5), "accuracy 1.5"),
                       ((code, 0.2), "accuracy 0.2 <= 1/4"), ((code[:, 0], 0.5), "a 1-D table"),
                       ((code[:1], 0.5), "one row"), ((code.reshape(2, 2, 2), 0.5), "a 3-D table")):
        expect_raises(ValueError, student.breakdown_noise, *args, what=f"breakdown_noise with {what}")


# -- shiftable_encoding -------------------------------------------------------------------------
SHIFT_WINDOW = 256
"""The grader fits each offset's map on positions 0..255."""
DISTINCT_POSITIONS = 1024
"""Positions 0..1023 must be told apart."""
SHIFT_RTOL = 1e-4
"""Largest relative residual of a fitted map at positions the fit never saw."""
BOUND_RATIO = 2.0
"""No position up to |pos| = 10^6 may get a vector longer than twice the longest of positions 0..1023."""
FAR_POSITIONS = torch.linspace(-1e6, 1e6, 401, dtype=torch.float64).round().long()
"""Where boundedness is checked: 401 positions from -10^6 to 10^6."""


def _encode(student, positions):
    """The learner's encoding of positions (int64), checked for shape and finiteness, as float64."""
    got = student.shiftable_encoding(positions)
    expect_true(isinstance(got, torch.Tensor) and got.is_floating_point(),
                f"shiftable_encoding should return a float tensor, not {type(got).__name__}")
    expect_shape(got, (len(positions), 8), what=f"shiftable_encoding(<{len(positions)} positions>)")
    got = got.double()
    expect_true(bool(torch.isfinite(got).all()), "shiftable_encoding returned non-finite values")
    return got


def _min_distance(rows):
    """Smallest distance between two different rows, after scaling to mean square 1 per coordinate."""
    rows = rows / rows.pow(2).mean().sqrt().clamp_min(1e-300)
    dist = torch.cdist(rows, rows)
    dist.fill_diagonal_(float("inf"))
    return dist.min().item()


def _shift_score(student, offsets, starts):
    """Largest relative residual, at positions start .. start + 63 for each start, of the least-squares
    map fitted on positions 0..255 to move the encoding by each offset."""
    window = torch.arange(SHIFT_WINDOW)
    held_out = torch.cat([s + torch.arange(64) for s in starts])
    needed = torch.cat([window] + [held_out + k for k in (0, *offsets)])
    codes = _encode(student, needed)
    table = dict(zip(needed.tolist(), range(len(needed))))

    def rows(positions):
        return codes[[table[p] for p in positions.tolist()]]

    worst = 0.0
    for k in offsets:
        src = window[(window + k >= 0) & (window + k < SHIFT_WINDOW)]
        fit = torch.linalg.lstsq(rows(src), rows(src + k), rcond=1e-12, driver="gelsd").solution   # (8, 8): M_k
        target = rows(held_out + k)
        worst = max(worst, ((target - rows(held_out) @ fit).norm() / target.norm().clamp_min(1e-300)).item())
    return worst


def _expect_tier(student, min_distance, what):
    """Bounded, one fitted map per offset that holds far away, and positions 0..1023 at least
    min_distance apart (the feedback prints each measurement and its threshold)."""
    near = _encode(student, torch.arange(DISTINCT_POSITIONS))
    far = _encode(student, FAR_POSITIONS)
    ratio = (far.norm(dim=1).max() / near.norm(dim=1).max().clamp_min(1e-300)).item()
    shift = _shift_score(student, (1, 7, -5, 100), (100_000, -5_000, 987_654))
    distance = _min_distance(near)
    expect_true(ratio <= BOUND_RATIO and shift <= SHIFT_RTOL and distance >= min_distance,
                f"{what}: longest vector up to |pos| = 10^6 over the longest of positions 0..1023 {ratio:.3g} "
                f"(at most {BOUND_RATIO}); residual of the fitted shift maps far from where they were fitted "
                f"{shift:.2g} (at most {SHIFT_RTOL:g}); smallest distance between positions 0..1023 {distance:.4f} "
                f"(at least {min_distance})")


@pytest.mark.exercise("shiftable_encoding", points=1, public=True)
def test_shiftable_encoding_tells_positions_apart(student):
    """Positions 0..255: 8 finite coordinates each, no two closer than 0.05 (at unit mean square)."""
    distance = _min_distance(_encode(student, torch.arange(256)))
    expect_true(distance >= 0.05, f"the smallest distance between the vectors of positions 0..255 is "
                                  f"{distance:.4f} (at least 0.05)")


@pytest.mark.exercise("shiftable_encoding", points=1)
def test_shiftable_encoding_stays_bounded(student):
    """Bounded: no position up to |pos| = 10^6 gets a vector longer than twice those of positions 0..1023 (which stay apart)."""
    near = _encode(student, torch.arange(DISTINCT_POSITIONS))
    far = _encode(student, FAR_POSITIONS)
    ratio = (far.norm(dim=1).max() / near.norm(dim=1).max().clamp_min(1e-300)).item()
    distance = _min_distance(near)
    expect_true(ratio <= BOUND_RATIO and distance >= 0.05,
                f"longest vector up to |pos| = 10^6 over the longest of positions 0..1023: {ratio:.3g} "
                f"(at most {BOUND_RATIO}); smallest distance between positions 0..1023: {distance:.4f} (at least 0.05)")


@pytest.mark.exercise("shiftable_encoding", points=3)
@grading(max_examples=6)
@given(offset=st.one_of(st.integers(-200, -1), st.integers(1, 200)),
       start=st.one_of(st.integers(-1_000_000, -300), st.integers(500, 1_000_000)))
def test_shiftable_encoding_has_one_map_per_offset(student, offset, start):
    """Bounded, and the map fitted on positions 0..255 moves positions it never saw by the offset (residual <= 1e-4)."""
    near = _encode(student, torch.arange(DISTINCT_POSITIONS))
    far = _encode(student, FAR_POSITIONS)
    ratio = (far.norm(dim=1).max() / near.norm(dim=1).max().clamp_min(1e-300)).item()
    shift = _shift_score(student, (offset,), (start,))
    distance = _min_distance(near)
    expect_true(ratio <= BOUND_RATIO and distance >= 0.05 and shift <= SHIFT_RTOL,
                f"offset {offset}: the map fitted on positions 0..255 leaves a relative residual of {shift:.2g} at "
                f"positions {start}..{start + 63} (at most {SHIFT_RTOL:g}); longest vector over those of "
                f"positions 0..1023 {ratio:.3g} (at most {BOUND_RATIO}); smallest distance between positions "
                f"0..1023 {distance:.4f} (at least 0.05)")


# Thresholds on the smallest distance between positions 0..1023 (at unit mean square), for
# encodings that pass the shift test. The notebook's encoding at d_model = 8 (the paper's ladder
# 1, 0.1, 0.01, 0.001) measures 0.913 and the 4 fastest pairs of the d_model = 64 encoding 0.365:
# below both thresholds. Geometric ladders placed for 1024 positions reach 1.0 to 1.29 (from 2.7
# down to 6/1024: 1.289); random searches over four frequencies find 1.47 and 1.61.
@pytest.mark.exercise("shiftable_encoding", points=2)
def test_shiftable_encoding_separates_positions(student):
    """One map per offset, bounded, and positions 0..1023 at least 1.0 apart: the middle threshold."""
    _expect_tier(student, 1.0, "middle threshold")


@pytest.mark.exercise("shiftable_encoding", points=3)
def test_shiftable_encoding_separates_positions_widely(student):
    """One map per offset, bounded, and positions 0..1023 at least 1.2 apart: the top threshold."""
    _expect_tier(student, 1.2, "top threshold")


# -- offset_matrix ------------------------------------------------------------------------------
def _offset_matrix(k, d_model, base=BASE, *, transpose=False, no_frequency=False, half_split=False,
                   exponent="2i/d"):
    """M_k in float64, with PE[pos + k] = PE[pos] @ M_k for rows PE: one block R(k omega_i) =
    [[cos, -sin], [sin, cos]] per pair; the switches reproduce catalogued mistakes."""
    i = torch.arange(d_model // 2, dtype=torch.float64)
    power = {"2i/d": 2 * i / d_model, "i/d": i / d_model}[exponent]
    angle = k * (torch.ones_like(i) if no_frequency else base ** -power)
    cos, sin = torch.cos(angle), torch.sin(angle)
    if transpose:
        sin = -sin
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    a = torch.arange(d_model // 2) if half_split else 2 * torch.arange(d_model // 2)
    b = a + d_model // 2 if half_split else a + 1
    m[a, a], m[a, b], m[b, a], m[b, b] = cos, -sin, sin, cos
    return m


def _offset_mistakes(k, d_model, base=BASE):
    return {
        "blocks transposed ([[cos, sin], [-sin, cos]] moves the rows by -k)":
            _offset_matrix(k, d_model, base, transpose=True),
        "angle k instead of k * omega_i (frequency missing)": _offset_matrix(k, d_model, base, no_frequency=True),
        "blocks for the half-split layout (pair i at columns i and i + d/2), not interleaved":
            _offset_matrix(k, d_model, base, half_split=True),
        "exponent i/d_model instead of 2i/d_model": _offset_matrix(k, d_model, base, exponent="i/d"),
    }


# Entries are cosines and sines in [-1, 1]; float32 rounding is 6e-8.
ATOL_OFFSET = 1e-6


# The defining property (DESIGN.md: a core mistake costs at least half): PE[pos + k] = PE[pos] M_k
# needs the blocks' sign, layout and frequencies right, so this check weighs half of the exercise.
@pytest.mark.exercise("offset_matrix", points=6, public=True)
def test_offset_matrix_blocks(student):
    """offset_matrix(3, 8): block diagonal, blocks [[cos 3w_i, -sin 3w_i], [sin 3w_i, cos 3w_i]]."""
    got = student.offset_matrix(3, 8)
    expect_shape(got, (8, 8), what="offset_matrix(3, 8)")
    expect_close(got, _offset_matrix(3, 8), atol=ATOL_OFFSET, rtol=0, what="offset_matrix(3, 8)",
                 mistakes=_offset_mistakes(3, 8))


def _offset_float32_angles(k, d_model, base=BASE):
    omega = (base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)).float()
    angle = (k * omega).double()                                   # rounded the float32 way
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    e = torch.arange(0, d_model, 2)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = angle.cos(), -angle.sin(), angle.sin(), angle.cos()
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
    """offset_matrix(-7, 12) undoes offset_matrix(7, 12): a negative offset moves backwards."""
    # This test owns the sign of the offset; the block formula belongs to the public test. Every
    # catalogued block mistake is still a rotation by some angle per pair, so its M_-7 is its M_7
    # transposed and undoes it: those pass here. An offset read as |k| gives M_7 twice, which moves
    # forwards by 14 instead of undoing the move.
    back, forth = (torch.as_tensor(student.offset_matrix(k, 12)).double() for k in (-7, 7))
    expect_shape(back, (12, 12), what="offset_matrix(-7, 12)")
    expect_close(back @ forth, torch.eye(12, dtype=torch.float64), atol=1e-5, rtol=0,
                 what="offset_matrix(-7, 12) @ offset_matrix(7, 12) (moving 7 forwards, then 7 back)",
                 mistakes={"the offset taken as |k| (a negative offset moves forwards)": _offset_matrix(14, 12)})
    expect_close(back, forth.T, atol=1e-6, rtol=0, what="offset_matrix(-7, 12) against offset_matrix(7, 12).T")


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
    """The relative residual of a random (30, 4) table at k = 2 and of 6 sines at k = 3."""
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
    """W_q W_k^T = M_{-k} / tau: then PE[m] W_q W_k^T PE[n]^T = PE[m - k] . PE[n] / tau."""
    return _offset_matrix(-k, d_model, base) / temperature


def _head_mistakes(k, d_model, temperature, base=BASE):
    m = _offset_matrix(-k, d_model, base)                          # M_{-k}: PE[m] M_{-k} = PE[m - k]
    return {
        "attends k positions ahead instead of back (M_k where M_{-k} belongs)": m.T / temperature,
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
    m = _offset_matrix(-k, d_model, base)
    return {
        "scale": [m * temperature, m / temperature ** 2, m, m / (temperature * math.sqrt(d_model))],
        "key": [m.T / temperature, torch.eye(d_model, dtype=torch.float64) / temperature],
        "base": [_head_product(k, d_model, temperature)],
    }


def _head_accepted(k, d_model, temperature, base=BASE, owner=None):
    return [wrong for name, products in _head_owned(k, d_model, temperature, base).items() if name != owner
            for wrong in products]


# Entries of M_{-k} / tau are at most 1/tau; float32 rounding is ~6e-8 relative, hence 1e-5 absolute.
ATOL_HEAD = 1e-5


@pytest.mark.exercise("relative_attention_projections", points=2, public=True)
def test_head_product_is_the_offset_map(student):
    """k = 3, d_model = 8, tau = 0.5: w_q @ w_k.T scores PE[m], PE[n] as PE[m-3] . PE[n] / tau."""
    w_q, w_k = student.relative_attention_projections(3, 8, temperature=0.5)
    expect_shape(w_q, (8, 8), what="w_q")
    expect_shape(w_k, (8, 8), what="w_k")
    expect_close(_bilinear(w_q, w_k), _head_product(3, 8, 0.5), atol=ATOL_HEAD, rtol=0, what="w_q @ w_k.T",
                 mistakes=_head_mistakes(3, 8, 0.5), accepted=_head_accepted(3, 8, 0.5, owner="scale"))


# The defining property (DESIGN.md: a core mistake costs at least half): the head attends to m - k.
# A mistake in which key it picks (the sign of the offset, the map on both sides) fails this test
# and the public product check: 6 of 11 points.
@pytest.mark.exercise("relative_attention_projections", points=4)
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
    """Any offset sign, d_model (2 included), temperature and base (not only whole numbers): w_q @ w_k.T = M_{-k} / tau."""
    w_q, w_k = student.relative_attention_projections(k, d_model, temperature=temperature, base=base)
    for name, w in (("w_q", w_q), ("w_k", w_k)):
        expect_shape(w, (d_model, d_model), what=name)
    # Entries of the product are at most 1/tau; float32 factors (relative rounding 6e-8, angles up
    # to 50 rad) put it within ~3e-6/tau of the exact M_{-k} / tau for any split, hence 1e-5/tau.
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


# The defining property (DESIGN.md: a core mistake costs at least half): the protocol this check
# owns (softmax over the keys, on tokens plus positions) weighs half of the exercise.
@pytest.mark.exercise("offset_head_share", points=4, public=True)
def test_head_share_on_tokens_plus_positions(student):
    """20 positions, d_model = 16, k = 2, tau = 0.5, tokens of std 0.25: the weight on m - 2."""
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


def _band_errors(sigma, num_positions, queries=512):
    """Mean |decoded - true position| of each band, on the grader's own noise draws (computed once
    per arguments: a pure function of them; the named tests' six cases are stored, NAMED_BAND_ERRORS).

    Each draw decodes a random subset of at most ``queries`` positions (against all num_positions
    clean rows): an unbiased estimate of the mean over every position at a quarter of the cost
    for the longest sequences. Enough draws for at least 1024 decodings per band."""
    stored = NAMED_BAND_ERRORS.get((float(sigma), int(num_positions))) if queries == 512 else None
    return dict(stored or _measure_band_errors(float(sigma), int(num_positions), int(queries)))


NAMED_BAND_ERRORS = {
    (0.5, 256): {"fast": 3.13671875, "middle": 8.0244140625, "slow": 101.5048828125, "fast+slow": 33.4140625},
    (1.1, 256): {"fast": 52.2607421875, "middle": 21.7275390625, "slow": 114.103515625, "fast+slow": 78.5068359375},
    (0.4, 512): {"fast": 0.4208984375, "middle": 6.546875, "slow": 140.43359375, "fast+slow": 99.5673828125},
    (0.75, 512): {"fast": 56.0927734375, "middle": 15.40625, "slow": 184.767578125, "fast+slow": 145.572265625},
    (0.25, 2048): {"fast": 0.0048828125, "middle": 4.1103515625, "slow": 128.4775390625, "fast+slow": 233.5087890625},
    (0.55, 2048): {"fast": 128.5673828125, "middle": 12.9296875, "slow": 269.361328125, "fast+slow": 524.412109375},
}
"""{(sigma, num_positions): _measure_band_errors(sigma, num_positions, 512)} of the six named tests below:
means of whole numbers of positions over 1024 or more decodings (exact in float64), stored rather
than measured in every run (a third of a second on a quiet machine);
tests/judge/test_suites.py measures them again."""


@functools.cache
def _measure_band_errors(sigma, num_positions, queries):
    pe = _pe(num_positions, 64)
    found = dict.fromkeys(BANDS, 0.0)
    seeds_ = range(max(2, -(-1024 // min(num_positions, queries))))
    for seed in seeds_:
        gen = torch.Generator().manual_seed(1000 + seed)
        truth = torch.randperm(num_positions, generator=gen)[:queries]
        noisy = pe[truth] + sigma * torch.randn(len(truth), 64, generator=gen, dtype=torch.float64)
        for name, dims in BANDS.items():
            decoded = torch.cdist(noisy[:, dims], pe[:, dims], compute_mode="donot_use_mm_for_euclid_dist").argmin(dim=1)
            found[name] += (decoded - truth).abs().double().mean().item()
    return {name: value / len(seeds_) for name, value in found.items()}


def _expect_band_name(got, what):
    expect_true(isinstance(got, str) and got in BANDS,
                f"{what} should be one of {sorted(BANDS)}, not {got!r}")


@pytest.mark.exercise("best_band", points=1, public=True)
def test_best_band_names_a_band(student):
    """best_band(0.1, 1024) names one of "fast", "middle", "slow" and "fast+slow"."""
    _expect_band_name(student.best_band(0.1, 1024), "best_band(0.1, 1024)")


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


# A band counts if its mean error is within 25% (plus one position) of the best band's: the
# grader's four noise draws and the learner's own draws then agree wherever one band is clearly
# ahead, and near a crossover either band counts.
BAND_RTOL, BAND_ATOL = 0.25, 1.0


def _expect_best_band(student, sigma, num_positions):
    answer = student.best_band(sigma, num_positions)
    got = _band_meant(answer)
    what = f"best_band({sigma:.3g}, {num_positions})"
    expect_true(got is not None, f"{what} = {answer!r} means none of the bands {sorted(BANDS)}")
    errors = _band_errors(sigma, num_positions)
    best = min(errors.values())
    measured = ", ".join(f"{name} {value:.1f}" for name, value in errors.items())
    expect_true(errors[got] <= best * (1 + BAND_RTOL) + BAND_ATOL,
                f"at sigma = {sigma:.3g} over {num_positions} positions the grader measured the mean |error| "
                f"(positions) of each band as {measured}: {got!r} is not within 25% of the best")


# Six cases the notebook prints nothing about, in pairs of one length: below the crossover the
# fast band misses least, above it the middle band does, and the crossover's noise level falls as
# the sequence grows. Measured by the grader: at L = 256, sigma 0.5 fast 3.1 against middle 8.0,
# sigma 1.1 middle 22 against fast 52; at L = 512, sigma 0.4 fast 0.4 against 6.5, sigma 0.75
# middle 15 against fast 56; at L = 2048, sigma 0.25 fast 0.0 against 4.1, sigma 0.55 middle 13
# against fast 129. A constant answer is right on three of them.
@pytest.mark.exercise("best_band", points=1)
def test_best_band_short_sequence_moderate_noise(student):
    """256 positions, sigma = 0.5: the band with the smallest mean error (measured by the grader)."""
    _expect_best_band(student, 0.5, 256)


@pytest.mark.exercise("best_band", points=1)
def test_best_band_short_sequence_high_noise(student):
    """256 positions, sigma = 1.1: the band with the smallest mean error (measured by the grader)."""
    _expect_best_band(student, 1.1, 256)


@pytest.mark.exercise("best_band", points=1)
def test_best_band_medium_sequence_low_noise(student):
    """512 positions, sigma = 0.4: the band with the smallest mean error (measured by the grader)."""
    _expect_best_band(student, 0.4, 512)


@pytest.mark.exercise("best_band", points=1)
def test_best_band_medium_sequence_high_noise(student):
    """512 positions, sigma = 0.75: the band with the smallest mean error (measured by the grader)."""
    _expect_best_band(student, 0.75, 512)


@pytest.mark.exercise("best_band", points=1)
def test_best_band_long_sequence_low_noise(student):
    """2048 positions, sigma = 0.25: the band with the smallest mean error (measured by the grader)."""
    _expect_best_band(student, 0.25, 2048)


@pytest.mark.exercise("best_band", points=1)
def test_best_band_long_sequence_moderate_noise(student):
    """2048 positions, sigma = 0.55: the band with the smallest mean error (measured by the grader)."""
    _expect_best_band(student, 0.55, 2048)


@pytest.mark.exercise("best_band", points=2)
@grading(max_examples=4)
@given(sigma=st.floats(0.05, 1.5), num_positions=st.integers(64, 1024))
def test_best_band_over_its_inputs(student, sigma, num_positions):
    """Any noise level from 0.05 to 1.5 and length from 64 to 1024: within 25% of the best band's mean error."""
    _expect_best_band(student, sigma, num_positions)


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
    """L = 256, sigma = 0.1: at least 0.99 of the positions decoded exactly (feedback: measured)."""
    _expect_decodes(student, 256, 0.1, 0.99, seeds_=(7,))


# Thresholds at L = 1024, three noise draws each (3072 decodings: a standard error near 0.003 at
# these accuracies). What the notebook's own designs measure (sigma 0.1, 0.2, 0.3, 0.4, 0.5):
# the paper's ladder 10000^(-2i/16) 1.000, 0.987, 0.911, 0.729, 0.517; the 8 fastest pairs of
# the d_model = 64 encoding (the fast band of the band experiment) 1.000, 1.000, 0.986, 0.928,
# 0.809; equal steps from 2.9 to 0.25 far less. They reach the middle thresholds at most; the
# top ones (sigma 0.4 and 0.5, and sigma 0.3 at every length) need a design of one's own, as
# the catalogue's correct variants show (a ladder from 2.5 down to 0.1 rad per position: 0.986
# and 0.898; square roots of primes folded below pi: 0.979 and 0.884).
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
    """L = 1024, sigma = 0.4: at least 0.96 of the positions decoded exactly."""
    _expect_decodes(student, 1024, 0.4, 0.96)


@pytest.mark.exercise("decoding_inv_freq", points=2)
def test_design_at_sigma_0_5(student):
    """L = 1024, sigma = 0.5: at least 0.85 of the positions decoded exactly."""
    _expect_decodes(student, 1024, 0.5, 0.85)


@pytest.mark.exercise("decoding_inv_freq", points=2)
@grading(max_examples=8)
@given(num_positions=st.integers(64, 2048))
def test_design_over_lengths(student, num_positions):
    """Any length from 64 to 2048 positions, sigma = 0.3: at least 0.99 decoded exactly."""
    _expect_decodes(student, num_positions, 0.3, 0.99, seeds_=(5,))
