"""Plausible wrong answers for notebook 04 (RoPE and ALiBi); each must lose points under the hidden tests."""
from tests.catalogue import WrongAnswer

COSTS_ONCE = True
"""Every entry fails at most `costs` hidden tests of its exercise (one unless its comment says why)."""

_INV_CHECK = '''
def rope_inv_freq(head_dim, base=10000.0):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError("head_dim must be even")
'''
_BASE_CHECK = '''    if base <= 0:
        raise ValueError("base must be positive")
'''
_INV_HEAD = _INV_CHECK + _BASE_CHECK

_MATRIX_HEAD = '''
def rope_rotation_matrix(position, head_dim, base=10000.0, interleaved=True):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError("head_dim must be even")
    if base <= 0:
        raise ValueError("base must be positive")
    half = head_dim // 2
    j = torch.arange(half, dtype=torch.float64)
'''

_MATRIX_TAIL = '''
    cos, sin = angles.cos(), angles.sin()
    if interleaved:
        first, second = 2 * torch.arange(half), 2 * torch.arange(half) + 1
    else:
        first, second = torch.arange(half), torch.arange(half) + half
    r = torch.zeros(head_dim, head_dim, dtype=torch.float64)
    r[first, first], r[first, second] = cos, -sin
    r[second, first], r[second, second] = sin, cos
    return r.float()
'''

_COS_SIN_0D_CHECK = '''
def rope_cos_sin(position_ids, inv_freq, attention_factor=1.0):
    position_ids = torch.as_tensor(position_ids)
    if position_ids.dim() == 0:
        raise ValueError("position_ids needs a token axis")
'''
_COS_SIN_HEAD = _COS_SIN_0D_CHECK + '''    if position_ids.dtype == torch.bool or position_ids.is_complex():
        raise ValueError("positions must be real")
    if torch.as_tensor(inv_freq).dim() != 1:
        raise ValueError("inv_freq must be 1-D")
'''

_APPLY_HEAD = '''
def apply_rope(x, cos, sin, interleaved=False):
    if not x.is_floating_point():
        raise ValueError("x must be floating point")
    d = x.shape[-1]
    if d % 2:
        raise ValueError("head_dim must be even")
    if cos.shape != sin.shape:
        raise ValueError("cos and sin differ in shape")
    half = d // 2
    if cos.dim() < 2 or cos.shape[-1] != half:
        raise ValueError("cos/sin must be half-width")
    if cos.shape[-2] not in (1, x.shape[-2]):
        raise ValueError("cos/sin have another T")
    if cos.dim() == x.dim() - 1:
        cos, sin = cos.unsqueeze(-3), sin.unsqueeze(-3)
    x_lead, table_lead = x.shape[:-2], cos.shape[:-2]
    if len(table_lead) > len(x_lead) or any(t not in (1, n) for t, n in zip(reversed(table_lead), reversed(x_lead))):
        raise ValueError("cos/sin do not broadcast to x")
    dt = torch.promote_types(torch.promote_types(x.dtype, cos.dtype), torch.float32)
'''

_PERM_HEAD = '''
def layout_permutation(head_dim):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError("head_dim must be even")
'''

_SLOPES_POSITIVE_ONLY = '''
def alibi_slopes(num_heads):
    if num_heads < 1:
        raise ValueError("num_heads must be positive")
'''
_SLOPES_HEAD = '''
def alibi_slopes(num_heads):
    if isinstance(num_heads, bool) or int(num_heads) != num_heads or num_heads < 1:
        raise ValueError("num_heads must be a positive integer")
'''

_BIAS_HEAD = '''
def alibi_bias(num_heads, seq_len):
    if isinstance(seq_len, bool) or int(seq_len) != seq_len or seq_len < 1:
        raise ValueError("seq_len must be a positive integer")
    slopes = alibi_slopes(num_heads)
    i = torch.arange(seq_len)[:, None]
    j = torch.arange(seq_len)[None, :]
'''

_SPREAD_HEAD = '''
def diagonal_spread(scores):
    if scores.dim() != 2 or scores.numel() == 0 or not scores.is_floating_point():
        raise ValueError("scores must be a real 2-D grid")
    g = scores.double()
    rows, cols = g.shape
'''

_COST_HEAD = '''
def rope_cost(batch, heads, seq_len, head_dim, method, bytes_per_element=4):
    if method not in ("matrix", "elementwise"):
        raise ValueError("unknown method")
    for v in (batch, heads, seq_len, head_dim, bytes_per_element):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError("sizes must be positive integers")
    if head_dim % 2:
        raise ValueError("head_dim must be even")
    n = batch * heads * seq_len * head_dim
'''

