"""Plausible wrong answers for notebook 03; each must lose points under the hidden tests."""
from tests.catalogue import WrongAnswer

COSTS_ONCE = True
"""Every entry fails one hidden test (or the tests its ``costs`` names): one mistake costs once."""

_EMBED_HEAD = '''
def embed(token_ids, token_table, pos_table, mode):
    if mode not in ("add", "concat"):
        raise ValueError("unknown mode")
    if token_ids.dim() < 1 or token_ids.dtype.is_floating_point or token_ids.dtype == torch.bool:
        raise ValueError("ids must be an integer tensor (..., T)")
    t = token_ids.shape[-1]
    if mode == "add" and token_table.shape[1] != pos_table.shape[1]:
        raise ValueError("widths differ")
    if t > pos_table.shape[0]:
        raise ValueError("too long")
    if token_ids.min() < 0 or token_ids.max() >= token_table.shape[0]:
        raise ValueError("id out of range")
    e = token_table[token_ids]
'''

_TERMS_HEAD = '''
def attention_logit_terms(token_vectors, pos_vectors, w_q, w_k):
    if w_q.dim() != 2 or w_q.shape != w_k.shape or token_vectors.shape[-1] != w_q.shape[0] \\
            or pos_vectors.shape[-1] != w_q.shape[0] or token_vectors.shape[-2] != pos_vectors.shape[-2]:
        raise ValueError("bad shapes")
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
'''

WRONG_ANSWERS = [
    # -- embed -----------------------------------------------------------------------------------
    WrongAnswer("embed", "position part first", _EMBED_HEAD + '''
    p = pos_table[:t]
    if mode == "add":
        return e + p
    return torch.cat([p.expand(*e.shape[:-1], p.shape[-1]), e], dim=-1)
''', feedback="position part first"),
    WrongAnswer("embed", "positions starting at 1", _EMBED_HEAD + '''
    p = pos_table[1:t + 1]
    if mode == "add":
        return e + p
    return torch.cat([e, p.expand(*e.shape[:-1], p.shape[-1])], dim=-1)
'''),
    WrongAnswer("embed", "position rows indexed by token id", _EMBED_HEAD + '''
    p = pos_table[token_ids]
    if mode == "add":
        return e + p
    return torch.cat([e, p], dim=-1)
'''),
    WrongAnswer("embed", "negative ids wrap around", '''
def embed(token_ids, token_table, pos_table, mode):
    if mode not in ("add", "concat"):
        raise ValueError("unknown mode")
    if token_ids.dtype.is_floating_point:
        raise ValueError("ids must be integers")
    t = token_ids.shape[-1]
    if mode == "add" and token_table.shape[1] != pos_table.shape[1]:
        raise ValueError("widths differ")
    if t > pos_table.shape[0]:
        raise ValueError("too long")
    if token_ids.max() >= token_table.shape[0]:
        raise ValueError("id out of range")
    e, p = token_table[token_ids], pos_table[:t]
    if mode == "add":
        return e + p
    return torch.cat([e, p.expand(*e.shape[:-1], p.shape[-1])], dim=-1)
'''),
    WrongAnswer("embed", "no width check for add", '''
def embed(token_ids, token_table, pos_table, mode):
    if mode not in ("add", "concat"):
        raise ValueError("unknown mode")
    t = token_ids.shape[-1]
    if t > pos_table.shape[0]:
        raise ValueError("too long")
    if token_ids.min() < 0 or token_ids.max() >= token_table.shape[0]:
        raise ValueError("id out of range")
    e, p = token_table[token_ids], pos_table[:t]
    if mode == "add":
        return e + p
    return torch.cat([e, p.expand(*e.shape[:-1], p.shape[-1])], dim=-1)
'''),
    WrongAnswer("embed", "only works for (B, T) ids", _EMBED_HEAD + '''
    b, t = token_ids.shape
    p = pos_table[:t].unsqueeze(0).repeat(b, 1, 1)
    if mode == "add":
        return e + p
    return torch.cat([e, p], dim=-1)
'''),
    WrongAnswer("embed", "unknown mode falls back to concat", '''
def embed(token_ids, token_table, pos_table, mode):
    t = token_ids.shape[-1]
    if mode == "add" and token_table.shape[1] != pos_table.shape[1]:
        raise ValueError("widths differ")
    if t > pos_table.shape[0]:
        raise ValueError("too long")
    if token_ids.min() < 0 or token_ids.max() >= token_table.shape[0]:
        raise ValueError("id out of range")
    e, p = token_table[token_ids], pos_table[:t]
    if mode == "add":
        return e + p
    return torch.cat([e, p.expand(*e.shape[:-1], p.shape[-1])], dim=-1)
'''),
    # -- attention_logit_terms -------------------------------------------------------------------
    WrongAnswer("attention_logit_terms", "no scaling", _TERMS_HEAD + '''
    qe, qp, ke, kp = e @ w_q, p @ w_q, e @ w_k, p @ w_k
    return torch.stack([a @ b.transpose(-2, -1) for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
''', feedback="no 1/sqrt(d_head) scaling"),
    WrongAnswer("attention_logit_terms", "mixed terms swapped", _TERMS_HEAD + '''
    qe, qp, ke, kp = e @ w_q, p @ w_q, e @ w_k, p @ w_k
    s = w_q.shape[1] ** 0.5
    return torch.stack([a @ b.transpose(-2, -1) / s for a, b in ((qe, ke), (qp, ke), (qe, kp), (qp, kp))])
''', feedback="swapped"),
    WrongAnswer("attention_logit_terms", "keys projected with W_q", _TERMS_HEAD + '''
    qe, qp = e @ w_q, p @ w_q
    s = w_q.shape[1] ** 0.5
    return torch.stack([a @ b.transpose(-2, -1) / s for a, b in ((qe, qe), (qe, qp), (qp, qe), (qp, qp))])
''', feedback="W_q instead of W_k"),
    WrongAnswer("attention_logit_terms", "scaled by sqrt(d) of the input", _TERMS_HEAD + '''
    qe, qp, ke, kp = e @ w_q, p @ w_q, e @ w_k, p @ w_k
    s = w_q.shape[0] ** 0.5  # d, the input width
    return torch.stack([a @ b.transpose(-2, -1) / s for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
''', feedback="instead of sqrt(d_head)"),
    WrongAnswer("attention_logit_terms", "queries and keys swapped", _TERMS_HEAD + '''
    qe, qp, ke, kp = e @ w_q, p @ w_q, e @ w_k, p @ w_k
    s = w_q.shape[1] ** 0.5
    return torch.stack([b @ a.transpose(-2, -1) / s for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
''', feedback="queries and keys swapped"),
    WrongAnswer("attention_logit_terms", "weights transposed (x @ W^T, square only)", _TERMS_HEAD + '''
    qe, qp, ke, kp = e @ w_q.T, p @ w_q.T, e @ w_k.T, p @ w_k.T
    s = w_q.shape[1] ** 0.5
    return torch.stack([a @ b.transpose(-2, -1) / s for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
'''),
    WrongAnswer("attention_logit_terms", "only works for 2-D vectors", _TERMS_HEAD + '''
    qe, qp, ke, kp = e @ w_q, p @ w_q, e @ w_k, p @ w_k
    s = w_q.shape[1] ** 0.5
    return torch.stack([a @ b.T / s for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
'''),
]

