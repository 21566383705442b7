"""Hidden tests and public checks for notebook 03, addition versus concatenation.

References are computed here in float64 with independent code (indexing, torch.cat, the ridge
normal equations, numpy for LDA, einsum for the logit terms), never with the learner's functions.
"""
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.judge import expect_close, expect_dtype, expect_equal, expect_raises, expect_shape, expect_true
from grader.properties import FLOAT_DTYPES, dtypes, grading, laid_out, layouts, seeds, tensor

EXERCISE_ORDER = ("mean_abs_cosine", "embed", "linear_probe", "lda_probe", "attention_logit_terms")
"""The exercises in the notebook's order (of their cells): reports number and list them so."""

INDEX_DTYPES = {"int64": torch.int64, "int32": torch.int32}
"""The integer dtypes token ids and labels may come in (the docstrings promise both)."""


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


@pytest.mark.exercise("embed", points=3)
@grading()
@given(batch=st.sampled_from([(), (1,), (3,), (2, 3)]), t=st.integers(1, 6), spare=st.integers(0, 3),
       vocab=st.integers(1, 9), d_tok=st.integers(1, 5), d_pos=st.integers(1, 5),
       mode=st.sampled_from(["add", "concat"]), dtype=dtypes(), id_dtype=st.sampled_from(sorted(INDEX_DTYPES)),
       ids_layout=layouts(), tokens_layout=layouts(), positions_layout=layouts(), seed=seeds())
def test_embed_property(student, batch, t, spare, vocab, d_tok, d_pos, mode, dtype, id_dtype, ids_layout,
                        tokens_layout, positions_layout, seed):
    """embed matches the float64 reference for any batch, T <= T_max, widths, dtypes, id dtypes and layouts."""
    d_pos = d_tok if mode == "add" else d_pos
    ids = _randint(vocab, *batch, t, seed=seed).to(INDEX_DTYPES[id_dtype])
    tokens = tensor(seed + 1, vocab, d_tok, dtype=FLOAT_DTYPES[dtype])
    positions = tensor(seed + 2, t + spare, d_pos, dtype=FLOAT_DTYPES[dtype])      # spare = 0: exact fit
    what = f'embed(ids {tuple(ids.shape)} {id_dtype}, {dtype} tables, "{mode}")'
    got = student.embed(laid_out(ids, ids_layout), laid_out(tokens, tokens_layout),
                        laid_out(positions, positions_layout), mode)
    want = _embed(ids.long(), tokens, positions, mode)
    expect_dtype(got, FLOAT_DTYPES[dtype], what=what)
    expect_shape(got, tuple(want.shape), what=what)
    # Indexing is exact and "add" is one rounding of an exact float64 sum of two table entries, so
    # any correct answer (in the tables' dtype or in float64 then cast) is within one ulp (eps * |x|).
    expect_close(got, want.to(FLOAT_DTYPES[dtype]), rtol=torch.finfo(FLOAT_DTYPES[dtype]).eps, atol=0,
                 what=what, mistakes=_embed_mistakes(ids.long(), tokens, positions, mode))


@pytest.mark.exercise("embed", points=1)
def test_embed_accepts_the_edges_next_to_the_errors(student):
    """T = T_max, ids 0 and V - 1, (1,) ids and concat of unequal widths all work."""
    tokens, positions = _randn(4, 3, seed=27), _randn(5, 2, seed=28)
    for ids, mode in ((torch.tensor([[0, 3, 3, 0, 1]]), "concat"), (torch.tensor([3]), "concat"),
                      (torch.tensor([0, 3, 1, 2, 3]), "add")):
        table = positions if mode == "concat" else _randn(5, 3, seed=29)
        what = f'embed(ids {ids.tolist()} with V = 4, T_max = 5, "{mode}")'
        got = student.embed(ids, tokens, table, mode)
        expect_close(got, _embed(ids, tokens, table, mode), atol=1e-12, rtol=0, what=what)


@pytest.mark.exercise("embed", points=1)
def test_embed_rejects_ids_without_a_dimension(student):
    """0-d token ids (no position axis) are rejected with a ValueError; ids of shape (1,) work."""
    tokens, positions = _randn(5, 4, seed=30), _randn(6, 4, seed=31)
    got = student.embed(torch.tensor([2]), tokens, positions, "add")
    expect_close(got, _embed(torch.tensor([2]), tokens, positions, "add"), atol=1e-12, rtol=0,
                 what="embed(ids of shape (1,))")
    expect_raises(ValueError, student.embed, torch.tensor(2), tokens, positions, "add",
                  what="embed with 0-d token ids")


