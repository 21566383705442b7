"""Plausible wrong answers for notebook 01; each must lose points under the hidden tests."""
from tests.catalogue import WrongAnswer

COSTS_ONCE = True
"""Every entry fails at most its ``costs`` hidden tests (one unless it says why): one mistake costs once."""

_SDPA_HEAD = '''
def scaled_dot_product_attention(q, k, v, mask=None):
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError("mask must be bool")
'''

_SDPA_CHECKS = '''
def scaled_dot_product_attention(q, k, v, mask=None):
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError("shapes of q, k, v do not match")
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

_ERROR_HEAD = '''
def max_equivariance_error(fn, x, perm):
    if len(perm) != x.shape[-2]:
        raise ValueError("perm length must match the token axis")
    perm = torch.as_tensor(perm).long()
'''

_PERM_HEAD = '''
def permutation_matrix(perm):
    perm = torch.as_tensor(perm).long()
    t = perm.numel()
'''

WRONG_ANSWERS = [
    # -- scaled_dot_product_attention ------------------------------------------------------------
    WrongAnswer("scaled_dot_product_attention", "softmax over the query axis", _SDPA_CHECKS + '''
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.nan_to_num(torch.softmax(scores, dim=-2), nan=0.0) @ v
''', feedback="query axis", core=True),  # the public checks and the d_k test: 7 of 14 points
    WrongAnswer("scaled_dot_product_attention", "missing 1/sqrt(d_k)", _SDPA_CHECKS + '''
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0) @ v
''', feedback="missing the 1/sqrt(d_k) scaling", core=True),  # as the query axis: 7 of 14 points
    WrongAnswer("scaled_dot_product_attention", "inverted mask polarity", _SDPA_CHECKS + '''
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0) @ v
'''),
    WrongAnswer("scaled_dot_product_attention", "masking after the softmax", _SDPA_CHECKS + '''
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if mask is not None:
        weights = weights * mask
    return weights @ v
''', feedback="after the softmax"),
    WrongAnswer("scaled_dot_product_attention", "scaling by sqrt(d_v)", _SDPA_CHECKS + '''
    scores = q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0) @ v
''', feedback="sqrt(d_v)"),
    WrongAnswer("scaled_dot_product_attention", "naive softmax that overflows", _SDPA_CHECKS + '''
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    e = torch.exp(scores)
    return torch.nan_to_num(e / e.sum(-1, keepdim=True), nan=0.0) @ v
'''),
    WrongAnswer("scaled_dot_product_attention", "always returns float32", _SDPA_CHECKS + '''
    q, k, v = q.float(), k.float(), v.float()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0) @ v
'''),
    WrongAnswer("scaled_dot_product_attention", "fully masked row left as NaN", _SDPA_CHECKS + '''
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
''', feedback="left as NaN"),
    WrongAnswer("scaled_dot_product_attention", "masked fill with the dtype's minimum", _SDPA_CHECKS + '''
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) @ v
''', feedback="large finite negative number"),
    # -- self_attention --------------------------------------------------------------------------
    # A core mistake (core=True) costs at least half of the exercise's 16 points: a mask that leaks
    # the future fails the causal public check and test_self_attention_causal_hides_the_future (8);
    # a wrong projection or attention formula fails both public checks and
    # test_self_attention_projections (8).
    WrongAnswer("self_attention", "mask keeps the future", _SELF_HEAD + '''
    mask = torch.ones(t, t, dtype=torch.bool).triu() if causal else None
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask)
''', feedback="triu instead of tril", core=True),
    WrongAnswer("self_attention", "mask leaks the next token (tril(1))", _SELF_HEAD + '''
    mask = torch.ones(t, t, dtype=torch.bool).tril(1) if causal else None
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask)
''', feedback="tril(1)", core=True),
    WrongAnswer("self_attention", "mask applied after the softmax (attention written inline)", _SELF_HEAD + '''
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if causal:
        weights = weights * torch.ones(t, t, dtype=torch.bool).tril()
    return weights @ v
''', feedback="mask applied after the softmax", core=True),
    WrongAnswer("self_attention", "missing 1/sqrt(d_k) (attention written inline)", _SELF_HEAD + '''
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    scores = q @ k.transpose(-2, -1)
    if causal:
        scores = scores.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
