"""Hidden tests and public checks for notebook 07, RoPE in practice.

References are computed here and in grader/judge/hidden/rope_in_practice.py in float64 from the rules of
Hugging Face transformers 5.23 (``modeling_rope_utils``, ``DeepseekV3Attention``, ``Qwen2VLModel.get_rope_index``,
``Llama4TextConfig``), never with the learner's code and without importing transformers (the grader's environment
is minimal): tests/test_oracle_07_rope_in_practice.py checks the same references, and the solution, against
transformers itself. Configurations of real models are written out below (their sources in assets/README.md).
"""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.judge.hidden import rope_in_practice as hidden
from grader.judge.proxy import (expect_close, expect_dtype, expect_equal, expect_no_value_error, expect_raises,
                                expect_shape, expect_true, fail)
from grader.judge.properties import FLOAT_DTYPES, grading, laid_out, layouts, seeds, tensor

EXERCISE_ORDER = ("rope_init_fn", "layer_rope_parameters", "mla_query_key", "mrope_position_ids", "apply_mrope",
                  "proportional_loses_position")
"""The exercises in the notebook's order (of their cells): reports number and list them so."""

TRUSTED_PREREQUISITES = {"proportional_loses_position": {"rope_init_fn": hidden.rope_init_fn}}
"""The interpret exercise is judged with the trusted rope_init_fn: a mistake there costs there only."""

# Hugging Face computes inverse frequencies in float32 (relative error up to ~3e-7 on these bases), the
# references in float64; 2e-6 accepts both and rejects every catalogued mistake (each off by > 1e-3 somewhere).
RTOL_FREQ = 2e-6
# Llama 3's blend in float32 amplifies rounding by low / (high - low) (05's suite: up to 1.1e-5 relative).
RTOL_LLAMA3 = 5e-5
# Attention factors are Python floats computed in float64: another order of operations differs by ~1e-15.
RTOL_SCALAR = 1e-9



# -- rope_init_fn --------------------------------------------------------------------------------------
MISTAKES = ("partial ignored", "partial exponent over head_dim", "dynamic unclamped", "truncate ignored",
            "mscale ignored", "longrope long at original", "longrope factor over L_max", "proportional over kept",
            "proportional drops stopped pairs")
"""Catalogued mistakes the reference can reproduce (tests/catalogue/07_rope_in_practice.py)."""


def _references(params, head_dim, max_len, seq_len):
    """The reference (inv_freq, attention_factor) and what each catalogued mistake returns (a learner's copy
    of the course replays these values: grader/judge/recorded.py)."""
    return {"want": list(hidden.reference(params, head_dim, max_len, seq_len)),
            "variants": {m: list(hidden.reference(params, head_dim, max_len, seq_len, mistake=m)) for m in MISTAKES}}


def _inv_freq(student, params, head_dim, max_len, seq_len=None, *, what, rtol=RTOL_FREQ, owned=(), check_factor=True):
    """Compare the learner's (inv_freq, attention_factor) with the reference; name the mistakes ``owned`` by
    this test and accept those that other tests own (one mistake costs once)."""
    got = student.rope_init_fn(params, head_dim, max_len, seq_len)
    expect_true(isinstance(got, (tuple, list)) and len(got) == 2,
                f"{what} should return (inv_freq, attention_factor), got {type(got).__name__}")
    inv_freq, factor = got
    references = _references(params, head_dim, max_len, seq_len)
    want, want_factor = references["want"]
    variants = references["variants"]
    named = {m: v[0] for m, v in variants.items() if m in owned}
    accepted = [v[0] for m, v in variants.items() if m not in owned and not torch.equal(v[0], want)
                and v[0].shape == want.shape]
    expect_close(inv_freq, want, rtol=rtol, atol=0, what=f"{what}: inv_freq", mistakes=named, accepted=accepted)
    if check_factor:
        expect_true(isinstance(factor, (int, float)) and not isinstance(factor, bool),
                    f"{what}: the attention factor should be a Python float, got {type(factor).__name__}")
        factor_mistakes = {m: v[1] for m, v in variants.items() if m in owned and v[1] != want_factor}
        accepted_factors = [v[1] for m, v in variants.items() if m not in owned and v[1] != want_factor]
        if any(abs(factor - a) <= RTOL_SCALAR * abs(a) for a in accepted_factors):
            return
        if not abs(factor - want_factor) <= RTOL_SCALAR * abs(want_factor):
            names = [m for m, v in factor_mistakes.items() if abs(factor - v) <= RTOL_SCALAR * abs(v)]
            fail(f"{what}: attention factor {factor!r}, expected {want_factor:.10g}"
                 + (f" (looks like: {'; '.join(names)})" if names else ""))


@pytest.mark.exercise("rope_init_fn", points=5, public=True)  # the ladder every rule starts from: at least half
def test_rope_inv_freq_default_partial(student):
    """`default`, p 0.5, head_dim 16, base 1e4: 4 frequencies over the 8 rotating features."""
    _inv_freq(student, {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}, 16, 4096,
              what="rope_init_fn(default, p=0.5, head_dim=16)",
              owned=("partial ignored", "partial exponent over head_dim"))


