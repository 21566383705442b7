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

Where they can be imported, two production kernels are timed beside it on the same tensors' values
and credited with the same useful bytes: Liger-Kernel's ``LigerRopeFunction`` (one program per
token, in place, full-width tables in the inputs' dtype) and flash-attention's Triton
``apply_rotary`` (``flash_attn.ops.triton.rotary``: one call per tensor, half-width float32
tables). Each is given the layout it is written for: both read (B, T, H, D) storage, as a model's
projections leave it (Liger through the (B, H, T, D) view that Hugging Face passes), where the
course's kernel reads (B, H, T, D) storage. Neither is one of the course's packages: the script
skips a column whose package is missing.

Without a CUDA device (or with TRITON_INTERPRET=1) it prints why and exits with status 0:
timings under Triton's interpreter measure Python, not the kernel.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
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


def production_kernels() -> dict:
    """The production RoPE kernels importable here: ``{column: (version, prepare, run)}``.

    ``prepare(cos, sin, dtype)`` turns the half-width float32 (T, D // 2) tables into the ones the
    kernel reads (outside the timing); ``run(q, k, tables)`` rotates q and k stored (B, T, H, D)
    and returns them in that storage. None of them is required.
    """
    from importlib import metadata

    kernels = {}
    try:
        from liger_kernel.ops.rope import LigerRopeFunction
    except Exception as error:  # noqa: BLE001 - a broken optional package only loses its column
        print(f"liger column skipped: {type(error).__name__}: {error}")
    else:
        def liger_tables(cos, sin, dtype):  # full width, in the inputs' dtype, (1, T, D) as HF passes
            return tuple(_full_width(t).to(dtype)[None] for t in (cos, sin))

        def liger(q, k, tables):  # rotates in place, through the (B, H, T, D) view HF passes
            q_rot, k_rot = LigerRopeFunction.apply(q.transpose(1, 2), k.transpose(1, 2), *tables)
            return q_rot.transpose(1, 2), k_rot.transpose(1, 2)

        kernels["liger"] = (metadata.version("liger-kernel"), liger_tables, liger)
    try:
        import flash_attn
        from flash_attn.ops.triton.rotary import apply_rotary
    except Exception as error:  # noqa: BLE001
        print(f"flash_attn column skipped: {type(error).__name__}: {error}")
    else:
        def flash_attn_run(q, k, tables):  # one call per tensor, out of place
            return apply_rotary(q, *tables), apply_rotary(k, *tables)

        kernels["flash_attn"] = (getattr(flash_attn, "__version__", "unknown"),
                                 lambda cos, sin, dtype: (cos, sin), flash_attn_run)
    return kernels


def _full_width(table):
    """A half-width (T, D // 2) table as the full-width (T, D) one of the half-split layout."""
    import torch

    return torch.cat([table, table], dim=-1)


def measure_production(kernels: dict, shape, dtype: str) -> dict:
    """Median milliseconds and the largest error against eager float32 of each production kernel.

    The inputs are :func:`grader.fixtures.gpu_rope_kernel.bandwidth_inputs` (the values
    ``measure_rope_bandwidth`` times), then stored (B, T, H, D).
    """
    import torch
    from triton.testing import do_bench

    from grader.fixtures.gpu_rope_kernel import bandwidth_inputs, rope_eager

    torch_dtype = getattr(torch, dtype)
    q, k, cos, sin = bandwidth_inputs(shape, dtype)
    expected = rope_eager(q.float(), k.float(), _full_width(cos), _full_width(sin))
    out = {"ms": {}, "max_error": {}}
    for name, (_, prepare, run) in kernels.items():
        tables = prepare(cos, sin, torch_dtype)
        q_storage, k_storage = (x.transpose(1, 2).contiguous() for x in (q, k))
        got = run(q_storage, k_storage, tables)
        out["max_error"][name] = max((g.transpose(1, 2).float() - e).abs().max().item()
                                     for g, e in zip(got, expected))
        del got
        out["ms"][name] = do_bench(lambda: run(q_storage, k_storage, tables), return_mode="median")
        del q_storage, k_storage, tables
    del q, k, expected
    torch.cuda.empty_cache()
    return out


