"""Plausible wrong kernels for notebook 06; each must lose points under the hidden tests.

Every entry is the solution's own exercise cell with one mistake put in by a targeted text
replacement (each replacement must match exactly once, or importing this module fails), so the
catalogue stays in step with the solution notebook and each entry differs from it by one bug.
"""
from __future__ import annotations

from pathlib import Path

import nbformat

from grader.notebook import EXERCISE_TAG, tags, top_level_names
from tests.catalogue import WrongAnswer

_SOLUTION = Path(__file__).resolve().parents[2] / "solutions" / "06_gpu_rope_kernel.ipynb"


def _exercise_source(name: str) -> str:
    notebook = nbformat.read(str(_SOLUTION), as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code" and EXERCISE_TAG in tags(cell) and name in top_level_names(cell.source):
            return cell.source
    raise LookupError(f"{_SOLUTION.name}: no exercise cell defines {name}")


def _mutant(exercise: str, *replacements: tuple[str, str]) -> str:
    """The solution's cell for ``exercise`` with each ``(old, new)`` replacement applied once."""
    source = _exercise_source(exercise)
    for old, new in replacements:
        if source.count(old) != 1:
            raise ValueError(f"catalogue 06 ({exercise}): {old!r} occurs {source.count(old)} times "
                             "in the solution cell, expected once; update the catalogue")
        source = source.replace(old, new)
    return source


_FWD, _BWD, _FN = "rope_forward_triton", "rope_backward_triton", "TritonRoPE"
_BWD_CALL = 'return _rope_launch(grad_q, grad_k, cos, sin, interleaved, backward=True, names=("grad_q", "grad_k"))'

WRONG_ANSWERS = [
    # -- rope_forward_triton: the kernel, its device function and its launcher ----------------------
    WrongAnswer(_FWD, "unmasked tail: tokens past seq_len are read and written", _mutant(_FWD, (
        "t_mask = t < seq_len", "t_mask = t >= 0  # forgot the tail: every token of the last block"))),
    WrongAnswer(_FWD, "strides ignored: a contiguous layout assumed", _mutant(_FWD, (
        "*q.stride(), *k.stride(), *q_out.stride(), *k_out.stride(),\n"
        "                       *cos.stride(), *sin.stride(),",
        "*q_out.stride(), *k_out.stride(), *q_out.stride(), *k_out.stride(),\n"
        "                       half, 1, half, 1,"))),
    WrongAnswer(_FWD, "k rotated with q's head count", _mutant(
        _FWD,
        ("_rotate_heads(k_ptr, k_out_ptr, cos, sin, b, t, t_mask, n_k_heads, half_dim,",
         "_rotate_heads(k_ptr, k_out_ptr, cos, sin, b, t, t_mask, n_q_heads, half_dim,"),
        ("INTERLEAVED, BLOCK_HK, BLOCK_D2)", "INTERLEAVED, BLOCK_HQ, BLOCK_D2)"))),
    WrongAnswer(_FWD, "head-dim mask missing: BLOCK_D2 lanes past D/2 touch memory", _mutant(_FWD, (
        "mask = t_mask[:, None, None] & (h < n_heads) & (j < half_dim)",
        "mask = t_mask[:, None, None] & (h < n_heads)"))),
    WrongAnswer(_FWD, "sin with the wrong sign", _mutant(
        _FWD, ("y1 = x1 * cos - x2 * sin", "y1 = x1 * cos + x2 * sin"),
        ("y2 = x2 * cos + x1 * sin", "y2 = x2 * cos - x1 * sin")),
        feedback="wrong angle sign"),
    WrongAnswer(_FWD, "layout flag ignored (always half-split)", _mutant(_FWD, (
        "INTERLEAVED=bool(interleaved)", "INTERLEAVED=False")), feedback="the wrong layout"),
    WrongAnswer(_FWD, "rotates q and k in place", _mutant(
        _FWD, ("q_out = torch.empty(q.shape, dtype=q.dtype, device=q.device)", "q_out = q"),
        ("k_out = torch.empty(k.shape, dtype=k.dtype, device=k.device)", "k_out = k")),
        feedback="in place"),
    # -- rope_backward_triton ----------------------------------------------------------------------
    WrongAnswer(_BWD, "wrong sin sign: the forward rotation", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL.replace("backward=True", "backward=False"))),
        feedback="rotation by +θ"),
    WrongAnswer(_BWD, "gradients returned unrotated", _mutant(_BWD, (
        _BWD_CALL, "return grad_q.clone(), grad_k.clone()")), feedback="unrotated"),
    WrongAnswer(_BWD, "layout flag ignored", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL.replace("sin, interleaved,", "sin, False,"))), feedback="the wrong layout"),
    WrongAnswer(_BWD, "gradients rotated in place", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL.replace("return ", "d_q, d_k = ")
        + "\n    grad_q.copy_(d_q)\n    grad_k.copy_(d_k)\n    return grad_q, grad_k")), feedback="in place"),
    WrongAnswer(_BWD, "gradients for q and k swapped", _mutant(_BWD, (
        _BWD_CALL, _BWD_CALL + "[::-1]"))),
    # -- TritonRoPE --------------------------------------------------------------------------------
    WrongAnswer(_FN, "backward applies the forward rotation", _mutant(_FN, (
        "rope_backward_triton(grad_q_rot, grad_k_rot, cos, sin, ctx.interleaved)",
        "rope_forward_triton(grad_q_rot, grad_k_rot, cos, sin, ctx.interleaved)")),
        feedback="rotation by +θ"),
    WrongAnswer(_FN, "layout not kept for backward", _mutant(_FN, (
        "rope_backward_triton(grad_q_rot, grad_k_rot, cos, sin, ctx.interleaved)",
        "rope_backward_triton(grad_q_rot, grad_k_rot, cos, sin)")),
        feedback="interleaved flag was not kept on ctx"),
    WrongAnswer(_FN, "backward passes the gradients through", _mutant(_FN, (
        "return grad_q, grad_k, None, None, None", "return grad_q_rot, grad_k_rot, None, None, None")),
        feedback="unrotated"),
    WrongAnswer(_FN, "backward returns two gradients for five inputs", _mutant(_FN, (
        "return grad_q, grad_k, None, None, None", "return grad_q, grad_k"))),
]