@pytest.mark.exercise("rope_init_fn", points=1, public=True)
def test_rope_inv_freq_types(student):
    """inv_freq is a float32 tensor and the attention factor a float (`default`, head_dim 8)."""
    got = student.rope_init_fn({"rope_theta": 10000.0}, 8, 4096)
    expect_true(isinstance(got, (tuple, list)) and len(got) == 2, "rope_init_fn should return (inv_freq, factor)")
    expect_dtype(got[0], torch.float32, what="rope_init_fn(default): inv_freq")
    expect_true(isinstance(got[1], float), f"the attention factor should be a float, got {type(got[1]).__name__}")


GEMMA3_GLOBAL = {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}
LLAMA3_1 = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
GPT_OSS = {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
           "original_max_position_embeddings": 4096, "truncate": False}
DEEPSEEK_V3 = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "beta_fast": 32.0, "beta_slow": 1.0,
               "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096}
_PHI_LONG = [1.08, 1.11, 1.14, 1.34, 1.59, 1.6, 1.62, 2.62, 3.23, 3.23, 4.79, 7.4, 7.7, 9.09, 12.2, 17.67, 24.46,
             28.57, 30.42, 30.84, 32.59, 32.93, 42.32, 44.96, 50.34, 50.45, 57.55, 57.93, 58.21, 60.14, 62.61, 62.62,
             62.71, 63.14, 63.14, 63.77, 63.93, 63.96, 63.97, 64.03, 64.07, 64.08, 64.12, 64.41, 64.48, 64.51,
             64.53, 64.84]
"""Phi-3.5-mini-instruct's long_factor, rounded to two decimals (the published values are these in float32)."""
_PHI_SHORT = [1.0, 1.02, 1.03, 1.03] + [1.05] * 5 + [1.07, 1.1, 1.11, 1.16, 1.16, 1.17, 1.29, 1.34, 1.68, 1.79,
              1.82, 1.85, 1.88, 1.91, 1.94, 1.99] + [2.02] * 6 + [2.03] * 9 + [2.08, 2.09, 2.19, 2.22, 2.59, 2.73,
              2.75, 2.84]
PHI3_5 = {"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 4096,
          "long_factor": _PHI_LONG, "short_factor": _PHI_SHORT}
GEMMA4_GLOBAL = {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}


@pytest.mark.exercise("rope_init_fn", points=1)
def test_rope_inv_freq_linear(student):
    """`linear`, Gemma 3's global layers (head_dim 128, base 1e6, factor 8)."""
    _inv_freq(student, GEMMA3_GLOBAL, 128, 131072, what="rope_init_fn(Gemma 3 global)")


@pytest.mark.exercise("rope_init_fn", points=2)
def test_rope_inv_freq_dynamic(student):
    """`dynamic` (factor 2, head_dim 64, max 2048) at no length, 1024 (unchanged) and 8192 (rescaled)."""
    params = {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}
    for seq_len in (None, 1024, 8192):
        _inv_freq(student, params, 64, 2048, seq_len, what=f"rope_init_fn(dynamic, seq_len={seq_len})",
                  owned=("dynamic unclamped",))


@pytest.mark.exercise("rope_init_fn", points=1)
def test_rope_inv_freq_yarn_paper(student):
    """`yarn` with the paper's keys only (head_dim 128, base 1e4, factor 16, L_orig 4096): ramp and 0.1 ln s + 1."""
    params = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 16.0, "original_max_position_embeddings": 4096}
    _inv_freq(student, params, 128, 65536, what="rope_init_fn(yarn, s=16)")


@pytest.mark.exercise("rope_init_fn", points=1)
def test_rope_inv_freq_yarn_truncate(student):
    """`yarn` with truncate false: gpt-oss-20b (head_dim 64, base 1.5e5, factor 32, L_orig 4096)."""
    _inv_freq(student, GPT_OSS, 64, 131072, what="rope_init_fn(gpt-oss)", owned=("truncate ignored",))


@pytest.mark.exercise("rope_init_fn", points=1)
def test_rope_inv_freq_yarn_mscale(student):
    """`yarn` attention factors: DeepSeek-V3 (mscale = mscale_all_dim: 1.0), mscale 0.707 against 1, and a
    given attention_factor."""
    _inv_freq(student, DEEPSEEK_V3, 64, 163840, what="rope_init_fn(DeepSeek-V3)", owned=("mscale ignored",))
    _inv_freq(student, {**DEEPSEEK_V3, "mscale": 0.707}, 64, 163840, what="rope_init_fn(yarn, mscale 0.707)",
              owned=("mscale ignored",))
    _inv_freq(student, {**DEEPSEEK_V3, "attention_factor": 1.25}, 64, 163840,
              what="rope_init_fn(yarn, attention_factor 1.25)", owned=("mscale ignored",))


@pytest.mark.exercise("rope_init_fn", points=1)
def test_rope_inv_freq_yarn_factor_from_lengths(student):
    """`yarn` without a factor: s = max_position_embeddings / original_max_position_embeddings (32768 / 4096)."""
    params = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": None, "original_max_position_embeddings": 4096}
    _inv_freq(student, params, 64, 32768, what="rope_init_fn(yarn, factor None)")


@pytest.mark.exercise("rope_init_fn", points=2)
def test_rope_inv_freq_longrope_switch(student):
    """`longrope`, Phi-3.5-mini (head_dim 96): short factors up to 4096 tokens (and with no length), long past it."""
    for seq_len in (None, 4096, 4097, 100000):
        _inv_freq(student, PHI3_5, 96, 131072, seq_len, what=f"rope_init_fn(Phi-3.5, seq_len={seq_len})",
                  owned=("longrope long at original",), check_factor=False)


