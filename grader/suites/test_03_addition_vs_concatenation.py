"""Hidden tests and public checks for notebook 03, addition versus concatenation.

References are computed here in float64 with independent code (indexing, torch.cat, the ridge
normal equations), never with the learner's functions.
"""
import pytest
import torch

from grader.judge import expect_close, expect_dtype, expect_raises, expect_shape, expect_true, fail


def _randn(*shape, seed, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


def _randint(high, *shape, seed):
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(seed))


# -- embed --------------------------------------------------------------------------------------
def _embed(ids, tokens, positions, mode, *, pos_first=False, shift=0, pos_by_id=False):
    """Reference embedding, with switches that reproduce catalogued mistakes."""
    t = ids.shape[-1]
    e = tokens.double()[ids]                                                   # (..., T, d_tok)
    p = positions.double()[ids] if pos_by_id else positions.double()[shift:shift + t]
    if mode == "add":
        return e + p
    p = p.expand(*e.shape[:-1], p.shape[-1])
    return torch.cat([p, e] if pos_first else [e, p], dim=-1)


def _embed_mistakes(ids, tokens, positions, mode):
    mistakes = {"positions starting at 1 (pos_table[1:T+1]) instead of 0": None,
                "position rows indexed by the token ids instead of by position": None}
    if positions.shape[0] > ids.shape[-1]:
        mistakes["positions starting at 1 (pos_table[1:T+1]) instead of 0"] = _embed(
            ids, tokens, positions, mode, shift=1)
    if int(ids.max()) < positions.shape[0]:
        mistakes["position rows indexed by the token ids instead of by position"] = _embed(
            ids, tokens, positions, mode, pos_by_id=True)
    if mode == "concat":
        mistakes["position part first: [p; e] instead of [e; p]"] = _embed(ids, tokens, positions, mode,
                                                                        pos_first=True)
    return {k: v for k, v in mistakes.items() if v is not None}


# Indexing and one addition in float32: the result is exact up to one rounding (6e-8 relative).
ATOL_EMBED = 1e-6


@pytest.mark.exercise("embed", points=2, public=True)
def test_embed_add(student):
    """mode "add": (2, 5) ids give (2, 5, 6) = token_table[ids] + pos_table[:5]."""
    ids, tokens, positions = _randint(10, 2, 5, seed=1), _randn(10, 6, seed=2, dtype=torch.float32), \
        _randn(8, 6, seed=3, dtype=torch.float32)
    got = student.embed(ids, tokens, positions, "add")
    expect_shape(got, (2, 5, 6), what='embed(..., "add")')
    expect_close(got, _embed(ids, tokens, positions, "add"), atol=ATOL_EMBED, rtol=0, what='embed(..., "add")',
                 mistakes=_embed_mistakes(ids, tokens, positions, "add"))


@pytest.mark.exercise("embed", points=2, public=True)
def test_embed_concat(student):
    """mode "concat": (2, 5) ids give (2, 5, 6 + 3) = [token_table[ids]; pos_table[:5]], token part first."""
    ids, tokens, positions = _randint(10, 2, 5, seed=4), _randn(10, 6, seed=5, dtype=torch.float32), \
        _randn(8, 3, seed=6, dtype=torch.float32)
    got = student.embed(ids, tokens, positions, "concat")
    expect_shape(got, (2, 5, 9), what='embed(..., "concat")')
    expect_close(got, _embed(ids, tokens, positions, "concat"), atol=ATOL_EMBED, rtol=0,
                 what='embed(..., "concat")', mistakes=_embed_mistakes(ids, tokens, positions, "concat"))


@pytest.mark.exercise("embed", points=1)
def test_embed_unbatched_and_deeply_batched(student):
    """Ids of shape (T,) and (2, 3, T) work in both modes (the position axis is the last one)."""
    tokens, positions = _randn(12, 4, seed=7), _randn(6, 4, seed=8)
    for shape, seed in (((6,), 9), ((2, 3, 4), 10)):
        ids = _randint(12, *shape, seed=seed)
        for mode in ("add", "concat"):
            got = student.embed(ids, tokens, positions, mode)
            expect_close(got, _embed(ids, tokens, positions, mode), atol=1e-12, rtol=0,
                         what=f'embed(ids of shape {shape}, ..., "{mode}")',
                         mistakes=_embed_mistakes(ids, tokens, positions, mode))