@pytest.mark.exercise("embed", points=1)
def test_embed_rejects_bool_ids(student):
    """Boolean token ids are rejected with a ValueError (indexing would read them as a mask); int32 ids work."""
    tokens, positions = _randn(5, 4, seed=32), _randn(6, 4, seed=33)
    ids = torch.tensor([1, 0, 4], dtype=torch.int32)
    got = student.embed(ids, tokens, positions, "concat")
    expect_close(got, _embed(ids.long(), tokens, positions, "concat"), atol=1e-12, rtol=0,
                 what="embed(int32 ids)")
    expect_raises(ValueError, student.embed, torch.tensor([True, False, True]), tokens, positions, "concat",
                  what="embed with bool token ids")


@pytest.mark.exercise("embed", points=1)
def test_embed_rejects_near_miss_modes(student):
    """Modes "Add", "concatenate" and "" are rejected with a ValueError (only "add" and "concat" exist)."""
    ids, tokens, positions = torch.tensor([0, 1]), _randn(3, 2, seed=34), _randn(4, 2, seed=35)
    for mode in ("Add", "concatenate", ""):
        expect_raises(ValueError, student.embed, ids, tokens, positions, mode, what=f"embed(..., mode={mode!r})")


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


def _expect_ridge(student, features, labels, ridge, what):
    """linear_probe with ``ridge`` matches the float64 ridge solution to RIDGE_TOL."""
    got = student.linear_probe(features, labels, ridge=ridge)
    expect_close(got, _ridge(features, labels, ridge), atol=RIDGE_TOL, rtol=RIDGE_TOL, what=what)


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


RIDGES = [1e-3, 0.05, 0.5, 3.7, 20.0]
"""Ridge strengths the property tests draw (not whole numbers, and from nearly none to strong)."""


def _labels(n, classes, seed, *, absent):
    """n labels with max = classes - 1 (so C = classes); with ``absent``, class 0 never occurs."""
    low = 1 if absent and classes > 1 else 0
    labels = _randint(classes - low, n, seed=seed) + low
    labels[0] = classes - 1
    return labels


@pytest.mark.exercise("linear_probe", points=3)
@grading()
@given(n_extra=st.integers(0, 30), d=st.integers(1, 6), classes=st.integers(2, 5), absent=st.booleans(),
       ridge=st.sampled_from(RIDGES), dtype=dtypes(), label_dtype=st.sampled_from(sorted(INDEX_DTYPES)),
       features_layout=layouts(), labels_layout=layouts(), seed=seeds())
def test_linear_probe_property(student, n_extra, d, classes, absent, ridge, dtype, label_dtype, features_layout,
                               labels_layout, seed):
    """linear_probe matches the float64 closed form for any N, d, C (absent classes too), ridge, dtype and layout."""
    n = d + 2 + n_extra
    labels = _labels(n, classes, seed, absent=absent)
    means = _randn(classes, d, seed=seed + 1)
    features = (means[labels] + 0.5 * _randn(n, d, seed=seed + 2) + 2.0).to(FLOAT_DTYPES[dtype])
    what = f"linear_probe weights (N={n}, d={d}, labels up to {classes - 1}, ridge={ridge}, {dtype} features)"
    got = student.linear_probe(laid_out(features, features_layout),
                               laid_out(labels.to(INDEX_DTYPES[label_dtype]), labels_layout), ridge=ridge)
    want = _ridge(features, labels, ridge)     # from the same rounded features, in float64
    expect_dtype(got, torch.float64, what=what)
    expect_shape(got, (d + 1, classes), what=what)
    # X^T X + ridge I has condition number below ~1e6 here; any float64 method (solve, lstsq on the
    # augmented system, pinv) lands within ~1e-10 of the reference, a float32 or half solve does not.
    expect_close(got, want, atol=RIDGE_TOL, rtol=RIDGE_TOL, what=what,
                 mistakes=_ridge_mistakes(features, labels, ridge))


@pytest.mark.exercise("linear_probe", points=1)
def test_linear_probe_rejects_a_negative_ridge(student):
    """ridge = -0.1 is rejected with a ValueError; ridge = 0 (ordinary least squares) works."""
    features, labels = _probe_data(30, 3, 3, seed=52)
    _expect_ridge(student, features, labels, 0.0, what="linear_probe weights with ridge=0")
    expect_raises(ValueError, student.linear_probe, features, labels, ridge=-0.1,
                  what="linear_probe with ridge=-0.1")


@pytest.mark.exercise("linear_probe", points=1)
def test_linear_probe_rejects_a_negative_label(student):
    """A label -1 is rejected with a ValueError; labels that are all 0 (C = 1) work."""
    features, labels = _probe_data(12, 2, 2, seed=54)
    zeros = torch.zeros(12, dtype=torch.int64)
    _expect_ridge(student, features, zeros, 0.3, what="linear_probe weights with every label 0")
    bad = labels.clone()
    bad[3] = -1
    expect_raises(ValueError, student.linear_probe, features, bad, what="linear_probe with a label -1")


