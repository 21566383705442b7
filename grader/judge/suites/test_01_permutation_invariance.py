"""Hidden tests and public checks for notebook 01, permutation invariance.

References are computed here in float64 with independent formulas (or torch's own SDPA).
"""
import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from grader.fixtures import permutation_invariance as fixtures
from grader.judge.hidden import permutation_invariance as hidden
from grader.judge.proxy import expect_close, expect_dtype, expect_raises, expect_shape, expect_true, fail, view, within
from grader.judge.properties import FLOAT_DTYPES, dtypes, grading, laid_out, layouts, seeds, tensor


EXERCISE_ORDER = ("scaled_dot_product_attention", "self_attention", "permutation_matrix",
                  "max_equivariance_error", "unchanged_outputs", "symmetry_of", "position_probe_r2")
"""The exercises in the notebook's order (of their cells): reports number and list them so."""

TRUSTED_PREREQUISITES = {"self_attention": {"scaled_dot_product_attention": hidden.scaled_dot_product_attention}}
"""Exercises judged with the trusted version of an earlier one they call (grader.judge.proxy): a mistake
in scaled_dot_product_attention costs there only."""


def _randn(*shape, seed, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


def _attention(q, k, v, mask=None, *, softmax_dim=-1, scale=None, mask_after=False, fill=-math.inf,
               zero_nan=False):
    """Reference attention in float64, with switches that reproduce catalogued mistakes (``zero_nan``:
    weights of NaN, where a softmax saw no allowed entry, set to 0, as the contract's fully masked rows)."""
    q, k, v = q.double(), k.double(), v.double()
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None and not mask_after:
        scores = scores.masked_fill(~mask, fill)
    weights = torch.softmax(scores, dim=softmax_dim)
    if zero_nan:
        weights = weights.nan_to_num(nan=0.0)
    if mask is not None and mask_after:
        weights = weights * mask
    return weights @ v


def _sdpa_mistakes(q, k, v, mask=None):
    mistakes = {
        "softmax over the query axis (dim=-2) instead of the key axis (dim=-1)":
            _attention(q, k, v, mask, softmax_dim=-2),
        "missing the 1/sqrt(d_k) scaling": _attention(q, k, v, mask, scale=1.0),
        "dividing by d_k instead of sqrt(d_k)": _attention(q, k, v, mask, scale=1 / q.shape[-1]),
    }
    if mask is not None:
        mistakes["inverted mask (True should mean 'may attend')"] = _attention(q, k, v, ~mask)
        mistakes["mask applied after the softmax (rows no longer sum to 1)"] = _attention(
            q, k, v, mask, mask_after=True)
        mistakes["masked scores set to 0 instead of -inf"] = _attention(q, k, v, mask, fill=0.0)
    return mistakes


# float32 attention on O(1) inputs agrees with a float64 reference to ~1e-6; 1e-5 leaves room
# for a different (correct) order of operations.
ATOL = RTOL = 1e-5


# One mistake costs once: each property of the attention is owned by one test (OWNER names it),
# and every other test accepts an output whose only mistake is one that another test owns, so a
# missing 1/sqrt(d_k) fails the scaling test, not seven tests.
def _owned_mistakes(q, k, v, mask=None):
    """The outputs of the catalogued mistakes, grouped by the property (and test) that owns them."""
    def written(m, **kw):
        """A mistake as written, and with its softmax's NaN (no allowed entry) set to 0 as the contract's."""
        return [_attention(q, k, v, m, **kw), _attention(q, k, v, m, zero_nan=True, **kw)]

    owned = {
        "scale": written(mask, scale=1.0) + written(mask, scale=1 / q.shape[-1])
                 + written(mask, scale=1 / math.sqrt(v.shape[-1])),
        "softmax axis": written(mask, softmax_dim=-2),
    }
    if mask is not None:
        owned["mask"] = written(~mask) + written(mask, mask_after=True) + written(mask, fill=0.0)
        empty = ~mask.any(dim=-1, keepdim=True)  # rows with no allowed key give zeros (the contract)
        owned = {name: outs + [out.masked_fill(empty, 0.0) for out in outs] for name, outs in owned.items()}
        if bool(empty.any()):  # what a row with no allowed key gives: NaN, or the mean of the values
            owned["empty rows"] = [_attention(q, k, v, mask),
                                   _attention(q, k, v, mask, fill=torch.finfo(torch.float32).min)]
    return owned


def _expect_attention(got, expected, q, k, v, mask=None, *, owner=None, mistakes=None, what="output",
                      atol=ATOL, rtol=RTOL):
    """Pass if got matches expected, or a mistake whose property a test other than ``owner`` owns;
    otherwise fail against expected, naming the mistake where one of ``mistakes`` matches.
    ``owner`` may be a set of properties. A public check accepts no mistake at all
    (grader.judge.proxy.IN_PUBLIC_CHECK): it fails on every one its inputs reveal."""
    owners = {owner} if isinstance(owner, str) else set(owner or ())
    accepted = [out for name, outs in _owned_mistakes(q, k, v, mask).items() if name not in owners
                for out in outs]
    expect_close(got, expected, atol=atol, rtol=rtol, what=what, mistakes=mistakes, accepted=accepted)


# -- scaled_dot_product_attention ---------------------------------------------------------------
# A core mistake costs at least half of the exercise's 14 points (DESIGN.md): the missing
# 1/sqrt(d_k) and the softmax over the query axis break the formula, which the two public checks
# (3 + 2 points: like every public check, they accept no mistake their inputs reveal) and
# test_sdpa_scales_by_d_k_not_d_v (2) check, 7 points; a change to q, k or v in place
# (`q /= math.sqrt(d_k)`) fails the two public checks and test_sdpa_over_its_inputs (2), 7 points.
# Every other test accepts them.
@pytest.mark.exercise("scaled_dot_product_attention", points=3, public=True)
def test_sdpa_matches_reference_without_mask(student):
    """No mask, q (2, 3, 5, 8): output = softmax(q k^T / sqrt(d_k)) v, q, k, v unchanged."""
    q, k, v = _randn(2, 3, 5, 8, seed=1), _randn(2, 3, 7, 8, seed=2), _randn(2, 3, 7, 4, seed=3)
    got = student.scaled_dot_product_attention(q, k, v)
    _expect_attention(got, _attention(q, k, v), q, k, v, mistakes=_sdpa_mistakes(q, k, v))


@pytest.mark.exercise("scaled_dot_product_attention", points=2, public=True)
def test_sdpa_causal_mask_matches_torch(student):
    """A (6, 6) causal mask: output = torch's scaled_dot_product_attention, q, k, v unchanged."""
    q, k, v = _randn(2, 6, 8, seed=4), _randn(2, 6, 8, seed=5), _randn(2, 6, 8, seed=6)
    mask = torch.ones(6, 6, dtype=torch.bool).tril()
    expected = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                                 attn_mask=mask)
    got = student.scaled_dot_product_attention(q, k, v, mask=mask)
    _expect_attention(got, expected, q, k, v, mask, mistakes=_sdpa_mistakes(q, k, v, mask))


