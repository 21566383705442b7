"""Plausible wrong answers for notebook 02; each must lose points under the hidden tests."""
from tests.catalogue import WrongAnswer

COSTS_ONCE = True
"""Every entry fails at most its ``costs`` hidden tests (one unless it says why): one mistake costs once."""

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
    m = offset_matrix(-k, d_model, base).double()  # M_{-k}: PE[m] @ M_{-k} = PE[m - k]
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
''', feedback="sin and cos swapped", core=True, min_lost=0.5),  # the public check: 8 of 15 points
    WrongAnswer("sinusoidal_encoding", "half-split instead of interleaved", _PE_HEAD + '''
    angles = pos / base ** (2 * i / d_model)
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1).float()
''', feedback="half-split", core=True, min_lost=0.5),
    WrongAnswer("sinusoidal_encoding", "exponent 2i/(d-2)", _PE_HEAD + '''
    angles = pos / base ** (2 * i / (d_model - 2))
''' + _INTERLEAVE, feedback="2i/(d_model - 2)", core=True, min_lost=0.5),
    WrongAnswer("sinusoidal_encoding", "exponent i/d", _PE_HEAD + '''
    angles = pos / base ** (i / d_model)
''' + _INTERLEAVE, feedback="exponent i/d_model", core=True, min_lost=0.5),
    WrongAnswer("sinusoidal_encoding", "frequencies base^(+2i/d) (the sign of the exponent)", _PE_HEAD + '''
    angles = pos * base ** (2 * i / d_model)
''' + _INTERLEAVE, feedback="the sign of the exponent", core=True, min_lost=0.5),
    # The public check and the hidden test that owns the first position: 9 of 15 points.
    WrongAnswer("sinusoidal_encoding", "positions starting at 1", _PE_HEAD + '''
    angles = (pos + 1) / base ** (2 * i / d_model)
''' + _INTERLEAVE, feedback="positions starting at 1", core=True, min_lost=0.5),
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
    # -- offset_matrix ---------------------------------------------------------------------------
    WrongAnswer("offset_matrix", "blocks transposed", _OFFSET_HEAD + '''
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, s, -s, c
    return m.float()
''', feedback="blocks transposed", core=True, min_lost=0.5),  # the public check: 6 of 12 points
    WrongAnswer("offset_matrix", "angle k without frequency", _OFFSET_HEAD + '''
    c, s = math.cos(k), math.sin(k)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, -s, s, c
    return m.float()
''', feedback="frequency missing", core=True, min_lost=0.5),
    WrongAnswer("offset_matrix", "half-split blocks", '''
def offset_matrix(k, d_model, base=10000.0):
    if d_model <= 0 or d_model % 2:
        raise ValueError("d_model must be positive and even")
    h = d_model // 2
    omega = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    c, s = torch.diag(torch.cos(k * omega)), torch.diag(torch.sin(k * omega))
    return torch.cat([torch.cat([c, -s], 1), torch.cat([s, c], 1)], 0).float()
''', feedback="half-split", core=True, min_lost=0.5),
    WrongAnswer("offset_matrix", "exponent i/d", '''
