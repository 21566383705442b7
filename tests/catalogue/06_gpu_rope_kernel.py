"""Plausible wrong kernels for notebook 06; each must lose points under the hidden tests.

Every entry is the solution's own exercise cell with one mistake put in by a targeted text
replacement (each replacement must match exactly once, or importing this module fails), so the
catalogue stays in step with the solution notebook and each entry differs from it by one bug.
"""
from __future__ import annotations

from tests.catalogue import WrongAnswer, solution_cells

_exercise_source, _mutant = solution_cells("06_gpu_rope_kernel")


COSTS_ONCE = True  # each entry fails one hidden test of its exercise, or its declared costs
# The ladder's later steps run the earlier steps' own code by design (rope_backward_triton is one call
# of step 4's launcher with -sin, TritonRoPE wires steps 4 and 5 into autograd), and an interpreted
# Triton kernel cannot cross the sandbox boundary as a trusted black box: an entry is held to its
# costs within its own exercise (what it also costs the later steps shows in their tests).
STEPS_SHARE_CODE = True

_ROWS, _HEADS, _LAYOUTS = "rope_rows_triton", "rope_heads_triton", "rope_interleaved_triton"
_FWD, _BWD, _FN = "rope_forward_triton", "rope_backward_triton", "TritonRoPE"
_BWD_CALL = ('return _rope_launch(grad_q, grad_k, cos, sin, interleaved, backward=True, position_ids=position_ids,\n'
             '                        rotary_dim=rotary_dim, cu_seqlens=cu_seqlens, max_seqlen=max_seqlen,\n'
             '                        names=("grad_q", "grad_k"))')

_HOST_RANGE_CHECK = ("    if mode and (position_ids.min().item() < 0 or position_ids.max().item() >= n_rows):\n"
                     "        raise ValueError('position_ids outside the tables')\n")