@pytest.mark.exercise("scaled_dot_product_attention", points=1)
def test_sdpa_random_mask_broadcast_over_batch(student):
    """A random mask of shape (1, T_q, T_k) broadcasts over batch and heads."""
    student.may_modify_arguments = True  # a hidden test owns leaving the inputs unchanged
    q, k, v = _randn(3, 2, 4, 6, seed=7), _randn(3, 2, 5, 6, seed=8), _randn(3, 2, 5, 3, seed=9)
    mask = torch.rand(1, 4, 5, generator=torch.Generator().manual_seed(10)) > 0.4
    mask[..., 0] = True  # every query may attend somewhere
    got = student.scaled_dot_product_attention(q, k, v, mask=mask)
    _expect_attention(got, _attention(q, k, v, mask), q, k, v, mask, mistakes=_sdpa_mistakes(q, k, v, mask))


@pytest.mark.exercise("scaled_dot_product_attention", points=2)
def test_sdpa_scales_by_d_k_not_d_v(student):
    """The scores are scaled by 1/sqrt(d_k) even when d_v differs from d_k, and normalised over the keys."""
    student.may_modify_arguments = True  # a hidden test owns leaving the inputs unchanged
    q, k, v = _randn(4, 4, seed=11) * 3, _randn(6, 4, seed=12) * 3, _randn(6, 16, seed=13)
    got = student.scaled_dot_product_attention(q, k, v)
    mistakes = {"scaling by 1/sqrt(d_v) instead of 1/sqrt(d_k)": _attention(q, k, v, scale=1 / 4.0)}
    mistakes.update(_sdpa_mistakes(q, k, v))
    _expect_attention(got, _attention(q, k, v), q, k, v, owner={"scale", "softmax axis"}, mistakes=mistakes)


@pytest.mark.exercise("scaled_dot_product_attention", points=1)
def test_sdpa_is_stable_for_large_scores(student):
    """Scores around 1e3 give finite outputs (the softmax must not overflow)."""
    student.may_modify_arguments = True  # a hidden test owns leaving the inputs unchanged
    q, k, v = _randn(5, 8, seed=14) * 40, _randn(5, 8, seed=15) * 40, _randn(5, 8, seed=16)
    got = student.scaled_dot_product_attention(q, k, v)
    # Large scores make the softmax nearly one-hot; the reference is still exact in float64.
    _expect_attention(got, _attention(q, k, v), q, k, v, atol=1e-4, rtol=1e-4)


@pytest.mark.exercise("scaled_dot_product_attention", points=1)
def test_sdpa_keeps_dtype(student):
    """float64, float16 and bfloat16 inputs give an output of their dtype, of shape (..., T_q, d_v)."""
    student.may_modify_arguments = True
    # The contract is the output dtype, not the compute dtype: a softmax computed in float32 and
    # cast back (Llama's and Hugging Face's eager attention) is correct. The values belong to the
    # other tests.
    for dtype in (torch.float64, torch.float16, torch.bfloat16):
        q, k, v = _randn(2, 3, 4, seed=17, dtype=dtype), _randn(2, 5, 4, seed=18, dtype=dtype), \
            _randn(2, 5, 3, seed=19, dtype=dtype)
        got = student.scaled_dot_product_attention(q, k, v)
        expect_dtype(got, dtype, what=f"output for {str(dtype).removeprefix('torch.')} inputs")
        expect_shape(got, (2, 3, 3), what=f"output for {str(dtype).removeprefix('torch.')} inputs")


@pytest.mark.exercise("scaled_dot_product_attention", points=1)
def test_sdpa_fully_masked_row_gives_zeros(student):
    """A query row whose keys are all masked gets zeros (as torch's SDPA), with a full-shape or a broadcast mask."""
    student.may_modify_arguments = True
    q, k, v = _randn(4, 6, seed=21), _randn(5, 6, seed=22), _randn(5, 3, seed=23)
    full = torch.ones(4, 5, dtype=torch.bool).tril()
    full[2] = False  # query 2 may attend to nothing (a padding row)
    rows = torch.tensor([[True], [True], [False], [True]])  # (T_q, 1): broadcast over the keys
    for name, mask in (("a (4, 5) mask", full), ("a (4, 1) mask", rows)):
        expected = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                                     attn_mask=mask)
        nan_row = _attention(q, k, v, mask)  # -inf everywhere in row 2: softmax gives NaN
        mean_row = _attention(q, k, v, mask, fill=torch.finfo(torch.float32).min)
        got = student.scaled_dot_product_attention(q, k, v, mask=mask)
        expect_shape(got, (4, 3), what=f"output with {name}")
        _expect_attention(got, expected, q, k, v, mask, owner="empty rows",
                          what=f"output with {name} (row 2 has no allowed key)",
                          mistakes={"the fully masked row left as NaN (softmax of a row of -inf)": nan_row,
                                    "masked scores filled with a large finite negative number: the fully masked "
                                    "row averages every value instead of giving zeros": mean_row,
                                    **_sdpa_mistakes(q, k, v, mask)})


@pytest.mark.exercise("scaled_dot_product_attention", points=1)
def test_sdpa_rejects_bad_inputs(student):
    """A float or uint8 mask, q and k of different widths d_k, and k and v with different key counts: ValueError."""
    student.may_modify_arguments = True
    q = _randn(3, 4, seed=20)
    expect_raises(ValueError, student.scaled_dot_product_attention, q, q, q,
                  mask=torch.ones(3, 3), what="scaled_dot_product_attention(..., mask=<float>)")
    expect_raises(ValueError, student.scaled_dot_product_attention, q, q, q,
                  mask=torch.ones(3, 3, dtype=torch.uint8).tril(),
                  what="scaled_dot_product_attention(..., mask=<uint8>)")
    q, k, v = _randn(3, 4, seed=24), _randn(5, 3, seed=25), _randn(5, 2, seed=26)
    expect_raises(ValueError, student.scaled_dot_product_attention, q, k, v,
                  what="scaled_dot_product_attention with d_k = 4 for q and 3 for k")
    q, k, v = _randn(3, 4, seed=27), _randn(5, 4, seed=28), _randn(6, 2, seed=29)
    expect_raises(ValueError, student.scaled_dot_product_attention, q, k, v,
                  what="scaled_dot_product_attention with 5 keys and 6 values")


# Half-precision attention computed in its own dtype (or wider and cast back) on O(1) inputs is
# off by at most ~1.5e-3 (float16, 10 mantissa bits) and ~1.6e-2 (bfloat16, 7 bits) from the
# float64 reference on the same rounded inputs (measured over 200 random cases, d_k up to 64);
# the tolerances below leave a factor of about 3. float32 and float64 keep the 1e-5 of ATOL.
HALF_TOL = {"float16": 5e-3, "bfloat16": 4e-2}


def _tol(dtype_name):
    return HALF_TOL.get(dtype_name, ATOL)


def _masked_attention(q, k, v, mask):
    """float64 attention whose fully masked rows are zeros (the contract)."""
    out = _attention(q, k, v, mask)
    if mask is None:
        return out
    return out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)


def _random_mask(kind, batch, t_q, t_k, seed):
    gen = torch.Generator().manual_seed(seed)
    if kind == "none":
        return None
    if kind == "causal":
        return torch.ones(t_q, t_k, dtype=torch.bool).tril()
    shape = {"random": (*batch, t_q, t_k), "keys": (1, t_k), "rows": (t_q, 1)}[kind]
    return torch.rand(*shape, generator=gen) > 0.4