# -- mistakes that only the property tests and the error tests with their valid edges see ---------
_EMBED_CHECKS = '''
    if mode not in ("add", "concat"):
        raise ValueError("unknown mode")
    if token_ids.dim() < 1 or token_ids.dtype.is_floating_point or token_ids.dtype == torch.bool:
        raise ValueError("ids must be an integer tensor (..., T)")
    t = token_ids.shape[-1]
    if mode == "add" and token_table.shape[1] != pos_table.shape[1]:
        raise ValueError("widths differ")
    if t > pos_table.shape[0]:
        raise ValueError("too long")
    if token_ids.min() < 0 or token_ids.max() >= token_table.shape[0]:
        raise ValueError("id out of range")
'''

_EMBED_BODY = '''
    e, p = token_table[token_ids], pos_table[:t]
    if mode == "add":
        return e + p
    return torch.cat([e, p.expand(*e.shape[:-1], p.shape[-1])], dim=-1)
'''

_EMBED_SIGNATURE = '''
def embed(token_ids, token_table, pos_table, mode):'''

_TERMS_CHECKS = '''
def attention_logit_terms(token_vectors, pos_vectors, w_q, w_k):
    if w_q.dim() != 2 or w_q.shape != w_k.shape or token_vectors.shape[-1] != w_q.shape[0] \\
            or pos_vectors.shape[-1] != w_q.shape[0] or token_vectors.shape[-2] != pos_vectors.shape[-2]:
        raise ValueError("bad shapes")
'''

_TERMS_BODY = '''
    qe, qp, ke, kp = e @ w_q, p @ w_q, e @ w_k, p @ w_k
    s = w_q.shape[1] ** 0.5
    return torch.stack([a @ b.transpose(-2, -1) / s for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
'''

WRONG_ANSWERS += [
    # -- embed -----------------------------------------------------------------------------------
    WrongAnswer("embed", "ids flattened with .view (non-contiguous ids fail)", _EMBED_SIGNATURE + _EMBED_CHECKS + '''
    flat = token_table[token_ids.view(-1)]
    e, p = flat.view(*token_ids.shape, token_table.shape[1]), pos_table[:t]
    if mode == "add":
        return e + p
    return torch.cat([e, p.expand(*e.shape[:-1], p.shape[-1])], dim=-1)
'''),
    WrongAnswer("embed", "int32 ids rejected", _EMBED_SIGNATURE + '''
    if token_ids.dtype != torch.int64:
        raise ValueError("token ids must be int64")
''' + _EMBED_CHECKS + _EMBED_BODY),
    WrongAnswer("embed", "bool ids accepted (only floating ids rejected)", _EMBED_SIGNATURE + '''
    if mode not in ("add", "concat"):
        raise ValueError("unknown mode")
    if token_ids.dim() < 1 or token_ids.dtype.is_floating_point:
        raise ValueError("ids must be integers")
    t = token_ids.shape[-1]
    if mode == "add" and token_table.shape[1] != pos_table.shape[1]:
        raise ValueError("widths differ")
    if t > pos_table.shape[0]:
        raise ValueError("too long")
    if token_ids.long().min() < 0 or token_ids.long().max() >= token_table.shape[0]:
        raise ValueError("id out of range")
''' + _EMBED_BODY),
    WrongAnswer("embed", "0-d ids not rejected (IndexError)", _EMBED_SIGNATURE + '''
    if mode not in ("add", "concat"):
        raise ValueError("unknown mode")
    if token_ids.dtype.is_floating_point or token_ids.dtype == torch.bool:
        raise ValueError("ids must be integers")
    t = token_ids.shape[-1]
    if mode == "add" and token_table.shape[1] != pos_table.shape[1]:
        raise ValueError("widths differ")
    if t > pos_table.shape[0]:
        raise ValueError("too long")
    if token_ids.min() < 0 or token_ids.max() >= token_table.shape[0]:
        raise ValueError("id out of range")
''' + _EMBED_BODY),
    WrongAnswer("embed", "half-precision tables upcast to float32 (float32 returned)",
                _EMBED_SIGNATURE + _EMBED_CHECKS + '''
    if token_table.dtype in (torch.float16, torch.bfloat16):   # "half is not precise enough"
        token_table, pos_table = token_table.float(), pos_table.float()
''' + _EMBED_BODY),
    WrongAnswer("embed", "mode compared case-insensitively", _EMBED_SIGNATURE + '''
    mode = mode.lower()
''' + _EMBED_CHECKS + _EMBED_BODY),
    # -- attention_logit_terms -------------------------------------------------------------------
    WrongAnswer("attention_logit_terms", "rows flattened with .view for torch.mm (non-contiguous inputs fail)",
                _TERMS_CHECKS + '''
    def project(x, w):                  # (..., T, d) -> (..., T, d_head) through one 2-D product
        return torch.mm(x.view(-1, x.shape[-1]), w).view(*x.shape[:-1], w.shape[1])
    qe, ke = project(token_vectors, w_q), project(token_vectors, w_k)
    qp, kp = project(pos_vectors, w_q), project(pos_vectors, w_k)
    qe, qp = torch.broadcast_tensors(qe, qp)
    ke, kp = torch.broadcast_tensors(ke, kp)
    s = w_q.shape[1] ** 0.5
    return torch.stack([a @ b.transpose(-2, -1) / s for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
'''),
    WrongAnswer("attention_logit_terms", "half inputs upcast to float32 (float32 returned)", _TERMS_CHECKS + '''
    if w_q.dtype in (torch.float16, torch.bfloat16):   # "half matmul is not supported on CPU"
        token_vectors, pos_vectors, w_q, w_k = (x.float() for x in (token_vectors, pos_vectors, w_q, w_k))
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
''' + _TERMS_BODY),
    WrongAnswer("attention_logit_terms", "W_q scaled in place", _TERMS_CHECKS + '''
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
    w_q /= w_q.shape[1] ** 0.5          # fold 1/sqrt(d_head) into the queries
    qe, qp, ke, kp = e @ w_q, p @ w_q, e @ w_k, p @ w_k
    return torch.stack([a @ b.transpose(-2, -1) for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
'''),
    WrongAnswer("attention_logit_terms", "position width not checked (matmul error)", '''
def attention_logit_terms(token_vectors, pos_vectors, w_q, w_k):
    if w_q.dim() != 2 or w_q.shape != w_k.shape or token_vectors.shape[-1] != w_q.shape[0] \\
            or token_vectors.shape[-2] != pos_vectors.shape[-2]:
        raise ValueError("bad shapes")
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
''' + _TERMS_BODY),
    WrongAnswer("attention_logit_terms", "1-D weights not rejected", '''
def attention_logit_terms(token_vectors, pos_vectors, w_q, w_k):
    if w_q.shape != w_k.shape or token_vectors.shape[-1] != w_q.shape[0] \\
            or pos_vectors.shape[-1] != w_q.shape[0] or token_vectors.shape[-2] != pos_vectors.shape[-2]:
        raise ValueError("bad shapes")
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
''' + _TERMS_BODY),
]

