"""Hidden tests and public checks for notebook 05, context extension of RoPE.

Every reference is computed here in float64 from the papers' formulas (Chen et al., 2023, eq. 4;
Peng et al., 2023, eq. 16-18 and 22; the Llama 3.1 reference code), never with the learner's code.
The reference helpers take switches that reproduce catalogued mistakes, so that the feedback can
name them. tests/test_oracle_05_context_extension.py checks the same formulas against Hugging Face
transformers.
"""
import math
import re

import numpy as np
import pytest
import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from grader.judge import expect_close, expect_dtype, expect_equal, expect_raises, expect_shape, expect_true, fail
from grader.properties import FLOAT_DTYPES, dtypes, grading, laid_out, layouts, seeds

# float32 outputs of a float64 formula are within 6e-8 relative of it; inverse frequencies
# computed in float32 (as Hugging Face does) are within ~3e-7. 1e-6 accepts both and rejects
# every catalogued mistake, which all change some entry by more than 1e-3 relative.
RTOL_FREQ = 1e-6
# Llama 3's blend computed in float32 (Hugging Face's code) amplifies rounding by about
# low_freq_factor / (high_freq_factor - low_freq_factor) (up to 20 for the factors drawn here): up to
# 1.1e-5 relative over 4,000 drawn configurations. 5e-5 accepts it; every catalogued mistake is off
# by more than 1e-3.
RTOL_LLAMA3 = 5e-5
# Bases and attention factors are Python floats: float64 arithmetic agrees to ~1e-15; 1e-9 still
# accepts another order of operations (or math.exp/log instead of **).
RTOL_SCALAR = 1e-9


# What the property tests draw: bases and scales that are not whole numbers besides the usual ones,
# head dimensions from the smallest allowed up, original lengths over five orders of magnitude.
def _bases(low=1.5):
    return st.one_of(st.sampled_from([1e4, 5e5]), st.floats(low, 1e6))


def _scales():
    return st.one_of(st.sampled_from([1.0, 2.5, 8.0]), st.floats(1.0, 64.0))


def _head_dims(smallest):
    return st.integers(smallest // 2, 64).map(lambda k: 2 * k)


def _lengths():
    return st.one_of(st.integers(1, 64), st.integers(65, 8192), st.integers(8193, 10**6))


def _theta(d, base):
    return base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)          # (d/2,)


def _ntk_base(base, s, d, exponent="d/(d-2)"):
    power = {"d/(d-2)": lambda: d / (d - 2), "d/(d-1)": lambda: d / (d - 1), "1": lambda: 1.0,
             "(d-2)/d": lambda: (d - 2) / d, "half": lambda: (d / 2) / (d / 2 - 2)}[exponent]()
    return base * s ** power


def _ntk_mistakes(base, s, d):
    mistakes = {
        "exponent d/(d-1) instead of d/(d-2)": _ntk_base(base, s, d, "d/(d-1)"),
        "exponent 1 (base * s) instead of d/(d-2)": _ntk_base(base, s, d, "1"),
        "exponent (d-2)/d instead of d/(d-2)": _ntk_base(base, s, d, "(d-2)/d"),
        "forgot to multiply by the original base": s ** (d / (d - 2)),
    }
    if d > 4:  # with head_dim // 2 = 2 as d, d - 2 = 0
        mistakes["head_dim // 2 used as d in the exponent"] = _ntk_base(base, s, d, "half")
    return mistakes


# -- linear_scaling_inv_freq ----------------------------------------------------------------------
def _pi_mistakes(theta, s):
    return {"multiplied by scale instead of divided": theta * s,
            "divided by scale squared": theta / s ** 2,
            "scale truncated to an integer": theta / int(s),
            "divided by (scale - 1)": theta / (s - 1) if s != 1 else theta}


@pytest.mark.exercise("linear_scaling_inv_freq", points=2, public=True)
def test_pi_divides_every_frequency(student):
    """linear_scaling_inv_freq(theta, 4) is theta / 4 for head_dim 16, base 1e4."""
    theta = _theta(16, 1e4)
    got = student.linear_scaling_inv_freq(theta.float(), 4.0)
    expect_shape(got, (8,), what="linear_scaling_inv_freq(theta, 4)")
    expect_close(got, theta / 4, rtol=RTOL_FREQ, atol=0, what="linear_scaling_inv_freq(theta, 4)",
                 mistakes=_pi_mistakes(theta.float().double(), 4.0))


@pytest.mark.exercise("linear_scaling_inv_freq", points=1, public=True)
def test_pi_returns_float32(student):
    """The result is float32, also for a float64 input."""
    expect_dtype(student.linear_scaling_inv_freq(_theta(8, 1e4), 2.0), torch.float32,
                 what="linear_scaling_inv_freq(float64 theta, 2)")


@pytest.mark.exercise("linear_scaling_inv_freq", points=2)
def test_pi_fractional_scale(student):
    """A fractional scale (2.5) divides exactly by 2.5, for head_dim 64 and base 5e5."""
    theta = _theta(64, 5e5).float().double()
    got = student.linear_scaling_inv_freq(theta.float(), 2.5)
    expect_close(got, theta / 2.5, rtol=RTOL_FREQ, atol=0, what="linear_scaling_inv_freq(theta, 2.5)",
                 mistakes=_pi_mistakes(theta, 2.5))


@pytest.mark.exercise("linear_scaling_inv_freq", points=1)
def test_pi_scale_one_is_identity(student):
    """scale = 1 leaves the frequencies unchanged."""
    theta = _theta(32, 1e4).float()
    expect_close(student.linear_scaling_inv_freq(theta, 1.0), theta, rtol=RTOL_FREQ, atol=0,
                 what="linear_scaling_inv_freq(theta, 1)")


@pytest.mark.exercise("linear_scaling_inv_freq", points=1)
def test_pi_rejects_bad_input(student):
    """scale < 1 and a 2-D inv_freq raise ValueError."""
    expect_raises(ValueError, student.linear_scaling_inv_freq, _theta(8, 1e4).float(), 0.5,
                  what="linear_scaling_inv_freq(theta, 0.5)")
    expect_raises(ValueError, student.linear_scaling_inv_freq, torch.ones(2, 4), 2.0,
                  what="linear_scaling_inv_freq(2-D tensor, 2)")


@pytest.mark.exercise("linear_scaling_inv_freq", points=2)
@grading()
@given(head_dim=st.sampled_from([2, 4, 6, 10, 64, 128]), base=_bases(), scale=_scales(), dtype=dtypes(),
       layout=layouts("contiguous", "strided"))
