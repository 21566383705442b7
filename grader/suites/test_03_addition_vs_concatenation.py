"""Hidden tests and public checks for notebook 03, addition versus concatenation.

References are computed here in float64 with independent code (indexing, torch.cat, einsum for
the logit terms, the trusted probes of grader.fixtures.addition_vs_concatenation and the hidden
protocols of grader.hidden.addition_vs_concatenation),
never with the learner's functions.
"""
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from grader.fixtures import addition_vs_concatenation as fixtures
from grader.hidden import addition_vs_concatenation as hidden
from grader.judge import expect_close, expect_dtype, expect_equal, expect_raises, expect_shape, expect_true, fail
from grader.properties import FLOAT_DTYPES, dtypes, grading, laid_out, layouts, seeds, tensor
from grader.sandbox import StudentRaised

EXERCISE_ORDER = ("embed", "held_out_accuracy", "is_fair_protocol", "first_coordinates_carry", "attention_logit_terms")
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


# One mistake costs once: the "add" test owns which position rows are used (T = T_max included, where
# pos_table[1:T+1] runs out of rows), the "concat" test the order of the parts, the batch-shape test ids
# of other shapes than (B, T), the property test the dtypes (id dtypes included) and memory layouts, the
# error test what raises. The other tests accept the results of the mistakes another test owns, and
# choose inputs on which those mistakes return a result: T < T_max, ids below the number of position
# rows, (B, T) ids outside the batch-shape test.
def _owned_embed_mistake(got, ids, tokens, positions, mode, owned_elsewhere, *, atol, rtol=0.0):
    """True if got is what a mistake owned by another test returns (not the right answer)."""
    wrong = []
    if "rows" in owned_elsewhere:
        if positions.shape[0] > ids.shape[-1]:
            wrong.append(_embed(ids, tokens, positions, mode, shift=1))
        if int(ids.max()) < positions.shape[0]:
            wrong.append(_embed(ids, tokens, positions, mode, pos_by_id=True))
    if "order" in owned_elsewhere and mode == "concat":
        wrong.append(_embed(ids, tokens, positions, mode, pos_first=True))
    got = torch.as_tensor(got).double()
    right = _embed(ids, tokens, positions, mode)
    return any(got.shape == w.shape and torch.allclose(got, w, atol=atol, rtol=rtol)
               and not torch.allclose(got, right, atol=atol, rtol=rtol) for w in wrong)


@pytest.mark.exercise("embed", points=2, public=True)
def test_embed_add(student):
    """mode "add": (2, 5) ids give (2, 5, 6) = token_table[ids] + pos_table[:5].

    And T = T_max = 8 uses every row of the position table."""
    tokens = _randn(10, 6, seed=2, dtype=torch.float32)
    positions = _randn(8, 6, seed=3, dtype=torch.float32)
    for ids in (_randint(10, 2, 5, seed=1), _randint(10, 1, 8, seed=18)):
        what = f'embed(ids of shape {tuple(ids.shape)}, pos_table with 8 rows, "add")'
        got = student.embed(ids, tokens, positions, "add")
        expect_shape(got, (*ids.shape, 6), what=what)
        expect_close(got, _embed(ids, tokens, positions, "add"), atol=ATOL_EMBED, rtol=0, what=what,
                     mistakes=_embed_mistakes(ids, tokens, positions, "add"))


@pytest.mark.exercise("embed", points=2, public=True)
def test_embed_concat(student):
    """mode "concat": (2, 5) ids give (2, 5, 6 + 3) = [token_table[ids]; pos_table[:5]], token part first."""
    ids, tokens, positions = _randint(10, 2, 5, seed=4), _randn(10, 6, seed=5, dtype=torch.float32), \
        _randn(10, 3, seed=6, dtype=torch.float32)
    got = student.embed(ids, tokens, positions, "concat")
    expect_shape(got, (2, 5, 9), what='embed(..., "concat")')
    if _owned_embed_mistake(got, ids, tokens, positions, "concat", ("rows",), atol=ATOL_EMBED):
        return  # the position rows are test_embed_add's to judge
    expect_close(got, _embed(ids, tokens, positions, "concat"), atol=ATOL_EMBED, rtol=0,
                 what='embed(..., "concat")', mistakes=_embed_mistakes(ids, tokens, positions, "concat"))


