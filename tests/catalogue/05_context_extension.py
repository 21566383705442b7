"""Plausible wrong answers for notebook 05; each must lose points under the hidden tests."""
from tests.catalogue import WrongAnswer

COSTS_ONCE = True
"""Every entry fails one hidden test (or the tests its ``costs`` names): one mistake costs once."""

_PI = '''
def linear_scaling_inv_freq(inv_freq, scale):
    if inv_freq.dim() != 1 or scale < 1:
        raise ValueError("bad input")
'''
_NTK = '''
def ntk_aware_base(base, scale, head_dim):
    if head_dim < 4 or head_dim % 2 or base <= 0 or scale < 1:
        raise ValueError("bad input")
'''
_DYN = '''
def dynamic_ntk_base(base, scale, head_dim, seq_len, original_max_position_embeddings):
    if head_dim < 4 or head_dim % 2 or base <= 0 or scale < 1 or seq_len < 1 or original_max_position_embeddings < 1:
        raise ValueError("bad input")
    d, L0 = head_dim, original_max_position_embeddings
    L = max(seq_len, L0)
'''


def _yarn(cut_orig="original_max_position_embeddings", floor="math.floor", ceil="math.ceil",
          gamma="((i - low) / (high - low)).clamp(0, 1)", factor="0.1 * math.log(scale) + 1.0",
          fast="beta_fast", slow="beta_slow"):
    return f'''
def yarn_inv_freq(head_dim, base, scale, original_max_position_embeddings, beta_fast=32.0, beta_slow=1.0):
    if head_dim < 4 or head_dim % 2 or base <= 1 or scale < 1 or not beta_fast > beta_slow > 0:
        raise ValueError("bad input")
    def cut(rotations):
        return head_dim * math.log({cut_orig} / (rotations * 2 * math.pi)) / (2 * math.log(base))
    low = max({floor}(cut({fast})), 0)
    high = min({ceil}(cut({slow})), head_dim - 1)
    if low == high:
        high += 0.001
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    theta = base ** (-2 * i / head_dim)
    gamma = {gamma}
    out = (1 - gamma) * theta + gamma * theta / scale
    return out.float(), float({factor}) if scale > 1 else 1.0
'''


def _llama3(low_wl="L / low_freq_factor", high_wl="L / high_freq_factor", wave="2 * math.pi / theta",
            divided="theta / scale", mu="(L / wl - low_freq_factor) / (high_freq_factor - low_freq_factor)"):
    return f'''
def llama3_inv_freq(head_dim, base, scale, original_max_position_embeddings, low_freq_factor=1.0, high_freq_factor=4.0):
    if head_dim < 2 or head_dim % 2 or base <= 1 or scale < 1 or not 0 < low_freq_factor < high_freq_factor \\
            or original_max_position_embeddings < 1:
        raise ValueError("bad input")
    L = original_max_position_embeddings
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    wl = {wave}
    divided = {divided}
    mu = {mu}
    blended = (1 - mu) * divided + mu * theta
    return torch.where(wl < {high_wl}, theta, torch.where(wl > {low_wl}, divided, blended)).float()
'''


_PROMPT_HEAD = '''
def passkey_prompt(context_length, depth, passkey, rng):
    if not 0.0 <= depth <= 1.0 or passkey < 0:
        raise ValueError("bad input")
    needle = NEEDLE.format(passkey=int(passkey))
    n_filler = context_length - len(needle) - len(QUESTION)
    if n_filler < 0:
        raise ValueError("too short")
'''
_FILL = '''
    pieces, total = [], -1  # total = length of " ".join(pieces)
    while total < n_filler:
        pieces.append(FILLER_SENTENCES[int(rng.integers(len(FILLER_SENTENCES)))])
        total += len(pieces[-1]) + 1
    filler = " ".join(pieces)[:n_filler]
    boundaries = [0] + [m.end() for m in re.finditer(r"\\. ", filler)] + [n_filler]
'''


def _accuracy(match="answer is not None and answer.group() == str(passkey)", result="hits / trials",
              loop="for _ in range(trials)"):
    return f'''
def passkey_accuracy(generate_fn, lengths, depths, trials):
    if trials < 1 or len(lengths) == 0 or len(depths) == 0:
        raise ValueError("bad input")
    rng = np.random.default_rng(0)
    accuracy = np.zeros((len(lengths), len(depths)), dtype=np.float64)
    for row, length in enumerate(lengths):
        for col, depth in enumerate(depths):
            hits = 0
            {loop}:
                passkey = int(rng.integers(10000, 100000))
                text = str(generate_fn(passkey_prompt(int(length), float(depth), passkey, rng)))
                answer = re.search(r"\\d+", text)
                hits += {match}
            accuracy[row, col] = {result}
    return accuracy
'''