@pytest.mark.exercise("embed", points=1)
def test_embed_keeps_float64(student):
    """float64 tables give a float64 result."""
    ids = _randint(5, 3, seed=11)
    got = student.embed(ids, _randn(5, 2, seed=12), _randn(4, 2, seed=13), "concat")
    expect_dtype(got, torch.float64, what='embed(float64 tables, "concat")')


@pytest.mark.exercise("embed", points=1)
def test_embed_rejects_unknown_mode(student):
    """A mode other than "add" or "concat" is rejected with a ValueError."""
    ids = _randint(5, 3, seed=14)
    expect_raises(ValueError, student.embed, ids, _randn(5, 4, seed=15), _randn(4, 4, seed=16), "sum",
                  what='embed(..., mode="sum")')


@pytest.mark.exercise("embed", points=1)
def test_embed_rejects_mismatched_widths_for_add(student):
    """mode "add" with d_tok = 4 and d_pos = 3 is rejected with a ValueError."""
    ids = _randint(5, 3, seed=17)
    expect_raises(ValueError, student.embed, ids, _randn(5, 4, seed=18), _randn(4, 3, seed=19), "add",
                  what='embed with d_tok=4, d_pos=3, mode="add"')


@pytest.mark.exercise("embed", points=1)
def test_embed_rejects_too_long_sequences(student):
    """A sequence longer than the position table (T = 5 > T_max = 4) is rejected with a ValueError."""
    ids = _randint(5, 2, 5, seed=20)
    for mode in ("add", "concat"):
        expect_raises(ValueError, student.embed, ids, _randn(5, 4, seed=21), _randn(4, 4, seed=22), mode,
                      what=f'embed with T=5 > T_max=4, mode="{mode}"')


@pytest.mark.exercise("embed", points=1)
def test_embed_rejects_ids_out_of_range(student):
    """Token ids equal to V or negative are rejected with a ValueError (not an IndexError, not wrapped)."""
    tokens, positions = _randn(5, 4, seed=23), _randn(6, 4, seed=24)
    expect_raises(ValueError, student.embed, torch.tensor([0, 5, 1]), tokens, positions, "add",
                  what="embed with token id 5 for V=5")
    expect_raises(ValueError, student.embed, torch.tensor([0, -1, 1]), tokens, positions, "add",
                  what="embed with token id -1")


@pytest.mark.exercise("embed", points=1)
def test_embed_rejects_float_ids(student):
    """Floating-point token ids are rejected with a ValueError."""
    expect_raises(ValueError, student.embed, torch.tensor([0.0, 1.0]), _randn(5, 4, seed=25),
                  _randn(6, 4, seed=26), "add", what="embed with float token ids")


# -- concat_as_addition -------------------------------------------------------------------------
def _pad(e, p, *, swapped_order=False, swapped_tuple=False):
    d_tok, d_pos = e.shape[-1], p.shape[-1]
    e, p = e.double(), p.double()
    zeros_for_e = torch.zeros(*e.shape[:-1], d_pos, dtype=torch.float64)
    zeros_for_p = torch.zeros(*p.shape[:-1], d_tok, dtype=torch.float64)
    if swapped_order:  # [0; e] and [p; 0]
        pair = (torch.cat([zeros_for_e, e], -1), torch.cat([p, zeros_for_p], -1))
    else:
        pair = (torch.cat([e, zeros_for_e], -1), torch.cat([zeros_for_p, p], -1))
    return pair[::-1] if swapped_tuple else pair


def _as_pair(got, what):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail(f"{what} should return a tuple of two tensors, not {type(got).__name__}"
             + (f" of length {len(got)}" if isinstance(got, (tuple, list)) else ""))
    return got


