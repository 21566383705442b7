"""Hidden tests and public checks for notebook 01, permutation invariance.

References are computed here in float64 with independent formulas (or torch's own SDPA).
"""
import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from grader.fixtures import permutation_invariance as fixtures
from grader.hidden import permutation_invariance as hidden
from grader.judge import expect_close, expect_dtype, expect_raises, expect_shape, expect_true, view
from grader.properties import FLOAT_DTYPES, dtypes, grading, laid_out, layouts, seeds, tensor


EXERCISE_ORDER = ("scaled_dot_product_attention", "self_attention", "permutation_matrix",
                  "max_equivariance_error", "symmetry_of", "position_probe_r2")
"""The exercises in the notebook's order (of their cells): reports number and list them so."""

TRUSTED_PREREQUISITES = {"self_attention": {"scaled_dot_product_attention": hidden.scaled_dot_product_attention}}
"""Exercises judged with the trusted version of an earlier one they call (grader.judge): a mistake
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
    otherwise fail against expected, naming the mistake where one of ``mistakes`` matches."""
    accepted = [out for name, outs in _owned_mistakes(q, k, v, mask).items() if name != owner
                for out in outs]
    expect_close(got, expected, atol=atol, rtol=rtol, what=what, mistakes=mistakes, accepted=accepted)


# -- scaled_dot_product_attention ---------------------------------------------------------------
@pytest.mark.exercise("scaled_dot_product_attention", points=2, public=True)
def test_sdpa_matches_reference_without_mask(student):
    """Without a mask, the output matches softmax(q k^T / sqrt(d_k)) v."""
    student.may_modify_arguments = True  # a hidden test owns leaving the inputs unchanged
    q, k, v = _randn(2, 3, 5, 8, seed=1), _randn(2, 3, 7, 8, seed=2), _randn(2, 3, 7, 4, seed=3)
    got = student.scaled_dot_product_attention(q, k, v)
    _expect_attention(got, _attention(q, k, v), q, k, v, owner="softmax axis",
                      mistakes=_sdpa_mistakes(q, k, v))


@pytest.mark.exercise("scaled_dot_product_attention", points=2, public=True)
def test_sdpa_causal_mask_matches_torch(student):
    """With a boolean causal mask, the output matches torch's scaled_dot_product_attention."""
    student.may_modify_arguments = True  # a hidden test owns leaving the inputs unchanged
    q, k, v = _randn(2, 6, 8, seed=4), _randn(2, 6, 8, seed=5), _randn(2, 6, 8, seed=6)
    mask = torch.ones(6, 6, dtype=torch.bool).tril()
    expected = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                                 attn_mask=mask)
    got = student.scaled_dot_product_attention(q, k, v, mask=mask)
    _expect_attention(got, expected, q, k, v, mask, owner="mask", mistakes=_sdpa_mistakes(q, k, v, mask))


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
    """The scores are scaled by 1/sqrt(d_k) even when d_v differs from d_k."""
    student.may_modify_arguments = True  # a hidden test owns leaving the inputs unchanged
    q, k, v = _randn(4, 4, seed=11) * 3, _randn(6, 4, seed=12) * 3, _randn(6, 16, seed=13)
    got = student.scaled_dot_product_attention(q, k, v)
    mistakes = {"scaling by 1/sqrt(d_v) instead of 1/sqrt(d_k)": _attention(q, k, v, scale=1 / 4.0)}
    mistakes.update(_sdpa_mistakes(q, k, v))
    _expect_attention(got, _attention(q, k, v), q, k, v, owner="scale", mistakes=mistakes)


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


@pytest.mark.exercise("scaled_dot_product_attention", points=3)
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
def _self_attention(x, w_q, w_k, w_v, causal=False, *, diagonal=0, upper=False):
    x = x.double()
    mask = None
    if causal:
        ones = torch.ones(x.shape[-2], x.shape[-2], dtype=torch.bool)
        mask = ones.triu(-diagonal) if upper else ones.tril(diagonal)
    return _attention(x @ w_q.double(), x @ w_k.double(), x @ w_v.double(), mask)


