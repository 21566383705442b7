"""Hidden tests and public checks for notebook 03, addition versus concatenation.

References are computed here in float64 with independent code (indexing, torch.cat, einsum for
the logit terms, the trusted probes of grader.fixtures.addition_vs_concatenation and the hidden
protocols of grader.judge.hidden.addition_vs_concatenation),
never with the learner's functions.
"""
import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from grader.fixtures import addition_vs_concatenation as fixtures
from grader.judge.hidden import addition_vs_concatenation as hidden
from grader.judge.proxy import (asked_once, expect_close, expect_dtype, expect_equal, expect_raises, expect_shape,
                                expect_true, fail, run_store, within)
from grader.judge.properties import FLOAT_DTYPES, dtypes, grading, laid_out, layouts, seeds, tensor
from grader.sandbox.codec import one_torch_thread
from grader.sandbox.parent import StudentRaised

EXERCISE_ORDER = ("overlap_ratio", "embed", "held_out_accuracy", "share_width", "is_fair_protocol",
                  "first_coordinates_carry", "attention_logit_terms", "pattern_term")
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
    """mode "concat": (2, 5) ids give (2, 5, 9) = [token_table[ids]; pos_table[:5]], tokens first."""
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
# The grader plants the answer: features built so that, for every row, whether the factor read can
# be read from it by a probe that never saw the row's value of the other factor is known by
# construction (its code is present or absent, well above the noise). Readable rows are read right,
# the others at chance, so the held-out accuracy is (readable share) + (other share) / C, up to the
# scatter of chance hits. Any protocol that predicts every row with a probe fitted without that
# row's value of the other factor (leave one value out, k folds of randomly grouped values, ...)
# lands within HELD_OUT_TOLERANCE of it; a protocol that lets the probe see the value, or that
# scores only some values, does not.
HELD_OUT_TOLERANCE = 0.1
"""Absolute tolerance on the accuracy: chance hits on the unreadable rows scatter by about 0.03."""

PROBES = {"lda_probe": fixtures.lda_probe, "nearest_centroid_probe": hidden.nearest_centroid_probe}
"""The trusted probes the tests hand to held_out_accuracy. Not the ridge probe: least squares onto one-hot
targets masks classes (notebook section 3), so its accuracy on the planted codes depends on how many
values it was fitted on, a property of the probe rather than of the protocol."""


def _planted(vocab, positions, d, seed, *, read, readable, repeats=1, pairs=None, dtype=torch.float64):
    """Rows (features, token ids, position ids) and the planted accuracy.

    The factor ``read`` has a code of its own in the first C coordinates (3 times its one-hot vector),
    present only on the rows where ``readable(token, position)`` holds; the other factor has its
    one-hot vector and a random code of d coordinates after it;
    noise of std 0.05 everywhere. ``pairs`` (token, position) replaces the full grid, each pair
    repeated ``repeats`` times."""
    if pairs is None:
        pairs = [(v, t) for v in range(vocab) for t in range(positions)]
    pairs = [pair for pair in pairs for _ in range(repeats)]
    order = torch.randperm(len(pairs), generator=torch.Generator().manual_seed(seed + 3)).tolist()
    tokens = torch.tensor([pairs[i][0] for i in order])
    where = torch.tensor([pairs[i][1] for i in order])
    labels, other = (tokens, where) if read == "token" else (where, tokens)
    classes = vocab if read == "token" else positions
    code = 3.0 * torch.eye(classes, dtype=torch.float64)                  # the factor read, when present
    n_other = int(other.max()) + 1                                        # the other factor, always:
    other_code = torch.cat([torch.eye(n_other, dtype=torch.float64),     # its one-hot vector (a linear probe
                            _randn(n_other, d, seed=seed + 1)], 1)       # can remember each value) and d more
    mask = torch.tensor([bool(readable(int(v), int(t))) for v, t in zip(tokens, where)])
    features = torch.cat([code[labels] * mask[:, None], other_code[other]], 1) \
        + 0.05 * _randn(len(labels), classes + n_other + d, seed=seed + 2)
    share = mask.double().mean().item()
    return features.to(dtype), tokens, where, share + (1 - share) / classes


def _probe_signature(features, labels):
    """A probe as held_out_accuracy receives it: (features (n, d), labels (n,)) -> weights (d + 1, C)."""


def _probe(student, name: str):
    """The probe ``name`` as the learner's code receives it: a public fixture, or a black box
    (the nearest-centroid probe runs in the grader)."""
    if name == "nearest_centroid_probe":
        return student.black_box(hidden.nearest_centroid_probe, _probe_signature)
    return student.fixture(f"addition_vs_concatenation.{name}")


def _expect_held_out(student, planted, read, probe, what, *, layout="contiguous"):
    features, tokens, where, want = planted
    got = student.held_out_accuracy(laid_out(features, layout), tokens, where, read, _probe(student, probe))
    expect_true(isinstance(got, float), f"{what} should be a Python float, not {type(got).__name__}")
    if not within(got, want, atol=HELD_OUT_TOLERANCE, what=what):
        side = "above" if got > want else "below"
        fail(f"{what}: got {got:.3f}, {side} the share of rows that a probe which never saw a row's "
             f"{'position' if read == 'token' else 'token'} reads on these planted features, by more than "
             f"{HELD_OUT_TOLERANCE}")