WRONG_ANSWERS = [
    # -- linear_scaling_inv_freq ------------------------------------------------------------------
    WrongAnswer("linear_scaling_inv_freq", "multiplied by scale", _PI + '''
    return (inv_freq.double() * scale).float()
''', feedback="multiplied by scale"),
    WrongAnswer("linear_scaling_inv_freq", "divided by scale squared", _PI + '''
    return (inv_freq.double() / scale ** 2).float()
''', feedback="scale squared"),
    # A core mistake (DESIGN: at least half): the base scaled as NTK-aware does, without its exponent, so pair i is
    # divided by s^(2i/d) instead of every pair by s; the public test of the values owns it.
    WrongAnswer("linear_scaling_inv_freq", "PI applied to the base (base * scale) instead of the positions", _PI + '''
    i = torch.arange(len(inv_freq), dtype=torch.float64)
    return (inv_freq.double() * scale ** (-i / len(inv_freq))).float()
''', feedback="PI applied to the base", min_lost=0.5),
    WrongAnswer("linear_scaling_inv_freq", "integer scale", _PI + '''
    return (inv_freq.double() / int(scale)).float()
''', feedback="truncated to an integer"),
    WrongAnswer("linear_scaling_inv_freq", "float64 output", _PI + '''
    return inv_freq.double() / scale
'''),
    WrongAnswer("linear_scaling_inv_freq", "no validation", '''
def linear_scaling_inv_freq(inv_freq, scale):
    return (inv_freq.double() / scale).float()
'''),
    # -- ntk_aware_base ---------------------------------------------------------------------------
    WrongAnswer("ntk_aware_base", "exponent d/(d-1)", _NTK + '''
    return base * scale ** (head_dim / (head_dim - 1))
''', feedback="d/(d-1)"),
    WrongAnswer("ntk_aware_base", "exponent 1", _NTK + '''
    return base * scale
''', feedback="exponent 1"),
    WrongAnswer("ntk_aware_base", "exponent (d-2)/d", _NTK + '''
    return base * scale ** ((head_dim - 2) / head_dim)
''', feedback="(d-2)/d"),
    WrongAnswer("ntk_aware_base", "half head_dim", _NTK + '''
    d = head_dim // 2
    return base * scale ** (d / (d - 2))
''', feedback="head_dim // 2"),
    WrongAnswer("ntk_aware_base", "returns a tensor", _NTK + '''
    return torch.tensor(base * scale ** (head_dim / (head_dim - 2)))
'''),
    # -- dynamic_ntk_base -------------------------------------------------------------------------
    WrongAnswer("dynamic_ntk_base", "no max with L_orig", _DYN + '''
    return base * (scale * seq_len / L0 - (scale - 1)) ** (d / (d - 2))
''', feedback="without max"),
    WrongAnswer("dynamic_ntk_base", "ratio inverted", _DYN + '''
    return base * (scale * L0 / L - (scale - 1)) ** (d / (d - 2))
''', feedback="ratio inverted"),
    WrongAnswer("dynamic_ntk_base", "missing -(s-1)", _DYN + '''
    return base * (scale * L / L0) ** (d / (d - 2))
''', feedback="(s - 1)"),
    WrongAnswer("dynamic_ntk_base", "exponent d/(d-1)", _DYN + '''
    return base * (scale * L / L0 - (scale - 1)) ** (d / (d - 1))
''', feedback="d/(d-1)"),
    WrongAnswer("dynamic_ntk_base", "static NTK", _DYN + '''
    return base * scale ** (d / (d - 2))
''', feedback="seq_len ignored"),
    # -- yarn_inv_freq ----------------------------------------------------------------------------
    WrongAnswer("yarn_inv_freq", "ramp reversed", _yarn(gamma="1 - ((i - low) / (high - low)).clamp(0, 1)"),
                feedback="ramp reversed"),
    WrongAnswer("yarn_inv_freq", "L_orig replaced by the new length",
                _yarn(cut_orig="scale * original_max_position_embeddings"),
                feedback="replaced by the new length"),
    WrongAnswer("yarn_inv_freq", "no floor/ceil", _yarn(floor="float", ceil="float"), feedback="not rounded"),
    WrongAnswer("yarn_inv_freq", "betas swapped", _yarn(fast="beta_slow", slow="beta_fast"), feedback="swapped"),
    WrongAnswer("yarn_inv_freq", "attention factor squared (logit factor)",
                _yarn(factor="(0.1 * math.log(scale) + 1.0) ** 2"), feedback="attention factor squared"),
    WrongAnswer("yarn_inv_freq", "attention factor as 1/t", _yarn(factor="1 / (0.1 * math.log(scale) + 1.0)"),
                feedback="inverted"),
    WrongAnswer("yarn_inv_freq", "attention factor applied once (square root)",
                _yarn(factor="math.sqrt(0.1 * math.log(scale) + 1.0)"), feedback="square root"),
    WrongAnswer("yarn_inv_freq", "log10", _yarn(factor="0.1 * math.log10(scale) + 1.0"), feedback="log base 10"),
    # -- llama3_inv_freq --------------------------------------------------------------------------
    WrongAnswer("llama3_inv_freq", "thresholds swapped",
                _llama3(low_wl="L / high_freq_factor", high_wl="L / low_freq_factor"), feedback="thresholds swapped"),
    WrongAnswer("llama3_inv_freq", "smooth factor reversed",
                _llama3(mu="1 - (L / wl - low_freq_factor) / (high_freq_factor - low_freq_factor)"),
                feedback="smooth factor reversed"),
    WrongAnswer("llama3_inv_freq", "wavelength without 2 pi", _llama3(wave="1 / theta"), feedback="without 2 pi"),
    WrongAnswer("llama3_inv_freq", "multiplied by the factor", _llama3(divided="theta * scale"),
                feedback="multiplied by the factor"),
    WrongAnswer("llama3_inv_freq", "factors ignored in thresholds", _llama3(low_wl="L", high_wl="L / 4"),
                feedback="hard-coded"),
    WrongAnswer("llama3_inv_freq", "everything divided (PI)", _llama3(high_wl="0", low_wl="0"),
                feedback="Position Interpolation"),
    # -- passkey_prompt ---------------------------------------------------------------------------
    WrongAnswer("passkey_prompt", "depth measured from the end", _PROMPT_HEAD + '''
    rng = np.random.default_rng(rng)''' + _FILL + '''
    target = (1 - depth) * n_filler
    at = min(boundaries, key=lambda b: (abs(b - target), b))
    return filler[:at] + needle + filler[at:] + QUESTION
''', feedback="from the end"),
    WrongAnswer("passkey_prompt", "needle mid-sentence at the raw index", _PROMPT_HEAD + '''
    rng = np.random.default_rng(rng)''' + _FILL + '''
    at = round(depth * n_filler)
    return filler[:at] + needle + filler[at:] + QUESTION
'''),
    WrongAnswer("passkey_prompt", "rng ignored", _PROMPT_HEAD + '''
    rng = np.random.default_rng(0)''' + _FILL + '''
    at = min(boundaries, key=lambda b: (abs(b - depth * n_filler), b))
    return filler[:at] + needle + filler[at:] + QUESTION
'''),
    WrongAnswer("passkey_prompt", "question not counted in the length", _PROMPT_HEAD + '''
    n_filler += len(QUESTION)
    rng = np.random.default_rng(rng)''' + _FILL + '''
    at = min(boundaries, key=lambda b: (abs(b - depth * n_filler), b))
    return filler[:at] + needle + filler[at:] + QUESTION
'''),
    WrongAnswer("passkey_prompt", "one sentence repeated", _PROMPT_HEAD + '''
    filler = (" ".join([FILLER_SENTENCES[0]] * (n_filler // 10 + 1)))[:n_filler]
    boundaries = [0] + [m.end() for m in re.finditer(r"\\. ", filler)] + [n_filler]
    at = min(boundaries, key=lambda b: (abs(b - depth * n_filler), b))
    return filler[:at] + needle + filler[at:] + QUESTION
'''),
    # -- passkey_accuracy -------------------------------------------------------------------------
    WrongAnswer("passkey_accuracy", "substring match", _accuracy(match="str(passkey) in text"),
                feedback="substring"),
    WrongAnswer("passkey_accuracy", "counts instead of fractions", _accuracy(result="hits"), feedback="counts"),
    WrongAnswer("passkey_accuracy", "only one trial per cell", _accuracy(loop="for _ in range(1)",
                                                                          result="hits / 1")),
    WrongAnswer("passkey_accuracy", "no regex, whole output compared", _accuracy(
        match="text.strip() == str(passkey)")),
    WrongAnswer("passkey_accuracy", "axes transposed", '''
def passkey_accuracy(generate_fn, lengths, depths, trials):
    if trials < 1 or len(lengths) == 0 or len(depths) == 0:
        raise ValueError("bad input")
    rng = np.random.default_rng(0)
    accuracy = np.zeros((len(depths), len(lengths)), dtype=np.float64)
    for row, depth in enumerate(depths):
        for col, length in enumerate(lengths):
            hits = 0
            for _ in range(trials):
                passkey = int(rng.integers(10000, 100000))
                answer = re.search(r"\\d+", str(generate_fn(passkey_prompt(int(length), float(depth), passkey, rng))))
                hits += answer is not None and answer.group() == str(passkey)
            accuracy[row, col] = hits / trials
    return accuracy
'''),
]

# -- mistakes that only the property tests and the error tests of each kind catch ------------------
_PROMPT_TAIL = '''
    at = min(boundaries, key=lambda b: (abs(b - depth * n_filler), b))
    return filler[:at] + needle + filler[at:] + QUESTION
'''