@pytest.mark.exercise("embed", points=1)
def test_embed_unbatched_and_deeply_batched(student):
    """Ids of shape (T,) and (2, 3, T) work in both modes (the position axis is the last one)."""
    tokens, positions = _randn(12, 4, seed=7), _randn(12, 4, seed=8)
    for shape, seed in (((6,), 9), ((2, 3, 4), 10)):
        ids = _randint(12, *shape, seed=seed)
        for mode in ("add", "concat"):
            got = student.embed(ids, tokens, positions, mode)
            if _owned_embed_mistake(got, ids, tokens, positions, mode, ("rows", "order"), atol=1e-12):
                continue  # owned by the "add" and "concat" tests
            expect_close(got, _embed(ids, tokens, positions, mode), atol=1e-12, rtol=0,
                         what=f'embed(ids of shape {shape}, ..., "{mode}")',
                         mistakes=_embed_mistakes(ids, tokens, positions, mode))


@pytest.mark.exercise("embed", points=1)
def test_embed_keeps_float64(student):
    """float64 tables give a float64 result."""
    ids = _randint(5, 2, 3, seed=11)
    got = student.embed(ids, _randn(5, 2, seed=12), _randn(6, 2, seed=13), "concat")
    expect_dtype(got, torch.float64, what='embed(float64 tables, "concat")')


@pytest.mark.exercise("embed", points=3)
@grading()
@given(batch=st.sampled_from([(1,), (3,)]), t=st.integers(1, 6), spare=st.integers(1, 3),
       vocab=st.integers(1, 9), d_tok=st.integers(1, 5), d_pos=st.integers(1, 5),
       mode=st.sampled_from(["add", "concat"]), dtype=dtypes(), id_dtype=st.sampled_from(sorted(INDEX_DTYPES)),
       ids_layout=layouts(), tokens_layout=layouts(), positions_layout=layouts(), seed=seeds())
@example(batch=(3,), t=4, spare=1, vocab=5, d_tok=3, d_pos=2, mode="concat", dtype="float32", id_dtype="int64",
         ids_layout="transposed", tokens_layout="contiguous", positions_layout="strided", seed=5)  # ids not contiguous
def test_embed_property(student, batch, t, spare, vocab, d_tok, d_pos, mode, dtype, id_dtype, ids_layout,
                        tokens_layout, positions_layout, seed):
    """embed matches the float64 reference for (B, T) ids, T < T_max, any widths, dtypes, id dtypes and layouts."""
    # Other batch shapes, T = T_max and ids past the last position row are the named tests' cases.
    d_pos = d_tok if mode == "add" else d_pos
    ids = _randint(min(vocab, t + spare), *batch, t, seed=seed).to(INDEX_DTYPES[id_dtype])
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
    eps = torch.finfo(FLOAT_DTYPES[dtype]).eps
    if _owned_embed_mistake(got, ids.long(), tokens, positions, mode, ("rows", "order"), atol=0, rtol=eps):
        return  # the position rows and the order of the parts are the named tests' to judge
    expect_close(got, want.to(FLOAT_DTYPES[dtype]), rtol=torch.finfo(FLOAT_DTYPES[dtype]).eps, atol=0,
                 what=what, mistakes=_embed_mistakes(ids.long(), tokens, positions, mode))