WRONG_ANSWERS = [
    # -- rope_inv_freq ---------------------------------------------------------------------------
    WrongAnswer("rope_inv_freq", "exponent j/d instead of 2j/d", _INV_HEAD + '''
    j = torch.arange(head_dim // 2, dtype=torch.float64)
    return (base ** (-j / head_dim)).float()
''', feedback="exponent -j/d instead of -2j/d"),
    WrongAnswer("rope_inv_freq", "pairs counted from 1", _INV_HEAD + '''
    j = torch.arange(1, head_dim // 2 + 1, dtype=torch.float64)
    return (base ** (-2 * j / head_dim)).float()
''', feedback="counts pairs from 1"),
    WrongAnswer("rope_inv_freq", "positive exponent", _INV_HEAD + '''
    j = torch.arange(head_dim // 2, dtype=torch.float64)
    return (base ** (2 * j / head_dim)).float()
''', feedback="positive exponent"),
    WrongAnswer("rope_inv_freq", "one frequency per dimension", _INV_HEAD + '''
    i = torch.arange(head_dim, dtype=torch.float64)
    return (base ** (-i / head_dim)).float()
''', feedback="one frequency per dimension"),
    WrongAnswer("rope_inv_freq", "returns float64", _INV_HEAD + '''
    j = torch.arange(head_dim // 2, dtype=torch.float64)
    return base ** (-2 * j / head_dim)
''', feedback="dtype"),
    WrongAnswer("rope_inv_freq", "no check for odd head_dim", '''
def rope_inv_freq(head_dim, base=10000.0):
    j = torch.arange(head_dim // 2, dtype=torch.float64)
    return (base ** (-2 * j / head_dim)).float()
''', feedback="should raise ValueError"),
    # -- rope_rotation_matrix --------------------------------------------------------------------
    WrongAnswer("rope_rotation_matrix", "sign of sin flipped (transpose)", _MATRIX_HEAD + '''
    angles = -float(position) * base ** (-2 * j / head_dim)
''' + _MATRIX_TAIL, feedback="sign of sin flipped", min_lost=0.5),
    WrongAnswer("rope_rotation_matrix", "layout swapped", _MATRIX_HEAD + '''
    angles = float(position) * base ** (-2 * j / head_dim)
    interleaved = not interleaved
''' + _MATRIX_TAIL, feedback="layout swapped", min_lost=0.5),
    WrongAnswer("rope_rotation_matrix", "exponent j/d", _MATRIX_HEAD + '''
    angles = float(position) * base ** (-j / head_dim)
''' + _MATRIX_TAIL, feedback="exponent -j/d"),
    WrongAnswer("rope_rotation_matrix", "position off by one", _MATRIX_HEAD + '''
    angles = float(position + 1) * base ** (-2 * j / head_dim)
''' + _MATRIX_TAIL, feedback="position off by one", min_lost=0.5),
    WrongAnswer("rope_rotation_matrix", "default layout half-split (interleaved=False)",
                _MATRIX_HEAD.replace("interleaved=True", "interleaved=False") + '''
    angles = float(position) * base ** (-2 * j / head_dim)
''' + _MATRIX_TAIL, feedback="default interleaved=False"),
    WrongAnswer("rope_rotation_matrix", "base ignored", _MATRIX_HEAD + '''
    angles = float(position) * 10000.0 ** (-2 * j / head_dim)
''' + _MATRIX_TAIL),
    # -- rope_cos_sin ----------------------------------------------------------------------------
    WrongAnswer("rope_cos_sin", "full-width tables (Hugging Face style)", _COS_SIN_HEAD + '''
    freqs = position_ids.float()[..., None] * torch.as_tensor(inv_freq).float()
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * attention_factor, emb.sin() * attention_factor
''', feedback="full-width tables"),
    WrongAnswer("rope_cos_sin", "positions off by one", _COS_SIN_HEAD + '''
    angles = (position_ids.float()[..., None] + 1) * torch.as_tensor(inv_freq).float()
    return angles.cos() * attention_factor, angles.sin() * attention_factor
''', feedback="positions off by one", min_lost=0.5),
    WrongAnswer("rope_cos_sin", "cos and sin swapped", _COS_SIN_HEAD + '''
    angles = position_ids.float()[..., None] * torch.as_tensor(inv_freq).float()
    return angles.sin() * attention_factor, angles.cos() * attention_factor
''', feedback="cos and sin swapped"),
    WrongAnswer("rope_cos_sin", "sign of sin flipped", _COS_SIN_HEAD + '''
    angles = position_ids.float()[..., None] * torch.as_tensor(inv_freq).float()
    return angles.cos() * attention_factor, -angles.sin() * attention_factor
''', feedback="sign of sin flipped", min_lost=0.5),
    WrongAnswer("rope_cos_sin", "attention_factor scales the angles", _COS_SIN_HEAD + '''
    angles = position_ids.float()[..., None] * attention_factor * torch.as_tensor(inv_freq).float()
    return angles.cos(), angles.sin()
''', feedback="multiplies the angles"),
    WrongAnswer("rope_cos_sin", "attention_factor on cos only", _COS_SIN_HEAD + '''
    angles = position_ids.float()[..., None] * torch.as_tensor(inv_freq).float()
    return angles.cos() * attention_factor, angles.sin()
''', feedback="attention_factor applied to cos only"),
    WrongAnswer("rope_cos_sin", "tables in float64", _COS_SIN_HEAD + '''
    angles = position_ids.double()[..., None] * torch.as_tensor(inv_freq).double()
    return angles.cos() * attention_factor, angles.sin() * attention_factor
''', feedback="dtype"),
    # -- apply_rope ------------------------------------------------------------------------------
    WrongAnswer("apply_rope", "sign of sin flipped", _APPLY_HEAD + '''
    xf, c, s = x.to(dt), cos.to(dt), -sin.to(dt)
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = xf[..., :half], xf[..., half:]
        out = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return out.to(x.dtype)
''', feedback="sign of sin flipped", min_lost=0.5),
    WrongAnswer("apply_rope", "layout swapped", _APPLY_HEAD + '''
    xf, c, s = x.to(dt), cos.to(dt), sin.to(dt)
    if not interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = xf[..., :half], xf[..., half:]
        out = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return out.to(x.dtype)
''', feedback="layout swapped", min_lost=0.5),
    WrongAnswer("apply_rope", "rotate_half without the minus sign", _APPLY_HEAD + '''
    xf = x.to(dt)
    c, s = torch.cat((cos, cos), -1).to(dt), torch.cat((sin, sin), -1).to(dt)
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)
    rotated = torch.cat((xf[..., half:], xf[..., :half]), dim=-1)
    return (xf * c + rotated * s).to(x.dtype)
''', feedback="without the minus sign"),
    WrongAnswer("apply_rope", "tables repeated in the interleaved pattern for rotate_half", _APPLY_HEAD + '''
    xf = x.to(dt)
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)
    c, s = cos.repeat_interleave(2, -1).to(dt), sin.repeat_interleave(2, -1).to(dt)
    rotated = torch.cat((-xf[..., half:], xf[..., :half]), dim=-1)
    return (xf * c + rotated * s).to(x.dtype)
''', feedback="repeated as (c0, c0, c1, c1, ...)"),
    WrongAnswer("apply_rope", "arithmetic in bfloat16", _APPLY_HEAD + '''
    c, s = cos.to(x.dtype), sin.to(x.dtype)
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    a, b = x[..., :half], x[..., half:]
    return torch.cat((a * c - b * s, a * s + b * c), dim=-1)
''', feedback="arithmetic done in bfloat16"),
    WrongAnswer("apply_rope", "cos and sin swapped", _APPLY_HEAD + '''
    xf, c, s = x.to(dt), sin.to(dt), cos.to(dt)
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = xf[..., :half], xf[..., half:]
        out = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return out.to(x.dtype)
''', feedback="cos and sin swapped"),
    WrongAnswer("apply_rope", "tables not broadcast over heads",
                _APPLY_HEAD.replace('''    if cos.dim() == x.dim() - 1:
        cos, sin = cos.unsqueeze(-3), sin.unsqueeze(-3)
''', "") + '''
    xf, c, s = x.to(dt), cos.to(dt), sin.to(dt)
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = xf[..., :half], xf[..., half:]
        out = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return out.to(x.dtype)
'''),
    # -- layout_permutation ----------------------------------------------------------------------
    WrongAnswer("layout_permutation", "the inverse permutation", _PERM_HEAD + '''
    return torch.arange(head_dim).view(2, head_dim // 2).T.flatten()
''', feedback="the inverse permutation"),
    WrongAnswer("layout_permutation", "the identity", _PERM_HEAD + '''
    return torch.arange(head_dim)
''', feedback="the identity"),
    WrongAnswer("layout_permutation", "odd dimensions first", _PERM_HEAD + '''
    return torch.cat((torch.arange(1, head_dim, 2), torch.arange(0, head_dim, 2)))
''', feedback="odd dimensions first"),
    WrongAnswer("layout_permutation", "float dtype", _PERM_HEAD + '''
    return torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2))).float()
''', feedback="dtype"),
    WrongAnswer("layout_permutation", "no check for odd head_dim", '''
def layout_permutation(head_dim):
    return torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))
''', feedback="should raise ValueError"),
    # -- alibi_slopes ----------------------------------------------------------------------------
    WrongAnswer("alibi_slopes", "naive formula for every head count", _SLOPES_HEAD + '''
    h = torch.arange(1, num_heads + 1, dtype=torch.float64)
    return (2.0 ** (-8.0 * h / num_heads)).float()
''', feedback="the naive formula"),
    WrongAnswer("alibi_slopes", "slopes start at 2^0", _SLOPES_HEAD + '''
    p = 1 << (num_heads.bit_length() - 1)
    pow2 = lambda n: [2.0 ** (-8.0 * h / n) for h in range(n)]
    return torch.tensor(pow2(p) + pow2(2 * p)[0::2][: num_heads - p], dtype=torch.float32)
''', feedback="slopes start at 2^0"),
    WrongAnswer("alibi_slopes", "reverse order", _SLOPES_HEAD + '''
    p = 1 << (num_heads.bit_length() - 1)
    pow2 = lambda n: [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]
    return torch.tensor((pow2(p) + pow2(2 * p)[0::2][: num_heads - p])[::-1], dtype=torch.float32)
''', feedback="reverse order"),
    WrongAnswer("alibi_slopes", "fills with the odd slopes of 2p heads", _SLOPES_HEAD + '''
    p = 1 << (num_heads.bit_length() - 1)
    pow2 = lambda n: [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]
    return torch.tensor(pow2(p) + pow2(2 * p)[1::2][: num_heads - p], dtype=torch.float32)
'''),
    WrongAnswer("alibi_slopes", "rounds up to the next power of two and truncates", _SLOPES_HEAD + '''
    n = 1 << (num_heads - 1).bit_length()
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / n) for h in range(num_heads)], dtype=torch.float32)
'''),
    # -- alibi_bias ------------------------------------------------------------------------------
    WrongAnswer("alibi_bias", "upper triangle 0 instead of -inf", _BIAS_HEAD + '''
    bias = slopes[:, None, None] * (j - i).float()
    return bias.masked_fill(j > i, 0.0)
''', feedback="0 instead of -inf"),
    WrongAnswer("alibi_bias", "slope sign flipped", _BIAS_HEAD + '''
    bias = slopes[:, None, None] * (i - j).float()
    return bias.masked_fill(j > i, float("-inf"))
''', feedback="slope sign flipped"),
    WrongAnswer("alibi_bias", "mask transposed", _BIAS_HEAD + '''
    bias = slopes[:, None, None] * (i - j).float()
    return bias.masked_fill(j < i, float("-inf"))
''', feedback="transposed"),
    WrongAnswer("alibi_bias", "no causal mask", _BIAS_HEAD + '''
    return -slopes[:, None, None] * (i - j).abs().float()
''', feedback="no causal mask"),
    WrongAnswer("alibi_bias", "naive slopes inlined", '''
def alibi_bias(num_heads, seq_len):
    if isinstance(seq_len, bool) or int(seq_len) != seq_len or seq_len < 1:
        raise ValueError("seq_len must be a positive integer")
    if isinstance(num_heads, bool) or int(num_heads) != num_heads or num_heads < 1:
        raise ValueError("num_heads must be a positive integer")
    h = torch.arange(1, num_heads + 1, dtype=torch.float64)
    slopes = (2.0 ** (-8.0 * h / num_heads)).float()
    i = torch.arange(seq_len)[:, None]
    j = torch.arange(seq_len)[None, :]
    bias = slopes[:, None, None] * (j - i).float()
    return bias.masked_fill(j > i, float("-inf"))
''', feedback="naive formula"),
    # -- diagonal_spread -------------------------------------------------------------------------
    WrongAnswer("diagonal_spread", "anti-diagonals", _SPREAD_HEAD + '''
    g = g.flip(-1)
    return max((g.diagonal(o).max() - g.diagonal(o).min()).item() for o in range(-(rows - 1), cols))
''', feedback="anti-diagonals"),
    WrongAnswer("diagonal_spread", "only offsets m - n >= 0", _SPREAD_HEAD + '''
    return max((g.diagonal(-c).max() - g.diagonal(-c).min()).item() for c in range(0, rows))
''', feedback="m - n >= 0"),
    WrongAnswer("diagonal_spread", "standard deviation", _SPREAD_HEAD + '''
    return max(g.diagonal(o).std(correction=0).item() for o in range(-(rows - 1), cols))
''', feedback="standard deviation"),
    WrongAnswer("diagonal_spread", "mean of the spreads", _SPREAD_HEAD + '''
    spreads = [(g.diagonal(o).max() - g.diagonal(o).min()).item() for o in range(-(rows - 1), cols)]
    return sum(spreads) / len(spreads)
''', feedback="mean of the spreads"),
    WrongAnswer("diagonal_spread", "square offsets only", _SPREAD_HEAD + '''
    return max((g.diagonal(o).max() - g.diagonal(o).min()).item() for o in range(-(rows - 1), rows)
               if g.diagonal(o).numel())
''', feedback="square grid"),
    WrongAnswer("diagonal_spread", "whole grid", _SPREAD_HEAD + '''
    return (g.max() - g.min()).item()
''', feedback="whole grid"),
    WrongAnswer("diagonal_spread", "returns a tensor", _SPREAD_HEAD + '''
    return max(g.diagonal(o).max() - g.diagonal(o).min() for o in range(-(rows - 1), cols))
'''),
    # -- rope_cost ---------------------------------------------------------------------------------
    WrongAnswer("rope_cost", "multiply-add as one flop", _COST_HEAD + '''
    if method == "matrix":
        flops, elements = n * head_dim, seq_len * head_dim ** 2 + 2 * n
    else:
        flops, elements = 3 * n, seq_len * head_dim + 2 * n
    return {"flops": flops, "bytes": elements * bytes_per_element, "intensity": flops / (elements * bytes_per_element)}
''', feedback="multiply-add counted as one flop"),
    WrongAnswer("rope_cost", "matrices per batch and head", _COST_HEAD + '''
    if method == "matrix":
        flops, elements = 2 * n * head_dim, batch * heads * seq_len * head_dim ** 2 + 2 * n
    else:
        flops, elements = 3 * n, seq_len * head_dim + 2 * n
    return {"flops": flops, "bytes": elements * bytes_per_element, "intensity": flops / (elements * bytes_per_element)}
''', feedback="once per batch and head"),
    WrongAnswer("rope_cost", "output write missing", _COST_HEAD + '''
    if method == "matrix":
        flops, elements = 2 * n * head_dim, seq_len * head_dim ** 2 + n
    else:
        flops, elements = 3 * n, seq_len * head_dim + n
    return {"flops": flops, "bytes": elements * bytes_per_element, "intensity": flops / (elements * bytes_per_element)}
''', feedback="output write is missing"),
    WrongAnswer("rope_cost", "full-width tables", _COST_HEAD + '''
    if method == "matrix":
        flops, elements = 2 * n * head_dim, seq_len * head_dim ** 2 + 2 * n
    else:
        flops, elements = 3 * n, 2 * seq_len * head_dim + 2 * n
    return {"flops": flops, "bytes": elements * bytes_per_element, "intensity": flops / (elements * bytes_per_element)}
''', feedback="full-width"),
    WrongAnswer("rope_cost", "bytes_per_element ignored", _COST_HEAD + '''
    if method == "matrix":
        flops, elements = 2 * n * head_dim, seq_len * head_dim ** 2 + 2 * n
    else:
        flops, elements = 3 * n, seq_len * head_dim + 2 * n
    return {"flops": flops, "bytes": elements, "intensity": flops / elements}
''', feedback="elements counted instead of bytes"),
    WrongAnswer("rope_cost", "only multiplies counted", _COST_HEAD + '''
    if method == "matrix":
        flops, elements = 2 * n * head_dim, seq_len * head_dim ** 2 + 2 * n
    else:
        flops, elements = 2 * n, seq_len * head_dim + 2 * n
    return {"flops": flops, "bytes": elements * bytes_per_element, "intensity": flops / (elements * bytes_per_element)}
''', feedback="only the 4 multiplies"),
    WrongAnswer("rope_cost", "intensity inverted", _COST_HEAD + '''
    if method == "matrix":
        flops, elements = 2 * n * head_dim, seq_len * head_dim ** 2 + 2 * n
    else:
        flops, elements = 3 * n, seq_len * head_dim + 2 * n
    return {"flops": flops, "bytes": elements * bytes_per_element, "intensity": elements * bytes_per_element / flops}
''', feedback="bytes per flop"),
    WrongAnswer("rope_cost", "no validation", '''
def rope_cost(batch, heads, seq_len, head_dim, method, bytes_per_element=4):
    n = batch * heads * seq_len * head_dim
    if method == "matrix":
        flops, elements = 2 * n * head_dim, seq_len * head_dim ** 2 + 2 * n
    else:
        flops, elements = 3 * n, seq_len * head_dim + 2 * n
    moved = elements * bytes_per_element
    return {"flops": flops, "bytes": moved, "intensity": flops / moved if moved else 0.0}
'''),
]

