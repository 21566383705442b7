"""Hidden tests and public checks for notebook 01, permutation invariance.

References are computed here in float64 with independent formulas (or torch's own SDPA).
"""
import math

import pytest
import torch

from grader.fixtures import permutation_invariance as fixtures
from grader.judge import expect_close, expect_dtype, expect_raises, expect_shape, expect_true


def _randn(*shape, seed, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


def _attention(q, k, v, mask=None, *, softmax_dim=-1, scale=None, mask_after=False, fill=-math.inf):
    """Reference attention in float64, with switches that reproduce catalogued mistakes."""
    q, k, v = q.double(), k.double(), v.double()
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None and not mask_after:
        scores = scores.masked_fill(~mask, fill)
    weights = torch.softmax(scores, dim=softmax_dim)
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


# -- scaled_dot_product_attention ---------------------------------------------------------------
@pytest.mark.exercise("scaled_dot_product_attention", points=2, public=True)
def test_sdpa_matches_reference_without_mask(student):
    """Without a mask, the output matches softmax(q k^T / sqrt(d_k)) v."""
    q, k, v = _randn(2, 3, 5, 8, seed=1), _randn(2, 3, 7, 8, seed=2), _randn(2, 3, 7, 4, seed=3)
    got = student.scaled_dot_product_attention(q, k, v)
    expect_close(got, _attention(q, k, v), atol=ATOL, rtol=RTOL, mistakes=_sdpa_mistakes(q, k, v))


@pytest.mark.exercise("scaled_dot_product_attention", points=2, public=True)
def test_sdpa_causal_mask_matches_torch(student):
    """With a boolean causal mask, the output matches torch's scaled_dot_product_attention."""
    q, k, v = _randn(2, 6, 8, seed=4), _randn(2, 6, 8, seed=5), _randn(2, 6, 8, seed=6)
    mask = torch.ones(6, 6, dtype=torch.bool).tril()
    expected = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                                 attn_mask=mask)
    got = student.scaled_dot_product_attention(q, k, v, mask=mask)
    expect_close(got, expected, atol=ATOL, rtol=RTOL, mistakes=_sdpa_mistakes(q, k, v, mask))


@pytest.mark.exercise("scaled_dot_product_attention", points=2)
def test_sdpa_random_mask_broadcast_over_batch(student):
    """A random mask of shape (1, T_q, T_k) broadcasts over batch and heads."""
    q, k, v = _randn(3, 2, 4, 6, seed=7), _randn(3, 2, 5, 6, seed=8), _randn(3, 2, 5, 3, seed=9)
    mask = torch.rand(1, 4, 5, generator=torch.Generator().manual_seed(10)) > 0.4
    mask[..., 0] = True  # every query may attend somewhere
    got = student.scaled_dot_product_attention(q, k, v, mask=mask)
    expect_close(got, _attention(q, k, v, mask), atol=ATOL, rtol=RTOL,
                 mistakes=_sdpa_mistakes(q, k, v, mask))


@pytest.mark.exercise("scaled_dot_product_attention", points=1)
def test_sdpa_scales_by_d_k_not_d_v(student):
    """The scores are scaled by 1/sqrt(d_k) even when d_v differs from d_k."""
    q, k, v = _randn(4, 4, seed=11) * 3, _randn(6, 4, seed=12) * 3, _randn(6, 16, seed=13)
    got = student.scaled_dot_product_attention(q, k, v)
    mistakes = {"scaling by 1/sqrt(d_v) instead of 1/sqrt(d_k)": _attention(q, k, v, scale=1 / 4.0)}
    mistakes.update(_sdpa_mistakes(q, k, v))
    expect_close(got, _attention(q, k, v), atol=ATOL, rtol=RTOL, mistakes=mistakes)


@pytest.mark.exercise("scaled_dot_product_attention", points=1)
def test_sdpa_is_stable_for_large_scores(student):
    """Scores around 1e3 give finite outputs (the softmax must not overflow)."""
    q, k, v = _randn(5, 8, seed=14) * 40, _randn(5, 8, seed=15) * 40, _randn(5, 8, seed=16)
    got = student.scaled_dot_product_attention(q, k, v)
    # Large scores make the softmax nearly one-hot; the reference is still exact in float64.
    expect_close(got, _attention(q, k, v), atol=1e-4, rtol=1e-4)