@pytest.mark.exercise("embed", points=1)
def test_embed_rejects_bad_inputs(student):
    """ValueError for: an unknown mode ("sum", "Add", "concatenate", ""), "add" with d_tok != d_pos, T > T_max,
    ids equal to V or negative, float, bool or 0-d ids. The valid edges next to them raise nothing: ids 0 and
    V - 1, a single id, and "concat" with unequal widths."""
    tokens, positions, narrow = _randn(5, 4, seed=14), _randn(6, 4, seed=15), _randn(6, 3, seed=16)
    ids = torch.tensor([0, 4, 1])
    for args, what in (((ids, tokens, positions, "sum"), 'mode="sum"'),
                       ((ids, tokens, positions, "Add"), 'mode="Add"'),
                       ((ids, tokens, positions, "concatenate"), 'mode="concatenate"'),
                       ((ids, tokens, positions, ""), 'mode=""'),
                       ((ids, tokens, narrow, "add"), 'd_tok=4, d_pos=3, mode="add"'),
                       ((_randint(5, 2, 7, seed=17), tokens, positions, "add"), "T=7 > T_max=6"),
                       ((_randint(5, 2, 7, seed=17), tokens, narrow, "concat"), 'T=7 > T_max=6, mode="concat"'),
                       ((torch.tensor([0, 5, 1]), tokens, positions, "add"), "token id 5 for V=5"),
                       ((torch.tensor([0, -1, 1]), tokens, positions, "add"), "token id -1"),
                       ((torch.tensor([0.0, 1.0]), tokens, positions, "add"), "float token ids"),
                       ((torch.tensor([True, False, True]), tokens, positions, "concat"), "bool token ids"),
                       ((torch.tensor(2), tokens, positions, "add"), "0-d token ids")):
        expect_raises(ValueError, student.embed, *args, what=f"embed with {what}")
    # T = T_max is the "add" test's case, int32 ids the property test's (they judge the values too).
    for args, what in (((torch.tensor([[0, 4, 4, 0, 1]]), tokens, positions, "add"), "ids 0 and 4 = V - 1"),
                       ((torch.tensor([[3]]), tokens, narrow, "concat"), 'ids of shape (1, 1), "concat" with widths 4 and 3')):
        student.embed(*args)  # raises nothing (a ValueError here fails the test with its message)


# -- held_out_accuracy --------------------------------------------------------------------------
def _grid(vocab, positions, d, seed, *, token_scale=1.0, position_scale=1.0, noise=0.1, dtype=torch.float64,
          shuffle=True):
    """Features e_v + p_t + noise for every (token, position) pair, rows in a shuffled order."""
    tokens = torch.arange(vocab).repeat_interleave(positions)
    where = torch.arange(positions).repeat(vocab)
    if shuffle:
        order = torch.randperm(vocab * positions, generator=torch.Generator().manual_seed(seed + 3))
        tokens, where = tokens[order], where[order]
    features = token_scale * _randn(vocab, d, seed=seed)[tokens] + position_scale * _randn(positions, d, seed=seed + 1)[where] \
        + noise * _randn(vocab * positions, d, seed=seed + 2)
    return features.to(dtype), tokens, where


PROBES = {"lda_probe": fixtures.lda_probe, "ridge_probe": fixtures.ridge_probe,
          "nearest_centroid_probe": fixtures.nearest_centroid_probe}
"""The trusted probes the tests hand to held_out_accuracy (the notebook's two, and a third)."""