@pytest.mark.exercise("scaled_dot_product_attention", points=2)
@grading(max_examples=12)
# Always tried, whatever hypothesis draws: batched views (a .view of them fails or scrambles), and
# a mask broadcast over rows that leaves some query with no allowed key.
@example(batch=(2, 3), t_q=3, t_k=4, d_k=3, d_v=4, mask="keys", dtype="float32", layout="heads", seed=5)
@example(batch=(2,), t_q=6, t_k=5, d_k=8, d_v=4, mask="rows", dtype="float64", layout="contiguous", seed=11)
@given(batch=st.sampled_from([(), (2,), (2, 3)]), t_q=st.integers(1, 6), t_k=st.integers(1, 7),
       d_k=st.sampled_from([1, 3, 8]), d_v=st.sampled_from([1, 4]),
       mask=st.sampled_from(["none", "causal", "random", "keys", "rows"]), dtype=dtypes(),
       layout=layouts(), seed=seeds())
def test_sdpa_over_its_inputs(student, batch, t_q, t_k, d_k, d_v, mask, dtype, layout, seed):
    """Any batch shape, sizes (d_k = 1 included), boolean mask shape, dtype and layout; q, k, v and the mask are left unchanged."""
    dt = FLOAT_DTYPES[dtype]
    q, k, v = (tensor(seed + i, *batch, t, d, dtype=dt)
               for i, (t, d) in enumerate([(t_q, d_k), (t_k, d_k), (t_k, d_v)]))
    m = _random_mask(mask, batch, t_q, t_k, seed + 3)
    got = student.scaled_dot_product_attention(laid_out(q, layout), laid_out(k, layout), laid_out(v, layout),
                                               mask=None if m is None else laid_out(m, layout))
    # The named tests own the formula, the mask, the scale, fully masked rows and the dtype: their
    # mistakes pass here. This test owns any shape and layout, and leaving the inputs unchanged.
    expect_shape(got, (*batch, t_q, d_v))
    _expect_attention(got, _masked_attention(q, k, v, m), q, k, v, m, atol=_tol(dtype), rtol=_tol(dtype),
                      mistakes=_sdpa_mistakes(q, k, v, m))


# -- self_attention -----------------------------------------------------------------------------
def _self_attention(x, w_q, w_k, w_v, causal=False, *, diagonal=0, upper=False, swap_qk=False,
                    linear_layout=False, **attention):
    """Reference self-attention in float64, with switches that reproduce catalogued mistakes:
    ``diagonal``/``upper`` the causal mask's shape, ``swap_qk`` queries made with w_k and keys with
    w_q, ``linear_layout`` each weight read as nn.Linear's (d_out, d_model) (square weights only),
    ``attention`` passed to :func:`_attention` (scale, softmax_dim, mask_after)."""
    x = x.double()
    w_q, w_k, w_v = w_q.double(), w_k.double(), w_v.double()
    if linear_layout:
        w_q, w_k, w_v = w_q.T, w_k.T, w_v.T
    if swap_qk:
        w_q, w_k = w_k, w_q
    mask = None
    if causal:
        ones = torch.ones(x.shape[-2], x.shape[-2], dtype=torch.bool)
        mask = ones.triu(-diagonal) if upper else ones.tril(diagonal)
    return _attention(x @ w_q, x @ w_k, x @ w_v, mask, **attention)


def _square(*weights):
    return all(w.shape[0] == w.shape[1] for w in weights)


def _self_attention_mistakes(x, w_q, w_k, w_v, causal):
    mistakes = {
        "values taken from x instead of x @ w_v": _attention(
            x.double() @ w_q.double(), x.double() @ w_k.double(), x.double(),
            torch.ones(x.shape[-2], x.shape[-2], dtype=torch.bool).tril() if causal else None)
        if w_v.shape[1] == x.shape[-1] else None,
        "keys computed with w_q": _self_attention(x, w_q, w_q, w_v, causal),
        "queries and keys swapped (scores k q^T: the attention matrix transposed)":
            _self_attention(x, w_q, w_k, w_v, causal, swap_qk=True),
        "projections transposed (x @ w.T: weights read as nn.Linear's (d_out, d_model))":
            _self_attention(x, w_q, w_k, w_v, causal, linear_layout=True) if _square(w_q, w_k, w_v) else None,
        "missing the 1/sqrt(d_k) scaling": _self_attention(x, w_q, w_k, w_v, causal, scale=1.0),
        "softmax over the query axis (dim=-2) instead of the key axis (dim=-1)":
            _self_attention(x, w_q, w_k, w_v, causal, softmax_dim=-2),
        "the mask ignored (causal=True behaves like causal=False)": _self_attention(x, w_q, w_k, w_v),
    }
    if causal:
        mistakes["mask keeps the future instead of the past (triu instead of tril)"] = \
            _self_attention(x, w_q, w_k, w_v, True, upper=True)
        mistakes["mask leaks the next token (tril(1): the diagonal one too high)"] = \
            _self_attention(x, w_q, w_k, w_v, True, diagonal=1)
        mistakes["mask applied after the softmax (the future still sets the normalisation)"] = \
            _self_attention(x, w_q, w_k, w_v, True, mask_after=True)
    else:
        mistakes["a causal mask applied although causal=False"] = _self_attention(x, w_q, w_k, w_v, True)
    return {k: v for k, v in mistakes.items() if v is not None}


def _weights(d_model, d_k, d_v, seed):
    return (_randn(d_model, d_k, seed=seed), _randn(d_model, d_k, seed=seed + 1),
            _randn(d_model, d_v, seed=seed + 2))


# One mistake costs once: "projections" (which weights make the queries, keys and values, in which
# layout, and the attention formula of a learner who writes it inline: the scale and the softmax's
# axis) is owned by test_self_attention_without_mask and test_self_attention_projections; "mask"
# (the causal mask keeps the past and the diagonal, before the softmax) by test_self_attention_causal
# and test_self_attention_causal_hides_the_future; the dtype and memory layout by
# test_self_attention_over_its_inputs. Every other test accepts the output of a mistake another
# test owns.
#
# A core mistake costs at least half of the exercise's 16 points (DESIGN.md): a mask that leaks
# the future (triu, tril(1), applied after the softmax, or ignored) fails the causal public check
# (4) and test_self_attention_causal_hides_the_future (4), 8 points; a wrong projection or formula
# (no 1/sqrt(d_k), softmax over the queries, queries and keys swapped) fails both public checks
# (2 + 4: a public check accepts no mistake its inputs reveal) and test_self_attention_projections
# (2), 8 points.
def _self_attention_owned(x, w_q, w_k, w_v, causal):
    """The outputs of the catalogued mistakes, grouped by the property (and test) that owns them."""
    x64 = x.double()
    tril = torch.ones(x.shape[-2], x.shape[-2], dtype=torch.bool).tril() if causal else None
    projections = [_attention(x64 @ w_q.double(), x64 @ w_k.double(), x64, tril),
                   _self_attention(x, w_q, w_q, w_v, causal),
                   _self_attention(x, w_q, w_k, w_v, causal, swap_qk=True),
                   _self_attention(x, w_q, w_k, w_v, causal, scale=1.0),
                   _self_attention(x, w_q, w_k, w_v, causal, softmax_dim=-2)]
    if _square(w_q, w_k, w_v):
        projections.append(_self_attention(x, w_q, w_k, w_v, causal, linear_layout=True))
    owned = {"projections": projections, "mask": []}
    if causal:  # a row with no allowed key (token 0 without the diagonal) gives zeros, as attention's contract
        owned["mask"] = [_self_attention(x, w_q, w_k, w_v), _self_attention(x, w_q, w_k, w_v, True, upper=True),
                         _self_attention(x, w_q, w_k, w_v, True, diagonal=-1).nan_to_num(nan=0.0),
                         _self_attention(x, w_q, w_k, w_v, True, diagonal=1),
                         _self_attention(x, w_q, w_k, w_v, True, mask_after=True)]
    return owned