WRONG_ANSWERS = [
    # -- step 1: rope_rows_triton ----------------------------------------------------------------------
    WrongAnswer(_ROWS, "sin with the wrong sign", _mutant(
        _ROWS, ("(x1 * cos - x2 * sin).to(", "(x1 * cos + x2 * sin).to("),
        ("(x2 * cos + x1 * sin).to(", "(x2 * cos - x1 * sin).to(")), feedback="wrong angle sign"),
    WrongAnswer(_ROWS, "unmasked tail: tokens past seq_len are read and written", _mutant(_ROWS, (
        "mask = (t[:, None] < seq_len) & (j[None, :] < half_dim)",
        "mask = (j[None, :] < half_dim) & (t[:, None] >= 0)"))),
    WrongAnswer(_ROWS, "pair mask missing: BLOCK_D2 lanes past D/2 touch the next channels", _mutant(_ROWS, (
        "mask = (t[:, None] < seq_len) & (j[None, :] < half_dim)",
        "mask = (t[:, None] < seq_len) & (j[None, :] >= 0)"))),
    WrongAnswer(_ROWS, "interleaved pairs (2j, 2j+1) instead of half-split", _mutant(
        _ROWS, ("x1 = tl.load(x_row + j[None, :],", "x1 = tl.load(x_row + 2 * j[None, :],"),
        ("x2 = tl.load(x_row + half_dim + j[None, :],", "x2 = tl.load(x_row + 2 * j[None, :] + 1,"),
        ("tl.store(out_row + j[None, :],", "tl.store(out_row + 2 * j[None, :],"),
        ("tl.store(out_row + half_dim + j[None, :],", "tl.store(out_row + 2 * j[None, :] + 1,")),
        feedback="the wrong layout"),
    WrongAnswer(_ROWS, "rotates x in place", _mutant(_ROWS, ("out = torch.empty_like(x)", "out = x")),
                feedback="in place"),
    WrongAnswer(_ROWS, "cos and sin tables swapped", _mutant(_ROWS, (
        "_rope_rows_kernel[(triton.cdiv(seq_len, block_t),)](x, out, cos, sin,",
        "_rope_rows_kernel[(triton.cdiv(seq_len, block_t),)](x, out, sin, cos,")), feedback="cos and sin swapped"),
    # -- step 2: rope_heads_triton ---------------------------------------------------------------------
    WrongAnswer(_HEADS, "strides ignored: a contiguous layout assumed", _mutant(_HEADS, (
        "*q.stride(), *k.stride(), *q_out.stride(), *k_out.stride(),\n"
        "                             *cos.stride(), *sin.stride(),",
        "*q_out.stride(), *k_out.stride(), *q_out.stride(), *k_out.stride(),\n"
        "                             half, 1, half, 1,"))),
    WrongAnswer(_HEADS, "k rotated with q's head count", _mutant(
        _HEADS,
        ("_rotate_heads_half_split(k_ptr, k_out_ptr, cos, sin, b, t, t_mask, n_k_heads, half_dim,",
         "_rotate_heads_half_split(k_ptr, k_out_ptr, cos, sin, b, t, t_mask, n_q_heads, half_dim,"),
        ("stride_kob, stride_koh, stride_kot, stride_kod, BLOCK_HK, BLOCK_D2)",
         "stride_kob, stride_koh, stride_kot, stride_kod, BLOCK_HQ, BLOCK_D2)"))),
    WrongAnswer(_HEADS, "head mask missing: BLOCK_H lanes past the head count touch memory", _mutant(_HEADS, (
        "mask = t_mask[:, None, None] & (h < n_heads) & (j < half_dim)",
        "mask = t_mask[:, None, None] & (j < half_dim)"))),
    WrongAnswer(_HEADS, "batch stride of q used for k", _mutant(_HEADS, (
        "x_rows = x_ptr + b * stride_xb + h * stride_xh + tt * stride_xt",
        "x_rows = x_ptr + b * stride_ob + h * stride_xh + tt * stride_xt"))),
    WrongAnswer(_HEADS, "rotates q and k in place", _mutant(
        _HEADS, ("q_out = torch.empty(q.shape, dtype=q.dtype, device=q.device)", "q_out = q"),
        ("k_out = torch.empty(k.shape, dtype=k.dtype, device=k.device)", "k_out = k")), feedback="in place"),
    # -- step 3: rope_interleaved_triton ---------------------------------------------------------------
    WrongAnswer(_LAYOUTS, "layout flag ignored (always half-split)", _mutant(_LAYOUTS, (
        "INTERLEAVED=bool(interleaved)", "INTERLEAVED=False")), feedback="the wrong layout"),
    WrongAnswer(_LAYOUTS, "split members swapped: odd channel taken as x1", _mutant(_LAYOUTS, (
        "x1, x2 = tl.split(", "x2, x1 = tl.split("))),
    WrongAnswer(_LAYOUTS, "joined back in the wrong order", _mutant(_LAYOUTS, (
        "y = tl.join(x1 * cos - x2 * sin, x2 * cos + x1 * sin)",
        "y = tl.join(x2 * cos + x1 * sin, x1 * cos - x2 * sin)"))),
    WrongAnswer(_LAYOUTS, "interleaved mask counts pairs, not channels: half of each row left unwritten",
                _mutant(_LAYOUTS, ("mask = rows & (d < 2 * half_dim)", "mask = rows & (d < half_dim)"))),
    WrongAnswer(_LAYOUTS, "interleaved as half-split split in halves (reshape to (2, BLOCK_D2))", _mutant(
        _LAYOUTS, ("x1, x2 = tl.split(tl.reshape(x, (BLOCK_T, BLOCK_H, BLOCK_D2, 2)))",
                   "x1, x2 = tl.split(tl.permute(tl.reshape(x, (BLOCK_T, BLOCK_H, 2, BLOCK_D2)), (0, 1, 3, 2)))"))),
    # -- step 4: rope_forward_triton -------------------------------------------------------------------
    WrongAnswer(_FWD, "position_ids ignored (tokens rotated at 0..T-1)", _mutant(_FWD, (
        "POSITIONS=mode,", "POSITIONS=0,")), feedback="positions ignored"),
    WrongAnswer(_FWD, "int offset ignored (a decoding step rotated at position 0)", _mutant(_FWD, (
        "pos = local + offset", "pos = local"))),
    WrongAnswer(_FWD, "every sequence uses the first sequence's offset", _mutant(_FWD, (
        "pos = local + tl.load(pos_ptr + s * stride_pb)", "pos = local + tl.load(pos_ptr)"))),
    WrongAnswer(_FWD, "rotary_dim ignored in the pairing: (j, j + D/2) instead of (j, j + rotary_dim/2)", _mutant(
        _FWD, ("x2 = tl.load(x_rows + (j + half_rot) * stride_xd,",
               "x2 = tl.load(x_rows + (j + head_dim // 2) * stride_xd,"),
        ("tl.store(out_rows + (j + half_rot) * stride_od,", "tl.store(out_rows + (j + head_dim // 2) * stride_od,"))),
    WrongAnswer(_FWD, "pass-through channels zeroed instead of copied", _mutant(
        _FWD, ("COPY_PASS=(not inplace) and rotary_dim < head_dim", "COPY_PASS=False"),
        ("return torch.empty_like(x), True", "return torch.zeros_like(x), True"),
        ("return torch.empty((b, t, h, d), dtype=x.dtype,", "return torch.zeros((b, t, h, d), dtype=x.dtype,")),
        feedback="pass-through channels zeroed"),
    WrongAnswer(_FWD, "pass-through channels modified: interleaved rotation masked by head_dim, not rotary_dim",
                _mutant(_FWD, ("mask = rows & (d < 2 * half_rot)", "mask = rows & (d < head_dim)"))),
    WrongAnswer(_FWD, "in place by default", _mutant(_FWD, ("    if inplace:\n", "    if True:\n")),
                feedback="in place"),
    WrongAnswer(_FWD, "inplace=True ignored (always a new tensor)", _mutant(
        _FWD, ("    if inplace:\n", "    if False:\n"))),
    WrongAnswer(_FWD, "position tensors checked on the host with .item() (a synchronisation per call)", _mutant(
        _FWD, ("    if inplace:\n", _HOST_RANGE_CHECK + "    if inplace:\n")), feedback="synchronis",
        costs=2),  # two mistakes: a synchronisation, and a ValueError where the contract clamps
    WrongAnswer(_FWD, "position tensors checked on the host with .tolist()", _mutant(
        _FWD, ("    if inplace:\n",
               "    if mode and not all(0 <= p < n_rows for p in position_ids.flatten().tolist()):\n"
               "        raise ValueError('position_ids outside the tables')\n"
               "    if inplace:\n")), feedback="synchronis",
        costs=2),  # as the entry above: a synchronisation, and a ValueError where the contract clamps
    WrongAnswer(_FWD, "positions outside the tables not clamped (rows past the tables read)", _mutant(_FWD, (
        "    pos = tl.minimum(tl.maximum(pos, 0), n_rows - 1)", "    pos = pos"))),
    # costs 2: the varlen layout (total_tokens, H, D) is read through a (1, H, N, D) view, which is not
    # contiguous: ignoring strides breaks it as well as the strided layouts of test_forward_any_strides.
    WrongAnswer(_FWD, "strides ignored: a contiguous layout assumed", _mutant(_FWD, (
        "*q.stride(), *k.stride(), stride_cb,", "*q.contiguous().stride(), *k.contiguous().stride(), stride_cb,")),
        costs=2),
    WrongAnswer(_FWD, "cu_seqlens ignored: the packed tokens rotated as one sequence", _mutant(_FWD, (
        "    if position_ids is None or isinstance(position_ids, int):\n",
        "    cu_seqlens, n_seqs = None, batch\n    if position_ids is None or isinstance(position_ids, int):\n"))),
    WrongAnswer(_FWD, "Hugging Face tables: every batch element given the first one's angles", _mutant(_FWD, (
        "stride_cb = cos.stride(0) if cos.shape[0] > 1 else 0", "stride_cb = 0"))),
    WrongAnswer(_FWD, "Hugging Face tables, interleaved: pair j's angle read at column j instead of 2j", _mutant(
        _FWD, ("cos.stride(2) * (2 if interleaved else 1)", "cos.stride(2)"))),
    WrongAnswer(_FWD, "sin with the wrong sign", _mutant(
        _FWD, ("(x1 * cos - x2 * sin).to(", "(x1 * cos + x2 * sin).to("),
        ("(x2 * cos + x1 * sin).to(", "(x2 * cos - x1 * sin).to(")), feedback="wrong angle sign"),
    # -- step 5: rope_backward_triton ------------------------------------------------------------------
    WrongAnswer(_BWD, "wrong sin sign: the forward rotation", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL.replace("backward=True", "backward=False"))),
        feedback="rotation by +θ"),
    # costs 2: two mistakes at once, no rotation (the public test) and no input checks at all (the
    # validation test), since the whole launch is replaced.
    WrongAnswer(_BWD, "gradients returned unrotated", _mutant(_BWD, (
        _BWD_CALL, "return grad_q.clone(), grad_k.clone()")), feedback="unrotated", costs=2),
    WrongAnswer(_BWD, "layout flag ignored", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL.replace("sin, interleaved,", "sin, False,"))), feedback="the wrong layout"),
    WrongAnswer(_BWD, "gradients rotated in place", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL.replace("return ", "d_q, d_k = ")
        + "\n    grad_q.copy_(d_q)\n    grad_k.copy_(d_k)\n    return grad_q, grad_k")), feedback="in place"),
    WrongAnswer(_BWD, "gradients for q and k swapped", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL + "[::-1]"))),
    WrongAnswer(_BWD, "position_ids not passed on (gradients rotated at 0..T-1)", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL.replace("position_ids=position_ids", "position_ids=None"))),
        feedback="positions ignored"),
    WrongAnswer(_BWD, "rotary_dim not passed on", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL.replace("rotary_dim=rotary_dim", "rotary_dim=None")))),
    WrongAnswer(_BWD, "cu_seqlens not passed on", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL.replace(" cu_seqlens=cu_seqlens, max_seqlen=max_seqlen,", "")))),
    # -- step 6: TritonRoPE ----------------------------------------------------------------------------
    WrongAnswer(_FN, "backward applies the forward rotation", _mutant(_FN, (
        "grad_q, grad_k = rope_backward_triton(grad_q_rot, grad_k_rot, cos, sin, ctx.interleaved,",
        "grad_q, grad_k = rope_forward_triton(grad_q_rot, grad_k_rot, cos, sin, ctx.interleaved,")),
        feedback="rotation by +θ"),
    WrongAnswer(_FN, "layout not kept for backward", _mutant(_FN, (
        "grad_q, grad_k = rope_backward_triton(grad_q_rot, grad_k_rot, cos, sin, ctx.interleaved,",
        "grad_q, grad_k = rope_backward_triton(grad_q_rot, grad_k_rot, cos, sin, False,")),
        feedback="interleaved flag was not kept on ctx"),
    WrongAnswer(_FN, "backward passes the gradients through", _mutant(_FN, (
        "return grad_q, grad_k, None, None, None, None, None",
        "return grad_q_rot, grad_k_rot, None, None, None, None, None")), feedback="unrotated"),
    # costs 7: autograd rejects two gradients for seven inputs, so every call's backward raises and
    # no test of the exercise can run; there is no output to let pass.
    WrongAnswer(_FN, "backward returns two gradients for seven inputs", _mutant(_FN, (
        "return grad_q, grad_k, None, None, None, None, None", "return grad_q, grad_k")), costs=7),
    WrongAnswer(_FN, "position_ids not kept for backward", _mutant(_FN, (
        "position_ids=ctx.position_ids, rotary_dim=ctx.rotary_dim)", "rotary_dim=ctx.rotary_dim)")),
        feedback="position_ids were not kept on ctx"),
]