@pytest.mark.exercise("linear_probe", points=1)
def test_linear_probe_rejects_features_that_are_not_2d(student):
    """Features of shape (N,) or (N, d, 2) are rejected with a ValueError; (N, 1) works."""
    features, labels = _probe_data(10, 1, 2, seed=56)
    _expect_ridge(student, features, labels, 0.2, what="linear_probe weights for d = 1")
    expect_raises(ValueError, student.linear_probe, features[:, 0], labels, what="linear_probe with features (10,)")
    expect_raises(ValueError, student.linear_probe, _randn(10, 3, 2, seed=57), labels,
                  what="linear_probe with features (10, 3, 2)")


@pytest.mark.exercise("linear_probe", points=1)
def test_linear_probe_rejects_labels_that_are_not_1d(student):
    """Labels of shape (N, 1) are rejected with a ValueError."""
    features, labels = _probe_data(10, 3, 2, seed=58)
    expect_raises(ValueError, student.linear_probe, features, labels[:, None],
                  what="linear_probe with labels of shape (10, 1)")


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
    """float32 rows give a Python float equal to the float64 value (computed in float64)."""
    a, b = _randn(6, 5, seed=85, dtype=torch.float32), _randn(4, 5, seed=86, dtype=torch.float32)
    got = student.mean_abs_cosine(a, b)
    expect_true(isinstance(got, float), f"mean_abs_cosine should return a Python float, not {type(got).__name__}")
    # float32 rows are exact inputs and the docstring promises float64: 1e-9 (float32 misses by ~1e-7).
    expect_close(got, _cosines(a, b).abs().mean(), atol=1e-9, rtol=1e-9, what="mean_abs_cosine",
                 mistakes=_cosine_mistakes(a, b))


@pytest.mark.exercise("mean_abs_cosine", points=1)
def test_mean_abs_cosine_rejects_different_widths(student):
    """Rows of width 4 and 5 are rejected with a ValueError."""
    expect_raises(ValueError, student.mean_abs_cosine, _randn(3, 4, seed=87), _randn(3, 5, seed=88),
                  what="mean_abs_cosine with widths 4 and 5")


@pytest.mark.exercise("mean_abs_cosine", points=2)
@grading()
@given(n=st.integers(1, 7), m=st.integers(1, 7), d=st.integers(1, 8), same=st.booleans(), dtype=dtypes(),
       a_layout=layouts(), b_layout=layouts(), seed=seeds())
def test_mean_abs_cosine_property(student, n, m, d, same, dtype, a_layout, b_layout, seed):
    """mean |cos| over all N x M pairs matches float64 for any N, M, d, float dtype and layout (rows of any length)."""
    scales = 10.0 ** (2 * torch.rand(n + m, 1, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) - 1)
    a = (tensor(seed + 1, n, d) * scales[:n]).to(FLOAT_DTYPES[dtype])          # row norms from 0.1 to 10 times
    b = a.clone() if same else (tensor(seed + 2, m, d) * scales[n:] + 0.3).to(FLOAT_DTYPES[dtype])
    what = f"mean_abs_cosine(a {tuple(a.shape)}, b {tuple(b.shape)}, {dtype})"
    got = student.mean_abs_cosine(laid_out(a, a_layout), laid_out(b, b_layout))
    expect_true(isinstance(got, float), f"{what} should return a Python float, not {type(got).__name__}")
    # The docstring promises float64: from the same rounded rows, any float64 formula agrees to ~1e-15,
    # while a computation in float32 (~1e-7) or in half precision (~1e-3) does not.
    expect_close(got, _cosines(a, b).abs().mean(), atol=1e-9, rtol=1e-9, what=what,
                 mistakes=_cosine_mistakes(a, b))


@pytest.mark.exercise("mean_abs_cosine", points=1)
def test_mean_abs_cosine_rejects_inputs_that_are_not_matrices(student):
    """a of shape (4,) or (2, 3, 4), or b of shape (2, 3, 4), is rejected with a ValueError; (1, 1) rows work."""
    got = student.mean_abs_cosine(torch.tensor([[-2.0]]), torch.tensor([[0.5]]))
    expect_close(got, 1.0, atol=1e-12, rtol=0, what="mean_abs_cosine of (1, 1) rows -2 and 0.5",
                 mistakes={"signed cosines averaged (the absolute value is missing)": -1.0})
    b = _randn(5, 4, seed=89)
    expect_raises(ValueError, student.mean_abs_cosine, _randn(4, seed=90), b,
                  what="mean_abs_cosine with a of shape (4,)")
    expect_raises(ValueError, student.mean_abs_cosine, _randn(2, 3, 4, seed=91), b,
                  what="mean_abs_cosine with a of shape (2, 3, 4)")
    expect_raises(ValueError, student.mean_abs_cosine, b, _randn(2, 3, 4, seed=92),
                  what="mean_abs_cosine with b of shape (2, 3, 4)")



