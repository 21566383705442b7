"""Plausible wrong answers for notebook 07; each must lose points under the hidden tests.

The implement entries are the solution's own exercise cell with one mistake put in by a targeted text
replacement (each replacement must match exactly once, or importing this module fails), so the catalogue stays
in step with the solution notebook and each entry differs from it by one bug. The interpret exercise's shallow
answers validate their inputs as the docstring asks, so that only their reading is judged.
"""
from __future__ import annotations

from tests.catalogue import WrongAnswer, solution_cells

_exercise_source, _mutant = solution_cells("07_rope_in_practice")


COSTS_ONCE = True  # each entry fails one hidden test of its exercise, or its declared costs

_R = "rope_init_fn"
_L = "layer_rope_parameters"
_M = "mla_query_key"
_I = "mrope_position_ids"
_A = "apply_mrope"

WRONG_ANSWERS = [
    # -- rope_init_fn: one test owns each rule (partial rotation: the public check) ---------------------
    WrongAnswer(_R, "partial_rotary_factor ignored", _mutant(_R, ("dim = int(head_dim * share)", "dim = head_dim")),
                feedback="partial ignored"),
    WrongAnswer(_R, "partial rotation with the exponent over head_dim (the proportional ladder)",
                _mutant(_R, ("return b ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)",
                             "return b ** (-torch.arange(0, dim, 2, dtype=torch.float64) / head_dim)")),
                feedback="partial exponent over head_dim"),
    WrongAnswer(_R, "dynamic: the length not raised to max_position_embeddings",
                _mutant(_R, ("length = max(seq_len or max_position_embeddings, max_position_embeddings)",
                             "length = seq_len or max_position_embeddings")), feedback="dynamic unclamped"),
    WrongAnswer(_R, "yarn: truncate ignored (the ramp's ends always rounded)",
                _mutant(_R, ('if p.get("truncate", True):', "if True:")), feedback="truncate ignored"),
    WrongAnswer(_R, "yarn: mscale and mscale_all_dim ignored",
                _mutant(_R, ('if p.get("mscale") and p.get("mscale_all_dim"):', "if False:")),
                feedback="mscale ignored"),
    WrongAnswer(_R, "longrope: long factors from the original length on (>= instead of >)",
                _mutant(_R, ("chosen = long if seq_len is not None and seq_len > original else short",
                             "chosen = long if seq_len is not None and seq_len >= original else short")),
                feedback="longrope long at original"),
    WrongAnswer(_R, "longrope: attention factor over ln max_position_embeddings",
                _mutant(_R, ("math.sqrt(1 + math.log(factor) / math.log(original))",
                             "math.sqrt(1 + math.log(factor) / math.log(max_position_embeddings))")),
                feedback="longrope factor over L_max"),
    WrongAnswer(_R, "proportional: the exponent over the rotating features (partial rotation's ladder)",
                _mutant(_R, ("/ head_dim)\n        return (inv_freq", "/ max(2 * kept, 1))\n        return (inv_freq")),
                feedback="proportional over kept"),
    WrongAnswer(_R, "proportional: only the rotating pairs returned",
                _mutant(_R, ("return (inv_freq / float(p.get(\"factor\") or 1.0)).float(), 1.0",
                             "return (inv_freq[:kept] / float(p.get(\"factor\") or 1.0)).float(), 1.0")),
                feedback="proportional drops stopped pairs", costs=2),  # a shape the property test cannot accept
    # -- layer_rope_parameters -----------------------------------------------------------------------------
    # A core mistake breaks every layer: the public check and the property test (which draws the same kind of
    # configuration) both see it.
    WrongAnswer(_L, "no_rope_layers read as 1 = NoPE", _mutant(_L, ("if not no_rope[layer_idx]:", "if no_rope[layer_idx]:")),
                feedback="no_rope_layers read as 1 = NoPE", core=True, costs=3),
    WrongAnswer(_L, "the nested dict returned whole",
                _mutant(_L, ("return dict(params[types[layer_idx]])", "return dict(params)")),
                feedback="the nested dict returned whole", costs=2),
    WrongAnswer(_L, "NoPE when i % interval == 0",
                _mutant(_L, ('if (layer_idx + 1) % config["no_rope_layer_interval"] == 0:',
                             'if layer_idx % config["no_rope_layer_interval"] == 0:')),
                feedback="NoPE when i % 4 == 0", costs=2),
    WrongAnswer(_L, "no_rope_layer_interval ignored",
                _mutant(_L, ('elif config.get("no_rope_layer_interval"):', "elif False:")), costs=2),
    WrongAnswer(_L, "layer_types ignored: the first kind's parameters for every layer",
                _mutant(_L, ("return dict(params[types[layer_idx]])", "return dict(next(iter(params.values())))")),
                costs=2),
    # -- mla_query_key -------------------------------------------------------------------------------------
    WrongAnswer(_M, "half-split pairs instead of DeepSeek's interleaved ones",
                _mutant(_M, ("a, b = x[..., 0::2], x[..., 1::2]\n        return torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2)",
                             "h = x.shape[-1] // 2\n        a, b = x[..., :h], x[..., h:]\n        return torch.cat((a * cos - b * sin, b * cos + a * sin), -1)")),
                feedback="half-split pairs", core=True, costs=3),
    WrongAnswer(_M, "rotation by -angle (sin sign flipped)",
                _mutant(_M, ("cos, sin = angle.cos(), angle.sin()", "cos, sin = angle.cos(), -angle.sin()")),
                feedback="sin sign flipped", core=True, costs=3),
    WrongAnswer(_M, "positions taken as 0..T-1",
                _mutant(_M, ("angle = position_ids.double()[:, None]", "angle = torch.arange(T).double()[:, None]")),
                feedback="positions taken as 0..T-1"),
    WrongAnswer(_M, "the rotary key rotated once per head with the query's part (no shared key: k_rope ignored)",
                _mutant(_M, ("shared = rotate(k_rope)[:, None].expand(B, H, T, d_rope)",
                             "shared = rotate(q[..., d_nope:])")), costs=3),
    WrongAnswer(_M, "float64 returned for float32 inputs",
                _mutant(_M, ("return query.to(q.dtype), key.to(q.dtype)", "return query, key")), costs=2),
    # -- mrope_position_ids --------------------------------------------------------------------------------
    WrongAnswer(_I, "the text after an image resumes after its token count",
                _mutant(_I, ("start += max(h, w)", "start += h * w")), feedback="token count", core=True, costs=3),
    WrongAnswer(_I, "the text after an image resumes one position late",
                _mutant(_I, ("start += max(h, w)", "start += max(h, w) + 1")), feedback="one position late", costs=3),
    WrongAnswer(_I, "the image's ids do not start at its index",
                _mutant(_I, ("rows, cols)) + start)", "rows, cols)))")), feedback="do not start at its index",
                core=True, costs=3),
    WrongAnswer(_I, "column-major order instead of row-major",
                _mutant(_I, ("rows = torch.arange(h).repeat_interleave(w)\n            cols = torch.arange(w).repeat(h)",
                             "rows = torch.arange(h).repeat(w)\n            cols = torch.arange(w).repeat_interleave(h)")),
                feedback="column-major", costs=3),
    WrongAnswer(_I, "spatial_merge_size ignored",
                _mutant(_I, ("h, w = h // spatial_merge_size, w // spatial_merge_size", "pass")),
                feedback="not merged", core=True, costs=2),
    # -- apply_mrope ---------------------------------------------------------------------------------------
    WrongAnswer(_A, "the three axes interleaved pair by pair (Qwen3-VL's layout)",
                _mutant(_A, ("axis = torch.repeat_interleave(torch.arange(3), torch.tensor(list(mrope_section)))",
                             "axis = torch.arange(half) % 3")), feedback="interleaved pair by pair", core=True,
                costs=2),
    WrongAnswer(_A, "height and width swapped",
                _mutant(_A, ("axis = torch.repeat_interleave(torch.arange(3), torch.tensor(list(mrope_section)))",
                             "axis = torch.repeat_interleave(torch.tensor([0, 2, 1]), torch.tensor(list(mrope_section)))")),
                feedback="height and width swapped", costs=2),
    WrongAnswer(_A, "every pair turns with the temporal id",
                _mutant(_A, ("pos = position_ids.double()[axis].T", "pos = position_ids.double()[0][:, None]")),
                feedback="temporal id", core=True, costs=2),
    WrongAnswer(_A, "interleaved pairs instead of the half-split layout",
                _mutant(_A, ("x1, x2 = x[..., :half].double(), x[..., half:].double()\n    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1).to(x.dtype)",
                             "x1, x2 = x[..., 0::2].double(), x[..., 1::2].double()\n    return torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1).flatten(-2).to(x.dtype)")),
                feedback="half-split layout", core=True, costs=2),
]