''', feedback="missing the 1/sqrt(d_k) scaling", core=True),
    WrongAnswer("self_attention", "softmax over the query axis (attention written inline)", _SELF_HEAD + '''
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        scores = scores.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, dim=-2) @ v
''', feedback="query axis", core=True),
    WrongAnswer("self_attention", "queries and keys swapped", _SELF_HEAD + '''
    mask = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    return scaled_dot_product_attention(x @ w_k, x @ w_q, x @ w_v, mask)
''', feedback="queries and keys swapped", core=True),
    WrongAnswer("self_attention", "projections transposed (x @ w.T, nn.Linear's layout)", '''
def self_attention(x, w_q, w_k, w_v, causal=False):
    for w in (w_q, w_k, w_v):
        if w.shape[-1] != x.shape[-1]:
            raise ValueError("weights must be (d_out, d_model)")
    t = x.shape[-2]
    mask = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    return scaled_dot_product_attention(x @ w_q.T, x @ w_k.T, x @ w_v.T, mask)
''', feedback="projections transposed", core=True, costs=3),
    # a shape error wherever the weights are not square: test_self_attention_projections,
    # test_self_attention_batched_with_different_widths and test_self_attention_over_its_inputs
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
''', feedback="the mask ignored", core=True),
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
    # -- new kinds of mistakes (issue 16): layouts, dtypes, in-place changes, partial validation --
    WrongAnswer("scaled_dot_product_attention", "scales q in place (q /= sqrt(d_k))", '''
def scaled_dot_product_attention(q, k, v, mask=None):
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError("shapes of q, k, v do not match")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError("mask must be bool")
    q /= math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    return weights @ v
''', feedback="changed its input `q` in place", core=True),
    # (the public checks and test_sdpa_over_its_inputs own leaving the inputs unchanged: 7 of 14 points)
    WrongAnswer("scaled_dot_product_attention", "half inputs upcast to float32 and returned as float32", '''
def scaled_dot_product_attention(q, k, v, mask=None):
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError("shapes of q, k, v do not match")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError("mask must be bool")
    if q.dtype in (torch.float16, torch.bfloat16):
        q, k, v = q.float(), k.float(), v.float()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    return weights @ v
'''),
    WrongAnswer("scaled_dot_product_attention", "batch dims flattened with .view (fails on non-contiguous q, k, v)", '''
def scaled_dot_product_attention(q, k, v, mask=None):
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError("shapes of q, k, v do not match")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError("mask must be bool")
    batch = q.shape[:-2]
    q3 = q.view(-1, q.shape[-2], q.shape[-1])
    k3 = k.view(-1, k.shape[-2], k.shape[-1])
    v3 = v.view(-1, v.shape[-2], v.shape[-1])
    scores = torch.bmm(q3, k3.transpose(1, 2)) / math.sqrt(q.shape[-1])
    scores = scores.view(*batch, q.shape[-2], k.shape[-2])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    return (weights.reshape(-1, q.shape[-2], k.shape[-2]) @ v3).view(*batch, q.shape[-2], v.shape[-1])
'''),
    WrongAnswer("scaled_dot_product_attention", "validates only the mask, not the shapes of q, k, v", _SDPA_HEAD + '''
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    return weights @ v
'''),
    WrongAnswer("scaled_dot_product_attention", "rejects only float masks (a uint8 mask is used as an index)", '''
def scaled_dot_product_attention(q, k, v, mask=None):
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError("shapes of q, k, v do not match")
    if mask is not None and mask.is_floating_point():
        raise ValueError("mask must not be a float (additive) mask")
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    return weights @ v
'''),
    WrongAnswer("scaled_dot_product_attention", "fully masked rows detected only for a full-shape mask", '''
def scaled_dot_product_attention(q, k, v, mask=None):
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError("shapes of q, k, v do not match")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError("mask must be bool")
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None and mask.dim() >= 2 and mask.shape[-2] == q.shape[-2] and mask.shape[-1] == k.shape[-2]:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v
'''),
    WrongAnswer("self_attention", "x flattened with .view (fails on a non-contiguous x)", _SELF_HEAD + '''
    flat = x.view(-1, x.shape[-1])
    q = (flat @ w_q).reshape(*x.shape[:-1], -1)
    k = (flat @ w_k).reshape(*x.shape[:-1], -1)
    v = (flat @ w_v).reshape(*x.shape[:-1], -1)
    mask = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    return scaled_dot_product_attention(q, k, v, mask)
'''),
    WrongAnswer("self_attention", "validates only w_q", '''
def self_attention(x, w_q, w_k, w_v, causal=False):
    if w_q.shape[0] != x.shape[-1]:
        raise ValueError("w_q must be (d_model, d_k)")
    t = x.shape[-2]
    mask = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask)
'''),
    WrongAnswer("self_attention", "half inputs projected in float32 and returned as float32", _SELF_HEAD + '''
    if x.dtype in (torch.float16, torch.bfloat16):
        x, w_q, w_k, w_v = x.float(), w_q.float(), w_k.float(), w_v.float()
    mask = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask)
'''),
    WrongAnswer("self_attention", "causal mask sized from x.shape[1] (right only for 3-D x)", _SELF_HEAD + '''
    n = x.shape[1] if x.dim() > 2 else x.shape[0]
    mask = torch.ones(n, n, dtype=torch.bool).tril()[:t, :t] if causal else None
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask)
'''),
    WrongAnswer("max_equivariance_error", "length checked against the first axis of x", '''
def max_equivariance_error(fn, x, perm):
    if len(perm) != x.shape[0]:
        raise ValueError("perm length must match the tokens")
    perm = torch.as_tensor(perm).long()
    return (fn(x[..., perm, :]) - fn(x)[..., perm, :]).abs().max().item()
'''),
    WrongAnswer("max_equivariance_error", "batch dims flattened with .view", _ERROR_HEAD + '''
    flat = x.view(-1, x.shape[-2], x.shape[-1])
    diff = fn(flat[:, perm]) - fn(flat)[:, perm]
    return diff.abs().max().item()
'''),
    WrongAnswer("max_equivariance_error", "permutes x in place to reuse its memory", _ERROR_HEAD + '''
    fx = fn(x)[..., perm, :]
    x[...] = x[..., perm, :].clone()
    return (fn(x) - fx).abs().max().item()
''', feedback="in place"),
]

