"""Plausible wrong answers for notebook 04 (RoPE and ALiBi); each must lose points under the hidden tests."""
from tests.catalogue import WrongAnswer

_INV_HEAD = '''
def rope_inv_freq(head_dim, base=10000.0):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError("head_dim must be even")
'''

_MATRIX_HEAD = '''
def rope_rotation_matrix(position, head_dim, base=10000.0, interleaved=True):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError("head_dim must be even")
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

_COS_SIN_HEAD = '''
def rope_cos_sin(position_ids, inv_freq, attention_factor=1.0):
    position_ids = torch.as_tensor(position_ids)
    if position_ids.dim() == 0:
        raise ValueError("position_ids needs a token axis")
'''

_APPLY_HEAD = '''
def apply_rope(x, cos, sin, interleaved=False):
    d = x.shape[-1]
    if d % 2:
        raise ValueError("head_dim must be even")
    half = d // 2
    if cos.shape[-1] != half:
        raise ValueError("cos/sin must be half-width")
    if cos.dim() == x.dim() - 1:
        cos, sin = cos.unsqueeze(-3), sin.unsqueeze(-3)
'''

_PERM_HEAD = '''
def layout_permutation(head_dim):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError("head_dim must be even")
'''

_SLOPES_HEAD = '''
def alibi_slopes(num_heads):
    if num_heads < 1:
        raise ValueError("num_heads must be positive")
'''

_BIAS_HEAD = '''
def alibi_bias(num_heads, seq_len):
    if seq_len < 1:
        raise ValueError("seq_len must be positive")
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
        if not isinstance(v, int) or v < 1:
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
''' + _MATRIX_TAIL, feedback="sign of sin flipped"),
    WrongAnswer("rope_rotation_matrix", "layout swapped", _MATRIX_HEAD + '''
    angles = float(position) * base ** (-2 * j / head_dim)
    interleaved = not interleaved
''' + _MATRIX_TAIL, feedback="layout swapped"),
    WrongAnswer("rope_rotation_matrix", "exponent j/d", _MATRIX_HEAD + '''
    angles = float(position) * base ** (-j / head_dim)
''' + _MATRIX_TAIL, feedback="exponent -j/d"),
    WrongAnswer("rope_rotation_matrix", "position off by one", _MATRIX_HEAD + '''
    angles = float(position + 1) * base ** (-2 * j / head_dim)
''' + _MATRIX_TAIL, feedback="position off by one"),
    WrongAnswer("rope_rotation_matrix", "pairs counted from 1", _MATRIX_HEAD + '''
    angles = float(position) * base ** (-2 * (j + 1) / head_dim)
''' + _MATRIX_TAIL, feedback="counts pairs from 1"),
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
''', feedback="positions off by one"),
    WrongAnswer("rope_cos_sin", "cos and sin swapped", _COS_SIN_HEAD + '''
    angles = position_ids.float()[..., None] * torch.as_tensor(inv_freq).float()
    return angles.sin() * attention_factor, angles.cos() * attention_factor
''', feedback="cos and sin swapped"),
    WrongAnswer("rope_cos_sin", "sign of sin flipped", _COS_SIN_HEAD + '''
    angles = position_ids.float()[..., None] * torch.as_tensor(inv_freq).float()
    return angles.cos() * attention_factor, -angles.sin() * attention_factor
''', feedback="sign of sin flipped"),
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
    xf, c, s = x.float(), cos.float(), -sin.float()
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = xf[..., :half], xf[..., half:]
        out = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return out.to(x.dtype)
''', feedback="sign of sin flipped"),
    WrongAnswer("apply_rope", "layout swapped", _APPLY_HEAD + '''
    xf, c, s = x.float(), cos.float(), sin.float()
    if not interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = xf[..., :half], xf[..., half:]
        out = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return out.to(x.dtype)
''', feedback="layout swapped"),
    WrongAnswer("apply_rope", "rotate_half without the minus sign", _APPLY_HEAD + '''
    xf = x.float()
    c, s = torch.cat((cos, cos), -1).float(), torch.cat((sin, sin), -1).float()
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)
    rotated = torch.cat((xf[..., half:], xf[..., :half]), dim=-1)
    return (xf * c + rotated * s).to(x.dtype)
''', feedback="without the minus sign"),
    WrongAnswer("apply_rope", "tables repeated in the interleaved pattern for rotate_half", _APPLY_HEAD + '''
    xf = x.float()
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)
    c, s = cos.repeat_interleave(2, -1).float(), sin.repeat_interleave(2, -1).float()
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
    WrongAnswer("apply_rope", "returns float32 for every input", _APPLY_HEAD + '''
    xf, c, s = x.float(), cos.float(), sin.float()
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    a, b = xf[..., :half], xf[..., half:]
    return torch.cat((a * c - b * s, a * s + b * c), dim=-1)
''', feedback="dtype"),
    WrongAnswer("apply_rope", "cos and sin swapped", _APPLY_HEAD + '''
    xf, c, s = x.float(), sin.float(), cos.float()
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = xf[..., :half], xf[..., half:]
        out = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return out.to(x.dtype)
''', feedback="cos and sin swapped"),
    WrongAnswer("apply_rope", "tables not broadcast over heads", '''
def apply_rope(x, cos, sin, interleaved=False):
    d = x.shape[-1]
    if d % 2:
        raise ValueError("head_dim must be even")
    half = d // 2
    if cos.shape[-1] != half:
        raise ValueError("cos/sin must be half-width")
    xf, c, s = x.float(), cos.float(), sin.float()
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
    if seq_len < 1:
        raise ValueError("seq_len must be positive")
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