# -- mistakes that only the property and error tests catch (issue 16) ---------------------------
_APPLY_FULL_HEAD = '''
def apply_rope(x, cos, sin, interleaved=False):
    if not x.is_floating_point():
        raise ValueError("x must be floating point")
    d = x.shape[-1]
    if d % 2:
        raise ValueError("head_dim must be even")
    if cos.shape != sin.shape:
        raise ValueError("cos and sin differ in shape")
    half = d // 2
    if cos.dim() < 2 or cos.shape[-1] != half:
        raise ValueError("cos/sin must be half-width")
    if cos.shape[-2] not in (1, x.shape[-2]):
        raise ValueError("cos/sin have another T")
'''

_APPLY_BROADCAST_CHECK = '''
    x_lead, table_lead = x.shape[:-2], cos.shape[:-2]
    if len(table_lead) > len(x_lead) or any(t not in (1, n) for t, n in zip(reversed(table_lead), reversed(x_lead))):
        raise ValueError("cos/sin do not broadcast to x")
'''

_APPLY_FULL_TAIL = _APPLY_BROADCAST_CHECK + '''
    dtype = torch.promote_types(torch.promote_types(x.dtype, cos.dtype), torch.float32)
    xf, c, s = x.to(dtype), cos.to(dtype), sin.to(dtype)
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = xf[..., :half], xf[..., half:]
        out = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return out.to(x.dtype)
'''

_APPLY_UNSQUEEZE = '''
    if cos.dim() == x.dim() - 1:
        cos, sin = cos.unsqueeze(-3), sin.unsqueeze(-3)
'''

_COST_BODY = '''
    n = batch * heads * seq_len * head_dim
    if method == "matrix":
        flops, elements = 2 * n * head_dim, seq_len * head_dim ** 2 + 2 * n
    else:
        flops, elements = 3 * n, seq_len * head_dim + 2 * n
    moved = elements * bytes_per_element
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}
'''