def _held_out(features, tokens, where, read, probe, *, split="other", bias=True):
    """The reference protocol in float64, with switches that reproduce catalogued mistakes."""
    tokens, where = tokens.long(), where.long()
    labels, other = (tokens, where) if read == "token" else (where, tokens)
    n = len(labels)
    if split == "other":
        train, test = other % 2 == 0, other % 2 == 1
    elif split == "other reversed":
        train, test = other % 2 == 1, other % 2 == 0
    elif split == "read":
        train, test = labels % 2 == 0, labels % 2 == 1
    elif split == "row index":
        train, test = torch.arange(n) % 2 == 0, torch.arange(n) % 2 == 1
    elif split == "random":
        order = torch.randperm(n, generator=torch.Generator().manual_seed(0))
        train, test = torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool)
        train[order[: n // 2]], test[order[n // 2:]] = True, True
    else:  # "none": trained and tested on every row
        train = test = torch.ones(n, dtype=torch.bool)
    weights = probe(features[train], labels[train]).double()
    scores = features[test].double() @ weights[:-1] + (weights[-1] if bias else 0.0)
    return (scores.argmax(dim=1) == labels[test]).double().mean().item()


def _held_out_mistakes(features, tokens, where, read, probe):
    """{property: {mistake: the accuracy it gives}}, grouped by the test that owns each property."""
    swapped = "position" if read == "token" else "token"
    return {
        "split": {
            "the pairs split at random (a probe can then remember which values of the other factor each label "
            "came with)": _held_out(features, tokens, where, read, probe, split="random"),
            "the rows split by the factor read (its odd values are never trained, so never predicted)":
                _held_out(features, tokens, where, read, probe, split="read"),
            "trained and tested on every row": _held_out(features, tokens, where, read, probe, split="none"),
            "trained on the odd values of the other factor, tested on the even ones (the reverse of the protocol)":
                _held_out(features, tokens, where, read, probe, split="other reversed"),
            "the rows split by their index, not by the other factor":
                _held_out(features, tokens, where, read, probe, split="row index"),
        },
        "factor": {f"the {swapped} read instead of the {read}": _held_out(features, tokens, where, swapped, probe)},
        "bias": {"the bias row left out of the scores": _held_out(features, tokens, where, read, probe, bias=False)},
    }


# One mistake costs once: the chance-level test owns the split, the position test the factor read,
# the token test the bias row; each test accepts the answers of the mistakes another test owns.
def _expect_held_out(student, features, tokens, where, read, probe, what, *, owned_elsewhere, layout="contiguous"):
    got = student.held_out_accuracy(laid_out(features, layout), tokens, where, read,
                                    student.fixture(f"addition_vs_concatenation.{probe}"))
    expect_true(isinstance(got, float), f"{what} should be a Python float, not {type(got).__name__}")
    grouped = _held_out_mistakes(features, tokens, where, read, PROBES[probe])
    want = _held_out(features, tokens, where, read, PROBES[probe])
    # Accuracies are fractions of at most a few hundred rows, so correct answers agree exactly;
    # 1e-9 leaves room for scores summed in another order where two classes tie.
    if abs(got - want) > 1e-9 and any(abs(got - value) <= 1e-9 for name in owned_elsewhere
                                      for value in grouped[name].values()):
        return
    mistakes = {mistake: value for group in grouped.values() for mistake, value in group.items()}
    expect_close(got, want, atol=1e-9, rtol=0, what=what, mistakes=mistakes)


@pytest.mark.exercise("held_out_accuracy", points=2, public=True)
def test_held_out_accuracy_is_at_chance_without_the_factor(student):
    """Features that carry the token and no position (16 tokens x 16 positions, LDA): the position of the odd
    tokens, learned on the even ones, is read at about chance, 1/16."""
    features, tokens, where = _grid(16, 16, 6, seed=322, position_scale=0.0, noise=0.5)
    _expect_held_out(student, features, tokens, where, "position", "lda_probe",
                     "held_out_accuracy(<256 pairs that carry no position>, read=\"position\", probe=lda_probe)",
                     owned_elsewhere=("factor", "bias"))


@pytest.mark.exercise("held_out_accuracy", points=2)
def test_held_out_accuracy_reads_the_position(student):
    """8 tokens x 6 positions in 5 dimensions, LDA: the position of the odd tokens, learned on the even ones."""
    features, tokens, where = _grid(8, 6, 5, seed=301, noise=0.6)
    _expect_held_out(student, features, tokens, where, "position", "lda_probe",
                     "held_out_accuracy(<48 pairs>, read=\"position\", probe=lda_probe)",
                     owned_elsewhere=("split", "bias"))


@pytest.mark.exercise("held_out_accuracy", points=2)
def test_held_out_accuracy_reads_the_token(student):
    """12 tokens x 9 positions in 4 dimensions (float32), ridge probe: the token at the odd positions, with the
    probe's bias row in the scores."""
    features, tokens, where = _grid(12, 9, 4, seed=316, noise=0.4, dtype=torch.float32)
    _expect_held_out(student, features, tokens, where, "token", "ridge_probe",
                     "held_out_accuracy(<108 float32 pairs>, read=\"token\", probe=ridge_probe)",
                     owned_elsewhere=("split", "factor"))


@pytest.mark.exercise("held_out_accuracy", points=2)
@grading(max_examples=8)
@given(vocab=st.integers(2, 10), positions=st.integers(2, 10), d=st.integers(1, 6),
       read=st.sampled_from(["token", "position"]), probe=st.sampled_from(sorted(PROBES)),
       dtype=dtypes("float32", "float64"), id_dtype=st.sampled_from(sorted(INDEX_DTYPES)),
       layout=layouts("contiguous", "transposed", "strided"), seed=seeds())
def test_held_out_accuracy_over_its_inputs(student, vocab, positions, d, read, probe, dtype, id_dtype, layout, seed):
    """Any numbers of tokens and positions (2 included), width, factor read, probe, dtype, id dtype and layout."""
    features, tokens, where = _grid(vocab, positions, d, seed=seed, noise=0.5, dtype=FLOAT_DTYPES[dtype])
    # The named tests own the split, the factor read and the bias row; this one owns the rest.
    _expect_held_out(student, features, tokens.to(INDEX_DTYPES[id_dtype]), where.to(INDEX_DTYPES[id_dtype]), read,
                     probe, f"held_out_accuracy(<{vocab} x {positions} pairs, d={d}, {dtype}>, read={read!r}, "
                     f"probe={probe})", owned_elsewhere=("split", "factor", "bias"), layout=layout)


# -- is_fair_protocol ---------------------------------------------------------------------------
def _protocol(features, labels):
    """The public signature of every protocol is_fair_protocol is handed: (N, d), (N,) -> accuracy."""


def _expect_verdict(student, function, fair, why, **kwargs):
    # The protocol is a black box: it runs here, in the grader, on what the learner's code sends.
    # The public case is in grader/fixtures, the hidden ones in grader/hidden.
    protocol = student.black_box(function, _protocol, **kwargs)
    got = student.is_fair_protocol(protocol)
    expect_true(isinstance(got, bool), f"is_fair_protocol should return a bool, not {type(got).__name__}")
    expect_true(got == fair, f"a protocol that {why} was judged {'fair' if got else 'leaky'}; it is "
                f"{'fair' if fair else 'leaky'}")


@pytest.mark.exercise("is_fair_protocol", points=1, public=True)
def test_fair_protocol_random_half(student):
    """LDA fitted on a random half of the rows and scored on the other half is fair."""
    _expect_verdict(student, fixtures.fair_split, True, "fits LDA on a random half and scores the other half")


@pytest.mark.exercise("is_fair_protocol", points=1)
def test_fair_protocol_variants(student):
    """Fair protocols you have not seen: a 70/30 split with the ridge probe, and 4-fold cross-validation of the
    nearest centroid."""
    _expect_verdict(student, hidden.fair_ridge_split, True, "fits the ridge probe on a random 70% and scores the other 30%")
    _expect_verdict(student, hidden.fair_cross_validation, True, "averages 4-fold cross-validation of the nearest centroid")


@pytest.mark.exercise("is_fair_protocol", points=1)
@grading(max_examples=2)
@given(train_share=st.sampled_from([0.3, 0.4, 0.5, 0.6]), seed=st.integers(1, 50))
def test_fair_protocol_any_random_split(student, train_share, seed):
    """LDA fitted on a random share of the rows (30% to 60%, any seed of the split) and scored on the rest is fair."""
    _expect_verdict(student, hidden.fair_split, True,
                    f"fits LDA on a random {train_share:.0%} of the rows (split seed {seed}) and scores the rest",
                    train_share=train_share, seed=seed)


@pytest.mark.exercise("is_fair_protocol", points=1)
def test_leaky_protocol_test_rows_in_the_fit(student):
    """Protocols whose fit sees the rows they score (fitted on all rows; scored on the training half) leak."""
    _expect_verdict(student, hidden.fit_on_all_rows, False, "fits LDA on every row and then scores half of them")
    _expect_verdict(student, hidden.scored_on_training_rows, False, "scores LDA on the rows it was fitted on")


@pytest.mark.exercise("is_fair_protocol", points=1)
def test_leaky_protocol_best_of_splits(student):
    """A protocol that reports the best of 10 random splits leaks (each split alone is fair: only the mean of many
    calls shows it)."""
    _expect_verdict(student, hidden.best_of_splits, False, "reports the best test accuracy of 10 random splits")


@pytest.mark.exercise("is_fair_protocol", points=1)
def test_leaky_protocol_unshuffled_split(student):
    """A protocol that trains on the first half of the rows as given and tests on the second leaks when the rows
    come sorted by label (it is fair only for rows in random order)."""
    _expect_verdict(student, hidden.unshuffled_split, False, "trains on the first half of the rows as given, without a shuffle")


# A verdict that does not depend on the protocol (a constant) is every mistake at once: the tests above
# charge each leak, or each fair protocol, once, so a constant would keep more than half the points.
# This test charges it.
@pytest.mark.exercise("is_fair_protocol", points=3)
def test_verdict_depends_on_the_protocol(student):
    """The verdict depends on the protocol: a fair split and a protocol that scores rows it was fitted on do not
    both get the same verdict (two such pairs)."""
    pairs = [(hidden.fair_split, hidden.fit_on_all_rows), (hidden.fair_ridge_split, hidden.scored_on_training_rows)]
    for fair, leaky in pairs:
        verdicts = [student.is_fair_protocol(student.black_box(p, _protocol)) for p in (fair, leaky)]
        if verdicts[0] != verdicts[1]:
            return
    fail("is_fair_protocol gave a fair split and a protocol that scores the rows it was fitted on the same verdict: "
         "the verdict must come from what the protocol returns (call it on data with a known answer)")


# -- first_coordinates_carry --------------------------------------------------------------------
CARRY_SCALES = {"position": (0.5, 1.0, 3.0, 5.0, 6.0), "token": (10.0, 128 ** 0.5, 16.0, 64.0)}
"""Scales at which the grader's measurements differ by 0.15 or more (the crossover lies between 8 and 9)."""


def _sinusoids(num_positions, d_model):
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None]
    angles = pos * 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)