@pytest.mark.exercise("scaled_dot_product_attention", points=1)
def test_sdpa_keeps_dtype(student):
    """float64 inputs give a float64 output of shape (..., T_q, d_v)."""
    q, k, v = (_randn(2, 3, 4, seed=s, dtype=torch.float64) for s in (17, 18, 19))
    got = student.scaled_dot_product_attention(q, k, v)
    expect_dtype(got, torch.float64)
    # The contract is the output dtype, not the compute dtype: a softmax computed in float32 and
    # cast back (Llama's and Hugging Face's eager attention) is off by ~1e-7 and is correct.
    expect_close(got, _attention(q, k, v), atol=ATOL, rtol=RTOL, mistakes=_sdpa_mistakes(q, k, v))


@pytest.mark.exercise("scaled_dot_product_attention", points=1)
def test_sdpa_fully_masked_row_gives_zeros(student):
    """A query row whose keys are all masked gets zeros (as torch's SDPA), the other rows are unchanged."""
    q, k, v = _randn(4, 6, seed=21), _randn(5, 6, seed=22), _randn(5, 3, seed=23)
    mask = torch.ones(4, 5, dtype=torch.bool).tril()
    mask[2] = False  # query 2 may attend to nothing (a padding row)
    expected = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                                 attn_mask=mask)
    nan_row = _attention(q, k, v, mask)  # -inf everywhere in row 2: softmax gives NaN
    mean_row = _attention(q, k, v, mask, fill=torch.finfo(torch.float32).min)
    got = student.scaled_dot_product_attention(q, k, v, mask=mask)
    expect_shape(got, (4, 3))
    expect_close(got, expected, atol=ATOL, rtol=RTOL, what="output (row 2 has no allowed key)",
                 mistakes={"the fully masked row left as NaN (softmax of a row of -inf)": nan_row,
                           "masked scores filled with a large finite negative number: the fully masked "
                           "row averages every value instead of giving zeros": mean_row,
                           **_sdpa_mistakes(q, k, v, mask)})


@pytest.mark.exercise("scaled_dot_product_attention", points=1)
def test_sdpa_rejects_a_float_mask(student):
    """A float mask is rejected with a ValueError (the contract is a boolean mask)."""
    q = _randn(3, 4, seed=20)
    expect_raises(ValueError, student.scaled_dot_product_attention, q, q, q,
                  mask=torch.ones(3, 3), what="scaled_dot_product_attention(..., mask=<float>)")


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


@pytest.mark.exercise("self_attention", points=2, public=True)
def test_self_attention_without_mask(student):
    """Without a mask, self_attention(x) is attention(x w_q, x w_k, x w_v)."""
    x, weights = _randn(6, 8, seed=30), _weights(8, 8, 8, seed=31)
    got = student.self_attention(x, *weights)
    expect_close(got, _self_attention(x, *weights), atol=ATOL, rtol=RTOL,
                 mistakes=_self_attention_mistakes(x, *weights, False))


@pytest.mark.exercise("self_attention", points=2, public=True)
def test_self_attention_causal(student):
    """With causal=True, token t attends only to tokens s <= t."""
    x, weights = _randn(6, 8, seed=34), _weights(8, 8, 8, seed=35)
    got = student.self_attention(x, *weights, causal=True)
    expect_close(got, _self_attention(x, *weights, True), atol=ATOL, rtol=RTOL,
                 mistakes=_self_attention_mistakes(x, *weights, True))


@pytest.mark.exercise("self_attention", points=2)
def test_self_attention_batched_with_different_widths(student):
    """Batched input (2, 3, T, d_model) with d_k != d_v, causal, matches the reference."""
    x, weights = _randn(2, 3, 5, 6, seed=38), _weights(6, 4, 7, seed=39)
    got = student.self_attention(x, *weights, causal=True)
    expect_shape(got, (2, 3, 5, 7))
    expect_close(got, _self_attention(x, *weights, True), atol=ATOL, rtol=RTOL,
                 mistakes=_self_attention_mistakes(x, *weights, True))


