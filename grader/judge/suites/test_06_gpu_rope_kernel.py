"""Hidden tests and public checks for notebook 06, a fused RoPE kernel in Triton.

The forward kernel is a ladder of exercises, each graded on its own function so that a learner who
stops at any step keeps the points of the steps below: ``rope_rows_triton`` (one contiguous head),
``rope_heads_triton`` (heads, q and k in one launch, strides), ``rope_interleaved_triton`` (both
pair layouts, coalesced interleaved loads), ``rope_forward_triton`` (positions gathered in the
kernel, partial rotary, optional in place); then ``rope_backward_triton`` and ``TritonRoPE``.
The benchmark is a 0-point informational test: on a CUDA device it reports GB/s and the ratio to
a device-to-device copy; without one it is skipped ("no GPU") and costs nothing. Its numbers are
measured in the sandbox, so they are reported, never graded.

How the learner's code is reached. Every tensor crosses the process boundary as a contiguous CPU
array, so most tests go through the notebook's trusted harness (grader/fixtures/gpu_rope_kernel.py,
imported by the notebook's setup cell): ``student.call_rope_kernel(student.ref(NAME), q, k, cos,
sin, interleaved=..., layout=...)`` builds the requested memory layout inside the sandbox
(contiguous, transposed views of (B, T, H, D) storage, head slices of a fused QKV buffer), on the
device Triton runs on, calls the learner's function and returns ``(result, inputs after the
call)``; ``student.call_rope_autograd`` runs forward and backward through ``TritonRoPE.apply``.
Input checks (ValueError) call the learner's functions directly; each error test also makes the valid
call next to the bad one (D = 2, T = 1, tables of exactly the rows needed, an odd D with an even
rotary_dim) through the harness.

Property tests (hypothesis, grading profile: derandomized, the same examples for every learner)
draw small sizes (T of 1 and past a 64-token block, D of 2 and with D / 2 no power of two, B, H_q
and H_k independently), a dtype (float32, float16; bfloat16 only when the sandbox's kernels run on
a GPU: under the interpreter the docstrings promise a ValueError instead, tested on its own), every
harness layout (``strided`` puts NaN between channels, so a kernel that ignores the channel stride
fails), each form of position_ids (none, an int offset, (B,) offsets, (B, T) ids, int32 or int64)
with tables that fit exactly, rotary_dim (none, D, a partial one) and inplace; the inputs after
each call are compared with the inputs before.

Every reference is computed here, in float64, from the same float32 cos/sin tables the learner
receives. Shapes stay small because Triton's interpreter costs about 40 ms per program (one program
per 64 tokens of each batch element in the solution): a batch of 2 or a T past 64 only where the
test is about batches or blocks.

One mistake costs once: a value test names the property it owns, and lets pass the outputs of the
catalogued mistakes that another test of its exercise owns (STEP_OWNERS, _autograd_mistakes, and the
owners of sector_traffic's tests); error tests check raising and running, never values. The property
tests of steps 1 and 2, which a memory-unsafe mistake (a missing mask) fails, run last in their
exercise.

Tolerances. float32: the kernel rounds a handful of float32 operations, about 2 units of 2^-24
times the pair's norm (measured in the notebook), so 1e-5 (absolute and relative) on O(1) values
leaves room for any correct order of operations while every catalogued mistake is off by O(0.1-1).
float16: the float32 result is rounded once to float16, an error of at most 2^-11 |y| (half an
ulp), so rtol=1e-3 with atol=1e-4 (for subnormals); a round trip rounds twice and each error is
carried by the rotation at the scale of the pair's norm, so its atol is 4 * 2^-11 * max |pair|.
bfloat16 (on a GPU only): one rounding to 8 significant bits, rtol=2^-8 (see BF16 below).
Pass-through channels (rotary_dim and beyond) are copied, not computed: they are compared exactly.
"""
import pytest
import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from grader.judge.proxy import (expect_close, expect_dtype, expect_equal, expect_raises, expect_shape,
                          expect_true, fail, view)
from grader.judge.properties import grading, seeds, tensor
from grader.sandbox.parent import StudentCrashed

FP32 = dict(rtol=1e-5, atol=1e-5)
FP16 = dict(rtol=1e-3, atol=1e-4)
# bfloat16 (GPU only): the float32 result is rounded once to 8 significant bits, at most 2^-9 |y|;
# rtol 2^-8 leaves a factor 2 for the float32 arithmetic before it. bfloat16 has float32's exponent
# range (no subnormals at these scales), so atol only covers float32 rounding near zero.
BF16 = dict(rtol=2.0**-8, atol=1e-5)
TOLERANCE = {torch.float32: FP32, torch.float16: FP16, torch.bfloat16: BF16}

# -- what the property tests draw -----------------------------------------------------------------
# Small sizes (Triton's interpreter runs each program in numpy), chosen so that every mask matters.
SEQ_LENS = st.sampled_from([1, 2, 5, 37, 65])     # 1: a decoding step; 37, 65: not a multiple of a 64-token block
HEAD_DIMS = st.sampled_from([2, 6, 16, 80])       # 2: one pair; 6, 80: D / 2 (3, 40) is no power of two
BATCHES = st.sampled_from([1, 2])
HEADS = st.sampled_from([(1, 1), (2, 1), (3, 2), (4, 1), (1, 3), (2, 2)])  # (H_q, H_k): MHA, GQA, MQA, more k heads
KERNEL_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
DTYPE_NAMES = st.sampled_from(list(KERNEL_DTYPES))  # bfloat16 examples are dropped under the interpreter
HARNESS_LAYOUTS = st.sampled_from(["contiguous", "transposed", "fused_qkv", "strided"])
POSITION_FORMS = st.sampled_from(["default", "offset", "offsets", "ids"])
ROTARY = st.sampled_from(["default", "full", "partial"])

_DEVICE = {}


def _on_gpu(student):
    """Whether the sandbox's kernels run compiled on a CUDA device (bfloat16 allowed there).

    The notebook's setup cell decides it from the sandbox's environment (TRITON_INTERPRET, a CUDA
    device); the harness's probe reports where it puts tensors. Asked once, remembered for the run.
    """
    if "cuda" not in _DEVICE:
        flag, _ = _harness(student.call_rope_rows, student.fixture("gpu_rope_kernel.kernel_device"),
                           torch.zeros(1, 2), torch.ones(1, 1), torch.zeros(1, 1))
        _DEVICE["cuda"] = bool(int(flag))
    return _DEVICE["cuda"]


def _kernel_dtype(student, name):
    """The dtype called ``name``; a bfloat16 example is skipped under the interpreter (it needs a GPU)."""
    if name == "bfloat16":
        assume(_on_gpu(student))
    return KERNEL_DTYPES[name]


def _bfloat16_rule(student, valid, function, *args, what, **kwargs):
    """bfloat16 inputs: ``valid()`` must pass on a GPU; under the interpreter ``function`` must raise ValueError."""
    if _on_gpu(student):
        valid()
    else:
        expect_raises(ValueError, function, *args, what=f"{what} under Triton's interpreter", **kwargs)


def _rejects_other_devices(student, function, *args, what, **kwargs):
    """On a GPU, CPU tensors given straight to ``function`` raise ValueError (nothing to check on the CPU)."""
    if _on_gpu(student):
        expect_raises(ValueError, function, *args, what=f"{what} with CPU tensors (Triton runs on the GPU)",
                      **kwargs)


def _draw_options(batch, seq_len, head_dim, rotary, positions, start, int32, seed):
    """Keyword options for a drawn example and the table rows and width they need.

    rotary: "default" (no rotary_dim), "full" (rotary_dim=D) or "partial" (2 * ceil(D / 4), all of
    D when D = 2). positions: "default" (none given), "offset" (the int ``start``), "offsets" (a
    (B,) tensor in [0, start], the last one start) or "ids" (a (B, T) tensor in [0, start + T), one
    of them start + T - 1). Every form needs exactly start + T rows (T for "default").
    """
    options, rows = {}, seq_len
    width = head_dim
    if rotary != "default":
        width = head_dim if rotary == "full" else min(head_dim, 2 * -(-head_dim // 4))
        options["rotary_dim"] = width
    gen = torch.Generator().manual_seed(seed + 17)
    index_dtype = torch.int32 if int32 else torch.int64
    if positions == "offset":
        options["position_ids"], rows = start, start + seq_len
    elif positions == "offsets":
        offsets = torch.randint(0, start + 1, (batch,), generator=gen)
        offsets[-1] = start
        options["position_ids"], rows = offsets.to(index_dtype), start + seq_len
    elif positions == "ids":
        ids = torch.randint(0, start + seq_len, (batch, seq_len), generator=gen)
        ids[-1, -1] = start + seq_len - 1
        options["position_ids"], rows = ids.to(index_dtype), start + seq_len
    return options, rows, width


def _expect_left_alone(after, inputs, layout, interleaved=False, **at):
    """q, k, cos and sin after an out-of-place call are exactly as they were."""
    for label, before, now in zip(("q", "k", "cos", "sin"), inputs, after):
        rotated = (_rope64(before, *inputs[2:], bool(interleaved), **at) if label in ("q", "k")
                   else before.double())
        _expect_unchanged(now, before, rotated, f"{label} after the call ({layout} inputs)")


# -- inputs and references ----------------------------------------------------------------------
def _tables(seq_len, head_dim, base=10000.0, offset=0):
    """float32 (T, D // 2) cos/sin tables of positions offset..offset+T-1, angles in float64.

    For partial rotary pass rotary_dim as head_dim: the tables are (T, rotary_dim // 2).
    """
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = (torch.arange(seq_len, dtype=torch.float64) + offset)[:, None] * inv_freq
    return angles.cos().float(), angles.sin().float()


def _inputs(batch, n_q_heads, n_k_heads, seq_len, head_dim, *, seed, dtype=torch.float32, offset=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, n_q_heads, seq_len, head_dim, generator=gen, dtype=torch.float64).to(dtype)
    k = torch.randn(batch, n_k_heads, seq_len, head_dim, generator=gen, dtype=torch.float64).to(dtype)
    return (q, k, *_tables(seq_len, head_dim, offset=offset))


def _positions(x, position_ids):
    """(T,) or (B, T) int64 positions of x's tokens: None is 0..T-1, an int an offset, (B,) offsets."""
    seq_len = x.shape[-2]
    steps = torch.arange(seq_len)
    if position_ids is None:
        return steps
    if isinstance(position_ids, int):
        return steps + position_ids
    position_ids = position_ids.long()
    return position_ids[:, None] + steps if position_ids.dim() == 1 else position_ids


def _rope64(x, cos, sin, interleaved=False, sign=1.0, position_ids=None, rotary_dim=None):
    """RoPE in float64 with half-width tables; sign=-1 rotates by -θ (the gradient).

    x (..., T, D); cos, sin (P, rotary_dim // 2) indexed by the tokens' positions (rows 0..T-1 by
    default); channels rotary_dim..D-1 pass through unchanged.
    """
    x = x.double()
    pos = _positions(x, position_ids)
    cos, sin = cos.double()[pos], sign * sin.double()[pos]     # (T, R/2) or (B, T, R/2)
    if pos.dim() == 2:
        cos, sin = cos[:, None], sin[:, None]                  # (B, 1, T, R/2): every head
    rotary_dim = rotary_dim or x.shape[-1]
    x, passed = x[..., :rotary_dim], x[..., rotary_dim:]
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        y = torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2)
    else:
        x1, x2 = x.chunk(2, dim=-1)
        y = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    return torch.cat([y, passed], dim=-1)


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


def _mistakes(x, cos, sin, interleaved, sign, position_ids=None, rotary_dim=None):
    """What plausible wrong kernels return for x (sign=+1 forward, -1 backward)."""
    other = "interleaved" if not interleaved else "half-split"
    at = dict(position_ids=position_ids, rotary_dim=rotary_dim)
    found = {
        "rotation by the wrong angle sign (sin with the wrong sign)": _rope64(x, cos, sin, interleaved, -sign, **at),
        f"the wrong layout ({other} pairs)": _rope64(x, cos, sin, not interleaved, sign, **at),
        "the input returned unrotated": x.double(),
        "cos and sin swapped": _rope64(x, sin, cos, interleaved, sign, **at),
    }
    if position_ids is not None:
        found["positions ignored: the tokens were rotated as if at 0..T-1"] = _rope64(
            x, cos, sin, interleaved, sign, rotary_dim=rotary_dim)
    if rotary_dim is not None and rotary_dim < x.shape[-1]:
        passed = x.double()[..., rotary_dim:]
        rotated = _rope64(x, cos, sin, interleaved, sign, **at)[..., :rotary_dim]
        found["pass-through channels (rotary_dim and beyond) zeroed instead of copied"] = torch.cat(
            [rotated, torch.zeros_like(passed)], dim=-1)
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


def _call(student, name, q, k, cos, sin, interleaved=False, layout="contiguous", **options):
    result, inputs_after = _harness(student.call_rope_kernel, student.ref(name), q, k, cos, sin,
                                    interleaved=interleaved, layout=layout, **options)
    return _pair(result, name), inputs_after


def _with_stride_hint(layout, check, *args, **kwargs):
    """Run a check; for non-contiguous layouts, a failure also says what strided inputs test."""
    try:
        check(*args, **kwargs)
    except AssertionError as exc:
        if layout == "contiguous":
            raise
        raise AssertionError(f"{exc}{STRIDE_HINT.format(layout=layout)}") from None


# One mistake costs once. A value test names the property it owns (``owner``); the outputs of the
# catalogued mistakes that another test of the exercise owns pass it (STEP_OWNERS: which owner charges
# which wrong output), and only the "dtype" owner checks the result's dtype. owner=None (the steps not
# yet split this way) checks everything and lets nothing pass.
STEP_OWNERS = {
    # the rotation on a case that needs no mask: the angle's sign, cos and sin swapped, the other layout
    "rope_rows_triton": {"formula": ("sign", "swap", "layout")},
    # -θ (not +θ, not the gradient unrotated); the layout flag; position_ids (an int offset too)
    "rope_backward_triton": {"formula": ("sign", "unrotated"), "layout": ("layout",),
                             "options": ("positions", "offset")},
    "rope_heads_triton": {},  # no formula mistake catalogued for step 2: its owners only split the checks
    # the interleaved pairs: the flag ignored, even and odd channels swapped on the way in or out, the block
    # split in halves; "channels" (every channel written) is a hidden test's
    "rope_interleaved_triton": {"formula": ("layout", "split", "join", "halves")},
    # the angle's sign; an int offset; (B, T) position_ids; each sequence's own row; pass-through copied
    "rope_forward_triton": {"formula": ("sign",), "offset": ("offset",), "positions": ("positions",),
                            "per-sequence": ("first row",), "partial": ("zeroed",)},
    "TritonRoPE": {},  # its catalogued mistakes are in backward: see _autograd_mistakes
}


def _wrong_outputs(x, cos, sin, interleaved, sign, **at):
    """What the catalogued value mistakes return for x, by name (sign=+1 forward, -1 backward)."""
    wrong = {"sign": _rope64(x, cos, sin, interleaved, -sign, **at),
             "swap": _rope64(x, sin, cos, interleaved, sign, **at),
             "layout": _rope64(x, cos, sin, not interleaved, sign, **at),
             "unrotated": x.double()}
    position_ids, rotary_dim = at.get("position_ids"), at.get("rotary_dim")
    if position_ids is not None:
        at_zero = _rope64(x, cos, sin, interleaved, sign, rotary_dim=rotary_dim)
        wrong["offset" if isinstance(position_ids, int) else "positions"] = at_zero
        if torch.is_tensor(position_ids):  # every sequence at the first sequence's positions
            first = _positions(x, position_ids).expand(x.shape[0], -1)[:1].expand(x.shape[0], -1)
            wrong["first row"] = _rope64(x, cos, sin, interleaved, sign, position_ids=first, rotary_dim=rotary_dim)
    if rotary_dim is not None and rotary_dim < x.shape[-1]:
        rotated = _rope64(x, cos, sin, interleaved, sign, **at)
        wrong["zeroed"] = torch.cat([rotated[..., :rotary_dim], torch.zeros_like(rotated[..., rotary_dim:])], -1)
    if interleaved and not at:
        wrong["split"] = _rope64(_swap_pairs(x), cos, sin, True, sign)
        wrong["join"] = _swap_pairs(_rope64(x, cos, sin, True, sign))
        wrong["halves"] = _halves(x, cos, sin, sign)
    return wrong


def _swap_pairs(x):
    """x with the channels of each interleaved pair (2j, 2j + 1) swapped."""
    return x.double().unflatten(-1, (-1, 2)).flip(-1).flatten(-2)


def _halves(x, cos, sin, sign):
    """An interleaved block read as two halves of BLOCK_D2 = next_pow2(D / 2) channels (zeros past D),
    rotated as half-split pairs (j, BLOCK_D2 + j) and written back interleaved: tl.reshape to (2, BLOCK_D2)."""
    half = x.shape[-1] // 2
    block = 1 << (half - 1).bit_length()
    padded = torch.zeros(*x.shape[:-1], 2 * block, dtype=torch.float64)
    padded[..., : 2 * half] = x.double()
    x1, x2 = padded[..., :half], padded[..., block:block + half]
    cos, sin = cos.double()[: x.shape[-2]], sign * sin.double()[: x.shape[-2]]  # positions 0..T-1
    return torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2)