def _self_attention_mistakes(x, w_q, w_k, w_v, causal):
    mistakes = {
        "values taken from x instead of x @ w_v": _attention(
            x.double() @ w_q.double(), x.double() @ w_k.double(), x.double(),
            torch.ones(x.shape[-2], x.shape[-2], dtype=torch.bool).tril() if causal else None)
        if w_v.shape[1] == x.shape[-1] else None,
        "keys computed with w_q": _self_attention(x, w_q, w_q, w_v, causal),
        "the mask ignored (causal=True behaves like causal=False)": _self_attention(x, w_q, w_k, w_v),
    }
    if causal:
        mistakes["mask keeps the future instead of the past (triu instead of tril)"] = \
            _self_attention(x, w_q, w_k, w_v, True, upper=True)
    else:
        mistakes["a causal mask applied although causal=False"] = _self_attention(x, w_q, w_k, w_v, True)
    return {k: v for k, v in mistakes.items() if v is not None}


def _weights(d_model, d_k, d_v, seed):
    return (_randn(d_model, d_k, seed=seed), _randn(d_model, d_k, seed=seed + 1),
            _randn(d_model, d_v, seed=seed + 2))


# One mistake costs once: "projections" (which weights make the queries, keys and values) is owned
# by test_self_attention_without_mask, "mask" (the causal mask keeps the past and the diagonal) by
# test_self_attention_causal, 4-D batches and d_k != d_v by test_self_attention_batched_with_different_widths,
# the dtype and memory layout by test_self_attention_over_its_inputs. Every other test accepts
# the output of a mistake another test owns.
def _self_attention_owned(x, w_q, w_k, w_v, causal):
    """The outputs of the catalogued mistakes, grouped by the property (and test) that owns them."""
    x64 = x.double()
    tril = torch.ones(x.shape[-2], x.shape[-2], dtype=torch.bool).tril() if causal else None
    owned = {"projections": [_attention(x64 @ w_q.double(), x64 @ w_k.double(), x64, tril),
                             _self_attention(x, w_q, w_q, w_v, causal)],
             "mask": []}
    if causal:  # a row with no allowed key (token 0 without the diagonal) gives zeros, as attention's contract
        owned["mask"] = [_self_attention(x, w_q, w_k, w_v), _self_attention(x, w_q, w_k, w_v, True, upper=True),
                         _self_attention(x, w_q, w_k, w_v, True, diagonal=-1).nan_to_num(nan=0.0)]
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


@pytest.mark.exercise("self_attention", points=3, public=True)
def test_self_attention_causal(student):
    """With causal=True, token t attends only to tokens s <= t."""
    x, weights = _randn(6, 8, seed=34), _weights(8, 8, 8, seed=35)
    got = student.self_attention(x, *weights, causal=True)
    # Token 0 sees only itself: its output is x_0 w_v (a mask without the diagonal gives it nothing).
    _expect_self_attention(got, x, *weights, True, owner="mask")


@pytest.mark.exercise("self_attention", points=2)
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
@pytest.mark.exercise("self_attention", points=3)
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


@pytest.mark.exercise("max_equivariance_error", points=2, public=True)
def test_gap_of_a_position_ramp(student):
    """For fn(x) = x + 0.5 t, the error is 0.5 * max_t |t - perm[t]|."""
    x, perm = _randn(6, 4, seed=61), torch.tensor([1, 2, 3, 4, 5, 0])
    student.may_modify_arguments = True
    fn = lambda z: fixtures.add_ramp(z, scale=0.5)  # noqa: E731
    got = student.max_equivariance_error(student.fixture("permutation_invariance.add_ramp", scale=0.5),
                                         x, perm)
    expect_close(got, _reference_error(fn, x, perm), atol=1e-6, rtol=1e-6, what="error",
                 mistakes=_error_mistakes(fn, x, perm), accepted=_error_accepted(fn, x, perm, "formula"))


@pytest.mark.exercise("max_equivariance_error", points=2)
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


@pytest.mark.exercise("max_equivariance_error", points=3)
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