def _first8_accuracies(scale, seeds_=(400, 401)):
    """(token, position) held-out LDA accuracy from the first 8 coordinates, on the grader's own token tables."""
    d_model, vocab, positions = 128, 64, 64
    tokens = torch.arange(vocab).repeat_interleave(positions)
    where = torch.arange(positions).repeat(vocab)
    pe = _sinusoids(positions, d_model)[:, :8]
    found = [0.0, 0.0]
    for seed in seeds_:
        e = scale * _randn(vocab, d_model, seed=seed)[:, :8] / d_model ** 0.5
        x = e[tokens] + pe[where]                                              # (4096, 8)
        for i, read in enumerate(("token", "position")):
            found[i] += _held_out(x, tokens, where, read, fixtures.lda_probe) / len(seeds_)
    return found


def _expect_carry(student, scale):
    got = student.first_coordinates_carry(scale)
    expect_true(got in ("token", "position"), f"first_coordinates_carry({scale:g}) should be \"token\" or \"position\", not {got!r}")
    token, position = _first8_accuracies(scale)
    right = "token" if token > position else "position"
    expect_true(got == right, f"at scale {scale:g} the grader measured, from the first 8 coordinates, the token read "
                f"with accuracy {token:.2f} and the position with {position:.2f}: {got!r} is not the better read")


