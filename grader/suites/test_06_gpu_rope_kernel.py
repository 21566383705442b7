"""Hidden tests and public checks for notebook 06, a fused RoPE kernel in Triton.

How the learner's code is reached. Every tensor crosses the process boundary as a contiguous CPU
array, so most tests go through the notebook's trusted harness (grader/fixtures/gpu_rope_kernel.py,
imported by the notebook's setup cell): ``student.call_rope_kernel(student.ref(NAME), q, k, cos,
sin, interleaved=..., layout=...)`` builds the requested memory layout inside the sandbox
(contiguous, transposed views of (B, T, H, D) storage, head slices of a fused QKV buffer), on the
device Triton runs on, calls the learner's function and returns ``(result, inputs after the
call)``; ``student.call_rope_autograd`` runs forward and backward through ``TritonRoPE.apply``.
Input checks (ValueError) call the learner's functions directly.

Every reference is computed here, in float64, from the same float32 cos/sin tables the learner
receives. Shapes stay small because Triton's interpreter costs about a millisecond per program.

Tolerances. float32: the kernel rounds a handful of float32 operations, about 2 units of 2^-24
times the pair's norm (measured in the notebook), so 1e-5 (absolute and relative) on O(1) values
leaves room for any correct order of operations while every catalogued mistake is off by O(0.1-1).
float16: the float32 result is rounded once to float16, an error of at most 2^-11 |y| (half an
ulp), so rtol=1e-3 with atol=1e-4 (for subnormals); a round trip rounds twice and each error is
carried by the rotation at the scale of the pair's norm, so its atol is 4 * 2^-11 * max |pair|.
"""
import pytest
import torch

from grader.judge import (expect_close, expect_dtype, expect_equal, expect_raises, expect_shape,
                          expect_true, fail)
from grader.sandbox import StudentCrashed

FP32 = dict(rtol=1e-5, atol=1e-5)
FP16 = dict(rtol=1e-3, atol=1e-4)


# -- inputs and references ----------------------------------------------------------------------
def _tables(seq_len, head_dim, base=10000.0, offset=0):
    """float32 (T, D // 2) cos/sin tables of positions offset..offset+T-1, angles in float64."""
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = (torch.arange(seq_len, dtype=torch.float64) + offset)[:, None] * inv_freq
    return angles.cos().float(), angles.sin().float()


def _inputs(batch, n_q_heads, n_k_heads, seq_len, head_dim, *, seed, dtype=torch.float32, offset=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, n_q_heads, seq_len, head_dim, generator=gen, dtype=torch.float64).to(dtype)
    k = torch.randn(batch, n_k_heads, seq_len, head_dim, generator=gen, dtype=torch.float64).to(dtype)
    return (q, k, *_tables(seq_len, head_dim, offset=offset))


def _rope64(x, cos, sin, interleaved=False, sign=1.0):
    """RoPE in float64 with half-width tables; sign=-1 rotates by -θ (the gradient)."""
    x, cos, sin = x.double(), cos.double(), sign * sin.double()
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def _max_pair_norm(x, interleaved):
    x = x.double()
    x1, x2 = (x[..., 0::2], x[..., 1::2]) if interleaved else x.chunk(2, dim=-1)
    return torch.sqrt(x1**2 + x2**2).max().item()


def _expect_unchanged(now, before, rotated, what):
    """Exact equality; if the tensor now holds its rotation, say it was modified in place."""
    if torch.equal(now, before):
        return
    if torch.allclose(now.double(), rotated, rtol=1e-3, atol=1e-4):
        fail(f"{what} holds its rotation after the call: the rotation was done in place; write the "
             "results into new tensors and leave the inputs as they were")
    expect_equal(now, before, what=what)