@pytest.mark.exercise("self_attention", points=1)
def test_self_attention_first_token_sees_only_itself(student):
    """Under the causal mask, token 0's output is its own value x_0 w_v."""
    x, weights = _randn(4, 5, seed=42), _weights(5, 5, 5, seed=43)
    got = student.self_attention(x, *weights, causal=True)
    expect_close(got[0], x[0].double() @ weights[2].double(), atol=ATOL, rtol=RTOL,
                 what="output of token 0")


@pytest.mark.exercise("self_attention", points=1)
def test_self_attention_rejects_mismatched_weights(student):
    """A weight whose first dimension is not d_model is rejected with a ValueError."""
    x, (w_q, w_k, w_v) = _randn(4, 5, seed=46), _weights(6, 4, 4, seed=47)
    expect_raises(ValueError, student.self_attention, x, w_q, w_k, w_v,
                  what="self_attention with (6, 4) weights for d_model=5")


# -- permutation_matrix -------------------------------------------------------------------------
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
    """P is float32 with P[i, perm[i]] = 1 and zeros elsewhere, also for a list input."""
    perm = [3, 1, 0, 2]
    got = student.permutation_matrix(perm)
    expect_dtype(got, torch.float32, what="P")
    expected = torch.zeros(4, 4)
    expected[torch.arange(4), torch.tensor(perm)] = 1
    expect_close(got, expected, atol=0, rtol=0, what="P",
                 mistakes={"the transpose: P[perm[i], i] = 1": expected.T})


@pytest.mark.exercise("permutation_matrix", points=1)
def test_permutation_matrix_is_orthogonal(student):
    """P^T P = I for a permutation of 7."""
    perm = torch.randperm(7, generator=torch.Generator().manual_seed(51))
    p = student.permutation_matrix(perm).double()
    expect_close(p.T @ p, torch.eye(7), atol=0, rtol=0, what="P^T P")


@pytest.mark.exercise("permutation_matrix", points=1)
def test_permutation_matrix_rejects_repeated_indices(student):
    """A sequence with a repeated index is not a permutation: ValueError."""
    expect_raises(ValueError, student.permutation_matrix, torch.tensor([0, 0, 1]),
                  what="permutation_matrix([0, 0, 1])")


@pytest.mark.exercise("permutation_matrix", points=1)
def test_permutation_matrix_rejects_out_of_range(student):
    """An index outside 0..T-1 is rejected with a ValueError (not an IndexError)."""
    expect_raises(ValueError, student.permutation_matrix, torch.tensor([0, 1, 3]),
                  what="permutation_matrix([0, 1, 3])")


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


@pytest.mark.exercise("max_equivariance_error", points=1, public=True)
def test_error_is_zero_for_an_equivariant_function(student):
    """A token-wise function (softmax over features) has error 0, returned as a Python float."""
    x, perm = _randn(6, 4, seed=60), torch.tensor([5, 3, 1, 0, 2, 4])
    got = student.max_equivariance_error(student.fixture("permutation_invariance.row_softmax"), x, perm)
    expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
    expect_close(got, 0.0, atol=1e-7, rtol=0, what="error of a token-wise function")


@pytest.mark.exercise("max_equivariance_error", points=2, public=True)
def test_error_of_a_position_ramp(student):
    """For fn(x) = x + 0.5 t, the error is 0.5 * max_t |t - perm[t]|."""
    x, perm = _randn(6, 4, seed=61), torch.tensor([1, 2, 3, 4, 5, 0])
    fn = lambda z: fixtures.add_ramp(z, scale=0.5)  # noqa: E731
    got = student.max_equivariance_error(student.fixture("permutation_invariance.add_ramp", scale=0.5),
                                         x, perm)
    expect_close(got, _reference_error(fn, x, perm), atol=1e-6, rtol=1e-6, what="error",
                 mistakes=_error_mistakes(fn, x, perm))


@pytest.mark.exercise("max_equivariance_error", points=2)
def test_error_of_a_causal_mean_with_batch_axes(student):
    """Batched x (3, T, d): the permutation acts on the token axis (-2), not the batch axis."""
    x = _randn(3, 3, 5, seed=62, dtype=torch.float64)
    perm = torch.tensor([2, 0, 1])
    got = student.max_equivariance_error(student.fixture("permutation_invariance.causal_mean"), x, perm)
    expect_close(got, _reference_error(fixtures.causal_mean, x, perm), atol=1e-9, rtol=1e-9,
                 what="error", mistakes=_error_mistakes(fixtures.causal_mean, x, perm))


