"""Notebook 06's trusted harness lays out inputs as it says (the hidden tests rely on it), in plain torch."""
from __future__ import annotations

import pytest
import torch

from grader.fixtures import gpu_rope_kernel as harness


def _inputs():
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 3, 5, 8, generator=gen), torch.randn(2, 2, 5, 8, generator=gen)
    cos, sin = harness.rope_tables(5, 8)
    return q, k, cos, sin


def _rope(x, cos, sin, sign=1.0):
    """Half-split RoPE in plain torch (sign -1: the gradient's rotation by -θ)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - sign * x2 * sin, x2 * cos + sign * x1 * sin], dim=-1)


@pytest.mark.parametrize("layout", harness.LAYOUTS)
def test_every_layout_keeps_the_values(layout):
    inputs = _inputs()
    arranged = harness.arrange(*inputs, layout, device=torch.device("cpu"))
    for before, now in zip(inputs, arranged):
        assert now.shape == before.shape and torch.equal(now, before)
    if layout == "strided":  # channel stride 2, an offset, NaN between: a unit-stride kernel reads NaN
        for x in arranged:
            assert x.stride(-1) == 2 and x.storage_offset() == 1
            assert torch.isnan(torch.as_strided(x, (x.numel(),), (1,))).any()
    if layout != "contiguous":
        assert not any(x.is_contiguous() for x in arranged[:2])


def test_the_device_probe_reports_the_cpu_under_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    result, _ = harness.call_rope_rows(harness.kernel_device, torch.zeros(1, 2), torch.ones(1, 1),
                                       torch.zeros(1, 1))
    assert int(result) == 0


class _EagerRoPE(torch.autograd.Function):
    """A stand-in for a learner's TritonRoPE, in plain torch; it checks what it is given."""

    @staticmethod
    def forward(ctx, q, k, cos, sin, interleaved=False, position_ids=None, rotary_dim=None):
        assert q.stride(-1) == 2 and k.stride(-1) == 2  # the strided layout reached the function
        ctx.save_for_backward(cos, sin)
        return _rope(q, cos, sin), _rope(k, cos, sin)

    @staticmethod
    def backward(ctx, grad_q, grad_k):
        cos, sin = ctx.saved_tensors
        return _rope(grad_q, cos, sin, -1.0), _rope(grad_k, cos, sin, -1.0), None, None, None, None, None


def test_autograd_with_strided_leaves_returns_the_gradients_of_q_and_k(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    q, k, cos, sin = _inputs()
    g_q, g_k = torch.ones_like(q), 2 * torch.ones_like(k)
    q_rot, k_rot, d_q, d_k = harness.call_rope_autograd(_EagerRoPE, q, k, cos, sin, g_q, g_k, layout="strided")
    torch.testing.assert_close(q_rot, _rope(q, cos, sin))
    torch.testing.assert_close(k_rot, _rope(k, cos, sin))
    torch.testing.assert_close(d_q, _rope(g_q, cos, sin, -1.0))
    torch.testing.assert_close(d_k, _rope(g_k, cos, sin, -1.0))


def test_host_syncs_names_each_call_that_would_wait_for_the_gpu():
    x = torch.arange(4)

    def syncing(t):
        t.sum().item()
        bool(t.any())
        t.tolist()
        t.cpu()
        t.to("cpu")
        int(t[0])
        return t + 1  # no synchronisation: an op queued on the device

    result, calls = harness.host_syncs(syncing, x)
    assert torch.equal(result, x + 1)
    assert calls == ["Tensor.item", "Tensor.__bool__", "Tensor.tolist", "Tensor.cpu", "Tensor.to", "Tensor.__int__"]
    assert harness.host_syncs(lambda t: (t * 2, t.shape[0] + 1, t.dtype), x)[1] == []


def _rope_like(q, k, cos, sin, interleaved=False, position_ids=None):
    if position_ids is not None and position_ids.max() >= cos.shape[0]:  # bool() of a tensor: a sync
        raise ValueError("position_ids outside the tables")
    return q, k


def test_count_rope_syncs_reports_syncs_and_errors_and_lets_a_stub_raise():
    q, k, cos, sin = _inputs()
    assert harness.count_rope_syncs(_rope_like, q, k, cos, sin) == {"syncs": [], "error": None}
    counted = harness.count_rope_syncs(_rope_like, q, k, cos, sin, position_ids=torch.tensor([9, 0]))
    assert counted == {"syncs": ["Tensor.__bool__"], "error": "ValueError"}

    def stub(*args, **kwargs):
        raise NotImplementedError("rope_forward_triton: replace this line with your implementation")

    with pytest.raises(NotImplementedError):
        harness.count_rope_syncs(stub, q, k, cos, sin)