# Correct answers written differently from the solution; each must get full marks
# (tests/test_correct_variants.py): (exercise, what differs, source).
CORRECT_VARIANTS = [
    ("scaled_dot_product_attention", "softmax computed in float32 and cast back (Llama, Hugging Face eager)", '''
def scaled_dot_product_attention(q, k, v, mask=None):
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError("shapes of q, k, v do not match")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError("mask must be bool")
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    weights = torch.nan_to_num(weights, nan=0.0)
    return weights @ v
'''),
    ("scaled_dot_product_attention", "torch's own fused function after the checks", '''
def scaled_dot_product_attention(q, k, v, mask=None):
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError("shapes of q, k, v do not match")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError("mask must be bool")
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
'''),
    ("scaled_dot_product_attention", "float64 computation cast back to the input dtype", '''
def scaled_dot_product_attention(q, k, v, mask=None):
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("d_k differs")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError("T_k differs")
    if mask is not None and mask.dtype is not torch.bool:
        raise ValueError("mask must be bool")
    scores = torch.einsum("...qd,...kd->...qk", q.double(), k.double()) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=torch.float64))
    weights = torch.softmax(scores, dim=-1)
    weights = torch.where(torch.isnan(weights), torch.zeros_like(weights), weights)
    return (weights @ v.double()).to(q.dtype)
'''),
    ("self_attention", "one fused projection x @ [w_q | w_k | w_v], split afterwards", '''
def self_attention(x, w_q, w_k, w_v, causal=False):
    d = x.shape[-1]
    if w_q.shape[0] != d or w_k.shape[0] != d or w_v.shape[0] != d:
        raise ValueError("weights must have d_model rows")
    qkv = x @ torch.cat([w_q, w_k, w_v], dim=1)
    q, k, v = qkv.split([w_q.shape[1], w_k.shape[1], w_v.shape[1]], dim=-1)
    t = x.shape[-2]
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool)) if causal else None
    return scaled_dot_product_attention(q, k, v, mask=mask)
'''),
    ("max_equivariance_error", "index_select on the token axis, float() of the max", '''
def max_equivariance_error(fn, x, perm):
    perm = torch.as_tensor(perm, dtype=torch.long)
    if perm.numel() != x.size(-2):
        raise ValueError("perm length must match the token axis")
    a = fn(x.index_select(-2, perm))
    b = fn(x).index_select(-2, perm)
    return float(torch.amax(torch.abs(a - b)))
'''),
]