# -- kinds of mistakes the property and error tests catch (issue 16) --------------------------------------
_ROWS_DTYPE_CHECK = ('    if x.dtype not in allowed:\n'
                     '        raise ValueError(f"x must be one of {allowed} here, got {x.dtype}")\n')
_ROWS_CONTIGUOUS_CHECK = ('    if not x.is_contiguous():\n'
                          '        raise ValueError("x must be contiguous (this kernel assumes row stride D); '
                          'call x.contiguous() "\n'
                          '                         "or use the strided kernel of the next step")\n')
_HEADS_CHECKS = ('        if x.dtype not in allowed:\n'
                 '            raise ValueError(f"{name} must be one of {allowed} here, got {x.dtype}")\n')
_SHAPES_AGREE = "    if (k.shape[0], k.shape[2], k.shape[3]) != (batch, seq_len, head_dim):\n"
_ODD_HEAD_DIM = ('    if head_dim % 2:\n'
                 '        raise ValueError(f"head_dim must be even to form rotation pairs, got {head_dim}")\n')
_TABLES_CHECK = "    if tuple(cos.shape) != (seq_len, half) or tuple(sin.shape) != (seq_len, half):\n"
_INTERLEAVED_VALIDATION_START = ('    allowed = (torch.float16, torch.float32) if INTERPRET '
                                 'else (torch.float16, torch.float32, torch.bfloat16)\n')
