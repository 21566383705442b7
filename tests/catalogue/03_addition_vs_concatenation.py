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

_PAD_HEAD = '''
def concat_as_addition(token_vectors, pos_vectors):
    if token_vectors.shape[:-1] != pos_vectors.shape[:-1]:
        raise ValueError("leading shapes differ")
    e, p = token_vectors, pos_vectors
    d_tok, d_pos = e.shape[-1], p.shape[-1]
'''

_PROBE_HEAD = '''
def linear_probe(features, labels, ridge=1e-3):
    if features.dim() != 2 or labels.shape[0] != features.shape[0]:
        raise ValueError("bad shapes")
    n = features.shape[0]
'''

_ACCURACY_HEAD = '''
def probe_accuracy(features, labels, weights):
    if weights.shape[0] != features.shape[1] + 1 or labels.shape[0] != features.shape[0]:
        raise ValueError("bad shapes")
    x = features.double()
    w = weights.double()
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
    # -- concat_as_addition ----------------------------------------------------------------------
    WrongAnswer("concat_as_addition", "zeros on the wrong side", _PAD_HEAD + '''
    return (torch.nn.functional.pad(e, (d_pos, 0)), torch.nn.functional.pad(p, (0, d_tok)))
''', feedback="zeros on the wrong side"),
    WrongAnswer("concat_as_addition", "tuple in the wrong order", _PAD_HEAD + '''
    return (torch.nn.functional.pad(p, (d_tok, 0)), torch.nn.functional.pad(e, (0, d_pos)))
''', feedback="the tuple in the wrong order"),
    WrongAnswer("concat_as_addition", "padding by the vector's own width", _PAD_HEAD + '''
    return (torch.nn.functional.pad(e, (0, d_tok)), torch.nn.functional.pad(p, (d_pos, 0)))
'''),
    WrongAnswer("concat_as_addition", "the concatenation and zeros", _PAD_HEAD + '''
    cat = torch.cat([e, p], dim=-1)
    return (cat, torch.zeros_like(cat))
'''),
    WrongAnswer("concat_as_addition", "no check of the leading shapes", '''
def concat_as_addition(token_vectors, pos_vectors):
    e, p = token_vectors, pos_vectors
    d_tok, d_pos = e.shape[-1], p.shape[-1]
    return (torch.nn.functional.pad(e, (0, d_pos)), torch.nn.functional.pad(p, (d_tok, 0)))
'''),
    WrongAnswer("concat_as_addition", "float64 zeros promote the dtype", _PAD_HEAD + '''
    zeros_e = torch.zeros(*e.shape[:-1], d_pos, dtype=torch.float64)
    zeros_p = torch.zeros(*p.shape[:-1], d_tok, dtype=torch.float64)
    return (torch.cat([e, zeros_e], -1), torch.cat([zeros_p, p], -1))
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
    # -- probe_accuracy --------------------------------------------------------------------------
    WrongAnswer("probe_accuracy", "bias row ignored", _ACCURACY_HEAD + '''
    return ((x @ w[:-1]).argmax(1) == labels).double().mean().item()
''', feedback="bias row ignored"),
    WrongAnswer("probe_accuracy", "bias from the first row", _ACCURACY_HEAD + '''
    return ((x @ w[1:] + w[0]).argmax(1) == labels).double().mean().item()
''', feedback="first row"),
    WrongAnswer("probe_accuracy", "error rate", _ACCURACY_HEAD + '''
    return ((x @ w[:-1] + w[-1]).argmax(1) != labels).double().mean().item()
''', feedback="error rate"),
    WrongAnswer("probe_accuracy", "count instead of fraction", _ACCURACY_HEAD + '''
    return float(((x @ w[:-1] + w[-1]).argmax(1) == labels).sum())
''', feedback="number of correct rows"),
    WrongAnswer("probe_accuracy", "returns a tensor", _ACCURACY_HEAD + '''
    return ((x @ w[:-1] + w[-1]).argmax(1) == labels).double().mean()
'''),
    WrongAnswer("probe_accuracy", "no check of the weights' rows", '''
def probe_accuracy(features, labels, weights):
    x = features.double()
    w = weights.double()
    return ((x @ w[: x.shape[1]] + w[-1]).argmax(1) == labels).double().mean().item()
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
