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