WRONG_ANSWERS += [
    # -- rope_inv_freq ---------------------------------------------------------------------------
    WrongAnswer("rope_inv_freq", "only odd head_dim rejected: 0 gives an empty tensor", '''
def rope_inv_freq(head_dim, base=10000.0):
    if head_dim % 2:
        raise ValueError("head_dim must be even")
    if base <= 0:
        raise ValueError("base must be positive")
    j = torch.arange(head_dim // 2, dtype=torch.float64)
    return (base ** (-2 * j / head_dim)).float()
''', feedback="should raise ValueError"),
    WrongAnswer("rope_inv_freq", "base not validated (base 0 gives inf)", _INV_CHECK + '''
    j = torch.arange(head_dim // 2, dtype=torch.float64)
    return (float(base) ** (-2 * j / head_dim)).float()
''', feedback="should raise ValueError"),
    WrongAnswer("rope_inv_freq", "base truncated to an integer", _INV_HEAD + '''
    if base <= 0:
        raise ValueError("base must be positive")
    base = int(base)
    j = torch.arange(head_dim // 2, dtype=torch.float64)
    return (base ** (-2 * j / head_dim)).float()
''', feedback="base truncated to an integer"),
    WrongAnswer("rope_inv_freq", "frequencies span to 1/base (linspace to -1)", _INV_HEAD + '''
    if base <= 0:
        raise ValueError("base must be positive")
    exponents = torch.linspace(0.0, -1.0, head_dim // 2, dtype=torch.float64)
    return (base ** exponents).float()
'''),
    # -- rope_rotation_matrix --------------------------------------------------------------------
    WrongAnswer("rope_rotation_matrix", "position cast to int", _MATRIX_HEAD + '''
    if base <= 0:
        raise ValueError("base must be positive")
    angles = int(position) * base ** (-2 * j / head_dim)
''' + _MATRIX_TAIL, feedback="position rounded to an integer"),
    WrongAnswer("rope_rotation_matrix", "angles in float32", _MATRIX_HEAD + '''
    if base <= 0:
        raise ValueError("base must be positive")
    theta = base ** (-2 * torch.arange(half, dtype=torch.float32) / head_dim)
    angles = (torch.tensor(float(position), dtype=torch.float32) * theta).double()
''' + _MATRIX_TAIL),
    WrongAnswer("rope_rotation_matrix", "theta taken from the float32 rope_inv_freq", _MATRIX_HEAD + '''
    angles = float(position) * rope_inv_freq(head_dim, base).double()
''' + _MATRIX_TAIL, feedback="theta rounded to float32"),
    WrongAnswer("rope_rotation_matrix", "base not validated", _MATRIX_HEAD.replace(_BASE_CHECK, "") + '''
    angles = float(position) * float(base) ** (-2 * j / head_dim)
''' + _MATRIX_TAIL, feedback="should raise ValueError"),
    WrongAnswer("rope_rotation_matrix", "returns float64", _MATRIX_HEAD + '''
    if base <= 0:
        raise ValueError("base must be positive")
    angles = float(position) * base ** (-2 * j / head_dim)
''' + _MATRIX_TAIL.replace("return r.float()", "return r"), feedback="dtype"),
    # -- rope_cos_sin ----------------------------------------------------------------------------
    WrongAnswer("rope_cos_sin", "positions cast to integers", _COS_SIN_HEAD + '''
    if position_ids.dtype == torch.bool or position_ids.is_complex():
        raise ValueError("positions must be real")
    if torch.as_tensor(inv_freq).dim() != 1:
        raise ValueError("inv_freq must be 1-D")
    angles = position_ids.long().float()[..., None] * torch.as_tensor(inv_freq).float()
    return angles.cos() * attention_factor, angles.sin() * attention_factor
''', feedback="positions rounded to integers"),
    WrongAnswer("rope_cos_sin", "torch.outer: only 1-D positions work", _COS_SIN_HEAD + '''
    if position_ids.dtype == torch.bool or position_ids.is_complex():
        raise ValueError("positions must be real")
    if torch.as_tensor(inv_freq).dim() != 1:
        raise ValueError("inv_freq must be 1-D")
    if position_ids.dim() == 1:
        angles = torch.outer(position_ids.float(), torch.as_tensor(inv_freq).float())
    else:
        angles = torch.einsum("bt,d->btd", position_ids.float(), torch.as_tensor(inv_freq).float())
    return angles.cos() * attention_factor, angles.sin() * attention_factor
'''),
    WrongAnswer("rope_cos_sin", "only the 0-d check: bool positions and 2-D inv_freq accepted", _COS_SIN_0D_CHECK + '''
    angles = position_ids.float()[..., None] * torch.as_tensor(inv_freq).float()
    return angles.cos() * attention_factor, angles.sin() * attention_factor
''', feedback="should raise ValueError"),
    WrongAnswer("rope_cos_sin", "positions in float16 to save memory", _COS_SIN_HEAD + '''
    if position_ids.dtype == torch.bool or position_ids.is_complex():
        raise ValueError("positions must be real")
    if torch.as_tensor(inv_freq).dim() != 1:
        raise ValueError("inv_freq must be 1-D")
    angles = position_ids.half().float()[..., None] * torch.as_tensor(inv_freq).float()
    return angles.cos() * attention_factor, angles.sin() * attention_factor
'''),
    # -- apply_rope ------------------------------------------------------------------------------
    WrongAnswer("apply_rope", "rotates x in place", _APPLY_FULL_HEAD + _APPLY_UNSQUEEZE + _APPLY_FULL_TAIL.replace(
        "    return out.to(x.dtype)", "    x.copy_(out.to(x.dtype))\n    return x"), feedback="in place"),
    WrongAnswer("apply_rope", "Meta's view_as_complex on a non-contiguous x", _APPLY_FULL_HEAD + _APPLY_UNSQUEEZE + _APPLY_BROADCAST_CHECK + '''
    dtype = torch.promote_types(torch.promote_types(x.dtype, cos.dtype), torch.float32)
    rot = torch.complex(cos.to(dtype), sin.to(dtype))
    if interleaved:
        xc = torch.view_as_complex(x.to(dtype).view(*x.shape[:-1], half, 2))
        out = torch.view_as_real(xc * rot).flatten(-2)
    else:
        xc = torch.complex(x[..., :half].to(dtype), x[..., half:].to(dtype))
        y = xc * rot
        out = torch.cat((y.real, y.imag), dim=-1)
    return out.to(x.dtype)
'''),
    WrongAnswer("apply_rope", "always float32 arithmetic: float64 x loses precision", _APPLY_FULL_HEAD + _APPLY_UNSQUEEZE + _APPLY_BROADCAST_CHECK + '''
    xf, c, s = x.float(), cos.float(), sin.float()
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = xf[..., :half], xf[..., half:]
        out = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return out.to(x.dtype)
''', feedback="float32 for a float64 x"),
    WrongAnswer("apply_rope", "head axis inserted at dim 1 instead of in front of T", _APPLY_FULL_HEAD + '''
    if cos.dim() == x.dim() - 1:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
''' + _APPLY_FULL_TAIL),
    WrongAnswer("apply_rope", "returns float32 for half-precision x", _APPLY_FULL_HEAD + _APPLY_UNSQUEEZE + _APPLY_BROADCAST_CHECK + '''
    dtype = torch.promote_types(torch.promote_types(x.dtype, cos.dtype), torch.float32)
    xf, c, s = x.to(dtype), cos.to(dtype), sin.to(dtype)
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = xf[..., :half], xf[..., half:]
        out = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return out if x.dtype in (torch.float16, torch.bfloat16) else out.to(x.dtype)
''', feedback="dtype"),
    WrongAnswer("apply_rope", "integer x not rejected", _APPLY_FULL_HEAD.replace(
        '''    if not x.is_floating_point():
        raise ValueError("x must be floating point")
''', "") + _APPLY_UNSQUEEZE + _APPLY_FULL_TAIL, feedback="should raise ValueError"),
    WrongAnswer("apply_rope", "cos and sin shapes not compared", _APPLY_FULL_HEAD.replace(
        '''    if cos.shape != sin.shape:
        raise ValueError("cos and sin differ in shape")
''', "") + '''
    if cos.dim() == x.dim() - 1:
        cos = cos.unsqueeze(-3)
    if sin.dim() == x.dim() - 1:
        sin = sin.unsqueeze(-3)
''' + _APPLY_FULL_TAIL, feedback="should raise ValueError"),
    WrongAnswer("apply_rope", "tables with another T not rejected", _APPLY_FULL_HEAD.replace(
        '''    if cos.shape[-2] not in (1, x.shape[-2]):
        raise ValueError("cos/sin have another T")
''', "") + _APPLY_UNSQUEEZE + _APPLY_FULL_TAIL, feedback="should raise ValueError"),
    WrongAnswer("apply_rope", "broadcast checked only after computing: a batch mismatch raises RuntimeError",
                _APPLY_FULL_HEAD + _APPLY_UNSQUEEZE + _APPLY_FULL_TAIL.replace(_APPLY_BROADCAST_CHECK, "").replace(
                    "    return out.to(x.dtype)", '''    if out.shape != x.shape:
        raise ValueError("cos/sin do not broadcast to x")
    return out.to(x.dtype)'''), feedback="should raise ValueError"),
    # -- layout_permutation ----------------------------------------------------------------------
    WrongAnswer("layout_permutation", "only odd head_dim rejected: 0 and -4 give empty tensors", '''
def layout_permutation(head_dim):
    if head_dim % 2:
        raise ValueError("head_dim must be even")
    return torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))
''', feedback="should raise ValueError"),
    WrongAnswer("layout_permutation", "cut from a fixed 128-wide permutation", _PERM_HEAD + '''
    full = torch.cat((torch.arange(0, 128, 2), torch.arange(1, 128, 2)))
    return full[full < head_dim]
'''),
    # -- alibi_slopes ----------------------------------------------------------------------------
    WrongAnswer("alibi_slopes", "negative head counts accepted", '''
def alibi_slopes(num_heads):
    if num_heads == 0:
        raise ValueError("num_heads must be positive")
    n = abs(int(num_heads))
    p = 1 << (n.bit_length() - 1)
    pow2 = lambda k: [2.0 ** (-8.0 * (h + 1) / k) for h in range(k)]
    return torch.tensor(pow2(p) + pow2(2 * p)[0::2][: n - p], dtype=torch.float32)
''', feedback="should raise ValueError"),
    WrongAnswer("alibi_slopes", "fractional head counts truncated", _SLOPES_POSITIVE_ONLY + '''
    n = int(num_heads)
    p = 1 << (n.bit_length() - 1)
    pow2 = lambda k: [2.0 ** (-8.0 * (h + 1) / k) for h in range(k)]
    return torch.tensor(pow2(p) + pow2(2 * p)[0::2][: n - p], dtype=torch.float32)
''', feedback="should raise ValueError"),
    WrongAnswer("alibi_slopes", "extra slopes of 2p heads only up to 8 extra heads", _SLOPES_HEAD + '''
    p = 1 << (num_heads.bit_length() - 1)
    pow2 = lambda k: [2.0 ** (-8.0 * (h + 1) / k) for h in range(k)]
    extra = pow2(2 * p)[0::2][: min(num_heads - p, 8)]
    extra += pow2(4 * p)[0::4][: num_heads - p - len(extra)]
    return torch.tensor(pow2(p) + extra, dtype=torch.float32)
'''),
    # -- alibi_bias ------------------------------------------------------------------------------
    WrongAnswer("alibi_bias", "only seq_len == 0 rejected", '''
def alibi_bias(num_heads, seq_len):
    if seq_len == 0:
        raise ValueError("seq_len must be positive")
    slopes = alibi_slopes(num_heads)
    i = torch.arange(int(seq_len))[:, None]
    j = torch.arange(int(seq_len))[None, :]
    bias = slopes[:, None, None] * (j - i).float()
    return bias.masked_fill(j > i, float("-inf"))
''', feedback="should raise ValueError"),
    WrongAnswer("alibi_bias", "slopes inlined without checking num_heads", '''
def alibi_bias(num_heads, seq_len):
    if isinstance(seq_len, bool) or int(seq_len) != seq_len or seq_len < 1:
        raise ValueError("seq_len must be a positive integer")
    p = 1 << max(num_heads.bit_length() - 1, 0)
    pow2 = lambda k: [2.0 ** (-8.0 * (h + 1) / k) for h in range(k)]
    slopes = torch.tensor((pow2(p) + pow2(2 * p)[0::2])[: max(num_heads, 0)], dtype=torch.float32)
    i = torch.arange(seq_len)[:, None]
    j = torch.arange(seq_len)[None, :]
    bias = slopes[:, None, None] * (j - i).float()
    return bias.masked_fill(j > i, float("-inf"))
''', feedback="should raise ValueError"),
    WrongAnswer("alibi_bias", "a large finite negative number instead of -inf", _BIAS_HEAD + '''
    bias = slopes[:, None, None] * (j - i).float()
    return bias.masked_fill(j > i, -1e9)
'''),
    # -- diagonal_spread -------------------------------------------------------------------------
    WrongAnswer("diagonal_spread", "differences taken in the grid's dtype", '''
def diagonal_spread(scores):
    if scores.dim() != 2 or scores.numel() == 0 or not scores.is_floating_point():
        raise ValueError("scores must be a real 2-D grid")
    rows, cols = scores.shape
    return max(float(scores.diagonal(o).max() - scores.diagonal(o).min()) for o in range(-(rows - 1), cols))
''', feedback="not float64"),
    WrongAnswer("diagonal_spread", "diagonals read from the storage (wrong for views)", _SPREAD_HEAD + '''
    spreads = []
    for o in range(-(rows - 1), cols):
        start = o if o >= 0 else -o * cols
        n = min(rows, cols - o) if o >= 0 else min(rows + o, cols)
        d = torch.as_strided(g, (n,), (cols + 1,), start)
        spreads.append((d.max() - d.min()).item())
    return max(spreads)
'''),
    WrongAnswer("diagonal_spread", "empty grids not rejected", '''
def diagonal_spread(scores):
    if scores.dim() != 2 or not scores.is_floating_point():
        raise ValueError("scores must be a real 2-D grid")
    g = scores.double()
    rows, cols = g.shape
    spreads = [(g.diagonal(o).max() - g.diagonal(o).min()).item() for o in range(-(rows - 1), cols)
               if g.diagonal(o).numel()]
    return max(spreads, default=0.0)
''', feedback="should raise ValueError"),
    WrongAnswer("diagonal_spread", "only integer grids rejected", '''
def diagonal_spread(scores):
    if scores.dim() != 2 or scores.numel() == 0 or scores.dtype in (torch.int32, torch.int64):
        raise ValueError("scores must be a real 2-D grid")
    g = scores.double()
    rows, cols = g.shape
    return max((g.diagonal(o).max() - g.diagonal(o).min()).item() for o in range(-(rows - 1), cols))
''', feedback="should raise ValueError"),
    # -- rope_cost -------------------------------------------------------------------------------
    WrongAnswer("rope_cost", "bytes_per_element not validated", '''
def rope_cost(batch, heads, seq_len, head_dim, method, bytes_per_element=4):
    if method not in ("matrix", "elementwise"):
        raise ValueError("unknown method")
    for v in (batch, heads, seq_len, head_dim):
        if not isinstance(v, int) or v < 1:
            raise ValueError("sizes must be positive integers")
    if head_dim % 2:
        raise ValueError("head_dim must be even")
''' + _COST_BODY, feedback="should raise ValueError"),
    WrongAnswer("rope_cost", "only zero sizes rejected", '''
def rope_cost(batch, heads, seq_len, head_dim, method, bytes_per_element=4):
    if method not in ("matrix", "elementwise"):
        raise ValueError("unknown method")
    if 0 in (batch, heads, seq_len, head_dim, bytes_per_element) or head_dim % 2:
        raise ValueError("bad size")
''' + _COST_BODY, feedback="should raise ValueError"),
    WrongAnswer("rope_cost", "sizes that are not whole accepted", '''
def rope_cost(batch, heads, seq_len, head_dim, method, bytes_per_element=4):
    if method not in ("matrix", "elementwise"):
        raise ValueError("unknown method")
    if min(batch, heads, seq_len, head_dim, bytes_per_element) < 1 or head_dim % 2:
        raise ValueError("bad size")
''' + _COST_BODY, feedback="should raise ValueError"),
    WrongAnswer("rope_cost", "table bytes counted with d / 2 (floats)", _COST_HEAD + '''
    if method == "matrix":
        flops, elements = 2 * n * head_dim, seq_len * head_dim ** 2 + 2 * n
    else:
        flops, elements = 3 * n, 2 * seq_len * (head_dim / 2) + 2 * n
    moved = elements * bytes_per_element
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}
''', feedback="Python ints"),
    WrongAnswer("rope_cost", "intensity rounded to 3 decimals", _COST_HEAD + '''
    if method == "matrix":
        flops, elements = 2 * n * head_dim, seq_len * head_dim ** 2 + 2 * n
    else:
        flops, elements = 3 * n, seq_len * head_dim + 2 * n
    moved = elements * bytes_per_element
    return {"flops": flops, "bytes": moved, "intensity": round(flops / moved, 3)}
'''),
]

