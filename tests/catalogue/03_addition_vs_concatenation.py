"""Plausible wrong answers for notebook 03; each must lose points under the hidden tests."""
from tests.catalogue import WrongAnswer

_EMBED_HEAD = '''
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
    if token_ids.min() < 0 or token_ids.max() >= token_table.shape[0]:
        raise ValueError("id out of range")
    e = token_table[token_ids]
'''

_PROBE_HEAD = '''
def linear_probe(features, labels, ridge=1e-3):
    if features.dim() != 2 or labels.shape[0] != features.shape[0]:
        raise ValueError("bad shapes")
    n = features.shape[0]
'''

_LDA_HEAD = '''
def lda_probe(features, labels, ridge=1e-3):
    if features.dim() != 2 or labels.dim() != 1 or labels.shape[0] != features.shape[0]:
        raise ValueError("bad shapes")
    if labels.min() < 0 or ridge < 0:
        raise ValueError("bad labels or ridge")
    n, d = features.shape
    c = int(labels.max()) + 1
    counts = torch.bincount(labels, minlength=c)
    if (counts == 0).any():
        raise ValueError("empty class")
    x = features.double()
    means = torch.stack([x[labels == k].mean(0) for k in range(c)])
'''

_LDA_TAIL = '''
    w = torch.linalg.solve(cov, means.T)
    bias = -(means.T * w).sum(0) / 2 + torch.log(counts.double() / n)
    return torch.cat([w, bias[None]], 0)
'''

_TERMS_HEAD = '''
def attention_logit_terms(token_vectors, pos_vectors, w_q, w_k):
    if w_q.shape != w_k.shape or token_vectors.shape[-1] != w_q.shape[1] or pos_vectors.shape[-1] != w_q.shape[1] \\
            or token_vectors.shape[-2] != pos_vectors.shape[-2]:
        raise ValueError("bad shapes")
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
'''

_COSINE_HEAD = '''
def mean_abs_cosine(a, b):
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1]:
        raise ValueError("bad shapes")
    a, b = a.double(), b.double()
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
    # -- linear_probe ----------------------------------------------------------------------------
    WrongAnswer("linear_probe", "no bias column", _PROBE_HEAD + '''
    x = features.double()
    y = torch.nn.functional.one_hot(labels, int(labels.max()) + 1).double()
    return torch.linalg.solve(x.T @ x + ridge * torch.eye(x.shape[1], dtype=torch.float64), x.T @ y)
''', feedback="no bias column"),
    WrongAnswer("linear_probe", "bias column first", _PROBE_HEAD + '''
    x = torch.cat([torch.ones(n, 1, dtype=torch.float64), features.double()], 1)
    y = torch.nn.functional.one_hot(labels, int(labels.max()) + 1).double()
    return torch.linalg.solve(x.T @ x + ridge * torch.eye(x.shape[1], dtype=torch.float64), x.T @ y)
''', feedback="bias column first"),
    WrongAnswer("linear_probe", "ridge ignored", _PROBE_HEAD + '''
    x = torch.cat([features.double(), torch.ones(n, 1, dtype=torch.float64)], 1)
    y = torch.nn.functional.one_hot(labels, int(labels.max()) + 1).double()
    return torch.linalg.lstsq(x, y).solution
''', feedback="ridge term missing"),
    WrongAnswer("linear_probe", "ridge added to every entry", _PROBE_HEAD + '''
    x = torch.cat([features.double(), torch.ones(n, 1, dtype=torch.float64)], 1)
    y = torch.nn.functional.one_hot(labels, int(labels.max()) + 1).double()
    return torch.linalg.solve(x.T @ x + ridge, x.T @ y)
''', feedback="every entry"),
    WrongAnswer("linear_probe", "labels as regression targets", _PROBE_HEAD + '''
    x = torch.cat([features.double(), torch.ones(n, 1, dtype=torch.float64)], 1)
    y = labels.double()[:, None]
    return torch.linalg.solve(x.T @ x + ridge * torch.eye(x.shape[1], dtype=torch.float64), x.T @ y)
''', feedback="regression targets"),
    WrongAnswer("linear_probe", "classes counted with unique", _PROBE_HEAD + '''
    x = torch.cat([features.double(), torch.ones(n, 1, dtype=torch.float64)], 1)
    _, compact = torch.unique(labels, return_inverse=True)
    y = torch.nn.functional.one_hot(compact).double()
    return torch.linalg.solve(x.T @ x + ridge * torch.eye(x.shape[1], dtype=torch.float64), x.T @ y)