def offset_matrix(k, d_model, base=10000.0):
    if d_model <= 0 or d_model % 2:
        raise ValueError("d_model must be positive and even")
    omega = base ** (-torch.arange(d_model // 2, dtype=torch.float64) / d_model)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    e = torch.arange(0, d_model, 2)
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, -s, s, c
    return m.float()
''', feedback="exponent i/d_model", core=True, min_lost=0.5),
    WrongAnswer("offset_matrix", "the offset taken as |k| (negative offsets move forwards)", _OFFSET_HEAD + '''
    c, s = torch.cos(abs(k) * omega), torch.sin(abs(k) * omega)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, -s, s, c
    return m.float()
''', feedback="|k|"),
    WrongAnswer("offset_matrix", "float64 returned", _OFFSET_HEAD + '''
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, -s, s, c
    return m
''', feedback="float32"),
    # -- linear_shift_residual -------------------------------------------------------------------
    WrongAnswer("linear_shift_residual", "map fitted the other way", _SHIFT_HEAD + '''
    m = torch.linalg.lstsq(y, x, driver="gelsd").solution
    return ((x - y @ m).norm() / x.norm()).item()
''', feedback="the other way", core=True, min_lost=0.5),  # the public check and the negative offset: 5 of 10
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
''', feedback="ahead instead of back", core=True, min_lost=0.5),  # the public check and the key test: 6 of 11
    WrongAnswer("relative_attention_projections", "temperature multiplied", _HEAD_HEAD + '''
    return (m * temperature).float(), eye.float()
''', feedback="multiplied instead of divided"),
    WrongAnswer("relative_attention_projections", "temperature on both sides", _HEAD_HEAD + '''
    return (m / temperature).float(), (eye / temperature).float()
''', feedback="both w_q and w_k"),
    WrongAnswer("relative_attention_projections", "offset map on both sides", _HEAD_HEAD + '''
    return (m / temperature).float(), m.float()
''', feedback="cancels", core=True, min_lost=0.5),
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
    WrongAnswer("offset_matrix", "angles computed in float32", '''
def offset_matrix(k, d_model, base=10000.0):
    if d_model <= 0 or d_model % 2:
        raise ValueError("d_model must be positive and even")
    omega = base ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    m = torch.zeros(d_model, d_model)
    e = torch.arange(0, d_model, 2)
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, -s, s, c
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
    m[e, e], m[e, e + 1], m[e + 1, e], m[e + 1, e + 1] = c, -s, s, c
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
    m = offset_matrix(-k, d_model, base).double()
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
    m = offset_matrix(-k, d_model, float(round(base))).double()
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
    ("offset_matrix", "block diagonal from Python floats with torch.block_diag", '''
def offset_matrix(k, d_model, base=10000.0):
    if d_model < 2 or d_model % 2:
        raise ValueError("d_model must be a positive even number")
    blocks = []
    for i in range(d_model // 2):
        a = k * base ** (-2 * i / d_model)
        blocks.append(torch.tensor([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]], dtype=torch.float64))
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
    return (eye / temperature).float(), offset_matrix(k, d_model, base)
'''),
    ("relative_attention_projections", "temperature split between queries and keys", _HEAD_HEAD + '''
    root = math.sqrt(temperature)
    return (m / root).float(), (eye / root).float()
'''),
]

_SHARE_HEAD = """
def offset_head_share(tokens, k, temperature=1.0, base=10000.0):
    if tokens.dim() != 2 or abs(k) >= tokens.shape[0]:
        raise ValueError("tokens must be 2-D and |k| < T")
    num, d_model = tokens.shape
    pe = sinusoidal_encoding(num, d_model, base).double()
    w_q, w_k = (w.double() for w in relative_attention_projections(k, d_model, temperature, base))
"""

_GEO = "fastest * (slowest / fastest) ** (torch.arange(8, dtype=torch.float64) / 7)"

WRONG_ANSWERS += [
    # -- offset_head_share -----------------------------------------------------------------------
    WrongAnswer("offset_head_share", "measured on the bare encoding", _SHARE_HEAD + """
    weights = torch.softmax((pe @ w_q) @ (pe @ w_k).T, dim=-1)
    q = torch.arange(max(0, k), min(num, num + k))
    return weights[q, q - k].mean().item()
""", feedback="bare encoding", core=True, min_lost=0.5),  # the public check: 4 of 8 points
    WrongAnswer("offset_head_share", "every query averaged, the key index wrapping around", _SHARE_HEAD + """
    x = tokens.double() + pe
    weights = torch.softmax((x @ w_q) @ (x @ w_k).T, dim=-1)
    q = torch.arange(num)
    return weights[q, (q - k) % num].mean().item()
""", feedback="wraps around"),
    WrongAnswer("offset_head_share", "fraction of queries whose argmax is m - k", _SHARE_HEAD + """
    x = tokens.double() + pe
    weights = torch.softmax((x @ w_q) @ (x @ w_k).T, dim=-1)
    q = torch.arange(max(0, k), min(num, num + k))
    return (weights[q].argmax(dim=-1) == q - k).double().mean().item()
""", feedback="largest weight"),
    WrongAnswer("offset_head_share", "softmax over the queries", _SHARE_HEAD + """
    x = tokens.double() + pe
    weights = torch.softmax((x @ w_q) @ (x @ w_k).T, dim=0)
    q = torch.arange(max(0, k), min(num, num + k))
    return weights[q, q - k].mean().item()
""", feedback="over the queries", core=True, min_lost=0.5),
    WrongAnswer("offset_head_share", "scores divided by sqrt(d_model)", _SHARE_HEAD + """
    x = tokens.double() + pe
    weights = torch.softmax((x @ w_q) @ (x @ w_k).T / math.sqrt(d_model), dim=-1)
    q = torch.arange(max(0, k), min(num, num + k))
    return weights[q, q - k].mean().item()
""", feedback="1/sqrt(d_model)"),
    WrongAnswer("offset_head_share", "negative offsets read as the queries from k on", _SHARE_HEAD + """
    x = tokens.double() + pe
    weights = torch.softmax((x @ w_q) @ (x @ w_k).T, dim=-1)
    q = torch.arange(abs(k), num)
    return weights[q, q - abs(k)].mean().item()
"""),
    # -- best_band -----------------------------------------------------------------------------
    # Shallow answers (a constant, the notebook's "the fast end decodes", a measurement of the
    # wrong metric) lose at least half: the six named cases need "fast" three times and "middle"
    # three times, and the property test meets both. Each fails four hidden tests by intent.
    WrongAnswer("best_band", "always the fast band (the exact-decoding table read as the answer)", """
def best_band(sigma, num_positions):
    return "fast"
""", costs=4, min_lost=0.5),
    WrongAnswer("best_band", "always the middle band", """
def best_band(sigma, num_positions):
    return "middle"
""", costs=4, min_lost=0.5),
    WrongAnswer("best_band", "always fast and slow together (each scale covering the other's weakness)", """
def best_band(sigma, num_positions):
    return "fast+slow"
""", costs=7, min_lost=0.5),
    WrongAnswer("best_band", "the slow band", """
def best_band(sigma, num_positions):
    return "slow"
""", costs=7, min_lost=0.5),
    WrongAnswer("best_band", "measured by the fraction decoded exactly instead of the mean error", """
def best_band(sigma, num_positions):
    bands = {"fast": list(range(16)), "middle": list(range(24, 40)), "slow": list(range(48, 64)),
             "fast+slow": list(range(8)) + list(range(56, 64))}
    pe = sinusoidal_encoding(num_positions, 64).double()
    noisy = pe + sigma * torch.randn(pe.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    hits = {name: (torch.cdist(noisy[:, d], pe[:, d]).argmin(1) == torch.arange(num_positions)).double().mean().item()
            for name, d in bands.items()}
    return max(hits, key=hits.get)
""", costs=4, min_lost=0.5),
    WrongAnswer("best_band", "a noise threshold that ignores the length (fast below sigma 0.45)", """
def best_band(sigma, num_positions):
    return "fast" if sigma < 0.45 else "middle"
""", costs=3),  # wrong at L = 256, sigma 0.5 and at L = 2048, sigma 0.55... and over the inputs
    WrongAnswer("best_band", "the dimensions instead of the band's name", """
def best_band(sigma, num_positions):
    return "0..15"
""", feedback="should be one of", costs=5, min_lost=0.5),
    # -- decoding_inv_freq -----------------------------------------------------------------------
    # A challenge is graded by the thresholds its design clears: a design that clears fewer fails
    # several of them by intent, so each entry's costs is the number of thresholds it misses. The
    # notebook's own designs (the paper's ladder, the fast band of the band experiment, equal steps)
    # reach the middle thresholds at most and lose at least half of the points.
    WrongAnswer("decoding_inv_freq", "the paper's ladder (clears the lowest noise level only)", """
def decoding_inv_freq(num_positions):
    return 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
""", feedback="threshold", costs=5, min_lost=0.5),  # misses sigma 0.2 to 0.5 and the lengths
    WrongAnswer("decoding_inv_freq", "the fast band of the band experiment (the 8 fastest pairs of d_model = 64)", """
def decoding_inv_freq(num_positions):
    return 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 64)
""", feedback="threshold", costs=3, min_lost=0.5),  # misses sigma 0.4, 0.5 and the lengths
    WrongAnswer("decoding_inv_freq", "one frequency for every pair", """
def decoding_inv_freq(num_positions):
    return torch.ones(8, dtype=torch.float64)
""", costs=7, min_lost=0.5),  # a period of 2 pi positions: clears no threshold
    WrongAnswer("decoding_inv_freq", "only fast frequencies, close together", """
def decoding_inv_freq(num_positions):
    return torch.linspace(1.0, 1.7, 8, dtype=torch.float64)
""", costs=6),
    WrongAnswer("decoding_inv_freq", "evenly spaced frequencies (the notebook's control)", """
def decoding_inv_freq(num_positions):
    return torch.linspace(2.9, 0.25, 8, dtype=torch.float64)
""", costs=5, min_lost=0.5),
    WrongAnswer("decoding_inv_freq", "a ladder from 2 rad down to 2/L (its slow pairs waste dimensions)", """
def decoding_inv_freq(num_positions):
    return 2.0 * (1.0 / num_positions) ** (torch.arange(8, dtype=torch.float64) / 7)
""", costs=3),
    WrongAnswer("decoding_inv_freq", "one frequency per dimension (16 values)", """
def decoding_inv_freq(num_positions):
    fastest, slowest = 2.8, 0.2
    return fastest * (slowest / fastest) ** (torch.arange(16, dtype=torch.float64) / 15)
""", feedback="shape", costs=7),  # 16 values are no design for 8 pairs: there is nothing to measure at any threshold
    # -- breakdown_noise -------------------------------------------------------------------------
    WrongAnswer("breakdown_noise", "a constant", """
def breakdown_noise(table, accuracy=0.5):
    if table.dim() != 2 or table.shape[0] < 2 or not 1 / table.shape[0] < accuracy < 1:
        raise ValueError("bad table or accuracy")
    return 0.5
""", costs=6, min_lost=0.5),
    WrongAnswer("breakdown_noise", "the public case's value hard-coded", """
def breakdown_noise(table, accuracy=0.5):
    if table.dim() != 2 or table.shape[0] < 2 or not 1 / table.shape[0] < accuracy < 1:
        raise ValueError("bad table or accuracy")
    return 1.2204
""", costs=5, min_lost=0.5),
    WrongAnswer("breakdown_noise", "the closed form of a +-1 bit code, one bit per column, for any table", """
def breakdown_noise(table, accuracy=0.5):
    if table.dim() != 2 or table.shape[0] < 2 or not 1 / table.shape[0] < accuracy < 1:
        raise ValueError("bad table or accuracy")
    half_gap = table.double().abs().max().item()
    z = torch.special.ndtri(torch.tensor(accuracy ** (1 / table.shape[1]), dtype=torch.float64)).item()
    return half_gap / z
""", costs=4, min_lost=0.5),  # right on the plain bit codes only
    WrongAnswer("breakdown_noise", "half the smallest distance between rows (no measurement)", """
def breakdown_noise(table, accuracy=0.5):
    if table.dim() != 2 or table.shape[0] < 2 or not 1 / table.shape[0] < accuracy < 1:
        raise ValueError("bad table or accuracy")
    gaps = torch.cdist(table.double(), table.double())
    return gaps[gaps > 0].min().item() / 2
""", costs=6, min_lost=0.5),
    WrongAnswer("breakdown_noise", "noise of standard deviation sigma for the whole vector, not per coordinate", """
def breakdown_noise(table, accuracy=0.5):
    if table.dim() != 2 or table.shape[0] < 2 or not 1 / table.shape[0] < accuracy < 1:
        raise ValueError("bad table or accuracy")
    clean = table.double()
    num, width = clean.shape
    z = torch.randn(max(1, 10_000 // num), num, width, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    truth = torch.arange(num).repeat(len(z))
    def fraction(s):
        noisy = (clean + s / math.sqrt(width) * z).reshape(-1, width)
        return (torch.cdist(noisy, clean).argmin(1) == truth).double().mean().item()
    lo, hi = 1e-4, 1e4
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if fraction(mid) > accuracy else (lo, mid)
    return math.sqrt(lo * hi)
""", costs=6),  # right only where d = 1 (some lines of the property test)
    WrongAnswer("breakdown_noise", "nearest row by the largest dot product, not the smallest distance", """
def breakdown_noise(table, accuracy=0.5):
    if table.dim() != 2 or table.shape[0] < 2 or not 1 / table.shape[0] < accuracy < 1:
        raise ValueError("bad table or accuracy")
    clean = table.double()
    num, width = clean.shape
    z = torch.randn(max(1, 10_000 // num), num, width, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    truth = torch.arange(num).repeat(len(z))
    def fraction(s):
        noisy = (clean + s * z).reshape(-1, width)
        return ((noisy @ clean.T).argmax(1) == truth).double().mean().item()
    lo, hi = 1e-4, 1e4
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if fraction(mid) > accuracy else (lo, mid)
    return math.sqrt(lo * hi)
""", costs=4),  # right where every row has the same norm around the origin (the plain bit codes)
    WrongAnswer("breakdown_noise", "no check of the accuracy (1 and 0 accepted)", """
def breakdown_noise(table, accuracy=0.5):
    if table.dim() != 2 or table.shape[0] < 2:
        raise ValueError("bad table")
    clean = table.double()
    num, width = clean.shape
    z = torch.randn(max(1, 10_000 // num), num, width, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    truth = torch.arange(num).repeat(len(z))
    def fraction(s):
        return (torch.cdist((clean + s * z).reshape(-1, width), clean).argmin(1) == truth).double().mean().item()
    lo, hi = 1e-4, 1e4
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if fraction(mid) > accuracy else (lo, mid)
    return math.sqrt(lo * hi)
"""),
    # -- shiftable_encoding ----------------------------------------------------------------------
    # A challenge: an encoding that clears fewer thresholds fails several tests by intent (costs
    # is the number of thresholds missed). The notebook's recipes lose at least half of the points.
    WrongAnswer("shiftable_encoding", "the sinusoidal encoding of section 1 at d_model = 8 (the notebook's recipe)", """
def shiftable_encoding(positions):
    angles = positions.double()[:, None] * 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)
""", feedback="smallest distance", costs=2, min_lost=0.5),  # the middle and top thresholds
    WrongAnswer("shiftable_encoding", "a constant vector (the identity moves it, it tells nothing apart)", """
def shiftable_encoding(positions):
    return torch.ones(len(positions), 8, dtype=torch.float64)
""", costs=5, min_lost=0.5),
    WrongAnswer("shiftable_encoding", "sines alone (no fixed linear map)", """
def shiftable_encoding(positions):
    return torch.sin(positions.double()[:, None] * 10000.0 ** (-torch.arange(8, dtype=torch.float64) / 8))
""", feedback="residual", costs=3, min_lost=0.5),
    WrongAnswer("shiftable_encoding", "the position itself (an exact shift map, unbounded)", """
def shiftable_encoding(positions):
    p = positions.double()[:, None]
    return torch.cat([torch.ones_like(p), p, torch.zeros(len(p), 6, dtype=torch.float64)], dim=1)
""", feedback="longest vector", costs=5, min_lost=0.5),
    WrongAnswer("shiftable_encoding", "the +-1 bits of the position (8 bits wrap after 256)", """
def shiftable_encoding(positions):
    return 2.0 * ((positions[:, None] % 256 >> torch.arange(8)) & 1).double() - 1.0
""", costs=4, min_lost=0.5),
    WrongAnswer("shiftable_encoding", "one frequency for every pair", """
def shiftable_encoding(positions):
    angles = positions.double()[:, None] * torch.ones(4, dtype=torch.float64)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)
""", costs=5, min_lost=0.5),
    WrongAnswer("shiftable_encoding", "angles computed in float32 (wrong far from the window)", """
def shiftable_encoding(positions):
    angles = positions.float()[:, None] * torch.tensor([1.713, 0.0338, 0.0054, 1.9571])
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1).double()
""", feedback="residual", costs=3),
]

CORRECT_VARIANTS += [
    ("offset_head_share", "the diagonal -k of the weight matrix, from offset_matrix directly", """
def offset_head_share(tokens, k, temperature=1.0, base=10000.0):
    if tokens.ndim != 2:
        raise ValueError("tokens must be (T, d_model)")
    if not -tokens.shape[0] < k < tokens.shape[0]:
        raise ValueError("|k| must be below T")
    x = tokens.to(torch.float64) + sinusoidal_encoding(*tokens.shape, base=base).to(torch.float64)
    scores = x @ offset_matrix(-k, tokens.shape[1], base).to(torch.float64) @ x.T / temperature
    return float(torch.softmax(scores, dim=1).diagonal(offset=-k).mean())
"""),
    ("offset_head_share", "a loop over queries with log-softmax", """
def offset_head_share(tokens, k, temperature=1.0, base=10000.0):
    if len(tokens.shape) != 2 or abs(k) >= len(tokens):
        raise ValueError("bad tokens or offset")
    num, d_model = tokens.shape
    w_q, w_k = relative_attention_projections(k, d_model, temperature=temperature, base=base)
    x = tokens.double() + sinusoidal_encoding(num, d_model, base=base).double()
    q, kk = x @ w_q.double(), x @ w_k.double()
    total, count = 0.0, 0
    for m in range(num):
        if 0 <= m - k < num:
            total += math.exp(torch.log_softmax(kk @ q[m], dim=0)[m - k].item())
            count += 1
    return total / count
"""),
    ("best_band", "measures a subset of positions per draw, with other seeds, and returns the smallest mean error", """
def best_band(sigma, num_positions):
    pe = sinusoidal_encoding(num_positions, 64).double()
    bands = {"fast": list(range(16)), "middle": list(range(24, 40)), "slow": list(range(48, 64)),
             "fast+slow": list(range(8)) + list(range(56, 64))}
    err = dict.fromkeys(bands, 0.0)
    for seed in range(6):
        gen = torch.Generator().manual_seed(50 + seed)
        pick = torch.randperm(num_positions, generator=gen)[:400]
        noisy = pe[pick] + sigma * torch.randn(len(pick), 64, generator=gen, dtype=torch.float64)
        for name, d in bands.items():
            err[name] += (torch.cdist(noisy[:, d], pe[:, d]).argmin(1) - pick).abs().double().mean().item()
    return min(err, key=err.get)
"""),
    ("best_band", "a rule read off the learner's own measurements: the crossover falls as L grows", """
def best_band(sigma, num_positions):
    crossover = 0.53 * (num_positions / 512) ** -0.33   # measured at L = 128, 512 and 2048
    return "fast" if sigma < crossover else "middle"
"""),
    ("decoding_inv_freq", "a steeper geometric ladder, from 2.5 down to 0.1 rad per position", """
def decoding_inv_freq(num_positions):
    return 2.5 * (0.1 / 2.5) ** (torch.arange(8, dtype=torch.float64) / 7)
"""),
    ("decoding_inv_freq", "no ladder: square roots of the first primes, folded below pi", """
def decoding_inv_freq(num_positions):
    return torch.tensor([2.0, 3, 5, 7, 11, 13, 17, 19]).sqrt() % math.pi
"""),
    ("breakdown_noise", "a grid of noise levels with fresh draws at each, interpolated in log sigma", """
def breakdown_noise(table, accuracy=0.5):
    if table.ndim != 2 or len(table) < 2:
        raise ValueError("need a 2-D table of at least two rows")
    if not 1 / len(table) < accuracy < 1:
        raise ValueError("accuracy must lie between 1/P and 1")
    clean = table.to(torch.float64)
    num, width = clean.shape
    gaps = torch.cdist(clean, clean)
    sigmas = torch.logspace(math.log10(gaps[gaps > 0].min().item() / 50), math.log10(gaps.max().item() * 20), 90,
                            dtype=torch.float64)
    gen = torch.Generator().manual_seed(11)
    reps = max(1, 6000 // num)
    found = []
    for s in sigmas.tolist():
        noisy = clean.repeat(reps, 1) + s * torch.randn(reps * num, width, generator=gen, dtype=torch.float64)
        found.append((torch.cdist(noisy, clean).argmin(1) == torch.arange(num).repeat(reps)).double().mean().item())
    for j in range(1, len(found)):
        if found[j] <= accuracy < found[j - 1]:
            t = (found[j - 1] - accuracy) / (found[j - 1] - found[j])
            return math.exp((1 - t) * math.log(sigmas[j - 1].item()) + t * math.log(sigmas[j].item()))
    return sigmas[-1].item()
"""),
    ("breakdown_noise", "exact exit distances of noise rays from each row's Voronoi cell, then a quantile", """
def breakdown_noise(table, accuracy=0.5):
    if table.dim() != 2 or table.shape[0] < 2:
        raise ValueError("table must be (P, d) with P >= 2")
    num, width = table.shape
    if accuracy <= 1 / num or accuracy >= 1:
        raise ValueError("accuracy must lie strictly between 1/P and 1")
    rows = table.double()
    # Along a noise direction z the decoding of row r is exact for sigma below the point where the
    # ray r + sigma z leaves r's Voronoi cell (a convex cell: it leaves once), at
    # sigma_c = min over q with z.(q - r) > 0 of |q - r|^2 / (2 z.(q - r)). The fraction decoded
    # exactly at sigma is the share of (row, direction) pairs with sigma_c > sigma.
    z = torch.randn(max(1, 40_000 // num), width, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    critical = []
    for r in range(num):
        diff = rows - rows[r]                                   # (P, d)
        sq = (diff * diff).sum(1)                                # (P,)
        proj = z @ diff.T                                        # (n, P)
        exit_at = torch.where(proj > 0, sq / (2 * proj.clamp_min(1e-300)), torch.full_like(proj, float("inf")))
        exit_at[:, r] = float("inf")
        critical.append(exit_at.min(1).values)
    critical = torch.cat(critical).clamp_max(1e300)            # a ray that never leaves its cell
    return torch.quantile(critical, 1 - accuracy).item()
"""),
    ("shiftable_encoding", "a geometric ladder from 2.7 to 6/1024 rad per position, in a rotated basis", """
def shiftable_encoding(positions):
    inv_freq = 2.7 * (6 / 2.7 / 1024) ** (torch.arange(4, dtype=torch.float64) / 3)
    angles = positions.to(torch.float64)[:, None] * inv_freq
    pairs = torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(len(positions), 8)
    q, _ = torch.linalg.qr(torch.randn(8, 8, generator=torch.Generator().manual_seed(3), dtype=torch.float64))
    return pairs @ q.T          # any fixed orthogonal mix: distances, lengths and shift maps carry over
"""),
    ("shiftable_encoding", "searched frequencies stored as (cos, sin), half-split", """
def shiftable_encoding(positions):
    angles = positions.double().unsqueeze(1) * torch.tensor([0.254, 1.45, 1.432, 0.0407], dtype=torch.float64)
    return torch.cat([torch.cos(angles), torch.sin(angles)], dim=1)
"""),
]
