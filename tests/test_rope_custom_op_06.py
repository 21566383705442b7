"""Notebook 06's custom operator compiles inside torch.compile(fullgraph=True), on the CPU.

The notebook registers its kernels as ``course06::rope`` with ``torch.library.custom_op`` (a fake
implementation and autograd included) and says that a Llama-style attention block calling it compiles
into one graph; compiling takes seconds, so the notebook does not do it and this test does, under
Triton's interpreter (the operator is opaque to dynamo: its kernels are never traced). ``aot_eager``
runs AOT autograd over the fake implementation without inductor's code generation.
"""
from __future__ import annotations

import importlib.util

import pytest
import torch

from grader.fixtures.gpu_rope_kernel import rope_tables
from grader.notebook.read import read_notebook, sandbox_cells
from tests.conftest import SOLUTIONS

NOTEBOOK = SOLUTIONS / "06_gpu_rope_kernel.ipynb"
MARK = 'torch.library.custom_op("course06::rope"'


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """The solution's setup and exercise cells, then the cell that registers the operator, as a module."""
    import os

    os.environ.setdefault("TRITON_INTERPRET", "1")
    notebook = read_notebook(NOTEBOOK)
    sources = [source for _, source in sandbox_cells(notebook, {"rope_forward_triton"})]
    operator = [cell.source for cell in notebook.cells if cell.cell_type == "code" and MARK in cell.source]
    assert len(operator) == 1, f"{NOTEBOOK.name}: expected one cell that registers course06::rope"
    path = tmp_path_factory.mktemp("rope06") / "rope06_kernels.py"
    path.write_text("\n\n".join(sources + operator) + "\n")  # a file: triton.jit reads the kernels' source
    spec = importlib.util.spec_from_file_location("rope06_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Attention(torch.nn.Module):
    """A Llama-style attention block: q, k, v projections stored (B, T, H, D), RoPE from Hugging Face's
    (B, T, D) tables, grouped-query causal attention, the output projection."""

    def __init__(self, rope, dim=32, n_heads=4, n_kv_heads=2):
        super().__init__()
        self.rope, self.h, self.hk, self.d = rope, n_heads, n_kv_heads, dim // n_heads
        self.q_proj = torch.nn.Linear(dim, n_heads * self.d, bias=False)
        self.k_proj = torch.nn.Linear(dim, n_kv_heads * self.d, bias=False)
        self.v_proj = torch.nn.Linear(dim, n_kv_heads * self.d, bias=False)
        self.o_proj = torch.nn.Linear(n_heads * self.d, dim, bias=False)

    def forward(self, x, cos, sin):
        batch, seq_len, _ = x.shape
        q = self.q_proj(x).view(batch, seq_len, self.h, self.d).transpose(1, 2)   # (B, H, T, D) view
        k = self.k_proj(x).view(batch, seq_len, self.hk, self.d).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq_len, self.hk, self.d).transpose(1, 2)
        q, k = self.rope(q, k, cos, sin)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o_proj(out.transpose(1, 2).reshape(batch, seq_len, -1))


@pytest.mark.slow
def test_an_attention_block_calling_the_operator_compiles_into_one_graph(kernels):
    torch.manual_seed(0)
    block = Attention(kernels.rope_op)
    x = torch.randn(2, 6, 32, requires_grad=True)
    cos, sin = rope_tables(6, 8)
    hf_cos, hf_sin = (torch.cat([t, t], dim=-1)[None].expand(2, -1, -1) for t in (cos, sin))  # (B, T, D)
    eager = block(x, hf_cos, hf_sin)
    eager.square().sum().backward()
    eager_grad, x.grad = x.grad, None

    graphs = []

    def counting_backend(gm, example_inputs):
        graphs.append(gm)
        from torch._dynamo.backends.debugging import aot_eager
        return aot_eager(gm, example_inputs)

    torch._dynamo.reset()
    compiled = torch.compile(block, fullgraph=True, backend=counting_backend)  # a graph break raises
    out = compiled(x, hf_cos, hf_sin)
    out.square().sum().backward()
    assert len(graphs) == 1
    assert any(node.target is torch.ops.course06.rope.default for node in graphs[0].graph.nodes)
    torch.testing.assert_close(out, eager, rtol=0, atol=0)
    torch.testing.assert_close(x.grad, eager_grad, rtol=1e-6, atol=1e-6)


def test_the_operator_passes_opcheck(kernels):
    """Schema, fake implementation, autograd registration and AOT dispatch agree with the kernel: on
    transposed (B, T, H, D) storage with Hugging Face's tables, and on the varlen layout."""
    gen = torch.Generator().manual_seed(1)
    q = torch.randn(2, 5, 2, 8, generator=gen).transpose(1, 2).requires_grad_()  # (B, H, T, D) views
    k = torch.randn(2, 5, 1, 8, generator=gen).transpose(1, 2).requires_grad_()
    cos, sin = rope_tables(5, 8)
    torch.library.opcheck(kernels.rope_op, (q, k, *(torch.cat([t, t], -1).expand(2, 5, 8) for t in (cos, sin))))
    q, k = torch.randn(7, 2, 8, generator=gen), torch.randn(7, 1, 8, generator=gen)  # (total_tokens, H, D)
    cos, sin = rope_tables(16, 8)
    torch.library.opcheck(kernels.rope_op, (q, k, cos, sin), dict(
        cu_seqlens=torch.tensor([0, 3, 7], dtype=torch.int32), max_seqlen=4, position_ids=torch.tensor([0, 5])))
