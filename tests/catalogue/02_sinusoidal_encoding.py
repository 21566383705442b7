"""Plausible wrong answers for notebook 02; each must lose points under the hidden tests."""
from tests.catalogue import WrongAnswer

_PE_HEAD = '''
def sinusoidal_encoding(num_positions, d_model, base=10000.0):
    if num_positions <= 0 or d_model <= 0 or d_model % 2:
        raise ValueError("bad sizes")
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float64)
'''

_INTERLEAVE = '''
    pe = torch.empty(num_positions, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return pe.float()
'''

_BITS_HEAD = '''
def binary_encoding(num_positions, num_bits):
    if num_positions <= 0 or num_bits <= 0:
        raise ValueError("sizes must be positive")
    pos = torch.arange(num_positions)[:, None]
    j = torch.arange(num_bits)
'''

_SHIFT_HEAD = '''
def linear_shift_residual(table, k):
    if table.dim() != 2 or abs(k) >= len(table):
        raise ValueError("bad table or offset")
    src = torch.arange(max(0, -k), min(len(table), len(table) - k))
    x, y = table[src].double(), table[src + k].double()
'''

_HEAD_HEAD = '''
def relative_attention_projections(k, d_model, temperature=1.0, base=10000.0):
    if d_model <= 0 or d_model % 2 or not temperature > 0:
        raise ValueError("bad d_model or temperature")
    m = offset_matrix(k, d_model, base).double()
    eye = torch.eye(d_model, dtype=torch.float64)
'''

_OFFSET_HEAD = '''
def offset_matrix(k, d_model, base=10000.0):
    if d_model <= 0 or d_model % 2:
        raise ValueError("d_model must be positive and even")
    omega = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    e = torch.arange(0, d_model, 2)
'''