def _pad_mistakes(e, p, which):
    index = 0 if which == "token" else 1
    return {
        "zeros on the wrong side: [0; e] and [p; 0] sum to [p; e]": _pad(e, p, swapped_order=True)[index],
        "the tuple in the wrong order: (pos_padded, token_padded)": _pad(e, p, swapped_tuple=True)[index],
    }


@pytest.mark.exercise("concat_as_addition", points=2, public=True)
def test_concat_as_addition_small(student):
    """e of shape (3, 4) and p of shape (3, 2) give ([e; 0], [0; p]), each (3, 6)."""
    e, p = _randn(3, 4, seed=30), _randn(3, 2, seed=31)
    token_padded, pos_padded = _as_pair(student.concat_as_addition(e, p), "concat_as_addition")
    want_e, want_p = _pad(e, p)
    expect_close(token_padded, want_e, atol=0, rtol=0, what="token_padded (first element)",
                 mistakes=_pad_mistakes(e, p, "token"))
    expect_close(pos_padded, want_p, atol=0, rtol=0, what="pos_padded (second element)",
                 mistakes=_pad_mistakes(e, p, "pos"))


@pytest.mark.exercise("concat_as_addition", points=2)
def test_concat_as_addition_sums_to_the_concatenation(student):
    """For batched e (2, 5, 3) and p (2, 5, 4), the two summands add up to torch.cat([e, p], -1)."""
    e, p = _randn(2, 5, 3, seed=32), _randn(2, 5, 4, seed=33)
    token_padded, pos_padded = _as_pair(student.concat_as_addition(e, p), "concat_as_addition")
    expect_shape(token_padded, (2, 5, 7), what="token_padded")
    expect_shape(pos_padded, (2, 5, 7), what="pos_padded")
    total = torch.as_tensor(token_padded).double() + torch.as_tensor(pos_padded).double()
    expect_close(total, torch.cat([e, p], -1), atol=0, rtol=0, what="token_padded + pos_padded",
                 mistakes={"zeros on the wrong side: [0; e] and [p; 0] sum to [p; e]": torch.cat([p, e], -1)})
    want_e, want_p = _pad(e, p)
    expect_close(token_padded, want_e, atol=0, rtol=0, what="token_padded (first element)",
                 mistakes=_pad_mistakes(e, p, "token"))


@pytest.mark.exercise("concat_as_addition", points=1)
def test_concat_as_addition_keeps_dtype(student):
    """float32 inputs give float32 summands."""
    e, p = _randn(4, 2, seed=34, dtype=torch.float32), _randn(4, 5, seed=35, dtype=torch.float32)
    token_padded, pos_padded = _as_pair(student.concat_as_addition(e, p), "concat_as_addition")
    expect_dtype(token_padded, torch.float32, what="token_padded")
    expect_dtype(pos_padded, torch.float32, what="pos_padded")


@pytest.mark.exercise("concat_as_addition", points=1)
def test_concat_as_addition_rejects_different_leading_shapes(student):
    """e of shape (3, 4) and p of shape (2, 4) are rejected with a ValueError."""
    expect_raises(ValueError, student.concat_as_addition, _randn(3, 4, seed=36), _randn(2, 4, seed=37),
                  what="concat_as_addition with leading shapes (3,) and (2,)")


# -- linear_probe -------------------------------------------------------------------------------
def _ridge(features, labels, ridge, *, bias="last", targets="one-hot", penalise="diagonal", classes=None):
    """Reference ridge classifier, with switches that reproduce catalogued mistakes."""
    x = features.double()
    ones = torch.ones(x.shape[0], 1, dtype=torch.float64)
    if bias == "last":
        x = torch.cat([x, ones], 1)
    elif bias == "first":
        x = torch.cat([ones, x], 1)
    c = classes or int(labels.max()) + 1
    y = torch.nn.functional.one_hot(labels, c).double() if targets == "one-hot" else labels.double()[:, None]
    penalty = ridge * (torch.eye(x.shape[1], dtype=torch.float64) if penalise == "diagonal"
                       else torch.ones(x.shape[1], x.shape[1], dtype=torch.float64))
    return torch.linalg.solve(x.T @ x + penalty, x.T @ y)


