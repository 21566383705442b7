"""Notebook 07's exercises, and the grader's references for them, agree with Hugging Face transformers.

transformers (pinned 5.23.0 in the `test` extra) is a test-only oracle, never imported by the grader: every
configuration in assets/rope07_*.json round-trips through the solution's ``rope_init_fn`` and
``layer_rope_parameters`` against ``ROPE_INIT_FUNCTIONS`` and the models' configuration classes;
``mla_query_key`` against ``DeepseekV3Attention`` on random weights; ``mrope_position_ids`` and
``apply_mrope`` against ``Qwen2VLModel.get_rope_index`` and ``Qwen2VLRotaryEmbedding``. The trusted
references of the hidden tests (grader/judge/hidden/rope_in_practice.py) are checked against the same oracle.
Hugging Face computes frequencies in float32, the solution in float64 cast to float32 (relative differences
up to ~3e-7; Llama 3's blend amplifies them, as in tests/test_oracle_05_context_extension.py).
"""
from __future__ import annotations

import json
import math
import types

import pytest
import torch

from grader.judge.hidden import rope_in_practice as hidden
from tests.conftest import ROOT, script_module

pytestmark = pytest.mark.xdist_group("oracle-07")
NAME = "07_rope_in_practice"
RTOL, RTOL_LLAMA3 = 2e-6, 5e-5
CONFIGS = {path.stem.removeprefix("rope07_"): json.loads(path.read_text())
           for path in sorted((ROOT / "assets").glob("rope07_*.json"))}


@pytest.fixture(scope="module")
def hf():
    """transformers' modules this file compares with (skipping where transformers is not installed)."""
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils",
                                     reason="transformers is not installed (pip install -e '.[test]')")
    import transformers
    from transformers.models.deepseek_v3 import modeling_deepseek_v3
    from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXRotaryEmbedding
    from transformers.models.qwen2_vl import modeling_qwen2_vl
    return types.SimpleNamespace(rope_utils=rope_utils, transformers=transformers, deepseek=modeling_deepseek_v3,
                                 neox=GPTNeoXRotaryEmbedding, qwen=modeling_qwen2_vl)


def _entries():
    """(configuration, layer type or "", rope_parameters, head_dim) for every RoPE of every stored configuration."""
    for name, config in CONFIGS.items():
        params = config["rope_parameters"]
        if "layer_types" in config:
            for kind, nested in params.items():
                head_dim = config.get("global_head_dim", config["head_dim"]) if kind == "full_attention" \
                    else config["head_dim"]
                yield pytest.param(config, nested, head_dim, id=f"{name}-{kind}")
        else:
            yield pytest.param(config, params, config["head_dim"], id=name)


def _theirs(hf, params, head_dim, max_len, seq_len=None):
    params = {k: v for k, v in json.loads(json.dumps(params)).items() if k != "mrope_section"}
    config = hf.transformers.LlamaConfig(hidden_size=2 * head_dim, num_attention_heads=2, head_dim=head_dim,
                                         max_position_embeddings=max_len, rope_parameters=params)
    kind = params.get("rope_type", "default")
    if kind == "default":  # GPT-NeoX's default reads partial_rotary_factor (Llama's ignores it)
        inv_freq, factor = hf.neox.compute_default_rope_parameters(config)
    else:
        inv_freq, factor = hf.rope_utils.ROPE_INIT_FUNCTIONS[kind](config, "cpu", seq_len=seq_len)
    return inv_freq.double(), float(factor)


def _compare(ours, theirs, kind):
    torch.testing.assert_close(ours[0].double(), theirs[0], rtol=RTOL_LLAMA3 if kind == "llama3" else RTOL, atol=0)
    assert ours[1] == pytest.approx(theirs[1], rel=1e-9)


@pytest.mark.parametrize("config, params, head_dim", list(_entries()))
@pytest.mark.parametrize("seq_len", [None, 1000, 4097, 10**6])
def test_real_configurations_match_hf(solution, hf, config, params, head_dim, seq_len):
    """Every stored configuration: the solution's and the grader's rope_init_fn equal transformers'."""
    params = {k: v for k, v in params.items() if k != "mrope_section"}
    theirs = _theirs(hf, params, head_dim, config["max_position_embeddings"], seq_len)
    ours = solution(NAME).rope_init_fn(params, head_dim, config["max_position_embeddings"], seq_len)
    _compare(ours, theirs, params.get("rope_type", "default"))
    _compare(hidden.rope_init_fn(params, head_dim, config["max_position_embeddings"], seq_len), theirs,
             params.get("rope_type", "default"))


