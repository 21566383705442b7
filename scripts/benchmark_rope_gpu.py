"""Benchmark notebook 06's fused RoPE kernel on a GPU: achieved GB/s against a copy, eager and torch.compile.

Usage:
    python scripts/benchmark_rope_gpu.py [--notebook solutions/06_gpu_rope_kernel.ipynb]
                                         [--dtype bfloat16] [--plot rope_bandwidth.png]

The kernels come from the notebook itself: its ``setup`` and ``exercise`` cells are written to a
temporary module and imported (Triton's JIT needs the functions' source in a file), so the same
command benchmarks the solution or a learner's notebook. Timings use ``triton.testing.do_bench``
(median of repeated runs, L2 flushed between runs) at sizes much larger than the L2 cache.
"Useful bytes" are those a fused kernel must move: read q and k, write the results, read the two
(T, D // 2) tables; every implementation is credited with the same bytes, so GB/s compare times.
The copy row moves its own bytes (read + write of q and k) and is the practical ceiling.

Without a CUDA device (or with TRITON_INTERPRET=1) it prints why and exits with status 0:
timings under Triton's interpreter measure Python, not the kernel.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES = [  # (B, H_q, H_k, T, D): Llama-3-8B-like heads; q alone is 67 MB to 1 GB in bf16 (L2: 50 MB)
    (4, 32, 8, 2048, 128),
    (4, 32, 8, 8192, 128),
    (4, 32, 8, 32768, 128),
    (8, 40, 8, 8192, 128),
]


def load_notebook_kernels(notebook: Path):
    """Import the notebook's setup and exercise cells as a module (with source, for triton.jit)."""
    sys.path.insert(0, str(ROOT))
    from grader.notebook import read_notebook, sandbox_cells

    cells = sandbox_cells(read_notebook(notebook), {"rope_forward_triton"})
    folder = Path(tempfile.mkdtemp(prefix="rope-bench-"))
    path = folder / "rope_kernels.py"
    path.write_text("\n\n".join(source for _, source in cells) + "\n")
    spec = importlib.util.spec_from_file_location("rope_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "rope_forward_triton", None)):
        raise SystemExit(f"{notebook}: no rope_forward_triton defined by its setup/exercise cells")
    return module


def rope_tables(seq_len, head_dim, base=10000.0):
    """Half-width (T, D // 2) float32 cos/sin tables, angles computed in float64."""
    import torch

    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.arange(seq_len, dtype=torch.float64)[:, None] * inv_freq
    return angles.cos().float(), angles.sin().float()


def rotate_half(x):
    import torch

    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_eager(q, k, cos_full, sin_full):
    """Hugging Face's apply_rotary_pos_emb: full-width (T, D) tables, in the inputs' dtype."""
    return q * cos_full + rotate_half(q) * sin_full, k * cos_full + rotate_half(k) * sin_full


def benchmark(rope_forward_triton, shapes, dtype):
    """One row per shape: (shape, useful bytes, {name: GB/s}, {name: ms})."""
    import torch
    from triton.testing import do_bench

    compiled = torch.compile(rope_eager)
    rows = []
    for batch, n_q_heads, n_k_heads, seq_len, head_dim in shapes:
        gen = torch.Generator(device="cuda").manual_seed(0)
        q = torch.randn(batch, n_q_heads, seq_len, head_dim, device="cuda", dtype=dtype, generator=gen)
        k = torch.randn(batch, n_k_heads, seq_len, head_dim, device="cuda", dtype=dtype, generator=gen)
        cos, sin = (t.cuda() for t in rope_tables(seq_len, head_dim))
        cos_full, sin_full = (torch.cat([t, t], dim=-1).to(dtype) for t in (cos, sin))
        nbytes = 2 * (q.numel() + k.numel()) * q.element_size() + 2 * cos.numel() * cos.element_size()
        src = torch.empty(q.numel() + k.numel(), device="cuda", dtype=dtype)
        dst = torch.empty_like(src)
        expected = rope_eager(q.float(), k.float(), cos_full.float(), sin_full.float())
        got = rope_forward_triton(q, k, cos, sin)
        error = max((g.float() - e).abs().max().item() for g, e in zip(got, expected))
        if error > 0.1:  # bf16 rounding is about 0.02 on these values; anything larger is a bug
            raise SystemExit(f"rope_forward_triton disagrees with eager PyTorch at {(batch, n_q_heads, n_k_heads, seq_len, head_dim)}: "
                             f"max error {error:.3g}; fix the kernel before benchmarking it")
        ms = {
            "copy": do_bench(lambda: dst.copy_(src), return_mode="median"),
            "triton": do_bench(lambda: rope_forward_triton(q, k, cos, sin), return_mode="median"),
            "eager": do_bench(lambda: rope_eager(q, k, cos_full, sin_full), return_mode="median"),
            "compile": do_bench(lambda: compiled(q, k, cos_full, sin_full), return_mode="median"),
        }
        copy_bytes = 2 * src.numel() * src.element_size()
        gbps = {name: (copy_bytes if name == "copy" else nbytes) / (t * 1e-3) / 1e9 for name, t in ms.items()}
        rows.append(((batch, n_q_heads, n_k_heads, seq_len, head_dim), nbytes, gbps, ms))
        del q, k, src, dst, got, expected
        torch.cuda.empty_cache()
    return rows


def table(rows, device_name, dtype) -> str:
    lines = [f"{device_name}, {str(dtype).removeprefix('torch.')}; GB/s of useful bytes (copy: of its own bytes)",
             f"{'(B, H_q, H_k, T, D)':<24}{'MB':>8}{'copy':>8}{'triton':>8}{'eager':>8}{'compile':>9}"
             f"{'% copy':>8}{'x eager':>8}{'x compile':>10}"]
    for shape, nbytes, gbps, ms in rows:
        lines.append(f"{str(shape):<24}{nbytes / 1e6:8.0f}{gbps['copy']:8.0f}{gbps['triton']:8.0f}"
                     f"{gbps['eager']:8.0f}{gbps['compile']:9.0f}{gbps['triton'] / gbps['copy']:8.0%}"
                     f"{ms['eager'] / ms['triton']:8.1f}{ms['compile'] / ms['triton']:10.2f}")
    return "\n".join(lines)


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.2
    for i, name in enumerate(["copy", "triton", "compile", "eager"]):
        ax.bar(np.arange(len(rows)) + (i - 1.5) * width, [r[2][name] for r in rows], width, label=name)
    ax.set_xticks(np.arange(len(rows)), [str(r[0]) for r in rows], fontsize=7)
    ax.set_ylabel("GB/s")
    ax.set_title("RoPE of q and k: achieved bandwidth")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", type=Path, default=ROOT / "solutions" / "06_gpu_rope_kernel.ipynb",
                        help="notebook whose rope_forward_triton to benchmark (default: the solution)")
    parser.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    parser.add_argument("--plot", type=Path, metavar="PNG", help="also save a bar chart to this file")
    args = parser.parse_args(argv)

    import torch

    if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available():
        print("No CUDA device (or TRITON_INTERPRET=1): nothing to benchmark. Timings under Triton's "
              "interpreter measure Python, not the kernel; run this script on a machine with a GPU.")
        return 0
    module = load_notebook_kernels(args.notebook)
    dtype = getattr(torch, args.dtype)
    rows = benchmark(module.rope_forward_triton, SHAPES, dtype)
    print(table(rows, torch.cuda.get_device_name(), dtype))
    if args.plot:
        plot(rows, args.plot)
        print(f"plot written to {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