@pytest.mark.exercise("held_out_accuracy", points=2, public=True)
def test_held_out_accuracy_reads_a_clean_code(student):
    """Features with the position code on every row (12 tokens x 8 positions, LDA): read."""
    _expect_held_out(student, _planted(12, 8, 4, 331, read="position", readable=lambda v, t: True),
                     "position", "lda_probe", "held_out_accuracy(<a clean position code>, read=\"position\")")


@pytest.mark.exercise("held_out_accuracy", points=3)
def test_held_out_accuracy_when_each_token_has_few_positions(student):
    """Features that carry the token only, each token seen at 2 of 16 positions: its position cannot be read
    for a token the probe never saw, whatever the probe learned about the tokens it saw."""
    gen = torch.Generator().manual_seed(332)
    pairs = [(v, int(t)) for v in range(48) for t in torch.randperm(16, generator=gen)[:2]]
    planted = _planted(48, 16, 6, 332, read="position", readable=lambda v, t: False, repeats=4, pairs=pairs)
    _expect_held_out(student, planted, "position", "lda_probe",
                     "held_out_accuracy(<48 tokens at 2 positions each, features that carry no position>)")


def _sparse_pairs(vocab, positions, read, dense, seed, *, seen=2, repeats=6):
    """(token, position) pairs: every value of the other factor in ``dense`` meets every value of the factor
    read; each other value meets only ``seen`` of them, each ``repeats`` times. A probe that saw such a value
    can remember which labels came with it; one that never saw it cannot."""
    gen = torch.Generator().manual_seed(seed)
    readers, others = (vocab, positions) if read == "token" else (positions, vocab)
    pairs = []
    for o in range(others):
        labels = range(readers) if o in dense else torch.randperm(readers, generator=gen)[:seen].tolist() * repeats
        pairs += [(c, o) if read == "token" else (o, c) for c in labels]
    return pairs


@pytest.mark.exercise("held_out_accuracy", points=4)
def test_held_out_accuracy_when_half_the_tokens_carry_position(student):
    """The position code is on the odd tokens only (40 tokens x 10 positions); each even token comes at 2
    positions: held out, the odd tokens are read and the even ones are not."""
    odd = set(range(1, 40, 2))
    planted = _planted(40, 10, 5, 333, read="position", readable=lambda v, t: v in odd,
                       pairs=_sparse_pairs(40, 10, "position", odd, 333))
    _expect_held_out(student, planted, "position", "nearest_centroid_probe",
                     "held_out_accuracy(<the position coded on the odd tokens only>, read=\"position\")")


@pytest.mark.exercise("held_out_accuracy", points=4)
def test_held_out_accuracy_of_the_token_at_some_positions(student):
    """The token code is at the odd positions only (12 tokens x 40 positions, float32, LDA); each even position
    holds 2 of the tokens."""
    odd = set(range(1, 40, 2))
    planted = _planted(12, 40, 5, 334, read="token", readable=lambda v, t: t in odd, dtype=torch.float32,
                       pairs=_sparse_pairs(12, 40, "token", odd, 334))
    _expect_held_out(student, planted, "token", "lda_probe",
                     "held_out_accuracy(<the token coded at the odd positions only, float32>, read=\"token\")")


@pytest.mark.exercise("held_out_accuracy", points=2)
@grading(max_examples=6)
@given(vocab=st.integers(20, 36), positions=st.integers(20, 36), d=st.integers(2, 6),
       read=st.sampled_from(["token", "position"]), probe=st.sampled_from(sorted(PROBES)),
       share=st.sampled_from([0.0, 0.5, 1.0]), id_dtype=st.sampled_from(sorted(INDEX_DTYPES)),
       layout=layouts("contiguous", "transposed", "strided"), seed=seeds())
def test_held_out_accuracy_over_planted_codes(student, vocab, positions, d, read, probe, share, id_dtype, layout,
                                              seed):
    """Other sizes, shares of readable values (drawn at random, the others seen with few labels), probes, id
    dtypes and layouts."""
    gen = torch.Generator().manual_seed(seed + 7)
    other = positions if read == "token" else vocab
    chosen = set(torch.randperm(other, generator=gen)[: round(share * other)].tolist())
    readable = (lambda v, t: t in chosen) if read == "token" else (lambda v, t: v in chosen)
    features, tokens, where, want = _planted(vocab, positions, d, seed, read=read, readable=readable,
                                             pairs=_sparse_pairs(vocab, positions, read, chosen, seed))
    planted = (features, tokens.to(INDEX_DTYPES[id_dtype]), where.to(INDEX_DTYPES[id_dtype]), want)
    _expect_held_out(student, planted, read, probe, f"held_out_accuracy(<{vocab} x {positions} values, "
                     f"{share:.0%} of the {'positions' if read == 'token' else 'tokens'} readable>, read={read!r}, "
                     f"probe={probe})", layout=layout)


@pytest.mark.exercise("held_out_accuracy", points=1)
def test_held_out_accuracy_rejects_bad_arguments(student):
    """read neither "token" nor "position", or one value only of the other factor: ValueError."""
    features, tokens, where, _ = _planted(4, 4, 2, 335, read="token", readable=lambda v, t: True)
    fixture = student.fixture("addition_vs_concatenation.lda_probe")
    expect_raises(ValueError, student.held_out_accuracy, features, tokens, where, "both", fixture,
                  what="held_out_accuracy(..., read=\"both\")")
    expect_raises(ValueError, student.held_out_accuracy, features, tokens, torch.zeros_like(where), "token",
                  fixture, what="held_out_accuracy(<every row at position 0>, read=\"token\")")