def _mistakes(x, cos, sin, interleaved, sign):
    """What plausible wrong kernels return for x (sign=+1 forward, -1 backward)."""
    other = "interleaved" if not interleaved else "half-split"
    found = {
        "rotation by the wrong angle sign (sin with the wrong sign)": _rope64(x, cos, sin, interleaved, -sign),
        f"the wrong layout ({other} pairs)": _rope64(x, cos, sin, not interleaved, sign),
        "the input returned unrotated": x.double(),
        "cos and sin swapped": _rope64(x, sin, cos, interleaved, sign),
    }
    if sign < 0:
        found = {"rotation by +θ: the forward rotation, where the gradient needs -θ (sin -> -sin)":
                 found.pop("rotation by the wrong angle sign (sin with the wrong sign)"), **found}
    return found


def _pair(result, what):
    """The (q, k) pair a rope function returned; fails with a clear message otherwise."""
    expect_true(isinstance(result, tuple) and len(result) == 2,
                f"{what} should return a tuple of two tensors (for q and for k), got "
                f"{type(result).__name__}{'' if not isinstance(result, tuple) else f' of length {len(result)}'}")
    return result


CRASH_HINT = ("; in a Triton kernel a crash usually means an out-of-bounds load or store: check the masks "
              "(tokens past seq_len, heads past the head count, pairs past D // 2) and the strides")
STRIDE_HINT = ("; these inputs were non-contiguous ({layout}): if the contiguous tests pass, the kernel "
               "probably addresses memory with strides computed from the shape instead of x.stride()")


def _harness(call, *args, **kwargs):
    """Call a harness function; a crash of the sandbox gets a hint about masks and strides."""
    try:
        return call(*args, **kwargs)
    except StudentCrashed as exc:
        raise StudentCrashed(f"{exc}{CRASH_HINT}") from None


def _call(student, name, q, k, cos, sin, interleaved=False, layout="contiguous"):
    result, inputs_after = _harness(student.call_rope_kernel, student.ref(name), q, k, cos, sin,
                                    interleaved=interleaved, layout=layout)
    return _pair(result, name), inputs_after


def _with_stride_hint(layout, check, *args, **kwargs):
    """Run a check; for non-contiguous layouts, a failure also says what strided inputs test."""
    try:
        check(*args, **kwargs)
    except AssertionError as exc:
        if layout == "contiguous":
            raise
        raise AssertionError(f"{exc}{STRIDE_HINT.format(layout=layout)}") from None


def _expect_rotated(got, x, cos, sin, interleaved, sign, what, tol=FP32):
    expect_shape(got, tuple(x.shape), what=what)
    expect_dtype(got, x.dtype, what=what)
    expect_close(got, _rope64(x, cos, sin, interleaved, sign), what=what,
                 mistakes=_mistakes(x, cos, sin, interleaved, sign), **tol)


def _check_forward(student, q, k, cos, sin, interleaved=False, layout="contiguous", tol=FP32):
    (q_rot, k_rot), _ = _call(student, "rope_forward_triton", q, k, cos, sin, interleaved, layout)
    _with_stride_hint(layout, _expect_rotated, q_rot, q, cos, sin, interleaved, 1.0, "q_rot", tol)
    _with_stride_hint(layout, _expect_rotated, k_rot, k, cos, sin, interleaved, 1.0, "k_rot", tol)


def _check_backward(student, g_q, g_k, cos, sin, interleaved=False, layout="contiguous", tol=FP32):
    (d_q, d_k), _ = _call(student, "rope_backward_triton", g_q, g_k, cos, sin, interleaved, layout)
    _with_stride_hint(layout, _expect_rotated, d_q, g_q, cos, sin, interleaved, -1.0, "gradient for q", tol)
    _with_stride_hint(layout, _expect_rotated, d_k, g_k, cos, sin, interleaved, -1.0, "gradient for k", tol)


# -- rope_forward_triton ------------------------------------------------------------------------
@pytest.mark.exercise("rope_forward_triton", points=2, public=True)
def test_forward_half_split_float32(student):
    """Half-split layout, float32, q (1, 2, 8, 16) and k (1, 1, 8, 16): matches the float64 reference."""
    _check_forward(student, *_inputs(1, 2, 1, 8, 16, seed=1))