def _expect_self_attention(got, x, w_q, w_k, w_v, causal, *, owner=None, atol=ATOL, rtol=RTOL, what="output"):
    accepted = [out for name, outs in _self_attention_owned(x, w_q, w_k, w_v, causal).items() if name != owner
                for out in outs]
    expect_close(got, _self_attention(x, w_q, w_k, w_v, causal), atol=atol, rtol=rtol, what=what,
                 mistakes=_self_attention_mistakes(x, w_q, w_k, w_v, causal), accepted=accepted)


@pytest.mark.exercise("self_attention", points=2, public=True)
def test_self_attention_without_mask(student):
    """Without a mask, self_attention(x) is attention(x w_q, x w_k, x w_v)."""
    x, weights = _randn(6, 8, seed=30), _weights(8, 8, 8, seed=31)
    got = student.self_attention(x, *weights)
    _expect_self_attention(got, x, *weights, False, owner="projections")


@pytest.mark.exercise("self_attention", points=4, public=True)
def test_self_attention_causal(student):
    """With causal=True, token t attends only to tokens s <= t."""
    x, weights = _randn(6, 8, seed=34), _weights(8, 8, 8, seed=35)
    got = student.self_attention(x, *weights, causal=True)
    # Token 0 sees only itself: its output is x_0 w_v (a mask without the diagonal gives it nothing).
    _expect_self_attention(got, x, *weights, True, owner="mask")


@pytest.mark.exercise("self_attention", points=2)
def test_self_attention_projections(student):
    """Without a mask, d_k = 3 and d_v = 5 below d_model = 8: queries x w_q, keys x w_k, values x w_v, scaled by 1/sqrt(d_k)."""
    x, weights = _randn(7, 8, seed=60), _weights(8, 3, 5, seed=61)
    got = student.self_attention(x, *weights)
    _expect_self_attention(got, x, *weights, False, owner="projections",
                           what="output for d_model=8, d_k=3, d_v=5")


@pytest.mark.exercise("self_attention", points=4)
def test_self_attention_causal_hides_the_future(student):
    """With causal=True on a batch of two 9-token sequences, no token's output depends on a later token."""
    x, weights = _randn(2, 9, 8, seed=64), _weights(8, 8, 8, seed=65)
    got = student.self_attention(x, *weights, causal=True)
    _expect_self_attention(got, x, *weights, True, owner="mask",
                           what="causal output for 2 sequences of 9 tokens")


@pytest.mark.exercise("self_attention", points=1)
def test_self_attention_batched_with_different_widths(student):
    """Batched input (2, 3, T, d_model) with d_k != d_v, causal, matches the reference."""
    x, weights = _randn(2, 3, 5, 6, seed=38), _weights(6, 4, 7, seed=39)
    got = student.self_attention(x, *weights, causal=True)
    _expect_self_attention(got, x, *weights, True)


@pytest.mark.exercise("self_attention", points=1)
def test_self_attention_rejects_mismatched_weights(student):
    """A w_q, w_k or w_v whose first dimension is not d_model is rejected with a ValueError."""
    x, (w_q, w_k, w_v) = _randn(4, 5, seed=46), _weights(6, 4, 4, seed=47)
    expect_raises(ValueError, student.self_attention, x, w_q, w_k, w_v,
                  what="self_attention with (6, 4) weights for d_model=5")
    x, (w_q, w_k, w_v) = _randn(4, 5, seed=48), _weights(5, 3, 3, seed=49)
    expect_raises(ValueError, student.self_attention, x, w_q, _randn(6, 3, seed=52), w_v,
                  what="self_attention with w_k of shape (6, 3) for d_model=5")
    expect_raises(ValueError, student.self_attention, x, w_q, w_k, _randn(4, 3, seed=55),
                  what="self_attention with w_v of shape (4, 3) for d_model=5")


# self_attention rounds twice more than attention (the projections x @ w in the input dtype):
# with weights scaled by 1/sqrt(d_model) the projections stay O(1) and the error stays within the
# tolerances of scaled_dot_product_attention (HALF_TOL, measured as above for d_model <= 8).
@pytest.mark.exercise("self_attention", points=2)
@grading(max_examples=10)
@given(batch=st.sampled_from([(), (3,)]), t=st.integers(1, 6), d_model=st.sampled_from([1, 2, 5, 8]),
       d_k=st.sampled_from([1, 3, 4]), d_v=st.sampled_from([1, 2, 6]), causal=st.booleans(),
       dtype=dtypes(), layout=layouts(), seed=seeds())
def test_self_attention_over_its_inputs(student, batch, t, d_model, d_k, d_v, causal, dtype, layout, seed):
    """Any T, widths (1 included), causal flag, dtype and memory layout of x and the weights, with or without a batch axis."""
    dt = FLOAT_DTYPES[dtype]
    x = tensor(seed, *batch, t, d_model, dtype=dt)
    w_q, w_k, w_v = (tensor(seed + i, d_model, d, dtype=dt, scale=d_model ** -0.5)
                     for i, d in ((1, d_k), (2, d_k), (3, d_v)))
    got = student.self_attention(*(laid_out(a, layout) for a in (x, w_q, w_k, w_v)), causal=causal)
    expect_dtype(got, dt, what=f"output for {dtype} inputs")
    # The named tests own the projections, the mask and 4-D batches (their mistakes pass here); this
    # test owns the dtype and the memory layouts.
    _expect_self_attention(got, x, w_q, w_k, w_v, causal, atol=_tol(dtype), rtol=_tol(dtype))


# -- permutation_matrix -------------------------------------------------------------------------
# One mistake costs once: test_permutation_matrix_reorders_rows owns the orientation (P[i, perm[i]],
# not its transpose), test_permutation_matrix_entries_and_dtype the float32 dtype; the other tests
# accept the transpose and any dtype.
@pytest.mark.exercise("permutation_matrix", points=2, public=True)
def test_permutation_matrix_reorders_rows(student):
    """P @ x == x[perm] for a permutation of 5 tokens."""
    perm = torch.tensor([2, 0, 4, 1, 3])
    x = _randn(5, 3, seed=50, dtype=torch.float64)
    got = student.permutation_matrix(perm)
    expect_shape(got, (5, 5))
    expect_close(got.double() @ x, x[perm], atol=0, rtol=0, what="P @ x",
                 mistakes={"the transpose: P[perm[i], i] = 1, which gives x[argsort(perm)]":
                           x[torch.argsort(perm)]})


