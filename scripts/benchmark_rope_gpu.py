"""Benchmark notebook 06's fused RoPE kernel on a GPU: achieved GB/s against a copy, eager and torch.compile.

Usage:
    python scripts/benchmark_rope_gpu.py [--notebook solutions/06_gpu_rope_kernel.ipynb]
                                         [--dtype bfloat16] [--plot rope_bandwidth.png]
                                         [--out assets/gpu06_h100_table.json]

The kernels come from the notebook itself: its ``setup`` and ``exercise`` cells are written to a
temporary module and imported (Triton's JIT needs the functions' source in a file), so the same
command benchmarks the solution or a learner's notebook. Timings use ``triton.testing.do_bench``
(median of repeated runs, L2 flushed between runs) at sizes much larger than the L2 cache.
"Useful bytes" are those a fused kernel must move: read q and k, write the results, read the two
(T, D // 2) tables; every implementation is credited with the same bytes, so GB/s compare times.
The copy column moves its own bytes (read + write of q and k) and is the practical ceiling. The
measurement itself is grader.fixtures.gpu_rope_kernel.measure_rope_bandwidth, the function the
notebook's benchmark cell and the grader's informational test use. The two smallest shapes are
there as caveats: a decoding step (T = 1) is bound by launch latency, and 10 MB fits in L2.

With ``--out`` it also writes the raw measurement as JSON (kind "measured": the device, the
versions of torch and Triton, every row's times in milliseconds and GB/s), the file that
notebook 06 reads for its H100 table and roofline (``assets/gpu06_h100_table.json``).

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
SHAPES = [  # (B, H_q, H_k, T, D): Llama-3-8B-like heads
    (1, 32, 8, 1, 128),        # one decoding step: 0.02 MB, bound by launch latency, not bandwidth
    (1, 32, 8, 512, 128),      # 10.7 MB: fits in an H100's 50 MB L2, so not a measure of HBM bandwidth
    (4, 32, 8, 2048, 128),     # 169 MB and up: beyond L2, these measure HBM bandwidth
    (4, 32, 8, 8192, 128),
    (4, 32, 8, 32768, 128),
    (8, 40, 8, 8192, 128),
]


def load_notebook_kernels(notebook: Path):
    """Import the notebook's setup and exercise cells as a module (with source, for triton.jit)."""
    sys.path.insert(0, str(ROOT))
    from grader.notebook.read import read_notebook, sandbox_cells

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


def benchmark(rope_forward_triton, shapes, dtype: str) -> list[dict]:
    """One row per shape, from grader.fixtures.gpu_rope_kernel.measure_rope_bandwidth (with baselines)."""
    from grader.fixtures.gpu_rope_kernel import measure_rope_bandwidth

    rows = []
    for shape in shapes:
        row = measure_rope_bandwidth(rope_forward_triton, shape, dtype, baselines=True)
        if row["max_error"] > 0.1:  # bf16 rounding is about 0.02 on these values; anything larger is a bug
            raise SystemExit(f"rope_forward_triton disagrees with eager PyTorch at {shape}: max error "
                             f"{row['max_error']:.3g}; fix the kernel before benchmarking it")
        rows.append(row)
    return rows


def table(rows) -> str:
    lines = [f"Measured on {rows[0]['device']}, {rows[0]['dtype']}, medians of triton.testing.do_bench; "
             "GB/s of useful bytes (copy: of its own bytes)",
             f"{'(B, H_q, H_k, T, D)':<24}{'MB':>8}{'copy':>8}{'triton':>8}{'eager':>8}{'compile':>9}"
             f"{'% copy':>8}{'x eager':>8}{'x compile':>10}{'us':>8}"]
    for row in rows:
        gbps, ms = row["gbps"], row["ms"]
        lines.append(f"{str(tuple(row['shape'])):<24}{row['bytes'] / 1e6:8.1f}{gbps['copy']:8.0f}{gbps['triton']:8.0f}"
                     f"{gbps['eager']:8.0f}{gbps['compile']:9.0f}{gbps['triton'] / gbps['copy']:8.0%}"
                     f"{ms['eager'] / ms['triton']:8.1f}{ms['compile'] / ms['triton']:10.2f}{ms['triton'] * 1e3:8.1f}")
    return "\n".join(lines)


def raw_record(rows) -> dict:
    """The measurement as notebook 06 reads it: versions, device, and each row's times and rates."""
    import torch
    import triton

    return {
        "kind": "measured",
        "provenance": "python scripts/benchmark_rope_gpu.py (the solution kernel), medians of "
                      "triton.testing.do_bench",
        "device": rows[0]["device"], "dtype": rows[0]["dtype"],
        "torch": torch.__version__, "triton": triton.__version__,
        "columns": "gbps: GB/s of one fused pass's useful bytes (copy: of its own bytes); "
                   "triton_over_copy and eager_over_triton are ratios of times",
        "rows": [{"shape": list(row["shape"]), "mb": round(row["bytes"] / 1e6, 1), "ms": row["ms"],
                  "gbps": row["gbps"], "max_error": row["max_error"],
                  "triton_over_copy": round(row["gbps"]["triton"] / row["gbps"]["copy"], 2),
                  "eager_over_triton": round(row["ms"]["eager"] / row["ms"]["triton"], 1)}
                 for row in rows],
    }


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.2
    for i, name in enumerate(["copy", "triton", "compile", "eager"]):
        ax.bar(np.arange(len(rows)) + (i - 1.5) * width, [r["gbps"][name] for r in rows], width, label=name)
    ax.set_xticks(np.arange(len(rows)), [str(tuple(r["shape"])) for r in rows], fontsize=6)
    ax.set_ylabel("GB/s")
    ax.set_title(f"RoPE of q and k, measured on {rows[0]['device']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", type=Path, default=ROOT / "solutions" / "06_gpu_rope_kernel.ipynb",
                        help="notebook whose rope_forward_triton to benchmark (default: the solution)")
    parser.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    parser.add_argument("--plot", type=Path, metavar="PNG", help="also save a bar chart to this file")
    parser.add_argument("--out", type=Path, metavar="JSON",
                        help="also write the raw measurement (notebook 06 reads assets/gpu06_h100_table.json)")
    args = parser.parse_args(argv)

    import torch

    if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available():
        print("No CUDA device (or TRITON_INTERPRET=1): nothing to benchmark. Timings under Triton's "
              "interpreter measure Python, not the kernel; run this script on a machine with a GPU.")
        return 0
    module = load_notebook_kernels(args.notebook)
    rows = benchmark(module.rope_forward_triton, SHAPES, args.dtype)
    print(table(rows))
    if args.plot:
        plot(rows, args.plot)
        print(f"plot written to {args.plot}")
    if args.out:
        import json

        args.out.write_text(json.dumps(raw_record(rows), indent=1) + "\n")
        print(f"raw measurement written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