WRONG_ANSWERS += [
    # -- linear_scaling_inv_freq ------------------------------------------------------------------
    WrongAnswer("linear_scaling_inv_freq", "divides inv_freq in place", _PI + '''
    out = inv_freq.float()     # the same tensor when inv_freq is already float32
    out /= scale
    return out
''', feedback="in place"),
    WrongAnswer("linear_scaling_inv_freq", "divides in the input's half precision", _PI + '''
    return (inv_freq / scale).float()
''', feedback="half precision"),
    WrongAnswer("linear_scaling_inv_freq", "accepts a 0-D inv_freq (checks only dim > 1)", '''
def linear_scaling_inv_freq(inv_freq, scale):
    if inv_freq.dim() > 1 or scale < 1:
        raise ValueError("bad input")
    return (inv_freq.double() / scale).float()
'''),
    # -- ntk_aware_base ---------------------------------------------------------------------------
    WrongAnswer("ntk_aware_base", "base not validated", '''
def ntk_aware_base(base, scale, head_dim):
    if head_dim < 4 or head_dim % 2 or scale < 1:
        raise ValueError("bad input")
    return float(base) * float(scale) ** (head_dim / (head_dim - 2))
'''),
    WrongAnswer("ntk_aware_base", "base <= 1 rejected (the docstring allows any base > 0)", '''
def ntk_aware_base(base, scale, head_dim):
    if head_dim < 4 or head_dim % 2 or base <= 1 or scale < 1:
        raise ValueError("bad input")
    return float(base) * float(scale) ** (head_dim / (head_dim - 2))
'''),
    WrongAnswer("ntk_aware_base", "head_dim 4 rejected (head_dim <= 4)", '''
def ntk_aware_base(base, scale, head_dim):
    if head_dim <= 4 or head_dim % 2 or base <= 0 or scale < 1:
        raise ValueError("bad input")
    return float(base) * float(scale) ** (head_dim / (head_dim - 2))
'''),
    WrongAnswer("ntk_aware_base", "scale truncated to an integer", _NTK + '''
    return float(base) * int(scale) ** (head_dim / (head_dim - 2))
'''),
    # -- dynamic_ntk_base -------------------------------------------------------------------------
    WrongAnswer("dynamic_ntk_base", "original length not validated (ZeroDivisionError on 0)", '''
def dynamic_ntk_base(base, scale, head_dim, seq_len, original_max_position_embeddings):
    if head_dim < 4 or head_dim % 2 or base <= 0 or scale < 1 or seq_len < 1:
        raise ValueError("bad input")
    L0 = original_max_position_embeddings
    return base * (scale * max(seq_len, L0) / L0 - (scale - 1)) ** (head_dim / (head_dim - 2))
'''),
    WrongAnswer("dynamic_ntk_base", "only odd head_dim rejected (head_dim 2 divides by zero)", '''
def dynamic_ntk_base(base, scale, head_dim, seq_len, original_max_position_embeddings):
    L0 = original_max_position_embeddings
    if head_dim % 2 or base <= 0 or scale < 1 or seq_len < 1 or L0 < 1:
        raise ValueError("bad input")
    return base * (scale * max(seq_len, L0) / L0 - (scale - 1)) ** (head_dim / (head_dim - 2))
'''),
    WrongAnswer("dynamic_ntk_base", "base not validated", '''
def dynamic_ntk_base(base, scale, head_dim, seq_len, original_max_position_embeddings):
    L0 = original_max_position_embeddings
    if head_dim < 4 or head_dim % 2 or scale < 1 or seq_len < 1 or L0 < 1:
        raise ValueError("bad input")
    return base * (scale * max(seq_len, L0) / L0 - (scale - 1)) ** (head_dim / (head_dim - 2))
'''),
    WrongAnswer("dynamic_ntk_base", "seq_len checked with == 0 (negative lengths accepted)", '''
def dynamic_ntk_base(base, scale, head_dim, seq_len, original_max_position_embeddings):
    L0 = original_max_position_embeddings
    if head_dim < 4 or head_dim % 2 or base <= 0 or scale < 1 or seq_len == 0 or L0 < 1:
        raise ValueError("bad input")
    return base * (scale * max(seq_len, L0) / L0 - (scale - 1)) ** (head_dim / (head_dim - 2))
'''),
    WrongAnswer("dynamic_ntk_base", "scale truncated to an integer", _DYN + '''
    scale = int(scale)
    return base * (scale * L / L0 - (scale - 1)) ** (d / (d - 2))
'''),
    # -- yarn_inv_freq ----------------------------------------------------------------------------
    WrongAnswer("yarn_inv_freq", "high clamped to head_dim // 2 - 1",
                _yarn().replace("head_dim - 1)", "head_dim // 2 - 1)"), feedback="head_dim // 2 - 1"),
    WrongAnswer("yarn_inv_freq", "no + 0.001 when the ends coincide (0 / 0)",
                _yarn().replace("high += 0.001", "pass")),
    WrongAnswer("yarn_inv_freq", "head_dim 2 accepted (only odd head_dim rejected)",
                _yarn().replace("head_dim < 4 or ", "")),
    WrongAnswer("yarn_inv_freq", "base only checked > 0", _yarn().replace("base <= 1", "base <= 0")),
    WrongAnswer("yarn_inv_freq", "beta_slow > 0 not checked", _yarn().replace(
        "not beta_fast > beta_slow > 0", "not beta_fast > beta_slow")),
    WrongAnswer("yarn_inv_freq", "high not clamped to head_dim - 1",
                _yarn().replace("min(math.ceil(cut(beta_slow)), head_dim - 1)", "math.ceil(cut(beta_slow))")),
    WrongAnswer("yarn_inv_freq", "scale truncated to an integer", _yarn().replace("theta / scale", "theta / int(scale)")),
    # -- llama3_inv_freq --------------------------------------------------------------------------
    WrongAnswer("llama3_inv_freq", "low_freq_factor > 0 not checked",
                _llama3().replace("not 0 < low_freq_factor < high_freq_factor", "not low_freq_factor < high_freq_factor")),
    WrongAnswer("llama3_inv_freq", "original length not validated",
                _llama3().replace(" \\\n            or original_max_position_embeddings < 1", "")),
    WrongAnswer("llama3_inv_freq", "head_dim 2 rejected (head_dim < 4)", _llama3().replace("head_dim < 2", "head_dim < 4")),
    WrongAnswer("llama3_inv_freq", "base not validated", _llama3().replace("base <= 1 or ", "")),
    WrongAnswer("llama3_inv_freq", "scale truncated to an integer", _llama3(divided="theta / int(scale)")),
    # -- passkey_prompt ---------------------------------------------------------------------------
    WrongAnswer("passkey_prompt", "n_filler with the unformatted NEEDLE template (4 characters short)",
                _PROMPT_HEAD.replace("n_filler = context_length - len(needle)", "n_filler = context_length - len(NEEDLE)")
                + '''
    rng = np.random.default_rng(rng)''' + _FILL + _PROMPT_TAIL),
    WrongAnswer("passkey_prompt", "needle length hard-coded for a 5-digit passkey",
                _PROMPT_HEAD.replace("n_filler = context_length - len(needle)", "n_filler = context_length - 23")
                + '''
    rng = np.random.default_rng(rng)''' + _FILL + _PROMPT_TAIL),
    WrongAnswer("passkey_prompt", "tie goes to the later boundary", _PROMPT_HEAD + '''
    rng = np.random.default_rng(rng)''' + _FILL + '''
    at = min(boundaries, key=lambda b: (abs(b - depth * n_filler), -b))
    return filler[:at] + needle + filler[at:] + QUESTION
''', feedback="earlier one wins"),
    WrongAnswer("passkey_prompt", "exact fit rejected (n_filler <= 0)",
                _PROMPT_HEAD.replace("if n_filler < 0:", "if n_filler <= 0:") + '''
    rng = np.random.default_rng(rng)''' + _FILL + _PROMPT_TAIL),
    # -- passkey_accuracy -------------------------------------------------------------------------
    WrongAnswer("passkey_accuracy", "accuracy rounded to 2 decimals", _accuracy(result="round(hits / trials, 2)"),
                feedback="rounded"),
    WrongAnswer("passkey_accuracy", "empty depths not rejected", _accuracy().replace(
        " or len(depths) == 0", "")),
    WrongAnswer("passkey_accuracy", "trials checked with == 0", _accuracy().replace("trials < 1", "trials == 0")),
]