@pytest.mark.exercise("rope_init_fn", points=1)
def test_rope_inv_freq_longrope_factor(student):
    """`longrope` attention factor sqrt(1 + ln s / ln L_orig): Phi-3.5 (s = 32), s = 4 given, and s <= 1."""
    for params, max_len in ((PHI3_5, 131072), ({**PHI3_5, "factor": 4.0}, 131072), (PHI3_5, 4096)):
        _inv_freq(student, params, 96, max_len, 10, what=f"rope_init_fn(longrope, factor {params.get('factor')}, "
                  f"max {max_len})", owned=("longrope factor over L_max",))


@pytest.mark.exercise("rope_init_fn", points=1)
def test_rope_inv_freq_llama3(student):
    """`llama3`, Llama 3.1 8B (head_dim 128, base 5e5, factor 8, bands 1 and 4, L_orig 8192)."""
    _inv_freq(student, LLAMA3_1, 128, 131072, what="rope_init_fn(Llama 3.1)", rtol=RTOL_LLAMA3)


@pytest.mark.exercise("rope_init_fn", points=2)
def test_rope_inv_freq_proportional(student):
    """`proportional`: Gemma 4's global layers (head_dim 512, p 0.25), p 0.5 with factor 2, and p 0 (nothing turns)."""
    cases = ((GEMMA4_GLOBAL, 512), ({**GEMMA4_GLOBAL, "partial_rotary_factor": 0.5, "factor": 2.0}, 64),
             ({**GEMMA4_GLOBAL, "partial_rotary_factor": 0.0}, 16))
    for params, head_dim in cases:
        got = student.rope_init_fn(params, head_dim, 131072)
        want, _ = hidden.reference(params, head_dim, 131072)
        mistakes = {m: hidden.reference(params, head_dim, 131072, mistake=m)[0]
                    for m in ("proportional over kept", "proportional drops stopped pairs", "partial ignored")}
        expect_close(got[0], want, rtol=RTOL_FREQ, atol=0, mistakes=mistakes,
                     what=f"rope_init_fn(proportional, p={params['partial_rotary_factor']}, head_dim={head_dim})")


@pytest.mark.exercise("rope_init_fn", points=3)
@grading(max_examples=12)
@given(kind=st.sampled_from(hidden.TYPES), head_dim=st.sampled_from([4, 8, 32, 96]),
       base=st.sampled_from([50.0, 1e4, 5e5]), factor=st.sampled_from([1.0, 2.5, 8.0]), seed=seeds())