# -- lda_probe ----------------------------------------------------------------------------------
def _lda(features, labels, ridge, *, prior=True, half=True, pooled="within", denominator="n-c", bias="last",
         whiten=True):
    """Reference LDA in numpy (loops over classes), with switches that reproduce catalogued mistakes."""
    x = features.double().numpy()
    y = labels.numpy()
    n, d = x.shape
    c = int(y.max()) + 1
    means = np.stack([x[y == k].mean(axis=0) for k in range(c)])                # (C, d)
    centred = x - means[y] if pooled == "within" else x - x.mean(axis=0)
    divisor = {"n-c": max(n - c, 1), "n": n}[denominator]
    cov = centred.T @ centred / divisor + ridge * np.eye(d)
    w = np.linalg.inv(cov) @ means.T if whiten else means.T.copy()              # (d, C)
    quad = (means.T * w).sum(axis=0)
    b = -(quad / 2 if half else quad)
    if prior:
        b = b + np.log(np.bincount(y, minlength=c) / n)
    rows = [w, b[None]] if bias == "last" else [b[None], w]
    return torch.from_numpy(np.concatenate(rows, axis=0))


def _lda_mistakes(features, labels, ridge):
    mistakes = {
        "the log prior log(pi_c) is missing from the bias": _lda(features, labels, ridge, prior=False),
        "the factor 1/2 is missing in -mu^T S^-1 mu / 2": _lda(features, labels, ridge, half=False),
        "covariance of all rows around the overall mean instead of within classes":
            _lda(features, labels, ridge, pooled="total"),
        "within-class scatter divided by N instead of N - C": _lda(features, labels, ridge, denominator="n"),
        "bias row first instead of last": _lda(features, labels, ridge, bias="first"),
        "no S^-1 (nearest centroid instead of LDA)": _lda(features, labels, ridge, whiten=False),
    }
    if len(labels) - int(labels.max()) - 1 >= features.shape[1]:   # else the scatter alone is singular
        try:
            mistakes["ridge term missing"] = _lda(features, labels, 0.0)
        except np.linalg.LinAlgError:
            pass
    return mistakes


def _lda_data(sizes, d, seed, *, spread=0.7, dtype=torch.float64):
    """Classes of unequal sizes with correlated within-class noise, so that every term of delta_c matters."""
    labels = torch.cat([torch.full((size,), k) for k, size in enumerate(sizes)])
    means = 1.5 * _randn(len(sizes), d, seed=seed)
    mix = _randn(d, d, seed=seed + 1)                                         # correlated noise
    noise = spread * _randn(len(labels), d, seed=seed + 2) @ mix
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed + 3))
    return (means[labels] + noise + 1.0)[order].to(dtype), labels[order]


# numpy's inv and torch's solve on a well-conditioned (d x d) system agree to ~1e-12; 1e-8 is ample.
LDA_TOL = 1e-8


def _expect_lda(student, features, labels, ridge, what):
    got = student.lda_probe(features, labels, ridge=ridge)
    want = _lda(features, labels, ridge)
    expect_shape(got, tuple(want.shape), what=what)
    expect_close(got, want, atol=LDA_TOL, rtol=LDA_TOL, what=what, mistakes=_lda_mistakes(features, labels, ridge))


@pytest.mark.exercise("lda_probe", points=2, public=True)
def test_lda_probe_matches_the_formula(student):
    """3 classes of sizes 10, 20, 30 in 4 dimensions, ridge 0.1: [S^-1 mu_c ; -mu_c^T S^-1 mu_c / 2 + log pi_c]."""
    features, labels = _lda_data((10, 20, 30), 4, seed=100)
    _expect_lda(student, features, labels, 0.1, "lda_probe weights")


@pytest.mark.exercise("lda_probe", points=2)
def test_lda_probe_other_case(student):
    """5 classes of unequal sizes in 6 dimensions, ridge 0.5."""
    features, labels = _lda_data((7, 12, 9, 20, 15), 6, seed=110, spread=1.2)
    _expect_lda(student, features, labels, 0.5, "lda_probe weights")


@pytest.mark.exercise("lda_probe", points=1)
def test_lda_probe_default_ridge(student):
    """Without a ridge argument, lambda = 1e-3."""
    features, labels = _lda_data((15, 25), 3, seed=120)
    got = student.lda_probe(features, labels)
    expect_close(got, _lda(features, labels, 1e-3), atol=LDA_TOL, rtol=LDA_TOL, what="lda_probe weights",
                 mistakes=_lda_mistakes(features, labels, 1e-3))