CORRECT_VARIANTS = [
    ("rope_inv_freq", "float32 arithmetic as in Hugging Face's code (within the documented 1e-6)", '''
def rope_inv_freq(head_dim, base=10000.0):
    if isinstance(head_dim, bool) or int(head_dim) != head_dim or head_dim <= 0 or head_dim % 2:
        raise ValueError("head_dim must be a positive even integer")
    if not base > 0:
        raise ValueError("base must be positive")
    return 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
'''),
    ("rope_inv_freq", "exp of a float64 log, rounded once", '''
def rope_inv_freq(head_dim, base=10000.0):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError("head_dim must be a positive even integer")
    if base <= 0:
        raise ValueError("base must be positive")
    j = torch.arange(0, head_dim, 2, dtype=torch.float64)
    return torch.exp(-j / head_dim * math.log(base)).to(torch.float32)
'''),
    ("rope_rotation_matrix", "block_diag of 2x2 blocks, then a permutation for the half-split layout", '''
def rope_rotation_matrix(position, head_dim, base=10000.0, interleaved=True):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError("head_dim must be a positive even integer")
    if base <= 0:
        raise ValueError("base must be positive")
    half = head_dim // 2
    angles = [position * base ** (-2.0 * j / head_dim) for j in range(half)]
    blocks = [torch.tensor([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]], dtype=torch.float64)
              for a in angles]
    r = torch.block_diag(*blocks)
    if not interleaved:
        perm = torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))
        r = r[perm][:, perm]
    return r.float()
'''),
    ("rope_cos_sin", "angles in float64, tables rounded once (documented as accepted)", '''
def rope_cos_sin(position_ids, inv_freq, attention_factor=1.0):
    if position_ids.dim() == 0 or position_ids.dtype == torch.bool or position_ids.is_complex():
        raise ValueError("position_ids must be a real (..., T) tensor")
    if inv_freq.dim() != 1:
        raise ValueError("inv_freq must be 1-D")
    angles = torch.einsum("...t,d->...td", position_ids.double(), inv_freq.double())
    return (attention_factor * angles.cos()).float(), (attention_factor * angles.sin()).float()
'''),
    ("apply_rope", "float64 arithmetic for every dtype, one rounding at the end", '''
def apply_rope(x, cos, sin, interleaved=False):
    if not x.is_floating_point():
        raise ValueError("x must be floating point")
    d = x.shape[-1]
    if d % 2:
        raise ValueError("head_dim must be even")
    if cos.shape != sin.shape or cos.dim() < 2 or cos.shape[-1] != d // 2 or cos.shape[-2] not in (1, x.shape[-2]):
        raise ValueError("bad cos/sin tables")
    if cos.dim() == x.dim() - 1:
        cos, sin = cos[..., None, :, :], sin[..., None, :, :]
    try:
        c, s = (t.double().expand(*x.shape[:-1], d // 2) for t in (cos, sin))
    except RuntimeError as exc:
        raise ValueError("cos/sin do not broadcast to x") from exc
    if interleaved:
        pairs = x.double().reshape(*x.shape[:-1], d // 2, 2)
        a, b = pairs[..., 0], pairs[..., 1]
        out = torch.stack((a * c - b * s, a * s + b * c), dim=-1).reshape(*a.shape[:-1], d)
    else:
        a, b = x.double().chunk(2, dim=-1)
        out = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return out.to(x.dtype)
'''),
    ("apply_rope", "rotate_half with full-width tables, in float32 (float64 when given float64)", '''
def apply_rope(x, cos, sin, interleaved=False):
    if not x.is_floating_point():
        raise ValueError("x must be floating point")
    d = x.shape[-1]
    if d % 2:
        raise ValueError("head_dim must be even")
    if cos.shape != sin.shape or cos.dim() < 2 or cos.shape[-1] != d // 2 or cos.shape[-2] not in (1, x.shape[-2]):
        raise ValueError("bad cos/sin tables")
    if cos.dim() == x.dim() - 1:
        cos, sin = cos.unsqueeze(-3), sin.unsqueeze(-3)
    try:
        lead = torch.broadcast_shapes(x.shape[:-1], cos.shape[:-1])
    except RuntimeError:
        lead = None
    if lead != x.shape[:-1]:
        raise ValueError("cos/sin do not broadcast to x")
    dtype = torch.float64 if torch.float64 in (x.dtype, cos.dtype) else torch.float32
    xf = x.to(dtype)
    if interleaved:
        c, s = cos.to(dtype).repeat_interleave(2, -1), sin.to(dtype).repeat_interleave(2, -1)
        rotated = torch.stack((-xf[..., 1::2], xf[..., 0::2]), dim=-1).flatten(-2)
    else:
        c, s = torch.cat((cos, cos), -1).to(dtype), torch.cat((sin, sin), -1).to(dtype)
        rotated = torch.cat((-xf[..., d // 2:], xf[..., : d // 2]), dim=-1)
    return (xf * c + rotated * s).to(x.dtype)
'''),
    ("layout_permutation", "arange viewed as (d/2, 2), transposed, reshaped", '''
def layout_permutation(head_dim):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError("head_dim must be a positive even integer")
    return torch.arange(head_dim).view(head_dim // 2, 2).t().reshape(-1)
'''),
    ("alibi_slopes", "the paper's recursive get_slopes", '''
def alibi_slopes(num_heads):
    if isinstance(num_heads, bool) or int(num_heads) != num_heads or num_heads < 1:
        raise ValueError("num_heads must be a positive integer")

    def get_slopes(n):
        if math.log2(n).is_integer():
            start = 2 ** (-2 ** -(math.log2(n) - 3))
            return [start * start ** i for i in range(n)]
        closest = 2 ** math.floor(math.log2(n))
        return get_slopes(closest) + get_slopes(2 * closest)[0::2][: n - closest]

    return torch.tensor(get_slopes(int(num_heads)), dtype=torch.float32)
'''),
    ("alibi_bias", "tril of the distances, then a triu mask of -inf", '''
def alibi_bias(num_heads, seq_len):
    if isinstance(seq_len, bool) or int(seq_len) != seq_len or seq_len < 1:
        raise ValueError("seq_len must be a positive integer")
    slopes = alibi_slopes(num_heads)
    t = int(seq_len)
    distance = torch.arange(t)[:, None] - torch.arange(t)[None, :]
    bias = -slopes.view(-1, 1, 1) * distance.clamp(min=0).float()
    return bias + torch.full((t, t), float("-inf")).triu(1)
'''),
    ("diagonal_spread", "explicit loops over m - n in numpy float64", '''
def diagonal_spread(scores):
    if scores.dim() != 2 or scores.numel() == 0 or not scores.is_floating_point():
        raise ValueError("scores must be a non-empty real 2-D grid")
    g = scores.double().numpy()
    rows, cols = g.shape
    worst = 0.0
    for c in range(-(cols - 1), rows):
        values = [g[m, m - c] for m in range(rows) if 0 <= m - c < cols]
        worst = max(worst, float(max(values) - min(values)))
    return worst
'''),
    ("rope_cost", "counts from element totals, validation by a helper", '''
def rope_cost(batch, heads, seq_len, head_dim, method, bytes_per_element=4):
    def positive_int(name, v):
        if type(v) is not int or v < 1:
            raise ValueError(f"{name} must be a positive integer")
    for name, v in (("batch", batch), ("heads", heads), ("seq_len", seq_len), ("head_dim", head_dim),
                    ("bytes_per_element", bytes_per_element)):
        positive_int(name, v)
    if head_dim % 2:
        raise ValueError("head_dim must be even")
    x_elements = batch * heads * seq_len * head_dim
    if method == "matrix":
        flops, other = 2 * x_elements * head_dim, seq_len * head_dim * head_dim
    elif method == "elementwise":
        flops, other = 6 * (x_elements // 2), 2 * seq_len * (head_dim // 2)
    else:
        raise ValueError("method must be 'matrix' or 'elementwise'")
    moved = (other + 2 * x_elements) * bytes_per_element
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}
'''),
]