def test_pi_over_its_inputs(student, head_dim, base, scale, dtype, layout):
    """For any head_dim, base, scale >= 1, input dtype and memory layout: float32 theta / s."""
    theta = _theta(head_dim, base).to(FLOAT_DTYPES[dtype])
    what = f"linear_scaling_inv_freq({dtype} theta of head_dim {head_dim}, base {base!r}, {scale!r})"
    got = student.linear_scaling_inv_freq(laid_out(theta, layout), scale)
    expect_dtype(got, torch.float32, what=what)
    expect_shape(got, (head_dim // 2,), what=what)
    # The reference divides the same (possibly half-precision) input in float64; float32 rounding
    # of the quotient is within 6e-8 relative, dividing in float32 within 1.2e-7. Dividing in
    # float16 or bfloat16 is off by up to 5e-4 or 4e-3: far outside RTOL_FREQ.
    exact = theta.double()
    expect_close(got, exact / scale, rtol=RTOL_FREQ, atol=0, what=what,
                 mistakes={"divided in the input's half precision, then cast to float32":
                           (theta / scale).double(), **_pi_mistakes(exact, scale)})


@pytest.mark.exercise("linear_scaling_inv_freq", points=1)
def test_pi_rejects_scale_below_one(student):
    """scale 0.999 and 0 raise ValueError; scale 1 is allowed."""
    theta = _theta(8, 1e4).float()
    for scale in (0.999, 0.0):
        expect_raises(ValueError, student.linear_scaling_inv_freq, theta, scale,
                      what=f"linear_scaling_inv_freq(theta, {scale})")
    expect_close(student.linear_scaling_inv_freq(theta, 1.0), theta, rtol=RTOL_FREQ, atol=0,
                 what="linear_scaling_inv_freq(theta, 1.0)")


@pytest.mark.exercise("linear_scaling_inv_freq", points=1)
def test_pi_rejects_inv_freq_not_1d(student):
    """A 0-D, a (1, 4) and a (2, 2, 2) inv_freq raise ValueError; a 1-D one of length 1 (head_dim 2) works."""
    for bad in (torch.tensor(0.5), torch.ones(1, 4), torch.ones(2, 2, 2)):
        expect_raises(ValueError, student.linear_scaling_inv_freq, bad, 2.0,
                      what=f"linear_scaling_inv_freq(tensor of shape {tuple(bad.shape)}, 2.0)")
    got = student.linear_scaling_inv_freq(torch.ones(1), 2.0)
    expect_close(got, torch.full((1,), 0.5, dtype=torch.float64), rtol=RTOL_FREQ, atol=0,
                 what="linear_scaling_inv_freq(tensor([1.]), 2.0)")


# -- ntk_aware_base -------------------------------------------------------------------------------
def _expect_float(got, what):
    expect_true(isinstance(got, float) and not isinstance(got, bool),
                f"{what} should return a Python float, not {type(got).__name__}")


@pytest.mark.exercise("ntk_aware_base", points=2, public=True)
def test_ntk_base_formula(student):
    """ntk_aware_base(1e4, 8, 32) = 1e4 * 8^(32/30), returned as a Python float."""
    got = student.ntk_aware_base(1e4, 8.0, 32)
    _expect_float(got, "ntk_aware_base(1e4, 8, 32)")
    expect_close(got, _ntk_base(1e4, 8.0, 32), rtol=RTOL_SCALAR, atol=0, what="ntk_aware_base(1e4, 8, 32)",
                 mistakes=_ntk_mistakes(1e4, 8.0, 32))


@pytest.mark.exercise("ntk_aware_base", points=2)
def test_ntk_base_large_head(student):
    """ntk_aware_base(5e5, 16, 128) = 5e5 * 16^(128/126)."""
    got = student.ntk_aware_base(5e5, 16.0, 128)
    expect_close(got, _ntk_base(5e5, 16.0, 128), rtol=RTOL_SCALAR, atol=0, what="ntk_aware_base(5e5, 16, 128)",
                 mistakes=_ntk_mistakes(5e5, 16.0, 128))


@pytest.mark.exercise("ntk_aware_base", points=1)
def test_ntk_lowest_frequency_is_interpolated(student):
    """With the new base, the lowest frequency is exactly theta_last / s and the highest is unchanged."""
    d, base, s = 64, 1e4, 4.0
    new_base = student.ntk_aware_base(base, s, d)
    lowest = float(new_base) ** (-(d - 2) / d)
    expect_close(lowest, base ** (-(d - 2) / d) / s, rtol=RTOL_SCALAR, atol=0,
                 what="new_base^(-(d-2)/d), the lowest frequency",
                 mistakes={"exponent 1 (base * s): the lowest frequency is divided by s^((d-2)/d), not s":
                           (base * s) ** (-(d - 2) / d)})


@pytest.mark.exercise("ntk_aware_base", points=1)
def test_ntk_scale_one(student):
    """scale = 1 gives back the original base."""
    expect_close(student.ntk_aware_base(1e4, 1.0, 64), 1e4, rtol=RTOL_SCALAR, atol=0,
                 what="ntk_aware_base(1e4, 1, 64)")


@pytest.mark.exercise("ntk_aware_base", points=1)
def test_ntk_rejects_bad_input(student):
    """Odd head_dim, head_dim 2 (d - 2 = 0) and scale < 1 raise ValueError."""
    expect_raises(ValueError, student.ntk_aware_base, 1e4, 2.0, 31, what="ntk_aware_base(1e4, 2, 31)")
    expect_raises(ValueError, student.ntk_aware_base, 1e4, 2.0, 2, what="ntk_aware_base(1e4, 2, 2)")
    expect_raises(ValueError, student.ntk_aware_base, 1e4, 0.5, 32, what="ntk_aware_base(1e4, 0.5, 32)")


@pytest.mark.exercise("ntk_aware_base", points=2)
@grading()
@given(head_dim=_head_dims(4), base=_bases(low=0.01), scale=_scales())
def test_ntk_over_its_inputs(student, head_dim, base, scale):
    """For any even head_dim >= 4, base > 0 and scale >= 1: the Python float b * s^(d / (d - 2))."""
    what = f"ntk_aware_base({base!r}, {scale!r}, {head_dim})"
    got = student.ntk_aware_base(base, scale, head_dim)
    _expect_float(got, what)
    expect_close(got, _ntk_base(base, scale, head_dim), rtol=RTOL_SCALAR, atol=0, what=what,
                 mistakes=_ntk_mistakes(base, scale, head_dim))


@pytest.mark.exercise("ntk_aware_base", points=1)
def test_ntk_rejects_bad_head_dim(student):
    """head_dim 31, 2, 0 and -4 raise ValueError; head_dim 4 (the smallest) gives b * s^2."""
    for head_dim in (31, 2, 0, -4):
        expect_raises(ValueError, student.ntk_aware_base, 1e4, 2.0, head_dim,
                      what=f"ntk_aware_base(1e4, 2, {head_dim})")
    expect_close(student.ntk_aware_base(1e4, 2.0, 4), 4e4, rtol=RTOL_SCALAR, atol=0, what="ntk_aware_base(1e4, 2, 4)")


@pytest.mark.exercise("ntk_aware_base", points=1)
def test_ntk_rejects_bad_base(student):
    """base 0 and -1e4 raise ValueError; a base below 1 (0.5) is allowed."""
    for base in (0.0, -1e4):
        expect_raises(ValueError, student.ntk_aware_base, base, 2.0, 32, what=f"ntk_aware_base({base}, 2, 32)")
    expect_close(student.ntk_aware_base(0.5, 2.0, 8), _ntk_base(0.5, 2.0, 8), rtol=RTOL_SCALAR, atol=0,
                 what="ntk_aware_base(0.5, 2, 8)")


@pytest.mark.exercise("ntk_aware_base", points=1)
def test_ntk_rejects_scale_below_one(student):
    """scale 0.999 and 0 raise ValueError; scale 1 gives the base back."""
    for scale in (0.999, 0.0):
        expect_raises(ValueError, student.ntk_aware_base, 1e4, scale, 32, what=f"ntk_aware_base(1e4, {scale}, 32)")
    expect_close(student.ntk_aware_base(1e4, 1.0, 32), 1e4, rtol=RTOL_SCALAR, atol=0, what="ntk_aware_base(1e4, 1, 32)")


# -- dynamic_ntk_base -----------------------------------------------------------------------------
def _dynamic(base, s, d, seq_len, orig, *, no_max=False, inverted=False, no_shift=False,
             exponent="d/(d-2)", static=False, no_factor=False):
    length = seq_len if no_max else max(seq_len, orig)
    if static:
        ratio = s
    elif inverted:
        ratio = s * orig / length - (s - 1)
    elif no_shift:
        ratio = s * length / orig
    elif no_factor:
        ratio = length / orig
    else:
        ratio = s * length / orig - (s - 1)
    power = {"d/(d-2)": d / (d - 2), "d/(d-1)": d / (d - 1)}[exponent]
    return base * ratio ** power


def _dynamic_mistakes(base, s, d, seq_len, orig):
    return {
        "L = seq_len without max(seq_len, L_orig) (the base shrinks below L_orig)":
            _dynamic(base, s, d, seq_len, orig, no_max=True),
        "ratio inverted (L_orig / L instead of L / L_orig)": _dynamic(base, s, d, seq_len, orig, inverted=True),
        "missing the '- (s - 1)' term": _dynamic(base, s, d, seq_len, orig, no_shift=True),
        "exponent d/(d-1) instead of d/(d-2)": _dynamic(base, s, d, seq_len, orig, exponent="d/(d-1)"),
        "seq_len ignored (static NTK-aware base)": _dynamic(base, s, d, seq_len, orig, static=True),
        "scale ignored (L / L_orig alone)": _dynamic(base, s, d, seq_len, orig, no_factor=True),
    }


@pytest.mark.exercise("dynamic_ntk_base", points=2, public=True)
def test_dynamic_base_past_original_length(student):
    """dynamic_ntk_base(1e4, 2, 32, 1024, 128) = 1e4 * (2*1024/128 - 1)^(32/30)."""
    got = student.dynamic_ntk_base(1e4, 2.0, 32, 1024, 128)
    _expect_float(got, "dynamic_ntk_base(1e4, 2, 32, 1024, 128)")
    expect_close(got, _dynamic(1e4, 2.0, 32, 1024, 128), rtol=RTOL_SCALAR, atol=0,
                 what="dynamic_ntk_base(1e4, 2, 32, 1024, 128)", mistakes=_dynamic_mistakes(1e4, 2.0, 32, 1024, 128))


@pytest.mark.exercise("dynamic_ntk_base", points=1, public=True)
def test_dynamic_base_within_original_length(student):
    """Up to L_orig the base is unchanged: dynamic_ntk_base(1e4, 2, 32, 100, 128) = 1e4."""
    got = student.dynamic_ntk_base(1e4, 2.0, 32, 100, 128)
    expect_close(got, 1e4, rtol=RTOL_SCALAR, atol=0, what="dynamic_ntk_base(1e4, 2, 32, 100, 128)",
                 mistakes=_dynamic_mistakes(1e4, 2.0, 32, 100, 128))


@pytest.mark.exercise("dynamic_ntk_base", points=2)
def test_dynamic_base_several_lengths(student):
    """For head_dim 128, base 5e5, s 4, L_orig 4096, every seq_len in (1, 4096, 6000, 16384, 50000) matches."""
    for seq_len in (1, 4096, 6000, 16384, 50000):
        got = student.dynamic_ntk_base(5e5, 4.0, 128, seq_len, 4096)
        expect_close(got, _dynamic(5e5, 4.0, 128, seq_len, 4096), rtol=RTOL_SCALAR, atol=0,
                     what=f"dynamic_ntk_base(5e5, 4, 128, {seq_len}, 4096)",
                     mistakes=_dynamic_mistakes(5e5, 4.0, 128, seq_len, 4096))


@pytest.mark.exercise("dynamic_ntk_base", points=1)
def test_dynamic_with_scale_one_is_ntk_for_the_current_ratio(student):
    """With s = 1 the dynamic base at length L equals the NTK-aware base for s = L / L_orig."""
    got = student.dynamic_ntk_base(1e4, 1.0, 64, 768, 256)
    expect_close(got, _ntk_base(1e4, 3.0, 64), rtol=RTOL_SCALAR, atol=0,
                 what="dynamic_ntk_base(1e4, 1, 64, 768, 256)", mistakes=_dynamic_mistakes(1e4, 1.0, 64, 768, 256))


@pytest.mark.exercise("dynamic_ntk_base", points=1)
def test_dynamic_rejects_bad_input(student):
    """Odd head_dim, scale < 1 and seq_len 0 raise ValueError."""
    expect_raises(ValueError, student.dynamic_ntk_base, 1e4, 2.0, 33, 512, 128, what="dynamic_ntk_base(..., head_dim=33, ...)")
    expect_raises(ValueError, student.dynamic_ntk_base, 1e4, 0.5, 32, 512, 128, what="dynamic_ntk_base(1e4, 0.5, ...)")
    expect_raises(ValueError, student.dynamic_ntk_base, 1e4, 2.0, 32, 0, 128, what="dynamic_ntk_base(..., seq_len=0, 128)")


@pytest.mark.exercise("dynamic_ntk_base", points=2)
@grading()
@given(head_dim=_head_dims(4), base=_bases(low=0.01), scale=_scales(), orig=_lengths(),
       where=st.sampled_from(["below", "at", "above"]), offset=st.integers(1, 10**6))
@example(head_dim=4, base=1e4, scale=1.0, orig=1, where="above", offset=1)
def test_dynamic_over_its_inputs(student, head_dim, base, scale, orig, where, offset):
    """For any head_dim, base, scale and L_orig, with seq_len below, at or above L_orig: the float64 formula."""
    seq_len = {"below": max(1, orig - offset), "at": orig, "above": orig + offset}[where]
    what = f"dynamic_ntk_base({base!r}, {scale!r}, {head_dim}, {seq_len}, {orig})"
    got = student.dynamic_ntk_base(base, scale, head_dim, seq_len, orig)
    _expect_float(got, what)
    # The ratio s L / L_orig - (s - 1) is >= 1, so no order of operations loses more than ~1e-14.
    expect_close(got, _dynamic(base, scale, head_dim, seq_len, orig), rtol=RTOL_SCALAR, atol=0, what=what,
                 mistakes=_dynamic_mistakes(base, scale, head_dim, seq_len, orig))


@pytest.mark.exercise("dynamic_ntk_base", points=1)
def test_dynamic_rejects_bad_head_dim(student):
    """head_dim 33, 2 and 0 raise ValueError; head_dim 4 works."""
    for head_dim in (33, 2, 0):
        expect_raises(ValueError, student.dynamic_ntk_base, 1e4, 2.0, head_dim, 512, 128,
                      what=f"dynamic_ntk_base(1e4, 2, {head_dim}, 512, 128)")
    expect_close(student.dynamic_ntk_base(1e4, 2.0, 4, 512, 128), _dynamic(1e4, 2.0, 4, 512, 128),
                 rtol=RTOL_SCALAR, atol=0, what="dynamic_ntk_base(1e4, 2, 4, 512, 128)")


@pytest.mark.exercise("dynamic_ntk_base", points=1)
def test_dynamic_rejects_bad_base(student):
    """base 0 and -1 raise ValueError; a base below 1 (0.5) is allowed."""
    for base in (0.0, -1.0):
        expect_raises(ValueError, student.dynamic_ntk_base, base, 2.0, 32, 512, 128,
                      what=f"dynamic_ntk_base({base}, 2, 32, 512, 128)")
    expect_close(student.dynamic_ntk_base(0.5, 2.0, 32, 512, 128), _dynamic(0.5, 2.0, 32, 512, 128),
                 rtol=RTOL_SCALAR, atol=0, what="dynamic_ntk_base(0.5, 2, 32, 512, 128)")


@pytest.mark.exercise("dynamic_ntk_base", points=1)
def test_dynamic_rejects_scale_below_one(student):
    """scale 0.999 raises ValueError; scale 1 is allowed."""
    expect_raises(ValueError, student.dynamic_ntk_base, 1e4, 0.999, 32, 512, 128,
                  what="dynamic_ntk_base(1e4, 0.999, 32, 512, 128)")
    expect_close(student.dynamic_ntk_base(1e4, 1.0, 32, 512, 128), _dynamic(1e4, 1.0, 32, 512, 128),
                 rtol=RTOL_SCALAR, atol=0, what="dynamic_ntk_base(1e4, 1, 32, 512, 128)")


@pytest.mark.exercise("dynamic_ntk_base", points=1)
def test_dynamic_rejects_bad_lengths(student):
    """seq_len 0 or -5 and original_max_position_embeddings 0 or -128 raise ValueError; lengths of 1 work."""
    for seq_len, orig in ((0, 128), (-5, 128), (512, 0), (512, -128)):
        expect_raises(ValueError, student.dynamic_ntk_base, 1e4, 2.0, 32, seq_len, orig,
                      what=f"dynamic_ntk_base(1e4, 2, 32, {seq_len}, {orig})")
    for seq_len, orig in ((1, 128), (3, 1)):
        expect_close(student.dynamic_ntk_base(1e4, 2.0, 32, seq_len, orig), _dynamic(1e4, 2.0, 32, seq_len, orig),
                     rtol=RTOL_SCALAR, atol=0, what=f"dynamic_ntk_base(1e4, 2, 32, {seq_len}, {orig})",
                     mistakes=_dynamic_mistakes(1e4, 2.0, 32, seq_len, orig))


# -- yarn_inv_freq ----------------------------------------------------------------------------------
def _yarn(d, base, s, orig, beta_fast=32.0, beta_slow=1.0, *, reversed_ramp=False, no_rounding=False,
          swap_betas=False, clamp_half=False):
    """NTK-by-parts inverse frequencies (Peng et al., 2023, eq. 16-18), float64 (d/2,)."""
    def cut(rotations):
        return d * math.log(orig / (rotations * 2 * math.pi)) / (2 * math.log(base))

    fast, slow = (beta_slow, beta_fast) if swap_betas else (beta_fast, beta_slow)
    low, high = cut(fast), cut(slow)
    if not no_rounding:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d // 2 - 1 if clamp_half else d - 1)
    if low == high:
        high += 0.001
    i = torch.arange(d // 2, dtype=torch.float64)
    gamma = ((i - low) / (high - low)).clamp(0, 1)                         # 1 = interpolate
    if reversed_ramp:
        gamma = 1 - gamma
    theta = _theta(d, base)
    return (1 - gamma) * theta + gamma * theta / s


def _yarn_mistakes(d, base, s, orig, beta_fast=32.0, beta_slow=1.0):
    return {
        "ramp reversed (high frequencies interpolated, low ones kept)":
            _yarn(d, base, s, orig, beta_fast, beta_slow, reversed_ramp=True),
        "original_max_position_embeddings replaced by the new length s * L_orig":
            _yarn(d, base, s, s * orig, beta_fast, beta_slow),
        "correction range not rounded (floor/ceil missing)":
            _yarn(d, base, s, orig, beta_fast, beta_slow, no_rounding=True),
        "beta_fast and beta_slow swapped": _yarn(d, base, s, orig, beta_fast, beta_slow, swap_betas=True),
        "high clamped to head_dim // 2 - 1 instead of head_dim - 1":
            _yarn(d, base, s, orig, beta_fast, beta_slow, clamp_half=True),
        "every frequency divided by s (Position Interpolation)": _theta(d, base) / s,
        "no frequency changed": _theta(d, base),
    }


def _attention_factor_mistakes(s):
    m = 0.1 * math.log(s) + 1
    return {"attention factor squared (that is the factor of the logits, 1/t, not of cos and sin)": m * m,
            "attention factor inverted (1 / (0.1 ln s + 1))": 1 / m,
            "attention factor as t = 1 / (0.1 ln s + 1)^2": 1 / (m * m),
            "square root of the attention factor (applied to the logits once instead of to cos and sin)": math.sqrt(m),
            "log base 10 instead of natural log": 0.1 * math.log10(s) + 1}


def _check_yarn(student, d, base, s, orig, beta_fast=32.0, beta_slow=1.0):
    what = f"yarn_inv_freq({d}, {base:g}, {s:g}, {orig}, {beta_fast:g}, {beta_slow:g})"
    got = student.yarn_inv_freq(d, base, s, orig, beta_fast, beta_slow)
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        fail(f"{what} should return a pair (inv_freq, attention_factor), got {type(got).__name__}")
    inv_freq, factor = got
    expect_shape(inv_freq, (d // 2,), what=f"inv_freq of {what}")
    expect_close(inv_freq, _yarn(d, base, s, orig, beta_fast, beta_slow), rtol=RTOL_FREQ, atol=0,
                 what=f"inv_freq of {what}", mistakes=_yarn_mistakes(d, base, s, orig, beta_fast, beta_slow))
    return inv_freq, factor


@pytest.mark.exercise("yarn_inv_freq", points=2, public=True)
def test_yarn_worked_case(student):
    """head_dim 128, base 1e4, L_orig 4096, s 16: pairs 0-20 kept, 46-63 divided by 16, factor 0.1 ln 16 + 1."""
    inv_freq, factor = _check_yarn(student, 128, 1e4, 16.0, 4096)
    theta = _theta(128, 1e4)
    expect_close(inv_freq[:21], theta[:21], rtol=RTOL_FREQ, atol=0, what="pairs 0-20 (must be kept)")
    expect_close(inv_freq[46:], theta[46:] / 16, rtol=RTOL_FREQ, atol=0, what="pairs 46-63 (must be divided by 16)")
    expect_close(factor, 0.1 * math.log(16) + 1, rtol=RTOL_SCALAR, atol=0, what="attention_factor for s = 16",
                 mistakes=_attention_factor_mistakes(16.0))


@pytest.mark.exercise("yarn_inv_freq", points=1, public=True)
def test_yarn_types(student):
    """inv_freq is a float32 tensor and attention_factor a Python float."""
    inv_freq, factor = student.yarn_inv_freq(64, 1e4, 4.0, 2048)
    expect_dtype(inv_freq, torch.float32, what="inv_freq")
    _expect_float(factor, "attention_factor")


@pytest.mark.exercise("yarn_inv_freq", points=2)
def test_yarn_tiny_model_case(student):
    """The notebook's model: head_dim 32, base 1e4, L_orig 128, s 8 (the lower end clamps to 0)."""
    _, factor = _check_yarn(student, 32, 1e4, 8.0, 128)
    expect_close(factor, 0.1 * math.log(8) + 1, rtol=RTOL_SCALAR, atol=0, what="attention_factor for s = 8",
                 mistakes=_attention_factor_mistakes(8.0))


@pytest.mark.exercise("yarn_inv_freq", points=2)
def test_yarn_honours_betas(student):
    """beta_fast 16 and beta_slow 2 move the ramp: head_dim 64, base 5e5, L_orig 2048, s 4."""
    _check_yarn(student, 64, 5e5, 4.0, 2048, 16.0, 2.0)


@pytest.mark.exercise("yarn_inv_freq", points=1)
def test_yarn_scale_one(student):
    """s = 1 changes nothing: inv_freq = theta and attention_factor = 1."""
    inv_freq, factor = _check_yarn(student, 32, 1e4, 1.0, 512)
    expect_close(factor, 1.0, rtol=RTOL_SCALAR, atol=0, what="attention_factor for s = 1")


@pytest.mark.exercise("yarn_inv_freq", points=1)
def test_yarn_rejects_bad_input(student):
    """Odd head_dim, scale < 1 and beta_fast <= beta_slow raise ValueError."""
    expect_raises(ValueError, student.yarn_inv_freq, 31, 1e4, 4.0, 2048, what="yarn_inv_freq(31, ...)")
    expect_raises(ValueError, student.yarn_inv_freq, 32, 1e4, 0.5, 2048, what="yarn_inv_freq(32, 1e4, 0.5, ...)")
    expect_raises(ValueError, student.yarn_inv_freq, 32, 1e4, 4.0, 2048, 1.0, 32.0,
                  what="yarn_inv_freq(..., beta_fast=1, beta_slow=32)")


def _yarn_cuts(d, base, orig, beta_fast, beta_slow):
    """d_cut(beta_fast), d_cut(beta_slow): the unrounded ends of the ramp."""
    def cut(rotations):
        return d * math.log(orig / (rotations * 2 * math.pi)) / (2 * math.log(base))
    return cut(beta_fast), cut(beta_slow)


def _betas():
    drawn = st.tuples(st.floats(1.01, 64.0), st.floats(0.05, 8.0)).map(lambda t: (t[0] * t[1], t[1]))
    return st.one_of(st.sampled_from([(32.0, 1.0), (16.0, 2.0), (64.0, 0.5)]), drawn)


@pytest.mark.exercise("yarn_inv_freq", points=3)
@grading(max_examples=14)
@given(head_dim=_head_dims(4), base=_bases(), scale=_scales(), orig=_lengths(), betas=_betas())
@example(head_dim=128, base=1e4, scale=8.0, orig=60000, betas=(32.0, 1.0))   # high = 64 > d/2 - 1
@example(head_dim=32, base=1e4, scale=4.0, orig=5, betas=(32.0, 1.0))        # low = high = 0 (+0.001)
@example(head_dim=8, base=2.0, scale=2.5, orig=700, betas=(32.0, 1.0))       # low = high = d - 1
@example(head_dim=4, base=1.5, scale=3.0, orig=445, betas=(64.0, 0.5))       # high clamped to d - 1 = 3
def test_yarn_over_its_inputs(student, head_dim, base, scale, orig, betas):
    """For any head_dim, base, scale, L_orig and betas, also where the ramp's ends clamp or coincide."""
    fast, slow = _yarn_cuts(head_dim, base, orig, *betas)
    # Leave out what the docstring's formula does not settle: a cut within 1e-9 of a whole number
    # (floor and ceil then depend on rounding) and ends that cross after clamping (high < low,
    # when even the fastest pair turns less than beta_slow times, or the slowest more than beta_fast).
    assume(all(abs(c - round(c)) > 1e-9 for c in (fast, slow)))
    assume(math.ceil(slow) >= 0 and math.floor(fast) <= head_dim - 1)
    inv_freq, factor = _check_yarn(student, head_dim, base, scale, orig, *betas)
    what = f"yarn_inv_freq({head_dim}, {base!r}, {scale!r}, {orig}, {betas[0]!r}, {betas[1]!r})"
    expect_dtype(inv_freq, torch.float32, what=f"inv_freq of {what}")
    _expect_float(factor, f"attention_factor of {what}")
    expect_close(factor, 0.1 * math.log(scale) + 1, rtol=RTOL_SCALAR, atol=0, what=f"attention_factor of {what}",
                 mistakes=_attention_factor_mistakes(scale) if scale > 1 else None)


@pytest.mark.exercise("yarn_inv_freq", points=1)
def test_yarn_bounds_that_coincide(student):
    """L_orig 5 puts both ends of the ramp at pair 0 (high += 0.001): pair 0 kept, every other one divided."""
    inv_freq, _ = student.yarn_inv_freq(32, 1e4, 4.0, 5)
    expect_true(bool(torch.isfinite(as_tensor(inv_freq)).all()),
                "yarn_inv_freq(32, 1e4, 4, 5): inv_freq is not finite where low == high = 0 (high += 0.001 avoids 0 / 0)")
    _check_yarn(student, 32, 1e4, 4.0, 5)


@pytest.mark.exercise("yarn_inv_freq", points=1)
def test_yarn_rejects_bad_head_dim(student):
    """head_dim 31, 2 and 0 raise ValueError; head_dim 4 works."""
    for head_dim in (31, 2, 0):
        expect_raises(ValueError, student.yarn_inv_freq, head_dim, 1e4, 4.0, 2048,
                      what=f"yarn_inv_freq({head_dim}, 1e4, 4, 2048)")
    _check_yarn(student, 4, 1e4, 4.0, 2048)


@pytest.mark.exercise("yarn_inv_freq", points=1)
def test_yarn_rejects_bad_base(student):
    """base 1 and 0.5 raise ValueError; base 1.5 works."""
    for base in (1.0, 0.5):
        expect_raises(ValueError, student.yarn_inv_freq, 32, base, 4.0, 2048, what=f"yarn_inv_freq(32, {base}, 4, 2048)")
    _check_yarn(student, 8, 1.5, 2.0, 64)


@pytest.mark.exercise("yarn_inv_freq", points=1)
def test_yarn_rejects_scale_below_one(student):
    """scale 0.999 raises ValueError; scale 1 is allowed."""
    expect_raises(ValueError, student.yarn_inv_freq, 32, 1e4, 0.999, 2048, what="yarn_inv_freq(32, 1e4, 0.999, 2048)")
    _check_yarn(student, 32, 1e4, 1.0, 2048)


@pytest.mark.exercise("yarn_inv_freq", points=1)
def test_yarn_rejects_bad_original_length(student):
    """original_max_position_embeddings 0 and -4096 raise ValueError; 1 works."""
    for orig in (0, -4096):
        expect_raises(ValueError, student.yarn_inv_freq, 32, 1e4, 4.0, orig, what=f"yarn_inv_freq(32, 1e4, 4, {orig})")
    _check_yarn(student, 4, 1e4, 2.0, 1)


@pytest.mark.exercise("yarn_inv_freq", points=1)
def test_yarn_rejects_bad_betas(student):
    """beta_fast == beta_slow, beta_slow 0 and beta_slow -1 raise ValueError; beta_fast 2, beta_slow 1 works."""
    for betas in ((8.0, 8.0), (32.0, 0.0), (32.0, -1.0)):
        expect_raises(ValueError, student.yarn_inv_freq, 32, 1e4, 4.0, 2048, *betas,
                      what=f"yarn_inv_freq(32, 1e4, 4, 2048, beta_fast={betas[0]}, beta_slow={betas[1]})")
    _check_yarn(student, 32, 1e4, 4.0, 2048, 2.0, 1.0)


# -- llama3_inv_freq --------------------------------------------------------------------------------
def _llama3(d, base, s, orig, low_ff=1.0, high_ff=4.0, *, swap_thresholds=False, reversed_smooth=False,
            no_two_pi=False, multiply=False, plain_thresholds=False):
    theta = _theta(d, base)
    wavelength = (1 if no_two_pi else 2 * math.pi) / theta
    low_wl, high_wl = orig / low_ff, orig / high_ff                       # long and short thresholds
    if plain_thresholds:
        low_wl, high_wl = orig, orig / 4
    if swap_thresholds:
        low_wl, high_wl = high_wl, low_wl
    divided = theta * s if multiply else theta / s
    mu = (orig / wavelength - low_ff) / (high_ff - low_ff)
    if reversed_smooth:
        mu = 1 - mu
    blended = (1 - mu) * divided + mu * theta
    return torch.where(wavelength < high_wl, theta, torch.where(wavelength > low_wl, divided, blended))


def _llama3_mistakes(d, base, s, orig, low_ff=1.0, high_ff=4.0):
    args = (d, base, s, orig, low_ff, high_ff)
    return {
        "wavelength thresholds swapped (L_orig/high_freq_factor and L_orig/low_freq_factor)":
            _llama3(*args, swap_thresholds=True),
        "smooth factor reversed (1 - mu)": _llama3(*args, reversed_smooth=True),
        "wavelength computed as 1/theta (without 2 pi)": _llama3(*args, no_two_pi=True),
        "long wavelengths multiplied by the factor instead of divided": _llama3(*args, multiply=True),
        "thresholds L_orig and L_orig/4 hard-coded (low/high_freq_factor ignored)": _llama3(*args, plain_thresholds=True),
        "every frequency divided by s (Position Interpolation)": _theta(d, base) / s,
    }


def _check_llama3(student, d, base, s, orig, low_ff=1.0, high_ff=4.0):
    what = f"llama3_inv_freq({d}, {base:g}, {s:g}, {orig}, {low_ff:g}, {high_ff:g})"
    got = student.llama3_inv_freq(d, base, s, orig, low_ff, high_ff)
    expect_shape(got, (d // 2,), what=what)
    expect_close(got, _llama3(d, base, s, orig, low_ff, high_ff), rtol=RTOL_LLAMA3, atol=0, what=what,
                 mistakes=_llama3_mistakes(d, base, s, orig, low_ff, high_ff))
    return got


@pytest.mark.exercise("llama3_inv_freq", points=2, public=True)
def test_llama3_31_config(student):
    """Llama 3.1's configuration: head_dim 128, base 5e5, factor 8, L_orig 8192, factors 1 and 4."""
    _check_llama3(student, 128, 5e5, 8.0, 8192)


@pytest.mark.exercise("llama3_inv_freq", points=1, public=True)
def test_llama3_dtype(student):
    """The result is a float32 tensor."""
    expect_dtype(student.llama3_inv_freq(64, 5e5, 8.0, 8192), torch.float32, what="llama3_inv_freq(64, ...)")


@pytest.mark.exercise("llama3_inv_freq", points=2)
def test_llama3_other_factors(student):
    """low_freq_factor 2 and high_freq_factor 8 move both thresholds: head_dim 64, base 1e4, L_orig 1024, s 4."""
    _check_llama3(student, 64, 1e4, 4.0, 1024, 2.0, 8.0)


@pytest.mark.exercise("llama3_inv_freq", points=1)
def test_llama3_tiny_model_case(student):
    """The notebook's model: head_dim 32, base 1e4, s 8, L_orig 128."""
    _check_llama3(student, 32, 1e4, 8.0, 128)


@pytest.mark.exercise("llama3_inv_freq", points=1)
def test_llama3_regions(student):
    """Wavelengths under L_orig/4 are kept exactly and those over L_orig are divided exactly by s."""
    got = student.llama3_inv_freq(128, 5e5, 8.0, 8192)
    theta = _theta(128, 5e5)
    wavelength = 2 * math.pi / theta
    short, long = wavelength < 8192 / 4, wavelength > 8192
    expect_close(as_tensor(got)[short], theta[short], rtol=RTOL_FREQ, atol=0, what="short-wavelength pairs")
    expect_close(as_tensor(got)[long], theta[long] / 8, rtol=RTOL_FREQ, atol=0, what="long-wavelength pairs")


def as_tensor(value):
    return value if isinstance(value, torch.Tensor) else torch.as_tensor(value)


@pytest.mark.exercise("llama3_inv_freq", points=1)
def test_llama3_rejects_bad_input(student):
    """low_freq_factor >= high_freq_factor, scale < 1 and odd head_dim raise ValueError."""
    expect_raises(ValueError, student.llama3_inv_freq, 64, 5e5, 8.0, 8192, 4.0, 4.0,
                  what="llama3_inv_freq(..., low_freq_factor=4, high_freq_factor=4)")
    expect_raises(ValueError, student.llama3_inv_freq, 64, 5e5, 0.5, 8192, what="llama3_inv_freq(64, 5e5, 0.5, ...)")
    expect_raises(ValueError, student.llama3_inv_freq, 63, 5e5, 8.0, 8192, what="llama3_inv_freq(63, ...)")


def _freq_factors():
    drawn = st.tuples(st.floats(0.05, 8.0), st.floats(1.05, 16.0)).map(lambda t: (t[0], t[0] * t[1]))
    return st.one_of(st.sampled_from([(1.0, 4.0), (2.0, 8.0)]), drawn)


@pytest.mark.exercise("llama3_inv_freq", points=2)
@grading(max_examples=12)
@given(head_dim=_head_dims(2), base=_bases(), scale=_scales(), orig=_lengths(), factors=_freq_factors())
@example(head_dim=2, base=1e4, scale=4.0, orig=8, factors=(1.0, 4.0))        # one pair, in the blend
def test_llama3_over_its_inputs(student, head_dim, base, scale, orig, factors):
    """For any head_dim >= 2, base, scale, L_orig and 0 < low_freq_factor < high_freq_factor."""
    got = _check_llama3(student, head_dim, base, scale, orig, *factors)
    expect_dtype(got, torch.float32, what=f"llama3_inv_freq({head_dim}, {base!r}, {scale!r}, {orig}, ...)")


@pytest.mark.exercise("llama3_inv_freq", points=1)
def test_llama3_rejects_bad_head_dim(student):
    """head_dim 63, 0 and -2 raise ValueError; head_dim 2 (one pair) works."""
    for head_dim in (63, 0, -2):
        expect_raises(ValueError, student.llama3_inv_freq, head_dim, 5e5, 8.0, 8192,
                      what=f"llama3_inv_freq({head_dim}, 5e5, 8, 8192)")
    _check_llama3(student, 2, 5e5, 8.0, 8192)


@pytest.mark.exercise("llama3_inv_freq", points=1)
def test_llama3_rejects_bad_base(student):
    """base 1 and 0.5 raise ValueError; base 1.5 works."""
    for base in (1.0, 0.5):
        expect_raises(ValueError, student.llama3_inv_freq, 64, base, 8.0, 8192, what=f"llama3_inv_freq(64, {base}, 8, 8192)")
    _check_llama3(student, 16, 1.5, 8.0, 64)


@pytest.mark.exercise("llama3_inv_freq", points=1)
def test_llama3_rejects_scale_below_one(student):
    """scale 0.999 raises ValueError; scale 1 leaves every frequency as it is."""
    expect_raises(ValueError, student.llama3_inv_freq, 64, 5e5, 0.999, 8192, what="llama3_inv_freq(64, 5e5, 0.999, 8192)")
    _check_llama3(student, 64, 5e5, 1.0, 8192)


@pytest.mark.exercise("llama3_inv_freq", points=1)
def test_llama3_rejects_bad_original_length(student):
    """original_max_position_embeddings 0 and -8192 raise ValueError; 1 works."""
    for orig in (0, -8192):
        expect_raises(ValueError, student.llama3_inv_freq, 64, 5e5, 8.0, orig, what=f"llama3_inv_freq(64, 5e5, 8, {orig})")
    _check_llama3(student, 64, 5e5, 8.0, 1)


@pytest.mark.exercise("llama3_inv_freq", points=1)
def test_llama3_rejects_bad_freq_factors(student):
    """low_freq_factor 0 or -1, and low_freq_factor > high_freq_factor, raise ValueError; 0.5 and 0.6 work."""
    for factors in ((0.0, 4.0), (-1.0, 4.0), (4.0, 2.0)):
        expect_raises(ValueError, student.llama3_inv_freq, 64, 5e5, 8.0, 8192, *factors,
                      what=f"llama3_inv_freq(64, 5e5, 8, 8192, low_freq_factor={factors[0]}, high_freq_factor={factors[1]})")
    _check_llama3(student, 64, 5e5, 8.0, 8192, 0.5, 0.6)


# -- passkey_prompt -----------------------------------------------------------------------------------
FILLER_SENTENCES = ("The grass is green.", "The sky is blue.", "The sun is yellow.",
                    "Here we go.", "There and back again.")
QUESTION = "What is the pass key? The pass key is"
HALF_SENTENCE = 11  # the longest filler sentence and its space take 22 characters: a boundary is never further than 11


def _needle(passkey):
    return f"The pass key is {passkey}. "


def _prompt(student, length, depth, passkey, seed):
    what = f"passkey_prompt({length}, {depth}, {passkey}, rng={seed})"
    got = student.passkey_prompt(length, depth, passkey, seed)
    expect_true(isinstance(got, str), f"{what} should return a str, not {type(got).__name__}")
    expect_equal(len(got), length, what=f"len({what})")
    expect_true(got.endswith(QUESTION), f"{what} should end with QUESTION ({QUESTION!r}); it ends with {got[-40:]!r}")
    expect_equal(got.count(_needle(passkey)), 1, what=f"number of needles {_needle(passkey)!r} in {what}")
    return got, what


def _needle_offset(prompt, passkey, length, depth, what):
    at = prompt.index(_needle(passkey))
    n_filler = length - len(_needle(passkey)) - len(QUESTION)
    expect_true(abs(at - depth * n_filler) <= HALF_SENTENCE,
                f"{what}: the needle starts at character {at}, expected within {HALF_SENTENCE} of depth * n_filler = "
                f"{depth * n_filler:.0f} (n_filler = {n_filler})"
                + ("; this looks like depth measured from the end (1 - depth)"
                   if abs(at - (1 - depth) * n_filler) <= HALF_SENTENCE else ""))
    return at


@pytest.mark.exercise("passkey_prompt", points=2, public=True)
def test_prompt_layout(student):
    """passkey_prompt(300, 0.5, 12345, 0): 300 characters, one needle near the middle, ends with the question."""
    prompt, what = _prompt(student, 300, 0.5, 12345, 0)
    _needle_offset(prompt, 12345, 300, 0.5, what)


@pytest.mark.exercise("passkey_prompt", points=1, public=True)
def test_prompt_depth_ends(student):
    """Depth 0 puts the needle first; depth 1 puts it right before the question."""
    first, _ = _prompt(student, 200, 0.0, 54321, 1)
    expect_true(first.startswith(_needle(54321)), f"depth 0: the prompt should start with the needle, got {first[:40]!r}")
    last, _ = _prompt(student, 200, 1.0, 54321, 1)
    expect_true(last.endswith(_needle(54321) + QUESTION),
                f"depth 1: the needle should come right before the question, got {last[-70:]!r}")


@pytest.mark.exercise("passkey_prompt", points=2)
def test_prompt_depths_and_lengths(student):
    """For lengths 128 to 4096 and depths 0.1 to 0.9 the needle sits at a sentence boundary near depth * n_filler."""
    for length, depth, seed in ((128, 0.3, 3), (512, 0.1, 4), (1000, 0.75, 5), (4096, 0.9, 6), (2048, 0.5, 7)):
        prompt, what = _prompt(student, length, depth, 77777, seed)
        at = _needle_offset(prompt, 77777, length, depth, what)
        expect_true(at == 0 or prompt[at - 2: at] == ". ",
                    f"{what}: the needle should start a sentence (after '. '), but follows {prompt[max(0, at - 20): at]!r}")


@pytest.mark.exercise("passkey_prompt", points=1)
def test_prompt_filler_sentences(student):
    """Without the needle and the question, the prompt is filler sentences joined by spaces (the last may be cut)."""
    prompt, what = _prompt(student, 700, 0.4, 24680, 8)
    filler = prompt.replace(_needle(24680), "")[: -len(QUESTION)]
    pieces = filler.split(" ")
    text = " ".join(pieces)
    sentences = re.findall(r"[^.]*\.", text)
    bad = [s.strip() for s in sentences if s.strip() not in FILLER_SENTENCES]
    expect_true(not bad, f"{what}: filler should be made of FILLER_SENTENCES, found {bad[:2]!r}")
    expect_true(len(set(sentences)) > 1, f"{what}: the filler should draw sentences at random, not repeat one")


@pytest.mark.exercise("passkey_prompt", points=1)
def test_prompt_uses_rng(student):
    """The same seed gives the same prompt, and another seed another filler."""
    a, _ = _prompt(student, 500, 0.5, 11111, 42)
    b, _ = _prompt(student, 500, 0.5, 11111, 42)
    c, _ = _prompt(student, 500, 0.5, 11111, 43)
    expect_true(a == b, "two calls with rng=42 gave different prompts: draw from np.random.default_rng(rng)")
    expect_true(a != c, "rng=42 and rng=43 gave the same prompt: the filler should come from rng")


@pytest.mark.exercise("passkey_prompt", points=1)
def test_prompt_every_length(student):
    """Every length from 80 to 140 characters gives a prompt of exactly that length."""
    for length in range(80, 141):
        _prompt(student, length, (length % 5) / 4, 12345, length)


@pytest.mark.exercise("passkey_prompt", points=1)
def test_prompt_short_passkey(student):
    """A one-digit passkey (7) is written as it is: 'The pass key is 7. '."""
    _prompt(student, 150, 0.5, 7, 9)


@pytest.mark.exercise("passkey_prompt", points=1)
def test_prompt_rejects_bad_input(student):
    """depth outside [0, 1], a negative passkey, and a length too short for needle and question raise ValueError."""
    expect_raises(ValueError, student.passkey_prompt, 300, 1.5, 12345, 0, what="passkey_prompt(300, 1.5, ...)")
    expect_raises(ValueError, student.passkey_prompt, 300, -0.1, 12345, 0, what="passkey_prompt(300, -0.1, ...)")
    expect_raises(ValueError, student.passkey_prompt, 300, 0.5, -5, 0, what="passkey_prompt(300, 0.5, -5, 0)")
    expect_raises(ValueError, student.passkey_prompt, 40, 0.5, 12345, 0, what="passkey_prompt(40, 0.5, 12345, 0)")


def _reference_filler(n_filler, rng):
    """The documented draws: one rng.integers(5) per sentence until the join holds n_filler characters."""
    pieces = [FILLER_SENTENCES[int(rng.integers(len(FILLER_SENTENCES)))]]
    total = len(pieces[0])
    while total < n_filler:
        pieces.append(FILLER_SENTENCES[int(rng.integers(len(FILLER_SENTENCES)))])
        total += 1 + len(pieces[-1])
    return " ".join(pieces)[:n_filler]


def _nearest_boundary(filler, target):
    """The sentence boundary of ``filler`` (0, its end, or just after '. ') nearest to target, earlier on a tie."""
    boundaries = sorted({0, len(filler)} | {m.end() for m in re.finditer(r"\. ", filler)})
    return min(boundaries, key=lambda b: (abs(b - target), b))


def _reference_prompt(length, depth, passkey, rng):
    needle = _needle(passkey)
    n_filler = length - len(needle) - len(QUESTION)
    filler = _reference_filler(n_filler, rng)
    at = _nearest_boundary(filler, depth * n_filler)
    return filler[:at] + needle + filler[at:] + QUESTION


def _unparsed_filler(filler):
    """Where ``filler`` stops being FILLER_SENTENCES joined by single spaces (the last one may be cut), or None."""
    at = 0
    while at < len(filler):
        rest = filler[at:]
        sentence = next((f for f in FILLER_SENTENCES if rest.startswith(f) or f.startswith(rest)), None)
        if sentence is None:
            return at
        at += len(sentence)
        if at < len(filler):
            if filler[at] != " ":
                return at
            at += 1
    return None


def _passkeys():
    return st.one_of(st.integers(0, 9), st.integers(10000, 99999), st.integers(0, 10**12))


def _depths():
    return st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0.0, 1.0))


@pytest.mark.exercise("passkey_prompt", points=2)
@grading(max_examples=14)
@given(n_filler=st.integers(0, 700), depth=_depths(), passkey=_passkeys(), seed=seeds())
@example(n_filler=256, depth=157 / 512, passkey=12345, seed=0)   # target 78.5, halfway between boundaries 70 and 87
@example(n_filler=0, depth=0.5, passkey=7, seed=1)                # exact fit: the needle and the question only
def test_prompt_over_its_inputs(student, n_filler, depth, passkey, seed):
    """For any length, depth and passkey: exact length, filler sentences, one needle at the nearest boundary."""
    needle = _needle(passkey)
    length = len(needle) + len(QUESTION) + n_filler          # n_filler counts the FORMATTED needle
    prompt, what = _prompt(student, length, depth, passkey, seed)
    at = prompt.index(needle)
    filler = prompt[:at] + prompt[at + len(needle): -len(QUESTION)]
    bad = _unparsed_filler(filler)
    expect_true(bad is None, f"{what}: the filler should be FILLER_SENTENCES joined by single spaces; "
                             f"it goes wrong at {filler[max(0, (bad or 0) - 10): (bad or 0) + 20]!r}")
    want = _nearest_boundary(filler, depth * n_filler)
    if at != want:
        boundaries = sorted({0, n_filler} | {m.end() for m in re.finditer(r"\. ", filler)})
        later = [b for b in boundaries if abs(b - depth * n_filler) == abs(want - depth * n_filler) and b > want]
        fail(f"{what}: the needle starts at character {at} of the filler; the sentence boundary nearest to "
             f"depth * n_filler = {depth * n_filler:g} is {want}"
             + (f" (a tie with {later[0]}: the earlier one wins)" if later else ""))


@pytest.mark.exercise("passkey_prompt", points=1)
@grading()
@given(n_filler=st.integers(0, 700), depth=_depths(), seed=seeds())
def test_prompt_replays_the_generator(student, n_filler, depth, seed):
    """The filler is exactly what one rng.integers(5) per sentence, drawn until it is long enough, gives."""
    length = len(_needle(12345)) + len(QUESTION) + n_filler
    prompt, what = _prompt(student, length, depth, 12345, seed)
    want = _reference_prompt(length, depth, 12345, np.random.default_rng(seed))
    if prompt != want:
        first = next(i for i, (a, b) in enumerate(zip(prompt, want)) if a != b)
        fail(f"{what} differs from the prompt the documented draws give (np.random.default_rng(rng), then one "
             f"rng.integers(len(FILLER_SENTENCES)) per sentence until the sentences hold n_filler characters) "
             f"from character {first}: got {prompt[first: first + 30]!r}, expected {want[first: first + 30]!r}")


@pytest.mark.exercise("passkey_prompt", points=1)
def test_prompt_rejects_bad_depth(student):
    """depth 1.5, -0.1 and 1.000001 raise ValueError; depths 0 and 1 work."""
    for depth in (1.5, -0.1, 1.000001):
        expect_raises(ValueError, student.passkey_prompt, 300, depth, 12345, 0, what=f"passkey_prompt(300, {depth}, 12345, 0)")
    for depth in (0.0, 1.0):
        _prompt(student, 300, depth, 12345, 0)


@pytest.mark.exercise("passkey_prompt", points=1)
def test_prompt_rejects_negative_passkey(student):
    """passkey -1 and -12345 raise ValueError; passkey 0 gives the needle 'The pass key is 0. '."""
    for passkey in (-1, -12345):
        expect_raises(ValueError, student.passkey_prompt, 300, 0.5, passkey, 0, what=f"passkey_prompt(300, 0.5, {passkey}, 0)")
    _prompt(student, 300, 0.5, 0, 0)


@pytest.mark.exercise("passkey_prompt", points=1)
def test_prompt_rejects_too_short(student):
    """One character less than needle + question raises ValueError; the exact fit is needle + question."""
    for passkey in (12345, 7):
        fit = len(_needle(passkey)) + len(QUESTION)
        expect_raises(ValueError, student.passkey_prompt, fit - 1, 0.5, passkey, 0,
                      what=f"passkey_prompt({fit - 1}, 0.5, {passkey}, 0)")
        prompt, what = _prompt(student, fit, 0.5, passkey, 0)
        expect_equal(prompt, _needle(passkey) + QUESTION, what=what)


# -- passkey_accuracy -----------------------------------------------------------------------------------
def _accuracy(student, fixture, grid_lengths, depths, trials, **kwargs):
    what = f"passkey_accuracy({fixture}, {grid_lengths}, {depths}, {trials})"
    got = student.passkey_accuracy(student.fixture(f"context_extension.{fixture}", **kwargs), grid_lengths, depths, trials)
    expect_shape(got, (len(grid_lengths), len(depths)), what=what)
    return got, what


@pytest.mark.exercise("passkey_accuracy", points=2, public=True)
def test_accuracy_perfect_model(student):
    """A model that always answers the passkey scores 1 in every cell of a (2, 3) grid, as float64."""
    got, what = _accuracy(student, "perfect_retriever", [128, 300], [0.0, 0.5, 1.0], 2)
    expect_dtype(got, "float64", what=what)
    expect_close(got, torch.ones(2, 3, dtype=torch.float64), rtol=0, atol=1e-12, what=what,
                 mistakes={"counts instead of fractions (divide by trials)": 2 * torch.ones(2, 3)})


@pytest.mark.exercise("passkey_accuracy", points=1, public=True)
def test_accuracy_constant_model(student):
    """A model that always answers 00000 scores 0 (the passkeys are random 5-digit numbers, never 00000)."""
    got, what = _accuracy(student, "constant_answer", [200], [0.0, 1.0], 3, answer="00000")
    expect_close(got, torch.zeros(1, 2, dtype=torch.float64), rtol=0, atol=1e-12, what=what)


@pytest.mark.exercise("passkey_accuracy", points=2)
def test_accuracy_follows_the_needle(student):
    """A model that sees only the last 200 characters finds the needle at length 150, and at 1000 only at depth 1."""
    got, what = _accuracy(student, "recent_window", [150, 1000], [0.0, 1.0], 2, window=200)
    expect_close(got, torch.tensor([[1.0, 1.0], [0.0, 1.0]], dtype=torch.float64), rtol=0, atol=1e-12, what=what,
                 mistakes={"depths reversed (depth measured from the end)": torch.tensor([[1.0, 1.0], [1.0, 0.0]])})


@pytest.mark.exercise("passkey_accuracy", points=1)
def test_accuracy_uses_each_length(student):
    """Prompts have exactly the requested lengths: a model that only answers at length 150 scores (1, 0) by row."""
    got, what = _accuracy(student, "length_filter", [150, 300], [0.25, 0.5, 0.75], 1, lengths=[150])
    expect_close(got, torch.tensor([[1.0] * 3, [0.0] * 3], dtype=torch.float64), rtol=0, atol=1e-12, what=what)


@pytest.mark.exercise("passkey_accuracy", points=2)
def test_accuracy_exact_match(student):
    """An answer whose first number only contains the passkey ('9' + passkey, passkey + '0') is wrong."""
    for kwargs in ({"prefix": "9"}, {"suffix": "0"}):
        got, what = _accuracy(student, "wrapped_answer", [200], [0.5], 2, **kwargs)
        expect_close(got, torch.zeros(1, 1, dtype=torch.float64), rtol=0, atol=1e-12, what=f"{what} with {kwargs}",
                     mistakes={"passkey matched as a substring instead of the whole first number": torch.ones(1, 1)})


@pytest.mark.exercise("passkey_accuracy", points=1)
def test_accuracy_tolerates_punctuation(student):
    """'The pass key is 12345.' style answers (text, then the number, then a period) count as correct."""
    got, what = _accuracy(student, "wrapped_answer", [200], [0.5], 2, prefix="", suffix=". Done")
    expect_close(got, torch.ones(1, 1, dtype=torch.float64), rtol=0, atol=1e-12, what=what)


@pytest.mark.exercise("passkey_accuracy", points=2)
def test_accuracy_is_a_fraction_over_trials(student):
    """A model right on even passkeys only scores about one half over 130 trials, a multiple of 1/130."""
    got, what = _accuracy(student, "even_passkeys_only", [130], [0.5], 130)
    value = float(as_tensor(got).reshape(-1)[0])
    # 130 fair coin flips: the fraction lies in [0.3, 0.7] with probability > 0.99999.
    expect_true(0.3 <= value <= 0.7, f"{what} = {value}: expected about 0.5 (the fraction of correct trials)")
    expect_true(abs(value * 130 - round(value * 130)) < 1e-9,
                f"{what} = {value} is not a multiple of 1/trials (is the accuracy rounded?)")


@pytest.mark.exercise("passkey_accuracy", points=1)
def test_accuracy_rejects_bad_input(student):
    """trials = 0 and an empty list of lengths raise ValueError."""
    generate = student.fixture("context_extension.perfect_retriever")
    expect_raises(ValueError, student.passkey_accuracy, generate, [128], [0.5], 0, what="passkey_accuracy(..., trials=0)")
    expect_raises(ValueError, student.passkey_accuracy, generate, [], [0.5], 1, what="passkey_accuracy(f, [], ...)")



def _replayed_passkeys(lengths, depths, trials, *, fresh_per_cell=False):
    """(len(lengths), len(depths), trials) passkeys that the documented generator draws."""
    rng = np.random.default_rng(0)
    passkeys = np.zeros((len(lengths), len(depths), trials), dtype=np.int64)
    for row, length in enumerate(lengths):
        for col, depth in enumerate(depths):
            if fresh_per_cell:
                rng = np.random.default_rng(0)
            for trial in range(trials):
                passkeys[row, col, trial] = int(rng.integers(10000, 100000))
                _reference_prompt(length, depth, int(passkeys[row, col, trial]), rng)
    return passkeys


@pytest.mark.exercise("passkey_accuracy", points=3)
@grading()
@given(lengths=st.lists(st.integers(60, 400), min_size=1, max_size=3), depths=st.lists(_depths(), min_size=1, max_size=3),
       trials=st.integers(1, 13), seed=seeds())
@example(lengths=[120, 300], depths=[0.0, 0.5, 1.0], trials=7, seed=1)
def test_accuracy_replays_the_generator(student, lengths, depths, trials, seed):
    """A model right on some passkeys only scores exactly the fraction of them that the documented draws give."""
    passkeys = _replayed_passkeys(lengths, depths, trials)
    chosen = np.random.default_rng(seed).random(passkeys.shape) < 0.5
    listed = sorted({int(k) for k in passkeys[chosen]})
    what = f"passkey_accuracy(model right on {len(listed)} of the passkeys, {lengths}, {depths}, {trials})"
    got = student.passkey_accuracy(student.fixture("context_extension.listed_passkeys", passkeys=listed),
                                   lengths, depths, trials)
    expect_dtype(got, "float64", what=what)
    expect_shape(got, (len(lengths), len(depths)), what=what)
    want = np.isin(passkeys, listed).mean(axis=2)
    per_cell = np.isin(_replayed_passkeys(lengths, depths, trials, fresh_per_cell=True), listed)
    # Exact fractions k / trials: 1e-12 accepts any order of division and nothing rounded.
    try:
        expect_close(got, want, rtol=0, atol=1e-12, what=what,
                     mistakes={"accuracy rounded (to 2 decimals)": np.round(want, 2),
                               "counts instead of fractions (divide by trials)": np.isin(passkeys, listed).sum(axis=2),
                               "a fresh np.random.default_rng(0) for every cell": per_cell.mean(axis=2)})
    except AssertionError as exc:
        fail(f"{exc}. The passkeys come from one np.random.default_rng(0): in each trial the passkey, then "
             "the filler that passkey_prompt draws from that same generator (one rng.integers per sentence, "
             "no more than the prompt needs)")


@pytest.mark.exercise("passkey_accuracy", points=1)
def test_accuracy_rejects_bad_trials(student):
    """trials 0 and -3 raise ValueError; one trial works."""
    generate = student.fixture("context_extension.perfect_retriever")
    for trials in (0, -3):
        expect_raises(ValueError, student.passkey_accuracy, generate, [128], [0.5], trials,
                      what=f"passkey_accuracy(f, [128], [0.5], {trials})")
    got, what = _accuracy(student, "perfect_retriever", [128], [0.5], 1)
    expect_close(got, np.ones((1, 1)), rtol=0, atol=1e-12, what=what)


@pytest.mark.exercise("passkey_accuracy", points=1)
def test_accuracy_rejects_empty_grids(student):
    """An empty list of lengths or of depths raises ValueError; one of each works."""
    generate = student.fixture("context_extension.perfect_retriever")
    expect_raises(ValueError, student.passkey_accuracy, generate, [], [0.5], 2, what="passkey_accuracy(f, [], [0.5], 2)")
    expect_raises(ValueError, student.passkey_accuracy, generate, [128], [], 2, what="passkey_accuracy(f, [128], [], 2)")
    got, what = _accuracy(student, "perfect_retriever", [128], [0.5], 2)
    expect_close(got, np.ones((1, 1)), rtol=0, atol=1e-12, what=what)