CORRECT_VARIANTS = [
    ("linear_scaling_inv_freq", "divides in float32 on a copy", '''
def linear_scaling_inv_freq(inv_freq, scale):
    if inv_freq.ndim != 1:
        raise ValueError("inv_freq must be 1-D")
    if scale < 1:
        raise ValueError("scale must be >= 1")
    out = inv_freq.to(torch.float32, copy=True)
    out /= scale
    return out
'''),
    ("ntk_aware_base", "exp and log", '''
def ntk_aware_base(base, scale, head_dim):
    if head_dim < 4 or head_dim % 2 or base <= 0 or scale < 1:
        raise ValueError("bad input")
    return math.exp(math.log(base) + head_dim / (head_dim - 2) * math.log(scale))
'''),
    ("dynamic_ntk_base", "base unchanged up to L_orig, written as a branch", '''
def dynamic_ntk_base(base, scale, head_dim, seq_len, original_max_position_embeddings):
    if head_dim < 4 or head_dim % 2 or base <= 0 or scale < 1:
        raise ValueError("bad input")
    if seq_len < 1 or original_max_position_embeddings < 1:
        raise ValueError("bad length")
    if seq_len <= original_max_position_embeddings:
        return float(base)
    ratio = (scale * seq_len - (scale - 1) * original_max_position_embeddings) / original_max_position_embeddings
    return base * ratio ** (head_dim / (head_dim - 2))
'''),
    ("yarn_inv_freq", "Hugging Face's float32 computation", '''
def yarn_inv_freq(head_dim, base, scale, original_max_position_embeddings, beta_fast=32.0, beta_slow=1.0):
    if head_dim < 4 or head_dim % 2 or base <= 1 or scale < 1 or original_max_position_embeddings < 1:
        raise ValueError("bad input")
    if not (beta_fast > beta_slow and beta_slow > 0):
        raise ValueError("bad betas")
    dim, L = head_dim, original_max_position_embeddings

    def find_correction_dim(num_rotations):
        return (dim * math.log(L / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(find_correction_dim(beta_fast)), 0)
    high = min(math.ceil(find_correction_dim(beta_slow)), dim - 1)
    if low == high:
        high += 0.001
    linear = (torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)
    ramp = torch.clamp(linear, 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    extrapolation = 1.0 / pos_freqs
    interpolation = 1.0 / (scale * pos_freqs)
    extrapolation_factor = 1 - ramp
    inv_freq = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor
    return inv_freq, (0.1 * math.log(scale) + 1.0) if scale > 1 else 1.0
'''),
    ("llama3_inv_freq", "Hugging Face's float32 computation", '''
def llama3_inv_freq(head_dim, base, scale, original_max_position_embeddings, low_freq_factor=1.0, high_freq_factor=4.0):
    if head_dim < 2 or head_dim % 2 or base <= 1 or scale < 1 or original_max_position_embeddings < 1:
        raise ValueError("bad input")
    if not 0 < low_freq_factor < high_freq_factor:
        raise ValueError("bad factors")
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    old = original_max_position_embeddings
    low_freq_wavelen = old / low_freq_factor
    high_freq_wavelen = old / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    llama = torch.where(wavelen > low_freq_wavelen, inv_freq / scale, inv_freq)
    smooth = (old / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth) * llama / scale + smooth * llama
    medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(medium, smoothed, llama)
'''),
    ("passkey_prompt", "rng.choice, and a scan over the boundaries", '''
def passkey_prompt(context_length, depth, passkey, rng):
    if depth < 0 or depth > 1:
        raise ValueError("depth")
    if passkey < 0:
        raise ValueError("passkey")
    needle = NEEDLE.format(passkey=passkey)
    n_filler = context_length - len(needle) - len(QUESTION)
    if n_filler < 0:
        raise ValueError("too short")
    rng = np.random.default_rng(rng)
    filler = rng.choice(FILLER_SENTENCES)
    while len(filler) < n_filler:
        filler += " " + rng.choice(FILLER_SENTENCES)
    filler = filler[:n_filler]
    target = depth * n_filler
    best = 0
    for i in range(1, n_filler + 1):
        if i == n_filler or filler[i - 2:i] == ". ":
            if abs(i - target) < abs(best - target):
                best = i
    return filler[:best] + needle + filler[best:] + QUESTION
'''),
    ("passkey_accuracy", "hits collected in a list, re.match on the digits", '''
def passkey_accuracy(generate_fn, lengths, depths, trials):
    if trials < 1:
        raise ValueError("trials")
    if not len(lengths) or not len(depths):
        raise ValueError("empty grid")
    rng = np.random.default_rng(0)
    rows = []
    for length in lengths:
        row = []
        for depth in depths:
            correct = 0
            for _ in range(trials):
                key = rng.integers(10000, 100000)
                prompt = passkey_prompt(length, depth, int(key), rng)
                found = re.match(r"\\D*(\\d+)", generate_fn(prompt))
                correct += int(found is not None and int(found.group(1)) == key and found.group(1)[0] != "0")
            row.append(correct / trials)
        rows.append(row)
    return np.array(rows, dtype=np.float64)
'''),
]

# -- extension_inv_freq (challenge): rules that miss a threshold ------------------------------------
# Each entry is a design: every threshold it misses is a step of the grade, so it costs each (eight tests: the
# public one, 2.5, 1.9, the middle and top thresholds at s = 8 and at s = 4, and the other scales). The notebook's
# own rules, with any constant the chapter tried, are shallow answers: each must lose at least half the points.
_RECIPE = dict(costs=4, min_lost=0.5)
WRONG_ANSWERS += [
    WrongAnswer("extension_inv_freq", "frequencies returned unchanged (no scaling)", '''
def extension_inv_freq(inv_freq, scale):
    return inv_freq.clone(), 1.0
''', feedback="threshold", costs=8, min_lost=0.5),
    WrongAnswer("extension_inv_freq", "Position Interpolation without fine-tuning", '''
def extension_inv_freq(inv_freq, scale):
    return inv_freq / scale, 1.0
''', feedback="threshold", costs=8, min_lost=0.5),
    WrongAnswer("extension_inv_freq", "ramp reversed: fast pairs divided, slow pairs kept", '''
def extension_inv_freq(inv_freq, scale):
    theta = inv_freq.double()
    turns = 128 * theta / (2 * math.pi)
    keep = ((turns - 1.0) / 4.0).clamp(0, 1)
    return ((1 - keep) * theta + keep * theta / scale).float(), 0.1 * math.log(scale) + 1.0
''', costs=8),
    WrongAnswer("extension_inv_freq", "attention factor as a temperature dividing the logits (1 / (0.1 ln s + 1))", '''
def extension_inv_freq(inv_freq, scale):
    inv, factor = yarn_inv_freq(2 * len(inv_freq), 100.0, scale, 128, 5.0, 1.0)
    return inv, 1.0 / factor
''', costs=8),
    # The pair the contract asks for (the public test), and a design that drops YaRN's attention factor (read
    # with a factor of 1 it misses the top thresholds as YaRN does).
    WrongAnswer("extension_inv_freq", "returns the frequencies only", '''
def extension_inv_freq(inv_freq, scale):
    return yarn_inv_freq(2 * len(inv_freq), 100.0, scale, 128, 5.0, 1.0)[0]
''', feedback="(inv_freq, attention_factor)", costs=5),
    # -- the notebook's own rules, with the chapter's constants (shallow answers) --
    WrongAnswer("extension_inv_freq", "the notebook's YaRN (beta_fast 5, 0.1 ln s + 1)", '''
def extension_inv_freq(inv_freq, scale):
    return yarn_inv_freq(2 * len(inv_freq), BASE, scale, TRAIN_LEN, BETA_FAST, BETA_SLOW)
''', **_RECIPE),
    WrongAnswer("extension_inv_freq", "YaRN with the fitted temperature 0.082 ln s + 1", '''
def extension_inv_freq(inv_freq, scale):
    return yarn_inv_freq(32, 100.0, scale, 128, 5.0, 1.0)[0], 0.082 * math.log(scale) + 1.0
''', **_RECIPE),
    WrongAnswer("extension_inv_freq", "YaRN with the sweep's best attention factor at s = 8 (1.15)", '''
def extension_inv_freq(inv_freq, scale):
    return yarn_inv_freq(32, 100.0, scale, 128, 5.0, 1.0)[0], 1.15
''', **_RECIPE),
    WrongAnswer("extension_inv_freq", "YaRN with beta_fast 2", '''
def extension_inv_freq(inv_freq, scale):
    return yarn_inv_freq(32, 100.0, scale, 128, 2.0, 1.0)
''', **_RECIPE),
    WrongAnswer("extension_inv_freq", "YaRN with the paper's beta_fast 32 on a model trained at 128", '''
def extension_inv_freq(inv_freq, scale):
    return yarn_inv_freq(2 * len(inv_freq), 100.0, scale, 128, 32.0, 1.0)
''', **_RECIPE),
    WrongAnswer("extension_inv_freq", "YaRN's ramp as the paper writes it (linear in the turns r_i), beta 5 and 1", '''
def extension_inv_freq(inv_freq, scale):
    theta = inv_freq.double()
    keep = ((128 * theta / (2 * math.pi) - 1.0) / 4.0).clamp(0, 1)
    return (keep * theta + (1 - keep) * theta / scale).float(), 0.1 * math.log(scale) + 1.0
''', **_RECIPE),
    WrongAnswer("extension_inv_freq", "NTK-aware base without a temperature", '''
def extension_inv_freq(inv_freq, scale):
    d = 2 * len(inv_freq)
    i = torch.arange(len(inv_freq), dtype=torch.float64)
    return (inv_freq.double() * scale ** (-2 * i / (d - 2))).float(), 1.0
''', **_RECIPE),
    WrongAnswer("extension_inv_freq", "NTK-aware base with YaRN's temperature", '''
def extension_inv_freq(inv_freq, scale):
    d = 2 * len(inv_freq)
    i = torch.arange(len(inv_freq), dtype=torch.float64)
    return (inv_freq.double() * scale ** (-2 * i / (d - 2))).float(), 0.1 * math.log(scale) + 1.0
''', **_RECIPE),
    WrongAnswer("extension_inv_freq", "NTK-aware with alpha = 2 s", '''
def extension_inv_freq(inv_freq, scale):
    return default_inv_freq(32, ntk_aware_base(100.0, 2 * scale, 32)), 1.0
''', costs=8, min_lost=0.5),
    WrongAnswer("extension_inv_freq", "dynamic NTK with factor s at the length 128 s", '''
def extension_inv_freq(inv_freq, scale):
    return default_inv_freq(32, dynamic_ntk_base(100.0, scale, 32, int(128 * scale), 128)), 1.0
''', costs=8, min_lost=0.5),
    WrongAnswer("extension_inv_freq", "Llama 3 (low_freq_factor 1, high_freq_factor 4)", '''
def extension_inv_freq(inv_freq, scale):
    return llama3_inv_freq(32, 100.0, scale, 128), 1.0
''', **_RECIPE),
    WrongAnswer("extension_inv_freq", "Llama 3 with YaRN's temperature", '''
def extension_inv_freq(inv_freq, scale):
    return llama3_inv_freq(32, 100.0, scale, 128), 0.1 * math.log(scale) + 1.0
''', **_RECIPE),
    WrongAnswer("extension_inv_freq", "Llama 3 with high_freq_factor moved to 1.79 and YaRN's temperature", '''
def extension_inv_freq(inv_freq, scale):
    return llama3_inv_freq(32, 100.0, scale, 128, 1.0, 1.79), 0.1 * math.log(scale) + 1.0
''', **_RECIPE),
]