_SYMMETRY_LOOP = """
def symmetry_of(fn, num_tokens, d_model):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(num_tokens, d_model, generator=gen, dtype=torch.float64)
    y = fn(x)
    invariant = equivariant = True
    for p in perms(num_tokens, gen):
        moved = fn(x[p])
        invariant &= bool(torch.allclose(moved, y, rtol=TOL, atol=TOL))
        equivariant &= y.dim() == 2 and y.shape[0] == num_tokens and bool(torch.allclose(moved, y[p], rtol=TOL, atol=TOL))
    return "invariant" if invariant else "equivariant" if equivariant else "neither"
"""

WRONG_ANSWERS += [
    # A degenerate detector: it calls every hidden function equivariant, so it fails the test of
    # each function that is not (five of the six tests), as a detector that tests nothing should.
    WrongAnswer("symmetry_of", "a detector that accepts everything", """
def symmetry_of(fn, num_tokens, d_model):
    return "equivariant"
""", costs=5, shallow=True),
    WrongAnswer("symmetry_of", "only the reversal of the sequence tried", """
TOL = 1e-8
def perms(t, gen):
    return [torch.arange(t - 1, -1, -1)]
""" + _SYMMETRY_LOOP, costs=2),  # the reversal of 9 tokens is even: both parity tests
    WrongAnswer("symmetry_of", "only a swap of the first two tokens tried", """
TOL = 1e-8
def perms(t, gen):
    p = torch.arange(t)
    p[0], p[1] = 1, 0
    return [p]
""" + _SYMMETRY_LOOP),
    # The released cells' check, one permutation per function: a random one (even for 9 tokens with
    # this generator, as half of all permutations are) or a cyclic shift (even for 9 tokens).
    WrongAnswer("symmetry_of", "shallow: one random permutation, as the released cells try", """
TOL = 1e-8
def perms(t, gen):
    return [torch.randperm(t, generator=torch.Generator().manual_seed(0))]
""" + _SYMMETRY_LOOP, costs=3, min_lost=0.5),
    WrongAnswer("symmetry_of", "shallow: one cyclic shift of the tokens", """
TOL = 1e-8
def perms(t, gen):
    return [torch.roll(torch.arange(t), 1)]
""" + _SYMMETRY_LOOP, costs=3, min_lost=0.5),
    WrongAnswer("symmetry_of", "a tolerance so loose (1e-3) that small position effects pass", """
TOL = 1e-3
def perms(t, gen):
    return [torch.randperm(t, generator=gen) for _ in range(6)]
""" + _SYMMETRY_LOOP),
    WrongAnswer("symmetry_of", "invariance decided by the output's shape (one vector means invariant)", """
def symmetry_of(fn, num_tokens, d_model):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(num_tokens, d_model, generator=gen, dtype=torch.float64)
    y = fn(x)
    if y.dim() == 1:
        return "invariant"
    for _ in range(6):
        p = torch.randperm(num_tokens, generator=gen)
        if not torch.allclose(fn(x[p]), y[p], rtol=1e-8, atol=1e-8):
            return "neither"
    return "equivariant"
""", costs=2),  # the two pooled functions that are neither: the parity one and a drawn one
]

