"""Write notebook 07's model configurations, assets/rope07_*.json, from the values below.

Each file holds what notebook 07 and its tests read of one model's published configuration: the head size,
the lengths, the layer layout where it matters, and ``rope_parameters`` as Hugging Face transformers 5 writes
it (the older ``rope_scaling`` and top-level ``rope_theta`` folded into one dictionary). The values are
transcribed from the models' ``config.json`` (sources in assets/README.md); nothing is downloaded. The output
is deterministic: ``python scripts/write_rope_configs.py`` rewrites the files byte for byte, and
``--check`` fails when a stored file differs.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[1] / "assets"

# Phi-3.5-mini-instruct's LongRoPE tables (float32 values as the published config.json prints them).
PHI_LONG = [1.0800000429153442, 1.1100000143051147, 1.1399999856948853, 1.340000033378601, 1.5899999141693115,
            1.600000023841858, 1.6200000047683716, 2.620000123977661, 3.2300000190734863, 3.2300000190734863,
            4.789999961853027, 7.400000095367432, 7.700000286102295, 9.09000015258789, 12.199999809265137,
            17.670000076293945, 24.46000099182129, 28.57000160217285, 30.420001983642578, 30.840002059936523,
            32.590003967285156, 32.93000411987305, 42.320003509521484, 44.96000289916992, 50.340003967285156,
            50.45000457763672, 57.55000305175781, 57.93000411987305, 58.21000289916992, 60.1400032043457,
            62.61000442504883, 62.62000274658203, 62.71000289916992, 63.1400032043457, 63.1400032043457,
            63.77000427246094, 63.93000411987305, 63.96000289916992, 63.970001220703125, 64.02999877929688,
            64.06999969482422, 64.08000183105469, 64.12000274658203, 64.41000366210938, 64.4800033569336,
            64.51000213623047, 64.52999877929688, 64.83999633789062]
PHI_SHORT = [1.0, 1.0199999809265137, 1.0299999713897705, 1.0299999713897705, 1.0499999523162842,
             1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0699999332427979,
             1.0999999046325684, 1.1099998950958252, 1.1599998474121094, 1.1599998474121094, 1.1699998378753662,
             1.2899998426437378, 1.339999794960022, 1.679999828338623, 1.7899998426437378, 1.8199998140335083,
             1.8499997854232788, 1.8799997568130493, 1.9099997282028198, 1.9399996995925903, 1.9899996519088745,
             2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346,
             2.0199997425079346, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,
             2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,
             2.0799996852874756, 2.0899996757507324, 2.189999580383301, 2.2199995517730713, 2.5899994373321533,
             2.729999542236328, 2.749999523162842, 2.8399994373321533]
LLAMA3 = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}

CONFIGS = {
    "llama3_1_8b": {"model": "meta-llama/Llama-3.1-8B", "num_hidden_layers": 32, "head_dim": 128,
                    "max_position_embeddings": 131072, "rope_parameters": LLAMA3},
    "phi3_5_mini": {"model": "microsoft/Phi-3.5-mini-instruct", "num_hidden_layers": 32, "head_dim": 96,
                    "max_position_embeddings": 131072,
                    "rope_parameters": {"rope_type": "longrope", "rope_theta": 10000.0,
                                        "original_max_position_embeddings": 4096,
                                        "long_factor": PHI_LONG, "short_factor": PHI_SHORT}},
    "gpt_oss_20b": {"model": "openai/gpt-oss-20b", "num_hidden_layers": 24, "head_dim": 64,
                    "max_position_embeddings": 131072,
                    "rope_parameters": {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0,
                                        "beta_slow": 1.0, "original_max_position_embeddings": 4096,
                                        "truncate": False}},
    "gemma3_27b": {"model": "google/gemma-3-27b-it", "num_hidden_layers": 62, "head_dim": 128,
                   "max_position_embeddings": 131072,
                   "layer_types": ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(62)],
                   "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                       "full_attention": {"rope_type": "linear", "factor": 8.0,
                                                          "rope_theta": 1000000.0}}},
    "deepseek_v3": {"model": "deepseek-ai/DeepSeek-V3", "num_hidden_layers": 61, "num_attention_heads": 128,
                    "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                    "v_head_dim": 128, "head_dim": 64, "max_position_embeddings": 163840, "rope_interleave": True,
                    "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "beta_fast": 32.0,
                                        "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                                        "original_max_position_embeddings": 4096}},
    "qwen2_5_vl_7b": {"model": "Qwen/Qwen2.5-VL-7B-Instruct", "num_hidden_layers": 28, "head_dim": 128,
                      "max_position_embeddings": 128000, "spatial_merge_size": 2,
                      "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0,
                                          "mrope_section": [16, 24, 24]}},
    "llama4_scout": {"model": "meta-llama/Llama-4-Scout-17B-16E", "num_hidden_layers": 48, "head_dim": 128,
                     "max_position_embeddings": 262144, "no_rope_layers": [1, 1, 1, 0] * 12,
                     "attn_temperature_tuning": True, "floor_scale": 8192, "attn_scale": 0.1,
                     "rope_parameters": LLAMA3},
    "gemma4": {"model": "Gemma 4 (transformers 5.23 Gemma4TextConfig defaults)", "num_hidden_layers": 6,
               "head_dim": 256, "global_head_dim": 512, "max_position_embeddings": 131072,
               "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
               "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                   "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                      "rope_theta": 1000000.0}}},
}


def text(config: dict) -> str:
    return json.dumps(config, indent=1) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if a stored file differs; write nothing")
    args = parser.parse_args(argv)
    differing = []
    for name, config in CONFIGS.items():
        path = ASSETS / f"rope07_{name}.json"
        if args.check:
            if not path.is_file() or path.read_text() != text(config):
                differing.append(path.name)
        else:
            path.write_text(text(config))
    if differing:
        print("differ from scripts/write_rope_configs.py:", ", ".join(differing))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