# -- diagnose_rope (diagnose): detectors that miss a bug or accuse a correct module --------------------
_DIAG_HEAD = '''
def diagnose_rope(rotary, method, head_dim, base, scale, original_max_position_embeddings):
    half = head_dim // 2
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)

    def inv_freq_at(seq_len):
        cos, sin = rotary(seq_len)
        return torch.atan2(sin[1, :half].double(), cos[1, :half].double())

    L0 = original_max_position_embeddings
'''
_DIAG_DYNAMIC = '''    if method == "dynamic NTK":
        short = inv_freq_at(L0)
        return "correct" if torch.allclose(short, theta, rtol=1e-4, atol=0) else "stale base"
'''
_DIAG_TWICE = '''    ratio = theta / inv_freq_at(int(scale * L0))
    if ratio.max() > scale * (1 + 1e-3):
        return "scaled twice"
'''
_DIAG_LENGTH = '''    if method in ("YaRN", "Llama 3"):
        slow = 2 * math.pi / theta > L0
        if not torch.allclose(ratio[slow], torch.full_like(ratio[slow], scale), rtol=1e-3, atol=0):
            return "wrong original length"
'''
_DIAG_RAMP = '''        if (ratio.diff() < -1e-3 * scale).any():
            return "reversed ramp"
    return "correct"
'''
WRONG_ANSWERS += [
    # A detector that accepts everything misses each bug (each bug is its own test) and gives a correct
    # module and its buggy ones the same name (test_diagnose_depends_on_the_module).
    WrongAnswer("diagnose_rope", "every module called correct", '''
def diagnose_rope(rotary, method, head_dim, base, scale, original_max_position_embeddings):
    return "correct"
''', costs=5, shallow=True),
    WrongAnswer("diagnose_rope", "dynamic NTK checked only at the extended length, where a stale base is right too",
                _DIAG_HEAD + '''    if method == "dynamic NTK":
        long = inv_freq_at(int(scale * L0))
        return "correct" if long[-1] < theta[-1] * (1 - 1e-3) else "stale base"
''' + _DIAG_TWICE + _DIAG_LENGTH + _DIAG_RAMP),
    WrongAnswer("diagnose_rope", "float32 tables compared exactly (ratio > s without a tolerance)",
                _DIAG_HEAD + _DIAG_DYNAMIC + _DIAG_TWICE.replace("scale * (1 + 1e-3)", "scale") + _DIAG_LENGTH + _DIAG_RAMP),
    WrongAnswer("diagnose_rope", "original length checked on the slowest pair only",
                _DIAG_HEAD + _DIAG_DYNAMIC + _DIAG_TWICE + _DIAG_LENGTH.replace(
                    "slow = 2 * math.pi / theta > L0", "slow = torch.arange(half) == half - 1") + _DIAG_RAMP),
    WrongAnswer("diagnose_rope", "reversed ramp looked for in the kept pairs only (pair 0 divided?)",
                _DIAG_HEAD + _DIAG_DYNAMIC + _DIAG_TWICE + _DIAG_LENGTH + _DIAG_RAMP.replace(
                    "(ratio.diff() < -1e-3 * scale).any()", "abs(ratio[0] - 1) > 1e-3")),
    WrongAnswer("diagnose_rope", "original length tested before scaled twice (a doubled YaRN or Llama 3 is misnamed)",
                _DIAG_HEAD + _DIAG_DYNAMIC + '''    ratio = theta / inv_freq_at(int(scale * L0))
''' + _DIAG_LENGTH + '''    if ratio.max() > scale * (1 + 1e-3):
        return "scaled twice"
    if method in ("YaRN", "Llama 3"):
''' + _DIAG_RAMP),
]

CORRECT_VARIANTS += [
    ("diagnose_rope", "compares the tables with the notebook's own scaling functions", '''
def diagnose_rope(rotary, method, head_dim, base, scale, original_max_position_embeddings):
    L0 = original_max_position_embeddings
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)

    def expected(orig, seq_len):
        if method == "PI":
            return linear_scaling_inv_freq(theta, scale).double(), 1.0
        if method == "dynamic NTK":
            b = dynamic_ntk_base(base, scale, head_dim, seq_len, orig)
            return b ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim), 1.0
        if method == "YaRN":
            inv, factor = yarn_inv_freq(head_dim, base, scale, orig)
            return inv.double(), factor
        return llama3_inv_freq(head_dim, base, scale, orig).double(), 1.0

    def same(seq_len, inv, factor, positions_scale=1.0):
        cos, sin = rotary(seq_len)
        angles = torch.arange(seq_len, dtype=torch.float64)[:, None] / positions_scale * inv[None, :]
        angles = torch.cat([angles, angles], dim=-1)
        return (torch.allclose(cos.double(), factor * angles.cos(), atol=1e-4, rtol=0)
                and torch.allclose(sin.double(), factor * angles.sin(), atol=1e-4, rtol=0))

    n = min(int(scale * L0), 64)   # the first 64 positions tell the frequencies apart
    if method == "dynamic NTK":
        return "correct" if same(L0, *expected(L0, L0)) else "stale base"
    if same(n, *expected(L0, n)):
        return "correct"
    if same(n, *expected(L0, n), positions_scale=scale):
        return "scaled twice"
    if method in ("YaRN", "Llama 3") and same(n, *expected(int(round(scale * L0)), n)):
        return "wrong original length"
    return "reversed ramp"
'''),
    ("passkey_accuracy", "every passkey drawn first, prompts from a second generator spawned from the first", '''
def passkey_accuracy(generate_fn, lengths, depths, trials):
    if trials < 1 or len(lengths) == 0 or len(depths) == 0:
        raise ValueError("need trials >= 1 and non-empty lengths and depths")
    rng = np.random.default_rng(0)
    keys = rng.integers(10000, 100000, size=(len(lengths), len(depths), trials))
    prompt_rng = rng.spawn(1)[0]
    out = np.empty((len(lengths), len(depths)))
    for r, length in enumerate(lengths):
        for c, depth in enumerate(depths):
            answers = [generate_fn(passkey_prompt(int(length), float(depth), int(k), prompt_rng)) for k in keys[r, c]]
            firsts = [re.findall(r"\\d+", str(a))[:1] for a in answers]
            out[r, c] = sum(f == [str(k)] for f, k in zip(firsts, keys[r, c])) / trials
    return out
'''),
]