@pytest.mark.exercise("permutation_matrix", points=1)
def test_permutation_matrix_entries_and_dtype(student):
    """For a list input too, P is a float32 matrix with one 1 per row and column (the orientation belongs to the public test)."""
    perm = [3, 1, 0, 2]
    got = student.permutation_matrix(perm)
    expect_dtype(got, torch.float32, what="P")
    expected = torch.zeros(4, 4)
    expected[torch.arange(4), torch.tensor(perm)] = 1
    expect_close(got, expected, atol=0, rtol=0, what="P", accepted=[expected.T])


@pytest.mark.exercise("permutation_matrix", points=1)
def test_permutation_matrix_is_orthogonal(student):
    """P^T P = I for a permutation of 7."""
    perm = torch.randperm(7, generator=torch.Generator().manual_seed(51))
    p = student.permutation_matrix(perm).double()
    expect_close(p.T @ p, torch.eye(7), atol=0, rtol=0, what="P^T P")


@pytest.mark.exercise("permutation_matrix", points=1)
def test_permutation_matrix_rejects_bad_permutations(student):
    """Repeated, out-of-range or negative indices, and a 2-D perm (even of 0..3 once each), are rejected with a ValueError."""
    for perm in ([0, 0, 2], [0, 1, 3], [0, -1, 2], [[1, 0], [3, 2]]):
        expect_raises(ValueError, student.permutation_matrix, torch.tensor(perm),
                      what=f"permutation_matrix({perm})")


@pytest.mark.exercise("permutation_matrix", points=2)
@grading(max_examples=10)
@given(t=st.integers(1, 12), form=st.sampled_from(["tensor", "list", "strided"]), seed=seeds())
def test_permutation_matrix_over_its_inputs(student, t, form, seed):
    """For any T (1 included) and perm given as a tensor, a list or a strided view: P[i, perm[i]] = 1."""
    perm = torch.randperm(t, generator=torch.Generator().manual_seed(seed))
    arg = {"tensor": perm, "list": perm.tolist(), "strided": view(perm, "strided")}[form]
    got = student.permutation_matrix(arg)
    expected = torch.zeros(t, t)
    expected[torch.arange(t), perm] = 1
    expect_close(got, expected, atol=0, rtol=0, what="P", accepted=[expected.T])


# -- max_equivariance_error ---------------------------------------------------------------------
def _reference_error(fn, x, perm):
    return (fn(x[..., perm, :]) - fn(x)[..., perm, :]).abs().max().item()


def _error_mistakes(fn, x, perm):
    inverse = torch.argsort(perm)
    return {
        "the inverse permutation used on one side": (fn(x[..., perm, :]) - fn(x)[..., inverse, :]).abs().max(),
        "signed difference (missing abs)": (fn(x[..., perm, :]) - fn(x)[..., perm, :]).max(),
        "mean instead of max": (fn(x[..., perm, :]) - fn(x)[..., perm, :]).abs().mean(),
        "the permutation applied to the first axis instead of the token axis":
            (fn(x[perm]) - fn(x)[perm]).abs().max() if x.shape[0] == len(perm) else -1.0,
    }


# One mistake costs once: test_gap_is_zero_for_an_equivariant_function owns the type (a Python
# float), test_gap_of_a_position_ramp the formula (the same permutation on both sides, the max),
# test_gap_with_a_signed_difference_that_is_negative the absolute value,
# test_gap_of_a_causal_mean_with_batch_axes the token axis, test_gap_over_its_inputs the dtypes,
# memory layouts (non-contiguous batch axes included) and leaving x unchanged.
# Every other test accepts the value of a mistake another test owns.
_ERROR_OWNED = {"formula": ("the inverse permutation used on one side", "mean instead of max"),
                "abs": ("signed difference (missing abs)",),
                "token axis": ("the permutation applied to the first axis instead of the token axis",)}


def _error_accepted(fn, x, perm, owner=None):
    mistakes = _error_mistakes(fn, x, perm)
    return [mistakes[name] for group, names in _ERROR_OWNED.items() if group != owner for name in names]


@pytest.mark.exercise("max_equivariance_error", points=1, public=True)
def test_gap_is_zero_for_an_equivariant_function(student):
    """A token-wise function (softmax over features) has error 0, returned as a Python float."""
    student.may_modify_arguments = True  # a hidden test owns leaving x unchanged
    x, perm = _randn(6, 4, seed=60), torch.tensor([5, 3, 1, 0, 2, 4])
    got = student.max_equivariance_error(student.fixture("permutation_invariance.row_softmax"), x, perm)
    expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
    expect_close(got, 0.0, atol=1e-7, rtol=0, what="error of a token-wise function",
                 accepted=_error_accepted(fixtures.row_softmax, x, perm))


@pytest.mark.exercise("max_equivariance_error", points=1, public=True)
def test_gap_of_a_position_ramp(student):
    """For fn(x) = x + 0.5 t, the error is 0.5 * max_t |t - perm[t]|."""
    x, perm = _randn(6, 4, seed=61), torch.tensor([1, 2, 3, 4, 5, 0])
    student.may_modify_arguments = True
    fn = lambda z: fixtures.add_ramp(z, scale=0.5)  # noqa: E731
    got = student.max_equivariance_error(student.fixture("permutation_invariance.add_ramp", scale=0.5),
                                         x, perm)
    expect_close(got, _reference_error(fn, x, perm), atol=1e-6, rtol=1e-6, what="error",
                 mistakes=_error_mistakes(fn, x, perm), accepted=_error_accepted(fn, x, perm, "formula"))


@pytest.mark.exercise("max_equivariance_error", points=1)
def test_gap_of_a_causal_mean_with_batch_axes(student):
    """Batched x (3, T, d): the permutation acts on the token axis (-2), not the batch axis."""
    x = _randn(3, 3, 5, seed=62, dtype=torch.float64)
    perm = torch.tensor([2, 0, 1])
    student.may_modify_arguments = True
    got = student.max_equivariance_error(student.fixture("permutation_invariance.causal_mean"), x, perm)
    expect_close(got, _reference_error(fixtures.causal_mean, x, perm), atol=1e-9, rtol=1e-9,
                 what="error", mistakes=_error_mistakes(fixtures.causal_mean, x, perm),
                 accepted=_error_accepted(fixtures.causal_mean, x, perm, "token axis"))


@pytest.mark.exercise("max_equivariance_error", points=1)
def test_gap_with_a_signed_difference_that_is_negative(student):
    """The error is the largest absolute difference, also when the largest is negative (-3, the others +1)."""
    x, perm = torch.zeros(4, 2, dtype=torch.float64), torch.tensor([1, 2, 3, 0])
    student.may_modify_arguments = True
    fn = lambda z: fixtures.add_ramp(z, scale=-1.0)  # noqa: E731
    got = student.max_equivariance_error(student.fixture("permutation_invariance.add_ramp", scale=-1.0),
                                         x, perm)
    expect_close(got, _reference_error(fn, x, perm), atol=1e-9, rtol=0, what="error",
                 mistakes=_error_mistakes(fn, x, perm), accepted=_error_accepted(fn, x, perm, "abs"))


