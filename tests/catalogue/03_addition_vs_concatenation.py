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
    if w_q.dim() != 2 or w_q.shape != w_k.shape or token_vectors.shape[-1] != w_q.shape[1] \\
            or pos_vectors.shape[-1] != w_q.shape[1] or token_vectors.shape[-2] != pos_vectors.shape[-2]:
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
    qe, qp, ke, kp = e @ w_q.T, p @ w_q.T, e @ w_k.T, p @ w_k.T
    return torch.stack([a @ b.transpose(-2, -1) for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
''', feedback="no 1/sqrt(d_head) scaling"),
    WrongAnswer("attention_logit_terms", "mixed terms swapped", _TERMS_HEAD + '''
    qe, qp, ke, kp = e @ w_q.T, p @ w_q.T, e @ w_k.T, p @ w_k.T
    s = w_q.shape[0] ** 0.5
    return torch.stack([a @ b.transpose(-2, -1) / s for a, b in ((qe, ke), (qp, ke), (qe, kp), (qp, kp))])
''', feedback="swapped"),
    WrongAnswer("attention_logit_terms", "keys projected with W_q", _TERMS_HEAD + '''
    qe, qp = e @ w_q.T, p @ w_q.T
    s = w_q.shape[0] ** 0.5
    return torch.stack([a @ b.transpose(-2, -1) / s for a, b in ((qe, qe), (qe, qp), (qp, qe), (qp, qp))])
''', feedback="W_q instead of W_k"),
    WrongAnswer("attention_logit_terms", "scaled by sqrt(d) of the input", _TERMS_HEAD + '''
    qe, qp, ke, kp = e @ w_q.T, p @ w_q.T, e @ w_k.T, p @ w_k.T
    s = w_q.shape[1] ** 0.5
    return torch.stack([a @ b.transpose(-2, -1) / s for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
''', feedback="instead of sqrt(d_head)"),
    WrongAnswer("attention_logit_terms", "queries and keys swapped", _TERMS_HEAD + '''
    qe, qp, ke, kp = e @ w_q.T, p @ w_q.T, e @ w_k.T, p @ w_k.T
    s = w_q.shape[0] ** 0.5
    return torch.stack([b @ a.transpose(-2, -1) / s for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
''', feedback="queries and keys swapped"),
    WrongAnswer("attention_logit_terms", "weights not transposed (square only)", _TERMS_HEAD + '''
    qe, qp, ke, kp = e @ w_q, p @ w_q, e @ w_k, p @ w_k
    s = w_q.shape[0] ** 0.5
    return torch.stack([a @ b.transpose(-2, -1) / s for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
'''),
    WrongAnswer("attention_logit_terms", "only works for 2-D vectors", _TERMS_HEAD + '''
    qe, qp, ke, kp = e @ w_q.T, p @ w_q.T, e @ w_k.T, p @ w_k.T
    s = w_q.shape[0] ** 0.5
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
    if w_q.dim() != 2 or w_q.shape != w_k.shape or token_vectors.shape[-1] != w_q.shape[1] \\
            or pos_vectors.shape[-1] != w_q.shape[1] or token_vectors.shape[-2] != pos_vectors.shape[-2]:
        raise ValueError("bad shapes")
'''

_TERMS_BODY = '''
    qe, qp, ke, kp = e @ w_q.T, p @ w_q.T, e @ w_k.T, p @ w_k.T
    s = w_q.shape[0] ** 0.5
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
        return torch.mm(x.view(-1, x.shape[-1]), w.T).view(*x.shape[:-1], w.shape[0])
    qe, ke = project(token_vectors, w_q), project(token_vectors, w_k)
    qp, kp = project(pos_vectors, w_q), project(pos_vectors, w_k)
    qe, qp = torch.broadcast_tensors(qe, qp)
    ke, kp = torch.broadcast_tensors(ke, kp)
    s = w_q.shape[0] ** 0.5
    return torch.stack([a @ b.transpose(-2, -1) / s for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
'''),
    WrongAnswer("attention_logit_terms", "half inputs upcast to float32 (float32 returned)", _TERMS_CHECKS + '''
    if w_q.dtype in (torch.float16, torch.bfloat16):   # "half matmul is not supported on CPU"
        token_vectors, pos_vectors, w_q, w_k = (x.float() for x in (token_vectors, pos_vectors, w_q, w_k))
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
''' + _TERMS_BODY),
    WrongAnswer("attention_logit_terms", "W_q scaled in place", _TERMS_CHECKS + '''
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
    w_q /= w_q.shape[0] ** 0.5          # fold 1/sqrt(d_head) into the queries
    qe, qp, ke, kp = e @ w_q.T, p @ w_q.T, e @ w_k.T, p @ w_k.T
    return torch.stack([a @ b.transpose(-2, -1) for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
'''),
    WrongAnswer("attention_logit_terms", "position width not checked (matmul error)", '''
def attention_logit_terms(token_vectors, pos_vectors, w_q, w_k):
    if w_q.dim() != 2 or w_q.shape != w_k.shape or token_vectors.shape[-1] != w_q.shape[1] \\
            or token_vectors.shape[-2] != pos_vectors.shape[-2]:
        raise ValueError("bad shapes")
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
''' + _TERMS_BODY),
    WrongAnswer("attention_logit_terms", "1-D weights not rejected", '''
def attention_logit_terms(token_vectors, pos_vectors, w_q, w_k):
    if w_q.shape != w_k.shape or token_vectors.shape[-1] != w_q.shape[-1] \\
            or pos_vectors.shape[-1] != w_q.shape[-1] or token_vectors.shape[-2] != pos_vectors.shape[-2]:
        raise ValueError("bad shapes")
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
''' + _TERMS_BODY),
]

_HELD_OUT_HEAD = '''
def held_out_accuracy(features, token_ids, position_ids, read, probe):
    if read not in ("token", "position"):
        raise ValueError("read must be 'token' or 'position'")
    labels, other = (token_ids, position_ids) if read == "token" else (position_ids, token_ids)
'''

_HELD_OUT_SCORE = '''
    weights = probe(features[train], labels[train]).double()
    scores = features[test].double() @ weights[:-1] + weights[-1]
    return (scores.argmax(dim=1) == labels[test].long()).double().mean().item()
'''

_FAIR_HEAD = '''
def is_fair_protocol(protocol):
    gen = torch.Generator().manual_seed(0)
'''

WRONG_ANSWERS += [
    # -- held_out_accuracy (measure) --------------------------------------------------------------
    WrongAnswer("held_out_accuracy", "pairs split at random (the leaky protocol)", _HELD_OUT_HEAD + '''
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
    train, test = order[: len(labels) // 2], order[len(labels) // 2:]
''' + _HELD_OUT_SCORE, feedback="split at random"),
    WrongAnswer("held_out_accuracy", "rows split by the factor read", _HELD_OUT_HEAD + '''
    train, test = labels % 2 == 0, labels % 2 == 1
''' + _HELD_OUT_SCORE, feedback="split by the factor read"),
    WrongAnswer("held_out_accuracy", "trained and tested on every row", _HELD_OUT_HEAD + '''
    train = test = torch.ones(len(labels), dtype=torch.bool)
''' + _HELD_OUT_SCORE, feedback="trained and tested on every row"),
    WrongAnswer("held_out_accuracy", "rows split by their index, not by the other factor", _HELD_OUT_HEAD + '''
    rows = torch.arange(len(labels))
    train, test = rows % 2 == 0, rows % 2 == 1
''' + _HELD_OUT_SCORE),
    WrongAnswer("held_out_accuracy", "bias row left out of the scores", _HELD_OUT_HEAD + '''
    train, test = other % 2 == 0, other % 2 == 1
    weights = probe(features[train], labels[train]).double()
    scores = features[test].double() @ weights[:-1]
    return (scores.argmax(dim=1) == labels[test].long()).double().mean().item()
''', feedback="bias row left out"),
    # -- is_fair_protocol (diagnose) --------------------------------------------------------------
    # A detector that accepts everything misses each leak (each leak is its own test) and gives a fair
    # and a leaky protocol the same verdict (test_verdict_depends_on_the_protocol).
    WrongAnswer("is_fair_protocol", "accepts every protocol", '''
def is_fair_protocol(protocol):
    features = torch.randn(200, 20, dtype=torch.float64)
    labels = torch.arange(200) % 4
    return 0.0 <= protocol(features, labels) <= 1.0
''', costs=4),
    WrongAnswer("is_fair_protocol", "one call per protocol (a leak smaller than one call's scatter is missed)", _FAIR_HEAD + '''
    for sort in (False, True):
        features = torch.randn(200, 20, generator=gen, dtype=torch.float64)
        labels = torch.randperm(200, generator=gen) % 4
        if sort:
            labels = labels.sort().values
        if abs(protocol(features, labels) - 0.25) > 0.1:   # 3 standard deviations of one call
            return False
    return True
'''),
    WrongAnswer("is_fair_protocol", "rows only in random order (a split without a shuffle passes)", _FAIR_HEAD + '''
    scores = []
    for _ in range(30):
        features = torch.randn(200, 20, generator=gen, dtype=torch.float64)
        scores.append(protocol(features, torch.randperm(200, generator=gen) % 4))
    scores = torch.tensor(scores, dtype=torch.float64)
    return abs(scores.mean().item() - 0.25) <= 0.025 + 3 * scores.std().item() / 30 ** 0.5
'''),
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
'''),
    # -- first_coordinates_carry (interpret) ------------------------------------------------------
    WrongAnswer("first_coordinates_carry", "always the position (the first dimensions are unusable for tokens)", '''
def first_coordinates_carry(scale):
    return "position"
'''),
    WrongAnswer("first_coordinates_carry", "always the token", '''
def first_coordinates_carry(scale):
    return "token"
'''),
    WrongAnswer("first_coordinates_carry", "the crossover guessed at sqrt(d_model), not measured", '''
def first_coordinates_carry(scale):
    return "token" if scale >= math.sqrt(128) else "position"
'''),
    WrongAnswer("first_coordinates_carry", "the table read the wrong way round (the token wins at small scales)", '''
def first_coordinates_carry(scale):
    return "token" if scale < 8 else "position"
'''),
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
    ("attention_logit_terms", "einsum with W_q^T W_k folded first", '''
def attention_logit_terms(token_vectors, pos_vectors, w_q, w_k):
    if w_q.dim() != 2 or w_q.shape != w_k.shape:
        raise ValueError("bad weights")
    d_head, d = w_q.shape
    if token_vectors.dim() < 2 or pos_vectors.dim() < 2 or token_vectors.shape[-1] != d \\
            or pos_vectors.shape[-1] != d or token_vectors.shape[-2] != pos_vectors.shape[-2]:
        raise ValueError("bad vectors")
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
    m = torch.einsum("hd,he->de", w_q, w_k) / math.sqrt(d_head)       # W_q^T W_k / sqrt(d_head)
    return torch.stack([torch.einsum("...id,de,...je->...ij", a, m, b)
                        for a, b in ((e, e), (e, p), (p, e), (p, p))])
'''),
    ("attention_logit_terms", "float64 computation cast back to the inputs' dtype", '''
def attention_logit_terms(token_vectors, pos_vectors, w_q, w_k):
    if w_q.dim() != 2 or w_q.shape != w_k.shape:
        raise ValueError("bad weights")
    d_head, d = w_q.shape
    if token_vectors.dim() < 2 or pos_vectors.dim() < 2 or token_vectors.shape[-1] != d \\
            or pos_vectors.shape[-1] != d or token_vectors.shape[-2] != pos_vectors.shape[-2]:
        raise ValueError("bad vectors")
    dtype = torch.promote_types(torch.promote_types(token_vectors.dtype, pos_vectors.dtype),
                                torch.promote_types(w_q.dtype, w_k.dtype))
    e, p = torch.broadcast_tensors(token_vectors.double(), pos_vectors.double())
    q = [x @ w_q.double().T for x in (e, p)]
    k = [x @ w_k.double().T for x in (e, p)]
    terms = [q[i] @ k[j].transpose(-2, -1) / math.sqrt(d_head) for i, j in ((0, 0), (0, 1), (1, 0), (1, 1))]
    return torch.stack(terms).to(dtype)
'''),
]

CORRECT_VARIANTS += [
    ("held_out_accuracy", "row indices from nonzero, scores with an appended ones column", '''
def held_out_accuracy(features, token_ids, position_ids, read, probe):
    if read == "token":
        labels, other = token_ids.long(), position_ids.long()
    elif read == "position":
        labels, other = position_ids.long(), token_ids.long()
    else:
        raise ValueError(f"unknown factor {read!r}")
    train = torch.nonzero(other % 2 == 0).flatten()
    test = torch.nonzero(other % 2 == 1).flatten()
    weights = probe(features.index_select(0, train), labels.index_select(0, train))
    x = torch.cat([features.index_select(0, test).double(), torch.ones(len(test), 1, dtype=torch.float64)], dim=1)
    predicted = (x @ weights.double()).argmax(dim=1)
    return float(torch.eq(predicted, labels.index_select(0, test)).sum()) / len(test)
'''),
    ("held_out_accuracy", "probe fitted on a copy in float64, hits counted in a loop", '''
def held_out_accuracy(features, token_ids, position_ids, read, probe):
    if read not in {"token", "position"}:
        raise ValueError("read is 'token' or 'position'")
    labels = token_ids if read == "token" else position_ids
    other = position_ids if read == "token" else token_ids
    is_train = (other.long() % 2).eq(0)
    weights = probe(features[is_train].double().clone(), labels[is_train].long())
    w, b = weights[:-1].double(), weights[-1].double()
    hits, total = 0, 0
    for row, label in zip(features[~is_train].double(), labels[~is_train].tolist()):
        hits += int(int((row @ w + b).argmax()) == label)
        total += 1
    return hits / total
'''),
    ("is_fair_protocol", "fixed band around chance for 5 classes, mean of 40 calls per order", '''
def is_fair_protocol(protocol):
    gen = torch.Generator().manual_seed(123)
    classes, n, d, k = 5, 150, 30, 40
    for sort in (False, True):
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
    chance, n, calls = 1 / 3, 240, 25
    for arrange in ("random", "blocks"):
        scores = []
        for _ in range(calls):
            labels = torch.randperm(n, generator=gen) % 3
            if arrange == "blocks":
                labels, _ = torch.sort(labels)
            scores.append(protocol(torch.randn(n, 24, generator=gen, dtype=torch.float64), labels))
        mean = sum(scores) / calls
        error = (chance * (1 - chance) / (calls * n / 2)) ** 0.5  # about n/2 test rows per call
        if abs(mean - chance) > 0.01 + 3 * error:
            return False
    return True
'''),
    ("first_coordinates_carry", "measured live with an LDA of its own", '''
def first_coordinates_carry(scale):
    d_model, vocab, t = 128, 64, 64
    pe = sinusoids(t, d_model)[:, :8]
    tokens, where = torch.arange(vocab).repeat_interleave(t), torch.arange(t).repeat(vocab)

    def lda_accuracy(x, labels, other):
        train, test = other % 2 == 0, other % 2 == 1
        classes = int(labels.max()) + 1
        means = torch.stack([x[train & (labels == c)].mean(0) for c in range(classes)])
        r = x[train] - means[labels[train]]
        cov = r.T @ r / (int(train.sum()) - classes) + 1e-3 * torch.eye(x.shape[1], dtype=torch.float64)
        w = torch.linalg.solve(cov, means.T)
        scores = x[test] @ w - (means.T * w).sum(0) / 2
        return (scores.argmax(1) == labels[test]).double().mean().item()

    token = position = 0.0
    for seed in range(3):
        e = scale * torch.randn(vocab, d_model, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        x = e[:, :8][tokens] / d_model ** 0.5 + pe[where]
        token += lda_accuracy(x, tokens, where)
        position += lda_accuracy(x, where, tokens)
    return "token" if token > position else "position"
'''),
    ("first_coordinates_carry", "the rule of equal variances, written as a ratio", '''
def first_coordinates_carry(scale):
    token_variance = scale ** 2 / 128      # per coordinate
    sinusoid_variance = 0.5                # of a fast sin or cos over many positions
    return "position" if token_variance / sinusoid_variance < 1 else "token"
'''),
]

# Shallow answers: a detector that reads the protocol it is handed instead of calling it. The
# protocol is a black box (it runs in the grader), so each reads nothing and scores at most what a
# constant answer does.
WRONG_ANSWERS += [
    WrongAnswer("is_fair_protocol", "a constant verdict (True)", '''
def is_fair_protocol(protocol):
    return True
''', costs=4, shallow=True),
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