# -- positional_pairs (interpret): shallow answers and mistakes -------------------------------------------
# The shallow answers are designs, not one mistake: each fails most of the planted heads, and must lose at
# least half of the exercise's points (min_lost).
_PP_PARTS = '''
def _complex(x):
    half = x.shape[-1] // 2
    return torch.complex(x[..., :half].double(), x[..., half:].double()).reshape(-1, x.shape[-2], half)
'''
WRONG_ANSWERS += [
    WrongAnswer("positional_pairs", "constant: no pair carries position", '''
def positional_pairs(queries, keys, inv_freq, max_offset):
    return torch.zeros(len(inv_freq), dtype=torch.bool)
''', costs=6, min_lost=0.5),
    WrongAnswer("positional_pairs", "the paper's finding transcribed: the fastest half of the pairs", '''
def positional_pairs(queries, keys, inv_freq, max_offset):
    return torch.arange(len(inv_freq)) < len(inv_freq) // 2
''', costs=6, min_lost=0.5),
    WrongAnswer("positional_pairs", "frequency alone: every pair that turns once within max_offset", '''
def positional_pairs(queries, keys, inv_freq, max_offset):
    return inv_freq.double() * max_offset >= 2 * math.pi
''', costs=6, min_lost=0.5),
    WrongAnswer("positional_pairs", "the pairs with the largest query norms", _PP_PARTS + '''
def positional_pairs(queries, keys, inv_freq, max_offset):
    norm = _complex(queries).abs().pow(2).mean((0, 1))
    return norm > norm.mean()
''', costs=6, min_lost=0.5),
    WrongAnswer("positional_pairs", "the public case hard-coded (pairs 0, 3 and 9)", '''
def positional_pairs(queries, keys, inv_freq, max_offset):
    out = torch.zeros(len(inv_freq), dtype=torch.bool)
    out[[i for i in (0, 3, 9) if i < len(inv_freq)]] = True
    return out
''', costs=5, min_lost=0.5),
    # Only the bias test plants constant parts on pairs that do not turn.
    WrongAnswer("positional_pairs", "constant parts taken for position (the rotation ignored)", _PP_PARTS + '''
def positional_pairs(queries, keys, inv_freq, max_offset):
    q, k = _complex(queries), _complex(keys)
    constant = q.mean((0, 1)).abs() * k.mean((0, 1)).abs()
    size = (q.abs().pow(2).mean((0, 1)) * k.abs().pow(2).mean((0, 1))).sqrt()
    return constant > 0.5 * size
'''),
    # Only the scale test changes the size of the head's parts.
    WrongAnswer("positional_pairs", "an absolute threshold on the logits (0.1)", _PP_PARTS + '''
def positional_pairs(queries, keys, inv_freq, max_offset):
    q, k = _complex(queries), _complex(keys)
    T = q.shape[1]
    profile = torch.stack([((q[:, n:] * k[:, :T - n].conj()).mean((0, 1)) * torch.exp(1j * n * inv_freq.double())).real
                           for n in range(max_offset + 1)]) / math.sqrt(queries.shape[-1])
    return (profile.max(0).values - profile.min(0).values) > 0.1
'''),
]

CORRECT_VARIANTS += [
    ("positional_pairs", "mean query and key parts per pair, judged against the largest pair", '''
def positional_pairs(queries, keys, inv_freq, max_offset):
    half = queries.shape[-1] // 2
    q = torch.complex(queries[..., :half].double(), queries[..., half:].double()).reshape(-1, half)
    k = torch.complex(keys[..., :half].double(), keys[..., half:].double()).reshape(-1, half)
    n = torch.arange(max_offset + 1, dtype=torch.float64)[:, None]
    profile = (q.mean(0) * k.mean(0).conj() * torch.exp(1j * n * inv_freq.double())).real
    swing = profile.max(0).values - profile.min(0).values
    return swing > 0.3 * (q.abs().pow(2).mean(0) * k.abs().pow(2).mean(0)).sqrt().max()
'''),
    ("positional_pairs", "rotated queries and keys, logits averaged by distance in real arithmetic, judged against the mean pair", '''
def positional_pairs(queries, keys, inv_freq, max_offset):
    d = queries.shape[-1]
    T = queries.shape[-2]
    q = queries.double().reshape(-1, T, d)
    k = keys.double().reshape(-1, T, d)
    angles = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq.double()[None, :]
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    rot = lambda x: torch.cat([-x[..., d // 2:], x[..., :d // 2]], -1)
    qr, kr = q * cos + rot(q) * sin, k * cos + rot(k) * sin
    per_dim = torch.stack([(qr[:, n:] * kr[:, :T - n]).mean((0, 1)) for n in range(max_offset + 1)])
    per_pair = per_dim[:, :d // 2] + per_dim[:, d // 2:]
    swing = per_pair.max(0).values - per_pair.min(0).values
    size = (q[..., :d // 2] ** 2 + q[..., d // 2:] ** 2).mean((0, 1)).sqrt() * \\
        (k[..., :d // 2] ** 2 + k[..., d // 2:] ** 2).mean((0, 1)).sqrt()
    return swing > 0.4 * size.mean()
'''),
]

# -- extension_inv_freq: designs that are not the notebook's rules and reach the top thresholds ------------
# Found on the notebook's held-out windows by scripts/search_context_extension.py; measured on the hidden
# windows in the comment above the thresholds of grader/judge/suites/test_05_context_extension.py.
CORRECT_VARIANTS += [
    ("extension_inv_freq", "a factor per pair searched from NTK-aware's factors on other windows; YaRN elsewhere", '''
def extension_inv_freq(inv_freq, scale):
    searched = {8.0: ([1.0, 1.149, 1.194, 1.516, 1.425, 1.482, 1.702, 1.601, 1.839, 2.112, 1.986, 2.522, 6.447,
                       8.184, 6.964, 6.55], 1.133),
                4.0: ([1.0, 1.097, 0.985, 1.08, 1.447, 1.176, 1.924, 1.048, 1.404, 1.54, 1.528, 1.372, 3.35,
                       3.675, 3.647, 3.275], 1.064)}
    if scale in searched:
        factors, attention_factor = searched[scale]
        return (inv_freq.double() / torch.tensor(factors, dtype=torch.float64)).float(), attention_factor
    return yarn_inv_freq(32, 100.0, scale, 128, 5.0, 1.0)
'''),
]
CORRECT_VARIANTS += [
    ("extension_inv_freq", "one factor per pair searched at s = 8, used as exponents s^g_i at every scale", '''
def extension_inv_freq(inv_freq, scale):
    factors = torch.tensor([1.0, 1.0, 1.0, 1.492, 1.0, 1.705, 0.894, 1.6, 1.81, 2.183, 2.426, 3.973, 3.973, 7.239,
                            6.55, 6.55], dtype=torch.float64)
    g = factors.log() / math.log(8.0)
    return (inv_freq.double() / scale ** g).float(), 1.0 + 0.133 * math.log(scale) / math.log(8.0)
'''),
]