def _held_out(features, tokens, where, read, probe, *, split="other", bias=True):
    """A protocol in float64 (train on the even values of the other factor, test on the odd), for first_coordinates_carry."""
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



# -- share_width (challenge) ----------------------------------------------------------------------
# The grader scores the learner's layout with its own token tables and noise, as the docstring
# defines the score: x = [e_v; 0] + pos_table[t] for every pair, one common factor bringing the mean
# |x|^2 to 2 d_model (section 3's equal power), noise of std noise_std, lda_probe fitted on two noisy
# copies of every pair and scored on two fresh ones, for the token and for the position; the score is
# the smaller accuracy, averaged over three token tables. The notebook prints none of these settings.
#
# What the notebook's own layouts score, mean over LAYOUT_SETTINGS (3 draws each; the catalogue
# holds them): the even split of section 3 (d/2 standard normal coordinates each) 0.706; plain
# addition at scale 1 0.605; sinusoids added to unit-variance tokens (section 4's scale) 0.240. A
# search of one knob by simulation: the split with unit-scale random positions 0.815, the position
# scale at the even split 0.824 (a search of both, with the grader's own probe, about 0.83). They
# reach the middle threshold at most; the top one needs a position code of one's own, as the
# catalogue's correct variants show (points spread on a sphere 0.882; corners of a cube by bisection
# 0.870; the solution's cube with parity checks 0.876). One draw's score scatters by about 0.01.
LAYOUT_SETTINGS = ((16, 256, 8, 0.8), (12, 128, 16, 0.7), (16, 64, 32, 1.0), (24, 512, 16, 1.0), (12, 32, 64, 0.6))
"""(d_model, vocab_size, num_positions, noise_std) of the held-out scoring."""
LAYOUT_THRESHOLDS = {"middle": 0.78, "top": 0.85}
"""Mean score over LAYOUT_SETTINGS for each threshold (the public check, 0.9 at one easy setting, is the
low one)."""
_LAYOUT_SCORES: dict = {}
"""Scores already measured, by the layout's content (the thresholds' tests measure the same layouts)."""
_LEARNER_LAYOUTS = pytest.StashKey[dict]()
"""What the learner's share_width returned at each held-out setting, kept in the run's store
(grader.judge.proxy.run_store): the middle and top thresholds' tests read the same five layouts, so the second
test takes them from here instead of running the learner's search again. Only answers are kept: a
setting whose call raised is called again by the next test, as without the store."""


def _layout(student, d_model, vocab_size, num_positions, noise_std, *, store=None):
    """The learner's layout, checked for its form: (d_tok int, pos_table float64 (T, d_model)).

    ``store``: a dict of the learner's raw answers by setting (:data:`_LEARNER_LAYOUTS`), read and
    filled; the form is checked on every read."""
    what = f"share_width({d_model}, {vocab_size}, {num_positions}, {noise_std})"
    got = asked_once(store, (d_model, vocab_size, num_positions, noise_std),
                     lambda: student.share_width(d_model, vocab_size, num_positions, noise_std))
    expect_true(isinstance(got, (tuple, list)) and len(got) == 2,
                f"{what} should return a pair (d_tok, pos_table), not {type(got).__name__}")
    d_tok, pos_table = got
    expect_true(isinstance(d_tok, int) and not isinstance(d_tok, bool) and 0 <= d_tok <= d_model,
                f"{what}: d_tok should be a Python int from 0 to {d_model}, got {d_tok!r}")
    expect_true(isinstance(pos_table, torch.Tensor) and pos_table.is_floating_point(),
                f"{what}: pos_table should be a float tensor, not {type(pos_table).__name__}")
    expect_shape(pos_table, (num_positions, d_model), what=f"{what}: pos_table")
    pos_table = pos_table.double()
    expect_true(bool(torch.isfinite(pos_table).all()), f"{what}: pos_table has non-finite values")
    expect_true(d_tok > 0 or bool(pos_table.abs().sum() > 0), f"{what}: the layout carries no signal at all")
    return d_tok, pos_table


def _layout_score(d_tok, pos_table, d_model, vocab_size, num_positions, noise_std, draws=(0, 1, 2)) -> float:
    """The smaller of the token and position accuracies of lda_probe, mean over token tables (float64)."""
    key = (d_tok, pos_table.numpy().tobytes(), d_model, vocab_size, num_positions, noise_std, draws)
    if key not in _LAYOUT_SCORES:
        if len(_LAYOUT_SCORES) > 256:  # a class graded in one process: keep the cache small
            _LAYOUT_SCORES.clear()
        with one_torch_thread(torch):  # small solves: no thread pool
            _LAYOUT_SCORES[key] = _measure_layout(d_tok, pos_table, d_model, vocab_size, num_positions,
                                                  noise_std, draws)
    return _LAYOUT_SCORES[key]


def _measure_layout(d_tok, pos_table, d_model, vocab_size, num_positions, noise_std, draws) -> float:
    """_layout_score's measurement: 2 noisy copies of every pair to fit, 2 fresh ones to score, per draw."""
    copies = 2
    tokens = torch.arange(vocab_size).repeat_interleave(num_positions).repeat(copies)
    positions = torch.arange(num_positions).repeat(vocab_size).repeat(copies)
    score = 0.0
    for draw in draws:
        gen = torch.Generator().manual_seed(7300 + draw)
        e = torch.zeros(vocab_size, d_model, dtype=torch.float64)
        e[:, :d_tok] = torch.randn(vocab_size, d_tok, generator=gen, dtype=torch.float64)
        x = (e[:, None, :] + pos_table[None]).reshape(vocab_size * num_positions, d_model)   # (V T, d)
        x = (x * math.sqrt(2 * d_model / (x ** 2).sum(1).mean())).repeat(copies, 1)          # equal power
        train = x + noise_std * torch.randn(x.shape, generator=gen, dtype=torch.float64)
        test = x + noise_std * torch.randn(x.shape, generator=gen, dtype=torch.float64)
        read = [_accuracy_by_blocks(test, labels, fixtures.lda_probe(train, labels))
                for labels in (tokens, positions)]
        score += min(read) / len(draws)
    return score