@pytest.mark.exercise("max_equivariance_error", points=1)
def test_gap_rejects_a_permutation_of_the_wrong_length(student):
    """A permutation whose length differs from the token axis (-2) is rejected with a ValueError, batched or not."""
    student.may_modify_arguments = True
    expect_raises(ValueError, student.max_equivariance_error,
                  student.fixture("permutation_invariance.row_softmax"), _randn(4, 3, seed=63),
                  torch.tensor([0, 1, 2]), what="max_equivariance_error with 3 indices for 4 tokens")
    expect_raises(ValueError, student.max_equivariance_error, student.fixture("permutation_invariance.causal_mean"),
                  _randn(3, 4, 2, seed=64), torch.tensor([2, 0, 1]),
                  what="max_equivariance_error with 3 indices for 4 tokens (batch of 3)")


_EQUIVARIANCE_FNS = {"row_softmax": {}, "add_ramp": {"scale": 0.5}, "add_ramp_negative": {"scale": -1.25},
                     "causal_mean": {}, "attention_mix": {}, "widen": {}}


@pytest.mark.exercise("max_equivariance_error", points=1)
@grading(max_examples=10)
# Always tried: x a (B, H, T, d) view of a (B, T, H, d) projection, as in a real model, whose batch
# axes are not contiguous (flattening them with .view fails).
@example(fn="add_ramp", batch="T x 3", t=5, d=4, dtype="float64", layout="heads", perm_form="tensor", seed=66)
@given(fn=st.sampled_from(sorted(_EQUIVARIANCE_FNS)), batch=st.sampled_from(["none", "T", "T x 3"]),
       t=st.integers(1, 7), d=st.integers(1, 4), dtype=dtypes("float32", "float64"), layout=layouts(),
       perm_form=st.sampled_from(["tensor", "list"]), seed=seeds())
def test_gap_over_its_inputs(student, fn, batch, t, d, dtype, layout, perm_form, seed):
    """Any function (equivariant or not, wider output), batch axes, T (1 included), dtype and layout of x; x is left unchanged."""
    # The batch axes' sizes are T (and 3): a length check against the wrong axis is
    # test_gap_rejects_a_permutation_of_the_wrong_length's to charge.
    batch = {"none": (), "T": (t,), "T x 3": (t, 3)}[batch]
    x = tensor(seed, *batch, t, d, dtype=FLOAT_DTYPES[dtype])
    perm = torch.randperm(t, generator=torch.Generator().manual_seed(seed + 1))
    kwargs = _EQUIVARIANCE_FNS[fn]
    name = fn.removesuffix("_negative")
    local = lambda z: getattr(fixtures, name)(z, **kwargs)  # noqa: E731
    got = student.max_equivariance_error(student.fixture(f"permutation_invariance.{name}", **kwargs),
                                         laid_out(x, layout), perm if perm_form == "tensor" else perm.tolist())
    # The learner applies the same fixture to the same values: only the order of a few float
    # operations can differ (float32 rounding of O(10) values is ~1e-6). The named tests own the
    # type, the formula, the absolute value and the token axis: their mistakes pass here.
    tol = 1e-5 if dtype == "float32" else 1e-9
    expect_close(got, _reference_error(local, x, perm), atol=tol, rtol=tol, what="error",
                 mistakes=_error_mistakes(local, x, perm), accepted=_error_accepted(local, x, perm))


# -- unchanged_outputs --------------------------------------------------------------------------
def _unchanged(perm):
    """Positions t whose causal output is the same after the shuffle: perm[t] == t and perm maps the
    prefix 0..t-1 onto itself (the query and its set of keys are both unchanged)."""
    perm = [int(p) for p in perm]
    return [t for t in range(len(perm)) if perm[t] == t and sorted(perm[:t]) == list(range(t))]


def _unchanged_mistakes(perm):
    perm = [int(p) for p in perm]
    n = len(perm)
    return {
        "only the last position, when the last token stays (the case the notebook shows)":
            [n - 1] if perm[-1] == n - 1 else [],
        "every position that keeps its token (a moved key also changes the output)":
            [t for t in range(n) if perm[t] == t],
        "every position whose prefix 0..t, itself included, is kept as a set (the query may have moved)":
            [t for t in range(n) if sorted(perm[: t + 1]) == list(range(t + 1))],
        "every position after the last one the permutation moves":
            [t for t in range(n) if all(perm[s] == s for s in range(t, n))],
    }


def _expect_unchanged(student, perm, what):
    got = student.unchanged_outputs(torch.tensor(perm))
    expect_true(isinstance(got, list) and all(isinstance(t, int) for t in got),
                f"unchanged_outputs should return a list of Python ints, not {got!r}")
    want = _unchanged(perm)
    if sorted(got) != want:
        named = [name for name, value in _unchanged_mistakes(perm).items() if sorted(got) == value and value != want]
        hint = f" (it looks like: {named[0]})" if named else ""
        fail(f"{what}: got {sorted(got)}, which is not the set of positions whose output cannot change{hint}")


@pytest.mark.exercise("unchanged_outputs", points=2, public=True)
def test_unchanged_outputs_of_a_prefix_shuffle(student):
    """The first three of 5 tokens shuffled: the answer is a list of positions."""
    _expect_unchanged(student, [2, 0, 1, 3, 4], "unchanged_outputs([2, 0, 1, 3, 4])")


@pytest.mark.exercise("unchanged_outputs", points=3)
def test_unchanged_outputs_when_the_end_moves(student):
    """A swap at the end of 7 tokens: the untouched prefix keeps its outputs, the last token does not."""
    _expect_unchanged(student, [0, 1, 2, 3, 4, 6, 5], "unchanged_outputs(<the last two of 7 tokens swapped>)")


@pytest.mark.exercise("unchanged_outputs", points=3)
def test_unchanged_outputs_of_a_token_that_returns(student):
    """Tokens 1 and 3 of 6 swapped: token 2 stays in place, but one of its keys changed."""
    _expect_unchanged(student, [0, 3, 2, 1, 4, 5], "unchanged_outputs(<tokens 1 and 3 of 6 swapped>)")


@pytest.mark.exercise("unchanged_outputs", points=2)
def test_unchanged_outputs_of_two_blocks(student):
    """Two separate shuffles in 9 tokens, and the identity of 4: positions between and after the blocks."""
    _expect_unchanged(student, [1, 0, 2, 3, 5, 4, 6, 8, 7], "unchanged_outputs(<two swaps in 9 tokens>)")
    _expect_unchanged(student, [0, 1, 2, 3], "unchanged_outputs(<the identity on 4 tokens>)")


@pytest.mark.exercise("unchanged_outputs", points=3)
@grading(max_examples=12)
@given(t=st.integers(1, 12), moved=st.integers(0, 4), seed=seeds())
def test_unchanged_outputs_over_permutations(student, t, moved, seed):
    """Permutations of 1 to 12 tokens that shuffle a few random blocks (given as a tensor)."""
    gen = torch.Generator().manual_seed(seed)
    perm = list(range(t))
    for _ in range(moved):  # shuffle a random block [a, b)
        a = int(torch.randint(0, t, (1,), generator=gen))
        b = int(torch.randint(a, t + 1, (1,), generator=gen))
        block = perm[a:b]
        perm[a:b] = [block[i] for i in torch.randperm(len(block), generator=gen).tolist()]
    _expect_unchanged(student, perm, f"unchanged_outputs({perm})")