@pytest.mark.exercise("first_coordinates_carry", points=1, public=True)
def test_first_coordinates_carry_names_a_factor(student):
    """first_coordinates_carry(2.0) is "token" or "position"."""
    got = student.first_coordinates_carry(2.0)
    expect_true(got in ("token", "position"), f"first_coordinates_carry(2) should be \"token\" or \"position\", not {got!r}")


# One mistake costs once: which factor wins at each scale is one property (where the crossover lies), so
# one test judges every scale and names the first it gets wrong.
@pytest.mark.exercise("first_coordinates_carry", points=4)
@grading(max_examples=len(CARRY_SCALES["position"]) + len(CARRY_SCALES["token"]))
@given(scale=st.sampled_from((*CARRY_SCALES["position"], *CARRY_SCALES["token"])))
def test_first_coordinates_carry_matches_the_measurement(student, scale):
    """Scales from 0.5 to 64 (sqrt(128) included): each answer matches the grader's measurement."""
    _expect_carry(student, scale)


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


# One mistake costs once: the small test owns the formula (which pairing, which weight, queries against
# keys) and the inputs left unchanged; the batched narrow-head test owns the scale (sqrt(d_head)), the
# transposition x W^T (with d_head != d no other product fits) and batched, broadcast vectors; the float32
# test the dtype; the property test the dtypes and memory layouts; the error test what raises. Each test
# accepts the results of the mistakes another test owns.
def _owned_terms_mistake(got, e, p, w_q, w_k, owned_elsewhere, *, atol, rtol):
    """True if got is what a mistake owned by another test returns (not the right answer)."""
    wrong = []
    if "formula" in owned_elsewhere:
        wrong += [_terms(e, p, w_q, w_k, swap_mixed=True), _terms(e, p, w_q, w_k, keys_with_wq=True),
                  _terms(e, p, w_q, w_k, transposed_logits=True)]
    if "transposition" in owned_elsewhere and w_q.shape[0] == w_q.shape[1]:
        wrong.append(_terms(e, p, w_q, w_k, untransposed=True))
    if "scale" in owned_elsewhere:
        wrong += [_terms(e, p, w_q, w_k, scale="none"), _terms(e, p, w_q, w_k, scale="model")]
    got = torch.as_tensor(got).double()
    right = _terms(e, p, w_q, w_k)
    return any(got.shape == w.shape and torch.allclose(got, w, atol=atol, rtol=rtol)
               and not torch.allclose(got, right, atol=atol, rtol=rtol) for w in wrong)