_FAIR_HEAD = '''
def is_fair_protocol(protocol):
    gen = torch.Generator().manual_seed(0)
'''

WRONG_ANSWERS += [
    # -- is_fair_protocol (diagnose) --------------------------------------------------------------
    # A detector that accepts everything misses each leak (each leak is its own test) and gives a fair
    # and a leaky protocol the same verdict (test_verdict_depends_on_the_protocol).
    WrongAnswer("is_fair_protocol", "accepts every protocol", '''
def is_fair_protocol(protocol):
    features = torch.randn(200, 20, dtype=torch.float64)
    labels = torch.arange(200) % 4
    return 0.0 <= protocol(features, labels) <= 1.0
''', costs=5),
    WrongAnswer("is_fair_protocol", "one call per protocol (a leak smaller than one call's scatter is missed)", _FAIR_HEAD + '''
    for sort in (False, True):
        features = torch.randn(200, 20, generator=gen, dtype=torch.float64)
        labels = torch.randperm(200, generator=gen) % 4
        if sort:
            labels = labels.sort().values
        if abs(protocol(features, labels) - 0.25) > 0.1:   # 3 standard deviations of one call
            return False
    return True
''', costs=2),
    WrongAnswer("is_fair_protocol", "rows only in random order (a split without a shuffle passes)", _FAIR_HEAD + '''
    scores = []
    for _ in range(30):
        features = torch.randn(200, 20, generator=gen, dtype=torch.float64)
        scores.append(protocol(features, torch.randperm(200, generator=gen) % 4))
    scores = torch.tensor(scores, dtype=torch.float64)
    return abs(scores.mean().item() - 0.25) <= 0.025 + 3 * scores.std().item() / 30 ** 0.5
''', costs=2),
    # The docstring's example transcribed as the whole test: one shape of data (N = 200, d = 20, C = 4),
    # shuffled and sorted, 30 calls each. It misses a leak that other shapes show.
    WrongAnswer("is_fair_protocol", "shallow: the docstring's example shape only (N = 200, d = 20, C = 4)", _FAIR_HEAD + '''
    for sort in (False, True):
        scores = []
        for _ in range(30):
            features = torch.randn(200, 20, generator=gen, dtype=torch.float64)
            labels = torch.randperm(200, generator=gen) % 4
            scores.append(protocol(features, labels.sort().values if sort else labels))
        scores = torch.tensor(scores, dtype=torch.float64)
        if abs(scores.mean().item() - 0.25) > 0.025 + 3 * scores.std().item() / 30 ** 0.5:
            return False
    return True
''', min_lost=0.5),
    WrongAnswer("is_fair_protocol", "only a score above chance counts as a leak", _FAIR_HEAD + '''
    for sort in (False, True):
        scores = []
        for _ in range(30):
            features = torch.randn(200, 20, generator=gen, dtype=torch.float64)
            labels = torch.randperm(200, generator=gen) % 4
            scores.append(protocol(features, labels.sort().values if sort else labels))
        scores = torch.tensor(scores, dtype=torch.float64)
        if scores.mean().item() - 0.25 > 0.025 + 3 * scores.std().item() / 30 ** 0.5:
            return False
    return True
''', costs=2),
]