def test_rope_inv_freq_any_configuration(student, kind, head_dim, base, factor, seed):
    """Every type over head sizes, bases and factors (p = 1; partial rotation and each key's edge cases are
    the named tests')."""
    g = np.random.default_rng(seed)
    params = {"rope_type": kind, "rope_theta": base, "factor": factor}
    if kind in ("yarn", "longrope", "llama3"):
        params["original_max_position_embeddings"] = int(g.choice([64, 4096]))
    if kind == "llama3":
        params.update(low_freq_factor=1.0, high_freq_factor=4.0)
    if kind == "longrope":
        params.update(short_factor=[float(x) for x in g.uniform(1, 2, head_dim // 2)],
                      long_factor=[float(x) for x in g.uniform(1, 16, head_dim // 2)])
    if kind == "proportional":
        params["partial_rotary_factor"] = float(g.choice([0.25, 0.5, 1.0]))
    if kind == "dynamic" and head_dim < 4:
        return
    max_len = 8 * params.get("original_max_position_embeddings", 512)
    seq_len = int(g.choice([10, max_len // 2, 3 * max_len]))
    _inv_freq(student, params, head_dim, max_len, seq_len, what=f"rope_init_fn({params})", rtol=RTOL_LLAMA3)


@pytest.mark.exercise("rope_init_fn", points=1)
def test_rope_inv_freq_errors(student):
    """ValueError on an unknown rope_type, an odd head_dim, a rotary dimension of 1 (or 2 for dynamic), a longrope
    table of the wrong length, a base of 1, a factor below 1, no length; none on p = 0 for proportional."""
    expect_raises(ValueError, student.rope_init_fn, {"rope_type": "ntk"}, 16, 4096, what="rope_type 'ntk'")
    expect_raises(ValueError, student.rope_init_fn, {"rope_theta": 1e4}, 15, 4096, what="head_dim 15")
    expect_raises(ValueError, student.rope_init_fn, {"rope_theta": 1e4, "partial_rotary_factor": 0.1}, 16, 4096,
                  what="partial_rotary_factor 0.1 of head_dim 16 (1 feature)")
    expect_raises(ValueError, student.rope_init_fn, {**PHI3_5, "short_factor": [1.0] * 47}, 96, 131072,
                  what="a short_factor of 47 entries for 48 pairs")
    expect_raises(ValueError, student.rope_init_fn, {"rope_theta": 1.0}, 16, 4096, what="rope_theta 1")
    expect_raises(ValueError, student.rope_init_fn, {**GEMMA3_GLOBAL, "factor": 0.5}, 16, 4096,
                  what="a linear factor of 0.5")
    expect_raises(ValueError, student.rope_init_fn, {"rope_type": "dynamic", "factor": 2.0, "partial_rotary_factor": 0.25},
                  8, 4096, what="dynamic with a rotary dimension of 2")
    expect_raises(ValueError, student.rope_init_fn, {"rope_theta": 1e4}, 16, 0, what="max_position_embeddings 0")
    expect_no_value_error(student.rope_init_fn, {**GEMMA4_GLOBAL, "partial_rotary_factor": 0.0}, 16, 4096,
                           what="proportional with p = 0")


# -- layer_rope_parameters -------------------------------------------------------------------------------
def _layer_reference(config, layer):
    no_rope = config.get("no_rope_layers")
    if no_rope:
        if not no_rope[layer]:
            return None
    elif config.get("no_rope_layer_interval") and (layer + 1) % config["no_rope_layer_interval"] == 0:
        return None
    params, types = config["rope_parameters"], config.get("layer_types")
    if types is not None and types[layer] in params:
        return params[types[layer]]
    return params


def _layers(student, config, *, what, mistakes=None):
    for layer in range(config["num_hidden_layers"]):
        got, want = student.layer_rope_parameters(config, layer), _layer_reference(config, layer)
        if got != want:
            named = [m for m, rule in (mistakes or {}).items() if rule(layer) == got]
            fail(f"{what}, layer {layer}: got {got!r}, expected {want!r}"
                 + (f" (looks like: {'; '.join(named)})" if named else ""))


SCOUT = {"num_hidden_layers": 8, "no_rope_layers": [1, 1, 1, 0] * 2, "rope_parameters": LLAMA3_1}
GEMMA3 = {"num_hidden_layers": 12, "layer_types": ["sliding_attention"] * 5 + ["full_attention"]
          + ["sliding_attention"] * 5 + ["full_attention"],
          "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                              "full_attention": GEMMA3_GLOBAL}}


@pytest.mark.exercise("layer_rope_parameters", points=2, public=True)  # which layers rotate: core
def test_layer_rope_parameters_no_rope_layers(student):
    """Llama 4's no_rope_layers (1 where the layer rotates) over 8 layers."""
    _layers(student, SCOUT, what="layer_rope_parameters(Llama 4)",
            mistakes={"no_rope_layers read as 1 = NoPE": lambda i: LLAMA3_1 if SCOUT["no_rope_layers"][i] == 0
                      else None})


@pytest.mark.exercise("layer_rope_parameters", points=2, public=True)
def test_layer_rope_parameters_per_layer_type(student):
    """Gemma 3's rope_parameters keyed by layer type, over 12 layers (two bases)."""
    _layers(student, GEMMA3, what="layer_rope_parameters(Gemma 3)",
            mistakes={"the nested dict returned whole": lambda i: GEMMA3["rope_parameters"]})


@pytest.mark.exercise("layer_rope_parameters", points=1)
def test_layer_rope_parameters_interval(student):
    """SmolLM3-style: no list, no_rope_layer_interval 4 over 12 layers (and an empty list means the same)."""
    config = {"num_hidden_layers": 12, "no_rope_layer_interval": 4, "rope_parameters": {"rope_theta": 5e6}}
    _layers(student, config, what="layer_rope_parameters(interval 4)",
            mistakes={"NoPE when i % 4 == 0": lambda i: None if i % 4 == 0 else config["rope_parameters"]})
    _layers(student, {**config, "no_rope_layers": []}, what="layer_rope_parameters(interval 4, empty list)")


@pytest.mark.exercise("layer_rope_parameters", points=1)
def test_layer_rope_parameters_flat_with_types(student):
    """A flat rope_parameters with layer_types (one RoPE for every kind of layer), and NoPE with types (Llama 4
    writes both)."""
    config = {"num_hidden_layers": 4, "layer_types": ["sliding_attention", "full_attention"] * 2,
              "rope_parameters": LLAMA3_1, "no_rope_layers": [1, 0, 1, 0]}
    _layers(student, config, what="layer_rope_parameters(flat, with layer_types)")


@pytest.mark.exercise("layer_rope_parameters", points=1)
@grading(max_examples=8)
@given(n=st.integers(1, 24), interval=st.integers(2, 6), nested=st.booleans(), listed=st.booleans(), seed=seeds())
def test_layer_rope_parameters_any_model(student, n, interval, nested, listed, seed):
    """Random layer counts, NoPE lists or intervals, and flat or per-type parameters."""
    g = np.random.default_rng(seed)
    config = {"num_hidden_layers": n}
    if listed:
        config["no_rope_layers"] = [int(x) for x in g.integers(0, 2, n)]
    else:
        config["no_rope_layer_interval"] = interval
    if nested:
        config["layer_types"] = [str(x) for x in g.choice(["sliding_attention", "full_attention"], n)]
        config["rope_parameters"] = {"sliding_attention": {"rope_theta": 1e4},
                                     "full_attention": {"rope_theta": 1e6, "rope_type": "linear", "factor": 4.0}}
    else:
        config["rope_parameters"] = {"rope_theta": float(g.choice([1e4, 5e5]))}
    _layers(student, config, what=f"layer_rope_parameters({config})")


@pytest.mark.exercise("layer_rope_parameters", points=1)
def test_layer_rope_parameters_errors(student):
    """ValueError for a layer out of range, a no_rope_layers list of the wrong length, and a nested
    rope_parameters without the layer's type; none for the last layer."""
    expect_raises(ValueError, student.layer_rope_parameters, SCOUT, 8, what="layer 8 of 8")
    expect_raises(ValueError, student.layer_rope_parameters, SCOUT, -1, what="layer -1")
    expect_raises(ValueError, student.layer_rope_parameters, {**SCOUT, "no_rope_layers": [1, 0]}, 0,
                  what="no_rope_layers of 2 entries for 8 layers")
    broken = {**GEMMA3, "rope_parameters": {"sliding_attention": {"rope_theta": 1e4}}}
    expect_raises(ValueError, student.layer_rope_parameters, broken, 5, what="no entry for full_attention")
    expect_raises(ValueError, student.layer_rope_parameters, {**GEMMA3, "layer_types": GEMMA3["layer_types"][:6]}, 0,
                  what="layer_types of 6 entries for 12 layers")
    expect_no_value_error(student.layer_rope_parameters, SCOUT, 7, what="layer_rope_parameters(Llama 4, 7)")


# -- mla_query_key ---------------------------------------------------------------------------------------
def _mla_reference(q, k_nope, k_rope, positions, inv_freq, *, layout="interleaved", rotate_content=False,
                   sign=1.0):
    q, k_nope, k_rope = q.double(), k_nope.double(), k_rope.double()
    d_nope = k_nope.shape[-1]
    angle = positions.double()[:, None] * inv_freq.double()[None, :]
    cos, sin = angle.cos(), sign * angle.sin()

    def rotate(x):
        if layout == "interleaved":
            a, b = x[..., 0::2], x[..., 1::2]
            return torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2)
        h = x.shape[-1] // 2
        a, b = x[..., :h], x[..., h:]
        return torch.cat((a * cos - b * sin, b * cos + a * sin), -1)
    q_nope = q[..., :d_nope]
    if rotate_content:
        angle_c = positions.double()[:, None] * (10000.0 ** (-torch.arange(0, d_nope, 2, dtype=torch.float64) / d_nope))
        c, s = angle_c.cos(), angle_c.sin()
        a, b = q_nope[..., 0::2], q_nope[..., 1::2]
        q_nope = torch.stack((a * c - b * s, a * s + b * c), -1).flatten(-2)
    query = torch.cat((q_nope, rotate(q[..., d_nope:])), -1)
    B, H, T, _ = k_nope.shape
    key = torch.cat((k_nope, rotate(k_rope)[:, None].expand(B, H, T, -1)), -1)
    return query, key


def _mla_case(seed, B=2, H=3, T=5, d_nope=8, d_rope=4, dtype=torch.float32, offset=0):
    q = tensor(seed, B, H, T, d_nope + d_rope, dtype=dtype)
    k_nope = tensor(seed + 1, B, H, T, d_nope, dtype=dtype)
    k_rope = tensor(seed + 2, B, T, d_rope, dtype=dtype)
    positions = torch.arange(T) + offset
    inv_freq = hidden.ladder(d_rope, 10000.0).float()
    return q, k_nope, k_rope, positions, inv_freq


def _mla_check(student, case, *, what, rtol=1e-5, atol=1e-5, layouts=("contiguous",) * 3):
    q, k_nope, k_rope, positions, inv_freq = case
    query, key = student.mla_query_key(laid_out(q, layouts[0]), laid_out(k_nope, layouts[1]),
                                       laid_out(k_rope, layouts[2]), positions, inv_freq)
    want_q, want_k = _mla_reference(*case)
    wrong = {"half-split pairs instead of DeepSeek's interleaved ones": _mla_reference(*case, layout="half"),
             "the content part rotated too": _mla_reference(*case, rotate_content=True),
             "rotation by -angle (sin sign flipped)": _mla_reference(*case, sign=-1.0),
             "positions taken as 0..T-1": _mla_reference(q, k_nope, k_rope, torch.arange(len(positions)), inv_freq)}
    expect_close(query, want_q, rtol=rtol, atol=atol, what=f"{what}: query", mistakes={m: v[0] for m, v in wrong.items()})
    expect_close(key, want_k, rtol=rtol, atol=atol, what=f"{what}: key", mistakes={m: v[1] for m, v in wrong.items()})
    expect_dtype(query, q.dtype, what=f"{what}: query")


@pytest.mark.exercise("mla_query_key", points=3, public=True)  # the rotation and where it applies: core
def test_mla_query_key_small(student):
    """B 2, H 3, T 5, d_nope 8, d_rope 4, positions 0-4: content kept, rotary rotated, one key."""
    _mla_check(student, _mla_case(1), what="mla_query_key(small case)")


@pytest.mark.exercise("mla_query_key", points=2)
def test_mla_query_key_positions(student):
    """Positions 100..106 (a decoding step reads positions past 0), DeepSeek-V3's d_rope 64 on 2 heads."""
    _mla_check(student, _mla_case(2, B=1, H=2, T=7, d_nope=16, d_rope=64, offset=100),
               what="mla_query_key(positions 100..106)")


@pytest.mark.exercise("mla_query_key", points=1)
@grading(max_examples=6)
@given(seed=seeds(), d_rope=st.sampled_from([2, 4, 16]), heads=st.integers(1, 4), dtype=st.sampled_from(["float32", "float64"]),
       layout=layouts("contiguous", "heads", "strided"))
def test_mla_query_key_any_input(student, seed, d_rope, heads, dtype, layout):
    """Any head count, rotary width, float dtype and memory layout (views as a model's projections give)."""
    case = _mla_case(seed % 10_000, B=1, H=heads, T=6, d_nope=6, d_rope=d_rope, dtype=FLOAT_DTYPES[dtype])
    _mla_check(student, case, what="mla_query_key", layouts=(layout, layout, "contiguous" if layout == "heads"
                                                             else layout))


@pytest.mark.exercise("mla_query_key", points=1)
def test_mla_query_key_errors(student):
    """ValueError when q's width is not d_nope + d_rope, when d_rope is odd, and when inv_freq or position_ids
    has the wrong length."""
    q, k_nope, k_rope, positions, inv_freq = _mla_case(3)
    expect_raises(ValueError, student.mla_query_key, q[..., :-1], k_nope, k_rope, positions, inv_freq,
                  what="q of width 11 with d_nope 8 and d_rope 4")
    expect_raises(ValueError, student.mla_query_key, torch.zeros(2, 3, 5, 11), k_nope, torch.zeros(2, 5, 3),
                  positions, inv_freq[:1], what="d_rope 3")
    expect_raises(ValueError, student.mla_query_key, q, k_nope, k_rope, positions, inv_freq[:1],
                  what="inv_freq of 1 entry for d_rope 4")
    expect_raises(ValueError, student.mla_query_key, q, k_nope, k_rope, positions[:4], inv_freq,
                  what="4 positions for 5 tokens")
    expect_no_value_error(student.mla_query_key, *_mla_case(4, T=1), what="mla_query_key(one token)")


# -- mrope_position_ids ----------------------------------------------------------------------------------
def _mrope_reference(segments, merge=2, **switches):
    """M-RoPE ids by the rule, or by a catalogued mistake (``switches``: grader/judge/hidden)."""
    return hidden.mrope_ids(segments, merge, **switches)


def _mrope_mistakes(segments, merge):
    return {"the text after an image resumes after its token count, not at start + max(h, w)":
            _mrope_reference(segments, merge, resume="count"),
            "the text after an image resumes one position late": _mrope_reference(segments, merge, resume="max+1"),
            "the image's ids do not start at its index": _mrope_reference(segments, merge, offset_image=False),
            "column-major order instead of row-major": _mrope_reference(segments, merge, row_major=False),
            "the patches are not merged (spatial_merge_size ignored)": _mrope_reference(segments, merge, merged=False)}


def _mrope_check(student, segments, merge, *, what):
    got = student.mrope_position_ids(segments, merge)
    want = _mrope_reference(segments, merge)
    mistakes = _mrope_mistakes(segments, merge)
    expect_shape(got, tuple(want.shape), what=what, mistakes={m: tuple(v.shape) for m, v in mistakes.items()})
    expect_dtype(got, torch.int64, what=what)
    expect_equal(got, want, what=what, mistakes=mistakes)


@pytest.mark.exercise("mrope_position_ids", points=3, public=True)  # the rule itself: core
def test_mrope_position_ids_text_image_text(student):
    """Text (3 tokens), an image of 4 x 6 patches (2 x 3 tokens once merged 2 x 2), text (2 tokens)."""
    _mrope_check(student, [("text", 3), ("image", 4, 6), ("text", 2)], 2, what="mrope_position_ids(text, image, text)")


@pytest.mark.exercise("mrope_position_ids", points=2)
def test_mrope_position_ids_two_images(student):
    """Two images in a row (a tall one, 6 x 2 patches, then 4 x 4), no merging, an empty text segment between."""
    _mrope_check(student, [("image", 6, 2), ("text", 0), ("image", 4, 4), ("text", 1)], 1,
                 what="mrope_position_ids(two images)")


@pytest.mark.exercise("mrope_position_ids", points=1)
@grading(max_examples=8)
@given(seed=seeds(), merge=st.sampled_from([1, 2]))
def test_mrope_position_ids_any_sequence(student, seed, merge):
    """Random sequences of up to five text and image segments."""
    g = np.random.default_rng(seed)
    segments = []
    for _ in range(int(g.integers(1, 6))):
        if g.random() < 0.5:
            segments.append(("text", int(g.integers(0, 6))))
        else:
            segments.append(("image", merge * int(g.integers(1, 5)), merge * int(g.integers(1, 5))))
    _mrope_check(student, segments, merge, what=f"mrope_position_ids({segments}, {merge})")


@pytest.mark.exercise("mrope_position_ids", points=1)
def test_mrope_position_ids_errors(student):
    """ValueError for an image grid that merging cannot divide, an unknown segment and a negative length; none for
    an empty list."""
    expect_raises(ValueError, student.mrope_position_ids, [("image", 3, 4)], 2, what="a 3 x 4 grid with merging 2")
    expect_raises(ValueError, student.mrope_position_ids, [("video", 2, 4, 4)], 2, what="a ('video', ...) segment")
    expect_raises(ValueError, student.mrope_position_ids, [("text", -1)], 2, what="('text', -1)")
    expect_raises(ValueError, student.mrope_position_ids, [("text", 2)], 0, what="spatial_merge_size 0")
    expect_no_value_error(student.mrope_position_ids, [], 2, what="mrope_position_ids([])")


# -- apply_mrope -----------------------------------------------------------------------------------------
def _apply_mrope_reference(x, ids, inv_freq, section, *, order="sections", swap_hw=False, layout="half"):
    half = x.shape[-1] // 2
    if order == "sections":
        axis = torch.repeat_interleave(torch.arange(3), torch.tensor(section))
    elif order == "interleaved":
        axis = torch.arange(half) % 3
    else:
        axis = torch.zeros(half, dtype=torch.int64)
    if swap_hw:
        axis = torch.tensor([0, 2, 1])[axis]
    angle = ids.double()[axis].T * inv_freq.double()
    cos, sin = angle.cos(), angle.sin()
    x = x.double()
    if layout == "half":
        a, b = x[..., :half], x[..., half:]
        return torch.cat((a * cos - b * sin, b * cos + a * sin), -1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2)


def _apply_mrope_check(student, x, ids, inv_freq, section, *, what, rtol=1e-5, atol=1e-5, layout="contiguous"):
    got = student.apply_mrope(laid_out(x, layout), ids, inv_freq, section)
    want = _apply_mrope_reference(x, ids, inv_freq, section)
    mistakes = {"the three axes interleaved pair by pair (Qwen3-VL's layout) instead of in sections":
                _apply_mrope_reference(x, ids, inv_freq, section, order="interleaved"),
                "height and width swapped": _apply_mrope_reference(x, ids, inv_freq, section, swap_hw=True),
                "every pair turns with the temporal id": _apply_mrope_reference(x, ids, inv_freq, section, order="t"),
                "interleaved pairs instead of the half-split layout":
                _apply_mrope_reference(x, ids, inv_freq, section, layout="interleaved")}
    expect_close(got, want, rtol=rtol, atol=atol, what=what, mistakes=mistakes)
    expect_dtype(got, x.dtype, what=what)


def _image_ids():
    """The ids of 2 text tokens, an image of 4 x 6 patches merged 2 x 2, and 1 text token: (3, 9)."""
    return _mrope_reference([("text", 2), ("image", 4, 6), ("text", 1)], 2)


def _ladder(dim, base):
    """RoPE's frequencies, float32."""
    return hidden.ladder(dim, base).float()


@pytest.mark.exercise("apply_mrope", points=3, public=True)  # which axis turns which pair: core
def test_apply_mrope_image_tokens(student):
    """head_dim 16, mrope_section (2, 3, 3), on text, image and text ids."""
    x = tensor(5, 2, _image_ids().shape[1], 16, dtype=torch.float32)
    _apply_mrope_check(student, x, _image_ids(), _ladder(16, 100.0), [2, 3, 3],
                       what="apply_mrope(head_dim 16, section (2, 3, 3))")


@pytest.mark.exercise("apply_mrope", points=2)
def test_apply_mrope_qwen(student):
    """Qwen2.5-VL's head: head_dim 128, mrope_section (16, 24, 24), base 1e6."""
    x = tensor(6, 1, _image_ids().shape[1], 128, dtype=torch.float32)
    _apply_mrope_check(student, x, _image_ids() * 50, _ladder(128, 1e6), [16, 24, 24],
                       what="apply_mrope(Qwen2.5-VL)")


@pytest.mark.exercise("apply_mrope", points=1)
@grading(max_examples=8)
@given(seed=seeds(), half=st.sampled_from([3, 4, 8]), dtype=st.sampled_from(["float32", "float64", "bfloat16"]),
       layout=layouts())
def test_apply_mrope_any_input(student, seed, half, dtype, layout):
    """Any section sizes (one may be 0), dtypes (bfloat16 within its rounding) and memory layouts."""
    g = np.random.default_rng(seed)
    cut = sorted(int(c) for c in g.integers(0, half + 1, 2))
    section = [cut[0], cut[1] - cut[0], half - cut[1]]
    x = tensor(seed % 10_000, 2, _image_ids().shape[1], 2 * half, dtype=FLOAT_DTYPES[dtype])
    tol = 2e-2 if dtype == "bfloat16" else 1e-5
    _apply_mrope_check(student, x, _image_ids(), _ladder(2 * half, 100.0), section, what="apply_mrope",
                       rtol=tol, atol=tol, layout=layout)


@pytest.mark.exercise("apply_mrope", points=1)
def test_apply_mrope_errors(student):
    """ValueError for sections that do not sum to head_dim / 2, two sections only, and ids not (3, T)."""
    x, inv_freq = torch.zeros(1, _image_ids().shape[1], 16), _ladder(16, 100.0)
    expect_raises(ValueError, student.apply_mrope, x, _image_ids(), inv_freq, [2, 3, 4], what="section summing to 9")
    expect_raises(ValueError, student.apply_mrope, x, _image_ids(), inv_freq, [4, 4], what="two sections")
    expect_raises(ValueError, student.apply_mrope, x, _image_ids()[:2], inv_freq, [2, 3, 3], what="ids of 2 rows")
    expect_raises(ValueError, student.apply_mrope, x, _image_ids(), inv_freq, [5, 4, -1], what="section (5, 4, -1)")
    expect_raises(ValueError, student.apply_mrope, x, _image_ids(), inv_freq[:7], [2, 3, 3], what="inv_freq of 7")
    expect_no_value_error(student.apply_mrope, x, _image_ids(), inv_freq, [8, 0, 0], what="section (8, 0, 0)")


# -- proportional_loses_position (interpret) -------------------------------------------------------------
# Planted heads (grader/judge/hidden/rope_in_practice.py): each pair plays a role, and the answer follows from
# the roles by construction. The kinds of case, and which shallow rule each defeats:
#   "A": position on a stopped pair that turns over the distances              -> True
#   "B": position and content on rotating pairs only; stopped pairs that turn  -> False (defeats "a stopped pair turns")
#   "C": content on stopped pairs that never turn                              -> False (defeats "energy on a stopped pair")
#   "E": content on a stopped pair that turns; position on rotating pairs      -> False (defeats both, and their AND)
#   "G": position on a stopped pair too slow to turn (a bias)                  -> False (defeats "energy")
# Each test mixes kinds so that a constant, either rule or their AND earns at most half of the points.
CASES = {
    #      head_dim, base, p, max_offset, roles
    "A1": (16, 100.0, 0.5, 48, {0: "position", 4: "position"}),
    "A2": (32, 500.0, 0.25, 40, {1: "content", 4: "position", 9: "content"}),
    "A3": (24, 60.0, 0.5, 40, {0: "position", 2: "content", 6: "position"}),
    "B1": (16, 100.0, 0.5, 48, {0: "position", 2: "content"}),
    "C1": (16, 1e4, 0.5, 16, {0: "position", 5: "content", 6: "content"}),
    "C2": (24, 1e4, 0.5, 12, {1: "position", 8: "content"}),
    "E1": (16, 100.0, 0.5, 48, {0: "position", 4: "content"}),
    "E2": (32, 500.0, 0.25, 40, {0: "position", 4: "content", 5: "content"}),
    "G1": (16, 1e4, 0.5, 16, {1: "position", 7: "position"}),
}


def _planted(name, seed):
    """A planted head of kind ``name`` (queries, keys), its proportional parameters, and the answer."""
    head_dim, base, share, max_offset, roles = CASES[name]
    queries, keys = hidden.planted_head(head_dim, roles, n_seq=16, T=96, seed=seed + sorted(CASES).index(name))
    params = {"rope_type": "proportional", "rope_theta": base, "partial_rotary_factor": share}
    return [queries, keys, params, hidden.loses_position(head_dim, base, share, roles, max_offset)]


def _proportional(student, names, *, seed=0):
    for name in names:
        head_dim, base, share, max_offset, _ = CASES[name]
        queries, keys, params, want = _planted(name, seed)
        got = student.proportional_loses_position(queries, keys, params, max_offset)
        expect_true(isinstance(got, bool), f"proportional_loses_position should return a bool, got {type(got).__name__}")
        if got != want:
            fail(f"a planted head (head_dim {head_dim}, rope_theta {base:g}, partial_rotary_factor {share}, distances up "
                 f"to {max_offset}): got {got}, but {'a stopped pair carried' if want else 'no stopped pair carried'} "
                 "position for it")


@pytest.mark.exercise("proportional_loses_position", points=1, public=True)
def test_proportional_public_heads(student):
    """Two heads (d 16, base 100, p 0.5, offsets to 48): position, then content, on stopped pair 4."""
    _proportional(student, ["A1", "E1"], seed=1)


@pytest.mark.exercise("proportional_loses_position", points=1)
def test_proportional_unused_stopped_pairs(student):
    """A head that uses stopped pairs for position, one that leaves them unused though they turn, and one with
    content on stopped pairs."""
    _proportional(student, ["A2", "B1", "C2"], seed=2)


@pytest.mark.exercise("proportional_loses_position", points=1)
def test_proportional_content_is_not_position(student):
    """Content on stopped pairs, turning or not, is not lost position."""
    _proportional(student, ["E2", "C1"], seed=3)


@pytest.mark.exercise("proportional_loses_position", points=2)
def test_proportional_position_against_content(student):
    """Position and content on the same stopped pairs, in two head sizes."""
    _proportional(student, ["A3", "E2", "A2", "E1"], seed=4)


@pytest.mark.exercise("proportional_loses_position", points=1)
def test_proportional_bias_is_not_position(student):
    """A stopped pair too slow to turn over the distances is a bias; a turning one is position."""
    _proportional(student, ["A1", "C2", "G1"], seed=5)


@pytest.mark.exercise("proportional_loses_position", points=1)
@grading(max_examples=4)
@given(name=st.sampled_from(sorted(CASES)), seed=st.integers(10, 10_000))
def test_proportional_any_phases(student, name, seed):
    """The planted heads with other phases and tokens."""
    _proportional(student, [name], seed=seed)


@pytest.mark.exercise("proportional_loses_position", points=1)
def test_proportional_errors(student):
    """ValueError for a rope_type other than proportional and for max_offset >= T; none for max_offset 1."""
    queries, keys = hidden.planted_head(16, {0: "position"}, n_seq=2, T=16)
    params = {"rope_type": "proportional", "rope_theta": 100.0, "partial_rotary_factor": 0.5}
    expect_raises(ValueError, student.proportional_loses_position, queries, keys, {**params, "rope_type": "default"}, 8,
                  what="rope_type 'default'")
    expect_raises(ValueError, student.proportional_loses_position, queries, keys, params, 16, what="max_offset 16 of T 16")
    expect_no_value_error(student.proportional_loses_position, queries, keys, params, 1, what="max_offset 1")