# -- rope_base_for_context (challenge) ----------------------------------------------------------
# A challenge is graded by the thresholds its design clears (test_base_within_the_low/middle/top_threshold,
# each on cases of its own): an entry's costs is the number of tests it fails. The shallow answers (the
# constants, the published grid, the notebook's doubling and bisection, the public case hard-coded) must
# lose at least half of the exercise's 25 points: the top threshold alone carries 14.
_BASE_SEARCH = '''
def rope_base_for_context(context_length, head_dim=128):
    if isinstance(context_length, bool) or not isinstance(context_length, int) or context_length < 1:
        raise ValueError("context_length must be a positive integer")
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1 or head_dim % 2:
        raise ValueError("head_dim must be a positive even integer")
    offsets = OFFSETS(context_length)
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim

    def holds(base):
        return bool((torch.cos(offsets[:, None] * base ** -exponents).mean(dim=1) > 0).all())

    low, high = 1.0, 2.0
    while not holds(high):
        low, high = high, 2 * high
    for _ in range(30):
        middle = math.sqrt(low * high)
        if holds(middle):
            high = middle
        else:
            low = middle
    return float(RESULT)
'''
_GRID_WALK = '''
def rope_base_for_context(context_length, head_dim=128):
    if isinstance(context_length, bool) or not isinstance(context_length, int) or context_length < 1:
        raise ValueError("context_length must be a positive integer")
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1 or head_dim % 2:
        raise ValueError("head_dim must be a positive even integer")
    delta = torch.arange(context_length + 1, dtype=torch.float64)[:, None]
    j = torch.arange(head_dim // 2, dtype=torch.float64)
    k = 40
    while True:
        base = 10.0 ** (k / 40)
        if torch.cos(delta * base ** (-2 * j / head_dim)).sum(dim=1).min() > 0:
            return base
        k += 1
'''

WRONG_ANSWERS += [
    WrongAnswer("rope_base_for_context", "the RoFormer default 10000 for every context", '''
def rope_base_for_context(context_length, head_dim=128):
    if isinstance(context_length, bool) or context_length < 1 or head_dim % 2:
        raise ValueError("bad arguments")
    return 10000.0
''', costs=5, min_lost=0.5),  # shallow: fails the criterion on the public case and most thresholds' cases
    WrongAnswer("rope_base_for_context", "Llama 3's 500000 for every context", '''
def rope_base_for_context(context_length, head_dim=128):
    if isinstance(context_length, bool) or context_length < 1 or head_dim % 2:
        raise ValueError("bad arguments")
    return 500000.0
''', costs=4, min_lost=0.5),  # shallow: meets the criterion, far above every smallest base
    WrongAnswer("rope_base_for_context", "the published grid 10^(k/40) walked upward (a later passing stretch)",
                _GRID_WALK, costs=2, min_lost=0.5),  # shallow: above 1.5x on the public case, never the top threshold
    WrongAnswer("rope_base_for_context", "doubling, then bisection (assumes the passing bases form an interval)",
                _BASE_SEARCH.replace("OFFSETS(context_length)", "torch.arange(context_length + 1, dtype=torch.float64)")
                .replace("RESULT", "high"), costs=2, min_lost=0.5),  # shallow: a later stretch on the public and top cases
    # The grid walk with a step of 1e-3 in log base (early stopping keeps it near a second a case): within
    # 1.001 of the smallest base where the first passing window is wider than the step, but it steps over the
    # window of about 5e-4 at (374, 48) and lands in the next, 1.69 times higher; and 1e-3 is not 1e-5.
    WrongAnswer("rope_base_for_context", "a walk up a finer grid (steps of 1e-3 in log base), early stopping", '''
def rope_base_for_context(context_length, head_dim=128):
    if isinstance(context_length, bool) or not isinstance(context_length, int) or context_length < 1:
        raise ValueError("context_length must be a positive integer")
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1 or head_dim % 2:
        raise ValueError("head_dim must be a positive even integer")
    exps = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim
    offsets = torch.arange(context_length + 1, dtype=torch.float64)
    x, step, block = math.log(1.0001), 1e-3, 512
    while True:
        xs = x + step * torch.arange(block, dtype=torch.float64)
        theta = torch.exp(-xs[:, None] * exps)
        worst = torch.full((block,), math.inf, dtype=torch.float64)
        alive = torch.ones(block, dtype=torch.bool)
        for start in range(0, context_length + 1, 64):
            part = offsets[start:start + 64]
            low = torch.cos(part[None, :, None] * theta[alive][:, None, :]).mean(-1).min(-1).values
            worst[alive] = torch.minimum(worst[alive], low)
            alive = worst > 0
            if not alive.any():
                break
        passing = (worst > 0).nonzero()
        if len(passing):
            return float(math.exp(xs[passing[0]].item()))
        x += step * block
''', costs=1, min_lost=0.5),  # shallow: the notebook's grid walk with a finer step; the top threshold's test only
    WrongAnswer("rope_base_for_context", "the public case hard-coded, Llama 2's 10000 elsewhere", '''
def rope_base_for_context(context_length, head_dim=128):
    if isinstance(context_length, bool) or context_length < 1 or head_dim % 2:
        raise ValueError("bad arguments")
    return 3438.9076 if (context_length, head_dim) == (512, 64) else 10000.0
''', costs=4, min_lost=0.5),  # shallow: right where the public check looks, nowhere else
    WrongAnswer("rope_base_for_context", "the criterion tested only at the last offset, Delta = L",
                _BASE_SEARCH.replace("OFFSETS(context_length)", "torch.tensor([float(context_length)], dtype=torch.float64)")
                .replace("RESULT", "high"), costs=5),  # a base too small fails the criterion on most cases
    WrongAnswer("rope_base_for_context", "the failing end of the bisection returned",
                _BASE_SEARCH.replace("OFFSETS(context_length)", "torch.arange(context_length + 1, dtype=torch.float64)")
                .replace("RESULT", "low"), costs=5),  # a failing base clears nothing
    WrongAnswer("rope_base_for_context", "the slowest wavelength set equal to the context (2 pi base^((d-2)/d) = L)", '''
def rope_base_for_context(context_length, head_dim=128):
    if isinstance(context_length, bool) or context_length < 1 or head_dim % 2:
        raise ValueError("bad arguments")
    return float((context_length / (2 * math.pi)) ** (head_dim / (head_dim - 2)))
''', costs=5),  # a base too small fails the criterion on every case
    WrongAnswer("rope_base_for_context", "a downward scan from 1e9 by factors of 1.1 while the criterion holds", '''
def rope_base_for_context(context_length, head_dim=128):
    if isinstance(context_length, bool) or not isinstance(context_length, int) or context_length < 1:
        raise ValueError("context_length must be a positive integer")
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1 or head_dim % 2:
        raise ValueError("head_dim must be a positive even integer")
    angles_per_base = torch.arange(context_length + 1, dtype=torch.float64)[:, None]
    inv = lambda base: 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ok = lambda base: bool((torch.cos(angles_per_base * inv(base)).mean(-1) > 0).all())
    base = 1e9
    while base / 1.1 > 1 and ok(base / 1.1):
        base /= 1.1
    return base
''', costs=3),  # stops at the top of the first failing gap below 1e9: a later stretch, often far above
]