@pytest.mark.exercise("lda_probe", points=1)
def test_lda_probe_one_example_per_class_is_nearest_centroid(student):
    """One row per class (N = C): S = ridge * I, and the prediction is the nearest centroid."""
    features = _randn(6, 5, seed=130)
    labels = torch.tensor([3, 0, 5, 1, 4, 2])
    got = student.lda_probe(features, labels, ridge=0.5)
    expect_close(got, _lda(features, labels, 0.5), atol=LDA_TOL, rtol=LDA_TOL, what="lda_probe weights (N = C)",
                 mistakes=_lda_mistakes(features, labels, 0.5))
    queries = features + 0.01 * _randn(6, 5, seed=131)
    weights = torch.as_tensor(got).double()
    predicted = (queries @ weights[:-1] + weights[-1]).argmax(1)
    expect_equal(predicted.tolist(), labels.tolist(), what="classes predicted for points next to each row")


@pytest.mark.exercise("lda_probe", points=1)
def test_lda_probe_float64_from_float32(student):
    """float32 features give float64 weights, equal to the float64 computation."""
    features, labels = _lda_data((8, 8, 8), 3, seed=140, dtype=torch.float32)
    got = student.lda_probe(features, labels, ridge=0.2)
    expect_dtype(got, torch.float64, what="lda_probe weights")
    # The features are exact in float32; a float32 solve would miss by ~1e-6.
    expect_close(got, _lda(features, labels, 0.2), atol=1e-9, rtol=1e-9, what="lda_probe weights")


@pytest.mark.exercise("lda_probe", points=1)
def test_lda_probe_reads_positions_that_ridge_masks(student):
    """On 16 smooth (sinusoidal) position codes plus noise, LDA reads the position exactly where ridge fails."""
    t, d = 16, 8
    pos = torch.arange(t, dtype=torch.float64)[:, None]
    code = torch.cat([torch.sin(pos * 10000.0 ** (-torch.arange(0, d, 2) / d)),
                      torch.cos(pos * 10000.0 ** (-torch.arange(0, d, 2) / d))], dim=1)   # (16, 8)
    labels = torch.arange(t).repeat(20)
    features = code[labels] + 0.01 * _randn(len(labels), d, seed=150)
    got = torch.as_tensor(student.lda_probe(features, labels, ridge=1e-3)).double()
    test = code[labels] + 0.01 * _randn(len(labels), d, seed=151)
    accuracy = ((test @ got[:-1] + got[-1]).argmax(1) == labels).double().mean().item()
    expect_true(accuracy == 1.0, f"LDA should read all 16 positions of the held-out codes (accuracy {accuracy:.2f}); "
                "check that S is the scatter within classes and that the bias is -mu^T S^-1 mu / 2 + log pi")


@pytest.mark.exercise("lda_probe", points=1)
def test_lda_probe_rejects_an_empty_class(student):
    """Labels {0, 2} (class 1 has no example) are rejected with a ValueError."""
    features, _ = _lda_data((5, 5), 3, seed=160)
    expect_raises(ValueError, student.lda_probe, features, torch.tensor([0, 2] * 5),
                  what="lda_probe with labels {0, 2}")


@pytest.mark.exercise("lda_probe", points=1)
def test_lda_probe_rejects_mismatched_labels(student):
    """10 feature rows with 9 labels, or a negative label, are rejected with a ValueError."""
    features, labels = _lda_data((5, 5), 3, seed=170)
    expect_raises(ValueError, student.lda_probe, features, labels[:9], what="lda_probe with 10 rows and 9 labels")
    bad = labels.clone()
    bad[0] = -1
    expect_raises(ValueError, student.lda_probe, features, bad, what="lda_probe with a label -1")


@pytest.mark.exercise("lda_probe", points=3)
@grading()
@given(sizes=st.lists(st.integers(1, 9), min_size=1, max_size=5), d=st.integers(1, 6),
       ridge=st.sampled_from([1e-2, 0.1, 0.5, 2.5]), dtype=dtypes(), label_dtype=st.sampled_from(sorted(INDEX_DTYPES)),
       features_layout=layouts(), labels_layout=layouts(), seed=seeds())