WRONG_ANSWERS = [
    # -- sinusoidal_encoding ---------------------------------------------------------------------
    WrongAnswer("sinusoidal_encoding", "sin and cos swapped", _PE_HEAD + '''
    angles = pos / base ** (2 * i / d_model)
    pe = torch.empty(num_positions, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.cos(angles), torch.sin(angles)
    return pe.float()
''', feedback="sin and cos swapped"),
    WrongAnswer("sinusoidal_encoding", "half-split instead of interleaved", _PE_HEAD + '''
    angles = pos / base ** (2 * i / d_model)
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1).float()
''', feedback="half-split"),
    WrongAnswer("sinusoidal_encoding", "exponent 2i/(d-2)", _PE_HEAD + '''
    angles = pos / base ** (2 * i / (d_model - 2))
''' + _INTERLEAVE, feedback="2i/(d_model - 2)"),
    WrongAnswer("sinusoidal_encoding", "exponent i/d", _PE_HEAD + '''
    angles = pos / base ** (i / d_model)
''' + _INTERLEAVE, feedback="exponent i/d_model"),
    WrongAnswer("sinusoidal_encoding", "positions starting at 1", _PE_HEAD + '''
    angles = (pos + 1) / base ** (2 * i / d_model)
''' + _INTERLEAVE, feedback="positions starting at 1"),
    WrongAnswer("sinusoidal_encoding", "float64 returned", _PE_HEAD + '''
    angles = pos / base ** (2 * i / d_model)
    pe = torch.empty(num_positions, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return pe
''', feedback="float32"),
    WrongAnswer("sinusoidal_encoding", "angles computed in float32", '''
def sinusoidal_encoding(num_positions, d_model, base=10000.0):
    if num_positions <= 0 or d_model <= 0 or d_model % 2:
        raise ValueError("bad sizes")
    pos = torch.arange(num_positions, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(base) / d_model))
    pe = torch.zeros(num_positions, d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe
''', feedback="angles computed in float32"),
    WrongAnswer("sinusoidal_encoding", "odd d_model silently truncated", '''
def sinusoidal_encoding(num_positions, d_model, base=10000.0):
    if num_positions <= 0 or d_model <= 0:
        raise ValueError("bad sizes")
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float64)
    angles = pos / base ** (2 * i / d_model)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1).float()
'''),
    # -- binary_encoding -------------------------------------------------------------------------
    WrongAnswer("binary_encoding", "most significant bit first", _BITS_HEAD + '''
    return ((pos >> j) & 1).flip(1).float()
''', feedback="most significant bit first"),
    WrongAnswer("binary_encoding", "positions starting at 1", _BITS_HEAD + '''
    return (((pos + 1) >> j) & 1).float()
''', feedback="positions starting at 1"),
    WrongAnswer("binary_encoding", "missing mod 2", _BITS_HEAD + '''
    return (pos // 2 ** j).float()
''', feedback="without the 'mod 2'"),
    WrongAnswer("binary_encoding", "int64 returned", _BITS_HEAD + '''
    return (pos >> j) & 1
''', feedback="float32"),
    WrongAnswer("binary_encoding", "bits counted from 1", _BITS_HEAD + '''
    return ((pos >> (j + 1)) & 1).float()
'''),
    # -- offset_matrix ---------------------------------------------------------------------------
    WrongAnswer("offset_matrix", "blocks transposed", _OFFSET_HEAD + '''
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, -s, s, c
    return m.float()
''', feedback="blocks transposed"),
    WrongAnswer("offset_matrix", "angle k without frequency", _OFFSET_HEAD + '''
    c, s = math.cos(k), math.sin(k)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, s, -s, c
    return m.float()
''', feedback="frequency missing"),
    WrongAnswer("offset_matrix", "half-split blocks", '''
def offset_matrix(k, d_model, base=10000.0):
    if d_model <= 0 or d_model % 2:
        raise ValueError("d_model must be positive and even")
    h = d_model // 2
    omega = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    c, s = torch.diag(torch.cos(k * omega)), torch.diag(torch.sin(k * omega))
    return torch.cat([torch.cat([c, s], 1), torch.cat([-s, c], 1)], 0).float()
''', feedback="half-split"),
    WrongAnswer("offset_matrix", "exponent i/d", '''
def offset_matrix(k, d_model, base=10000.0):
    if d_model <= 0 or d_model % 2:
        raise ValueError("d_model must be positive and even")
    omega = base ** (-torch.arange(d_model // 2, dtype=torch.float64) / d_model)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    e = torch.arange(0, d_model, 2)
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, s, -s, c
    return m.float()
''', feedback="exponent i/d_model"),
    WrongAnswer("offset_matrix", "float64 returned", _OFFSET_HEAD + '''
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, s, -s, c
    return m
''', feedback="float32"),
    # -- linear_shift_residual -------------------------------------------------------------------
    WrongAnswer("linear_shift_residual", "map fitted the other way", _SHIFT_HEAD + '''
    m = torch.linalg.lstsq(y, x, driver="gelsd").solution
    return ((x - y @ m).norm() / x.norm()).item()
''', feedback="the other way"),
    WrongAnswer("linear_shift_residual", "rows wrapped around with torch.roll", '''
def linear_shift_residual(table, k):
    if table.dim() != 2 or abs(k) >= len(table):
        raise ValueError("bad table or offset")
    x = table.double()
    y = torch.roll(x, -k, dims=0)
    m = torch.linalg.lstsq(x, y, driver="gelsd").solution
    return ((y - x @ m).norm() / y.norm()).item()
''', feedback="wrapped around"),
    WrongAnswer("linear_shift_residual", "absolute residual", _SHIFT_HEAD + '''
    m = torch.linalg.lstsq(x, y, driver="gelsd").solution
    return (y - x @ m).norm().item()
''', feedback="absolute residual"),
    WrongAnswer("linear_shift_residual", "normalised by the source rows", _SHIFT_HEAD + '''
    m = torch.linalg.lstsq(x, y, driver="gelsd").solution
    return ((y - x @ m).norm() / x.norm()).item()
''', feedback="divided by |table[p]|"),
    WrongAnswer("linear_shift_residual", "squared relative residual", _SHIFT_HEAD + '''
    m = torch.linalg.lstsq(x, y, driver="gelsd").solution
    return (((y - x @ m).norm() / y.norm()) ** 2).item()
''', feedback="squared relative residual"),
    WrongAnswer("linear_shift_residual", "negative offsets sliced as positive", '''
def linear_shift_residual(table, k):
    if table.dim() != 2 or abs(k) >= len(table):
        raise ValueError("bad table or offset")
    k = abs(k)
    x, y = table[: len(table) - k].double(), table[k:].double()
    m = torch.linalg.lstsq(x, y, driver="gelsd").solution
    return ((y - x @ m).norm() / y.norm()).item()
''', feedback="reading k as |k|"),
    # -- relative_attention_projections ----------------------------------------------------------
    WrongAnswer("relative_attention_projections", "attends ahead (sign of the offset)", _HEAD_HEAD + '''
    return (m.T / temperature).float(), eye.float()
''', feedback="ahead instead of back"),
    WrongAnswer("relative_attention_projections", "temperature multiplied", _HEAD_HEAD + '''
    return (m * temperature).float(), eye.float()
''', feedback="multiplied instead of divided"),
    WrongAnswer("relative_attention_projections", "temperature on both sides", _HEAD_HEAD + '''
    return (m / temperature).float(), (eye / temperature).float()
''', feedback="both w_q and w_k"),
    WrongAnswer("relative_attention_projections", "offset map on both sides", _HEAD_HEAD + '''
    return (m / temperature).float(), m.float()
''', feedback="cancels"),
    WrongAnswer("relative_attention_projections", "extra 1/sqrt(d_model)", _HEAD_HEAD + '''
    return (m / (temperature * math.sqrt(d_model))).float(), eye.float()
''', feedback="1/sqrt(d_model)"),
    WrongAnswer("relative_attention_projections", "temperature ignored", _HEAD_HEAD + '''
    return m.float(), eye.float()
''', feedback="temperature ignored"),
    # -- new kinds of mistakes (issue 16): precision, partial validation, solvers, in-place ----
    WrongAnswer("sinusoidal_encoding", "frequencies computed in float32 (torch's default dtype)", '''
def sinusoidal_encoding(num_positions, d_model, base=10000.0):
    if num_positions <= 0 or d_model <= 0 or d_model % 2:
        raise ValueError("bad sizes")
    inv_freq = 1.0 / base ** (torch.arange(0, d_model, 2) / d_model)
    angles = torch.arange(num_positions, dtype=torch.float64)[:, None] * inv_freq.double()
''' + _INTERLEAVE),
    WrongAnswer("sinusoidal_encoding", "checks only the parity of d_model and the sign of num_positions", '''
def sinusoidal_encoding(num_positions, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError("d_model must be even")
    if num_positions <= 0:
        raise ValueError("num_positions must be positive")
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float64)
    angles = pos / base ** (2 * i / d_model)
''' + _INTERLEAVE),
    WrongAnswer("sinusoidal_encoding", "base rounded to a whole number", _PE_HEAD + '''
    angles = pos / int(base) ** (2 * i / d_model)
''' + _INTERLEAVE),
    WrongAnswer("binary_encoding", "bits by rounding pos / 2^j instead of flooring", _BITS_HEAD + '''
    return (torch.round(pos / 2.0 ** j) % 2).float()
'''),
    WrongAnswer("binary_encoding", "validates only num_positions", '''
def binary_encoding(num_positions, num_bits):
    if num_positions <= 0:
        raise ValueError("num_positions must be positive")
    pos = torch.arange(num_positions)[:, None]
    j = torch.arange(max(num_bits, 0))
    if num_bits == 0:
        raise ValueError("num_bits must be positive")
    return ((pos >> j) & 1).float()
'''),
    WrongAnswer("binary_encoding", "zero sizes rejected but negative ones let through", '''
def binary_encoding(num_positions, num_bits):
    if num_positions == 0 or num_bits == 0:
        raise ValueError("sizes must be positive")
    pos = torch.arange(max(num_positions, 0))[:, None]
    j = torch.arange(max(num_bits, 0))
    return ((pos >> j) & 1).float()
'''),
    WrongAnswer("offset_matrix", "angles computed in float32", '''
def offset_matrix(k, d_model, base=10000.0):
    if d_model <= 0 or d_model % 2:
        raise ValueError("d_model must be positive and even")
    omega = base ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    m = torch.zeros(d_model, d_model)
    e = torch.arange(0, d_model, 2)
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, s, -s, c
    return m
'''),
    WrongAnswer("offset_matrix", "checks only the parity of d_model", '''
def offset_matrix(k, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError("d_model must be even")
    omega = base ** (-torch.arange(0, max(d_model, 0), 2, dtype=torch.float64) / d_model)
    m = torch.zeros(max(d_model, 0), max(d_model, 0), dtype=torch.float64)
    e = torch.arange(0, max(d_model, 0), 2)
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, s, -s, c
    return m.float()
'''),
    WrongAnswer("linear_shift_residual", "computed in the table's dtype (float32 for a float32 table)", '''
def linear_shift_residual(table, k):
    if table.dim() != 2 or abs(k) >= len(table):
        raise ValueError("bad table or offset")
    src = torch.arange(max(0, -k), min(len(table), len(table) - k))
    x, y = table[src], table[src + k]
    m = torch.linalg.lstsq(x, y, driver="gelsd").solution
    return ((y - x @ m).norm() / y.norm()).item()
'''),
    WrongAnswer("linear_shift_residual", "table normalised in place (the ratio is unchanged, the input is not)", '''
def linear_shift_residual(table, k):
    if table.dim() != 2 or abs(k) >= len(table):
        raise ValueError("bad table or offset")
    table /= table.norm()
    src = torch.arange(max(0, -k), min(len(table), len(table) - k))
    x, y = table[src].double(), table[src + k].double()
    m = torch.linalg.lstsq(x, y, driver="gelsd").solution
    return ((y - x @ m).norm() / y.norm()).item()
''', feedback="in place"),
    WrongAnswer("linear_shift_residual", "only checks the offset (a 1-D or 3-D table is not rejected)", '''
def linear_shift_residual(table, k):
    if abs(k) >= len(table):
        raise ValueError("offset too large")
    table = table.reshape(len(table), -1)
    src = torch.arange(max(0, -k), min(len(table), len(table) - k))
    x, y = table[src].double(), table[src + k].double()
    m = torch.linalg.lstsq(x, y, driver="gelsd").solution
    return ((y - x @ m).norm() / y.norm()).item()
'''),
    WrongAnswer("relative_attention_projections", "only a zero temperature rejected", '''
def relative_attention_projections(k, d_model, temperature=1.0, base=10000.0):
    if d_model <= 0 or d_model % 2 or temperature == 0:
        raise ValueError("bad d_model or temperature")
    m = offset_matrix(k, d_model, base).double()
    return (m / temperature).float(), torch.eye(d_model)
'''),
    WrongAnswer("relative_attention_projections", "offset map built inline, d_model checked only for parity", '''
def relative_attention_projections(k, d_model, temperature=1.0, base=10000.0):
    if d_model % 2 or not temperature > 0:
        raise ValueError("bad d_model or temperature")
    n = max(d_model, 0)
    omega = base ** (-torch.arange(0, n, 2, dtype=torch.float64) / n) if n else torch.zeros(0, dtype=torch.float64)
    m = torch.zeros(n, n, dtype=torch.float64)
    e = torch.arange(0, n, 2)
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, s, -s, c
    return (m / temperature).float(), torch.eye(n)
'''),
    WrongAnswer("relative_attention_projections", "base rounded to a whole number", '''
def relative_attention_projections(k, d_model, temperature=1.0, base=10000.0):
    if d_model <= 0 or d_model % 2 or not temperature > 0:
        raise ValueError("bad d_model or temperature")
    m = offset_matrix(k, d_model, float(round(base))).double()
    return (m / temperature).float(), torch.eye(d_model)
'''),
]