CORRECT_VARIANTS = [
    ("embed", "one-hot matrix product in the tables' dtype, ids cast to int64", '''
def embed(token_ids, token_table, pos_table, mode):
    if mode not in ("add", "concat"):
        raise ValueError("unknown mode")
    if token_ids.dim() < 1 or token_ids.dtype.is_floating_point or token_ids.dtype.is_complex \\
            or token_ids.dtype == torch.bool:
        raise ValueError("ids must be an integer tensor (..., T)")
    ids = token_ids.long()
    t = ids.shape[-1]
    if mode == "add" and token_table.shape[1] != pos_table.shape[1]:
        raise ValueError("widths differ")
    if t > pos_table.shape[0]:
        raise ValueError("too long")
    if ids.numel() and (ids.min() < 0 or ids.max() >= token_table.shape[0]):
        raise ValueError("id out of range")
    e = torch.nn.functional.one_hot(ids, token_table.shape[0]).to(token_table.dtype) @ token_table
    p = pos_table[:t]
    if mode == "add":
        return e + p
    return torch.cat([e, torch.broadcast_to(p, (*e.shape[:-1], p.shape[-1]))], dim=-1)
'''),
    ("embed", "F.embedding in float64, then cast back", '''
def embed(token_ids, token_table, pos_table, mode):
    if mode not in ("add", "concat"):
        raise ValueError("unknown mode")
    if token_ids.dim() < 1 or not (token_ids.dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)):
        raise ValueError("ids must be an integer tensor (..., T)")
    t = token_ids.shape[-1]
    if mode == "add" and token_table.shape[1] != pos_table.shape[1]:
        raise ValueError("widths differ")
    if t > pos_table.shape[0]:
        raise ValueError("too long")
    ids = token_ids.reshape(-1).long()
    if ((ids < 0) | (ids >= token_table.shape[0])).any():
        raise ValueError("id out of range")
    e = torch.nn.functional.embedding(ids, token_table.double()).reshape(*token_ids.shape, -1)
    p = pos_table.double()[:t].expand(*e.shape[:-1], -1)
    out = e + p if mode == "add" else torch.cat([e, p], dim=-1)
    return out.to(token_table.dtype)
'''),
    ("attention_logit_terms", "einsum with W_q W_k^T folded first", '''
def attention_logit_terms(token_vectors, pos_vectors, w_q, w_k):
    if w_q.dim() != 2 or w_q.shape != w_k.shape:
        raise ValueError("bad weights")
    d, d_head = w_q.shape
    if token_vectors.dim() < 2 or pos_vectors.dim() < 2 or token_vectors.shape[-1] != d \\
            or pos_vectors.shape[-1] != d or token_vectors.shape[-2] != pos_vectors.shape[-2]:
        raise ValueError("bad vectors")
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
    m = torch.einsum("dh,eh->de", w_q, w_k) / math.sqrt(d_head)       # W_q W_k^T / sqrt(d_head)
    return torch.stack([torch.einsum("...id,de,...je->...ij", a, m, b)
                        for a, b in ((e, e), (e, p), (p, e), (p, p))])
'''),
    ("attention_logit_terms", "float64 computation cast back to the inputs' dtype", '''
def attention_logit_terms(token_vectors, pos_vectors, w_q, w_k):
    if w_q.dim() != 2 or w_q.shape != w_k.shape:
        raise ValueError("bad weights")
    d, d_head = w_q.shape
    if token_vectors.dim() < 2 or pos_vectors.dim() < 2 or token_vectors.shape[-1] != d \\
            or pos_vectors.shape[-1] != d or token_vectors.shape[-2] != pos_vectors.shape[-2]:
        raise ValueError("bad vectors")
    dtype = torch.promote_types(torch.promote_types(token_vectors.dtype, pos_vectors.dtype),
                                torch.promote_types(w_q.dtype, w_k.dtype))
    e, p = torch.broadcast_tensors(token_vectors.double(), pos_vectors.double())
    q = [x @ w_q.double() for x in (e, p)]
    k = [x @ w_k.double() for x in (e, p)]
    terms = [q[i] @ k[j].transpose(-2, -1) / math.sqrt(d_head) for i, j in ((0, 0), (0, 1), (1, 0), (1, 1))]
    return torch.stack(terms).to(dtype)
'''),
]

CORRECT_VARIANTS += [
    ("is_fair_protocol", "fixed band around chance for 5 classes, mean of 40 calls per order", '''
def is_fair_protocol(protocol):
    gen = torch.Generator().manual_seed(123)
    k = 40
    for classes, n, d, sort in ((5, 150, 30, False), (5, 150, 30, True), (2, 96, 60, False)):
        total = 0.0
        for _ in range(k):
            y = (torch.arange(n) % classes)[torch.randperm(n, generator=gen)]
            if sort:
                y = y.sort().values
            total += protocol(torch.randn(n, d, generator=gen, dtype=torch.float64), y)
        if abs(total / k - 1 / classes) > 0.04:
            return False
    return True
'''),
    ("is_fair_protocol", "three classes, a binomial standard error from the pooled test count", '''
def is_fair_protocol(protocol):
    gen = torch.Generator().manual_seed(7)
    calls = 25
    for classes, n, d, arrange in ((3, 240, 24, "random"), (3, 240, 24, "blocks"), (2, 120, 64, "random")):
        chance, scores = 1 / classes, []
        for _ in range(calls):
            labels = torch.randperm(n, generator=gen) % classes
            if arrange == "blocks":
                labels, _ = torch.sort(labels)
            scores.append(protocol(torch.randn(n, d, generator=gen, dtype=torch.float64), labels))
        mean = sum(scores) / calls
        error = (chance * (1 - chance) / (calls * n / 2)) ** 0.5  # about n/2 test rows per call
        if abs(mean - chance) > 0.01 + 3 * error:
            return False
    return True
'''),
]


# -- held_out_accuracy (measure) and first_coordinates_carry (interpret) ------------------------
_HELD_OUT_HEAD = '''
def held_out_accuracy(features, token_ids, position_ids, read, probe):
    if read not in ("token", "position"):
        raise ValueError("read must be 'token' or 'position'")
    labels, other = (token_ids.long(), position_ids.long()) if read == "token" else (position_ids.long(), token_ids.long())
    if len(other.unique()) < 2:
        raise ValueError("one value only")
'''

_HELD_OUT_SCORE = '''
    weights = probe(features[train], labels[train]).double()
    scores = features[test].double() @ weights[:-1] + weights[-1]
    return (scores.argmax(dim=1) == labels[test]).double().mean().item()
'''