def test_lda_probe_property(student, sizes, d, ridge, dtype, label_dtype, features_layout, labels_layout, seed):
    """lda_probe matches the float64 formula for any class sizes (N = C and C = 1 too), d, ridge, dtype and layout."""
    features, labels = _lda_data(tuple(sizes), d, seed, dtype=FLOAT_DTYPES[dtype])
    what = f"lda_probe weights (class sizes {sizes}, d={d}, ridge={ridge}, {dtype} features)"
    got = student.lda_probe(laid_out(features, features_layout),
                            laid_out(labels.to(INDEX_DTYPES[label_dtype]), labels_layout), ridge=ridge)
    want = _lda(features, labels, ridge)       # from the same rounded features, in float64
    expect_dtype(got, torch.float64, what=what)
    expect_shape(got, tuple(want.shape), what=what)
    # S has eigenvalues >= ridge >= 0.01 and at most ~1e3: float64 solve, inv or pinv agree to
    # ~1e-12 of the largest weight; half or float32 arithmetic misses by 1e-3 or 1e-6.
    scale = max(1.0, float(want.abs().max()))
    expect_close(got, want, atol=LDA_TOL * scale, rtol=LDA_TOL, what=what,
                 mistakes=_lda_mistakes(features, labels, ridge))


@pytest.mark.exercise("lda_probe", points=1)
def test_lda_probe_rejects_a_negative_ridge(student):
    """ridge = -0.1 is rejected with a ValueError; ridge = 0 works when the within-class scatter is invertible."""
    features, labels = _lda_data((10, 12), 3, seed=172)
    got = student.lda_probe(features, labels, ridge=0.0)
    expect_close(got, _lda(features, labels, 0.0), atol=LDA_TOL, rtol=LDA_TOL, what="lda_probe weights with ridge=0")
    expect_raises(ValueError, student.lda_probe, features, labels, ridge=-0.1, what="lda_probe with ridge=-0.1")


@pytest.mark.exercise("lda_probe", points=1)
def test_lda_probe_rejects_zero_ridge_with_one_example_per_class(student):
    """N == C with ridge = 0 is rejected with a ValueError; N = C + 1 with ridge = 0 (d = 1) works."""
    features = torch.tensor([[0.0], [1.0], [3.0], [3.5]], dtype=torch.float64)
    labels = torch.tensor([0, 1, 2, 2])
    got = student.lda_probe(features, labels, ridge=0.0)
    expect_close(got, _lda(features, labels, 0.0), atol=LDA_TOL, rtol=LDA_TOL,
                 what="lda_probe weights for N = C + 1, ridge=0")
    expect_raises(ValueError, student.lda_probe, features[:3], labels[:3], ridge=0.0,
                  what="lda_probe with one example per class and ridge=0")


@pytest.mark.exercise("lda_probe", points=1)
def test_lda_probe_rejects_features_that_are_not_2d(student):
    """Features of shape (N,) or (N, d, 2) are rejected with a ValueError; d = 1 works."""
    features, labels = _lda_data((5, 7), 1, seed=174)
    got = student.lda_probe(features, labels, ridge=0.1)
    expect_close(got, _lda(features, labels, 0.1), atol=LDA_TOL, rtol=LDA_TOL, what="lda_probe weights for d = 1")
    expect_raises(ValueError, student.lda_probe, features[:, 0], labels, what="lda_probe with features (12,)")
    expect_raises(ValueError, student.lda_probe, _randn(12, 3, 2, seed=175), labels,
                  what="lda_probe with features (12, 3, 2)")


@pytest.mark.exercise("lda_probe", points=1)
def test_lda_probe_rejects_labels_that_are_not_1d(student):
    """Labels of shape (N, 1) are rejected with a ValueError."""
    features, labels = _lda_data((5, 5), 3, seed=176)
    expect_raises(ValueError, student.lda_probe, features, labels[:, None],
                  what="lda_probe with labels of shape (10, 1)")


# -- attention_logit_terms ----------------------------------------------------------------------
def _terms(e, p, w_q, w_k, *, scale="head", swap_mixed=False, keys_with_wq=False, untransposed=False,
           transposed_logits=False):
    """Reference decomposition with einsum, with switches that reproduce catalogued mistakes."""
    e, p, w_q, w_k = e.double(), p.double(), w_q.double(), w_k.double()
    e, p = torch.broadcast_tensors(e, p)
    wk = w_q if keys_with_wq else w_k
    proj = (lambda x, w: torch.einsum("...td,dh->...th", x, w)) if untransposed else \
        (lambda x, w: torch.einsum("...td,hd->...th", x, w))
    denominator = {"head": w_q.shape[0] ** 0.5, "none": 1.0, "model": w_q.shape[1] ** 0.5}[scale]
    pairs = [(e, e), (e, p), (p, e), (p, p)]
    if swap_mixed:
        pairs = [(e, e), (p, e), (e, p), (p, p)]
    out = []
    for a, b in pairs:
        logit = torch.einsum("...ih,...jh->...ij", proj(a, w_q), proj(b, wk)) / denominator
        out.append(logit.transpose(-2, -1) if transposed_logits else logit)
    return torch.stack(out)