@pytest.mark.exercise("rope_forward_triton", points=1, public=True)
def test_forward_interleaved_float32(student):
    """Interleaved layout (pairs 2j, 2j+1), float32, q and k (2, 2, 8, 16): matches the reference."""
    _check_forward(student, *_inputs(2, 2, 2, 8, 16, seed=2), interleaved=True)


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_odd_sequence_length(student):
    """T = 217 (no power of two), head_dim 80, 3 query heads and 1 key head: every mask is needed."""
    _check_forward(student, *_inputs(1, 3, 1, 217, 80, seed=3))


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_head_dims_64_80_128(student):
    """Head dims 64, 80 and 128, both layouts, T = 37, two batch elements."""
    for index, head_dim in enumerate((64, 80, 128)):
        for interleaved in (False, True):
            _check_forward(student, *_inputs(2, 2, 1, 37, head_dim, seed=10 + index, offset=5), interleaved)


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_grouped_query_heads(student):
    """Grouped-query attention: 6 query heads, 2 key heads, B = 2, T = 33, interleaved."""
    _check_forward(student, *_inputs(2, 6, 2, 33, 32, seed=4), interleaved=True)


@pytest.mark.exercise("rope_forward_triton", points=1)
def test_forward_head_counts_are_independent(student):
    """More key heads than query heads (2 and 3): k must be rotated with its own head count."""
    _check_forward(student, *_inputs(1, 2, 3, 19, 48, seed=5))


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_float16(student):
    """float16 q and k with float32 tables: float16 results, within one float16 rounding."""
    for interleaved in (False, True):
        _check_forward(student, *_inputs(2, 4, 2, 65, 64, seed=6, dtype=torch.float16), interleaved,
                       tol=FP16)


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_transposed_views(student):
    """Non-contiguous q and k (transposed views of (B, T, H, D) storage) and strided cos/sin tables."""
    for interleaved in (False, True):
        _check_forward(student, *_inputs(2, 4, 2, 45, 80, seed=7), interleaved, layout="transposed")


@pytest.mark.exercise("rope_forward_triton", points=1)
def test_forward_fused_qkv_slices(student):
    """q and k as head slices of one fused (B, T, H_q + 2 H_k, D) QKV buffer (batch stride != H*T*D)."""
    _check_forward(student, *_inputs(3, 4, 2, 21, 64, seed=8), layout="fused_qkv")


@pytest.mark.exercise("rope_forward_triton", points=1)
def test_forward_leaves_inputs_unchanged(student):
    """q, k, cos and sin are unchanged after the call (the rotation is not done in place)."""
    for layout in ("contiguous", "transposed"):
        inputs = _inputs(1, 2, 2, 24, 32, seed=9)
        _, after = _call(student, "rope_forward_triton", *inputs, layout=layout)
        for name, before, now in zip(("q", "k", "cos", "sin"), inputs, after):
            rotated = _rope64(before, *inputs[2:]) if name in ("q", "k") else before.double()
            _expect_unchanged(now, before, rotated, f"{name} after the call ({layout} inputs)")


@pytest.mark.exercise("rope_forward_triton", points=1)
def test_forward_rejects_mismatched_head_dim(student):
    """q and k with different head_dim (16 and 32) are rejected with a ValueError."""
    q, _, cos, sin = _inputs(1, 2, 1, 8, 16, seed=20)
    _, k, _, _ = _inputs(1, 2, 1, 8, 32, seed=21)
    expect_raises(ValueError, student.rope_forward_triton, q, k, cos, sin,
                  what="rope_forward_triton with head_dim 16 for q and 32 for k")


@pytest.mark.exercise("rope_forward_triton", points=1)
def test_forward_rejects_full_width_tables(student):
    """Full-width (T, D) cos/sin tables (Hugging Face's convention) are rejected with a ValueError."""
    q, k, cos, sin = _inputs(1, 2, 1, 8, 16, seed=22)
    expect_raises(ValueError, student.rope_forward_triton, q, k, torch.cat([cos, cos], -1),
                  torch.cat([sin, sin], -1), what="rope_forward_triton with (8, 16) tables for head_dim 16")