SYNTHETIC = [
    ({"rope_type": "linear", "factor": 4.0}, 64),
    ({"rope_type": "dynamic", "factor": 2.0}, 64),
    ({"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 512}, 128),
    ({"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 512, "truncate": False}, 128),
    ({"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 512, "mscale": 0.707,
      "mscale_all_dim": 1.0}, 64),
    ({"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 512, "attention_factor": 1.3}, 64),
    ({"rope_type": "yarn", "factor": None, "original_max_position_embeddings": 512, "beta_fast": 16.0,
      "beta_slow": 2.0}, 64),
    ({"rope_type": "longrope", "original_max_position_embeddings": 512}, 32),
    ({"rope_type": "longrope", "original_max_position_embeddings": 512, "factor": 3.0}, 32),
    ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 512}, 64),
    ({"rope_type": "proportional"}, 64),
    ({"rope_type": "proportional", "factor": 2.0}, 32),
    ({"rope_type": "default"}, 48),
]


@pytest.mark.parametrize("params, head_dim", SYNTHETIC)
@pytest.mark.parametrize("partial", [1.0, 0.5, 0.75, 0.25])
@pytest.mark.parametrize("seq_len", [None, 256, 4096])
def test_every_type_with_partial_rotation_matches_hf(solution, hf, params, head_dim, partial, seq_len):
    """Each type and key, with partial_rotary_factor 1, 0.5, 0.75 and 0.25, at three lengths (max 2048)."""
    params = {"rope_theta": 10000.0, **params, "partial_rotary_factor": partial}
    dim = int(head_dim * partial)
    if params["rope_type"] == "longrope":
        n = dim // 2 if dim % 2 == 0 else 0
        params.update(short_factor=[1.0 + 0.1 * i for i in range(n)], long_factor=[1.0 + 2.0 * i for i in range(n)])
    if params["rope_type"] != "proportional" and (dim % 2 or dim < 4):
        pytest.skip("a rotary dimension the exercise rejects")
    theirs = _theirs(hf, params, head_dim, 2048, seq_len)
    _compare(solution(NAME).rope_init_fn(params, head_dim, 2048, seq_len), theirs, params["rope_type"])
    _compare(hidden.rope_init_fn(params, head_dim, 2048, seq_len), theirs, params["rope_type"])


def test_llama4_no_rope_layers_match_hf(solution, hf):
    """Llama 4 Scout's NoPE layers are where transformers' Llama4TextConfig says use_rope is 0, and its default
    (no list) follows no_rope_layer_interval."""
    scout = CONFIGS["llama4_scout"]
    for no_rope in (scout["no_rope_layers"], None):
        config = hf.transformers.Llama4TextConfig(num_hidden_layers=48, no_rope_layers=no_rope,
                                                  rope_parameters=scout["rope_parameters"])
        ours = {**scout, "no_rope_layers": no_rope or [], "no_rope_layer_interval": config.no_rope_layer_interval}
        for layer in range(48):
            got = solution(NAME).layer_rope_parameters(ours, layer)
            assert (got is not None) == bool(config.no_rope_layers[layer])


@pytest.mark.parametrize("name", ["gemma3_27b", "gemma4"])
def test_layer_types_match_hf(solution, hf, name):
    """Gemma 3 and Gemma 4: each layer's rope_parameters are what transformers' config holds for its layer type."""
    stored = CONFIGS[name]
    cls = {"gemma3_27b": hf.transformers.Gemma3TextConfig, "gemma4": hf.transformers.Gemma4TextConfig}[name]
    config = cls(num_hidden_layers=stored["num_hidden_layers"], rope_parameters=json.loads(json.dumps(
        stored["rope_parameters"])))
    assert list(config.layer_types) == stored["layer_types"]
    for layer in range(stored["num_hidden_layers"]):
        ours = solution(NAME).layer_rope_parameters(stored, layer)
        theirs = config.rope_parameters[config.layer_types[layer]]
        assert {k: theirs[k] for k in ours} == ours


@pytest.mark.parametrize("interleave", [True, False])
def test_mla_matches_deepseek_v3_attention(solution, hf, interleave):
    """DeepSeek-V3's attention on random weights (its ratios, scaled down; YaRN with mscale as stored): the
    solution's queries and keys, through eager causal attention with the module's scale, give its output."""
    v3 = CONFIGS["deepseek_v3"]
    rope = {**v3["rope_parameters"], "original_max_position_embeddings": 64}
    config = hf.transformers.DeepseekV3Config(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=4, q_lora_rank=24, kv_lora_rank=16,
        qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, max_position_embeddings=64 * 40,
        rope_interleave=interleave, num_hidden_layers=1, rope_parameters=rope, attn_implementation="eager")
    torch.manual_seed(0)
    attention = hf.deepseek.DeepseekV3Attention(config, 0).double().eval()
    for parameter in attention.parameters():
        torch.nn.init.normal_(parameter, std=0.2)
    rotary = hf.deepseek.DeepseekV3RotaryEmbedding(config).double()
    B, T = 2, 9
    hidden_states = torch.randn(B, T, 64, dtype=torch.float64)
    positions = torch.arange(T)[None].expand(B, -1) + 5
    cos, sin = rotary(hidden_states, positions)
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)[None, None]
    with torch.no_grad():
        theirs, _ = attention(hidden_states, (cos, sin), mask)
        q = attention.q_b_proj(attention.q_a_layernorm(attention.q_a_proj(hidden_states)))
        q = q.view(B, T, 4, 24).transpose(1, 2)
        latent, k_rope = attention.kv_a_proj_with_mqa(hidden_states).split([16, 8], -1)
        kv = attention.kv_b_proj(attention.kv_a_layernorm(latent)).view(B, T, 4, 32).transpose(1, 2)
        k_nope, value = kv.split([16, 16], -1)
        inv_freq, factor = solution(NAME).rope_init_fn(rope, 8, 64 * 40)
        assert factor == 1.0   # mscale == mscale_all_dim: the temperature goes into the softmax scale
        if not interleave:     # the half-split layout is the interleaved one with the rotary features permuted
            order = torch.cat((torch.arange(0, 8, 2), torch.arange(1, 8, 2))).argsort()
            q = torch.cat((q[..., :16], q[..., 16:][..., order]), -1)
            k_rope = k_rope[..., order]
        query, key = solution(NAME).mla_query_key(q, k_nope, k_rope, torch.arange(T) + 5, inv_freq.double())
        weights = torch.softmax(query @ key.transpose(-1, -2) * attention.scaling + mask, -1)
        ours = attention.o_proj((weights @ value).transpose(1, 2).reshape(B, T, 64))
    assert attention.scaling == pytest.approx(24 ** -0.5 * (0.1 * math.log(40) + 1) ** 2)
    # HF builds cos and sin in float32 (angles within ~1e-7 relative): outputs agree to ~2e-8; a wrong layout
    # or rotation is off by O(1).
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


SEQUENCES = [[("text", 3), ("image", 4, 6), ("text", 2)], [("image", 6, 2), ("text", 1), ("image", 4, 4), ("text", 3)],
             [("text", 5), ("image", 8, 8)], [("text", 1), ("image", 2, 10), ("text", 4), ("image", 6, 4), ("text", 1)]]


@pytest.mark.parametrize("segments", SEQUENCES)
@pytest.mark.parametrize("merge", [1, 2])
def test_mrope_position_ids_match_get_rope_index(solution, hf, segments, merge):
    """Text, images and text again: the solution's ids equal Qwen2-VL's get_rope_index (one image per frame)."""
    token_types, grids = [], []
    for segment in segments:
        if segment[0] == "text":
            token_types += [0] * segment[1]
        else:
            token_types += [1] * (segment[1] * segment[2] // merge ** 2)
            grids.append([1, segment[1], segment[2]])
    model = types.SimpleNamespace(config=types.SimpleNamespace(vision_config=types.SimpleNamespace(
        spatial_merge_size=merge)))
    model.get_vision_position_ids = types.MethodType(hf.qwen.Qwen2VLModel.get_vision_position_ids, model)
    ids = torch.zeros(1, len(token_types), dtype=torch.long)
    theirs, _ = hf.qwen.Qwen2VLModel.get_rope_index(model, ids, torch.tensor([token_types]), torch.tensor(grids))
    ours = solution(NAME).mrope_position_ids(segments, merge)
    assert torch.equal(ours, theirs[:, 0])
    assert torch.equal(hidden.mrope_ids(segments, merge), theirs[:, 0])


def test_apply_mrope_matches_qwen2_vl(solution, hf):
    """Qwen2.5-VL's head (head_dim 128, mrope_section 16/24/24, base 1e6): the solution's rotation equals
    Qwen2VLRotaryEmbedding's recomposed tables through apply_rotary_pos_emb."""
    stored = CONFIGS["qwen2_5_vl_7b"]
    config = hf.transformers.Qwen2VLTextConfig(hidden_size=128 * 4, num_attention_heads=4,
                                               max_position_embeddings=stored["max_position_embeddings"],
                                               rope_parameters=json.loads(json.dumps(stored["rope_parameters"])))
    rotary = hf.qwen.Qwen2VLRotaryEmbedding(config)
    ids = solution(NAME).mrope_position_ids(SEQUENCES[3], 2) * 7
    x = torch.randn(1, 4, ids.shape[1], 128)
    cos, sin = rotary(x, ids[:, None])
    theirs, _ = hf.qwen.apply_rotary_pos_emb(x, x, cos, sin)
    inv_freq, _ = solution(NAME).rope_init_fn(stored["rope_parameters"], 128, stored["max_position_embeddings"])
    ours = solution(NAME).apply_mrope(x, ids, inv_freq, stored["rope_parameters"]["mrope_section"])
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=2e-5)


def test_the_stored_configurations_are_what_the_script_writes():
    """assets/rope07_*.json are byte for byte what scripts/write_rope_configs.py writes (its --check)."""
    script = script_module("write_rope_configs")
    assert script.main(["--check"]) == 0
    assert sorted(CONFIGS) == sorted(script.CONFIGS)