# Shallow answers: a detector that reads the module it is handed instead of calling it, or compares
# it with the grader's own modules. The module is a black box (it runs in the grader) and the
# grader's modules are out of the sandbox's reach, so each scores at most what a constant answer does.
WRONG_ANSWERS += [
    WrongAnswer("diagnose_rope", "the bug read from the module's bound keywords", '''
def diagnose_rope(rotary, method, head_dim, base, scale, original_max_position_embeddings):
    return rotary.keywords["bug"] or "correct"
''', costs=9, shallow=True),
    WrongAnswer("diagnose_rope", "the bug read from the keywords, if there are any ('correct' otherwise)", '''
def diagnose_rope(rotary, method, head_dim, base, scale, original_max_position_embeddings):
    return (getattr(rotary, "keywords", None) or {}).get("bug") or "correct"
''', costs=5, shallow=True),
    WrongAnswer("diagnose_rope", "the bug guessed from repr, dir, __dict__ and type", '''
def diagnose_rope(rotary, method, head_dim, base, scale, original_max_position_embeddings):
    text = " ".join([repr(rotary), str(dir(rotary)), str(getattr(rotary, "__dict__", "")), str(type(rotary))])
    for bug in ("stale base", "scaled twice", "wrong original length", "reversed ramp"):
        if bug in text:
            return bug
    return "correct"
''', costs=5, shallow=True),
    WrongAnswer("diagnose_rope", "the module compared with the grader's scaled_rope under every bug", '''
def diagnose_rope(rotary, method, head_dim, base, scale, original_max_position_embeddings):
    from grader.fixtures.context_extension import scaled_rope
    cos, sin = rotary(300)
    for bug in (None, "stale base", "scaled twice", "wrong original length", "reversed ramp"):
        want, _ = scaled_rope(300, method=method, head_dim=head_dim, base=base, scale=scale,
                              original_max_position_embeddings=original_max_position_embeddings, bug=bug)
        if torch.allclose(cos, want):
            return bug or "correct"
    return "correct"
''', costs=9, shallow=True),
]

# -- retrieval_beyond_control (interpret) ----------------------------------------------------------------
# Every entry validates as the docstring asks, so that only its reading is judged. The shallow answers (a
# constant, the docstring's fields read as the verdict, the notebook's own verdicts, the pooled reading that the
# chapter's earlier table made, the method read without its control) each fail most planted grids.
_RB = '''
def _checked(scores, control, chance):
    scores, control = np.asarray(scores, dtype=np.float64), np.asarray(control, dtype=np.float64)
    if scores.shape != control.shape or scores.ndim != 3 or scores.shape[-1] < 2 or not 0.0 <= chance < 1.0:
        raise ValueError("bad input")
    return scores, control


def _t_interval(values):
    """Mean, low, high of a normal 95% interval of the mean over the last axis."""
    mean = values.mean(-1)
    half = 1.96 * values.std(-1, ddof=1) / np.sqrt(values.shape[-1])
    return mean, mean - half, mean + half
'''


def _rb(body):
    return _RB + '''
def retrieval_beyond_control(scores, control, chance):
    scores, control = _checked(scores, control, chance)
''' + body


WRONG_ANSWERS += [
    WrongAnswer("retrieval_beyond_control", "constant: no cell is beyond the control", _rb('''
    diff = scores - control
    mean, low, high = _t_interval(diff)
    return {"beyond": np.zeros(scores.shape[:2], dtype=bool), "difference": np.stack([mean, low, high], -1)}
'''), costs=7, min_lost=0.5),
    WrongAnswer("retrieval_beyond_control", "the docstring's fields read as the verdict: the difference's interval above zero", _rb('''
    mean, low, high = _t_interval(scores - control)
    return {"beyond": low > 0, "difference": np.stack([mean, low, high], -1)}
'''), costs=7, min_lost=0.5),
    WrongAnswer("retrieval_beyond_control", "the notebook's verdict hard-coded: depths 0 and 0.5 of the second length", _rb('''
    mean, low, high = _t_interval(scores - control)
    beyond = np.zeros(scores.shape[:2], dtype=bool)
    if beyond.shape[0] > 1:
        beyond[1, :2] = True
    return {"beyond": beyond, "difference": np.stack([mean, low, high], -1)}
'''), costs=7, min_lost=0.5),
    WrongAnswer("retrieval_beyond_control", "the public case hard-coded: the first depth of the second length", _rb('''
    mean, low, high = _t_interval(scores - control)
    beyond = np.zeros(scores.shape[:2], dtype=bool)
    if beyond.shape[0] > 1:
        beyond[1, 0] = True
    return {"beyond": beyond, "difference": np.stack([mean, low, high], -1)}
'''), costs=7, min_lost=0.5),
    WrongAnswer("retrieval_beyond_control", "depths pooled: one verdict per length", _rb('''
    mean, low, high = _t_interval(scores - control)
    pooled_diff = (scores - control).reshape(scores.shape[0], -1)
    _, pooled_low, _ = _t_interval(pooled_diff)
    _, control_low, _ = _t_interval(control.reshape(scores.shape[0], -1))
    row = (pooled_low > 0) & ~(control_low > chance)
    beyond = np.repeat(row[:, None], scores.shape[1], axis=1)
    return {"beyond": beyond, "difference": np.stack([mean, low, high], -1)}
'''), costs=7, min_lost=0.5),
    WrongAnswer("retrieval_beyond_control", "the method read alone: above chance, the control ignored", _rb('''
    mean, low, high = _t_interval(scores - control)
    _, method_low, _ = _t_interval(scores)
    return {"beyond": method_low > chance, "difference": np.stack([mean, low, high], -1)}
'''), costs=7, min_lost=0.5),
    # test_beyond_noise_is_not_retrieval owns a reading of the means without an interval
    WrongAnswer("retrieval_beyond_control", "means without intervals: method above the control, control at most chance", _rb('''
    mean, low, high = _t_interval(scores - control)
    beyond = (mean > 0) & (control.mean(-1) <= chance)
    return {"beyond": beyond, "difference": np.stack([mean, low, high], -1)}
''')),
    # test_beyond_another_score owns the chance level
    WrongAnswer("retrieval_beyond_control", "chance taken as 0.1 whatever the score", _rb('''
    mean, low, high = _t_interval(scores - control)
    _, control_low, _ = _t_interval(control)
    beyond = (low > 0) & ~(control_low > 0.1)
    return {"beyond": beyond, "difference": np.stack([mean, low, high], -1)}
''')),
    # test_beyond_difference_and_interval owns the interval
    WrongAnswer("retrieval_beyond_control", "the interval of one standard deviation of the prompts, not of the mean", _rb('''
    diff = scores - control
    mean, low, high = _t_interval(diff)
    _, control_low, _ = _t_interval(control)
    sd = diff.std(-1, ddof=1)
    return {"beyond": (low > 0) & ~(control_low > chance),
            "difference": np.stack([mean, mean - 1.96 * sd, mean + 1.96 * sd], -1)}
''')),
    WrongAnswer("retrieval_beyond_control", "a 68% interval (one standard error)", _rb('''
    diff = scores - control
    mean, low, high = _t_interval(diff)
    _, control_low, _ = _t_interval(control)
    se = diff.std(-1, ddof=1) / np.sqrt(diff.shape[-1])
    return {"beyond": (low > 0) & ~(control_low > chance),
            "difference": np.stack([mean, mean - se, mean + se], -1)}
''')),
    WrongAnswer("retrieval_beyond_control", "the difference taken as control minus method", _rb('''
    mean, low, high = _t_interval(scores - control)
    _, control_low, _ = _t_interval(control)
    return {"beyond": (low > 0) & ~(control_low > chance), "difference": np.stack([-mean, -high, -low], -1)}
''')),
]
# Two sound protocols besides the notebook's (a paired percentile bootstrap): a normal interval on the paired
# differences, and an unpaired (Welch-like) interval that ignores the pairing; both read every planted cell right.
CORRECT_VARIANTS += [
    ("retrieval_beyond_control", "paired normal intervals", _rb('''
    mean, low, high = _t_interval(scores - control)
    _, control_low, _ = _t_interval(control)
    return {"beyond": (low > 0) & ~(control_low > chance), "difference": np.stack([mean, low, high], -1)}
''')),
    ("retrieval_beyond_control", "unpaired intervals and a t quantile of 2.1", _rb('''
    n = scores.shape[-1]
    mean = (scores - control).mean(-1)
    half = 2.1 * np.sqrt(scores.var(-1, ddof=1) / n + control.var(-1, ddof=1) / n)
    control_low = control.mean(-1) - 2.1 * control.std(-1, ddof=1) / np.sqrt(n)
    beyond = (mean - half > 0) & ~(control_low > chance)
    return {"beyond": beyond, "difference": np.stack([mean, mean - half, mean + half], -1)}
''')),
]