def _first_channels_right(got, x, cos, sin, interleaved, sign, tol):
    """Whether only channels from D / 2 on are wrong: what a store masked by D / 2 instead of D gives
    (the channels past it never written), a mistake a hidden test charges."""
    written = 2 * (x.shape[-1] // 4)  # whole pairs below D / 2
    ref = _rope64(x, cos, sin, interleaved, sign)
    return bool(torch.allclose(got.double()[..., :written], ref[..., :written], equal_nan=True, **tol))


def _accepted_outputs(exercise, owner, x, cos, sin, interleaved, sign, **at):
    """The wrong outputs a test of ``exercise`` owning ``owner`` lets pass: those other tests charge."""
    if owner is None:
        return []
    wrong = _wrong_outputs(x, cos, sin, interleaved, sign, **at)
    return [wrong[key] for other, keys in STEP_OWNERS[exercise].items() if other != owner
            for key in keys if key in wrong]


def _expect_rotated(got, x, cos, sin, interleaved, sign, what, tol=FP32, owner=None, exercise=None, **at):
    """got is x rotated (sign +1) or rotated back (-1) at positions/rotary_dim ``at``; passed exactly."""
    expect_shape(got, tuple(x.shape), what=what)
    if owner in (None, "dtype"):
        expect_dtype(got, x.dtype, what=what)
    mistakes = _mistakes(x, cos, sin, interleaved, sign, **at)
    accepted = _accepted_outputs(exercise, owner, x, cos, sin, interleaved, sign, **at)
    if (exercise == "rope_interleaved_triton" and owner not in (None, "channels") and interleaved
            and _first_channels_right(got, x, cos, sin, interleaved, sign, tol)):
        return
    rotary_dim = at.get("rotary_dim")
    zeroed_elsewhere = (exercise == "rope_forward_triton" and owner not in (None, "partial") and rotary_dim
                        and bool((got[..., rotary_dim:] == 0).all()))  # charged by the public partial test
    if rotary_dim is not None and rotary_dim < x.shape[-1] and not zeroed_elsewhere:
        # The pass-through channels are copied, not computed: they must be bit-identical.
        expect_equal(got[..., rotary_dim:], x[..., rotary_dim:],
                     what=f"{what}, pass-through channels {rotary_dim}..{x.shape[-1] - 1} (must be copied unchanged)",
                     mistakes={"pass-through channels zeroed instead of copied":
                               torch.zeros_like(x[..., rotary_dim:])})
    expect_close(got, _rope64(x, cos, sin, interleaved, sign, **at), what=what, mistakes=mistakes,
                 accepted=accepted, **tol)


def _unswapped(a, b, q, k, cos, sin, interleaved, sign, tol, **at):
    """(a, b), or (b, a) where they are q's and k's results in the wrong order (a test of its own charges that)."""
    if tuple(a.shape) != tuple(k.shape) or tuple(b.shape) != tuple(q.shape):
        return a, b
    if q.shape != k.shape:
        return b, a

    def close(got, x):
        return torch.allclose(got.double(), _rope64(x, cos, sin, interleaved, sign, **at), equal_nan=True, **tol)
    return (b, a) if close(a, k) and close(b, q) and not close(a, q) else (a, b)


def _check_step(student, name, q, k, cos, sin, interleaved=False, layout="contiguous", tol=FP32, sign=1.0,
                owner=None, **options):
    """Call step ``name`` on (q, k) (gradients when sign=-1) and check both results; returns inputs_after.

    ``owner``: the property this test owns (STEP_OWNERS); None checks everything. Backward results in the
    wrong order pass a test that owns something else (the public test charges the order).
    """
    at = {key: options[key] for key in ("position_ids", "rotary_dim") if key in options}
    (q_rot, k_rot), after = _call(student, name, q, k, cos, sin, interleaved, layout, **options)
    if owner is not None and sign < 0:
        q_rot, k_rot = _unswapped(q_rot, k_rot, q, k, cos, sin, bool(interleaved), sign, tol, **at)
    what = ("q_rot", "k_rot") if sign > 0 else ("gradient for q", "gradient for k")
    _with_stride_hint(layout, _expect_rotated, q_rot, q, cos, sin, bool(interleaved), sign, what[0], tol, owner,
                      name, **at)
    _with_stride_hint(layout, _expect_rotated, k_rot, k, cos, sin, bool(interleaved), sign, what[1], tol, owner,
                      name, **at)
    return after


def _check_forward(student, q, k, cos, sin, interleaved=False, layout="contiguous", tol=FP32, owner=None,
                   **options):
    return _check_step(student, "rope_forward_triton", q, k, cos, sin, interleaved, layout, tol, owner=owner,
                       **options)


def _check_backward(student, g_q, g_k, cos, sin, interleaved=False, layout="contiguous", tol=FP32, *, owner,
                    **options):
    return _check_step(student, "rope_backward_triton", g_q, g_k, cos, sin, interleaved, layout, tol,
                       sign=-1.0, owner=owner, **options)


def _expect_inputs_unchanged(student, name, inputs, layout, interleaved=False, **options):
    """An out-of-place call leaves q, k, cos and sin exactly as they were."""
    at = {key: options[key] for key in ("position_ids", "rotary_dim") if key in options}
    _, after = _call(student, name, *inputs, interleaved, layout, **options)
    for label, before, now in zip(("q", "k", "cos", "sin"), inputs, after):
        rotated = (_rope64(before, *inputs[2:], bool(interleaved), **at) if label in ("q", "k")
                   else before.double())
        _expect_unchanged(now, before, rotated, f"{label} after the call ({layout} inputs)")


# -- checks of promised errors, shared by the exercises' validation tests below ------------
def _rejects_wrong_ranks(student, name, **flag):
    """q 3-D or k 5-D raise ValueError; the smallest valid call (B = H = T = 1, D = 2) works."""
    q, k, cos, sin = _inputs(1, 2, 1, 6, 8, seed=131)
    expect_raises(ValueError, getattr(student, name), q[0], k, cos, sin, what=f"{name} with a 3-D q (2, 6, 8)", **flag)
    expect_raises(ValueError, getattr(student, name), q, k[None], cos, sin, what=f"{name} with a 5-D k (1, 1, 1, 6, 8)",
                  **flag)
    _call(student, name, *_inputs(1, 1, 1, 1, 2, seed=132), flag.get("interleaved"))


def _rejects_other_batch_or_length(student, name, **flag):
    """k with another B or T than q raises ValueError; another head count (2 k heads for 1 q head) works.

    k is larger than q (B = 3, T = 7), so a kernel that wrongly accepts it stays inside k's memory and
    cannot corrupt the process for the tests after this one.
    """
    q, _, cos, sin = _inputs(2, 2, 1, 6, 8, seed=133)
    _, k_batch, _, _ = _inputs(3, 2, 1, 6, 8, seed=134)
    _, k_length, _, _ = _inputs(2, 2, 1, 7, 8, seed=135)
    expect_raises(ValueError, getattr(student, name), q, k_batch, cos, sin,
                  what=f"{name} with q (2, 2, 6, 8) and k (3, 1, 6, 8)", **flag)
    expect_raises(ValueError, getattr(student, name), q, k_length, cos, sin,
                  what=f"{name} with q (2, 2, 6, 8) and k (2, 1, 7, 8)", **flag)
    _call(student, name, *_inputs(2, 1, 2, 6, 8, seed=136), flag.get("interleaved"))


def _rejects_odd_head_dim_and_other_tables(student, name, **flag):
    """D = 7, tables with T + 1 rows, sin of another shape than cos: ValueError; (T, D // 2) tables work."""
    q, k, _, _ = _inputs(1, 2, 1, 6, 7, seed=137)
    expect_raises(ValueError, getattr(student, name), q, k, *_tables(6, 6),
                  what=f"{name} with head_dim 7 and (6, 3) tables", **flag)
    q, k, cos, sin = _inputs(1, 2, 2, 6, 8, seed=138)
    expect_raises(ValueError, getattr(student, name), q, k, *_tables(7, 8),
                  what=f"{name} with (7, 4) tables for T = 6", **flag)
    expect_raises(ValueError, getattr(student, name), q, k, cos, sin[:, :3],
                  what=f"{name} with cos (6, 4) and sin (6, 3)", **flag)
    _call(student, name, q, k, cos, sin, flag.get("interleaved"))


def _rejects_unsupported_dtypes(student, name, **flag):
    """float64 q and k raise ValueError, bfloat16 too under the interpreter (on a GPU it works); float16 works."""
    inputs = _inputs(1, 2, 1, 6, 8, seed=139, dtype=torch.float64)
    expect_raises(ValueError, getattr(student, name), *inputs, what=f"{name} with float64 q and k", **flag)
    bf16 = _inputs(1, 2, 2, 6, 8, seed=140, dtype=torch.bfloat16)
    _bfloat16_rule(student, lambda: _call(student, name, *bf16, flag.get("interleaved")),
                   getattr(student, name), *bf16, what=f"{name} with bfloat16 q and k", **flag)
    _call(student, name, *_inputs(1, 2, 2, 6, 8, seed=141, dtype=torch.float16), flag.get("interleaved"))
    _rejects_other_devices(student, getattr(student, name), *_inputs(1, 2, 1, 6, 8, seed=141), what=name, **flag)


# -- step 1: rope_rows_triton (one contiguous head) ----------------------------------------------
# Owners: test_rows_float32 the formula, test_rows_property the masks (any T and D), test_rows_float16
# the dtype, test_rows_leaves_input_unchanged the input (not rotated in place). The other tests use
# sizes that need no mask (T and D / 2 powers of two, T <= 64) and do not check what they do not own.
def _rows_result(student, x, cos, sin):
    """Step 1 on x (T, D) through the harness: (result, x after the call)."""
    result, after = _harness(student.call_rope_rows, student.ref("rope_rows_triton"), x, cos, sin)
    expect_true(not isinstance(result, tuple), "rope_rows_triton should return one tensor, got a tuple")
    return result, after


def _check_rows(student, x, cos, sin, tol=FP32, owner=None):
    """Step 1 on x (T, D): the result is x rotated (half-split); returns x after the call."""
    result, after = _rows_result(student, x, cos, sin)
    _expect_rotated(result, x, cos, sin, False, 1.0, "rope_rows_triton(x, cos, sin)", tol, owner,
                    "rope_rows_triton")
    return after


def _row_inputs(seq_len, head_dim, *, seed, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(seq_len, head_dim, generator=gen, dtype=torch.float64).to(dtype)
    return (x, *_tables(seq_len, head_dim))


@pytest.mark.exercise("rope_rows_triton", points=1, public=True)
def test_rows_float32(student):
    """One head x (8, 16), float32, half-split pairs (j, j + 8): matches the float64 reference."""
    _check_rows(student, *_row_inputs(8, 16, seed=101), owner="formula")


@pytest.mark.exercise("rope_rows_triton", points=1)
def test_rows_float16(student):
    """float16 x (64, 64) with float32 tables: a float16 result within one float16 rounding."""
    _check_rows(student, *_row_inputs(64, 64, seed=103, dtype=torch.float16), tol=FP16, owner="dtype")


@pytest.mark.exercise("rope_rows_triton", points=1)
def test_rows_leaves_input_unchanged(student):
    """x is unchanged after the call: the result is a new tensor."""
    x, cos, sin = _row_inputs(16, 32, seed=104)
    _, after = _rows_result(student, x, cos, sin)
    _expect_unchanged(after, x, _rope64(x, cos, sin), "x after the call")


# -- step 2: rope_heads_triton (heads, q and k in one launch, strides) -----------------------------
# Owners: the public test the formula; test_heads_any_strides the strides (transposed, fused QKV and
# channel-strided views, strided tables); test_heads_property the head counts, their masks and each
# tensor's batch stride (the only test with H_q != H_k or a head count that is no power of two, run
# last: a kernel missing a head mask writes out of bounds); test_heads_float16 the dtype;
# test_heads_leave_inputs_unchanged the inputs.
def _check_heads(student, q, k, cos, sin, layout="contiguous", tol=FP32, owner=None):
    return _check_step(student, "rope_heads_triton", q, k, cos, sin, None, layout, tol, owner=owner)


@pytest.mark.exercise("rope_heads_triton", points=1, public=True)
def test_heads_contiguous_float32(student):
    """q (1, 2, 8, 16) and k (1, 2, 8, 16), contiguous float32: both match the float64 reference."""
    _check_heads(student, *_inputs(1, 2, 2, 8, 16, seed=111), owner="formula")


@pytest.mark.exercise("rope_heads_triton", points=4)
def test_heads_any_strides(student):
    """Non-contiguous q and k: transposed views of (B, T, H, D) storage, head slices of a fused (B, T, 3 H, D)
    QKV buffer (batch stride != H*T*D), stride 2 along the channels with NaN between; strided cos/sin tables."""
    for layout, inputs in (("transposed", _inputs(2, 2, 2, 21, 80, seed=114)),
                           ("fused_qkv", _inputs(2, 4, 4, 21, 64, seed=115)),
                           ("strided", _inputs(2, 2, 2, 7, 12, seed=129))):
        _check_heads(student, *inputs, layout=layout, owner="strides")


@pytest.mark.exercise("rope_heads_triton", points=1)
def test_heads_float16(student):
    """float16 q and k with float32 tables: float16 results within one float16 rounding."""
    _check_heads(student, *_inputs(1, 2, 2, 32, 64, seed=116, dtype=torch.float16), tol=FP16, owner="dtype")


@pytest.mark.exercise("rope_heads_triton", points=1)
def test_heads_leave_inputs_unchanged(student):
    """q, k, cos and sin are unchanged after the call (contiguous and transposed inputs)."""
    for layout in ("contiguous", "transposed"):
        _expect_inputs_unchanged(student, "rope_heads_triton", _inputs(1, 2, 2, 24, 32, seed=117), layout, None)


# -- step 3: rope_interleaved_triton (both layouts, coalesced interleaved loads) --------------------
# Owners: the public test the interleaved pairs (STEP_OWNERS); test_layouts_head_dims_64_80_128 every
# channel written; the others what their names say (no catalogued mistake), letting those pass.
def _check_layouts(student, q, k, cos, sin, interleaved, layout="contiguous", tol=FP32, *, owner):
    return _check_step(student, "rope_interleaved_triton", q, k, cos, sin, interleaved, layout, tol, owner=owner)


@pytest.mark.exercise("rope_interleaved_triton", points=1, public=True)
def test_layouts_interleaved_float32(student):
    """Interleaved layout (pairs 2j, 2j+1), float32, q and k (2, 2, 8, 16): matches the reference."""
    _check_layouts(student, *_inputs(2, 2, 2, 8, 16, seed=121), interleaved=True, owner="formula")


@pytest.mark.exercise("rope_interleaved_triton", points=2)
def test_layouts_head_dims_64_80_128(student):
    """Head dims 64, 80 and 128, both layouts (the flag picks the pairs), T = 37."""
    for index, head_dim in enumerate((64, 80, 128)):
        for interleaved in (False, True):
            _check_layouts(student, *_inputs(1, 2, 1, 37, head_dim, seed=122 + index, offset=5), interleaved,
                           owner="channels")


@pytest.mark.exercise("rope_interleaved_triton", points=1)
def test_layouts_interleaved_transposed_grouped(student):
    """Interleaved, 6 query and 2 key heads, transposed (B, T, H, D) views with strided tables."""
    _check_layouts(student, *_inputs(2, 6, 2, 33, 32, seed=125), True, layout="transposed", owner="transposed")


@pytest.mark.exercise("rope_interleaved_triton", points=1)
def test_layouts_interleaved_fused_qkv(student):
    """Interleaved, q and k as head slices of a fused QKV buffer."""
    _check_layouts(student, *_inputs(2, 4, 2, 21, 48, seed=126), True, layout="fused_qkv", owner="fused")


@pytest.mark.exercise("rope_interleaved_triton", points=1)
def test_layouts_float16(student):
    """float16, both layouts: float16 results within one float16 rounding."""
    for interleaved in (False, True):
        _check_layouts(student, *_inputs(1, 4, 2, 33, 64, seed=127, dtype=torch.float16), interleaved, tol=FP16,
                       owner="dtype")


@pytest.mark.exercise("rope_interleaved_triton", points=1)
def test_layouts_leave_inputs_unchanged(student):
    """q, k, cos and sin are unchanged after an interleaved call on transposed inputs."""
    _expect_inputs_unchanged(student, "rope_interleaved_triton", _inputs(1, 2, 2, 24, 32, seed=128),
                             "transposed", True)


@pytest.mark.exercise("rope_interleaved_triton", points=3)
@grading(max_examples=4)
@given(batch=BATCHES, heads=HEADS, seq_len=SEQ_LENS, head_dim=HEAD_DIMS, interleaved=st.booleans(),
       dtype=DTYPE_NAMES, layout=HARNESS_LAYOUTS, seed=seeds())
def test_layouts_property(student, batch, heads, seq_len, head_dim, interleaved, dtype, layout, seed):
    """Both pair layouts over any B, H_q, H_k, T, even D (2, 6, 80), dtype and memory layout; inputs untouched."""
    dtype = _kernel_dtype(student, dtype)
    inputs = _inputs(batch, *heads, seq_len, head_dim, seed=seed, dtype=dtype)
    after = _check_layouts(student, *inputs, interleaved, layout=layout, tol=TOLERANCE[dtype], owner="any")
    _expect_left_alone(after, inputs, layout, interleaved)


@pytest.mark.exercise("rope_interleaved_triton", points=1)
def test_layouts_channel_strided(student):
    """Both layouts with stride 2 along the channels (NaN between): the interleaved load uses x.stride(3) too."""
    for interleaved in (True, False):
        _check_layouts(student, *_inputs(1, 2, 3, 7, 12, seed=130), interleaved, layout="strided", owner="strided")


# -- sector_traffic (measure the memory instructions of a launch) --------------------------------
# The launches are trusted kernels in grader/fixtures/memory_traffic.py, always interpreted. The
# grader counts from its own description of their accesses (below, written from the kernels):
# (kind, byte offsets of the active lanes from a 128-byte-aligned buffer start, element bytes, buffer).
# Different buffers never share a sector, so offsets of different buffers are counted apart.
def _size(dtype):
    return {"float32": 4, "float16": 2}[dtype]


def _accesses(name, **kw):
    size = _size(kw.get("dtype", "float32"))
    out = []
    if name == "copy":
        rows, width, offset = kw["rows"], kw["width"], kw.get("offset", 0)
        for r in range(rows):
            out.append(("load", [(offset + r * (width + offset) + d) * size for d in range(width)], size, "x"))
            out.append(("store", [(r * width + d) * size for d in range(width)], size, "out"))
    elif name in ("strided_pairs", "split_pairs"):
        rows, head_dim = kw["rows"], kw["head_dim"]
        for r in range(rows):
            base = r * head_dim
            for kind in ("load", "store"):
                if name == "strided_pairs":
                    for first in (0, 1):
                        out.append((kind, [(base + 2 * j + first) * size for j in range(head_dim // 2)], size,
                                    kind))
                else:
                    out.append((kind, [(base + d) * size for d in range(head_dim)], size, kind))
    else:  # gather: int32 indices, the gathered load, the store
        indices = kw["indices"]
        out = [("load", [4 * i for i in range(len(indices))], 4, "indices"),
               ("load", [i * size for i in indices], size, "x"),
               ("store", [i * size for i in range(len(indices))], size, "out")]
    return out


def _traffic(name, sector_bytes=32, **kw):
    """The reference measurement, and the whole measurement each catalogued mistake would give.

    Returns ``(reference, mistakes)``; ``mistakes`` maps the property a test owns
    to ``(description, measurement)``.
    """
    acc = _accesses(name, **kw)
    loads, stores = sum(k == "load" for k, _, _, _ in acc), sum(k == "store" for k, _, _, _ in acc)
    used = sum(len(offsets) * size for _, offsets, size, _ in acc)

    def measured(sectors, sector=sector_bytes, counted_loads=loads, inverted=False):
        efficiency = used / (sectors * sector)
        return {"loads": counted_loads, "stores": stores, "sectors": sectors, "bytes": used,
                "efficiency": 1 / efficiency if inverted else efficiency}

    def per_instruction(sector):
        return sum(len({o // sector for o in offsets}) for _, offsets, _, _ in acc)

    sectors = per_instruction(sector_bytes)
    mistakes = {
        "loads": ("every instruction counted as a load", measured(sectors, counted_loads=loads + stores)),
        "distinct sectors": ("lanes counted instead of distinct sectors (every element its own sector)",
                             measured(sum(len(offsets) for _, offsets, _, _ in acc))),
        "alignment": ("sectors of each instruction counted as its bytes / sector_bytes, rounded up",
                      measured(sum(-(-len(offsets) * size // sector_bytes) for _, offsets, size, _ in acc))),
        "per instruction": ("sectors counted once over the whole launch, not per instruction",
                            measured(len({(o // sector_bytes, k, buffer) for k, offsets, _, buffer in acc
                                          for o in offsets}))),
        "sector size": ("the sector size fixed at 32 bytes", measured(per_instruction(32), sector=32)),
        "efficiency": ("efficiency inverted (requested bytes over used bytes)", measured(sectors, inverted=True)),
    }
    return measured(sectors), mistakes


def _same_traffic(got, measurement):
    return (all(got[key] == measurement[key] for key in ("loads", "stores", "sectors", "bytes"))
            and abs(got["efficiency"] - measurement["efficiency"]) <= 1e-9 * abs(measurement["efficiency"]))


def _expect_traffic(student, name, sector_bytes=32, public=False, *, owner, **kw):
    """sector_traffic of a trusted launch matches the grader's count.

    One mistake costs once: a measurement that is exactly what a catalogued mistake owned by
    another test gives passes here (``owner`` names the property this test charges).
    """
    launch = student.fixture(f"memory_traffic.launch_{name}", **kw)
    got = student.sector_traffic(launch, sector_bytes) if sector_bytes != 32 else student.sector_traffic(launch)
    ref, mistakes = _traffic(name, sector_bytes, **kw)
    what = f"sector_traffic(launch_{name}({', '.join(f'{k}={v!r}' for k, v in kw.items())}), {sector_bytes})"
    expect_true(isinstance(got, dict) and set(got) >= set(ref),
                f"{what} should return a dict with the keys {sorted(ref)}, got {got!r:.200}")
    for key in ("loads", "stores", "sectors", "bytes"):
        expect_true(isinstance(got[key], int) and not isinstance(got[key], bool),
                    f"{what}[{key!r}] should be a Python int, not {type(got[key]).__name__}")
    own = mistakes[owner][1]
    if not _same_traffic(got, own) and any(prop != owner and _same_traffic(got, measurement)
                                           for prop, (_, measurement) in mistakes.items()):
        return
    for key in ("loads", "stores", "sectors", "bytes"):
        if got[key] != ref[key]:
            named = [description for description, measurement in mistakes.values()
                     if key in ("loads", "sectors") and measurement[key] == got[key] != ref[key]]
            hint = f" (looks like: {named[0]})" if named else ""
            expected = "" if public else f", the grader counts {ref[key]}"
            expect_true(False, f"{what}[{key!r}] is {got[key]}{expected}{hint}")
    named = [description for description, measurement in mistakes.values()
             if abs(got["efficiency"] - measurement["efficiency"]) <= 1e-9 * abs(measurement["efficiency"])
             and measurement["efficiency"] != ref["efficiency"]]
    expect_close(got["efficiency"], ref["efficiency"], atol=1e-9, rtol=1e-9, what=f"{what}['efficiency']",
                 mistakes={named[0]: got["efficiency"]} if named else None)


# Which test charges each catalogued mistake (one mistake costs once): "loads" the copy with a masked
# tail, "distinct sectors" the stride-2 pairs, "alignment" the misaligned copy, "per instruction" the
# test of that name, "sector size" the 128-byte lines, "efficiency" the property test over kernels and
# sizes. Each owner's case gives its mistake a measurement no other catalogued mistake gives.


@pytest.mark.exercise("sector_traffic", points=2, public=True)
def test_sector_traffic_of_a_copy_with_a_masked_tail(student):
    """A copy of 3 rows of 20 float32 (12 of 32 lanes masked): every count and the efficiency."""
    _expect_traffic(student, "copy", public=True, owner="loads", rows=3, width=20)


@pytest.mark.exercise("sector_traffic", points=2, public=True)
def test_sector_traffic_of_stride_2_pairs(student):
    """Two stride-2 loads and stores per row of 128 float32: every sector requested twice."""
    _expect_traffic(student, "strided_pairs", public=True, owner="distinct sectors", rows=2, head_dim=128)


@pytest.mark.exercise("sector_traffic", points=2)
def test_sector_traffic_of_a_misaligned_copy(student):
    """float16 rows that start 1 element past a sector boundary: a row of 16 touches 2 sectors, not 1."""
    _expect_traffic(student, "copy", owner="alignment", rows=4, width=16, offset=1, dtype="float16")


@pytest.mark.exercise("sector_traffic", points=2)
def test_sector_traffic_counts_a_sector_once_per_instruction(student):
    """A gather reading the same and nearby elements several times, and two stride-2 loads of the same float16
    rows (head_dim 80): a sector counts once in each instruction that touches it, not once per launch."""
    _expect_traffic(student, "gather", owner="per instruction", indices=[0, 0, 1, 7, 8, 64, 65, 3, 200, 8])
    _expect_traffic(student, "strided_pairs", owner="per instruction", rows=2, head_dim=80, dtype="float16")


@pytest.mark.exercise("sector_traffic", points=2)
def test_sector_traffic_with_128_byte_lines(student):
    """The same split-pairs kernel counted in 128-byte cache lines instead of 32-byte sectors."""
    _expect_traffic(student, "split_pairs", 128, owner="sector size", rows=3, head_dim=80, dtype="float16")


@pytest.mark.exercise("sector_traffic", points=4)
@grading(max_examples=8)
@given(name=st.sampled_from(["copy", "strided_pairs", "split_pairs"]), rows=st.integers(1, 3),
       width=st.sampled_from([6, 16, 24, 80, 128]), offset=st.sampled_from([0, 1, 3]),
       dtype=st.sampled_from(["float32", "float16"]), sector_bytes=st.sampled_from([32, 64]))
def test_sector_traffic_over_kernels_and_sizes(student, name, rows, width, offset, dtype, sector_bytes):
    """Copies (any width and misalignment) and both pair kernels, float32 or float16, 32- or 64-byte sectors."""
    if name == "copy":
        _expect_traffic(student, name, sector_bytes, owner="efficiency", rows=rows, width=width, offset=offset,
                        dtype=dtype)
    else:
        _expect_traffic(student, name, sector_bytes, owner="efficiency", rows=rows, head_dim=width, dtype=dtype)


@pytest.mark.exercise("sector_traffic", points=1)
def test_sector_traffic_rejects_invalid_inputs(student):
    """sector_bytes 0, 48 (not a power of two) or 32.0 (not an int): ValueError."""
    launch = student.fixture("memory_traffic.launch_copy", rows=1, width=4)
    for sector_bytes in (0, 48, 32.0):
        expect_raises(ValueError, student.sector_traffic, launch, sector_bytes,
                      what=f"sector_traffic(launch, sector_bytes={sector_bytes!r})")


# -- step 4: rope_forward_triton (positions, partial rotary, in place) ------------------------------
def _decode_inputs(seed, *, n_positions=1024, head_dim=32, rotary_dim=None, batch=2, seq_len=1,
                   dtype=torch.float32):
    """q (B, 4, T, D), k (B, 2, T, D) and tables for n_positions positions (rotary_dim // 2 wide)."""
    q, k, _, _ = _inputs(batch, 4, 2, seq_len, head_dim, seed=seed, dtype=dtype)
    return (q, k, *_tables(n_positions, rotary_dim or head_dim))


@pytest.mark.exercise("rope_forward_triton", points=3, public=True)
def test_forward_decode_step_at_offset_1000(student):
    """Decoding: one token at position_ids=1000 (an int offset) = row 1000 of the full rotation."""
    _check_forward(student, *_decode_inputs(201), position_ids=1000, owner="formula")


@pytest.mark.exercise("rope_forward_triton", points=2, public=True)
def test_forward_partial_rotary_half_split(student):
    """rotary_dim=16 of head_dim 64 (Pythia's rotary_pct=0.25): channels 16..63 pass through."""
    q, k, _, _ = _inputs(1, 2, 1, 12, 64, seed=202)
    _check_forward(student, q, k, *_tables(13, 16), rotary_dim=16, owner="partial")


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_per_sequence_offsets(student):
    """position_ids as a (B,) tensor of offsets [2, 7, 300]: each sequence starts at its own position."""
    _check_forward(student, *_decode_inputs(203, batch=3, seq_len=5), position_ids=torch.tensor([2, 7, 300]),
                   owner="per-sequence")


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_packed_sequences(student):
    """Packed batch: position_ids (2, 16) restart at 0 where each packed sequence begins."""
    rows = [[*range(5), *range(7), *range(4)], [*range(9), *range(7)]]
    _check_forward(student, *_decode_inputs(204, n_positions=16, seq_len=16), position_ids=torch.tensor(rows),
                   owner="positions")


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_left_padding(student):
    """Left padding: the real tokens of a padded row are rotated exactly as the same tokens unpadded."""
    pad, real = 5, 7
    mask = torch.tensor([[0] * pad + [1] * real, [1] * (pad + real)])
    position_ids = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)  # as Hugging Face builds them
    q, k, cos, sin = _decode_inputs(205, n_positions=pad + real, seq_len=pad + real)
    (q_rot, k_rot), _ = _call(student, "rope_forward_triton", q, k, cos, sin, position_ids=position_ids)
    unpadded = _rope64(q[:1, :, pad:], cos, sin)  # the real tokens alone, at positions 0..real-1
    ignored = _rope64(q, cos, sin)[:1, :, pad:]  # positions ignored: test_forward_packed_sequences charges it
    expect_close(q_rot[:1, :, pad:], unpadded, what="q_rot of the real tokens of the left-padded row",
                 accepted=[ignored, _rope64(q[:1, :, pad:], cos, sin, sign=-1.0)], **FP32)
    _expect_rotated(q_rot, q, cos, sin, False, 1.0, "q_rot", owner="padding", exercise="rope_forward_triton",
                    position_ids=position_ids)
    _expect_rotated(k_rot, k, cos, sin, False, 1.0, "k_rot", owner="padding", exercise="rope_forward_triton",
                    position_ids=position_ids)


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_partial_rotary_interleaved_at_an_offset(student):
    """GPT-J style: rotary_dim=16 of head_dim 48, interleaved, positions from the int offset 30."""
    q, k, _, _ = _inputs(2, 3, 1, 20, 48, seed=206)
    _check_forward(student, q, k, *_tables(64, 16), True, rotary_dim=16, position_ids=30, owner="offset")


@pytest.mark.exercise("rope_forward_triton", points=3)
def test_forward_in_place(student):
    """inplace=True: q and k hold the rotation afterwards; half-split, and interleaved with rotary_dim 24 of 32."""
    for interleaved in (False, True):
        q, k, _, _ = _inputs(2, 3, 2, 10, 32, seed=207 + interleaved)
        width = 24 if interleaved else 32  # 24 channels (as GPT-NeoX-20B's 24 of 96): no power of two
        cos, sin = _tables(40, width)
        at = dict(position_ids=torch.tensor([3, 17]), rotary_dim=width)
        after = _check_forward(student, q, k, cos, sin, interleaved, inplace=True, owner="inplace", **at)
        for label, before, now in zip(("q", "k"), (q, k), after):
            wrong = _wrong_outputs(before, cos, sin, interleaved, 1.0, **at)
            expect_close(now, _rope64(before, cos, sin, interleaved, **at),
                         what=f"{label} after an inplace=True call (it should hold the rotation)",
                         mistakes={"the call was not done in place (the input is unchanged)": before.double()},
                         accepted=[wrong[key] for key in ("sign", "positions", "first row") if key in wrong], **FP32)


@pytest.mark.exercise("rope_forward_triton", points=1)
def test_forward_out_of_place_never_writes_inputs(student):
    """The default (inplace=False) leaves q, k, cos and sin untouched, with positions and partial rotary."""
    q, k, _, _ = _inputs(1, 2, 2, 12, 48, seed=209)
    cos, sin = _tables(32, 16)
    for layout, interleaved in (("contiguous", False), ("transposed", True), ("fused_qkv", False)):
        _expect_inputs_unchanged(student, "rope_forward_triton", (q, k, cos, sin), layout, interleaved,
                                 position_ids=torch.tensor([[*range(4, 16)]]), rotary_dim=16)


@pytest.mark.exercise("rope_forward_triton", points=1)
def test_forward_float16_with_positions(student):
    """float16 q and k, packed positions, partial rotary: float16 results within one rounding."""
    q, k, _, _ = _inputs(2, 4, 2, 9, 64, seed=210, dtype=torch.float16)
    rows = torch.tensor([[*range(4), *range(5)], [*range(100, 109)]])
    _check_forward(student, q, k, *_tables(128, 32), True, tol=FP16, position_ids=rows, rotary_dim=32, owner="dtype")


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_any_strides(student):
    """Strides, both layouts: transposed q and k (T = 45, head_dim 80, 3 q heads and 1 k head, default positions),
    and channel stride 2 with NaN between ((B, T) positions; interleaved: rotary_dim 8 of 12)."""
    q, k, _, _ = _inputs(1, 3, 1, 45, 80, seed=211)
    for interleaved in (False, True):
        _check_forward(student, q, k, *_tables(46, 80), interleaved, layout="transposed", owner="strides")
    q, k, _, _ = _inputs(2, 3, 1, 5, 12, seed=233)
    position_ids = torch.tensor([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]])
    for interleaved, width in ((False, 12), (True, 8)):
        _check_forward(student, q, k, *_tables(12, width), interleaved, layout="strided", owner="strides",
                       position_ids=position_ids, rotary_dim=width)


def _packed(x):
    """(1, H, N, D) -> the varlen layout (N, H, D), a copy."""
    return x[0].transpose(0, 1).contiguous()


def _check_varlen(student, q, k, cos, sin, interleaved, layout, sign=1.0, name="rope_forward_triton", **options):
    """q, k (1, H, N, D): call ``name`` on their varlen layout (N, H, D) and compare with the float64
    reference at the positions ``options`` imply (cu_seqlens restart them at each sequence's start)."""
    cu_seqlens, offsets = options.get("cu_seqlens"), options.get("position_ids")
    if cu_seqlens is None:
        positions = offsets[None]
    else:
        lengths = cu_seqlens[1:] - cu_seqlens[:-1]
        starts = torch.repeat_interleave(cu_seqlens[:-1].long(), lengths)
        positions = torch.arange(q.shape[2]) - starts
        if offsets is not None:
            positions = positions + torch.repeat_interleave(offsets.long(), lengths)
        positions = positions[None]
    (q_rot, k_rot), _ = _call(student, name, _packed(q), _packed(k), cos, sin, interleaved, layout, **options)
    if sign < 0 and q.shape[1] != k.shape[1] and q_rot.shape[1] == k.shape[1]:
        q_rot, k_rot = k_rot, q_rot  # in the wrong order: test_backward_matches_autograd_half_split's to charge
    for got, x, what in ((q_rot, q, "q_rot"), (k_rot, k, "k_rot")):
        expect_shape(got, (x.shape[2], x.shape[1], x.shape[3]), what=f"{what} (total_tokens, H, D)")
        expected = _rope64(x, cos, sin, interleaved, sign, position_ids=positions)[0].transpose(0, 1)
        run_on = _rope64(x, cos, sin, interleaved, sign)[0].transpose(0, 1)
        # the angle's sign is the public test's; position_ids ignored test_forward_packed_sequences' (and the
        # backward's options test)
        accepted = [_rope64(x, cos, sin, interleaved, -sign, position_ids=positions)[0].transpose(0, 1)]
        if sign < 0:  # unrotated and the other layout: the backward's public and layout tests charge them
            accepted += [x.double()[0].transpose(0, 1),
                         _rope64(x, cos, sin, not interleaved, sign, position_ids=positions)[0].transpose(0, 1)]
        if offsets is not None and cu_seqlens is None:
            accepted.append(run_on)                                   # positions 0..N-1
        elif offsets is not None:                                     # each sequence from 0
            restarted = positions - torch.repeat_interleave(offsets.long(), cu_seqlens[1:] - cu_seqlens[:-1])
            accepted.append(_rope64(x, cos, sin, interleaved, sign, position_ids=restarted)[0].transpose(0, 1))
        expect_close(got, expected, what=f"{what} of the varlen layout ({layout})", **FP32, accepted=accepted,
                     mistakes={"cu_seqlens ignored: positions ran on across the packed sequences instead of "
                               "restarting at 0": run_on})


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_varlen_layout(student):
    """The varlen layout (total_tokens, H, D): cu_seqlens of sequences 3, 1 and 6 tokens long, alone and with
    (S,) offsets [0, 40, 7], both pair layouts; and (total_tokens,) per-token positions without cu_seqlens."""
    q, k, cos, sin = _inputs(1, 3, 2, 10, 16, seed=240)
    cos, sin = _tables(64, 16)
    cu_seqlens = torch.tensor([0, 3, 4, 10], dtype=torch.int32)
    _check_varlen(student, q, k, cos, sin, False, "contiguous", cu_seqlens=cu_seqlens, max_seqlen=6)
    _check_varlen(student, q, k, cos, sin, True, "contiguous", cu_seqlens=cu_seqlens.long(), max_seqlen=6,
                  position_ids=torch.tensor([0, 40, 7]))
    _check_varlen(student, q, k, cos, sin, False, "contiguous", position_ids=torch.tensor([5, 1, 0, 2, 63, 9, 8, 7,
                                                                                            6, 30]))


def _hugging_face_tables(cos, sin, positions, interleaved):
    """Full-width (B, T, D) tables at each token's position, as a Hugging Face model's rotary embedding
    returns them: cat(freqs, freqs) for half-split pairs, each angle twice in a row for interleaved ones."""
    def full(table):
        rows = table[positions]                                       # (B, T, D/2)
        return rows.repeat_interleave(2, dim=-1) if interleaved else torch.cat([rows, rows], dim=-1)
    return full(cos), full(sin)


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_hugging_face_tables(student):
    """Hugging Face's full-width (B, T, D) cos/sin at packed positions, read as they are, both pair layouts
    (interleaved: each angle twice in a row); and (1, T, D) tables shared by the batch."""
    q, k, _, _ = _inputs(2, 3, 1, 7, 16, seed=241)
    cos, sin = _tables(32, 16)
    positions = torch.tensor([[0, 1, 2, 0, 1, 2, 3], [9, 10, 11, 12, 13, 14, 15]])
    for interleaved in (False, True):
        hf = _hugging_face_tables(cos, sin, positions, interleaved)
        (q_rot, k_rot), _ = _call(student, "rope_forward_triton", q, k, *hf, interleaved)
        for got, x, what in ((q_rot, q, "q_rot"), (k_rot, k, "k_rot")):
            expect_close(got, _rope64(x, cos, sin, interleaved, position_ids=positions), **FP32,
                         accepted=[_rope64(x, cos, sin, interleaved, -1.0, position_ids=positions)], mistakes={
                "every batch element rotated with the first one's angles (the tables' batch stride ignored)":
                _rope64(x, cos, sin, interleaved, position_ids=positions[:1].expand(2, -1))},
                what=f"{what} with (2, 7, 16) tables ({'interleaved' if interleaved else 'half-split'})")
    shared = _hugging_face_tables(cos, sin, positions[1:], False)
    (q_rot, _), _ = _call(student, "rope_forward_triton", q, k, *shared)
    expect_close(q_rot, _rope64(q, cos, sin, position_ids=positions[1:].expand(2, -1)), **FP32,
                 accepted=[_rope64(q, cos, sin, sign=-1.0, position_ids=positions[1:].expand(2, -1))],
                 what="q_rot with (1, 7, 16) tables shared by both batch elements")


@pytest.mark.exercise("rope_forward_triton", points=1)
def test_forward_clamps_positions_outside_the_tables(student):
    """Position tensors are the caller's contract, clamped on the device: ids 64 and -3 with 64-row tables
    rotate as 63 and 0 ((B, T) ids and (B,) offsets), never reading outside the tables."""
    q, k, cos, sin = _decode_inputs(242, n_positions=64, seq_len=3)
    for position_ids in (torch.tensor([[0, 1, 64], [-3, 1, 2]]), torch.tensor([62, -2])):
        clamped = _positions(q, position_ids).clamp(0, 63)
        (q_rot, k_rot), _ = _call(student, "rope_forward_triton", q, k, cos, sin, position_ids=position_ids)
        for got, x, what in ((q_rot, q, "q_rot"), (k_rot, k, "k_rot")):
            # positions ignored, every sequence at the first one's, the angle's sign: test_forward_packed_sequences',
            # test_forward_per_sequence_offsets' and test_forward_decode_step_at_offset_1000's to charge
            accepted = [_rope64(x, cos, sin), _rope64(x, cos, sin, position_ids=clamped[:1].expand(2, -1)),
                        _rope64(x, cos, sin, sign=-1.0, position_ids=clamped)]
            expect_close(got, _rope64(x, cos, sin, position_ids=clamped), **FP32, accepted=accepted,
                         what=f"{what} at positions {position_ids.tolist()} with 64-row tables (clamped to [0, 63])")


@pytest.mark.exercise("rope_forward_triton", points=2)
def test_forward_never_synchronises(student):
    """No host-device synchronisation on any path: no .item(), .tolist(), .cpu(), .numpy(), bool() or int() of
    a tensor in a call with (B,) offsets, (B, T) ids, cu_seqlens or Hugging Face tables (it runs on the CPU
    here, where nothing waits; on a GPU each of them waits for every kernel queued before it)."""
    q, k, cos, sin = _decode_inputs(243, n_positions=64, seq_len=5)
    hf = _hugging_face_tables(cos[:, :16], sin[:, :16], torch.tensor([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]), False)
    calls = {"(B,) offsets": ((q, k, cos, sin), dict(position_ids=torch.tensor([3, 50]))),
             "(B, T) position_ids, in place": ((q, k, cos, sin), dict(position_ids=torch.arange(10).view(2, 5),
                                                                      inplace=True)),
             "int32 (B, T) position_ids, partial rotary": (
                 (q, k, cos[:, :4], sin[:, :4]), dict(position_ids=torch.arange(10, dtype=torch.int32).view(2, 5),
                                                      rotary_dim=8)),
             "cu_seqlens with (S,) offsets": ((_packed(q[:1]), _packed(k[:1]), cos, sin), dict(
                 cu_seqlens=torch.tensor([0, 2, 5], dtype=torch.int32), max_seqlen=3,
                 position_ids=torch.tensor([0, 7]))),
             "Hugging Face (B, T, D) tables": ((q, k, *hf), {})}
    returned = 0
    for label, (args, options) in calls.items():
        counted = _harness(student.count_rope_syncs, student.ref("rope_forward_triton"), *args, **options)
        syncs, returned = counted["syncs"], returned + (counted["error"] is None)
        if syncs:
            fail(f"rope_forward_triton with {label} called {', '.join(dict.fromkeys(syncs))}: on a GPU each is a "
                 "host-device synchronisation (the host waits for every queued kernel, and a CUDA graph cannot "
                 "capture the call); check shapes and Python ints on the host, and leave tensor values to the "
                 "device (clamp positions in the kernel)")
    expect_true(returned > 0, "rope_forward_triton raised on every call of this test, so no call could be "
                              f"checked for synchronisations: {', '.join(calls)}")


@pytest.mark.exercise("rope_forward_triton", points=3)
@grading(max_examples=5)
@given(batch=BATCHES, heads=HEADS, seq_len=SEQ_LENS, head_dim=HEAD_DIMS, rotary=ROTARY, positions=POSITION_FORMS,
       start=st.integers(0, 40), spare_rows=st.sampled_from([1, 3]), interleaved=st.booleans(),
       inplace=st.booleans(), dtype=DTYPE_NAMES, seed=seeds())
def test_forward_property(student, batch, heads, seq_len, head_dim, rotary, positions, start, spare_rows,
                          interleaved, inplace, dtype, seed):
    """Any sizes, rotary_dim (partial: interleaved), position_ids form (int, (B,), (B, T) int64), dtype, inplace;
    contiguous (strides, int32 ids, tables that fit exactly and inputs left alone are other tests')."""
    dtype = _kernel_dtype(student, dtype)
    q, k, _, _ = _inputs(batch, *heads, seq_len, head_dim, seed=seed, dtype=dtype)
    if rotary == "partial" and not interleaved:
        rotary = "full"  # a half-split partial rotary is test_forward_partial_rotary_half_split's
    layout = "contiguous"
    options, rows, width = _draw_options(batch, seq_len, head_dim, rotary, positions, start, False, seed)
    cos, sin = _tables(rows + spare_rows, width)
    if not inplace:
        _check_forward(student, q, k, cos, sin, interleaved, layout, TOLERANCE[dtype], owner="any", **options)
        return
    # In place: q and k after the call hold the rotation (what it returns is test_forward_in_place's).
    _, after = _call(student, "rope_forward_triton", q, k, cos, sin, interleaved, inplace=True, **options)
    at = {key: options[key] for key in ("position_ids", "rotary_dim") if key in options}
    for label, before, now in zip(("q", "k"), (q, k), after):
        wrong = _wrong_outputs(before, cos, sin, interleaved, 1.0, **at)
        expect_close(now, _rope64(before, cos, sin, interleaved, **at),
                     what=f"{label} after an inplace=True call ({layout}; it should hold the rotation)",
                     accepted=[before.double(), *(wrong[key] for key in ("sign", "offset", "positions", "first row",
                                                                          "zeroed") if key in wrong)],
                     **TOLERANCE[dtype])
    for label, before, now in zip(("cos", "sin"), (cos, sin), after[2:]):
        expect_equal(now, before, what=f"{label} after an inplace=True call")


@pytest.mark.exercise("rope_forward_triton", points=0, informational=True)
def test_forward_bandwidth_on_a_gpu(student, record_property):
    """Informational, 0 points: GB/s and the ratio to a device-to-device copy on a CUDA device; skipped without one."""
    # The kernel must work before it is worth timing (and a stub must not pass this test).
    q, k, _, _ = _inputs(1, 2, 1, 8, 16, seed=299)
    _call(student, "rope_forward_triton", q, k, *_tables(9, 16))  # runs (its values are the other tests')
    shape = (4, 32, 8, 4096, 128)  # bf16: q 134 MB, k 34 MB, well above an H100's 50 MB L2
    result = _harness(student.measure_rope_bandwidth, student.ref("rope_forward_triton"), shape)
    # The message goes to the test's user_properties (pytest's record_property); a pytest skip is
    # recorded by the judge as passed, and this test is worth 0 points either way.
    if result.get("device") is None:
        record_property("output", "skipped: no GPU")
        pytest.skip("skipped: no GPU")
    expect_true(result["max_error"] < 0.1, f"on {result['device']} the kernel differs from eager PyTorch by "
                f"{result['max_error']:.3g} in bfloat16 (rounding is about 0.02): not timed")
    gbps = result["gbps"]
    record_property("output", f"{result['device']}, {result['dtype']}, (B, H_q, H_k, T, D) = {tuple(shape)}: "
                    f"{gbps['triton']:.0f} GB/s, {gbps['triton'] / gbps['copy']:.0%} of a device-to-device "
                    f"copy ({gbps['copy']:.0f} GB/s); timings measured inside the sandbox")


# -- rope_backward_triton -----------------------------------------------------------------------
# Owners: the public test the rotation by -θ (not +θ, not unrotated) and the order of the results;
# test_backward_interleaved_grouped_odd_length the layout flag; test_backward_positions_and_partial_rotary
# position_ids ((B, T) ids and an int offset) and rotary_dim passed on; test_backward_float16 the dtype;
# test_backward_leaves_gradients_unchanged the inputs. The others let those mistakes' results pass and
# give no partial rotary_dim (a backward that drops it raises).
@pytest.mark.exercise("rope_backward_triton", points=1, public=True)
def test_backward_matches_autograd_half_split(student):
    """Half-split, float32: the result equals autograd's gradient through the float64 reference."""
    g_q, g_k, cos, sin = _inputs(1, 2, 1, 8, 16, seed=30)
    q = torch.randn(g_q.shape, dtype=torch.float64, requires_grad=True)
    k = torch.randn(g_k.shape, dtype=torch.float64, requires_grad=True)
    # The loss sum(g_q * q_rot) + sum(g_k * k_rot) sends g_q and g_k back through the reference.
    ((_rope64(q, cos, sin) * g_q.double()).sum() + (_rope64(k, cos, sin) * g_k.double()).sum()).backward()
    (d_q, d_k), _ = _call(student, "rope_backward_triton", g_q, g_k, cos, sin)
    for got, want, x, what in ((d_q, q.grad, g_q, "gradient for q"), (d_k, k.grad, g_k, "gradient for k")):
        expect_shape(got, tuple(x.shape), what=what)
        expect_close(got, want, what=what, mistakes=_mistakes(x, cos, sin, False, -1.0), **FP32)


@pytest.mark.exercise("rope_backward_triton", points=1)
def test_backward_interleaved_grouped_odd_length(student):
    """Interleaved, 6 query heads and 2 key heads, T = 97, head_dim 80: rotation by -θ."""
    _check_backward(student, *_inputs(1, 6, 2, 97, 80, seed=31), interleaved=True, owner="layout")


@pytest.mark.exercise("rope_backward_triton", points=1)
def test_backward_inverts_the_forward_rotation(student):
    """bwd(fwd(x)) = x: backward applied to the reference rotation of x gives x back (float32, float16 values)."""
    for dtype, interleaved in ((torch.float32, False), (torch.float16, True)):
        q, k, cos, sin = _inputs(1, 4, 2, 50, 64, seed=32, dtype=dtype)
        rotated = [_rope64(x, cos, sin, interleaved).to(dtype) for x in (q, k)]
        (back_q, back_k), _ = _call(student, "rope_backward_triton", *rotated, cos, sin, interleaved)
        if tuple(back_q.shape) == tuple(k.shape) and tuple(back_k.shape) == tuple(q.shape):
            back_q, back_k = back_k, back_q  # the results in the wrong order: the public test charges that
        for got, x, r, what in ((back_q, q, rotated[0], "bwd(fwd(q))"), (back_k, k, rotated[1], "bwd(fwd(k))")):
            # float16: two roundings, each carried at the scale of the pair's norm (module docstring).
            tol = FP32 if dtype == torch.float32 else dict(
                rtol=1e-3, atol=4 * 2.0**-11 * _max_pair_norm(x, interleaved))
            # +θ, the input unrotated, the layout flag ignored: other tests charge them (one mistake costs once)
            accepted = [_rope64(r, cos, sin, interleaved), r.double(), _rope64(r, cos, sin, not interleaved, -1.0)]
            expect_close(got, x, what=what, accepted=accepted, **tol)


@pytest.mark.exercise("rope_backward_triton", points=1)
def test_backward_float16(student):
    """float16 gradients, half-split, grouped heads: float16 results within one rounding."""
    _check_backward(student, *_inputs(1, 4, 1, 40, 32, seed=33, dtype=torch.float16), tol=FP16, owner="dtype")


@pytest.mark.exercise("rope_backward_triton", points=1)
def test_backward_non_contiguous_gradients(student):
    """Gradients arriving as transposed views, and as fused-buffer slices, with strided tables."""
    _check_backward(student, *_inputs(1, 4, 2, 45, 80, seed=34), interleaved=True, layout="transposed",
                    owner="strides")
    _check_backward(student, *_inputs(2, 4, 2, 21, 64, seed=35), layout="fused_qkv", owner="strides")


@pytest.mark.exercise("rope_backward_triton", points=1)
def test_backward_leaves_gradients_unchanged(student):
    """grad_q and grad_k are unchanged after the call (not rotated in place)."""
    inputs = _inputs(1, 2, 2, 24, 32, seed=36)
    _, after = _call(student, "rope_backward_triton", *inputs)
    for name, before, now in zip(("grad_q", "grad_k"), inputs, after):
        _expect_unchanged(now, before, _rope64(before, *inputs[2:], sign=-1.0), f"{name} after the call")


@pytest.mark.exercise("rope_backward_triton", points=1)
def test_backward_positions_and_partial_rotary(student):
    """Packed position_ids (half-split) or an int offset of 30 (interleaved), rotary_dim=16 of 48: -θ at each
    token's position, pass-through gradients copied."""
    g_q, g_k, _, _ = _inputs(2, 3, 1, 10, 48, seed=38)
    rows = torch.tensor([[*range(6), *range(4)], [*range(50, 60)]])
    for interleaved, position_ids in ((False, rows), (True, 30)):
        _check_backward(student, g_q, g_k, *_tables(64, 16), interleaved, owner="options", position_ids=position_ids,
                        rotary_dim=16)


@pytest.mark.exercise("rope_backward_triton", points=1)
def test_backward_varlen_layout(student):
    """Varlen gradients (total_tokens, H, D) with cu_seqlens and (S,) offsets: rotated by -θ at each token's
    position within its sequence."""
    g_q, g_k, _, _ = _inputs(1, 2, 1, 9, 8, seed=244)
    cos, sin = _tables(32, 8)
    _check_varlen(student, g_q, g_k, cos, sin, True, "contiguous", sign=-1.0, name="rope_backward_triton",
                  cu_seqlens=torch.tensor([0, 4, 9], dtype=torch.int32), max_seqlen=5,
                  position_ids=torch.tensor([2, 20]))


@pytest.mark.exercise("rope_backward_triton", points=2)
@grading(max_examples=3)
@given(batch=BATCHES, heads=HEADS, seq_len=SEQ_LENS, head_dim=HEAD_DIMS, rotary=st.sampled_from(["default", "full"]),
       positions=POSITION_FORMS, start=st.integers(0, 40), int32=st.booleans(), interleaved=st.booleans(),
       dtype=DTYPE_NAMES, layout=HARNESS_LAYOUTS, seed=seeds())
def test_backward_property(student, batch, heads, seq_len, head_dim, rotary, positions, start, int32, interleaved,
                           dtype, layout, seed):
    """Rotation by -θ over any sizes, position_ids form, layout and dtype (partial rotary is
    test_backward_positions_and_partial_rotary's)."""
    dtype = _kernel_dtype(student, dtype)
    g_q, g_k, _, _ = _inputs(batch, *heads, seq_len, head_dim, seed=seed, dtype=dtype)
    options, rows, width = _draw_options(batch, seq_len, head_dim, rotary, positions, start, int32, seed)
    _check_backward(student, g_q, g_k, *_tables(rows, width), interleaved, layout, TOLERANCE[dtype], owner="any",
                    **options)


# -- TritonRoPE ---------------------------------------------------------------------------------
# Owners (TritonRoPE): test_autograd_forward_and_gradients the backward rotation (by -θ: not +θ, not the
# gradient passed through); test_autograd_interleaved_grouped_odd_length the layout kept for backward;
# test_autograd_positions_and_partial_rotary position_ids (an int offset too) and rotary_dim kept for
# backward; test_autograd_float16 the outputs' dtype. The other tests let those mistakes' gradients pass,
# and give no int offset and no partial rotary_dim, with which the owners' mistakes raise.
def _autograd_mistakes(g, cos, sin, interleaved, **at):
    """Gradients that the catalogued mistakes of TritonRoPE give, by the property (owner) they break."""
    owned = {"formula": [_rope64(g, cos, sin, interleaved, 1.0, **at), g.double()]}
    if interleaved:
        owned["layout"] = [_rope64(g, cos, sin, False, -1.0, **at)]
    if at.get("position_ids") is not None:
        owned["options"] = [_rope64(g, cos, sin, interleaved, -1.0, rotary_dim=at.get("rotary_dim"))]
    return owned


def _check_autograd(student, q, k, cos, sin, interleaved=False, layout="contiguous", tol=FP32, seed=0, *,
                    owner, **at):
    """Forward and backward through TritonRoPE.apply: outputs by θ, gradients by -θ; ``owner`` as above."""
    gen = torch.Generator().manual_seed(seed + 1000)
    g_q = torch.randn(q.shape, generator=gen, dtype=torch.float64).to(q.dtype)
    g_k = torch.randn(k.shape, generator=gen, dtype=torch.float64).to(k.dtype)
    result = _harness(student.call_rope_autograd, student.ref("TritonRoPE"), q, k, cos, sin, g_q, g_k,
                      interleaved=interleaved, layout=layout, **at)
    q_rot, k_rot, d_q, d_k = result
    outputs = owner if owner in ("formula", "dtype") else "other"
    _expect_rotated(q_rot, q, cos, sin, interleaved, 1.0, "TritonRoPE.apply output for q", tol, outputs,
                    "TritonRoPE", **at)
    _expect_rotated(k_rot, k, cos, sin, interleaved, 1.0, "TritonRoPE.apply output for k", tol, outputs,
                    "TritonRoPE", **at)
    for got, g, what in ((d_q, g_q, "q.grad"), (d_k, g_k, "k.grad")):
        expect_true(got is not None, f"{what} is None after backward: did backward return a gradient for it?")
        expect_shape(got, tuple(g.shape), what=what)
        expect_dtype(got, g.dtype, what=what)
        mistakes = _mistakes(g, cos, sin, interleaved, -1.0, **at)
        if interleaved:  # named before the generic layout mistake, which returns the same values
            mistakes = {"backward used the default layout: the interleaved flag was not kept on ctx":
                        _rope64(g, cos, sin, False, -1.0, **at), **mistakes}
        if at.get("position_ids") is not None:
            mistakes = {"backward rotated at positions 0..T-1: position_ids were not kept on ctx":
                        _rope64(g, cos, sin, interleaved, -1.0, rotary_dim=at.get("rotary_dim")), **mistakes}
        accepted = [out for name, outs in _autograd_mistakes(g, cos, sin, interleaved, **at).items()
                    if name != owner for out in outs]
        expect_close(got, _rope64(g, cos, sin, interleaved, -1.0, **at), what=what, mistakes=mistakes,
                     accepted=accepted, **tol)


@pytest.mark.exercise("TritonRoPE", points=2, public=True)
def test_autograd_forward_and_gradients(student):
    """TritonRoPE.apply(q, k, cos, sin, False): outputs rotate by θ, gradients by -θ (float32)."""
    _check_autograd(student, *_inputs(1, 2, 1, 16, 16, seed=40), seed=40, owner="formula")


@pytest.mark.exercise("TritonRoPE", points=2)
def test_autograd_interleaved_grouped_odd_length(student):
    """Interleaved, 6 query and 2 key heads, T = 97, head_dim 80: the layout reaches backward too."""
    _check_autograd(student, *_inputs(1, 6, 2, 97, 80, seed=41), interleaved=True, seed=41, owner="layout")


@pytest.mark.exercise("TritonRoPE", points=1)
def test_autograd_non_contiguous_leaves(student):
    """q and k are transposed views of (B, T, H, D) leaves; gradients arrive as transposed views."""
    _check_autograd(student, *_inputs(1, 4, 2, 30, 64, seed=42), interleaved=True, layout="transposed", seed=42,
                    owner="leaves")


@pytest.mark.exercise("TritonRoPE", points=1)
def test_autograd_float16(student):
    """float16 q and k: float16 outputs and gradients within one float16 rounding."""
    _check_autograd(student, *_inputs(1, 4, 2, 33, 32, seed=43, dtype=torch.float16), tol=FP16, seed=43,
                    owner="dtype")


@pytest.mark.exercise("TritonRoPE", points=1)
def test_autograd_positions_and_partial_rotary(student):
    """apply(q, k, cos, sin, False, position_ids, 16): positions ((B, T) ids, an int offset) and rotary_dim
    reach the backward pass too."""
    q, k, _, _ = _inputs(2, 2, 1, 6, 32, seed=44)
    position_ids = torch.tensor([[*range(6)], [*range(30, 36)]])
    _check_autograd(student, q, k, *_tables(40, 16), seed=44, owner="options", position_ids=position_ids,
                    rotary_dim=16)
    _check_autograd(student, q, k, *_tables(40, 16), True, seed=45, owner="options", position_ids=30,
                    rotary_dim=16)


@pytest.mark.exercise("TritonRoPE", points=2)
@grading(max_examples=3)
@given(batch=BATCHES, heads=HEADS, seq_len=SEQ_LENS, head_dim=HEAD_DIMS, rotary=st.sampled_from(["default", "full"]),
       positions=st.sampled_from(["default", "offsets", "ids"]), start=st.integers(0, 40), int32=st.booleans(),
       interleaved=st.booleans(), dtype=DTYPE_NAMES, layout=st.sampled_from(["contiguous", "transposed", "strided"]),
       seed=seeds())
def test_autograd_property(student, batch, heads, seq_len, head_dim, rotary, positions, start, int32, interleaved,
                           dtype, layout, seed):
    """Outputs by θ, gradients by -θ over any sizes, position_ids tensors, layout, dtype (int offsets and partial
    rotary are test_autograd_positions_and_partial_rotary's)."""
    dtype = _kernel_dtype(student, dtype)
    q, k, _, _ = _inputs(batch, *heads, seq_len, head_dim, seed=seed, dtype=dtype)
    options, rows, width = _draw_options(batch, seq_len, head_dim, rotary, positions, start, int32, seed)
    _check_autograd(student, q, k, *_tables(rows, width), interleaved, layout, TOLERANCE[dtype], seed=seed % 1000,
                    owner="any", **options)


# ==============================================================================================
# One test of promised errors per exercise (1 point each), then the checks it runs. They check that
# bad inputs raise and valid ones run, never the values (the value tests' to check).
# ==============================================================================================


@pytest.mark.exercise("rope_rows_triton", points=1)
def test_rope_rows_triton_rejects_invalid_inputs(student):
    """The promised ValueErrors of rope_rows_triton, with the valid edge cases beside them."""
    _rows_rejects_bad_shapes(student)
    _rows_rejects_non_contiguous_x(student)
    _rows_rejects_unsupported_dtypes(student)
    _rows_rejects_tables_of_other_lengths(student)


def _rows_rejects_bad_shapes(student):
    """An odd head_dim, tables of the wrong shape, and a 3-D x are rejected with a ValueError."""
    x, cos, sin = _row_inputs(8, 16, seed=105)
    expect_raises(ValueError, student.rope_rows_triton, x[:, :15], cos[:, :7], sin[:, :7],
                  what="rope_rows_triton with head_dim 15")
    expect_raises(ValueError, student.rope_rows_triton, x, torch.cat([cos, cos], -1), torch.cat([sin, sin], -1),
                  what="rope_rows_triton with (8, 16) tables for head_dim 16")
    expect_raises(ValueError, student.rope_rows_triton, x[None], cos, sin, what="rope_rows_triton with x (1, 8, 16)")


def _rows_rejects_non_contiguous_x(student):
    """A non-contiguous x (a transposed view, a channel-strided slice) raises ValueError; a contiguous one works."""
    x, cos, sin = _row_inputs(6, 8, seed=106)
    for layout in ("transposed", "strided"):
        expect_raises(ValueError, student.rope_rows_triton, view(x, layout), cos, sin,
                      what=f"rope_rows_triton with a non-contiguous ({layout}) x of shape (6, 8)")
    _rows_result(student, *_row_inputs(8, 8, seed=107))


def _rows_rejects_unsupported_dtypes(student):
    """float64 x raises ValueError, and bfloat16 under the interpreter (on a GPU it works); float16 works."""
    x, cos, sin = _row_inputs(6, 8, seed=108, dtype=torch.float64)
    expect_raises(ValueError, student.rope_rows_triton, x, cos, sin, what="rope_rows_triton with a float64 x")
    bf16 = _row_inputs(8, 8, seed=109, dtype=torch.bfloat16)
    _bfloat16_rule(student, lambda: _rows_result(student, *bf16), student.rope_rows_triton, *bf16,
                   what="rope_rows_triton with a bfloat16 x")
    _rows_result(student, *_row_inputs(8, 8, seed=110, dtype=torch.float16))
    _rejects_other_devices(student, student.rope_rows_triton, *_row_inputs(6, 8, seed=110),
                           what="rope_rows_triton")


def _rows_rejects_tables_of_other_lengths(student):
    """Tables with T + 1 rows, or sin of another shape than cos, raise ValueError; (1, 1) tables for x (1, 2) work."""
    x, cos, sin = _row_inputs(6, 8, seed=111)
    expect_raises(ValueError, student.rope_rows_triton, x, *_tables(7, 8),
                  what="rope_rows_triton with (7, 4) tables for x (6, 8)")
    expect_raises(ValueError, student.rope_rows_triton, x, cos, sin[:, :3],
                  what="rope_rows_triton with cos (6, 4) and sin (6, 3)")
    _rows_result(student, *_row_inputs(1, 2, seed=112))


# Step 1's masks test runs after its other tests (tests run in this file's order): a kernel missing a
# mask writes out of bounds and may corrupt its process, which must not fail the tests after it.
@pytest.mark.exercise("rope_rows_triton", points=3)
@grading(max_examples=3)
@given(seq_len=SEQ_LENS, head_dim=HEAD_DIMS, dtype=DTYPE_NAMES, tables=st.sampled_from(["float32", "float64"]),
       seed=seeds())
@example(seq_len=37, head_dim=80, dtype="float32", tables="float32", seed=102)
def test_rows_property(student, seq_len, head_dim, dtype, tables, seed):
    """Masks: any T (1, 37 and 65 past a block), any even D (2, 6, 80: D/2 no power of two), float32/float16
    x (bfloat16 on a GPU), float32/float64 tables; T = 37 with head_dim 80 always."""
    dtype = _kernel_dtype(student, dtype)
    x = tensor(seed, seq_len, head_dim, dtype=dtype)
    cos, sin = (t.to(getattr(torch, tables)) for t in _tables(seq_len, head_dim))  # "any float dtype"
    _check_rows(student, x, cos, sin, TOLERANCE[dtype], owner="masks")


@pytest.mark.exercise("rope_heads_triton", points=1)
def test_rope_heads_triton_rejects_invalid_inputs(student):
    """The promised ValueErrors of rope_heads_triton, with the valid edge cases beside them."""
    _heads_reject_mismatched_inputs(student)
    _heads_reject_wrong_ranks(student)
    _heads_reject_other_batch_or_length(student)
    _heads_reject_odd_head_dim_and_other_tables(student)
    _heads_reject_unsupported_dtypes(student)


def _heads_reject_mismatched_inputs(student):
    """q and k with different head_dim, and full-width (T, D) tables, are rejected with a ValueError."""
    q, _, cos, sin = _inputs(1, 2, 1, 8, 16, seed=118)
    _, k, _, _ = _inputs(1, 2, 1, 8, 32, seed=119)
    expect_raises(ValueError, student.rope_heads_triton, q, k, cos, sin,
                  what="rope_heads_triton with head_dim 16 for q and 32 for k")
    expect_raises(ValueError, student.rope_heads_triton, q, q, torch.cat([cos, cos], -1),
                  torch.cat([sin, sin], -1), what="rope_heads_triton with (8, 16) tables for head_dim 16")


def _heads_reject_wrong_ranks(student):
    """A 3-D q or a 5-D k raises ValueError; the smallest valid call (B = H = T = 1, D = 2) works."""
    _rejects_wrong_ranks(student, "rope_heads_triton")


def _heads_reject_other_batch_or_length(student):
    """k with another batch size or seq_len than q raises ValueError; another head count works."""
    _rejects_other_batch_or_length(student, "rope_heads_triton")


def _heads_reject_odd_head_dim_and_other_tables(student):
    """head_dim 7, tables with T + 1 rows, sin of another shape than cos raise ValueError; (T, D // 2) works."""
    _rejects_odd_head_dim_and_other_tables(student, "rope_heads_triton")


def _heads_reject_unsupported_dtypes(student):
    """float64 raises ValueError, bfloat16 too under the interpreter (on a GPU it works); float16 works."""
    _rejects_unsupported_dtypes(student, "rope_heads_triton")


@pytest.mark.exercise("rope_heads_triton", points=5)
@grading(max_examples=3)
@given(batch=BATCHES, heads=HEADS, seq_len=SEQ_LENS, head_dim=HEAD_DIMS, dtype=DTYPE_NAMES, seed=seeds())
@example(batch=2, heads=(3, 1), seq_len=45, head_dim=80, dtype="float32", seed=112)
@example(batch=1, heads=(2, 3), seq_len=19, head_dim=48, dtype="float32", seed=113)
def test_heads_property(student, batch, heads, seq_len, head_dim, dtype, seed):
    """Any B, H_q and H_k (GQA; more k heads: k rotated with its own count), T, even D and dtype, contiguous;
    always 3 q heads and 1 k head at T = 45, head_dim 80, B = 2, and 2 q heads with 3 k heads."""
    dtype = _kernel_dtype(student, dtype)
    inputs = _inputs(batch, *heads, seq_len, head_dim, seed=seed, dtype=dtype)
    _check_heads(student, *inputs, tol=TOLERANCE[dtype], owner="heads")


@pytest.mark.exercise("rope_interleaved_triton", points=1)
def test_rope_interleaved_triton_rejects_invalid_inputs(student):
    """The promised ValueErrors of rope_interleaved_triton, with the valid edge cases beside them."""
    _layouts_reject_wrong_ranks_and_sizes(student)
    _layouts_reject_odd_head_dim_and_other_tables(student)
    _layouts_reject_unsupported_dtypes(student)


def _layouts_reject_wrong_ranks_and_sizes(student):
    """Interleaved: a 3-D q, a 5-D k, k with another B or T raise ValueError; the smallest call and GQA work."""
    _rejects_wrong_ranks(student, "rope_interleaved_triton", interleaved=True)
    _rejects_other_batch_or_length(student, "rope_interleaved_triton", interleaved=True)


def _layouts_reject_odd_head_dim_and_other_tables(student):
    """Interleaved: head_dim 7, tables with T + 1 rows, sin unlike cos raise ValueError; (T, D // 2) works."""
    _rejects_odd_head_dim_and_other_tables(student, "rope_interleaved_triton", interleaved=True)


def _layouts_reject_unsupported_dtypes(student):
    """Interleaved: float64 raises ValueError, bfloat16 too under the interpreter; float16 works."""
    _rejects_unsupported_dtypes(student, "rope_interleaved_triton", interleaved=True)


@pytest.mark.exercise("rope_forward_triton", points=1)
def test_rope_forward_triton_rejects_invalid_inputs(student):
    """The promised ValueErrors of rope_forward_triton, with the valid edge cases beside them."""
    _forward_rejects_positions_outside_the_tables(student)
    _forward_rejects_bad_rotary_dim(student)
    _forward_rejects_mismatched_inputs(student)
    _forward_rejects_wrong_ranks_and_sizes(student)
    _forward_rejects_rotary_dim_below_two(student)
    _forward_odd_head_dim_needs_an_even_rotary_dim(student)
    _forward_rejects_negative_positions_and_long_offsets(student)
    _forward_rejects_position_ids_of_wrong_shape(student)
    _forward_rejects_float_position_ids(student)
    _forward_rejects_tables_that_differ(student)
    _forward_rejects_unsupported_dtypes(student)
    _forward_rejects_bad_varlen_and_full_width_tables(student)


def _forward_rejects_bad_varlen_and_full_width_tables(student):
    """cu_seqlens with 4-D q, cu_seqlens without max_seqlen, Hugging Face (B, T, D) tables with position_ids:
    ValueError; a varlen call and a call with (B, T, D) tables work."""
    q, k, cos, sin = _inputs(2, 2, 1, 6, 8, seed=233)
    cu_seqlens = torch.tensor([0, 2, 6], dtype=torch.int32)
    hf_cos, hf_sin = (torch.cat([t, t], -1)[None].expand(2, -1, -1).contiguous() for t in (cos, sin))
    bad = {"cu_seqlens and a 4-D q": ((q, k, cos, sin), dict(cu_seqlens=cu_seqlens, max_seqlen=4)),
           "cu_seqlens and no max_seqlen": ((q[0].transpose(0, 1), k[0].transpose(0, 1), cos, sin),
                                            dict(cu_seqlens=cu_seqlens)),
           "(2, 6, 8) tables and position_ids": ((q, k, hf_cos, hf_sin), dict(position_ids=torch.tensor([0, 1])))}
    for label, (args, kwargs) in bad.items():
        expect_raises(ValueError, student.rope_forward_triton, *args, what=f"rope_forward_triton with {label}",
                      **kwargs)
    _call(student, "rope_forward_triton", q[0].transpose(0, 1), k[0].transpose(0, 1), cos, sin,
          cu_seqlens=cu_seqlens, max_seqlen=4)
    _call(student, "rope_forward_triton", q, k, hf_cos, hf_sin)


def _forward_rejects_positions_outside_the_tables(student):
    """An int offset running past the tables' rows (1020 for 8 tokens, 1024 rows) raises ValueError (a
    tensor's positions are clamped on the device instead: test_forward_clamps_positions_outside_the_tables)."""
    q, k, cos, sin = _decode_inputs(212, seq_len=8)
    expect_raises(ValueError, student.rope_forward_triton, q, k, cos, sin, position_ids=1020,
                  what="rope_forward_triton with positions 1020..1027 and 1024-row tables")


def _forward_rejects_bad_rotary_dim(student):
    """rotary_dim odd, larger than head_dim, or not matching the tables' width raises ValueError."""
    q, k, _, _ = _inputs(1, 2, 1, 8, 16, seed=214)
    for rotary_dim, tables in ((7, _tables(8, 6)), (32, _tables(8, 32)), (8, _tables(8, 16))):
        expect_raises(ValueError, student.rope_forward_triton, q, k, *tables, rotary_dim=rotary_dim,
                      what=f"rope_forward_triton with head_dim 16, rotary_dim {rotary_dim} and "
                           f"({tables[0].shape[0]}, {tables[0].shape[1]}) tables")


def _forward_rejects_mismatched_inputs(student):
    """q and k with different head_dim, and full-width (T, D) tables, are rejected with a ValueError."""
    q, _, cos, sin = _inputs(1, 2, 1, 8, 16, seed=215)
    _, k, _, _ = _inputs(1, 2, 1, 8, 32, seed=216)
    expect_raises(ValueError, student.rope_forward_triton, q, k, cos, sin,
                  what="rope_forward_triton with head_dim 16 for q and 32 for k")
    expect_raises(ValueError, student.rope_forward_triton, q, q, torch.cat([cos, cos], -1),
                  torch.cat([sin, sin], -1), what="rope_forward_triton with (8, 16) tables for head_dim 16")


def _forward_rejects_wrong_ranks_and_sizes(student):
    """A 3-D q, k with another B or T raise ValueError; more k heads (3) than q heads (1) works."""
    q, k, cos, sin = _inputs(2, 2, 1, 6, 8, seed=220)
    expect_raises(ValueError, student.rope_forward_triton, q[0], k, cos, sin,
                  what="rope_forward_triton with a 3-D q (2, 6, 8)")
    expect_raises(ValueError, student.rope_forward_triton, q, k[:1], cos, sin,
                  what="rope_forward_triton with q (2, 2, 6, 8) and k (1, 1, 6, 8)")
    expect_raises(ValueError, student.rope_forward_triton, q, k[:, :, :5], cos, sin,
                  what="rope_forward_triton with q (2, 2, 6, 8) and k (2, 1, 5, 8)")
    _call(student, "rope_forward_triton", *_inputs(2, 1, 3, 6, 8, seed=221), True)


def _forward_rejects_rotary_dim_below_two(student):
    """rotary_dim 0 or -2 raises ValueError; rotary_dim 2 (one pair) works."""
    q, k, _, _ = _inputs(1, 2, 1, 6, 8, seed=223)
    for rotary_dim, width in ((0, 0), (-2, 1)):
        expect_raises(ValueError, student.rope_forward_triton, q, k, *_tables(6, 2 * width), rotary_dim=rotary_dim,
                      what=f"rope_forward_triton with rotary_dim {rotary_dim} and (6, {width}) tables")
    _call(student, "rope_forward_triton", q, k, *_tables(6, 2), True, rotary_dim=2)


def _forward_odd_head_dim_needs_an_even_rotary_dim(student):
    """head_dim 7 without rotary_dim (or rotary_dim 7) raises ValueError; head_dim 7 with rotary_dim 6 works."""
    q, k, _, _ = _inputs(2, 2, 1, 5, 7, seed=224)
    expect_raises(ValueError, student.rope_forward_triton, q, k, *_tables(5, 6),
                  what="rope_forward_triton with head_dim 7, no rotary_dim and (5, 3) tables")
    expect_raises(ValueError, student.rope_forward_triton, q, k, *_tables(5, 6), rotary_dim=7,
                  what="rope_forward_triton with head_dim 7, rotary_dim 7 and (5, 3) tables")
    _call(student, "rope_forward_triton", q, k, *_tables(5, 6), rotary_dim=6)


def _forward_rejects_negative_positions_and_long_offsets(student):
    """An int offset of -1 or one running past the tables raises ValueError; exact fits work."""
    q, k, cos, sin = _decode_inputs(225, n_positions=10, seq_len=4)  # B = 2, T = 4, 10 positions
    bad = {"an int offset of -1": -1, "an int offset of 7 (positions 7..10, 10 rows)": 7}
    for label, position_ids in bad.items():
        expect_raises(ValueError, student.rope_forward_triton, q, k, cos, sin, position_ids=position_ids,
                      what=f"rope_forward_triton with {label} and 10-row tables")
    for position_ids in (6, torch.tensor([[9, 0, 0, 0], [1, 2, 3, 9]])):  # the last row fits
        _call(student, "rope_forward_triton", q, k, cos, sin, position_ids=position_ids)


def _forward_rejects_position_ids_of_wrong_shape(student):
    """position_ids (B, T + 1), (B + 1,) or (B, T, 1) raise ValueError; a (B, T) int32 tensor works."""
    q, k, cos, sin = _decode_inputs(226, n_positions=16, seq_len=4)  # B = 2, T = 4
    bad = {"(2, 5)": torch.zeros(2, 5, dtype=torch.long), "(3,)": torch.zeros(3, dtype=torch.long),
           "(2, 4, 1)": torch.zeros(2, 4, 1, dtype=torch.long)}
    for shape, position_ids in bad.items():
        expect_raises(ValueError, student.rope_forward_triton, q, k, cos, sin, position_ids=position_ids,
                      what=f"rope_forward_triton with position_ids of shape {shape} for B = 2, T = 4")
    _call(student, "rope_forward_triton", q, k, cos, sin,
          position_ids=torch.tensor([[3, 1, 4, 1], [5, 9, 2, 6]], dtype=torch.int32))


def _forward_rejects_float_position_ids(student):
    """Floating-point position_ids (even whole numbers, (B, T) or (B,)) raise ValueError; int64 ones work."""
    q, k, cos, sin = _decode_inputs(227, n_positions=16, seq_len=4)
    rows = torch.tensor([[0.0, 1.0, 2.0, 3.0], [5.0, 6.0, 7.0, 8.0]])
    for label, position_ids in (("(2, 4) float32", rows), ("(2,) float64", torch.tensor([0.0, 5.0]).double())):
        expect_raises(ValueError, student.rope_forward_triton, q, k, cos, sin, position_ids=position_ids,
                      what=f"rope_forward_triton with {label} position_ids")
    _call(student, "rope_forward_triton", q, k, cos, sin, position_ids=rows.long())


def _forward_rejects_tables_that_differ(student):
    """sin of another shape than cos, or 1-D tables, raise ValueError; (T, 1) tables for head_dim 2 work."""
    q, k, cos, sin = _inputs(1, 2, 1, 6, 8, seed=228)
    expect_raises(ValueError, student.rope_forward_triton, q, k, cos, sin[:5],
                  what="rope_forward_triton with cos (6, 4) and sin (5, 4)")
    expect_raises(ValueError, student.rope_forward_triton, q, k, cos, sin[:, :3],
                  what="rope_forward_triton with cos (6, 4) and sin (6, 3)")
    q2, k2, cos2, sin2 = _inputs(1, 2, 1, 6, 2, seed=229)
    expect_raises(ValueError, student.rope_forward_triton, q2, k2, cos2[:, 0], sin2[:, 0],
                  what="rope_forward_triton with 1-D (6,) tables for head_dim 2")
    _call(student, "rope_forward_triton", q2, k2, cos2, sin2, True)


def _forward_rejects_unsupported_dtypes(student):
    """float64 raises ValueError, bfloat16 too under the interpreter (on a GPU it works); float16 works."""
    q, k, cos, sin = _inputs(1, 2, 1, 6, 8, seed=230, dtype=torch.float64)
    expect_raises(ValueError, student.rope_forward_triton, q, k, cos, sin,
                  what="rope_forward_triton with float64 q and k")
    bf16 = _inputs(1, 2, 1, 6, 8, seed=231, dtype=torch.bfloat16)
    _bfloat16_rule(student, lambda: _call(student, "rope_forward_triton", *bf16, position_ids=0),
                   student.rope_forward_triton, *bf16, what="rope_forward_triton with bfloat16 q and k")
    _call(student, "rope_forward_triton", *_inputs(1, 2, 1, 6, 8, seed=232, dtype=torch.float16))
    _rejects_other_devices(student, student.rope_forward_triton, *_inputs(1, 2, 1, 6, 8, seed=232),
                           what="rope_forward_triton")


@pytest.mark.exercise("rope_backward_triton", points=1)
def test_rope_backward_triton_rejects_invalid_inputs(student):
    """The promised ValueErrors of rope_backward_triton, with the valid edge cases beside them."""
    _backward_rejects_wrong_tables(student)
    _backward_rejects_bad_shapes_like_forward(student)
    # Position and dtype errors are rope_forward_triton's to prove: a backward that drops position_ids or
    # casts to float32 loses them, and test_backward_positions_and_partial_rotary and test_backward_float16
    # charge those mistakes (one mistake costs once).


def _backward_rejects_wrong_tables(student):
    """cos/sin of shape (T, D) instead of (T, D // 2) are rejected with a ValueError."""
    g_q, g_k, cos, sin = _inputs(1, 2, 1, 8, 16, seed=37)
    expect_raises(ValueError, student.rope_backward_triton, g_q, g_k, torch.cat([cos, cos], -1),
                  torch.cat([sin, sin], -1), what="rope_backward_triton with (8, 16) tables for head_dim 16")


def _backward_rejects_bad_shapes_like_forward(student):
    """A 3-D grad_q, grad_k with another B, an odd rotary_dim, sin unlike cos: ValueError; the smallest call works."""
    g_q, g_k, cos, sin = _inputs(2, 2, 1, 6, 8, seed=39)
    bad = {"a 3-D grad_q": ((g_q[0], g_k, cos, sin), {}),
           "grad_q (2, 2, 6, 8) and grad_k (1, 1, 6, 8)": ((g_q, g_k[:1], cos, sin), {}),
           "rotary_dim 3 and (6, 1) tables": ((g_q, g_k, *_tables(6, 2)), {"rotary_dim": 3}),
           "cos (6, 4) and sin (6, 3)": ((g_q, g_k, cos, sin[:, :3]), {})}
    for label, (args, kwargs) in bad.items():
        expect_raises(ValueError, student.rope_backward_triton, *args, what=f"rope_backward_triton with {label}",
                      **kwargs)
    _call(student, "rope_backward_triton", *_inputs(1, 1, 1, 1, 2, seed=39), True)  # runs (values: other tests)


@pytest.mark.exercise("TritonRoPE", points=1)
def test_TritonRoPE_rejects_invalid_inputs(student):
    """The promised ValueErrors of TritonRoPE, with the valid edge cases beside them."""
    _autograd_rejects_bad_inputs_like_forward(student)


def _autograd_rejects_bad_inputs_like_forward(student):
    """Through apply: positions past the tables, an odd rotary_dim raise ValueError (dtypes are
    rope_forward_triton's to check: a forward that casts to float32 is test_autograd_float16's)."""
    q, k, cos, sin = _decode_inputs(46, n_positions=10, seq_len=4)
    grads = (torch.ones_like(q), torch.ones_like(k))
    bad = {"position_ids=7 (positions 7..10, 10 rows)": ((q, k, cos, sin, *grads), {"position_ids": 7}),
           "rotary_dim 3 and (10, 1) tables": ((q, k, *_tables(10, 2), *grads), {"rotary_dim": 3})}
    for label, (args, kwargs) in bad.items():
        expect_raises(ValueError, student.call_rope_autograd, student.ref("TritonRoPE"), *args,
                      what=f"TritonRoPE.apply with {label}", **kwargs)
    # positions 6..9 (the last row fits): it runs; the values are the other tests' to check
    _harness(student.call_rope_autograd, student.ref("TritonRoPE"), q, k, cos, sin, *grads,
             position_ids=torch.tensor([6, 6]))