CORRECT_VARIANTS += [
    ("symmetry_of", "random permutations on several inputs, the gap measured by max_equivariance_error", """
def symmetry_of(fn, num_tokens, d_model):
    gen = torch.Generator().manual_seed(1)
    inv_gap = eq_gap = 0.0
    sequence = True
    for _ in range(3):
        x = torch.randn(num_tokens, d_model, generator=gen, dtype=torch.float64)
        y = fn(x)
        for _ in range(8):
            p = torch.randperm(num_tokens, generator=gen)
            inv_gap = max(inv_gap, (fn(x[p]) - y).abs().max().item())
            if y.dim() == 2 and y.shape[0] == num_tokens:
                eq_gap = max(eq_gap, max_equivariance_error(fn, x, p))
            else:
                sequence = False
    if inv_gap < 1e-9:
        return "invariant"
    return "equivariant" if sequence and eq_gap < 1e-9 else "neither"
"""),
    ("symmetry_of", "every cyclic shift and every adjacent swap, one input", """
def symmetry_of(fn, num_tokens, d_model):
    x = torch.linspace(-1.3, 1.7, num_tokens * d_model, dtype=torch.float64).reshape(num_tokens, d_model) ** 3
    x = x + 0.1 * torch.sin(torch.arange(num_tokens * d_model, dtype=torch.float64) * 7.1).reshape(num_tokens, d_model)
    y = fn(x)
    perms = [torch.roll(torch.arange(num_tokens), s) for s in range(1, num_tokens)]
    for i in range(num_tokens - 1):
        p = torch.arange(num_tokens)
        p[[i, i + 1]] = p[[i + 1, i]]
        perms.append(p)
    same = all(torch.allclose(fn(x[p]), y, atol=1e-9, rtol=0) for p in perms)
    if same:
        return "invariant"
    if y.ndim == 2 and len(y) == num_tokens and all(torch.allclose(fn(x[p]), y[p], atol=1e-9, rtol=0) for p in perms):
        return "equivariant"
    return "neither"
"""),
]

WRONG_ANSWERS += [
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
    WrongAnswer("permutation_matrix", "checks only the upper bound (negative indices wrap around)", _PERM_HEAD + '''
    if perm.max() >= t or len(set(perm.tolist())) != t:
        raise ValueError("not a permutation")
    p = torch.zeros(t, t)
    p[torch.arange(t), perm] = 1.0
    return p
'''),
    WrongAnswer("permutation_matrix", "a 2-D perm flattened instead of rejected", '''
def permutation_matrix(perm):
    perm = torch.as_tensor(perm).long().flatten()
    t = perm.numel()
    if not torch.equal(torch.sort(perm).values, torch.arange(t)):
        raise ValueError("not a permutation")
    return torch.eye(t)[perm]
'''),
]

CORRECT_VARIANTS += [
    ("permutation_matrix", "rows of the identity, validated with a set", '''
def permutation_matrix(perm):
    perm = torch.as_tensor(perm)
    if perm.dim() != 1:
        raise ValueError("perm must be 1-D")
    values = perm.tolist()
    if sorted(values) != list(range(len(values))):
        raise ValueError("not a permutation")
    return torch.eye(len(values))[perm.long()]
'''),
]

# -- unchanged_outputs (interpret) and position_probe_r2 (measure) ------------------------------
_UNCHANGED_HEAD = '''
def unchanged_outputs(perm):
    perm = [int(p) for p in torch.as_tensor(perm).reshape(-1)]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError("not a permutation")
'''

_PROBE_HEAD = '''
def position_probe_r2(outputs):
    if outputs.dim() != 3 or outputs.shape[0] < 2 or outputs.shape[1] < 2:
        raise ValueError("outputs must be (n, T, d) with n >= 2 and T >= 2")
    y = outputs.double()
    n, t_len, d = y.shape
    t = torch.arange(t_len, dtype=torch.float64).repeat(n)
'''


def _probe_fit(features):
    """A probe body on the given features (an expression of y, (n, T, F)), cross-validated over 10 folds
    of whole sequences (a sound protocol: what differs is the features)."""
    return _PROBE_HEAD + f'''    f = ({features})
    f = torch.cat([f, torch.ones(n, t_len, 1, dtype=f.dtype)], -1)
    tt = t.reshape(n, t_len)
    sq = 0.0
    for part in torch.arange(n).chunk(min(10, n)):
        keep = torch.ones(n, dtype=torch.bool)
        keep[part] = False
        w = torch.linalg.lstsq(f[keep].reshape(-1, f.shape[-1]), tt[keep].reshape(-1, 1)).solution[:, 0]
        sq += ((f[part].reshape(-1, f.shape[-1]) @ w - tt[part].reshape(-1)) ** 2).sum().item()
    return 1 - sq / ((t - t.mean()) ** 2).sum().item()
'''