CORRECT_VARIANTS += [
    ("rope_base_for_context", "coarse scan of the worst score, a fine rescan wherever it nears zero, bisection of the edge",
     '''
def rope_base_for_context(context_length, head_dim=128):
    if isinstance(context_length, bool) or not isinstance(context_length, int) or context_length < 1:
        raise ValueError("context_length must be a positive integer")
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1 or head_dim % 2:
        raise ValueError("head_dim must be a positive even integer")
    exps = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim

    def worst(logs, stop):
        # min over offsets of S per log-base, offsets in growing blocks; bases below `stop` drop out early
        logs = torch.as_tensor(logs, dtype=torch.float64).reshape(-1)
        out = torch.full((len(logs),), math.inf, dtype=torch.float64)
        alive, start, size = torch.arange(len(logs)), 0, 64
        while start <= context_length and len(alive):
            offsets = torch.arange(start, min(start + size, context_length + 1), dtype=torch.float64)
            theta = torch.exp(-logs[alive, None] * exps)
            out[alive] = torch.minimum(out[alive], torch.cos(offsets[None, :, None] * theta[:, None, :]).mean(-1).min(-1).values)
            alive = alive[out[alive] > stop]
            start, size = start + size, 2 * size
        return out

    # coarse scan in log(base) steps of 1e-3; every step whose ends come within 0.02 of zero is rescanned in
    # 100 steps, and the first passing fine point's left edge is bisected
    step, log_b = 1e-3, 0.0
    while True:
        coarse = log_b + step * torch.arange(0, 257, dtype=torch.float64)
        g = worst(coarse, -0.02).tolist()
        for i in range(256):
            if max(g[i], g[i + 1]) < -0.02:
                continue
            fine = torch.linspace(coarse[i].item(), coarse[i + 1].item(), 101, dtype=torch.float64)
            ok = (worst(fine, 0.0) > 0).nonzero().flatten()
            if len(ok):
                k = ok[0].item()
                lo, hi = fine[max(k - 1, 0)].item(), fine[k].item()
                for _ in range(25):
                    mid = 0.5 * (lo + hi)
                    lo, hi = (lo, mid) if worst([mid], 0.0)[0] > 0 else (mid, hi)
                return float(math.exp(hi))
        log_b = coarse[-1].item()
'''),
    ("rope_base_for_context", "golden-section climb to each near-zero peak of the worst score, bisection of the edge",
     '''
def rope_base_for_context(context_length, head_dim=128):
    if isinstance(context_length, bool) or not isinstance(context_length, int) or context_length < 1:
        raise ValueError("context_length must be a positive integer")
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1 or head_dim % 2:
        raise ValueError("head_dim must be a positive even integer")
    offsets = torch.arange(context_length + 1, dtype=torch.float64)
    exps = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim

    def g(log_base):
        """The worst similar-token score over the context at one base."""
        return torch.cos(offsets[:, None] * torch.exp(-log_base * exps)).mean(-1).min().item()

    def g_many(logs):
        return torch.stack([torch.cos(offsets[:, None] * torch.exp(-x * exps)).mean(-1).min() for x in logs])

    # g on a coarse grid; at each local maximum that comes near zero, climb to the peak by golden-section
    # search: a peak above zero is a passing window, whose left edge a bisection then finds
    h = 2e-3
    logs = torch.arange(0.0, 30.0, h, dtype=torch.float64)
    for start in range(1, len(logs) - 1, 400):
        xs = logs[start - 1:start + 401]
        ys = g_many(xs)
        for i in range(1, len(xs) - 1):
            if ys[i] > 0:
                lo, hi = xs[i - 1].item(), xs[i].item()
            elif ys[i] >= ys[i - 1] and ys[i] >= ys[i + 1] and ys[i] > -0.1:
                a, b = xs[i - 1].item(), xs[i + 1].item()
                r = (math.sqrt(5) - 1) / 2
                c, d = b - r * (b - a), a + r * (b - a)
                gc, gd = g(c), g(d)
                for _ in range(40):
                    if gc > 0 or gd > 0:
                        break
                    if gc > gd:
                        b, d, gd = d, c, gc
                        c = b - r * (b - a)
                        gc = g(c)
                    else:
                        a, c, gc = c, d, gd
                        d = a + r * (b - a)
                        gd = g(d)
                if gc <= 0 and gd <= 0:
                    continue
                lo, hi = xs[i - 1].item(), (c if gc > 0 else d)
            else:
                continue
            for _ in range(40):
                mid = 0.5 * (lo + hi)
                lo, hi = (lo, mid) if g(mid) > 0 else (mid, hi)
            return float(math.exp(hi))
    raise ValueError("no base up to e^30 meets the criterion")
'''),
]

# -- matching_pairs (interpret) -----------------------------------------------------------------
WRONG_ANSWERS += [
    WrongAnswer("matching_pairs", "pairs with a wavelength longer than the context (section 8's count)", '''
def matching_pairs(context_length, base, head_dim=128, level=0.5):
    if context_length < 1 or head_dim % 2 or not base > 1 or not 0 < level < 1:
        raise ValueError("bad arguments")
    wavelengths = 2 * math.pi * base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return int((wavelengths > context_length).sum())
''', feedback="wavelength is longer than L", costs=4, min_lost=0.5),  # shallow: the notebook's recipe, wrong everywhere
    WrongAnswer("matching_pairs", "a constant: the public case's answer", '''
def matching_pairs(context_length, base, head_dim=128, level=0.5):
    if context_length < 1 or head_dim % 2 or not base > 1 or not 0 < level < 1:
        raise ValueError("bad arguments")
    return 6
''', costs=3, min_lost=0.5),  # shallow
    WrongAnswer("matching_pairs", "a constant: section 6's slowest band of four pairs", '''
def matching_pairs(context_length, base, head_dim=128, level=0.5):
    if context_length < 1 or head_dim % 2 or not base > 1 or not 0 < level < 1:
        raise ValueError("bad arguments")
    return 4
''', costs=4, min_lost=0.5),  # shallow
    WrongAnswer("matching_pairs", "the public case hard-coded, the wavelength count elsewhere", '''
def matching_pairs(context_length, base, head_dim=128, level=0.5):
    if context_length < 1 or head_dim % 2 or not base > 1 or not 0 < level < 1:
        raise ValueError("bad arguments")
    if (context_length, base, head_dim, level) == (4096, 1e4, 128, 0.5):
        return 6
    wavelengths = 2 * math.pi * base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return int((wavelengths > context_length).sum())
''', costs=3, min_lost=0.5),  # shallow
    WrongAnswer("matching_pairs", "level ignored: a wavelength of at least 6 L (right at level 0.5 only)", '''
def matching_pairs(context_length, base, head_dim=128, level=0.5):
    if context_length < 1 or head_dim % 2 or not base > 1 or not 0 < level < 1:
        raise ValueError("bad arguments")
    wavelengths = 2 * math.pi * base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return int((wavelengths >= 6 * context_length).sum())
''', costs=2),  # the levels test and the property test (which draws levels)
    WrongAnswer("matching_pairs", "the score checked at the last offset only, cos(L theta_j) >= level", '''
def matching_pairs(context_length, base, head_dim=128, level=0.5):
    if context_length < 1 or head_dim % 2 or not base > 1 or not 0 < level < 1:
        raise ValueError("bad arguments")
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return int((torch.cos(context_length * theta) >= level).sum())
''', costs=4),  # fast pairs that come round again at Delta = L count: wrong on every case with such a pair
    # The definition transcribed as a scan of every offset: right wherever it finishes, out of time at the
    # context of 10^8 tokens (LONG_CONTEXTS); the grader runs no later test of an exercise that timed out.
    WrongAnswer("matching_pairs", "every offset scanned for every pair (the docstring's definition, transcribed)", '''
def matching_pairs(context_length, base, head_dim=128, level=0.5):
    if isinstance(context_length, bool) or not isinstance(context_length, int) or context_length < 1:
        raise ValueError("context_length must be a positive integer")
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1 or head_dim % 2:
        raise ValueError("head_dim must be a positive even integer")
    if not base > 1 or not 0 < level < 1:
        raise ValueError("base must be above 1 and level in (0, 1)")
    theta = float(base) ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    count = 0
    for t in theta.tolist():
        worst = 1.0
        for start in range(0, context_length + 1, 65536):
            offsets = torch.arange(start, min(start + 65536, context_length + 1), dtype=torch.float64)
            worst = min(worst, torch.cos(offsets * t).min().item())
        count += worst >= level
    return count
''', costs=4, min_lost=0.5),
    WrongAnswer("matching_pairs", "level not validated", '''
def matching_pairs(context_length, base, head_dim=128, level=0.5):
    if context_length < 1 or head_dim % 2 or not base > 1:
        raise ValueError("bad arguments")
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return int((context_length * theta <= math.acos(min(max(level, -1.0), 1.0))).sum())
''', feedback="should raise ValueError"),
]