# Correct answers written differently from the solution; each must get full marks
# (tests/test_correct_variants.py): (exercise, what differs, source).
CORRECT_VARIANTS = [
    ("sinusoidal_encoding", "frequencies as exp(-2i log(base) / d_model) in float64, stacked pairs", '''
def sinusoidal_encoding(num_positions, d_model, base=10000.0):
    if num_positions < 1 or d_model < 1:
        raise ValueError("sizes must be positive")
    if d_model % 2 == 1:
        raise ValueError("d_model must be even")
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(base) / d_model))
    angles = torch.outer(torch.arange(num_positions, dtype=torch.float64), inv_freq)
    return torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(num_positions, d_model).to(torch.float32)
'''),
    ("binary_encoding", "floor division and remainder on float64 positions", '''
def binary_encoding(num_positions, num_bits):
    if num_positions < 1 or num_bits < 1:
        raise ValueError("sizes must be positive")
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None]
    return torch.remainder(torch.floor(pos / 2.0 ** torch.arange(num_bits, dtype=torch.float64)), 2).float()
'''),
    ("offset_matrix", "block diagonal from Python floats with torch.block_diag", '''
def offset_matrix(k, d_model, base=10000.0):
    if d_model < 2 or d_model % 2:
        raise ValueError("d_model must be a positive even number")
    blocks = []
    for i in range(d_model // 2):
        a = k * base ** (-2 * i / d_model)
        blocks.append(torch.tensor([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]], dtype=torch.float64))
    return torch.block_diag(*blocks).float()
'''),
    ("linear_shift_residual", "torch.linalg.pinv projection in float64", '''
def linear_shift_residual(table, k):
    if table.ndim != 2:
        raise ValueError("table must be 2-D")
    n = table.shape[0]
    if not -n < k < n:
        raise ValueError("|k| must be smaller than the number of rows")
    t = table.to(torch.float64)
    x, y = (t[: n - k], t[k:]) if k >= 0 else (t[-k:], t[: n + k])
    fit = x @ (torch.linalg.pinv(x) @ y)
    return float(torch.linalg.norm(y - fit) / torch.linalg.norm(y))
'''),
    ("linear_shift_residual", "torch.linalg.lstsq with the gelsd driver", _SHIFT_HEAD + '''
    m = torch.linalg.lstsq(x, y, driver="gelsd").solution
    return float((y - x @ m).norm() / y.norm())
'''),
    ("relative_attention_projections", "the offset map on the key side", _HEAD_HEAD + '''
    return (eye / temperature).float(), offset_matrix(-k, d_model, base)
'''),
    ("relative_attention_projections", "temperature split between queries and keys", _HEAD_HEAD + '''
    root = math.sqrt(temperature)
    return (m / root).float(), (eye / root).float()
'''),
]