@pytest.mark.exercise("unchanged_outputs", points=1)
def test_unchanged_outputs_rejects_a_non_permutation(student):
    """A repeated index ([0, 0, 2]) is not a permutation: ValueError."""
    expect_raises(ValueError, student.unchanged_outputs, torch.tensor([0, 0, 2]),
                  what="unchanged_outputs([0, 0, 2])")


# -- position_probe_r2 --------------------------------------------------------------------------
# The grader plants the layer: token-wise outputs y_t = mu_t + s_t (z_t A), z_t standard normal, whose
# mean mu_t and spread s_t depend on the position in a known way. The quantity is the R^2 on fresh
# sequences of the least-squares read-out of t from (1, y_t, y_t^2) fitted to the given outputs. y given
# t is Gaussian, so that read-out's error on fresh sequences follows from the layer's moments (below),
# in closed form: the ground truth is known by construction, not by running a protocol.
PROBE_TOLERANCE = 0.05
"""Absolute tolerance on R^2. With many rows per feature (>= 3200 rows for <= 32 features) any sound
estimate lands within about 0.02. The few-rows cases (480 to 1280 rows for 49 to 97 features) are where
an estimate must hold for sequences it was not given: a read-out scored on the rows it was fitted on
overestimates by about 2p/N (0.1 or more there), while cross-validation over whole sequences with 5
folds or more lands within about 0.03; a split in two halves fits on half the rows and underestimates
by about p/N."""


def _planted_layer(kind, seed, num_tokens, d):
    """(mu (T, d), s (T,), A (d, d)) of a planted layer: where its position shows."""
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
    u = torch.randn(d, generator=gen, dtype=torch.float64)
    u = u / u.norm()
    t = torch.arange(num_tokens, dtype=torch.float64)
    zeros, ones = torch.zeros(num_tokens, d, dtype=torch.float64), torch.ones(num_tokens, dtype=torch.float64)
    if kind == "mean":      # the position moves the mean along one direction
        return 1.5 * (t / (num_tokens - 1)).sqrt()[:, None] * u, ones, a
    if kind == "spread":    # the position only shrinks the spread, as causal averaging does
        return zeros, (t + 1) ** -0.5, a
    if kind == "both":
        return 0.1 * torch.cos(math.pi * t / num_tokens)[:, None] * u, 1 / (1 + t / num_tokens), a
    return zeros, ones, a   # "none": no position at all