def _probe_data(n, d, classes, seed, *, dtype=torch.float64):
    """Features whose class means differ, plus an offset so that the bias matters."""
    labels = torch.arange(n) % classes
    means = _randn(classes, d, seed=seed)
    features = means[labels] + 0.5 * _randn(n, d, seed=seed + 1) + 2.0
    return features.to(dtype), labels


def _ridge_mistakes(features, labels, ridge):
    mistakes = {
        "no bias column": _ridge(features, labels, ridge, bias="none"),
        "bias column first instead of last": _ridge(features, labels, ridge, bias="first"),
        "ridge term missing (ordinary least squares)": _ridge(features, labels, ridge=0.0),
        "ridge added to every entry of X^T X instead of its diagonal": _ridge(features, labels, ridge,
                                                                               penalise="all"),
        "labels used as regression targets instead of one-hot vectors": _ridge(features, labels, ridge,
                                                                                targets="labels"),
    }
    return mistakes


# The normal equations solved in float64 on well-conditioned data agree with any other exact
# float64 method (lstsq on the augmented system, pinv) to ~1e-12; 1e-8 leaves ample room.
RIDGE_TOL = 1e-8


@pytest.mark.exercise("linear_probe", points=2, public=True)
def test_linear_probe_matches_the_closed_form(student):
    """30 points, 4 features, 3 classes, ridge=0.5: W = (X^T X + 0.5 I)^-1 X^T Y with X = [features, 1]."""
    features, labels = _probe_data(30, 4, 3, seed=40)
    got = student.linear_probe(features, labels, ridge=0.5)
    expect_close(got, _ridge(features, labels, 0.5), atol=RIDGE_TOL, rtol=RIDGE_TOL, what="linear_probe weights",
                 mistakes=_ridge_mistakes(features, labels, 0.5))


@pytest.mark.exercise("linear_probe", points=2)
def test_linear_probe_strong_ridge(student):
    """With ridge=20 the shrinkage is large and the bias (last row) is regularised too."""
    features, labels = _probe_data(50, 6, 4, seed=42)
    got = student.linear_probe(features, labels, ridge=20.0)
    expect_close(got, _ridge(features, labels, 20.0), atol=RIDGE_TOL, rtol=RIDGE_TOL, what="linear_probe weights",
                 mistakes=_ridge_mistakes(features, labels, 20.0))


@pytest.mark.exercise("linear_probe", points=1)
def test_linear_probe_default_ridge(student):
    """Without a ridge argument, lambda = 1e-3."""
    features, labels = _probe_data(40, 3, 2, seed=44)
    got = student.linear_probe(features, labels)
    expect_close(got, _ridge(features, labels, 1e-3), atol=1e-7, rtol=1e-7, what="linear_probe weights",
                 mistakes={"no bias column": _ridge(features, labels, 1e-3, bias="none"),
                           "bias column first instead of last": _ridge(features, labels, 1e-3, bias="first")})


@pytest.mark.exercise("linear_probe", points=1)
def test_linear_probe_counts_classes_by_max_label(student):
    """Labels {0, 3} give C = 4 columns (absent classes 1 and 2 get all-zero weights)."""
    features, _ = _probe_data(20, 3, 2, seed=46)
    labels = torch.tensor([0, 3] * 10)
    got = student.linear_probe(features, labels, ridge=0.1)
    expect_shape(got, (4, 4), what="linear_probe weights for labels {0, 3}")
    expect_close(got, _ridge(features, labels, 0.1), atol=RIDGE_TOL, rtol=RIDGE_TOL, what="linear_probe weights")


@pytest.mark.exercise("linear_probe", points=1)
def test_linear_probe_float64_from_float32(student):
    """float32 features give float64 weights, equal to the float64 computation."""
    features, labels = _probe_data(25, 3, 3, seed=48, dtype=torch.float32)
    got = student.linear_probe(features, labels, ridge=0.1)
    expect_dtype(got, torch.float64, what="linear_probe weights")
    # The features are exactly representable in float32; the solve must happen in float64.
    expect_close(got, _ridge(features, labels, 0.1), atol=1e-9, rtol=1e-9, what="linear_probe weights")