'''),
    WrongAnswer("linear_probe", "solved in float32", _PROBE_HEAD + '''
    x = torch.cat([features.float(), torch.ones(n, 1)], 1)
    y = torch.nn.functional.one_hot(labels, int(labels.max()) + 1).float()
    return torch.linalg.solve(x.T @ x + ridge * torch.eye(x.shape[1]), x.T @ y)
'''),
    # -- lda_probe -------------------------------------------------------------------------------
    WrongAnswer("lda_probe", "log prior missing", _LDA_HEAD + '''
    r = x - means[labels]
    w = torch.linalg.solve(r.T @ r / max(n - c, 1) + ridge * torch.eye(d, dtype=torch.float64), means.T)
    return torch.cat([w, (-(means.T * w).sum(0) / 2)[None]], 0)
''', feedback="log prior"),
    WrongAnswer("lda_probe", "factor 1/2 missing", _LDA_HEAD + '''
    r = x - means[labels]
    w = torch.linalg.solve(r.T @ r / max(n - c, 1) + ridge * torch.eye(d, dtype=torch.float64), means.T)
    return torch.cat([w, (-(means.T * w).sum(0) + torch.log(counts.double() / n))[None]], 0)
''', feedback="factor 1/2"),
    WrongAnswer("lda_probe", "total covariance instead of within classes", _LDA_HEAD + '''
    r = x - x.mean(0)
    cov = r.T @ r / max(n - c, 1) + ridge * torch.eye(d, dtype=torch.float64)
''' + _LDA_TAIL, feedback="within classes"),
    WrongAnswer("lda_probe", "scatter divided by N", _LDA_HEAD + '''
    r = x - means[labels]
    cov = r.T @ r / n + ridge * torch.eye(d, dtype=torch.float64)
''' + _LDA_TAIL, feedback="divided by N instead of N - C"),
    WrongAnswer("lda_probe", "nearest centroid (no S^-1)", _LDA_HEAD + '''
    w = means.T.clone()
    bias = -(means.T * w).sum(0) / 2 + torch.log(counts.double() / n)
    return torch.cat([w, bias[None]], 0)
''', feedback="nearest centroid"),
    WrongAnswer("lda_probe", "bias row first", _LDA_HEAD + '''
    r = x - means[labels]
    w = torch.linalg.solve(r.T @ r / max(n - c, 1) + ridge * torch.eye(d, dtype=torch.float64), means.T)
    bias = -(means.T * w).sum(0) / 2 + torch.log(counts.double() / n)
    return torch.cat([bias[None], w], 0)
''', feedback="bias row first"),
    WrongAnswer("lda_probe", "ridge ignored", _LDA_HEAD + '''
    r = x - means[labels]
    cov = r.T @ r / max(n - c, 1) + 1e-12 * torch.eye(d, dtype=torch.float64)
''' + _LDA_TAIL),
    WrongAnswer("lda_probe", "empty classes not rejected", '''
def lda_probe(features, labels, ridge=1e-3):
    n, d = features.shape
    c = int(labels.max()) + 1
    counts = torch.bincount(labels, minlength=c).clamp_min(1)
    x = features.double()
    means = torch.zeros(c, d, dtype=torch.float64).index_add_(0, labels, x) / counts[:, None]
    r = x - means[labels]
    cov = r.T @ r / max(n - c, 1) + ridge * torch.eye(d, dtype=torch.float64)
''' + _LDA_TAIL),
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
    WrongAnswer("attention_logit_terms", "weights not transposed (square only)", '''
