"""Plausible wrong answers for notebook 01; each must lose points under the hidden tests."""
from tests.catalogue import WrongAnswer

_SDPA_HEAD = '''
def scaled_dot_product_attention(q, k, v, mask=None):
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError("mask must be bool")
'''

_SELF_HEAD = '''
def self_attention(x, w_q, w_k, w_v, causal=False):
    for w in (w_q, w_k, w_v):
        if w.shape[0] != x.shape[-1]:
            raise ValueError("weights must be (d_model, d_out)")
    t = x.shape[-2]
'''

_PERM_HEAD = '''
def permutation_matrix(perm):
    perm = torch.as_tensor(perm).long()
    t = perm.numel()
'''

_ERROR_HEAD = '''
def max_equivariance_error(fn, x, perm):
    if len(perm) != x.shape[-2]:
        raise ValueError("perm length must match the token axis")
    perm = torch.as_tensor(perm).long()
'''

WRONG_ANSWERS = [
    # -- scaled_dot_product_attention ------------------------------------------------------------
    WrongAnswer("scaled_dot_product_attention", "softmax over the query axis", _SDPA_HEAD + '''
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-2) @ v
''', feedback="query axis"),
    WrongAnswer("scaled_dot_product_attention", "missing 1/sqrt(d_k)", _SDPA_HEAD + '''
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
''', feedback="missing the 1/sqrt(d_k) scaling"),
    WrongAnswer("scaled_dot_product_attention", "inverted mask polarity", _SDPA_HEAD + '''
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
'''),
    WrongAnswer("scaled_dot_product_attention", "masking after the softmax", _SDPA_HEAD + '''
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if mask is not None:
        weights = weights * mask
    return weights @ v
''', feedback="after the softmax"),
    WrongAnswer("scaled_dot_product_attention", "scaling by sqrt(d_v)", _SDPA_HEAD + '''
    scores = q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
''', feedback="sqrt(d_v)"),
    WrongAnswer("scaled_dot_product_attention", "naive softmax that overflows", _SDPA_HEAD + '''
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    e = torch.exp(scores)
    return (e / e.sum(-1, keepdim=True)) @ v
'''),
    WrongAnswer("scaled_dot_product_attention", "always returns float32", _SDPA_HEAD + '''
    q, k, v = q.float(), k.float(), v.float()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
'''),
    # -- self_attention --------------------------------------------------------------------------
    WrongAnswer("self_attention", "mask keeps the future", _SELF_HEAD + '''
    mask = torch.ones(t, t, dtype=torch.bool).triu() if causal else None
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask)
''', feedback="triu instead of tril"),
    WrongAnswer("self_attention", "values taken from x", _SELF_HEAD + '''
    mask = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x, mask)
'''),
    WrongAnswer("self_attention", "keys computed with w_q", _SELF_HEAD + '''
    mask = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    return scaled_dot_product_attention(x @ w_q, x @ w_q, x @ w_v, mask)
''', feedback="keys computed with w_q"),
    WrongAnswer("self_attention", "causal flag ignored", _SELF_HEAD + '''
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)
''', feedback="the mask ignored"),
    WrongAnswer("self_attention", "diagonal masked out", _SELF_HEAD + '''
    mask = torch.ones(t, t, dtype=torch.bool).tril(-1) if causal else None
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask)
'''),
    WrongAnswer("self_attention", "no check of the weights' shapes", '''
def self_attention(x, w_q, w_k, w_v, causal=False):
    t = x.shape[-2]
    mask = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    return scaled_dot_product_attention(x @ w_q[: x.shape[-1]], x @ w_k[: x.shape[-1]], x @ w_v[: x.shape[-1]], mask)
'''),
    # -- permutation_matrix ----------------------------------------------------------------------
    WrongAnswer("permutation_matrix", "transposed matrix", _PERM_HEAD + '''
    if not torch.equal(torch.sort(perm).values, torch.arange(t)):
        raise ValueError("not a permutation")
    p = torch.zeros(t, t)
    p[perm, torch.arange(t)] = 1.0
    return p
''', feedback="the transpose"),
    WrongAnswer("permutation_matrix", "integer dtype", _PERM_HEAD + '''
    if not torch.equal(torch.sort(perm).values, torch.arange(t)):
        raise ValueError("not a permutation")
    return torch.eye(t, dtype=torch.int64)[perm]
'''),
    WrongAnswer("permutation_matrix", "repeated indices accepted", _PERM_HEAD + '''
    if perm.min() < 0 or perm.max() >= t:
        raise ValueError("index out of range")
    return torch.eye(t)[perm]
'''),
    WrongAnswer("permutation_matrix", "out-of-range index raises IndexError", _PERM_HEAD + '''
    if len(set(perm.tolist())) != t:
        raise ValueError("repeated index")
    return torch.eye(t)[perm]
'''),
    WrongAnswer("permutation_matrix", "argsort instead of the permutation", _PERM_HEAD + '''
    if not torch.equal(torch.sort(perm).values, torch.arange(t)):
        raise ValueError("not a permutation")
    return torch.eye(t)[torch.argsort(perm)]
''', feedback="argsort"),
    # -- max_equivariance_error ------------------------------------------------------------------
    WrongAnswer("max_equivariance_error", "signed difference", _ERROR_HEAD + '''
    return (fn(x[..., perm, :]) - fn(x)[..., perm, :]).max().item()
'''),
    WrongAnswer("max_equivariance_error", "mean instead of max", _ERROR_HEAD + '''
    return (fn(x[..., perm, :]) - fn(x)[..., perm, :]).abs().mean().item()
''', feedback="mean instead of max"),
    WrongAnswer("max_equivariance_error", "inverse permutation on one side", _ERROR_HEAD + '''
    return (fn(x[..., perm, :]) - fn(x)[..., torch.argsort(perm), :]).abs().max().item()
''', feedback="inverse permutation"),
    WrongAnswer("max_equivariance_error", "permutes the first axis", _ERROR_HEAD + '''
    return (fn(x[perm]) - fn(x)[perm]).abs().max().item()
'''),
    WrongAnswer("max_equivariance_error", "returns a tensor", _ERROR_HEAD + '''
    return (fn(x[..., perm, :]) - fn(x)[..., perm, :]).abs().max()
'''),
]