def _accuracy_by_blocks(x, labels, weights, rows=1024) -> float:
    """fixtures._accuracy, the scores (rows, C) made and read a block of rows at a time: each row's
    scores are the same floats (the product runs over the same d), and the blocks stay in the cache
    (a (16384, 512) float64 table at once is 64 MiB; this is 2.5 times faster)."""
    x, labels = x.double(), labels.long()
    if weights.shape[1] == 0 or len(labels) == 0:
        return 0.0
    correct = 0
    for start in range(0, len(x), rows):
        scores = x[start:start + rows] @ weights[:-1] + weights[-1]                     # (rows, C)
        correct += int((scores.argmax(dim=1) == labels[start:start + rows]).sum())
    return correct / len(x)


def _expect_layout_threshold(student, request, level):
    store = run_store(request, _LEARNER_LAYOUTS)
    scores = [_layout_score(*_layout(student, *setting, store=store), *setting) for setting in LAYOUT_SETTINGS]
    mean = sum(scores) / len(scores)
    thresholds = ", ".join(f"{name} {value}" for name, value in LAYOUT_THRESHOLDS.items())
    expect_true(mean >= LAYOUT_THRESHOLDS[level],
                f"on {len(LAYOUT_SETTINGS)} held-out settings your layout's smaller accuracy is {mean:.3f} on "
                f"average (per setting: {', '.join(f'{s:.2f}' for s in scores)}); thresholds: {thresholds}")


@pytest.mark.exercise("share_width", points=1, public=True)
def test_share_width_reads_both_at_low_noise(student):
    """d_model 16, 64 tokens, 32 positions, noise 0.5: token and position both read at 0.9 or more."""
    setting = (16, 64, 32, 0.5)
    score = _layout_score(*_layout(student, *setting), *setting, draws=(9,))
    expect_true(score >= 0.9, f"share_width{setting}: the smaller of the token and position accuracies is "
                f"{score:.3f}; the threshold is 0.9")


@pytest.mark.exercise("share_width", points=1)
@grading(max_examples=3)
@given(d_model=st.integers(8, 32), vocab_size=st.integers(16, 512), num_positions=st.integers(2, 64),
       noise_std=st.floats(0.2, 1.5))
def test_share_width_over_its_inputs(student, d_model, vocab_size, num_positions, noise_std):
    """Any width, vocabulary, length and noise in the docstring's ranges: a layout of the promised form."""
    _layout(student, d_model, vocab_size, num_positions, round(noise_std, 3))


@pytest.mark.exercise("share_width", points=2)
def test_share_width_middle_threshold(student, request):
    """Held-out settings: the smaller accuracy is 0.78 or more on average."""
    _expect_layout_threshold(student, request, "middle")


@pytest.mark.exercise("share_width", points=4)
def test_share_width_top_threshold(student, request):
    """Held-out settings: the smaller accuracy is 0.85 or more on average."""
    _expect_layout_threshold(student, request, "top")


# -- is_fair_protocol ---------------------------------------------------------------------------
def _protocol(features, labels):
    """The public signature of every protocol is_fair_protocol is handed: (N, d), (N,) -> accuracy."""


_LEARNER_VERDICTS = pytest.StashKey[dict]()
"""The learner's verdict on each protocol handed over without hidden arguments, kept in the run's
store (grader.judge.proxy.run_store): test_verdict_depends_on_the_protocol compares verdicts on
protocols that earlier hidden tests of the exercise have already shown, about 60 calls of the
protocol each. A protocol whose call raised is not kept (the next test asks again)."""


def _verdicts(request) -> dict:
    return run_store(request, _LEARNER_VERDICTS)


def _verdict(student, function, verdicts=None):
    """The learner's is_fair_protocol on ``function`` as a black box, read from or kept in ``verdicts``."""
    return asked_once(verdicts, function, lambda: student.is_fair_protocol(student.black_box(function, _protocol)))


def _expect_verdict(student, function, fair, why, *, verdicts=None, **kwargs):
    # The protocol is a black box: it runs here, in the grader, on what the learner's code sends.
    # The public case is in grader/fixtures, the hidden ones in grader/judge/hidden.
    if kwargs:
        got = student.is_fair_protocol(student.black_box(function, _protocol, **kwargs))
    else:
        got = _verdict(student, function, verdicts)
    expect_true(isinstance(got, bool), f"is_fair_protocol should return a bool, not {type(got).__name__}")
    expect_true(got == fair, f"a protocol that {why} was judged {'fair' if got else 'leaky'}; it is "
                f"{'fair' if fair else 'leaky'}")


@pytest.mark.exercise("is_fair_protocol", points=1, public=True)
def test_fair_protocol_random_half(student):
    """LDA fitted on a random half of the rows and scored on the other half is fair."""
    _expect_verdict(student, fixtures.fair_split, True, "fits LDA on a random half and scores the other half")