# -- position_probe_r2 --------------------------------------------------------------------------
def _probe_data(seed, n, *, shift=0.0):
    """Features (n, 5) and noisy positions that depend linearly on them, with an offset of 100."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=gen, dtype=torch.float64) + shift
    w = torch.tensor([3.0, -2.0, 0.5, 0.0, 1.0], dtype=torch.float64)
    t = x @ w + 100.0 + 2.0 * torch.randn(n, generator=gen, dtype=torch.float64)
    return x, t


def _ridge_fit(x, t, ridge, *, intercept=True, penalise_intercept=False):
    """Weights (and intercept) from the normal equations: an independent formula."""
    if intercept:
        x = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], 1)
    penalty = ridge * torch.eye(x.shape[1], dtype=x.dtype)
    if intercept and not penalise_intercept:
        penalty[-1, -1] = 0.0
    coef = torch.linalg.solve(x.T @ x + penalty, x.T @ t)
    return lambda z: (torch.cat([z, torch.ones(len(z), 1, dtype=z.dtype)], 1) if intercept else z) @ coef


def _r2(pred, t, mean=None):
    mean = t.mean() if mean is None else mean
    return (1 - ((pred - t) ** 2).sum() / ((t - mean) ** 2).sum()).item()


def _probe_reference(train, test, ridge):
    return _r2(_ridge_fit(*train, ridge)(test[0]), test[1])


def _probe_mistakes(train, test, ridge):
    fit = _ridge_fit(*train, ridge)
    pred = fit(test[0])
    return {
        "R^2 measured on the training set instead of the held-out test set": _r2(fit(train[0]), train[1]),
        "no intercept (the probe is forced through 0)": _r2(_ridge_fit(*train, ridge, intercept=False)(test[0]),
                                                            test[1]),
        "the intercept penalised by the ridge term": _r2(
            _ridge_fit(*train, ridge, penalise_intercept=True)(test[0]), test[1]),
        "the ridge term ignored (ordinary least squares)": _r2(_ridge_fit(*train, 0.0)(test[0]), test[1]),
        "R^2 normalised around the mean of the training positions": _r2(pred, test[1], train[1].mean()),
        "squared correlation instead of R^2 (ignores bias and scale)":
            (torch.corrcoef(torch.stack([pred, test[1]]))[0, 1] ** 2).item(),
    }


# R^2 is a ratio of sums of squares of O(100) values computed in float64; 1e-6 absolute allows any
# correct solver (normal equations, lstsq, centring) and separates every catalogued mistake.
ATOL_R2 = 1e-6


# One mistake costs once: test_probe_r2_matches_ridge_regression owns the probe's form (a bias, R^2
# rather than a correlation), test_probe_r2_strong_ridge_spares_the_intercept the penalty,
# test_probe_r2_is_measured_on_the_test_set the held-out scoring, test_probe_r2_can_be_negative
# the unclipped score, test_probe_r2_of_float32_features_far_from_zero the precision (a float64
# fit, the result not rounded), test_probe_r2_over_its_inputs any sizes and layouts and leaving the
# inputs unchanged. Every other test accepts the value of a mistake another test owns.
_PROBE_OWNED = {"form": ("no intercept (the probe is forced through 0)",
                         "squared correlation instead of R^2 (ignores bias and scale)"),
                "penalty": ("the ridge term ignored (ordinary least squares)", "the intercept penalised by the ridge term"),
                "held out": ("R^2 measured on the training set instead of the held-out test set",
                             "R^2 normalised around the mean of the training positions")}


def _expect_r2(got, train, test, ridge, *, owner=None, atol=ATOL_R2, rtol=0.0):
    """Pass if got is the held-out R^2, or the value of a mistake that a test other than ``owner``
    owns; otherwise fail, naming the mistake where one matches."""
    expected, mistakes = _probe_reference(train, test, ridge), _probe_mistakes(train, test, ridge)
    accepted = [mistakes[name] for group, names in _PROBE_OWNED.items() if group != owner for name in names]
    accepted += [] if owner == "clip" else [max(0.0, expected)]
    accepted += [] if owner == "precision" else [round(expected, 4)]
    expect_close(got, expected, atol=atol, rtol=rtol, what="R^2", mistakes=mistakes, accepted=accepted)


@pytest.mark.exercise("position_probe_r2", points=2, public=True)
def test_probe_r2_matches_ridge_regression(student):
    """A ridge probe (ridge=1e-3) fitted on 200 rows and scored on 100 others gives the held-out R^2."""
    student.may_modify_arguments = True  # a hidden test owns leaving the inputs unchanged
    train, test = _probe_data(70, 200), _probe_data(71, 100)
    got = student.position_probe_r2(*train, *test, ridge=1e-3)
    expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
    _expect_r2(got, train, test, 1e-3, owner="form")


@pytest.mark.exercise("position_probe_r2", points=2)
def test_probe_r2_strong_ridge_spares_the_intercept(student):
    """With ridge=300 and positions around 100, only the weights shrink, not the intercept."""
    student.may_modify_arguments = True
    train, test = _probe_data(72, 60), _probe_data(73, 80)
    got = student.position_probe_r2(*train, *test, ridge=300.0)
    _expect_r2(got, train, test, 300.0, owner="penalty")


@pytest.mark.exercise("position_probe_r2", points=2)
def test_probe_r2_is_measured_on_the_test_set(student):
    """Test features shifted away from the training ones: R^2 is computed on the test set, around its own mean."""
    student.may_modify_arguments = True
    train, test = _probe_data(74, 40), _probe_data(75, 120, shift=0.7)
    got = student.position_probe_r2(*train, *test, ridge=5.0)
    _expect_r2(got, train, test, 5.0, owner="held out")


@pytest.mark.exercise("position_probe_r2", points=1)
def test_probe_r2_can_be_negative(student):
    """Features unrelated to the positions give R^2 at or below 0, not clipped."""
    gen = torch.Generator().manual_seed(76)
    x_train, x_test = (torch.randn(n, 8, generator=gen, dtype=torch.float64) for n in (30, 30))
    t_train, t_test = torch.arange(30, dtype=torch.float64), torch.arange(30, dtype=torch.float64).flip(0)
    train, test = (x_train, t_train), (x_test, t_test)
    student.may_modify_arguments = True
    got = student.position_probe_r2(*train, *test, ridge=1e-3)
    _expect_r2(got, train, test, 1e-3, owner="clip")


@pytest.mark.exercise("position_probe_r2", points=1)
def test_probe_r2_rejects_bad_inputs(student):
    """Different feature widths, features and positions of different lengths, and a negative ridge: ValueError."""
    student.may_modify_arguments = True
    train, test = _probe_data(77, 20), _probe_data(78, 20)
    expect_raises(ValueError, student.position_probe_r2, train[0], train[1], test[0][:, :4], test[1],
                  what="position_probe_r2 with 5 training features and 4 test features")
    expect_raises(ValueError, student.position_probe_r2, train[0], train[1][:19], *test,
                  what="position_probe_r2 with 20 training rows and 19 training positions")
    expect_raises(ValueError, student.position_probe_r2, *train, test[0], test[1][:17],
                  what="position_probe_r2 with 20 test rows and 17 test positions")
    expect_raises(ValueError, student.position_probe_r2, *train, *test, ridge=-0.1,
                  what="position_probe_r2(..., ridge=-0.1)")


@pytest.mark.exercise("position_probe_r2", points=3)
@grading(max_examples=10)
@given(f=st.integers(1, 6), n_train=st.integers(8, 70), n_test=st.integers(3, 57),
       ridge=st.sampled_from([0.0, 1e-3, 0.37, 2.5, 40.0]), offset=st.sampled_from([0.0, 100.0, -37.5, 1000.0]),
       dtype=dtypes("float64"), layout=layouts(), seed=seeds())
def test_probe_r2_over_its_inputs(student, f, n_train, n_test, ridge, offset, dtype, layout, seed):
    """Any sizes, ridge (0 included), position offset and layout; the inputs are left unchanged."""
    # float64 inputs: float32 ones, and so the precision of the fit, are
    # test_probe_r2_of_float32_features_far_from_zero's.
    dt = FLOAT_DTYPES[dtype]
    w = tensor(seed, f) * 2
    x_train, x_test = tensor(seed + 1, n_train, f, dtype=dt), tensor(seed + 2, n_test, f, dtype=dt, scale=1.3)
    t_train = (x_train.double() @ w + offset + tensor(seed + 3, n_train)).to(dt)
    t_test = (x_test.double() @ w + offset + tensor(seed + 4, n_test)).to(dt)
    train, test = (x_train.double(), t_train.double()), (x_test.double(), t_test.double())
    got = student.position_probe_r2(laid_out(x_train, layout), laid_out(t_train, layout),
                                    laid_out(x_test, layout), laid_out(t_test, layout), ridge=ridge)
    expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
    # The docstring promises a float64 fit whatever the input dtype, so the reference is the float64
    # fit of the (rounded) inputs; 1e-6 absolute as above (a float32 fit is off by up to 1e-4). The
    # named tests own the form, the penalty, the scoring, the clip and the precision: their
    # mistakes pass here.
    _expect_r2(got, train, test, ridge, rtol=1e-9)


@pytest.mark.exercise("position_probe_r2", points=1)
def test_probe_r2_of_float32_features_far_from_zero(student):
    """float32 features with positions around 4000: the fit is computed in float64 and R^2 returned unrounded (to 1e-6)."""
    gen = torch.Generator().manual_seed(79)
    w = torch.randn(4, generator=gen, dtype=torch.float64) * 3
    x_train, x_test = torch.randn(90, 4, generator=gen), torch.randn(45, 4, generator=gen)
    t_train = (x_train.double() @ w + 4000 + torch.randn(90, generator=gen, dtype=torch.float64)).float()
    t_test = (x_test.double() @ w + 4000 + torch.randn(45, generator=gen, dtype=torch.float64)).float()
    train, test = (x_train.double(), t_train.double()), (x_test.double(), t_test.double())
    student.may_modify_arguments = True
    got = student.position_probe_r2(x_train, t_train, x_test, t_test, ridge=0.5)
    _expect_r2(got, train, test, 0.5, owner="precision")


# -- symmetry_of --------------------------------------------------------------------------------
# Each case is a sequence function, with the answer symmetry_of must give. The learner's detector
# gets it as a black box: it runs here, in the grader, so only its behaviour can tell. The hidden
# cases are in grader/hidden/permutation_invariance.py, the public one in grader/fixtures. The named
# tests own the functions built to fool a detector; the property test draws from the others.
_SYMMETRY = {"plain_attention": "equivariant", "tokenwise_mlp": "equivariant", "mean_pooling": "invariant",
             "query_pooling": "invariant", "causal_attention": "neither", "absolute_bias": "neither",
             "position_scaled_scores": "neither"}


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
def test_symmetry_of_a_reversal_symmetric_bias(student):
    """A score bias -|i - j| commutes with reversing the sequence, yet depends on position: neither."""
    _expect_symmetry(student, hidden.symmetric_relative_bias, "neither", 6, 4)


@pytest.mark.exercise("symmetry_of", points=1)
def test_symmetry_of_a_last_position_effect(student):
    """Only the last position's scores are scaled (10 tokens): neither, though swapping tokens 0 and 1 cannot show it."""
    _expect_symmetry(student, hidden.last_token_scaled, "neither", 10, 3)


@pytest.mark.exercise("symmetry_of", points=1)
def test_symmetry_of_a_sequence_output_that_never_changes(student):
    """The mean token repeated at every position: a (T, d) output that no shuffle changes is invariant."""
    _expect_symmetry(student, hidden.broadcast_mean, "invariant", 5, 3)


@pytest.mark.exercise("symmetry_of", points=1)
def test_symmetry_of_a_small_position_effect(student):
    """Learned position vectors of size 1e-4 added before attention: a small effect, still neither."""
    _expect_symmetry(student, hidden.absolute_bias, "neither", 6, 4, scale=1e-4)


@pytest.mark.exercise("symmetry_of", points=4)
@grading(max_examples=10)
@given(name=st.sampled_from(sorted(_SYMMETRY)), num_tokens=st.integers(2, 9), d_model=st.sampled_from([1, 2, 5, 8]))
def test_symmetry_of_hidden_functions(student, name, num_tokens, d_model):
    """Hidden attention variants (pooling, masks, position vectors, position-dependent scales), any T >= 2 and width."""
    _expect_symmetry(student, getattr(hidden, name), _SYMMETRY[name], num_tokens, d_model)