_POSITION_SHAPE_CHECK = ("        elif cu_seqlens is None and tuple(pos.shape) == ((seq_len,) if packed else "
                         "(batch, seq_len)):\n")


def _without_validation(exercise: str) -> str:
    """The solution's cell for ``exercise`` with its whole input validation removed (shapes still read)."""
    source = _exercise_source(exercise)
    start = source.index(_INTERLEAVED_VALIDATION_START)
    end = source.index("    q_out = torch.empty(")
    return source[:start] + ("    (batch, n_q_heads, seq_len, head_dim), n_k_heads = q.shape, k.shape[1]\n"
                             "    half = head_dim // 2\n") + source[end:]


WRONG_ANSWERS += [
    # -- rope_rows_triton --------------------------------------------------------------------------------
    WrongAnswer(_ROWS, "dtype not checked: a float64 x is accepted", _mutant(_ROWS, (_ROWS_DTYPE_CHECK, ""))),
    WrongAnswer(_ROWS, "contiguity not checked: a non-contiguous x is read as if contiguous", _mutant(
        _ROWS, (_ROWS_CONTIGUOUS_CHECK, ""))),
    WrongAnswer(_ROWS, "returns float32 for a float16 x", _mutant(_ROWS, (
        "out = torch.empty_like(x)", "out = torch.empty_like(x, dtype=torch.float32)")), feedback="dtype"),
    WrongAnswer(_ROWS, "only the tables' width checked: tables with other row counts or sin unlike cos accepted",
                _mutant(_ROWS, ("    if tuple(cos.shape) != (seq_len, half) or tuple(sin.shape) != (seq_len, half):\n",
                                "    if cos.shape[-1] != half:\n"))),
    # -- rope_heads_triton -------------------------------------------------------------------------------
    WrongAnswer(_HEADS, "unit channel stride assumed (x.stride(3) ignored)", _mutant(
        _HEADS, ("x1 = tl.load(x_rows + j * stride_xd,", "x1 = tl.load(x_rows + j,"),
        ("x2 = tl.load(x_rows + (j + half_dim) * stride_xd,", "x2 = tl.load(x_rows + (j + half_dim),"))),
    WrongAnswer(_HEADS, "tables' column stride ignored (cos.stride(1) taken as 1)", _mutant(
        _HEADS, ("cos_ptr + t[:, None] * stride_ct + j[None, :] * stride_cd",
                 "cos_ptr + t[:, None] * stride_ct + j[None, :]"),
        ("sin_ptr + t[:, None] * stride_st + j[None, :] * stride_sd",
         "sin_ptr + t[:, None] * stride_st + j[None, :]"))),
    WrongAnswer(_HEADS, "only head_dim compared: k with another batch size or seq_len accepted", _mutant(
        _HEADS, (_SHAPES_AGREE, "    if k.shape[3] != head_dim:\n"))),
    WrongAnswer(_HEADS, "odd head_dim not rejected", _mutant(_HEADS, (_ODD_HEAD_DIM, ""))),
    WrongAnswer(_HEADS, "dtype not checked: float64 q and k accepted", _mutant(_HEADS, (_HEADS_CHECKS, ""))),
    # -- rope_interleaved_triton -------------------------------------------------------------------------
    WrongAnswer(_LAYOUTS, "no input validation (step 2's checks not carried over)", _without_validation(_LAYOUTS)),
    WrongAnswer(_LAYOUTS, "interleaved load assumes a unit channel stride", _mutant(_LAYOUTS, (
        "x = tl.load(x_rows + d * stride_xd, mask=mask, other=0.0)", "x = tl.load(x_rows + d, mask=mask, other=0.0)"))),
    WrongAnswer(_LAYOUTS, "only cos's shape checked (sin unlike cos accepted)", _mutant(_LAYOUTS, (
        _TABLES_CHECK, "    if tuple(cos.shape) != (seq_len, half):\n"))),
    WrongAnswer(_LAYOUTS, "dtype not checked: float64 q and k accepted", _mutant(_LAYOUTS, (_HEADS_CHECKS, ""))),
    # -- rope_forward_triton -----------------------------------------------------------------------------
    WrongAnswer(_FWD, "float position_ids cast to int64 instead of rejected", _mutant(_FWD, (
        "        pos = position_ids\n"
        "        if not isinstance(pos, torch.Tensor) or pos.dtype not in (torch.int32, torch.int64) \\\n",
        "        pos = position_ids.long()\n"
        "        if not isinstance(pos, torch.Tensor) \\\n"))),
    WrongAnswer(_FWD, "only int64 position_ids accepted (int32 rejected)", _mutant(_FWD, (
        "or pos.dtype not in (torch.int32, torch.int64)", "or pos.dtype != torch.int64"))),
    WrongAnswer(_FWD, "shape of a (B, T) position_ids not checked", _mutant(_FWD, (
        _POSITION_SHAPE_CHECK, "        elif cu_seqlens is None:\n"))),
    WrongAnswer(_FWD, "negative positions not rejected", _mutant(
        _FWD, ("or offset < 0 or offset + longest > n_rows)", "or offset + longest > n_rows)"))),
    WrongAnswer(_FWD, "off by one: tables of exactly offset + T rows rejected", _mutant(_FWD, (
        "or offset < 0 or offset + longest > n_rows)", "or offset < 0 or offset + longest >= n_rows)"))),
    WrongAnswer(_FWD, "odd head_dim rejected even with an even rotary_dim", _mutant(_FWD, (
        "    rotary_dim = head_dim if rotary_dim is None else rotary_dim\n",
        "    if head_dim % 2:\n"
        "        raise ValueError(f\"head_dim must be even, got {head_dim}\")\n"
        "    rotary_dim = head_dim if rotary_dim is None else rotary_dim\n"))),
    WrongAnswer(_FWD, "rotary_dim 0 accepted (only the upper bound checked)", _mutant(_FWD, (
        "or not 0 < rotary_dim <= head_dim", "or rotary_dim > head_dim"))),
    WrongAnswer(_FWD, "half-split tile assumes a unit channel stride", _mutant(
        _FWD, ("x1 = tl.load(x_rows + j * stride_xd,", "x1 = tl.load(x_rows + j,"),
        ("x2 = tl.load(x_rows + (j + half_rot) * stride_xd,", "x2 = tl.load(x_rows + (j + half_rot),"))),
    # -- rope_backward_triton ----------------------------------------------------------------------------
    WrongAnswer(_BWD, "float32 gradients returned for half-precision gradients", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL.replace("_rope_launch(grad_q, grad_k,", "_rope_launch(grad_q.float(), grad_k.float(),"))),
        feedback="dtype"),
    WrongAnswer(_BWD, "an int offset dropped: gradients rotated from position 0", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL.replace("position_ids=position_ids",
                                     "position_ids=position_ids if torch.is_tensor(position_ids) else None")))),
    # -- TritonRoPE --------------------------------------------------------------------------------------
    WrongAnswer(_FN, "rotary_dim not kept for backward", _mutant(_FN, (
        "position_ids=ctx.position_ids, rotary_dim=ctx.rotary_dim)", "position_ids=ctx.position_ids)"))),
    WrongAnswer(_FN, "position_ids saved with save_for_backward (an int offset cannot be)", _mutant(
        _FN, ("ctx.save_for_backward(cos, sin)\n"
              "        ctx.interleaved, ctx.position_ids, ctx.rotary_dim = interleaved, position_ids, rotary_dim",
              "ctx.save_for_backward(cos, sin, position_ids)\n"
              "        ctx.interleaved, ctx.rotary_dim = interleaved, rotary_dim"),
        ("cos, sin = ctx.saved_tensors", "cos, sin, position_ids = ctx.saved_tensors"),
        ("position_ids=ctx.position_ids,", "position_ids=position_ids,"))),
    WrongAnswer(_FN, "forward computes in float32 (q.float()): float32 outputs for half inputs", _mutant(_FN, (
        "return rope_forward_triton(q, k, cos, sin,", "return rope_forward_triton(q.float(), k.float(), cos, sin,")),
        feedback="dtype"),
]