@pytest.mark.exercise("is_fair_protocol", points=1)
def test_fair_protocol_variants(student, request):
    """Fair protocols you have not seen: a 70/30 split with the ridge probe, and 4-fold cross-validation of the
    nearest centroid."""
    _expect_verdict(student, hidden.fair_ridge_split, True, "fits the ridge probe on a random 70% and scores the other 30%",
                    verdicts=_verdicts(request))
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
def test_leaky_protocol_test_rows_in_the_fit(student, request):
    """Protocols whose fit sees the rows they score (fitted on all rows; scored on the training half) leak."""
    _expect_verdict(student, hidden.fit_on_all_rows, False, "fits LDA on every row and then scores half of them",
                    verdicts=_verdicts(request))
    _expect_verdict(student, hidden.scored_on_training_rows, False, "scores LDA on the rows it was fitted on",
                    verdicts=_verdicts(request))


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


# Selecting features with every row's labels is a leak whose size depends on the shape of the data:
# about 0.03 above chance for the docstring's example (N = 200, d = 20, C = 4), within what one setting
# of 30 calls can tell from a fair protocol's scatter, and about 0.1 for few rows, many features and
# two classes (N = 100, d = 64, C = 2). A detector that tries only the example misses it; one that
# varies N, d and C finds it. The same selection made on the training half is fair, and the pair
# keeps a constant verdict from passing.
@pytest.mark.exercise("is_fair_protocol", points=7)
def test_leaky_protocol_feature_selection_on_all_rows(student):
    """Features chosen with every row's labels, then a fair split, leak (more with few rows and many features); chosen on the training half, they do not."""
    _expect_verdict(student, hidden.selected_on_all_rows, False,
                    "keeps the 2 features that best separate the classes over all rows, then splits")
    _expect_verdict(student, hidden.selected_on_training_rows, True,
                    "keeps the 2 features that best separate the classes over the training half only, then splits")


# A verdict that does not depend on the protocol (a constant) is every mistake at once: the tests above
# charge each leak, or each fair protocol, once, so a constant would keep more than half the points.
# This test charges it.
@pytest.mark.exercise("is_fair_protocol", points=1)
def test_verdict_depends_on_the_protocol(student, request):
    """The verdict depends on the protocol: a fair split and a protocol that scores rows it was fitted on do not
    both get the same verdict (two such pairs)."""
    # The pair whose verdicts the hidden tests above have kept comes first (a public check runs
    # alone, as the starter runs it, so it keeps nothing).
    pairs = [(hidden.fair_ridge_split, hidden.scored_on_training_rows), (hidden.fair_split, hidden.fit_on_all_rows)]
    for fair, leaky in pairs:
        verdicts = [_verdict(student, p, _verdicts(request)) for p in (fair, leaky)]
        if verdicts[0] != verdicts[1]:
            return
    fail("is_fair_protocol gave a fair split and a protocol that scores the rows it was fitted on the same verdict: "
         "the verdict must come from what the protocol returns (call it on data with a known answer)")


# -- first_coordinates_carry --------------------------------------------------------------------
CARRY_CASES = ((32, 0.3), (32, 0.5), (32, 0.9), (32, 1.2), (64, 0.5), (64, 1.0), (128, 0.5), (128, 0.8),
               (256, 0.3), (256, 0.5), (256, 0.7), (256, 0.9), (512, 0.3), (512, 0.5), (512, 0.6), (512, 1.0))
"""(d_model, scale / sqrt(d_model)) pairs at which the grader's two accuracies differ by 0.15 or more.
The crossover is not one ratio: near 0.7 for d_model <= 128, lower at 256 and 512, where the first
8 coordinates hold sinusoids of nearly one frequency and the position is harder to read."""


def _sinusoids(num_positions, d_model):
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None]
    angles = pos * 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)


def _first8_accuracies(scale, d_model, seeds_=(400, 401)):
    """(token, position) held-out LDA accuracy from the first 8 coordinates, on the grader's own token tables."""
    vocab, positions = 64, 64
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


def _expect_carry(student, scale, d_model):
    got = student.first_coordinates_carry(scale, d_model)
    expect_true(got in ("token", "position"),
                f"first_coordinates_carry({scale:g}, {d_model}) should be \"token\" or \"position\", not {got!r}")
    token, position = _first8_accuracies(scale, d_model)
    right = "token" if token > position else "position"
    expect_true(got == right, f"at d_model = {d_model} and scale {scale:g} the grader measured, from the first 8 "
                f"coordinates, the token read with accuracy {token:.2f} and the position with {position:.2f}: "
                f"{got!r} is not the better read")


@pytest.mark.exercise("first_coordinates_carry", points=1, public=True)
def test_first_coordinates_carry_names_a_factor(student):
    """first_coordinates_carry(2.0, 128) is "token" or "position"."""
    got = student.first_coordinates_carry(2.0, 128)
    expect_true(got in ("token", "position"),
                f"first_coordinates_carry(2, 128) should be \"token\" or \"position\", not {got!r}")


# One mistake costs once: which factor wins at each (d_model, scale) is one property (where the
# crossover lies), so one test judges every case and names the first it gets wrong.
@pytest.mark.exercise("first_coordinates_carry", points=6)
@grading(max_examples=len(CARRY_CASES))
@given(case=st.sampled_from(CARRY_CASES))
def test_first_coordinates_carry_matches_the_measurement(student, case):
    """Widths from 32 to 512 and scales on both sides of the crossover: each answer matches the grader's measurement."""
    d_model, ratio = case
    _expect_carry(student, ratio * d_model ** 0.5, d_model)