# -- proportional_loses_position (interpret) --------------------------------------------------------------
_PLP = '''
def proportional_loses_position(queries, keys, rope_parameters, max_offset):
    head_dim, T = queries.shape[-1], queries.shape[-2]
    half = head_dim // 2
    stopped = rope_init_fn(rope_parameters, head_dim, T)[0] == 0
    theta = rope_init_fn({"rope_theta": rope_parameters.get("rope_theta", 10000.0)}, head_dim, T)[0].double()
    q = torch.complex(queries[..., :half].double(), queries[..., half:].double()).reshape(-1, T, half)
    k = torch.complex(keys[..., :half].double(), keys[..., half:].double()).reshape(-1, T, half)
    size = (q.abs().pow(2).mean((0, 1)) * k.abs().pow(2).mean((0, 1))).sqrt()
    used = size > 0.25 * size.max()
    turns = theta * max_offset >= math.pi
'''

WRONG_ANSWERS += [
    WrongAnswer("proportional_loses_position", "shallow: always False (nothing is lost)", """
def proportional_loses_position(queries, keys, rope_parameters, max_offset):
    return False
""", shallow=True, min_lost=0.5, costs=7),
    WrongAnswer("proportional_loses_position", "shallow: always True", """
def proportional_loses_position(queries, keys, rope_parameters, max_offset):
    return True
""", shallow=True, min_lost=0.5, costs=7),
    WrongAnswer("proportional_loses_position", "shallow: any stopped pair the head uses (content counted as position)",
                _PLP + "    return bool((stopped & used).any())\n", shallow=True, min_lost=0.5, costs=7),
    WrongAnswer("proportional_loses_position", "shallow: any stopped pair that turns over the distances (the head ignored)",
                _PLP + "    return bool((stopped & turns).any())\n", shallow=True, min_lost=0.5, costs=7),
    WrongAnswer("proportional_loses_position",
                "a stopped pair that turns and that the head uses (content still counted as position)",
                _PLP + "    return bool((stopped & turns & used).any())\n", costs=6),
    WrongAnswer("proportional_loses_position", "the profile measured with proportional's own frequencies (stopped pairs look still)",
                _mutant("proportional_loses_position", ("theta = rope_init_fn(full, head_dim, T)[0].double()",
                                                        "theta = rope_init_fn(rope_parameters, head_dim, T)[0].double()")),
                costs=6),
]