@pytest.mark.exercise("rope_forward_triton", points=1)
def test_forward_rejects_odd_head_dim_and_wrong_length(student):
    """An odd head_dim, and tables for the wrong number of tokens, are rejected with a ValueError."""
    q, k, cos, sin = _inputs(1, 1, 1, 8, 16, seed=23)
    expect_raises(ValueError, student.rope_forward_triton, q[..., :15], k[..., :15], cos[:, :7], sin[:, :7],
                  what="rope_forward_triton with head_dim 15")
    expect_raises(ValueError, student.rope_forward_triton, q, k, cos[:6], sin[:6],
                  what="rope_forward_triton with tables for 6 tokens and T = 8")


# -- rope_backward_triton -----------------------------------------------------------------------
@pytest.mark.exercise("rope_backward_triton", points=2, public=True)
def test_backward_matches_autograd_half_split(student):
    """Half-split, float32: the result equals autograd's gradient through the float64 reference."""
    g_q, g_k, cos, sin = _inputs(1, 2, 1, 8, 16, seed=30)
    q = torch.randn(g_q.shape, dtype=torch.float64, requires_grad=True)
    k = torch.randn(g_k.shape, dtype=torch.float64, requires_grad=True)
    torch.autograd.backward((_rope64(q, cos, sin), _rope64(k, cos, sin)), (g_q.double(), g_k.double()))
    (d_q, d_k), _ = _call(student, "rope_backward_triton", g_q, g_k, cos, sin)
    for got, want, x, what in ((d_q, q.grad, g_q, "gradient for q"), (d_k, k.grad, g_k, "gradient for k")):
        expect_shape(got, tuple(x.shape), what=what)
        expect_close(got, want, what=what, mistakes=_mistakes(x, cos, sin, False, -1.0), **FP32)


@pytest.mark.exercise("rope_backward_triton", points=2)
def test_backward_interleaved_grouped_odd_length(student):
    """Interleaved, 6 query heads and 2 key heads, T = 217, head_dim 80: rotation by -θ."""
    _check_backward(student, *_inputs(1, 6, 2, 217, 80, seed=31), interleaved=True)


@pytest.mark.exercise("rope_backward_triton", points=2)
def test_backward_inverts_the_forward_rotation(student):
    """bwd(fwd(x)) = x: backward applied to the reference rotation of x gives x back (float32, float16)."""
    for dtype, interleaved in ((torch.float32, False), (torch.float16, True)):
        q, k, cos, sin = _inputs(2, 4, 2, 50, 64, seed=32, dtype=dtype)
        rotated = [_rope64(x, cos, sin, interleaved).to(dtype) for x in (q, k)]
        (back_q, back_k), _ = _call(student, "rope_backward_triton", *rotated, cos, sin, interleaved)
        for got, x, what in ((back_q, q, "bwd(fwd(q))"), (back_k, k, "bwd(fwd(k))")):
            expect_dtype(got, dtype, what=what)
            # float16: two roundings, each carried at the scale of the pair's norm (module docstring).
            tol = FP32 if dtype == torch.float32 else dict(
                rtol=1e-3, atol=4 * 2.0**-11 * _max_pair_norm(x, interleaved))
            expect_close(got, x, what=what, mistakes={
                "rotation by +θ (bwd(fwd(x)) rotates x by 2θ instead of giving x back)":
                    _rope64(_rope64(x, cos, sin, interleaved), cos, sin, interleaved)}, **tol)


@pytest.mark.exercise("rope_backward_triton", points=1)
def test_backward_float16(student):
    """float16 gradients, half-split, grouped heads: float16 results within one rounding."""
    _check_backward(student, *_inputs(2, 4, 1, 40, 32, seed=33, dtype=torch.float16), tol=FP16)


@pytest.mark.exercise("rope_backward_triton", points=1)
def test_backward_non_contiguous_gradients(student):
    """Gradients arriving as transposed views, and as fused-buffer slices, with strided tables."""
    _check_backward(student, *_inputs(2, 4, 2, 45, 80, seed=34), interleaved=True, layout="transposed")
    _check_backward(student, *_inputs(2, 4, 2, 21, 64, seed=35), layout="fused_qkv")