@pytest.mark.exercise("max_equivariance_error", points=1)
def test_error_with_a_signed_difference_that_is_negative(student):
    """The error is the largest absolute difference, even when every difference is negative."""
    x, perm = torch.zeros(4, 2, dtype=torch.float64), torch.tensor([0, 1, 3, 2])
    fn = lambda z: fixtures.add_ramp(z, scale=-1.0)  # noqa: E731
    got = student.max_equivariance_error(student.fixture("permutation_invariance.add_ramp", scale=-1.0),
                                         x, perm)
    expect_close(got, _reference_error(fn, x, perm), atol=1e-9, rtol=0, what="error",
                 mistakes=_error_mistakes(fn, x, perm))


@pytest.mark.exercise("max_equivariance_error", points=1)
def test_error_rejects_a_permutation_of_the_wrong_length(student):
    """A permutation whose length differs from the token axis is rejected with a ValueError."""
    expect_raises(ValueError, student.max_equivariance_error,
                  student.fixture("permutation_invariance.row_softmax"), _randn(4, 3, seed=63),
                  torch.tensor([0, 1, 2]), what="max_equivariance_error with 3 indices for 4 tokens")



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


@pytest.mark.exercise("position_probe_r2", points=2, public=True)
def test_probe_r2_matches_ridge_regression(student):
    """A ridge probe (ridge=1e-3) fitted on 200 rows and scored on 100 others gives the held-out R^2."""
    train, test = _probe_data(70, 200), _probe_data(71, 100)
    got = student.position_probe_r2(*train, *test, ridge=1e-3)
    expect_true(isinstance(got, float), f"the result should be a Python float, not {type(got).__name__}")
    expect_close(got, _probe_reference(train, test, 1e-3), atol=ATOL_R2, rtol=0, what="R^2",
                 mistakes=_probe_mistakes(train, test, 1e-3))


@pytest.mark.exercise("position_probe_r2", points=2)
def test_probe_r2_strong_ridge_spares_the_intercept(student):
    """With ridge=300 and positions around 100, only the weights shrink, not the intercept."""
    train, test = _probe_data(72, 60), _probe_data(73, 80)
    got = student.position_probe_r2(*train, *test, ridge=300.0)
    expect_close(got, _probe_reference(train, test, 300.0), atol=ATOL_R2, rtol=0, what="R^2",
                 mistakes=_probe_mistakes(train, test, 300.0))


@pytest.mark.exercise("position_probe_r2", points=2)
def test_probe_r2_is_measured_on_the_test_set(student):
    """Test features shifted away from the training ones: R^2 is computed on the test set, around its own mean."""
    train, test = _probe_data(74, 40), _probe_data(75, 120, shift=0.7)
    got = student.position_probe_r2(*train, *test, ridge=5.0)
    expect_close(got, _probe_reference(train, test, 5.0), atol=ATOL_R2, rtol=0, what="R^2",
                 mistakes=_probe_mistakes(train, test, 5.0))


@pytest.mark.exercise("position_probe_r2", points=1)
def test_probe_r2_can_be_negative(student):
    """Features unrelated to the positions give R^2 at or below 0, not clipped."""
    gen = torch.Generator().manual_seed(76)
    x_train, x_test = (torch.randn(n, 8, generator=gen, dtype=torch.float64) for n in (30, 30))
    t_train, t_test = torch.arange(30, dtype=torch.float64), torch.arange(30, dtype=torch.float64).flip(0)
    train, test = (x_train, t_train), (x_test, t_test)
    got = student.position_probe_r2(*train, *test, ridge=1e-3)
    expect_close(got, _probe_reference(train, test, 1e-3), atol=ATOL_R2, rtol=0, what="R^2",
                 mistakes=_probe_mistakes(train, test, 1e-3))


@pytest.mark.exercise("position_probe_r2", points=1)
def test_probe_r2_rejects_mismatched_widths(student):
    """Train and test features of different widths are rejected with a ValueError."""
    train, test = _probe_data(77, 20), _probe_data(78, 20)
    expect_raises(ValueError, student.position_probe_r2, train[0], train[1], test[0][:, :4], test[1],
                  what="position_probe_r2 with 5 training features and 4 test features")