def _terms_mistakes(e, p, w_q, w_k):
    mistakes = {
        "no 1/sqrt(d_head) scaling": _terms(e, p, w_q, w_k, scale="none"),
        "token->position and position->token swapped": _terms(e, p, w_q, w_k, swap_mixed=True),
        "keys projected with W_q instead of W_k": _terms(e, p, w_q, w_k, keys_with_wq=True),
        "queries and keys swapped (each term transposed)": _terms(e, p, w_q, w_k, transposed_logits=True),
    }
    if w_q.shape[0] != w_q.shape[1]:
        mistakes["scaled by sqrt(d) (the input width) instead of sqrt(d_head)"] = _terms(e, p, w_q, w_k,
                                                                                        scale="model")
    else:
        mistakes["x @ W instead of x @ W^T (torch.nn.Linear stores (out, in))"] = _terms(e, p, w_q, w_k,
                                                                                         untransposed=True)
    return mistakes


# Four small matrix products in float64: exact to ~1e-14; 1e-10 leaves room for any summation order.
TERMS_TOL = 1e-10


@pytest.mark.exercise("attention_logit_terms", points=2, public=True)
def test_attention_logit_terms_small(student):
    """e (5, 4), p (5, 4), W_q and W_k (4, 4): the four terms, stacked token-token, token-pos, pos-token, pos-pos."""
    e, p = _randn(5, 4, seed=200), _randn(5, 4, seed=201)
    w_q, w_k = _randn(4, 4, seed=202), _randn(4, 4, seed=203)
    got = student.attention_logit_terms(e, p, w_q, w_k)
    expect_shape(got, (4, 5, 5), what="attention_logit_terms")
    expect_close(got, _terms(e, p, w_q, w_k), atol=TERMS_TOL, rtol=TERMS_TOL, what="attention_logit_terms",
                 mistakes=_terms_mistakes(e, p, w_q, w_k))


@pytest.mark.exercise("attention_logit_terms", points=2)
def test_attention_logit_terms_batched_with_a_narrow_head(student):
    """e (3, 6, 8) with one position table (6, 8), and a head of width 2 (W of shape (2, 8))."""
    e, p = _randn(3, 6, 8, seed=210), _randn(6, 8, seed=211)
    w_q, w_k = _randn(2, 8, seed=212), _randn(2, 8, seed=213)
    got = student.attention_logit_terms(e, p, w_q, w_k)
    expect_shape(got, (4, 3, 6, 6), what="attention_logit_terms")
    expect_close(got, _terms(e, p, w_q, w_k), atol=TERMS_TOL, rtol=TERMS_TOL, what="attention_logit_terms",
                 mistakes=_terms_mistakes(e, p, w_q, w_k))


@pytest.mark.exercise("attention_logit_terms", points=1)
def test_attention_logit_terms_add_up_to_the_logits(student):
    """The four terms sum to (x W_q^T)(x W_k^T)^T / sqrt(d_head) for x = e + p (batched p as well)."""
    e, p = _randn(2, 7, 5, seed=220), _randn(2, 7, 5, seed=221)
    w_q, w_k = _randn(3, 5, seed=222), _randn(3, 5, seed=223)
    got = torch.as_tensor(student.attention_logit_terms(e, p, w_q, w_k)).double()
    x = e + p
    logits = (x @ w_q.T) @ (x @ w_k.T).transpose(-2, -1) / 3 ** 0.5
    expect_close(got.sum(0), logits, atol=TERMS_TOL, rtol=TERMS_TOL, what="sum of the four terms",
                 mistakes={"no 1/sqrt(d_head) scaling": logits * 3 ** 0.5,
                           "scaled by sqrt(d) (the input width) instead of sqrt(d_head)": logits * (3 / 5) ** 0.5,
                           "queries and keys swapped (each term transposed)": logits.transpose(-2, -1)})
    expect_close(got, _terms(e, p, w_q, w_k), atol=TERMS_TOL, rtol=TERMS_TOL, what="attention_logit_terms",
                 mistakes=_terms_mistakes(e, p, w_q, w_k))


@pytest.mark.exercise("attention_logit_terms", points=1)
def test_attention_logit_terms_keeps_float32(student):
    """float32 inputs give a float32 result, close to the float64 terms."""
    e, p = _randn(4, 3, seed=230, dtype=torch.float32), _randn(4, 3, seed=231, dtype=torch.float32)
    w_q, w_k = _randn(3, 3, seed=232, dtype=torch.float32), _randn(3, 3, seed=233, dtype=torch.float32)
    got = student.attention_logit_terms(e, p, w_q, w_k)
    expect_dtype(got, torch.float32, what="attention_logit_terms")
    # float32 products of O(1) numbers over 3 terms: error ~1e-6.
    expect_close(got, _terms(e, p, w_q, w_k), atol=1e-5, rtol=1e-5, what="attention_logit_terms",
                 mistakes=_terms_mistakes(e, p, w_q, w_k))