# -- attention_logit_terms ----------------------------------------------------------------------
def _terms(e, p, w_q, w_k, *, scale="head", swap_mixed=False, keys_with_wq=False, transposed_weights=False,
           transposed_logits=False):
    """Reference decomposition with einsum, with switches that reproduce catalogued mistakes."""
    e, p, w_q, w_k = e.double(), p.double(), w_q.double(), w_k.double()
    e, p = torch.broadcast_tensors(e, p)
    wk = w_q if keys_with_wq else w_k
    proj = (lambda x, w: torch.einsum("...td,hd->...th", x, w)) if transposed_weights else \
        (lambda x, w: torch.einsum("...td,dh->...th", x, w))                 # q = x W_q, W_q (d, d_head)
    denominator = {"head": w_q.shape[1] ** 0.5, "none": 1.0, "model": w_q.shape[0] ** 0.5}[scale]
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
        mistakes["x @ W^T instead of x @ W (W is (d, d_head), not torch.nn.Linear's (out, in))"] = _terms(
            e, p, w_q, w_k, transposed_weights=True)
    return mistakes


# Four small matrix products in float64: exact to ~1e-14; 1e-10 leaves room for any summation order.
TERMS_TOL = 1e-10


# One mistake costs once: the small test owns the formula (which pairing, which weight, queries against
# keys) and the inputs left unchanged; the batched narrow-head test owns the scale (sqrt(d_head)), the
# transposition x W (with d_head != d no other product fits) and batched, broadcast vectors; the float32
# test the dtype; the property test the dtypes and memory layouts; the error test what raises. Each test
# accepts the results of the mistakes another test owns.
def _owned_terms_mistake(got, e, p, w_q, w_k, owned_elsewhere, *, atol, rtol):
    """True if got is what a mistake owned by another test returns (not the right answer)."""
    wrong = []
    if "formula" in owned_elsewhere:
        wrong += [_terms(e, p, w_q, w_k, swap_mixed=True), _terms(e, p, w_q, w_k, keys_with_wq=True),
                  _terms(e, p, w_q, w_k, transposed_logits=True)]
    if "transposition" in owned_elsewhere and w_q.shape[0] == w_q.shape[1]:
        wrong.append(_terms(e, p, w_q, w_k, transposed_weights=True))
    if "scale" in owned_elsewhere:
        wrong += [_terms(e, p, w_q, w_k, scale="none"), _terms(e, p, w_q, w_k, scale="model")]
    got = torch.as_tensor(got).double()
    right = _terms(e, p, w_q, w_k)
    return any(got.shape == w.shape and torch.allclose(got, w, atol=atol, rtol=rtol)
               and not torch.allclose(got, right, atol=atol, rtol=rtol) for w in wrong)