CORRECT_VARIANTS = [
    (_ROWS, "tables cast to contiguous float32 on the host", _mutant(_ROWS, (
        "cos, sin = cos.contiguous(), sin.contiguous()",
        "cos, sin = cos.float().contiguous(), sin.float().contiguous()"))),
    (_ROWS, "one program per 16 tokens whatever T", _mutant(_ROWS, (
        "block_t = min(64, triton.next_power_of_2(seq_len))", "block_t = 16"))),
    (_HEADS, "tables made contiguous float32 before the launch", _mutant(_HEADS, (
        "    q_out = torch.empty(q.shape, dtype=q.dtype, device=q.device)  # contiguous, whatever q's strides\n",
        "    cos, sin = cos.float().contiguous(), sin.float().contiguous()\n"
        "    q_out = torch.empty(q.shape, dtype=q.dtype, device=q.device)  # contiguous, whatever q's strides\n"))),
    (_LAYOUTS, "interleaved pairs read with two strided loads (2j and 2j + 1)", _mutant(_LAYOUTS, (
        "        x = tl.load(x_rows + d * stride_xd, mask=mask, other=0.0).to(tl.float32)  # one contiguous load\n"
        "        x1, x2 = tl.split(tl.reshape(x, (BLOCK_T, BLOCK_H, BLOCK_D2, 2)))          # even, odd channels\n"
        "        y = tl.join(x1 * cos - x2 * sin, x2 * cos + x1 * sin)                       # (..., BLOCK_D2, 2)\n"
        "        y = tl.reshape(y, (BLOCK_T, BLOCK_H, 2 * BLOCK_D2))\n"
        "        tl.store(out_rows + d * stride_od, y.to(out_ptr.dtype.element_ty), mask=mask)\n",
        "        j = tl.arange(0, BLOCK_D2).to(tl.int64)[None, None, :]\n"
        "        pairs = rows & (j < half_dim)\n"
        "        x1 = tl.load(x_rows + 2 * j * stride_xd, mask=pairs, other=0.0).to(tl.float32)\n"
        "        x2 = tl.load(x_rows + (2 * j + 1) * stride_xd, mask=pairs, other=0.0).to(tl.float32)\n"
        "        tl.store(out_rows + 2 * j * stride_od, (x1 * cos - x2 * sin).to(out_ptr.dtype.element_ty),\n"
        "                 mask=pairs)\n"
        "        tl.store(out_rows + (2 * j + 1) * stride_od, (x2 * cos + x1 * sin).to(out_ptr.dtype.element_ty),\n"
        "                 mask=pairs)\n"))),
    (_FWD, "inplace computed out of place, then copied into q and k", _mutant(
        _FWD, ("    if inplace:\n        q_out, k_out, same_q, same_k = q, k, True, True\n    else:\n",
               "    if True:\n"),
        ("COPY_PASS=(not inplace) and rotary_dim < head_dim", "COPY_PASS=rotary_dim < head_dim"),
        ("    if packed:\n        return (q_in, k_in)",
         "    if inplace:\n        q.copy_(q_out)\n        k.copy_(k_out)\n"
         "        q_out, k_out = q, k\n    if packed:\n        return (q_in, k_in)"))),
    (_FWD, "(B,) offsets expanded to (B, T) positions on the device (no synchronisation)", _mutant(_FWD, (
        "        if tuple(pos.shape) == (n_seqs,):                         # per-sequence offsets\n",
        "        if tuple(pos.shape) == (n_seqs,) and cu_seqlens is None:  # expanded on the device\n"
        "            pos = pos[:, None] + torch.arange(seq_len, device=pos.device, dtype=pos.dtype)\n"
        "            mode, pos_strides = 2, pos.stride()\n"
        "        elif tuple(pos.shape) == (n_seqs,):                       # per-sequence offsets\n"))),    (_BWD, "the forward rotation with -sin", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL.replace("cos, sin, interleaved, backward=True",
                                     "cos, -sin, interleaved, backward=False")))),
    (_FN, "backward calls rope_forward_triton with -sin", _mutant(_FN, (
        "grad_q, grad_k = rope_backward_triton(grad_q_rot, grad_k_rot, cos, sin, ctx.interleaved,",
        "grad_q, grad_k = rope_forward_triton(grad_q_rot, grad_k_rot, cos, -sin, ctx.interleaved,"))),
]