@pytest.mark.exercise("linear_probe", points=1)
def test_linear_probe_rejects_mismatched_labels(student):
    """10 feature rows with 9 labels are rejected with a ValueError."""
    features, labels = _probe_data(10, 3, 2, seed=50)
    expect_raises(ValueError, student.linear_probe, features, labels[:9],
                  what="linear_probe with 10 rows and 9 labels")


# -- probe_accuracy -----------------------------------------------------------------------------
def _accuracy(features, labels, weights, *, bias="last"):
    x = features.double()
    w = weights.double()
    if bias == "last":
        scores = x @ w[:-1] + w[-1]
    elif bias == "first":
        scores = x @ w[1:] + w[0]
    else:
        scores = x @ w[:-1]
    return (scores.argmax(1) == labels).double().mean().item()


def _accuracy_case(seed):
    """Features, labels and weights for which the bias row changes about half of the predictions."""
    features = _randn(40, 3, seed=seed)
    weights = _randn(4, 5, seed=seed + 1)
    weights[-1] = 3.0 * _randn(5, seed=seed + 2)   # a bias that matters
    labels = (features @ weights[:-1] + weights[-1]).argmax(1)
    labels[::3] = (labels[::3] + 1) % 5             # two thirds right, one third wrong
    return features, labels, weights


def _accuracy_mistakes(features, labels, weights):
    right = _accuracy(features, labels, weights)
    return {
        "bias row ignored": _accuracy(features, labels, weights, bias="none"),
        "bias taken from the first row instead of the last": _accuracy(features, labels, weights, bias="first"),
        "error rate (1 - accuracy) instead of accuracy": 1 - right,
        "number of correct rows instead of the fraction": right * len(labels),
    }


@pytest.mark.exercise("probe_accuracy", points=2, public=True)
def test_probe_accuracy_with_bias(student):
    """40 rows, 5 classes: accuracy of argmax([features, 1] @ W) with the bias in W's last row."""
    features, labels, weights = _accuracy_case(60)
    got = student.probe_accuracy(features, labels, weights)
    expect_close(got, _accuracy(features, labels, weights), atol=1e-12, rtol=0, what="probe_accuracy",
                 mistakes=_accuracy_mistakes(features, labels, weights))


@pytest.mark.exercise("probe_accuracy", points=1)
def test_probe_accuracy_returns_a_python_float(student):
    """The accuracy is returned as a Python float, not a tensor."""
    features, labels, weights = _accuracy_case(63)
    got = student.probe_accuracy(features, labels, weights)
    expect_true(isinstance(got, float), f"probe_accuracy should return a Python float, not {type(got).__name__}"
                " (use .item())")


@pytest.mark.exercise("probe_accuracy", points=2)
def test_probe_accuracy_other_case(student):
    """A second case (different data and weights) with the bias in the last row."""
    features, labels, weights = _accuracy_case(66)
    got = student.probe_accuracy(features, labels, weights)
    expect_close(got, _accuracy(features, labels, weights), atol=1e-12, rtol=0, what="probe_accuracy",
                 mistakes=_accuracy_mistakes(features, labels, weights))


@pytest.mark.exercise("probe_accuracy", points=1)
def test_probe_accuracy_perfect_and_zero(student):
    """Labels equal to the predictions give 1.0; labels that are all wrong give 0.0."""
    features, _, weights = _accuracy_case(69)
    predicted = (features @ weights[:-1] + weights[-1]).argmax(1)
    expect_close(student.probe_accuracy(features, predicted, weights), 1.0, atol=1e-12, rtol=0,
                 what="accuracy when every prediction is right")
    expect_close(student.probe_accuracy(features, (predicted + 1) % 5, weights), 0.0, atol=1e-12, rtol=0,
                 what="accuracy when every prediction is wrong")


@pytest.mark.exercise("probe_accuracy", points=1)
def test_probe_accuracy_rejects_weights_without_bias_row(student):
    """Weights with d rows instead of d + 1 are rejected with a ValueError."""
    features, labels, weights = _accuracy_case(72)
    expect_raises(ValueError, student.probe_accuracy, features, labels, weights[:-1],
                  what="probe_accuracy with (d, C) weights")