def _planted_outputs(kind, seed, n, num_tokens, d, dtype=torch.float64):
    mu, s, a = _planted_layer(kind, seed, num_tokens, d)
    z = torch.randn(n, num_tokens, d, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
    return (mu + s[:, None] * (z @ a)).to(dtype)  # (n, T, d)


def _feature_moments(kind, seed, num_tokens, d):
    """(Cov(f), Cov(f, t), E[f], E[t]) of the features f = (y_t, y_t^2), t uniform on 0..T-1.

    With y | t ~ N(mu_t, s_t^2 S), S = A^T A: Cov(y_i, y_j) = s^2 S_ij, Cov(y_i, y_j^2) = 2 mu_j s^2 S_ij,
    Cov(y_i^2, y_j^2) = 2 s^4 S_ij^2 + 4 mu_i mu_j s^2 S_ij (Isserlis); the total covariance adds the
    spread of the conditional means.
    """
    mu, s, a = _planted_layer(kind, seed, num_tokens, d)
    sig = a.T @ a
    t = torch.arange(num_tokens, dtype=torch.float64)
    means = torch.cat([mu, mu ** 2 + (s ** 2)[:, None] * sig.diagonal()], 1)  # (T, 2d) E[features | t]
    within = torch.zeros(2 * d, 2 * d, dtype=torch.float64)
    for m, v in zip(mu, s ** 2):
        yy, yq = v * sig, 2 * v * sig * m[None, :]
        qq = 2 * v ** 2 * sig ** 2 + 4 * v * sig * m[:, None] * m[None, :]
        within += torch.cat([torch.cat([yy, yq], 1), torch.cat([yq.T, qq], 1)], 0) / num_tokens
    centred = means - means.mean(0)
    total = within + centred.T @ centred / num_tokens
    return total, centred.T @ (t - t.mean()) / num_tokens, means.mean(0), t.mean()


def _population_r2(kind, seed, num_tokens, d, *, squares=True):
    """R^2 of the best predictor of t linear in (1, y_t, y_t^2) (or in (1, y_t)): c^T C^-1 c / Var(t)."""
    total, c, _, _ = _feature_moments(kind, seed, num_tokens, d)
    t = torch.arange(num_tokens, dtype=torch.float64)
    keep = slice(None) if squares else slice(0, d)
    value = c[keep] @ torch.linalg.solve(total[keep, keep], c[keep])
    return (value / ((t - t.mean()) ** 2).mean()).item()


def _fitted_r2(outputs, kind, seed):
    """R^2 on fresh sequences of the layer of the least-squares read-out of t from (1, y_t, y_t^2)
    fitted to ``outputs`` (n, T, d): 1 - E[(b + f.w - t)^2] / Var(t), from the layer's moments."""
    n, num_tokens, d = outputs.shape
    y = outputs.double()
    features = torch.cat([y, y ** 2, torch.ones(n, num_tokens, 1, dtype=torch.float64)], -1).reshape(-1, 2 * d + 1)
    t = torch.arange(num_tokens, dtype=torch.float64)
    fit = torch.linalg.lstsq(features, t.repeat(n)[:, None]).solution[:, 0]
    w, b = fit[:-1], fit[-1]
    total, cross, mean, _ = _feature_moments(kind, seed, num_tokens, d)
    variance = ((t - t.mean()) ** 2).mean()
    error = w @ total @ w - 2 * w @ cross + variance + (b + w @ mean - t.mean()) ** 2
    return 1.0 - (error / variance).item()


def _expect_probe(student, kind, seed, n, num_tokens, d, *, dtype=torch.float64, layout="contiguous"):
    outputs = _planted_outputs(kind, seed, n, num_tokens, d, dtype)
    got = student.position_probe_r2(laid_out(outputs, layout))
    expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
    want = _fitted_r2(outputs, kind, seed)
    linear_only = _population_r2(kind, seed, num_tokens, d, squares=False)
    what = f"R^2 for a planted layer ({n} sequences of {num_tokens} tokens, d = {d})"
    if not within(got, want, atol=PROBE_TOLERANCE, what=what):
        hint = ""
        if within(got, linear_only, atol=PROBE_TOLERANCE, what=what) and abs(want - linear_only) > PROBE_TOLERANCE:
            hint = " (it matches a read-out of y_t alone, without the squares)"
        side = "above" if got > want else "below"
        fail(f"{what}: got {got:.3f}, {side} the R^2 that the read-out fitted to these outputs has on fresh "
             f"sequences by more than {PROBE_TOLERANCE}{hint}")


@pytest.mark.exercise("position_probe_r2", points=2, public=True)
def test_probe_r2_of_a_layer_whose_mean_moves(student):
    """A planted layer whose mean output moves with position (300 sequences of 12 tokens, d = 8)."""
    _expect_probe(student, "mean", 81, 300, 12, 8)


@pytest.mark.exercise("position_probe_r2", points=2)
def test_probe_r2_of_a_layer_whose_spread_shrinks(student):
    """A planted layer whose outputs only shrink with the position, as causal averaging makes them."""
    _expect_probe(student, "spread", 82, 300, 16, 12)


@pytest.mark.exercise("position_probe_r2", points=1)
def test_probe_r2_of_a_layer_with_both(student):
    """A planted layer whose mean and spread both depend on the position."""
    _expect_probe(student, "both", 83, 250, 16, 16)


# Few rows for many features: what the read-out learnt from these rows' noise does not hold on fresh
# sequences, and an estimate scored on the rows it was fitted on is off by 0.1 or more.
@pytest.mark.exercise("position_probe_r2", points=4)
def test_probe_r2_of_a_layer_without_position_from_few_sequences(student):
    """A planted layer that ignores the position, 80 sequences of 16 tokens, d = 48: the fitted read-out explains nothing new."""
    _expect_probe(student, "none", 84, 80, 16, 48)


@pytest.mark.exercise("position_probe_r2", points=3)
def test_probe_r2_of_a_layer_whose_mean_moves_from_few_sequences(student):
    """A planted layer whose mean moves with the position, 40 sequences of 12 tokens, d = 24."""
    _expect_probe(student, "mean", 85, 40, 12, 24)


@pytest.mark.exercise("position_probe_r2", points=1)
@grading(max_examples=4)
@given(kind=st.sampled_from(["mean", "spread", "both"]), num_tokens=st.integers(8, 20), d=st.integers(2, 12),
       dtype=dtypes("float32", "float64"), layout=layouts("contiguous", "transposed", "strided"), seed=seeds())
def test_probe_r2_over_planted_layers(student, kind, num_tokens, d, dtype, layout, seed):
    """Other planted layers, sizes, dtypes and memory layouts; the outputs are left unchanged."""
    _expect_probe(student, kind, seed, 4000 // num_tokens, num_tokens, d, dtype=FLOAT_DTYPES[dtype], layout=layout)


@pytest.mark.exercise("position_probe_r2", points=1)
def test_probe_r2_rejects_outputs_that_are_not_sequences(student):
    """Outputs that are not (n, T, d), or hold one position only: ValueError."""
    expect_raises(ValueError, student.position_probe_r2, _randn(40, 6, seed=85, dtype=torch.float64),
                  what="position_probe_r2(<a (40, 6) table>)")
    expect_raises(ValueError, student.position_probe_r2, _randn(40, 1, 6, seed=86, dtype=torch.float64),
                  what="position_probe_r2(<40 sequences of 1 token>)")


# -- symmetry_of --------------------------------------------------------------------------------
# Each case is a sequence function, with the answer symmetry_of must give. The learner's detector
# gets it as a black box: it runs here, in the grader, so only its behaviour can tell. The hidden
# cases are in grader/judge/hidden/permutation_invariance.py, the public one in grader/fixtures. The named
# tests own the functions built to fool a detector; the property test draws from the others.
_SYMMETRY = {"plain_attention": "equivariant", "tokenwise_mlp": "equivariant", "mean_pooling": "invariant",
             "query_pooling": "invariant", "broadcast_mean": "invariant", "causal_attention": "neither",
             "absolute_bias": "neither", "position_scaled_scores": "neither", "symmetric_relative_bias": "neither"}


def _sequence_function(x):
    """The public signature of every function symmetry_of is handed: (T, d) -> (T, d) or (d,)."""


def _expect_symmetry(student, function, expected, num_tokens, d_model, **kwargs):
    fn = student.black_box(function, _sequence_function, **kwargs)
    got = student.symmetry_of(fn, num_tokens, d_model)
    expect_true(got in ("equivariant", "invariant", "neither"),
                f"symmetry_of should return 'equivariant', 'invariant' or 'neither', not {got!r}")
    expect_true(got == expected, f"a hidden function ({num_tokens} tokens, d_model = {d_model}) is {expected}, "
                                 f"but symmetry_of called it {got!r}")


@pytest.mark.exercise("symmetry_of", points=2, public=True)
def test_symmetry_of_plain_attention(student):
    """One head of attention without positions or mask (8 tokens, d_model = 4) is equivariant."""
    _expect_symmetry(student, fixtures.plain_attention, "equivariant", 8, 4)


@pytest.mark.exercise("symmetry_of", points=1)
def test_symmetry_of_a_last_position_effect(student):
    """Only the last position's scores are scaled (10 tokens): neither, though swapping tokens 0 and 1 cannot show it."""
    _expect_symmetry(student, hidden.last_token_scaled, "neither", 10, 3)


@pytest.mark.exercise("symmetry_of", points=1)
def test_symmetry_of_a_small_position_effect(student):
    """Learned position vectors of size 1e-4 added before attention: a small effect, still neither."""
    _expect_symmetry(student, hidden.absolute_bias, "neither", 6, 4, scale=1e-4)


# Half of all permutations cannot show the parity functions: they commute with every even
# permutation (the reversal of 9 tokens, every cyclic shift of them, and a random permutation with
# probability 1/2 are even) and with no odd one (a swap of two tokens is odd). A detector that tries
# one permutation is right on each with probability 1/2 at best; one that tries several, or a
# transposition, is right. Each test pairs one with a function of the other verdict, so that no
# constant answer passes it.
@pytest.mark.exercise("symmetry_of", points=3)
def test_symmetry_of_an_effect_only_odd_permutations_show(student):
    """Attention scaled by the parity of the tokens' order (9 tokens) is neither, though no even permutation shows it; a token-wise MLP is equivariant."""
    _expect_symmetry(student, hidden.order_parity_attention, "neither", 9, 3)
    _expect_symmetry(student, hidden.tokenwise_mlp, "equivariant", 9, 3)


@pytest.mark.exercise("symmetry_of", points=2)
def test_symmetry_of_a_pooling_only_odd_permutations_change(student):
    """Pooled attention scaled by the parity of the tokens' order (9 tokens) is neither, though every even permutation leaves it unchanged; plain pooling is invariant."""
    _expect_symmetry(student, hidden.order_parity_pooling, "neither", 9, 5)
    _expect_symmetry(student, hidden.mean_pooling, "invariant", 9, 5)


@pytest.mark.exercise("symmetry_of", points=1)
@grading(max_examples=10)
@given(name=st.sampled_from(sorted(_SYMMETRY)), num_tokens=st.integers(2, 9), d_model=st.sampled_from([1, 2, 5, 8]))
def test_symmetry_of_hidden_functions(student, name, num_tokens, d_model):
    """Hidden attention variants (pooling, masks, position vectors and biases, position-dependent scales), any T >= 2 and width."""
    _expect_symmetry(student, getattr(hidden, name), _SYMMETRY[name], num_tokens, d_model)