def _batched_case():
    """The batched narrow-head test's inputs: e (3, 6, 8), one position table (6, 8), W (8, 2)."""
    return _randn(3, 6, 8, seed=210), _randn(6, 8, seed=211), _randn(8, 2, seed=212), _randn(8, 2, seed=213)


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
    """e, p (5, 4), W_q, W_k (4, 4): the four terms (token-token, token-pos, pos-token, pos-pos).

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
    """e (3, 6, 8) with one position table (6, 8), and a head of width 2 (W of shape (8, 2)): the projections
    x W and the scale 1/sqrt(d_head)."""
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
    w_q, w_k = tensor(seed + 2, d, d_head, dtype=kind), tensor(seed + 3, d, d_head, dtype=kind)
    what = f"attention_logit_terms(e {tuple(e.shape)}, p {tuple(p.shape)}, W {(d, d_head)}, {dtype})"
    student.may_modify_arguments = True  # the small test judges the inputs
    try:
        got = student.attention_logit_terms(laid_out(e, e_layout), laid_out(p, p_layout), laid_out(w_q, w_q_layout),
                                            laid_out(w_k, w_k_layout))
        want = _terms(e, p, w_q, w_k)               # from the same rounded inputs, in float64
        expect_dtype(got, kind, what=what)
        expect_shape(got, (4, *batch, t, t), what=what)
        # Forward error of a chain of products in any order: at most ~(2d + d_head + 4) roundings of the
        # dtype times |e||W_q||W_k|^T|e|^T / sqrt(d_head) (the same terms from absolute values); a float64
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
    for args, what in (((e, p, _randn(3, 2, seed=242), _randn(3, 3, seed=243)), "W_q (3, 2) and W_k (3, 3)"),
                       ((e, p, _randn(5, 2, seed=244), _randn(5, 2, seed=245)), "vectors of width 3 and W of width 5"),
                       ((e, _randn(5, 3, seed=246), _randn(3, 2, seed=247), _randn(3, 2, seed=248)),
                        "T = 4 tokens and 5 positions"),
                       ((e, _randn(4, 5, seed=255), _randn(3, 2, seed=256), _randn(3, 2, seed=257)),
                        "token width 3, position width 5 and W of width 3"),
                       ((e, p, _randn(3, seed=260), _randn(3, seed=261)), "W_q and W_k of shape (3,)")):
        expect_raises(ValueError, student.attention_logit_terms, *args, what=f"attention_logit_terms with {what}")
    student.attention_logit_terms(*(_randn(1, 1, seed=s) for s in (250, 251, 252, 253)))  # raises nothing


# -- overlap_ratio ------------------------------------------------------------------------------
# The grader plants the overlap: position tables independent of the token table (ratio about 1),
# confined to the orthogonal complement of the tokens' span (ratio 0), or made of the token rows
# themselves plus a little noise (ratio well above 1). The reference is exact: the mean |cos| of the
# given tables over E|cos| of two independent uniform directions in d dimensions,
# Gamma(d/2) / (sqrt(pi) Gamma((d + 1)/2)). A Monte-Carlo baseline of a few hundred thousand random
# pairs lands within 1%; sqrt(2 / (pi d)) (the large-d approximation of section 1) is 6% low at
# d = 4 and 11% at d = 2, outside the 3% tolerance.
OVERLAP_RTOL = 0.03


def _expected_abs_cos(d):
    return math.exp(math.lgamma(d / 2) - math.lgamma((d + 1) / 2)) / math.sqrt(math.pi)


def _overlap_tables(kind, vocab, positions, d, seed):
    tokens = _randn(vocab, d, seed=seed)
    if kind == "independent":
        return tokens, _randn(positions, d, seed=seed + 1)
    if kind == "orthogonal":  # tokens in the first k coordinates, positions in the others
        k = d // 2
        return torch.cat([tokens[:, :k], torch.zeros(vocab, d - k, dtype=tokens.dtype)], 1), \
            torch.cat([torch.zeros(positions, k, dtype=tokens.dtype), _randn(positions, d - k, seed=seed + 1)], 1)
    picks = torch.randint(0, vocab, (positions,), generator=torch.Generator().manual_seed(seed + 2))
    return tokens, tokens[picks] + 0.3 * _randn(positions, d, seed=seed + 1)  # "shared": token rows, plus noise


def _overlap_reference(tokens, positions):
    a = tokens / tokens.norm(dim=1, keepdim=True)
    b = positions / positions.norm(dim=1, keepdim=True)
    return (a @ b.T).abs().mean().item() / _expected_abs_cos(tokens.shape[1])


def _expect_overlap(student, kind, vocab, positions, d, seed, *, dtype=torch.float64, layout="contiguous"):
    tokens, pos = _overlap_tables(kind, vocab, positions, d, seed)
    got = student.overlap_ratio(laid_out(tokens.to(dtype), layout), laid_out(pos.to(dtype), layout))
    expect_true(isinstance(got, float), f"overlap_ratio should return a Python float, not {type(got).__name__}")
    want = _overlap_reference(tokens.to(dtype).double(), pos.to(dtype).double())
    what = f"overlap_ratio(<{kind} tables, {vocab} tokens and {positions} positions of width {d}>)"
    approx = (_overlap_reference(tokens, pos) * _expected_abs_cos(d) / math.sqrt(2 / (math.pi * d)))
    mistakes = {"the baseline taken as sqrt(2 / (pi d)), the large-d approximation": approx,
                "the mean |cos| alone, not divided by the random baseline": want * _expected_abs_cos(d)}
    expect_close(got, want, rtol=OVERLAP_RTOL, atol=1e-3 if kind == "orthogonal" else 0.0, what=what,
                 mistakes=mistakes)


@pytest.mark.exercise("overlap_ratio", points=2, public=True)
def test_overlap_ratio_of_independent_tables(student):
    """Independent Gaussian tables (40 tokens, 30 positions, width 4)."""
    _expect_overlap(student, "independent", 40, 30, 4, 341)


@pytest.mark.exercise("overlap_ratio", points=3)
def test_overlap_ratio_in_few_dimensions(student):
    """Tables of width 2, 3 and 5, where random directions overlap most: independent ones, and positions made of
    token rows at width 3."""
    for kind, d, seed in (("independent", 2, 342), ("shared", 3, 343), ("independent", 5, 344)):
        _expect_overlap(student, kind, 50, 40, d, seed)


@pytest.mark.exercise("overlap_ratio", points=3)
def test_overlap_ratio_of_tables_in_separate_coordinates(student):
    """Positions in coordinates the tokens never use (width 8): no overlap at all."""
    _expect_overlap(student, "orthogonal", 20, 16, 8, 345)


@pytest.mark.exercise("overlap_ratio", points=2)
def test_overlap_ratio_of_positions_made_of_token_rows(student):
    """Position rows that are token rows plus a little noise (width 2): more overlap than chance."""
    _expect_overlap(student, "shared", 30, 20, 2, 348)


@pytest.mark.exercise("overlap_ratio", points=2)
@grading(max_examples=5)
@given(kind=st.sampled_from(["independent", "shared"]), vocab=st.integers(5, 40), positions=st.integers(5, 40),
       d=st.integers(2, 24), dtype=dtypes("float32", "float64"), layout=layouts("contiguous", "transposed", "strided"),
       seed=seeds())
def test_overlap_ratio_over_planted_tables(student, kind, vocab, positions, d, dtype, layout, seed):
    """Independent tables and positions built from the token rows, any sizes, dtypes and layouts."""
    _expect_overlap(student, kind, vocab, positions, d, seed, dtype=FLOAT_DTYPES[dtype], layout=layout)


@pytest.mark.exercise("overlap_ratio", points=1)
def test_overlap_ratio_rejects_tables_of_different_widths(student):
    """Tables of widths 8 and 6: ValueError."""
    expect_raises(ValueError, student.overlap_ratio, _randn(5, 8, seed=346), _randn(4, 6, seed=347),
                  what="overlap_ratio(<width 8>, <width 6>)")


# -- pattern_term -------------------------------------------------------------------------------
# The grader plants the four terms: one carries the attention pattern, one is large but constant
# along each query's row (the softmax ignores it), and two have a larger spread over the keys than
# the pattern but nearly cancel each other. The answer is the planted term: used alone it gives most
# queries the key the full logits give them, and none of the others comes close.
def _planted_terms(pattern, batch, t, seed):
    gen = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=gen, dtype=torch.float64)  # noqa: E731
    decoy = 5.0 * rand(batch, t, t)
    parts = [3.0 * rand(batch, t, t),                        # the pattern
             20.0 + 8.0 * rand(batch, t, 1).expand(batch, t, t),  # big, constant along each row
             decoy, -0.95 * decoy + 0.05 * rand(batch, t, t)]     # a wide pair that cancels
    others = [1, 2, 3]
    order = torch.randperm(3, generator=gen).tolist()
    slots = [None] * 4
    slots[pattern] = parts[0]
    free = [k for k in range(4) if k != pattern]
    for k, part in zip(free, [parts[others[i]] for i in order]):
        slots[k] = part
    return torch.stack(slots)  # (4, batch, t, t)


# A pattern that spreads over several keys: each query attends to a window of half its keys, which
# one term lifts by 6; a small term (std 0.3) decides which key of the window gets the largest weight,
# and where that small term alone would put the attention (nearly uniform over every key) is nowhere
# near where the sum puts it. The term that decides where the attention goes is the window: a term
# chosen by how often its largest entry is the sum's largest entry picks the small one.
def _spread_terms(pattern, batch, t, seed):
    gen = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=gen, dtype=torch.float64)  # noqa: E731
    width = t // 2
    start = torch.randint(0, t - width + 1, (batch, t, 1), generator=gen)   # (batch, T, 1) per query
    keys = torch.arange(t)
    parts = [6.0 * ((keys >= start) & (keys < start + width)).double(),    # the pattern: a window
             0.3 * rand(batch, t, t),                                       # decides the largest key only
             20.0 + 8.0 * rand(batch, t, 1).expand(batch, t, t),            # big, constant along each row
             0.05 * rand(batch, t, t)]                                      # faint
    order = torch.randperm(3, generator=gen).tolist()
    slots = [None] * 4
    slots[pattern] = parts[0]
    for k, i in zip([k for k in range(4) if k != pattern], order):
        slots[k] = parts[1 + i]
    return torch.stack(slots)  # (4, batch, t, t)


def _expect_pattern(student, pattern, batch, t, seed, *, layout="contiguous", dtype=torch.float64,
                    planted=_planted_terms):
    terms = planted(pattern, batch, t, seed)
    got = student.pattern_term(laid_out(terms.to(dtype), layout))
    expect_true(isinstance(got, int) and not isinstance(got, bool),
                f"pattern_term should return a Python int, not {got!r}")
    size = terms.abs().mean(dim=(1, 2, 3))
    spread = terms.std(dim=-1).mean(dim=(1, 2))
    hint = ""
    if got == int(size.argmax()):
        hint = " (it is the term largest in size; the softmax ignores what is constant along a row)"
    elif got == int(spread.argmax()):
        hint = " (it is the term with the largest spread over the keys; look at what the sum does)"
    elif got == int(max(range(4), key=lambda k: (terms[k].argmax(-1) == terms.sum(0).argmax(-1)).double().mean())):
        hint = (" (its largest entry is most often the sum's largest: but where does the attention go over"
                " all the keys?)")
    expect_true(got == pattern, f"pattern_term(<planted terms, {batch} sequences of {t} tokens>) = {got}: the planted "
                f"pattern is term {pattern}{hint}")


@pytest.mark.exercise("pattern_term", points=2, public=True)
def test_pattern_term_of_planted_terms(student):
    """Planted terms where the pattern is the position -> position term (index 3)."""
    _expect_pattern(student, 3, 8, 12, 351)


@pytest.mark.exercise("pattern_term", points=1)
@grading(max_examples=6)
@given(pattern=st.sampled_from([0, 1, 2]), batch=st.integers(1, 6), t=st.integers(6, 16),
       dtype=dtypes("float32", "float64"), layout=layouts("contiguous", "transposed", "strided"), seed=seeds())
def test_pattern_term_elsewhere(student, pattern, batch, t, dtype, layout, seed):
    """The pattern planted in another term, any numbers of sequences and tokens, dtypes and layouts."""
    _expect_pattern(student, pattern, batch, t, seed, layout=layout, dtype=FLOAT_DTYPES[dtype])


@pytest.mark.exercise("pattern_term", points=4)
@grading(max_examples=4)
@given(pattern=st.sampled_from([0, 1, 2, 3]), batch=st.integers(2, 6), t=st.integers(10, 16), seed=seeds())
def test_pattern_term_when_the_pattern_spreads_over_keys(student, pattern, batch, t, seed):
    """The pattern a window of keys per query, a small term deciding only which key of it is largest."""
    _expect_pattern(student, pattern, batch, t, seed, planted=_spread_terms)


@pytest.mark.exercise("pattern_term", points=1)
def test_pattern_term_with_one_sequence_and_no_batch_axis(student):
    """Terms (4, T, T) of one sequence, the pattern in term 1."""
    _expect_pattern(student, 1, 1, 10, 352)
    terms = _planted_terms(2, 1, 10, 353)[:, 0]
    got = student.pattern_term(terms)
    expect_true(got == 2, f"pattern_term(<(4, 10, 10) terms, the pattern in term 2>) = {got!r}, not 2")