# -- sector_traffic (measure) ---------------------------------------------------------------------
_TRAFFIC = '''
def sector_traffic(launch, sector_bytes=32):
    if isinstance(sector_bytes, bool) or not isinstance(sector_bytes, int) or sector_bytes < 1 \\
            or sector_bytes & (sector_bytes - 1):
        raise ValueError("sector_bytes must be a positive power of two")
    with record_memory_instructions() as instructions:
        launch()
    sectors = SECTORS
    used = sum(int(i.addresses.size) * i.elem_bytes for i in instructions)
    return {"loads": LOADS, "stores": sum(i.kind == "store" for i in instructions),
            "sectors": int(sectors), "bytes": int(used), "efficiency": EFFICIENCY}
'''


def _traffic(sectors="sum(len(set((i.addresses // sector_bytes).tolist())) for i in instructions)",
             loads='sum(i.kind == "load" for i in instructions)', efficiency="used / (sectors * sector_bytes)"):
    return _TRAFFIC.replace("SECTORS", sectors).replace("LOADS", loads).replace("EFFICIENCY", efficiency)


WRONG_ANSWERS += [
    WrongAnswer("sector_traffic", "sectors counted once over the whole launch, not per instruction", _traffic(
        sectors='len({(int(a) // sector_bytes, i.kind) for i in instructions for a in i.addresses})'),
        feedback="not per instruction"),
    WrongAnswer("sector_traffic", "lanes counted instead of distinct sectors", _traffic(
        sectors="sum(int(i.addresses.size) for i in instructions)"), feedback="lanes counted"),
    WrongAnswer("sector_traffic", "each instruction's bytes divided by sector_bytes, rounded up", _traffic(
        sectors="sum(-(-int(i.addresses.size) * i.elem_bytes // sector_bytes) for i in instructions)"),
        feedback="rounded up"),
    WrongAnswer("sector_traffic", "the sector size fixed at 32 bytes", _traffic(
        sectors="sum(len(set((i.addresses // 32).tolist())) for i in instructions)",
        efficiency="used / (sectors * 32)")),
    WrongAnswer("sector_traffic", "every instruction counted as a load", _traffic(loads="len(instructions)")),
    WrongAnswer("sector_traffic", "efficiency inverted (requested over used)", _traffic(
        efficiency="(sectors * sector_bytes) / used")),
]

