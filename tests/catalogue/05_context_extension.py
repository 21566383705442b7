"""Plausible wrong answers for notebook 05; each must lose points under the hidden tests."""
from tests.catalogue import WrongAnswer

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
    if head_dim < 4 or head_dim % 2 or base <= 0 or scale < 1 or seq_len < 1:
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
    if head_dim < 2 or head_dim % 2 or base <= 1 or scale < 1 or not 0 < low_freq_factor < high_freq_factor:
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