@pytest.mark.exercise("attention_logit_terms", points=1)
def test_attention_logit_terms_rejects_bad_shapes(student):
    """W_q and W_k of different shapes, or vectors whose width is not W's, are rejected with a ValueError."""
    e, p = _randn(4, 3, seed=240), _randn(4, 3, seed=241)
    expect_raises(ValueError, student.attention_logit_terms, e, p, _randn(2, 3, seed=242), _randn(3, 3, seed=243),
                  what="attention_logit_terms with W_q (2, 3) and W_k (3, 3)")
    expect_raises(ValueError, student.attention_logit_terms, e, p, _randn(2, 5, seed=244), _randn(2, 5, seed=245),
                  what="attention_logit_terms with vectors of width 3 and W of width 5")
    expect_raises(ValueError, student.attention_logit_terms, e, _randn(5, 3, seed=246), _randn(2, 3, seed=247),
                  _randn(2, 3, seed=248), what="attention_logit_terms with T = 4 tokens and 5 positions")


@pytest.mark.exercise("attention_logit_terms", points=3)
@grading()
@given(batch=st.sampled_from([(), (2,), (2, 3)]), pos_batched=st.booleans(), t=st.integers(1, 6),
       d=st.integers(1, 6), d_head=st.integers(1, 5), dtype=dtypes(), e_layout=layouts(), p_layout=layouts(),
       w_q_layout=layouts(), w_k_layout=layouts(), seed=seeds())
def test_attention_logit_terms_property(student, batch, pos_batched, t, d, d_head, dtype, e_layout, p_layout,
                                        w_q_layout, w_k_layout, seed):
    """The four terms match float64 for any batch shape, T, d, d_head, float dtype and layout of all four inputs."""
    kind = FLOAT_DTYPES[dtype]
    e = tensor(seed, *batch, t, d, dtype=kind)
    p = tensor(seed + 1, *(batch if pos_batched else ()), t, d, dtype=kind)
    w_q, w_k = tensor(seed + 2, d_head, d, dtype=kind), tensor(seed + 3, d_head, d, dtype=kind)
    what = f"attention_logit_terms(e {tuple(e.shape)}, p {tuple(p.shape)}, W {(d_head, d)}, {dtype})"
    got = student.attention_logit_terms(laid_out(e, e_layout), laid_out(p, p_layout), laid_out(w_q, w_q_layout),
                                        laid_out(w_k, w_k_layout))
    want = _terms(e, p, w_q, w_k)               # from the same rounded inputs, in float64
    expect_dtype(got, kind, what=what)
    expect_shape(got, (4, *batch, t, t), what=what)
    # Forward error of a chain of products in any order: at most ~(2d + d_head + 4) roundings of the
    # dtype times |e||W_q|^T|W_k||e|^T / sqrt(d_head) (the same terms from absolute values); a float64
    # computation cast to the dtype is within one rounding of it.
    bound = float(_terms(e.abs(), p.abs(), w_q.abs(), w_k.abs()).max())
    atol = (2 * d + d_head + 4) * torch.finfo(kind).eps * bound + 1e-12
    expect_close(got, want, atol=atol, rtol=0, what=what, mistakes=_terms_mistakes(e, p, w_q, w_k))


@pytest.mark.exercise("attention_logit_terms", points=1)
def test_attention_logit_terms_rejects_position_vectors_of_another_width(student):
    """Position vectors of width 5 (tokens and W of width 3) are rejected with a ValueError; T = d = d_head = 1 works."""
    e, p, w_q, w_k = (_randn(1, 1, seed=s) for s in (250, 251, 252, 253))
    got = student.attention_logit_terms(e, p, w_q, w_k)
    expect_close(got, _terms(e, p, w_q, w_k), atol=TERMS_TOL, rtol=TERMS_TOL,
                 what="attention_logit_terms with T = d = d_head = 1")
    expect_raises(ValueError, student.attention_logit_terms, _randn(4, 3, seed=254), _randn(4, 5, seed=255),
                  _randn(2, 3, seed=256), _randn(2, 3, seed=257),
                  what="attention_logit_terms with token width 3, position width 5 and W of width 3")


@pytest.mark.exercise("attention_logit_terms", points=1)
def test_attention_logit_terms_rejects_weights_that_are_not_matrices(student):
    """W_q and W_k of shape (3,) (not (d_head, d)) are rejected with a ValueError."""
    e, p = _randn(4, 3, seed=258), _randn(4, 3, seed=259)
    expect_raises(ValueError, student.attention_logit_terms, e, p, _randn(3, seed=260), _randn(3, seed=261),
                  what="attention_logit_terms with W_q and W_k of shape (3,)")