WRONG_ANSWERS += [
    # Shallow answers: each loses at least half of the exercise's points (min_lost=0.5).
    WrongAnswer("held_out_accuracy", "shallow: a constant (chance for 16 classes)", _HELD_OUT_HEAD + '''
    return 1 / 16
''', costs=5, min_lost=0.5),
    WrongAnswer("held_out_accuracy", "shallow: the earlier recipe, train on the even values of the other factor and "
                "test on the odd ones", _HELD_OUT_HEAD + '''
    train, test = other % 2 == 0, other % 2 == 1
''' + _HELD_OUT_SCORE, costs=3, min_lost=0.5),
    WrongAnswer("held_out_accuracy", "shallow: the pairs split at random (the probe sees every value of the other factor)",
                _HELD_OUT_HEAD + '''
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
    train, test = order[: len(labels) // 2], order[len(labels) // 2:]
''' + _HELD_OUT_SCORE, costs=3, min_lost=0.5),
    WrongAnswer("held_out_accuracy", "shallow: trained and tested on every row", _HELD_OUT_HEAD + '''
    train = test = torch.ones(len(labels), dtype=torch.bool)
''' + _HELD_OUT_SCORE, costs=4, min_lost=0.5),
    WrongAnswer("held_out_accuracy", "the rows split by the factor read", _HELD_OUT_HEAD + '''
    train, test = labels % 2 == 0, labels % 2 == 1
''' + _HELD_OUT_SCORE, costs=5),
    WrongAnswer("held_out_accuracy", "no ValueError for a single value of the other factor", '''
def held_out_accuracy(features, token_ids, position_ids, read, probe):
    if read not in ("token", "position"):
        raise ValueError("read must be 'token' or 'position'")
    labels, other = (token_ids.long(), position_ids.long()) if read == "token" else (position_ids.long(), token_ids.long())
    hits = 0
    for value in other.unique():
        test = other == value
        if test.all():
            return 0.0
        weights = probe(features[~test], labels[~test]).double()
        hits += ((features[test].double() @ weights[:-1] + weights[-1]).argmax(1) == labels[test]).sum().item()
    return hits / len(labels)
'''),
    WrongAnswer("first_coordinates_carry", "shallow: always the position (the first dimensions are unusable for tokens)", '''
def first_coordinates_carry(scale, d_model):
    return "position"
''', min_lost=0.5),
    WrongAnswer("first_coordinates_carry", "shallow: always the token", '''
def first_coordinates_carry(scale, d_model):
    return "token"
''', min_lost=0.5),
    WrongAnswer("first_coordinates_carry", "shallow: the crossover of the earlier prose, scale = sqrt(d_model / 2), at every width", '''
def first_coordinates_carry(scale, d_model):
    return "token" if scale > math.sqrt(d_model / 2) else "position"
''', min_lost=0.5),
    WrongAnswer("first_coordinates_carry", "shallow: the crossover measured at d_model = 128 (scale 8.5) used at every width", '''
def first_coordinates_carry(scale, d_model):
    return "token" if scale > 8.5 else "position"
''', min_lost=0.5),
    WrongAnswer("first_coordinates_carry", "shallow: the factor of Vaswani et al. as the crossover (scale >= sqrt(d_model))", '''
def first_coordinates_carry(scale, d_model):
    return "token" if scale >= math.sqrt(d_model) else "position"
''', min_lost=0.5),
]

CORRECT_VARIANTS += [
    # Two protocols other than the solution's four groups of values: each lands within the tolerance.
    ("held_out_accuracy", "leave one value of the other factor out", '''
def held_out_accuracy(features, token_ids, position_ids, read, probe):
    if read not in ("token", "position"):
        raise ValueError("bad read")
    labels, other = (token_ids.long(), position_ids.long()) if read == "token" else (position_ids.long(), token_ids.long())
    values = other.unique()
    if len(values) < 2:
        raise ValueError("one value only")
    hits = 0
    for value in values:
        test = other == value
        weights = probe(features[~test], labels[~test]).double()
        hits += ((features[test].double() @ weights[:-1] + weights[-1]).argmax(1) == labels[test]).sum().item()
    return hits / len(labels)
'''),
    ("held_out_accuracy", "two random halves of the values, each predicted by the other", '''
def held_out_accuracy(features, token_ids, position_ids, read, probe):
    if read not in ("token", "position"):
        raise ValueError("bad read")
    labels, other = (token_ids.long(), position_ids.long()) if read == "token" else (position_ids.long(), token_ids.long())
    values = other.unique()
    if len(values) < 2:
        raise ValueError("one value only")
    shuffled = values[torch.randperm(len(values), generator=torch.Generator().manual_seed(3))]
    half = torch.isin(other, shuffled[: len(values) // 2])
    right = 0
    for test in (half, ~half):
        weights = probe(features[~test], labels[~test]).double()
        right += ((features[test].double() @ weights[:-1] + weights[-1]).argmax(1) == labels[test]).sum().item()
    return right / len(labels)
'''),
    ("first_coordinates_carry", "measured live with an LDA and a held-out split of its own", '''
def first_coordinates_carry(scale, d_model):
    vocab = positions = 64
    tokens = torch.arange(vocab).repeat_interleave(positions)
    where = torch.arange(positions).repeat(vocab)
    pos = torch.arange(positions, dtype=torch.float64)[:, None]
    angles = pos * 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.stack([torch.sin(angles), torch.cos(angles)], -1).flatten(1)[:, :8]
    acc = {"token": 0.0, "position": 0.0}
    for seed in (11, 12, 13):
        e = scale * torch.randn(vocab, d_model, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)[:, :8] / d_model ** 0.5
        x = e[tokens] + pe[where]
        for read in acc:
            labels, other = (tokens, where) if read == "token" else (where, tokens)
            train = other % 3 != 0
            xt, lt = x[train], labels[train]
            means = torch.stack([xt[lt == c].mean(0) for c in range(64)])
            r = xt - means[lt]
            s = 0.9 * r.T @ r / (len(xt) - 64) + 0.1 * (r ** 2).sum() / (len(xt) - 64) / 8 * torch.eye(8, dtype=torch.float64)
            w = torch.linalg.solve(s, means.T)
            scores = x[~train] @ w - (means.T * w).sum(0) / 2
            acc[read] += (scores.argmax(1) == labels[~train]).double().mean().item()
    return "token" if acc["token"] > acc["position"] else "position"
'''),
]