WRONG_ANSWERS += [
    # Shallow answers: each loses at least half of the exercise's points (min_lost=0.5).
    WrongAnswer("unchanged_outputs", "shallow: a constant (no position is ever safe)", _UNCHANGED_HEAD + '''
    return []
''', costs=5, min_lost=0.5),  # every test whose answer is not empty
    WrongAnswer("unchanged_outputs", "shallow: the notebook's own case (the last token, if it stays)", _UNCHANGED_HEAD + '''
    return [len(perm) - 1] if perm[-1] == len(perm) - 1 else []
''', costs=5, min_lost=0.5),
    WrongAnswer("unchanged_outputs", "shallow: the public case hard-coded", _UNCHANGED_HEAD + '''
    return [3, 4] if perm == [2, 0, 1, 3, 4] else []
''', costs=4, min_lost=0.5),
    WrongAnswer("unchanged_outputs", "every token that stays in place (a moved key is ignored)", _UNCHANGED_HEAD + '''
    return [t for t in range(len(perm)) if perm[t] == t]
''', costs=3, feedback="a moved key also changes the output"),
    WrongAnswer("unchanged_outputs", "the prefix kept as a set, the query's own move ignored", _UNCHANGED_HEAD + '''
    return [t for t in range(len(perm)) if sorted(perm[: t + 1]) == list(range(t + 1))]
''', costs=5, feedback="the query may have moved"),
    WrongAnswer("unchanged_outputs", "a repeated index accepted", '''
def unchanged_outputs(perm):
    perm = [int(p) for p in torch.as_tensor(perm).reshape(-1)]
    return [t for t in range(len(perm)) if perm[t] == t and sorted(perm[:t]) == list(range(t))]
'''),
    # position_probe_r2: the shallow answers first.
    WrongAnswer("position_probe_r2", "shallow: a constant (the R^2 of 0.50 an earlier draw gave)", _PROBE_HEAD + '''
    return 0.5
''', costs=5, min_lost=0.5),
    WrongAnswer("position_probe_r2", "shallow: the public case hard-coded", _PROBE_HEAD + '''
    return 0.56 if (t_len, d) == (12, 8) else 0.0
''', costs=5, min_lost=0.5),
    WrongAnswer("position_probe_r2", "shallow: a read-out of y_t alone (the spread is invisible to it)",
                _probe_fit("y"), costs=4, min_lost=0.5, feedback="without the squares"),
    # Scored on the rows it was fitted on: right with many rows per feature, 0.1 or more too high with
    # few (the two few-rows tests).
    WrongAnswer("position_probe_r2", "shallow: fit and score on every row (an in-sample R^2)", _PROBE_HEAD + '''
    f = torch.cat([y, y ** 2], -1).reshape(n * t_len, -1)
    f = torch.cat([f, torch.ones(len(f), 1, dtype=f.dtype)], 1)
    w = torch.linalg.lstsq(f, t[:, None]).solution[:, 0]
    return 1 - ((f @ w - t) ** 2).sum().item() / ((t - t.mean()) ** 2).sum().item()
''', costs=2, min_lost=0.5),
    WrongAnswer("position_probe_r2", "only the squares, not y_t itself", _probe_fit("y ** 2"), costs=4),
    WrongAnswer("position_probe_r2", "the squared norm |y_t|^2 only, one feature", _probe_fit("(y ** 2).sum(-1, keepdim=True)"),
                costs=5),
    WrongAnswer("position_probe_r2", "positions read from the wrong axis (the sequence index)", _PROBE_HEAD + '''
    f = torch.cat([y, y ** 2, torch.ones(n, t_len, 1, dtype=y.dtype)], -1).reshape(n * t_len, -1)
    t = torch.arange(n, dtype=torch.float64).repeat_interleave(t_len)
    w = torch.linalg.lstsq(f, t[:, None]).solution[:, 0]
    return 1 - ((f @ w - t) ** 2).sum().item() / ((t - t.mean()) ** 2).sum().item()
''', costs=6),
    WrongAnswer("position_probe_r2", "no ValueError for a (n, d) table", '''
def position_probe_r2(outputs):
    y = outputs.double()
    n, t_len, d = y.shape if y.dim() == 3 else (y.shape[0], 1, y.shape[1])
    y = y.reshape(n, t_len, d)
    t = torch.arange(t_len, dtype=torch.float64).repeat(n)
''' + _probe_fit("torch.cat([y, y ** 2], -1)").split("t = torch.arange(t_len, dtype=torch.float64).repeat(n)\n", 1)[1].replace(
        "return 1 - sq / ((t - t.mean()) ** 2).sum().item()",
        "return 1 - sq / max(((t - t.mean()) ** 2).sum().item(), 1e-12)")),
]