def _measure_row(rope_forward_triton, kernels: dict, shape, dtype: str) -> dict:
    """One shape, once: grader.fixtures.gpu_rope_kernel.measure_rope_bandwidth (with baselines) and
    the production kernels (:func:`production_kernels`)."""
    from grader.fixtures.gpu_rope_kernel import measure_rope_bandwidth

    row = measure_rope_bandwidth(rope_forward_triton, shape, dtype, baselines=True)
    if row["max_error"] > 0.1:  # bf16 rounding is about 0.02 on these values; anything larger is a bug
        raise SystemExit(f"rope_forward_triton disagrees with eager PyTorch at {shape}: max error "
                         f"{row['max_error']:.3g}; fix the kernel before benchmarking it")
    row["ms"]["triton_graph"] = _graph_ms(rope_forward_triton, shape, dtype)
    if kernels:
        production = measure_production(kernels, shape, dtype)
        for name, ms in production["ms"].items():
            if production["max_error"][name] > 0.1:
                raise SystemExit(f"{name} disagrees with eager PyTorch at {shape}: max error "
                                 f"{production['max_error'][name]:.3g}; check how it is called")
            row["ms"][name] = ms
        row["production_max_error"] = production["max_error"]
        row["production_versions"] = {name: version for name, (version, _, _) in kernels.items()}
    return row


def _graph_ms(rope_forward_triton, shape, dtype: str) -> float:
    """The kernel's time without the host's share: its launch captured in a CUDA graph and replayed
    (``triton.testing.do_bench_cudagraph``, which does not flush L2 between replays). Beside the
    ``triton`` column it says how much of a small shape's time is spent on the CPU side of a launch
    (the wrapper's checks and Triton's launcher) rather than on the GPU."""
    import torch
    from triton.testing import do_bench_cudagraph

    from grader.fixtures.gpu_rope_kernel import bandwidth_inputs

    q, k, cos, sin = bandwidth_inputs(shape, dtype)
    rope_forward_triton(q, k, cos, sin)  # compiled before the capture
    ms = do_bench_cudagraph(lambda: rope_forward_triton(q, k, cos, sin), return_mode="median")
    del q, k
    torch.cuda.empty_cache()
    return ms


def benchmark(rope_forward_triton, shapes, dtype: str, repeat: int = 3) -> list[dict]:
    """One row per shape: each implementation's median time over ``repeat`` passes over all the shapes.

    A pass measures every shape once (each a median of ``do_bench``'s own runs); repeating whole
    passes shows how much a figure moves from one pass to the next (clocks, the cache's state),
    which ``ms_runs`` keeps and the table prints as the range of the kernel's share of a copy.
    """
    import torch

    itemsize = getattr(torch, dtype).itemsize
    kernels = production_kernels()
    passes = [[_measure_row(rope_forward_triton, kernels, shape, dtype) for shape in shapes]
              for _ in range(repeat)]
    rows = []
    for runs in zip(*passes):
        row = dict(runs[0])
        row["ms_runs"] = {name: [run["ms"][name] for run in runs] for name in runs[0]["ms"]}
        row["ms"] = {name: statistics.median(times) for name, times in row["ms_runs"].items()}
        batch, n_q_heads, n_k_heads, seq_len, head_dim = row["shape"]
        copy_bytes = 2 * batch * (n_q_heads + n_k_heads) * seq_len * head_dim * itemsize  # q and k, read + write
        row["gbps"] = {name: (copy_bytes if name == "copy" else row["bytes"]) / (ms * 1e-3) / 1e9
                       for name, ms in row["ms"].items()}
        row["triton_over_copy_runs"] = [run["ms"]["copy"] / run["ms"]["triton"] for run in runs]
        row["max_error"] = max(run["max_error"] for run in runs)
        rows.append(row)
    return rows