# -- mean_abs_cosine ----------------------------------------------------------------------------
def _cosines(a, b):
    a, b = a.double(), b.double()
    return (a @ b.T) / (a.norm(dim=1)[:, None] * b.norm(dim=1)[None, :])


def _cosine_mistakes(a, b):
    cos = _cosines(a, b)
    mistakes = {
        "signed cosines averaged (the absolute value is missing)": cos.mean(),
        "dot products instead of cosines (rows not normalised)": (a.double() @ b.double().T).abs().mean(),
        "squared cosines instead of absolute values": (cos ** 2).mean(),
        "columns normalised instead of rows": (
            (a.double() / a.double().norm(dim=0)) @ (b.double() / b.double().norm(dim=0)).T).abs().mean(),
    }
    if a.shape[0] == b.shape[0]:
        mistakes["only matching rows (i == j) instead of all pairs"] = cos.diagonal().abs().mean()
    return mistakes


@pytest.mark.exercise("mean_abs_cosine", points=2, public=True)
def test_mean_abs_cosine_small(student):
    """a (5, 4) and b (5, 4): the mean of |cos(a_i, b_j)| over all 25 pairs."""
    a, b = _randn(5, 4, seed=80) * 3, _randn(5, 4, seed=81) + 0.5
    got = student.mean_abs_cosine(a, b)
    expect_close(got, _cosines(a, b).abs().mean(), atol=1e-9, rtol=1e-9, what="mean_abs_cosine",
                 mistakes=_cosine_mistakes(a, b))


@pytest.mark.exercise("mean_abs_cosine", points=2)
def test_mean_abs_cosine_different_counts(student):
    """a (7, 6) and b (3, 6): all 21 pairs count, rows of any length."""
    a = _randn(7, 6, seed=82) * torch.arange(1, 8, dtype=torch.float64)[:, None]
    b = _randn(3, 6, seed=83) - 0.3
    got = student.mean_abs_cosine(a, b)
    expect_close(got, _cosines(a, b).abs().mean(), atol=1e-9, rtol=1e-9, what="mean_abs_cosine",
                 mistakes=_cosine_mistakes(a, b))


@pytest.mark.exercise("mean_abs_cosine", points=1)
def test_mean_abs_cosine_with_itself_includes_the_diagonal(student):
    """mean_abs_cosine(a, a) includes the N pairs i == j (cosine 1), as documented."""
    a = _randn(4, 8, seed=84)
    got = student.mean_abs_cosine(a, a)
    off_diagonal = _cosines(a, a).abs()[~torch.eye(4, dtype=torch.bool)].mean()
    expect_close(got, _cosines(a, a).abs().mean(), atol=1e-9, rtol=1e-9, what="mean_abs_cosine(a, a)",
                 mistakes={"pairs i == j left out": off_diagonal, **_cosine_mistakes(a, a)})


@pytest.mark.exercise("mean_abs_cosine", points=1)
def test_mean_abs_cosine_float32_input_returns_float(student):
    """float32 rows give a Python float close to the float64 value."""
    a, b = _randn(6, 5, seed=85, dtype=torch.float32), _randn(4, 5, seed=86, dtype=torch.float32)
    got = student.mean_abs_cosine(a, b)
    expect_true(isinstance(got, float), f"mean_abs_cosine should return a Python float, not {type(got).__name__}")
    # float32 rows are exact inputs; a float32 computation would still be within 1e-6.
    expect_close(got, _cosines(a, b).abs().mean(), atol=1e-6, rtol=0, what="mean_abs_cosine",
                 mistakes=_cosine_mistakes(a, b))


@pytest.mark.exercise("mean_abs_cosine", points=1)
def test_mean_abs_cosine_rejects_different_widths(student):
    """Rows of width 4 and 5 are rejected with a ValueError."""
    expect_raises(ValueError, student.mean_abs_cosine, _randn(3, 4, seed=87), _randn(3, 5, seed=88),
                  what="mean_abs_cosine with widths 4 and 5")