def attention_logit_terms(token_vectors, pos_vectors, w_q, w_k):
    e, p = torch.broadcast_tensors(token_vectors, pos_vectors)
    qe, qp, ke, kp = e @ w_q, p @ w_q, e @ w_k, p @ w_k
    s = w_q.shape[0] ** 0.5
    return torch.stack([a @ b.transpose(-2, -1) / s for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
'''),
    WrongAnswer("attention_logit_terms", "only works for 2-D vectors", _TERMS_HEAD + '''
    qe, qp, ke, kp = e @ w_q.T, p @ w_q.T, e @ w_k.T, p @ w_k.T
    s = w_q.shape[0] ** 0.5
    return torch.stack([a @ b.T / s for a, b in ((qe, ke), (qe, kp), (qp, ke), (qp, kp))])
'''),
    # -- mean_abs_cosine -------------------------------------------------------------------------
    WrongAnswer("mean_abs_cosine", "absolute value missing", _COSINE_HEAD + '''
    a = a / a.norm(dim=1, keepdim=True)
    b = b / b.norm(dim=1, keepdim=True)
    return (a @ b.T).mean().item()
''', feedback="absolute value is missing"),
    WrongAnswer("mean_abs_cosine", "rows not normalised", _COSINE_HEAD + '''
    return (a @ b.T).abs().mean().item()
''', feedback="rows not normalised"),
    WrongAnswer("mean_abs_cosine", "only matching rows", _COSINE_HEAD + '''
    return torch.nn.functional.cosine_similarity(a, b, dim=1).abs().mean().item()
''', feedback="only matching rows"),
    WrongAnswer("mean_abs_cosine", "columns normalised", _COSINE_HEAD + '''
    a = a / a.norm(dim=0, keepdim=True)
    b = b / b.norm(dim=0, keepdim=True)
    return (a @ b.T).abs().mean().item()
''', feedback="columns normalised"),
    WrongAnswer("mean_abs_cosine", "squared cosine", _COSINE_HEAD + '''
    a = a / a.norm(dim=1, keepdim=True)
    b = b / b.norm(dim=1, keepdim=True)
    return ((a @ b.T) ** 2).mean().item()
''', feedback="squared cosines"),
    WrongAnswer("mean_abs_cosine", "diagonal excluded", _COSINE_HEAD + '''
    cos = (a / a.norm(dim=1, keepdim=True)) @ (b / b.norm(dim=1, keepdim=True)).T
    if a.shape == b.shape and torch.equal(a, b):
        cos = cos[~torch.eye(len(a), dtype=torch.bool)]
    return cos.abs().mean().item()
''', feedback="pairs i == j left out"),
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

_PROBE_BODY = '''
    x = torch.cat([features.double(), torch.ones(features.shape[0], 1, dtype=torch.float64)], 1)
    y = torch.nn.functional.one_hot(labels.long(), int(labels.max()) + 1).double()
    return torch.linalg.solve(x.T @ x + ridge * torch.eye(x.shape[1], dtype=torch.float64), x.T @ y)
'''

_LDA_CHECKS = '''
def lda_probe(features, labels, ridge=1e-3):
    if features.dim() != 2 or labels.dim() != 1 or labels.shape[0] != features.shape[0]:
        raise ValueError("bad shapes")
    if labels.min() < 0 or ridge < 0:
        raise ValueError("bad labels or ridge")
    n, d = features.shape
    c = int(labels.max()) + 1
    counts = torch.bincount(labels, minlength=c)
    if (counts == 0).any():
        raise ValueError("empty class")
    if n == c and ridge == 0:
        raise ValueError("ridge must be > 0 with one example per class")
'''

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
    # -- linear_probe ----------------------------------------------------------------------------
    WrongAnswer("linear_probe", "one_hot of int32 labels (no .long())", _PROBE_HEAD + '''
    if labels.min() < 0 or ridge < 0:
        raise ValueError("bad labels or ridge")
    x = torch.cat([features.double(), torch.ones(n, 1, dtype=torch.float64)], 1)
    y = torch.nn.functional.one_hot(labels, int(labels.max()) + 1).double()
    return torch.linalg.solve(x.T @ x + ridge * torch.eye(x.shape[1], dtype=torch.float64), x.T @ y)
'''),
    WrongAnswer("linear_probe", "ridge = 0 rejected", _PROBE_HEAD + '''
    if labels.min() < 0 or ridge <= 0:
        raise ValueError("labels must be >= 0 and ridge > 0")
''' + _PROBE_BODY),
    WrongAnswer("linear_probe", "bias not regularised (sklearn convention)", _PROBE_HEAD + '''
    if labels.min() < 0 or ridge < 0:
        raise ValueError("bad labels or ridge")
    x = torch.cat([features.double(), torch.ones(n, 1, dtype=torch.float64)], 1)
    y = torch.nn.functional.one_hot(labels.long(), int(labels.max()) + 1).double()
    penalty = ridge * torch.eye(x.shape[1], dtype=torch.float64)
    penalty[-1, -1] = 0.0
    return torch.linalg.solve(x.T @ x + penalty, x.T @ y)
'''),
    WrongAnswer("linear_probe", "only the shapes validated (negative ridge and labels slip through)",
                _PROBE_HEAD + _PROBE_BODY),
    WrongAnswer("linear_probe", "features not checked to be 2-D", '''
def linear_probe(features, labels, ridge=1e-3):
    if labels.dim() != 1 or labels.shape[0] != features.shape[0]:
        raise ValueError("bad labels")
    if labels.min() < 0 or ridge < 0:
        raise ValueError("bad labels or ridge")
''' + _PROBE_BODY),
    WrongAnswer("linear_probe", "Gram matrix formed in the features' dtype", _PROBE_HEAD + '''
    if labels.min() < 0 or ridge < 0:
        raise ValueError("bad labels or ridge")
    x = torch.cat([features, torch.ones(n, 1, dtype=features.dtype)], 1)
    y = torch.nn.functional.one_hot(labels.long(), int(labels.max()) + 1).to(features.dtype)
    gram = (x.T @ x).double() + ridge * torch.eye(x.shape[1], dtype=torch.float64)
    return torch.linalg.solve(gram, (x.T @ y).double())
'''),
    # -- lda_probe -------------------------------------------------------------------------------
    WrongAnswer("lda_probe", "features centred in place", _LDA_CHECKS + '''
    x = features.double()
    means = torch.stack([x[labels == k].mean(0) for k in range(c)])
    x -= means[labels]
    cov = x.T @ x / max(n - c, 1) + ridge * torch.eye(d, dtype=torch.float64)
''' + _LDA_TAIL),
    WrongAnswer("lda_probe", "class means through one_hot (int32 labels fail)", _LDA_CHECKS + '''
    x = features.double()
    onehot = torch.nn.functional.one_hot(labels, c).double()
    means = onehot.T @ x / counts.double()[:, None]
    r = x - means[labels]
    cov = r.T @ r / max(n - c, 1) + ridge * torch.eye(d, dtype=torch.float64)
''' + _LDA_TAIL),
    WrongAnswer("lda_probe", "zero ridge with one example per class not rejected", '''
def lda_probe(features, labels, ridge=1e-3):
    if features.dim() != 2 or labels.dim() != 1 or labels.shape[0] != features.shape[0]:
        raise ValueError("bad shapes")
    if labels.min() < 0 or ridge < 0:
        raise ValueError("bad labels or ridge")
    n, d = features.shape
    c = int(labels.max()) + 1
    counts = torch.bincount(labels, minlength=c)
    if (counts == 0).any():
        raise ValueError("empty class")
    x = features.double()
    means = torch.stack([x[labels == k].mean(0) for k in range(c)])
    r = x - means[labels]
    cov = r.T @ r / max(n - c, 1) + ridge * torch.eye(d, dtype=torch.float64)
''' + _LDA_TAIL),
    WrongAnswer("lda_probe", "negative ridge not rejected", '''
def lda_probe(features, labels, ridge=1e-3):
    if features.dim() != 2 or labels.dim() != 1 or labels.shape[0] != features.shape[0]:
        raise ValueError("bad shapes")
    if labels.min() < 0:
        raise ValueError("bad labels")
    n, d = features.shape
    c = int(labels.max()) + 1
    counts = torch.bincount(labels, minlength=c)
    if (counts == 0).any():
        raise ValueError("empty class")
    if n == c and ridge == 0:
        raise ValueError("ridge must be > 0 with one example per class")
    x = features.double()
    means = torch.stack([x[labels == k].mean(0) for k in range(c)])
    r = x - means[labels]
    cov = r.T @ r / max(n - c, 1) + ridge * torch.eye(d, dtype=torch.float64)
''' + _LDA_TAIL),
    WrongAnswer("lda_probe", "average of per-class covariances instead of the pooled scatter", _LDA_CHECKS + '''
    x = features.double()
    means = torch.stack([x[labels == k].mean(0) for k in range(c)])
    cov = ridge * torch.eye(d, dtype=torch.float64)
    for k in range(c):
        r = x[labels == k] - means[k]
        cov = cov + r.T @ r / max(len(r) - 1, 1) / c
''' + _LDA_TAIL),
    WrongAnswer("lda_probe", "uniform prior log(1/C) instead of log(N_c/N)", _LDA_CHECKS + '''
    x = features.double()
    means = torch.stack([x[labels == k].mean(0) for k in range(c)])
    r = x - means[labels]
    cov = r.T @ r / max(n - c, 1) + ridge * torch.eye(d, dtype=torch.float64)
    w = torch.linalg.solve(cov, means.T)
    bias = -(means.T * w).sum(0) / 2 - math.log(c)
    return torch.cat([w, bias[None]], 0)
'''),
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
    # -- mean_abs_cosine -------------------------------------------------------------------------
    WrongAnswer("mean_abs_cosine", "rows normalised in place", '''
def mean_abs_cosine(a, b):
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1]:
        raise ValueError("bad shapes")
    a, b = a.double(), b.double()
    a /= a.norm(dim=1, keepdim=True)
    b /= b.norm(dim=1, keepdim=True)
    return (a @ b.T).abs().mean().item()
'''),
    WrongAnswer("mean_abs_cosine", "computed in the input dtype", '''
def mean_abs_cosine(a, b):
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1]:
        raise ValueError("bad shapes")
    a = a / a.norm(dim=1, keepdim=True)
    b = b / b.norm(dim=1, keepdim=True)
    return (a @ b.T).abs().mean().item()