# -- overlap_ratio (measure) and pattern_term (interpret) ---------------------------------------
_OVERLAP_HEAD = '''
def overlap_ratio(token_table, pos_table):
    if token_table.shape[-1] != pos_table.shape[-1]:
        raise ValueError("widths differ")
    d = token_table.shape[-1]
'''

_PATTERN_HEAD = '''
def pattern_term(terms):
    terms = terms.double()
'''

WRONG_ANSWERS += [
    WrongAnswer("overlap_ratio", "shallow: a constant (tables are as unrelated as random ones)", _OVERLAP_HEAD + '''
    return 1.0
''', costs=5, min_lost=0.5),
    WrongAnswer("overlap_ratio", "shallow: the notebook's mean |cos| alone, no baseline", _OVERLAP_HEAD + '''
    return mean_abs_cosine(token_table, pos_table)
''', costs=5, min_lost=0.5, feedback="not divided by the random baseline"),
    WrongAnswer("overlap_ratio", "shallow: the notebook's large-d formula sqrt(2 / (pi d)) as the baseline",
                _OVERLAP_HEAD + '''
    return mean_abs_cosine(token_table, pos_table) / math.sqrt(2 / (math.pi * d))
''', costs=4, min_lost=0.5, feedback="large-d approximation"),
    WrongAnswer("overlap_ratio", "signed cosines averaged (they cancel)", _OVERLAP_HEAD + '''
    a = token_table.double() / token_table.double().norm(dim=1, keepdim=True)
    b = pos_table.double() / pos_table.double().norm(dim=1, keepdim=True)
    base = math.exp(math.lgamma(d / 2) - math.lgamma((d + 1) / 2)) / math.sqrt(math.pi)
    return (a @ b.T).mean().item() / base
''', costs=5),
    WrongAnswer("overlap_ratio", "no ValueError for tables of different widths", '''
def overlap_ratio(token_table, pos_table):
    d = min(token_table.shape[-1], pos_table.shape[-1])
    base = math.exp(math.lgamma(d / 2) - math.lgamma((d + 1) / 2)) / math.sqrt(math.pi)
    return mean_abs_cosine(token_table[:, :d], pos_table[:, :d]) / base
'''),
    WrongAnswer("pattern_term", "shallow: a constant (the position -> position term, as in the trained models)",
                _PATTERN_HEAD + '''
    return 3
''', costs=3, min_lost=0.5),
    WrongAnswer("pattern_term", "shallow: the term largest in size (the share of |logit| column)", _PATTERN_HEAD + '''
    return int(terms.abs().mean(dim=tuple(range(1, terms.dim()))).argmax())
''', costs=4, min_lost=0.5, feedback="largest in size"),
    WrongAnswer("pattern_term", "shallow: the term with the largest spread over the keys", _PATTERN_HEAD + '''
    return int(terms.std(dim=-1).reshape(4, -1).mean(dim=1).argmax())
''', costs=3, min_lost=0.5, feedback="largest spread"),
    # The docstring's words read as a recipe: the term whose largest entry is most often the sum's.
    WrongAnswer("pattern_term", "shallow: how often a term's largest key is the sum's (argmax agreement)", _PATTERN_HEAD + '''
    full = terms.sum(0).argmax(dim=-1)
    agree = [(term.argmax(dim=-1) == full).double().mean().item() for term in terms]
    return max(range(4), key=lambda k: agree[k])
''', costs=1, min_lost=0.5, feedback="largest entry is most often the sum's"),
    WrongAnswer("pattern_term", "agreement with the sum's argmax taken over the queries axis", _PATTERN_HEAD + '''
    full = terms.sum(0).argmax(dim=-2)
    agree = [(term.argmax(dim=-2) == full).double().mean().item() for term in terms]
    return max(range(4), key=lambda k: agree[k])
''', costs=4),
]

CORRECT_VARIANTS += [
    # Two baselines other than the solution's exact formula: both land within the tolerance.
    ("overlap_ratio", "the baseline measured on 400 x 400 pairs of random Gaussian tables, 3 draws", _OVERLAP_HEAD + '''
    gen = torch.Generator().manual_seed(0)
    base = sum(mean_abs_cosine(torch.randn(400, d, generator=gen, dtype=torch.float64),
                               torch.randn(400, d, generator=gen, dtype=torch.float64)) for _ in range(3)) / 3
    return mean_abs_cosine(token_table, pos_table) / base
'''),
    ("overlap_ratio", "the baseline as the mean |first coordinate| of 300 000 random unit vectors", _OVERLAP_HEAD + '''
    u = torch.randn(300_000, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    base = (u[:, 0].abs() / u.norm(dim=1)).mean().item()
    a = token_table.double() / token_table.double().norm(dim=1, keepdim=True)
    b = pos_table.double() / pos_table.double().norm(dim=1, keepdim=True)
    return float((a @ b.T).abs().mean()) / base
'''),
    ("pattern_term", "the term whose softmax alone is closest to the full attention", _PATTERN_HEAD + '''
    full = torch.softmax(terms.sum(0), dim=-1)
    gaps = [(torch.softmax(term, dim=-1) - full).abs().sum(-1).mean().item() for term in terms]
    return min(range(4), key=lambda k: gaps[k])
'''),
    ("pattern_term", "the term whose row-centred values correlate best with the row-centred logits", _PATTERN_HEAD + '''
    centred = terms - terms.mean(dim=-1, keepdim=True)
    full = centred.sum(0)
    corr = [((c * full).sum() / (c.norm() * full.norm() + 1e-12)).item() for c in centred]
    return max(range(4), key=lambda k: corr[k])
'''),
]