def _batched_case():
    """The batched narrow-head test's inputs: e (3, 6, 8), one position table (6, 8), W (2, 8)."""
    return _randn(3, 6, 8, seed=210), _randn(6, 8, seed=211), _randn(2, 8, seed=212), _randn(2, 8, seed=213)


def _expect_batched_case(student):
    e, p, w_q, w_k = _batched_case()
    student.may_modify_arguments = True  # the small test judges the inputs
    got = student.attention_logit_terms(e, p, w_q, w_k)
    expect_shape(got, (4, 3, 6, 6), what="attention_logit_terms")
    if _owned_terms_mistake(got, e, p, w_q, w_k, ("formula",), atol=TERMS_TOL, rtol=TERMS_TOL):
        return  # the formula is the small test's to judge
    expect_close(got, _terms(e, p, w_q, w_k), atol=TERMS_TOL, rtol=TERMS_TOL, what="attention_logit_terms",
                 mistakes=_terms_mistakes(e, p, w_q, w_k))


def _fails_the_batched_case(student):
    """True if the learner's function fails the batched narrow-head test (raises there, or gets it wrong)."""
    try:
        _expect_batched_case(student)
    except (AssertionError, StudentRaised):
        return True
    return False


@pytest.mark.exercise("attention_logit_terms", points=2, public=True)
def test_attention_logit_terms_small(student):
    """e (5, 4), p (5, 4), W_q and W_k (4, 4): the four terms, stacked token-token, token-pos, pos-token, pos-pos.

    The inputs are left unchanged."""
    e, p = _randn(5, 4, seed=200), _randn(5, 4, seed=201)
    w_q, w_k = _randn(4, 4, seed=202), _randn(4, 4, seed=203)
    got = student.attention_logit_terms(e, p, w_q, w_k)
    expect_shape(got, (4, 5, 5), what="attention_logit_terms")
    if _owned_terms_mistake(got, e, p, w_q, w_k, ("scale", "transposition"), atol=TERMS_TOL, rtol=TERMS_TOL):
        return  # the scale and the transposition are the batched test's to judge
    expect_close(got, _terms(e, p, w_q, w_k), atol=TERMS_TOL, rtol=TERMS_TOL, what="attention_logit_terms",
                 mistakes=_terms_mistakes(e, p, w_q, w_k))


@pytest.mark.exercise("attention_logit_terms", points=3)
def test_attention_logit_terms_batched_with_a_narrow_head(student):
    """e (3, 6, 8) with one position table (6, 8), and a head of width 2 (W of shape (2, 8)): the projections
    x W^T and the scale 1/sqrt(d_head)."""
    _expect_batched_case(student)