CORRECT_VARIANTS += [
    ("unchanged_outputs", "the positions before the first moved one, and those after the last whose prefix is closed", '''
def unchanged_outputs(perm):
    perm = torch.as_tensor(perm).reshape(-1).tolist()
    if sorted(perm) != list(range(len(perm))):
        raise ValueError("not a permutation")
    out, top = [], -1
    for t, p in enumerate(perm):
        top = max(top, p)
        if p == t and top == t:
            out.append(t)
    return out
'''),
    # A protocol that differs from the solution's ten folds: it meets the tolerance.
    ("position_probe_r2", "standardised features, ridge, 5-fold cross-validation over sequences", _PROBE_HEAD + '''
    f = torch.cat([y, y ** 2], -1)                                      # (n, T, 2d)
    folds = torch.arange(n) % 5
    sq = 0.0
    for k in range(5):
        tr, te = folds != k, folds == k
        x_tr, t_tr = f[tr].reshape(-1, 2 * d), torch.arange(t_len, dtype=torch.float64).repeat(int(tr.sum()))
        mu, sd = x_tr.mean(0), x_tr.std(0) + 1e-12
        z = (x_tr - mu) / sd
        w = torch.linalg.solve(z.T @ z + 1.0 * torch.eye(2 * d, dtype=z.dtype), z.T @ (t_tr - t_tr.mean()))
        x_te = (f[te].reshape(-1, 2 * d) - mu) / sd
        t_te = torch.arange(t_len, dtype=torch.float64).repeat(int(te.sum()))
        sq += ((x_te @ w + t_tr.mean() - t_te) ** 2).sum().item()
    return 1 - sq / ((t - t.mean()) ** 2).sum().item()
'''),
]

# Shallow answers: a detector that reads the function it is handed instead of calling it. The
# function is a black box (it runs in the grader), so each reads nothing and scores at most what a
# constant answer does. They fail every test they cannot pass by luck (their cost is a count, not a
# property).
WRONG_ANSWERS += [
    WrongAnswer("symmetry_of", "a constant verdict ('neither')", """
def symmetry_of(fn, num_tokens, d_model):
    return "neither"
""", costs=6, shallow=True),
    WrongAnswer("symmetry_of", "a name-to-label table of the hidden functions", """
_LABELS = {"plain_attention": "equivariant", "tokenwise_mlp": "equivariant", "attention_mix": "equivariant",
           "mean_pooling": "invariant", "query_pooling": "invariant", "broadcast_mean": "invariant"}
def symmetry_of(fn, num_tokens, d_model):
    target = getattr(fn, "func", fn)
    return _LABELS.get(getattr(target, "__name__", ""), "neither")
""", costs=6, shallow=True),
    WrongAnswer("symmetry_of", "the label read from the function's docstring", """
def symmetry_of(fn, num_tokens, d_model):
    doc = getattr(getattr(fn, "func", fn), "__doc__", None) or ""
    for label in ("equivariant", "invariant", "neither"):
        if label in doc.split(":")[-1]:
            return label
    return "equivariant"
""", costs=6, shallow=True),
    WrongAnswer("symmetry_of", "the label guessed from repr, dir, __dict__ and type", """
def symmetry_of(fn, num_tokens, d_model):
    text = " ".join([repr(fn), str(dir(fn)), str(getattr(fn, "__dict__", "")), str(type(fn))]).lower()
    if "pool" in text or "mean" in text:
        return "invariant"
    if "causal" in text or "bias" in text or "scale" in text:
        return "neither"
    return "equivariant"
""", costs=6, shallow=True),
]