def table(rows) -> str:
    lines = [f"Measured on {rows[0]['device']}, {rows[0]['dtype']}, medians over {len(rows[0]['triton_over_copy_runs'])} passes "
             "of triton.testing.do_bench's medians (range: the kernel's share of a copy in each pass); "
             "GB/s of useful bytes (copy: of its own bytes)",
             f"{'(B, H_q, H_k, T, D)':<24}{'MB':>8}{'copy':>8}{'triton':>8}{'eager':>8}{'compile':>9}"
             f"{'% copy':>8}{'range':>10}{'x eager':>8}{'x compile':>10}{'us':>8}{'graph us':>9}"]
    production = [name for name in ("liger", "flash_attn") if name in rows[0]["gbps"]]
    lines[-1] += "".join(f"{name:>11}" for name in production)
    for row in rows:
        gbps, ms = row["gbps"], row["ms"]
        lines.append(f"{str(tuple(row['shape'])):<24}{row['bytes'] / 1e6:8.1f}{gbps['copy']:8.0f}{gbps['triton']:8.0f}"
                     f"{gbps['eager']:8.0f}{gbps['compile']:9.0f}{gbps['triton'] / gbps['copy']:8.0%}"
                     f"{min(row['triton_over_copy_runs']):5.0%}-{max(row['triton_over_copy_runs']):4.0%}"
                     f"{ms['eager'] / ms['triton']:8.1f}{ms['compile'] / ms['triton']:10.2f}{ms['triton'] * 1e3:8.1f}"
                     f"{ms['triton_graph'] * 1e3:9.1f}"
                     + "".join(f"{gbps[name]:11.0f}" for name in production))
    return "\n".join(lines)


COLUMNS = ("ms: milliseconds, the median over passes (ms_runs: each pass's do_bench median); gbps: GB/s of "
           "one fused pass's useful bytes (copy: of its own bytes); triton_graph: the same kernel's launch "
           "replayed from a CUDA graph (no host overhead, L2 not flushed); liger, flash_attn: production "
           "kernels on (B, T, H, D) storage; triton_over_copy and eager_over_triton are ratios of times")
"""What the raw record's columns mean (its ``columns`` field)."""


def raw_record(rows) -> dict:
    """The measurement as notebook 06 reads it: versions, device, and each row's times and rates."""
    import torch
    import triton

    return {
        "kind": "measured",
        "provenance": "python scripts/benchmark_rope_gpu.py (the solution kernel): for each shape and "
                      "implementation, the median over passes (ms_runs) of triton.testing.do_bench's medians",
        "device": rows[0]["device"], "dtype": rows[0]["dtype"],
        "torch": torch.__version__, "triton": triton.__version__,
        "columns": COLUMNS,
        "rows": [{"shape": list(row["shape"]), "mb": round(row["bytes"] / 1e6, 1), "ms": row["ms"],
                  **({"ms_runs": row["ms_runs"]} if "ms_runs" in row else {}),
                  "gbps": row["gbps"], "max_error": row["max_error"],
                  "triton_over_copy": round(row["gbps"]["triton"] / row["gbps"]["copy"], 2),
                  "eager_over_triton": round(row["ms"]["eager"] / row["ms"]["triton"], 1),
                  **({"production_max_error": row["production_max_error"]} if "production_max_error" in row else {})}
                 for row in rows],
        **({"production_versions": rows[0]["production_versions"]} if "production_versions" in rows[0] else {}),
    }


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 3.6))
    names = ["copy", "triton", *(n for n in ("liger", "flash_attn") if n in rows[0]["gbps"]), "compile", "eager"]
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        ax.bar(np.arange(len(rows)) + (i - (len(names) - 1) / 2) * width, [r["gbps"][name] for r in rows], width,
               label=name)
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
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="passes over all the shapes; each figure is the median of its N passes (default 3)")
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
    rows = benchmark(module.rope_forward_triton, SHAPES, args.dtype, repeat=args.repeat)
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
