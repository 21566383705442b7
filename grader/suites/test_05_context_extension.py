"""Hidden tests and public checks for notebook 05, context extension of RoPE.

Every reference is computed here in float64 from the papers' formulas (Chen et al., 2023, eq. 4;
Peng et al., 2023, eq. 16-18 and 22; the Llama 3.1 reference code), never with the learner's code.
The reference helpers take switches that reproduce catalogued mistakes, so that the feedback can
name them. tests/test_oracle_05_context_extension.py checks the same formulas against Hugging Face
transformers.
"""
import math
import re

import pytest
import torch

from grader.judge import expect_close, expect_dtype, expect_equal, expect_raises, expect_shape, expect_true, fail

# float32 outputs of a float64 formula are within 6e-8 relative of it; inverse frequencies
# computed in float32 (as Hugging Face does) are within ~3e-7. 1e-6 accepts both and rejects
# every catalogued mistake, which all change some entry by more than 1e-3 relative.
RTOL_FREQ = 1e-6
# Bases and attention factors are Python floats: float64 arithmetic agrees to ~1e-15; 1e-9 still
# accepts another order of operations (or math.exp/log instead of **).
RTOL_SCALAR = 1e-9


def _theta(d, base):
    return base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)          # (d/2,)


def _ntk_base(base, s, d, exponent="d/(d-2)"):
    power = {"d/(d-2)": d / (d - 2), "d/(d-1)": d / (d - 1), "1": 1.0, "(d-2)/d": (d - 2) / d,
             "half": (d / 2) / (d / 2 - 2)}[exponent]
    return base * s ** power


def _ntk_mistakes(base, s, d):
    return {
        "exponent d/(d-1) instead of d/(d-2)": _ntk_base(base, s, d, "d/(d-1)"),
        "exponent 1 (base * s) instead of d/(d-2)": _ntk_base(base, s, d, "1"),
        "exponent (d-2)/d instead of d/(d-2)": _ntk_base(base, s, d, "(d-2)/d"),
        "head_dim // 2 used as d in the exponent": _ntk_base(base, s, d, "half"),
        "forgot to multiply by the original base": s ** (d / (d - 2)),
    }


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


# -- yarn_inv_freq ----------------------------------------------------------------------------------
def _yarn(d, base, s, orig, beta_fast=32.0, beta_slow=1.0, *, reversed_ramp=False, no_rounding=False,
          swap_betas=False):
    """NTK-by-parts inverse frequencies (Peng et al., 2023, eq. 16-18), float64 (d/2,)."""
    def cut(rotations):
        return d * math.log(orig / (rotations * 2 * math.pi)) / (2 * math.log(base))

    fast, slow = (beta_slow, beta_fast) if swap_betas else (beta_fast, beta_slow)
    low, high = cut(fast), cut(slow)
    if not no_rounding:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
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
    expect_close(got, _llama3(d, base, s, orig, low_ff, high_ff), rtol=RTOL_FREQ, atol=0, what=what,
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
    """A model that always answers 12345 scores 0 (the passkeys are random 5-digit numbers)."""
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
    """A model right on even passkeys only scores about one half over 200 trials, a multiple of 1/200."""
    got, what = _accuracy(student, "even_passkeys_only", [130], [0.5], 200)
    value = float(as_tensor(got).reshape(-1)[0])
    # 200 fair coin flips: the fraction lies in [0.35, 0.65] with probability > 0.9999.
    expect_true(0.35 <= value <= 0.65, f"{what} = {value}: expected about 0.5 (the fraction of correct trials)")
    expect_true(abs(value * 200 - round(value * 200)) < 1e-9, f"{what} = {value} is not a multiple of 1/trials")


@pytest.mark.exercise("passkey_accuracy", points=1)
def test_accuracy_rejects_bad_input(student):
    """trials = 0 and an empty list of lengths raise ValueError."""
    generate = student.fixture("context_extension.perfect_retriever")
    expect_raises(ValueError, student.passkey_accuracy, generate, [128], [0.5], 0, what="passkey_accuracy(..., trials=0)")
    expect_raises(ValueError, student.passkey_accuracy, generate, [], [0.5], 1, what="passkey_accuracy(f, [], ...)")