# Shallow answers: a detector that reads the protocol it is handed instead of calling it. The
# protocol is a black box (it runs in the grader), so each reads nothing and scores at most what a
# constant answer does.
WRONG_ANSWERS += [
    WrongAnswer("is_fair_protocol", "a constant verdict (True)", '''
def is_fair_protocol(protocol):
    return True
''', costs=5, shallow=True),
    WrongAnswer("is_fair_protocol", "the verdict read from the protocol's name", '''
def is_fair_protocol(protocol):
    target = getattr(protocol, "func", protocol)
    return getattr(target, "__name__", "fair").startswith("fair")
''', costs=7, shallow=True),
    WrongAnswer("is_fair_protocol", "the verdict read from the protocol's docstring", '''
def is_fair_protocol(protocol):
    doc = (getattr(getattr(protocol, "func", protocol), "__doc__", None) or "").lower()
    return not any(word in doc for word in ("every row", "same half", "best", "no shuffle", "as given"))
''', costs=7, shallow=True),
    WrongAnswer("is_fair_protocol", "the verdict guessed from repr, dir, __dict__ and type", '''
def is_fair_protocol(protocol):
    text = " ".join([repr(protocol), str(dir(protocol)), str(getattr(protocol, "__dict__", "")),
                     str(type(protocol))]).lower()
    return "fair" in text or not any(word in text for word in ("all_rows", "training", "best", "unshuffled"))
''', costs=7, shallow=True),
]


# -- share_width (challenge) --------------------------------------------------------------------
# Graded by thresholds on the grader's LDA read-out at held-out settings (the public check, 0.9 at
# one easy setting, is the low one; then the middle and top means): an entry that clears fewer fails
# several by intent, so each entry's costs is the number of thresholds (and form checks) it misses.
# The notebook's own layouts (the even split, addition at scale 1, sinusoids added at section 4's
# scale) and a search of one knob reach the middle threshold at most: each loses half the points or more.
WRONG_ANSWERS += [
    WrongAnswer("share_width", "shallow: a constant (a number, no layout)", '''
def share_width(d_model, vocab_size, num_positions, noise_std):
    return 8
''', costs=4, shallow=True),
    WrongAnswer("share_width", "a fixed layout of the public case's shape, with no position code", '''
def share_width(d_model, vocab_size, num_positions, noise_std):
    return 8, torch.zeros(32, 16)
''', costs=4, min_lost=0.5),
    WrongAnswer("share_width", "the even split of section 3 (d/2 random coordinates each)", '''
def share_width(d_model, vocab_size, num_positions, noise_std):
    pos_table = torch.zeros(num_positions, d_model, dtype=torch.float64)
    pos_table[:, d_model // 2:] = torch.randn(num_positions, d_model - d_model // 2,
                                              generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return d_model // 2, pos_table
''', feedback="thresholds", costs=2, min_lost=0.5),  # misses the middle and the top
    WrongAnswer("share_width", "plain addition at scale 1 (random positions over the whole width)", '''
def share_width(d_model, vocab_size, num_positions, noise_std):
    gen = torch.Generator().manual_seed(0)
    return d_model, torch.randn(num_positions, d_model, generator=gen, dtype=torch.float64)
''', costs=3, min_lost=0.5),  # misses the public check's 0.9, the middle and the top
    WrongAnswer("share_width", "the sinusoids added to unit-variance tokens (section 4's scale)", '''
def share_width(d_model, vocab_size, num_positions, noise_std):
    position = torch.arange(num_positions, dtype=torch.float64)[:, None]
    angles = position * 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return d_model, torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)[:, :d_model]
''', costs=3, min_lost=0.5),  # the position is lost to a linear read-out: misses all three thresholds
    WrongAnswer("share_width", "one knob searched: the split, with unit-scale random positions", '''
def share_width(d_model, vocab_size, num_positions, noise_std):
    # One knob: how many coordinates the (random, unit-scale) positions get, chosen by simulation.
    gen = torch.Generator().manual_seed(4)
    best = None
    for k in range(1, d_model):
        table = torch.zeros(num_positions, d_model, dtype=torch.float64)
        table[:, d_model - k:] = torch.randn(num_positions, k, generator=gen, dtype=torch.float64)
        tokens = torch.zeros(vocab_size, d_model, dtype=torch.float64)
        tokens[:, :d_model - k] = torch.randn(vocab_size, d_model - k, generator=gen, dtype=torch.float64)
        x = tokens[:, None] + table[None]
        scale = math.sqrt(2 * d_model / (x ** 2).sum(-1).mean())
        reads = []
        for clean in (scale * tokens, scale * table):
            noisy = clean.repeat(max(2, 2048 // len(clean)), 1)
            noisy = noisy + noise_std * torch.randn(noisy.shape, generator=gen, dtype=torch.float64)
            truth = torch.arange(len(clean)).repeat(len(noisy) // len(clean))
            reads.append((torch.cdist(noisy, clean).argmin(1) == truth).double().mean().item())
        if best is None or min(reads) > best[0]:
            best = (min(reads), k, table)
    return d_model - best[1], best[2]
''', feedback="thresholds", costs=1, min_lost=0.5),  # clears the middle, misses the top
    WrongAnswer("share_width", "one knob searched: the position scale at the even split", '''
def share_width(d_model, vocab_size, num_positions, noise_std):
    # One knob: the scale of the position half, at the even split, chosen by simulation.
    gen = torch.Generator().manual_seed(5)
    half = d_model // 2
    code = torch.randn(num_positions, d_model - half, generator=gen, dtype=torch.float64)
    tokens = torch.randn(vocab_size, half, generator=gen, dtype=torch.float64)
    best = None
    for scale in (0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0):
        power = math.sqrt(2 * d_model / (half + scale ** 2 * (code ** 2).sum(1).mean().item()))
        reads = []
        for clean in (power * tokens, power * scale * code):
            noisy = clean.repeat(max(2, 2048 // len(clean)), 1)
            noisy = noisy + noise_std * torch.randn(noisy.shape, generator=gen, dtype=torch.float64)
            truth = torch.arange(len(clean)).repeat(len(noisy) // len(clean))
            reads.append((torch.cdist(noisy, clean).argmin(1) == truth).double().mean().item())
        if best is None or min(reads) > best[0]:
            best = (min(reads), scale)
    pos_table = torch.zeros(num_positions, d_model, dtype=torch.float64)
    pos_table[:, half:] = best[1] * code
    return half, pos_table
''', costs=1, min_lost=0.5),  # clears the middle, misses the top
    WrongAnswer("share_width", "pos_table holds only the concatenated part (T, d_model - d_tok)", '''
def share_width(d_model, vocab_size, num_positions, noise_std):
    n = max(1, math.ceil(math.log2(num_positions)))
    corners = ((torch.arange(num_positions)[:, None] >> torch.arange(n)) & 1).double() * 2 - 1
    return d_model - n, 1.5 * corners
''', feedback="pos_table", costs=4),  # a layout of the wrong form: nothing to score
    WrongAnswer("share_width", "d_tok returned as a tensor", '''
def share_width(d_model, vocab_size, num_positions, noise_std):
    n = max(1, math.ceil(math.log2(num_positions)))
    pos_table = torch.zeros(num_positions, d_model, dtype=torch.float64)
    corners = ((torch.arange(num_positions)[:, None] >> torch.arange(n)) & 1).double() * 2 - 1
    pos_table[:, d_model - n:] = 1.5 * corners
    return torch.tensor(d_model - n), pos_table
''', feedback="Python int", costs=4),
]