CORRECT_VARIANTS += [
    ("sector_traffic", "numpy: unique sector indices of each instruction", '''
def sector_traffic(launch, sector_bytes=32):
    import numpy
    if type(sector_bytes) is not int or sector_bytes <= 0 or bin(sector_bytes).count("1") != 1:
        raise ValueError(f"sector_bytes must be a positive power of two, got {sector_bytes!r}")
    counts = {"loads": 0, "stores": 0, "sectors": 0, "bytes": 0}
    with record_memory_instructions() as recorded:
        launch()
    for instruction in recorded:
        counts["loads" if instruction.kind == "load" else "stores"] += 1
        counts["sectors"] += int(numpy.unique(numpy.floor_divide(instruction.addresses, sector_bytes)).size)
        counts["bytes"] += int(len(instruction.addresses)) * int(instruction.elem_bytes)
    counts["efficiency"] = counts["bytes"] / (counts["sectors"] * sector_bytes) if counts["sectors"] else 1.0
    return counts
'''),
    ("sector_traffic", "torch: sector indices as a tensor, torch.unique per instruction", '''
def sector_traffic(launch, sector_bytes=32):
    if isinstance(sector_bytes, bool) or not isinstance(sector_bytes, int) or sector_bytes < 1:
        raise ValueError("sector_bytes must be a positive integer")
    if (sector_bytes & (sector_bytes - 1)) != 0:
        raise ValueError("sector_bytes must be a power of two")
    with record_memory_instructions() as log:
        launch()
    per_instruction = [torch.unique(torch.from_numpy(i.addresses) // sector_bytes).numel() for i in log]
    total = sum(per_instruction)
    used = sum(i.addresses.size * i.elem_bytes for i in log)
    return {"loads": len([i for i in log if i.kind == "load"]), "stores": len([i for i in log if i.kind == "store"]),
            "sectors": int(total), "bytes": int(used), "efficiency": float(used) / (total * sector_bytes)}
'''),
]