@pytest.mark.exercise("attention_logit_terms", points=1)
def test_attention_logit_terms_keeps_float32(student):
    """float32 inputs give a float32 result, close to what the same function gives for the inputs in float64."""
    e, p = _randn(4, 3, seed=230, dtype=torch.float32), _randn(4, 3, seed=231, dtype=torch.float32)
    w_q, w_k = _randn(3, 3, seed=232, dtype=torch.float32), _randn(3, 3, seed=233, dtype=torch.float32)
    student.may_modify_arguments = True  # the small test judges the inputs
    got = student.attention_logit_terms(e, p, w_q, w_k)
    expect_dtype(got, torch.float32, what="attention_logit_terms(float32 inputs)")
    # The values are the other tests' to judge: float32 only has to agree with the function's own float64.
    wide = student.attention_logit_terms(e.double(), p.double(), w_q.double(), w_k.double())
    # float32 products of O(1) numbers over 3 terms: error ~1e-6.
    expect_close(got, wide, atol=1e-5, rtol=1e-5, what="attention_logit_terms(float32 inputs) against "
                 "attention_logit_terms(the same inputs in float64)")


@pytest.mark.exercise("attention_logit_terms", points=3)
@grading()
@given(batch=st.sampled_from([(), (2,), (2, 3)]), pos_batched=st.booleans(), t=st.integers(1, 6),
       d=st.integers(1, 6), d_head=st.integers(1, 5), dtype=dtypes(), e_layout=layouts(), p_layout=layouts(),
       w_q_layout=layouts(), w_k_layout=layouts(), seed=seeds())
@example(batch=(2,), pos_batched=False, t=3, d=4, d_head=4, dtype="float32", e_layout="heads",
         p_layout="strided", w_q_layout="contiguous", w_k_layout="transposed", seed=7)  # rows not contiguous
def test_attention_logit_terms_property(student, batch, pos_batched, t, d, d_head, dtype, e_layout, p_layout,
                                        w_q_layout, w_k_layout, seed):
    """The four terms match float64 for any batch shape, T, d, d_head, float dtype and layout of all four inputs."""
    kind = FLOAT_DTYPES[dtype]
    e = tensor(seed, *batch, t, d, dtype=kind)
    p = tensor(seed + 1, *(batch if pos_batched else ()), t, d, dtype=kind)
    w_q, w_k = tensor(seed + 2, d_head, d, dtype=kind), tensor(seed + 3, d_head, d, dtype=kind)
    what = f"attention_logit_terms(e {tuple(e.shape)}, p {tuple(p.shape)}, W {(d_head, d)}, {dtype})"
    student.may_modify_arguments = True  # the small test judges the inputs
    try:
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
        if _owned_terms_mistake(got, e, p, w_q, w_k, ("formula", "scale", "transposition"), atol=atol, rtol=0):
            return  # owned by the small and the batched tests; this test owns the rest of the input space
        expect_close(got, want, atol=atol, rtol=0, what=what, mistakes=_terms_mistakes(e, p, w_q, w_k))
    except (AssertionError, StudentRaised):
        # Batched vectors and heads with d_head != d are the batched narrow-head test's cases: a function that
        # fails that test is not charged again for them here.
        if (batch or d_head != d) and _fails_the_batched_case(student):
            return
        raise


@pytest.mark.exercise("attention_logit_terms", points=1)
def test_attention_logit_terms_rejects_bad_shapes(student):
    """ValueError for: W_q and W_k of different shapes, W that is not a matrix, token or position vectors whose
    width is not W's, T tokens with another number of positions. T = d = d_head = 1 raises nothing."""
    e, p = _randn(4, 3, seed=240), _randn(4, 3, seed=241)
    for args, what in (((e, p, _randn(2, 3, seed=242), _randn(3, 3, seed=243)), "W_q (2, 3) and W_k (3, 3)"),
                       ((e, p, _randn(2, 5, seed=244), _randn(2, 5, seed=245)), "vectors of width 3 and W of width 5"),
                       ((e, _randn(5, 3, seed=246), _randn(2, 3, seed=247), _randn(2, 3, seed=248)),
                        "T = 4 tokens and 5 positions"),
                       ((e, _randn(4, 5, seed=255), _randn(2, 3, seed=256), _randn(2, 3, seed=257)),
                        "token width 3, position width 5 and W of width 3"),
                       ((e, p, _randn(3, seed=260), _randn(3, seed=261)), "W_q and W_k of shape (3,)")):
        expect_raises(ValueError, student.attention_logit_terms, *args, what=f"attention_logit_terms with {what}")
    student.attention_logit_terms(*(_randn(1, 1, seed=s) for s in (250, 251, 252, 253)))  # raises nothing