# Two layouts of one's own, neither the notebook's, that clear the top threshold (0.882 and 0.870 at
# the held-out settings; the solution's bit code with parity checks, 0.876, is a third).
CORRECT_VARIANTS += [
    ("share_width", "points pushed apart on a sphere of k coordinates, k and the power share simulated",
     '''
def share_width(d_model, vocab_size, num_positions, noise_std):
    # Positions as points pushed apart on a sphere of k coordinates, concatenated after the tokens;
    # k and the power share picked by simulating a nearest-mean read-out of both.
    gen = torch.Generator().manual_seed(1)

    def spread(k):
        points = torch.randn(num_positions, k, generator=gen, dtype=torch.float64)
        points = points / points.norm(dim=1, keepdim=True)
        for _ in range(100):
            diff = points[:, None] - points[None]
            dist2 = (diff ** 2).sum(-1) + torch.eye(num_positions, dtype=torch.float64)
            force = (diff / dist2[..., None] ** 2).sum(1)
            points = points + 0.05 * force / force.norm(dim=1, keepdim=True).clamp_min(1e-12) / math.sqrt(k)
            points = points / points.norm(dim=1, keepdim=True)
        return points * math.sqrt(k)

    def accuracy(table, scale, copies):
        noisy = scale * table.repeat(copies, 1)
        noisy = noisy + noise_std * torch.randn(noisy.shape, generator=gen, dtype=torch.float64)
        truth = torch.arange(len(table)).repeat(copies)
        return (torch.cdist(noisy, scale * table).argmin(1) == truth).double().mean().item()

    best = None
    for k in range(2, max(3, d_model // 2 + 1)):
        code = spread(k)
        tokens = torch.randn(vocab_size, d_model - k, generator=gen, dtype=torch.float64)
        for share in (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5):
            pos_scale = math.sqrt(share * 2 * d_model / k)
            tok_scale = math.sqrt((1 - share) * 2 * d_model / (d_model - k))
            score = min(accuracy(code, pos_scale, max(1, 2048 // num_positions)),
                        accuracy(tokens, tok_scale, max(2, 2048 // vocab_size)))
            if best is None or score > best[0]:
                best = (score, k, pos_scale / tok_scale, code)
    _, k, ratio, code = best
    pos_table = torch.zeros(num_positions, d_model, dtype=torch.float64)
    pos_table[:, d_model - k:] = ratio * code
    return d_model - k, pos_table
'''),
    ("share_width", "corners of a cube in log2(T) coordinates, amplitude by bisection on the two read-outs",
     '''
def share_width(d_model, vocab_size, num_positions, noise_std):
    # Positions as the +-1 corners of a cube in n = ceil(log2 T) coordinates, concatenated; the
    # amplitude set by bisection so that the simulated token and position read-outs are equal.
    gen = torch.Generator().manual_seed(2)
    n = max(1, math.ceil(math.log2(num_positions)))
    corners = ((torch.arange(num_positions)[:, None] >> torch.arange(n)) & 1).double() * 2 - 1
    tokens = torch.randn(vocab_size, d_model - n, generator=gen, dtype=torch.float64)
    pos_noise = torch.randn(8, num_positions, n, generator=gen, dtype=torch.float64)
    tok_noise = torch.randn(max(2, 4096 // vocab_size), vocab_size, d_model - n, generator=gen, dtype=torch.float64)

    def reads(amplitude):
        scale = math.sqrt(2 * d_model / (d_model - n + n * amplitude ** 2))     # equal power
        pos = (scale * amplitude * corners + noise_std * pos_noise).reshape(-1, n)
        pos_acc = (torch.cdist(pos, scale * amplitude * corners).argmin(1)
                   == torch.arange(num_positions).repeat(8)).double().mean().item()
        tok = (scale * tokens + noise_std * tok_noise).reshape(-1, d_model - n)
        tok_acc = (torch.cdist(tok, scale * tokens).argmin(1)
                   == torch.arange(vocab_size).repeat(len(tok_noise))).double().mean().item()
        return tok_acc, pos_acc

    low, high = 0.05, 20.0
    for _ in range(18):
        middle = math.sqrt(low * high)
        tok_acc, pos_acc = reads(middle)
        low, high = (middle, high) if pos_acc < tok_acc else (low, middle)
    pos_table = torch.zeros(num_positions, d_model, dtype=torch.float64)
    pos_table[:, d_model - n:] = math.sqrt(low * high) * corners
    return d_model - n, pos_table
'''),
]