CORRECT_VARIANTS = [
    ("rope_init_fn", "float32 arithmetic as in Hugging Face's code (within the documented tolerances)",
     _mutant(_R, ("return b ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)",
                  "return (1.0 / (b ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))).double()"))),
    ("mrope_position_ids", "the text resumes after the largest id so far plus one (older transformers)", '''
def mrope_position_ids(segments, spatial_merge_size=2):
    if spatial_merge_size < 1:
        raise ValueError("spatial_merge_size must be >= 1")
    rows, nxt = [], 0
    for segment in segments:
        if segment[0] == "text" and len(segment) == 2 and segment[1] >= 0:
            for _ in range(segment[1]):
                rows.append((nxt, nxt, nxt))
                nxt += 1
        elif segment[0] == "image" and len(segment) == 3 and segment[1] >= 1 and segment[2] >= 1 \\
                and segment[1] % spatial_merge_size == 0 and segment[2] % spatial_merge_size == 0:
            h, w = segment[1] // spatial_merge_size, segment[2] // spatial_merge_size
            block = [(nxt, nxt + r, nxt + c) for r in range(h) for c in range(w)]
            rows += block
            nxt = max(max(t) for t in block) + 1
        else:
            raise ValueError(f"bad segment {segment!r}")
    return torch.tensor(rows, dtype=torch.int64).reshape(-1, 3).T.contiguous()
'''),
    ("apply_mrope", "complex multiplication, angles gathered per pair", '''
def apply_mrope(x, position_ids, inv_freq, mrope_section):
    half = x.shape[-1] // 2
    if x.shape[-1] % 2 or tuple(inv_freq.shape) != (half,):
        raise ValueError("bad head_dim or inv_freq")
    if len(mrope_section) != 3 or sum(mrope_section) != half or min(mrope_section) < 0:
        raise ValueError("bad mrope_section")
    if tuple(position_ids.shape) != (3, x.shape[-2]):
        raise ValueError("bad position_ids")
    bounds = [0, mrope_section[0], mrope_section[0] + mrope_section[1], half]
    angle = torch.cat([position_ids[a].double()[:, None] * inv_freq.double()[bounds[a]:bounds[a + 1]]
                       for a in range(3)], -1)
    z = torch.complex(x[..., :half].double(), x[..., half:].double()) * torch.polar(torch.ones_like(angle), angle)
    return torch.cat((z.real, z.imag), -1).to(x.dtype)
'''),
    ("proportional_loses_position", "a stricter threshold (a third of the largest pair)",
     _mutant("proportional_loses_position", ("swing > 0.5 * size.max()", "swing > size.max() / 3"))),
]