'''),
    WrongAnswer("mean_abs_cosine", "only the widths validated (1-D or 3-D inputs slip through)", '''
def mean_abs_cosine(a, b):
    if a.shape[-1] != b.shape[-1]:
        raise ValueError("widths differ")
    a = a.double() / a.double().norm(dim=-1, keepdim=True)
    b = b.double() / b.double().norm(dim=-1, keepdim=True)
    return (a @ b.T).abs().mean().item()
'''),
    WrongAnswer("mean_abs_cosine", "rounded to 4 decimals", _COSINE_HEAD + '''
    cos = (a / a.norm(dim=1, keepdim=True)) @ (b / b.norm(dim=1, keepdim=True)).T
    return round(cos.abs().mean().item(), 4)
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
    ("linear_probe", "least squares on the augmented system [X; sqrt(ridge) I]", '''
def linear_probe(features, labels, ridge=1e-3):
    if features.dim() != 2 or labels.dim() != 1 or len(labels) != len(features):
        raise ValueError("bad shapes")
    if (labels < 0).any() or ridge < 0:
        raise ValueError("bad labels or ridge")
    n, d = features.shape
    x = torch.cat([features, torch.ones(n, 1, dtype=features.dtype)], 1).double()
    c = int(labels.max()) + 1
    y = torch.zeros(n, c, dtype=torch.float64)
    y[torch.arange(n), labels.long()] = 1.0
    x_aug = torch.cat([x, math.sqrt(ridge) * torch.eye(d + 1, dtype=torch.float64)], 0)
    y_aug = torch.cat([y, torch.zeros(d + 1, c, dtype=torch.float64)], 0)
    return torch.linalg.lstsq(x_aug, y_aug, driver="gelsd").solution
'''),
    ("lda_probe", "per-class loop for the means, explicit inverse", '''
def lda_probe(features, labels, ridge=1e-3):
    if features.dim() != 2 or labels.dim() != 1 or labels.shape[0] != features.shape[0]:
        raise ValueError("bad shapes")
    if len(labels) == 0 or labels.min() < 0 or ridge < 0:
        raise ValueError("bad labels or ridge")
    x = features.to(torch.float64)
    n, d = x.shape
    c = int(labels.max()) + 1
    groups = [x[labels == k] for k in range(c)]
    if any(len(g) == 0 for g in groups):
        raise ValueError("empty class")
    if n == c and ridge == 0:
        raise ValueError("ridge must be > 0 with one example per class")
    means = torch.stack([g.mean(0) for g in groups])
    scatter = sum((g - m).T @ (g - m) for g, m in zip(groups, means))
    s_inv = torch.linalg.inv(scatter / max(n - c, 1) + ridge * torch.eye(d, dtype=torch.float64))
    w = s_inv @ means.T
    prior = torch.tensor([math.log(len(g) / n) for g in groups], dtype=torch.float64)
    bias = -0.5 * torch.einsum("cd,de,ce->c", means, s_inv, means) + prior
    return torch.cat([w, bias[None]], 0)
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
    ("mean_abs_cosine", "F.cosine_similarity over broadcast pairs in float64", '''
def mean_abs_cosine(a, b):
    if a.ndim != 2 or b.ndim != 2 or a.shape[-1] != b.shape[-1]:
        raise ValueError("a and b must be (N, d) and (M, d)")
    cos = torch.nn.functional.cosine_similarity(a.double()[:, None, :], b.double()[None, :, :], dim=-1)
    return float(cos.abs().sum() / (a.shape[0] * b.shape[0]))
'''),
]