@pytest.mark.exercise("rope_backward_triton", points=1)
def test_backward_leaves_gradients_unchanged(student):
    """grad_q and grad_k are unchanged after the call (not rotated in place)."""
    inputs = _inputs(1, 2, 2, 24, 32, seed=36)
    _, after = _call(student, "rope_backward_triton", *inputs)
    for name, before, now in zip(("grad_q", "grad_k"), inputs, after):
        _expect_unchanged(now, before, _rope64(before, *inputs[2:], sign=-1.0), f"{name} after the call")


@pytest.mark.exercise("rope_backward_triton", points=1)
def test_backward_rejects_wrong_tables(student):
    """cos/sin of shape (T, D) instead of (T, D // 2) are rejected with a ValueError."""
    g_q, g_k, cos, sin = _inputs(1, 2, 1, 8, 16, seed=37)
    expect_raises(ValueError, student.rope_backward_triton, g_q, g_k, torch.cat([cos, cos], -1),
                  torch.cat([sin, sin], -1), what="rope_backward_triton with (8, 16) tables for head_dim 16")


# -- TritonRoPE ---------------------------------------------------------------------------------
def _check_autograd(student, q, k, cos, sin, interleaved=False, layout="contiguous", tol=FP32, seed=0):
    gen = torch.Generator().manual_seed(seed + 1000)
    g_q = torch.randn(q.shape, generator=gen, dtype=torch.float64).to(q.dtype)
    g_k = torch.randn(k.shape, generator=gen, dtype=torch.float64).to(k.dtype)
    result = _harness(student.call_rope_autograd, student.ref("TritonRoPE"), q, k, cos, sin, g_q, g_k,
                      interleaved=interleaved, layout=layout)
    q_rot, k_rot, d_q, d_k = result
    _expect_rotated(q_rot, q, cos, sin, interleaved, 1.0, "TritonRoPE.apply output for q", tol)
    _expect_rotated(k_rot, k, cos, sin, interleaved, 1.0, "TritonRoPE.apply output for k", tol)
    for got, g, what in ((d_q, g_q, "q.grad"), (d_k, g_k, "k.grad")):
        expect_true(got is not None, f"{what} is None after backward: did backward return a gradient for it?")
        expect_shape(got, tuple(g.shape), what=what)
        mistakes = _mistakes(g, cos, sin, interleaved, -1.0)
        if interleaved:  # named before the generic layout mistake, which returns the same values
            mistakes = {"backward used the default layout: the interleaved flag was not kept on ctx":
                        _rope64(g, cos, sin, False, -1.0), **mistakes}
        expect_close(got, _rope64(g, cos, sin, interleaved, -1.0), what=what, mistakes=mistakes, **tol)


@pytest.mark.exercise("TritonRoPE", points=2, public=True)
def test_autograd_forward_and_gradients(student):
    """TritonRoPE.apply(q, k, cos, sin, False): outputs rotate by θ, gradients rotate by -θ (float32)."""
    _check_autograd(student, *_inputs(1, 2, 1, 16, 16, seed=40), seed=40)


@pytest.mark.exercise("TritonRoPE", points=2)
def test_autograd_interleaved_grouped_odd_length(student):
    """Interleaved, 6 query and 2 key heads, T = 217, head_dim 80: the layout reaches backward too."""
    _check_autograd(student, *_inputs(1, 6, 2, 217, 80, seed=41), interleaved=True, seed=41)


@pytest.mark.exercise("TritonRoPE", points=1)
def test_autograd_non_contiguous_leaves(student):
    """q and k are transposed views of (B, T, H, D) leaves; gradients arrive as transposed views."""
    _check_autograd(student, *_inputs(2, 4, 2, 30, 64, seed=42), interleaved=True, layout="transposed", seed=42)


@pytest.mark.exercise("TritonRoPE", points=1)
def test_autograd_float16(student):
    """float16 q and k: float16 outputs and gradients within one float16 rounding."""
    _check_autograd(student, *_inputs(2, 4, 2, 33, 32, seed=43, dtype=torch.float16), tol=FP16, seed=43)