# -- fine_tune_verdict (interpret) -----------------------------------------------------------------------
# Every entry validates as the docstring asks and returns the mean difference, so that only its reading is
# judged. The shallow answers (a verdict fixed in advance, the sign of the mean, the chapter's numbers or the
# public cases hard-coded, the sign convention swapped) each fail most planted cases (up to all six tests that
# read a verdict or a difference: each test mixes wins and ties); the protocol mistakes
# (seeds ignored, windows unpaired, one run's interval read as the verdict) each fail the test that owns them.
_FTV = '''
def _checked(losses_a, losses_b):
    a, b = np.asarray(losses_a, dtype=np.float64), np.asarray(losses_b, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape or min(a.shape) < 2 or not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("losses_a and losses_b must be finite (seeds, windows) arrays of one shape, at least 2 x 2")
    return a, b


_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
         12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000, 120: 1.980}


def _t975(df):
    """The t quantile 0.975 at df degrees of freedom, from the table (the entry at or below df, 1.96 past 120)."""
    if df > 120:
        return 1.96
    return _T975[max(k for k in _T975 if k <= max(df, 1))]


def _interval(d, se, t=1.96):
    mean = float(d.mean())
    return mean, mean - t * se, mean + t * se


def _runs_and_windows(d):
    """The standard error of the mean of d (seeds, windows) over runs and windows (paired by seed and window)."""
    return float(np.sqrt(d.mean(1).var(ddof=1) / d.shape[0] + d.mean(0).var(ddof=1) / d.shape[1]))


def _read(low, high):
    return "lower" if high < 0 else "higher" if low > 0 else "tie"
'''


def _ftv(body):
    return _FTV + '''
def fine_tune_verdict(losses_a, losses_b):
    a, b = _checked(losses_a, losses_b)
    d = a - b
''' + body


WRONG_ANSWERS += [
    WrongAnswer("fine_tune_verdict", "constant: always a tie", _ftv('''
    mean, low, high = _interval(d, _runs_and_windows(d), _t975(d.shape[0] - 1))
    return {"verdict": "tie", "difference": (mean, low, high)}
'''), costs=6, min_lost=0.5),
    WrongAnswer("fine_tune_verdict", "constant: A always lower", _ftv('''
    mean, low, high = _interval(d, _runs_and_windows(d), _t975(d.shape[0] - 1))
    return {"verdict": "lower", "difference": (mean, low, high)}
'''), costs=6, min_lost=0.5),
    WrongAnswer("fine_tune_verdict", "the sign of the mean difference alone", _ftv('''
    mean, low, high = _interval(d, _runs_and_windows(d), _t975(d.shape[0] - 1))
    return {"verdict": "lower" if mean < 0 else "higher", "difference": (mean, low, high)}
'''), costs=6, min_lost=0.5),
    # The chapter's numbers (its old reading of NTK-aware minus YaRN at 1,024 among them), looked up by the
    # nearest mean difference on arrays of the chapter's shape; a tie elsewhere.
    WrongAnswer("fine_tune_verdict", "the chapter's verdicts hard-coded", _ftv('''
    mean, low, high = _interval(d, _runs_and_windows(d), _t975(d.shape[0] - 1))
    chapter = {0.389: "higher", -0.068: "lower", -0.456: "lower", 0.034: "higher", 0.018: "higher",
               0.452: "higher", -0.029: "lower", -0.482: "lower", -0.002: "tie"}
    verdict = "tie"
    if d.shape == (3, 78):
        verdict = chapter[min(chapter, key=lambda m: abs(m - mean))]
    return {"verdict": verdict, "difference": (mean, low, high)}
'''), costs=6, min_lost=0.5),
    WrongAnswer("fine_tune_verdict", "the public cases hard-coded", _ftv('''
    mean, low, high = _interval(d, _runs_and_windows(d), _t975(d.shape[0] - 1))
    verdict = "lower" if abs(mean + 0.0317) < 1e-4 else "tie"
    return {"verdict": verdict, "difference": (mean, low, high)}
'''), costs=6, min_lost=0.5),
    # The exercise's core mistake (the runs' spread read as a difference): every test whose tie has runs that
    # differ (the public one, windows paired, seed noise) fails on it, and test_verdict_difference_and_interval
    # owns the width. It must cost at least half.
    WrongAnswer("fine_tune_verdict", "seeds ignored: an interval over the windows of the runs' mean difference", _ftv('''
    per_window = d.mean(0)
    mean, low, high = _interval(d, per_window.std(ddof=1) / np.sqrt(d.shape[1]))
    return {"verdict": _read(low, high), "difference": (mean, low, high)}
'''), costs=4, min_lost=0.5),
    WrongAnswer("fine_tune_verdict", "the textbook paired t interval over every (seed, window) difference", _ftv('''
    flat = d.ravel()
    mean, low, high = _interval(d, flat.std(ddof=1) / np.sqrt(flat.size), _t975(flat.size - 1))
    return {"verdict": _read(low, high), "difference": (mean, low, high)}
'''), costs=4, min_lost=0.5),
    WrongAnswer("fine_tune_verdict", "windows unpaired: each arm's window means as independent samples", _ftv('''
    se = np.sqrt(d.mean(1).var(ddof=1) / d.shape[0]
                 + (a.mean(0).var(ddof=1) + b.mean(0).var(ddof=1)) / d.shape[1])
    mean, low, high = _interval(d, se, _t975(d.shape[0] - 1))
    return {"verdict": _read(low, high), "difference": (mean, low, high)}
'''), min_lost=0.25),
    # The reading a single run's interval allows: a tie as soon as one run's interval over the windows reaches zero
    WrongAnswer("fine_tune_verdict", "a tie when any one run's interval over the windows reaches zero", _ftv('''
    mean, low, high = _interval(d, _runs_and_windows(d), _t975(d.shape[0] - 1))
    half = 1.96 * d.std(1, ddof=1) / np.sqrt(d.shape[1])
    runs = d.mean(1)
    verdict = "lower" if (runs + half < 0).all() else "higher" if (runs - half > 0).all() else "tie"
    return {"verdict": verdict, "difference": (mean, low, high)}
'''), min_lost=0.25),
    WrongAnswer("fine_tune_verdict", "the sign convention swapped: B minus A", _ftv('''
    mean, low, high = _interval(-d, _runs_and_windows(d), _t975(d.shape[0] - 1))
    return {"verdict": _read(low, high), "difference": (mean, low, high)}
'''), costs=6, min_lost=0.5),
    # test_verdict_difference_and_interval owns the interval's width
    WrongAnswer("fine_tune_verdict", "the interval of one standard deviation of the runs, not of their mean", _ftv('''
    mean, low, high = _interval(d, _runs_and_windows(d), _t975(d.shape[0] - 1))
    sd = d.mean(1).std(ddof=1)
    return {"verdict": _read(low, high), "difference": (mean, mean - 1.96 * sd, mean + 1.96 * sd)}
''')),
]
# Two sound protocols besides the notebook's (a bootstrap over runs and windows together): a t interval with the
# runs as units (their mean differences over the windows), and a random-effects interval (runs and windows as two
# sources of variance, Satterthwaite's degrees of freedom); all three read every planted case right.
CORRECT_VARIANTS += [
    ("fine_tune_verdict", "a t interval on the runs' mean differences", _ftv('''
    runs = d.mean(1)
    mean, low, high = _interval(d, runs.std(ddof=1) / np.sqrt(len(runs)), _t975(len(runs) - 1))
    return {"verdict": _read(low, high), "difference": (mean, low, high)}
''')),
    ("fine_tune_verdict", "a random-effects interval with Satterthwaite's degrees of freedom", _ftv('''
    n_seeds, n_windows = d.shape
    v_runs, v_windows = d.mean(1).var(ddof=1) / n_seeds, d.mean(0).var(ddof=1) / n_windows
    df = (v_runs + v_windows) ** 2 / (v_runs ** 2 / (n_seeds - 1) + v_windows ** 2 / (n_windows - 1) + 1e-300)
    mean, low, high = _interval(d, np.sqrt(v_runs + v_windows), _t975(int(df)))
    return {"verdict": _read(low, high), "difference": (mean, low, high)}
''')),
]