CORRECT_VARIANTS += [
    ("matching_pairs", "a wavelength of at least 2 pi L / arccos(level), derived", '''
def matching_pairs(context_length, base, head_dim=128, level=0.5):
    if isinstance(context_length, bool) or not isinstance(context_length, int) or context_length < 1:
        raise ValueError("context_length must be a positive integer")
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1 or head_dim % 2:
        raise ValueError("head_dim must be a positive even integer")
    if base <= 1 or level <= 0 or level >= 1:
        raise ValueError("base must be above 1 and level in (0, 1)")
    wavelengths = 2 * math.pi * base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return sum(1 for w in wavelengths.tolist() if w >= 2 * math.pi * context_length / math.acos(level))
'''),
]

# -- rope_is_faithful (diagnose) ----------------------------------------------------------------
_FAITHFUL_HEAD = '''
def rope_is_faithful(rope, config):
    d, interleaved = config["head_dim"], config["interleaved"]
    scaling = config.get("rope_scaling") or {}
    kind = scaling.get("rope_type", "default")
    original = int(scaling.get("original_max_position_embeddings", config["max_position_embeddings"]))
    inv_freq = config["rope_theta"] ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)

    def plain(x, positions):
        angles = positions.double()[:, None] * inv_freq
        return apply_rope(x.double(), angles.cos(), angles.sin(), interleaved=interleaved)

    def close(got, want):
        got = torch.as_tensor(got)
        return got.shape == want.shape and bool(torch.allclose(got.double(), want.double(), atol=ATOL, rtol=0))

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(original, d, generator=gen)
    positions = torch.arange(original, dtype=torch.float64)
    if kind == "linear" and SCALE:
        positions = positions / scaling["factor"]
    prefill = torch.as_tensor(rope(x))
    if not close(prefill, plain(x, positions)):
        return False
'''
_FAITHFUL_DECODE = '''
    if not close(rope(x[-1:], original - 1), prefill[-1:]):
        return False
'''
_FAITHFUL_BEYOND = '''
    if kind == "dynamic":
        longer = torch.randn(2 * original, d, generator=gen)
        if close(rope(longer), plain(longer, torch.arange(2 * original))):
            return False
'''


def _faithful(*, atol="1e-3", scale="True", decode=True, beyond=True):
    source = _FAITHFUL_HEAD.replace("ATOL", atol).replace("SCALE", scale)
    return source + (_FAITHFUL_DECODE if decode else "") + (_FAITHFUL_BEYOND if beyond else "") + "    return True\n"


WRONG_ANSWERS += [
    WrongAnswer("rope_is_faithful", "a detector that accepts everything", '''
def rope_is_faithful(rope, config):
    return True
''', costs=6, shallow=True),  # degenerate: it fails the test of each hidden bug (layout, decode, bfloat16, both scalings) and the public unrotated case
    WrongAnswer("rope_is_faithful", "a detector that rejects everything", '''
def rope_is_faithful(rope, config):
    return False
''', costs=3, shallow=True),  # degenerate: it fails each test with a faithful implementation (plain, linear, dynamic)
    WrongAnswer("rope_is_faithful", "one prefill against a reference built from the config (no decode, no longer input)",
                _faithful(decode=False, beyond=False), costs=2, min_lost=0.5),
    WrongAnswer("rope_is_faithful", "prefill compared with the reference, decode never tried", _faithful(decode=False)),
    WrongAnswer("rope_is_faithful", "dynamic scaling never tried beyond the original context", _faithful(beyond=False)),
    WrongAnswer("rope_is_faithful", "linear scaling left out of the reference", _faithful(scale="False")),
    WrongAnswer("rope_is_faithful", "rotation properties only (norms, offsets, decode), no reference", '''
def rope_is_faithful(rope, config):
    d = config["head_dim"]
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(32, d, generator=gen)
    out = torch.as_tensor(rope(x)).double()
    if not torch.allclose(out.norm(dim=-1), x.double().norm(dim=-1), atol=1e-3):
        return False
    same = x[:1].expand(32, d).contiguous()
    rotated = torch.as_tensor(rope(same)).double()
    scores = rotated @ rotated.T
    for offset in range(1, 8):
        diagonal = scores.diagonal(offset)
        if (diagonal.max() - diagonal.min()).item() > 1e-3:
            return False
    return bool(torch.allclose(torch.as_tensor(rope(x[-1:], 31)).double(), out[-1:], atol=1e-3))
''', costs=4),  # no reference at all: blind to every bug that still rotates (the layout, and each scaling's test), and an identity keeps norms and offsets
    WrongAnswer("rope_is_faithful", "max_position_embeddings taken as the original context of dynamic scaling",
                _faithful().replace('int(scaling.get("original_max_position_embeddings", config["max_position_embeddings"]))',
                                    'int(config["max_position_embeddings"])')),
]

CORRECT_VARIANTS += [
    ("rope_is_faithful", "matrix-form reference (rope_rotation_matrix), several decode steps, tested at max_position_embeddings", '''
def rope_is_faithful(rope, config):
    d, base = config["head_dim"], config["rope_theta"]
    scaling = config.get("rope_scaling") or {}
    factor = float(scaling.get("factor", 1.0))
    linear = scaling.get("rope_type") == "linear"
    dynamic = scaling.get("rope_type") == "dynamic"
    original = scaling.get("original_max_position_embeddings", config["max_position_embeddings"])
    x = torch.linspace(-2, 2, original * d).reshape(original, d).float().sin() * 2
    want = torch.stack([rope_rotation_matrix(m / factor if linear else m, d, base, config["interleaved"]).double()
                        @ x[m].double() for m in range(original)])
    got = rope(x).double()
    if (got - want).abs().max().item() > 2e-3:
        return False
    for past in (1, original // 2, original - 1):
        if (rope(x[past:past + 1], past).double() - got[past:past + 1]).abs().max().item() > 2e-3:
            return False
    if dynamic:
        n = config["max_position_embeddings"]
        long_x = torch.linspace(-3, 3, n * d).reshape(n, d).float().cos()
        plain = torch.stack([rope_rotation_matrix(m, d, base, config["interleaved"]).double() @ long_x[m].double()
                             for m in range(n)])
        if (rope(long_x).double() - plain).abs().max().item() < 2e-3:
            return False
    return True
'''),
    ("rope_is_faithful", "reference from the learner's rope_cos_sin and apply_rope in float32, relative tolerance", '''
def rope_is_faithful(rope, config):
    d = config["head_dim"]
    scaling = config.get("rope_scaling") or {}
    original = scaling.get("original_max_position_embeddings", config["max_position_embeddings"])
    positions = torch.arange(original, dtype=torch.float32)
    if scaling.get("rope_type") == "linear":
        positions = positions / scaling["factor"]
    inv_freq = rope_inv_freq(d, config["rope_theta"])
    gen = torch.Generator().manual_seed(123)
    x = torch.randn(1, original, d, generator=gen)[0]
    cos, sin = rope_cos_sin(positions, inv_freq)
    want = apply_rope(x, cos, sin, interleaved=config["interleaved"])
    got = rope(x)
    scale = want.abs().max().item()
    if not torch.allclose(got, want, atol=5e-4 * scale, rtol=0):
        return False
    tail = rope(x[-3:], original - 3)
    if not torch.allclose(tail, got[-3:], atol=5e-4 * scale, rtol=0):
        return False
    if scaling.get("rope_type") == "dynamic":
        n = original + original // 2
        y = torch.randn(n, d, generator=gen)
        cos, sin = rope_cos_sin(torch.arange(n), inv_freq)
        if torch.allclose(rope(y), apply_rope(y, cos, sin, interleaved=config["interleaved"]), atol=5e-4, rtol=0):
            return False
    return True
'''),
]

# Shallow answers: a detector that reads the implementation it is handed instead of calling it.
# The implementation is a black box (it runs in the grader), so each reads nothing and scores at
# most what a constant answer does.
WRONG_ANSWERS += [
    WrongAnswer("rope_is_faithful", "the verdict read from the implementation's name", '''
def rope_is_faithful(rope, config):
    return rope.func.__name__.startswith("faithful")
''', costs=7, shallow=True),
    WrongAnswer("rope_is_faithful", "the verdict read from the name, if there is one (True otherwise)", '''
def rope_is_faithful(rope, config):
    target = getattr(rope, "func", rope)
    return getattr(target, "__name__", "faithful").startswith("faithful")
''', costs=6, shallow=True),
    WrongAnswer("rope_is_faithful", "the verdict guessed from repr, dir, __dict__ and type", '''
def rope_is_faithful(rope, config):
    text = " ".join([repr(rope), str(dir(rope)), str(getattr(rope, "__dict__", "")), str(type(rope))]).lower()
    return not any(bug in text for bug in ("swapped", "ignored", "never", "off_by", "bfloat16", "misread"))
''', costs=6, shallow=True),
]
