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

_WAVE_HEAD = '''
def wavelengths(d_model, base=10000.0):
    if d_model <= 0 or d_model % 2:
        raise ValueError("d_model must be positive and even")
    i = torch.arange(d_model // 2, dtype=torch.float64)
'''

_BITS_HEAD = '''
def binary_encoding(num_positions, num_bits):
    if num_positions <= 0 or num_bits <= 0:
        raise ValueError("sizes must be positive")
    pos = torch.arange(num_positions)[:, None]
    j = torch.arange(num_bits)
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
    # -- wavelengths -----------------------------------------------------------------------------
    WrongAnswer("wavelengths", "exponent i/d", _WAVE_HEAD + '''
    return (2 * math.pi * base ** (i / d_model)).float()
''', feedback="exponent i/d_model"),
    WrongAnswer("wavelengths", "exponent 2i/(d-2)", _WAVE_HEAD + '''
    return (2 * math.pi * base ** (2 * i / (d_model - 2))).float()
''', feedback="2i/(d_model - 2)"),
    WrongAnswer("wavelengths", "missing 2 pi", _WAVE_HEAD + '''
    return (base ** (2 * i / d_model)).float()
''', feedback="missing the factor 2*pi"),
    WrongAnswer("wavelengths", "frequencies instead of wavelengths", _WAVE_HEAD + '''
    return (base ** (-2 * i / d_model)).float()
''', feedback="frequencies"),
    WrongAnswer("wavelengths", "one value per dimension instead of per pair", '''
def wavelengths(d_model, base=10000.0):
    if d_model <= 0 or d_model % 2:
        raise ValueError("d_model must be positive and even")
    j = torch.arange(d_model, dtype=torch.float64)
    return (2 * math.pi * base ** (j / d_model)).float()
'''),
    WrongAnswer("wavelengths", "base ignored", _WAVE_HEAD + '''
    return (2 * math.pi * 10000.0 ** (2 * i / d_model)).float()
''', feedback="base ignored"),
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
]
