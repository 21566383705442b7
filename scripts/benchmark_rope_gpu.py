"""Race notebook 06's fused RoPE kernel against a copy, eager, torch.compile and the production kernels.

Usage:
    python scripts/benchmark_rope_gpu.py [--notebook solutions/06_gpu_rope_kernel.ipynb]
                                         [--dtype bfloat16] [--out assets/gpu06_race_h100.json]
    python scripts/benchmark_rope_gpu.py --notebook-table [--repeat 5] [--plot rope_bandwidth.png]
                                         [--out assets/gpu06_h100_table.json]

The kernels come from the notebook itself: its ``setup`` and ``exercise`` cells are written to a
temporary module and imported (Triton's JIT needs the functions' source in a file), so the same
command benchmarks the solution or a learner's notebook.

The race (the default) times every kernel on the same q and k in two runs, stored (B, T, H, D) as a
projection leaves them and (B, H, T, D) (``STORAGES``): the course's kernel out of place and in
place, a device-to-device copy of the same elements, Hugging Face's eager formulation and its
``torch.compile``, and where they can be imported Liger-Kernel's ``LigerRopeFunction`` (in place,
full-width tables in the inputs' dtype; it copies (B, H, T, D) storage into (B, T, H, D) first) and
flash-attention's Triton ``apply_rotary`` (one launch per tensor). Beside each time it prints the
kernel's precision (``PRECISION``) and its largest error against float64 RoPE, and the bytes that
kernel's loads and stores request (``bytes_moved``; eager's counted from its ops), so that each
GB/s is the kernel's own. Every time is taken with a cold L2 (``triton.testing.do_bench`` zeroes a
buffer larger than the L2 before each run), bare launches and, for the copy, the course's kernel and
Liger, CUDA-graph replays of one call (the GPU's time without the host's). The launch cost per call
is the host's time of calls made back to back without synchronising, on a decoding step. ``--out``
writes the raw record (kind "race": the device, every version, every figure) as JSON; keep it in
``assets/`` beside ``gpu06_h100_table.json``.

``--notebook-table`` measures what notebook 06's section 7 prints instead (kind "measured", the
form of ``assets/gpu06_h100_table.json``): through grader.fixtures.gpu_rope_kernel.measure_rope_bandwidth,
GB/s credited with the same useful bytes for every method, each figure the median of ``--repeat``
passes over the shapes.

Without a CUDA device (or with TRITON_INTERPRET=1) it prints one line saying so and exits with
status 1: timings under Triton's interpreter measure Python, not the kernel. Neither production
kernel is one of the course's packages: a column whose package is missing is skipped.
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
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
    ax.set_xticks(np.arange(len(rows)), [str(tuple(r["shape"])) for r in rows], fontsize=9, rotation=20,
                  ha="right")
    ax.set_ylabel("GB/s")
    ax.set_title(f"RoPE of q and k, measured on {rows[0]['device']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# -- the race: every kernel on the same storage ------------------------------------------------------
STORAGES = ("bthd", "bhtd")
"""How q and k are stored for a run of the race: ``bthd`` is (B, T, H, D), as a linear projection
leaves them (every kernel is handed the (B, H, T, D) view that Hugging Face passes, or the storage
itself where it takes (B, T, H, D)); ``bhtd`` is contiguous (B, H, T, D)."""

PRECISION = {
    "copy": "exact: a device-to-device copy of q's and k's elements",
    "triton": "float32 math, rounded once to the inputs' dtype; half-width float32 tables",
    "triton_inplace": "float32 math as triton, written into q and k",
    "liger": "the inputs' dtype: tables and products in it, in place",
    "flash_attn": "float32 math, rounded once; half-width tables; one launch per tensor",
    "eager": "the inputs' dtype: every op rounded (Hugging Face's rotate_half)",
    "compile": "float32 math inside inductor's fused kernel (torch.compile of eager)",
}
"""What each kernel computes in (the errors beside the times follow from it)."""

PRECISION_SHORT = {"copy": "exact", "triton": "fp32", "triton_inplace": "fp32", "liger": "input dtype",
                   "flash_attn": "fp32", "eager": "input dtype", "compile": "fp32"}
""":data:`PRECISION` in a word, for the printed table."""

GRAPHED = ("copy", "triton", "liger")
"""The kernels also timed as CUDA-graph replays (the GPU's time without the host's)."""


def bytes_moved(name: str, shape, itemsize: int, storage: str = "bthd") -> int:
    """Bytes that ``name``'s loads and stores request for one call on ``shape`` = (B, H_q, H_k, T, D)
    with q and k of ``itemsize`` bytes: the HBM traffic when nothing is served from L2.

    Every kernel reads and writes each element of q and k once (in place or not). On top of that:
    the course's kernel gathers the float32 half-width (D // 2) rows of cos and sin once per token of
    every batch element; Liger reads the first half of its full-width rows (in the inputs' dtype) per
    token, and copies q and k into (B, T, H, D) first when they are stored (B, H, T, D) (its wrapper's
    ``.contiguous()``: one more read and write of each); flash-attention's two launches (q, then k) each
    read the float32 half-width rows per token; ``compile`` is counted at one fused pass over q, k and
    the full-width tables in the inputs' dtype (its fusion is inductor's). ``eager`` is not modelled:
    :func:`eager_bytes` counts what its ops read and write.
    """
    batch, n_q_heads, n_k_heads, seq_len, head_dim = shape
    elements = batch * (n_q_heads + n_k_heads) * seq_len * head_dim
    qk = 2 * elements * itemsize
    tokens, half = batch * seq_len, head_dim // 2
    extra = {"copy": 0,
             "triton": 2 * tokens * half * 4,
             "triton_inplace": 2 * tokens * half * 4,
             "liger": 2 * tokens * half * itemsize + (qk if storage == "bhtd" else 0),
             "flash_attn": 2 * 2 * tokens * half * 4,
             "compile": 2 * seq_len * head_dim * itemsize}
    if name not in extra:
        raise ValueError(f"no byte model for {name!r}; known: {', '.join(extra)} (eager is counted, not modelled)")
    return qk + extra[name]


def eager_bytes(run, *args) -> int:
    """Bytes read and written by the ATen ops of ``run(*args)`` (views move nothing), counted once."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    def size(tree):
        return sum(t.numel() * t.element_size() for t in tree_leaves(tree) if isinstance(t, torch.Tensor))

    class Counter(TorchDispatchMode):
        total = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not any(r.alias_info is not None for r in func._schema.returns):
                Counter.total += size((args, kwargs)) + size(out)
            return out

    with Counter():
        run(*args)
    return Counter.total


def race_inputs(shape, dtype: str, storage: str):
    """q (B, H_q, T, D) and k (B, H_k, T, D) as views of ``storage`` on the GPU (fixed seed: the same values
    in both storages), and the float32 half-width (T, D // 2) tables."""
    import torch

    from grader.fixtures.gpu_rope_kernel import rope_tables

    if storage not in STORAGES:
        raise ValueError(f"storage must be one of {STORAGES}, got {storage!r}")
    batch, n_q_heads, n_k_heads, seq_len, head_dim = shape
    gen = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(batch, seq_len, n_q_heads, head_dim, device="cuda", dtype=getattr(torch, dtype), generator=gen)
    k = torch.randn(batch, seq_len, n_k_heads, head_dim, device="cuda", dtype=getattr(torch, dtype), generator=gen)
    q, k = q.transpose(1, 2), k.transpose(1, 2)                        # (B, H, T, D) views of (B, T, H, D)
    if storage == "bhtd":
        q, k = q.contiguous(), k.contiguous()
    cos, sin = (t.cuda() for t in rope_tables(seq_len, head_dim))
    return q, k, cos, sin


def race_kernels(rope_forward_triton) -> dict:
    """``{name: (version, prepare(cos, sin, dtype) -> tables, run(q, k, tables) -> (q_rot, k_rot))}`` for
    every kernel importable here; q and k are (B, H, T, D) views, results the same."""
    import torch

    from grader.fixtures.gpu_rope_kernel import rope_eager

    def half(cos, sin, dtype):
        return cos, sin

    def full(cos, sin, dtype):
        return tuple(torch.cat([t, t], dim=-1).to(dtype) for t in (cos, sin))

    compiled = torch.compile(rope_eager, dynamic=False)  # one graph per shape: no dynamic recompilation
    kernels = {
        "triton": ("course", half, lambda q, k, t: rope_forward_triton(q, k, *t)),
        "triton_inplace": ("course", half, lambda q, k, t: rope_forward_triton(q, k, *t, inplace=True)),
        "eager": (torch.__version__, full, lambda q, k, t: rope_eager(q, k, *t)),
        "compile": (torch.__version__, full, lambda q, k, t: compiled(q, k, *t)),
    }
    for name, (version, prepare, run) in production_kernels().items():
        def on_views(q, k, tables, _run=run):  # production_kernels' runs take and return (B, T, H, D) views
            q_rot, k_rot = _run(q.transpose(1, 2), k.transpose(1, 2), tables)
            return q_rot.transpose(1, 2), k_rot.transpose(1, 2)
        kernels[name] = (version, prepare, on_views)
    return kernels


def reference(q, k, cos, sin):
    """RoPE of q and k in float64 (half-split): every kernel's error is measured against it."""
    import torch

    from grader.fixtures.gpu_rope_kernel import rope_eager

    return rope_eager(q.double(), k.double(), *(torch.cat([t, t], dim=-1).double() for t in (cos, sin)))


def cold_ms(fn) -> float:
    """Median milliseconds of ``fn()`` with a cold L2: ``triton.testing.do_bench`` zeroes a buffer larger
    than the L2 before every run (outside the timed events)."""
    from triton.testing import do_bench

    return do_bench(fn, return_mode="median")


def graph_ms(fn) -> float:
    """Median milliseconds of ``fn`` captured once in a CUDA graph and replayed, with a cold L2 as
    :func:`cold_ms` (``do_bench_cudagraph`` would replay with a warm one): the GPU's time of the call
    without the host's share."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up off the default stream, as torch.cuda.graphs asks
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return cold_ms(graph.replay)


def launch_us(fn, calls: int = 2000) -> float:
    """Host microseconds per call of ``fn``, called back to back without synchronising: the host's share
    of a call (its Python and the launcher), which is the whole cost when the GPU's work is shorter."""
    import torch

    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    host = time.perf_counter() - start
    torch.cuda.synchronize()
    return host / calls * 1e6


def race_row(kernels: dict, shape, dtype: str, storage: str) -> dict:
    """Every kernel of ``kernels`` and a copy on the same q and k stored as ``storage``: each one's max error
    against float64, bytes (:func:`bytes_moved`, eager's counted), cold-L2 time, GB/s, and for
    :data:`GRAPHED` the graph replay's time."""
    import torch

    q, k, cos, sin = race_inputs(shape, dtype, storage)
    expected = reference(q, k, cos, sin)
    itemsize = q.element_size()
    src = torch.empty(q.numel() + k.numel(), device="cuda", dtype=q.dtype)
    dst = torch.empty_like(src)
    runs = {"copy": lambda: dst.copy_(src)}
    row = {"shape": list(shape), "storage": storage, "max_error": {"copy": 0.0}, "ms": {}, "graph_ms": {},
           "bytes": {"copy": bytes_moved("copy", shape, itemsize)}}
    for name, (_, prepare, run) in kernels.items():
        tables = prepare(cos, sin, q.dtype)
        x, y = (q.clone(), k.clone()) if name in ("triton_inplace", "liger") else (q, k)  # clone keeps strides
        got = run(x, y, tables)
        row["max_error"][name] = max((g.double() - e).abs().max().item() for g, e in zip(got, expected))
        row["bytes"][name] = (eager_bytes(run, q, k, tables) if name == "eager"
                              else bytes_moved(name, shape, itemsize, storage))
        runs[name] = functools.partial(run, x, y, tables)  # in place: rotated again each run, same work
    for name, fn in runs.items():
        row["ms"][name] = cold_ms(fn)
        if name in GRAPHED:
            row["graph_ms"][name] = graph_ms(fn)
    row["gbps"] = {name: row["bytes"][name] / (ms * 1e-3) / 1e9 for name, ms in row["ms"].items()}
    del q, k, src, dst, runs, expected
    torch.cuda.empty_cache()
    return row


LAUNCH_SHAPE = (4, 32, 8, 1, 128)
"""A decoding step of a batch of four: the GPU's work is shorter than any launch, so back-to-back calls
measure the host's share alone."""


def launch_costs(kernels: dict, rope_forward_triton, dtype: str) -> dict:
    """Host microseconds per call (:func:`launch_us`) at :data:`LAUNCH_SHAPE` on (B, T, H, D) storage: the
    copy, Liger, and the course's kernel with no positions, an int offset, (B,) offsets and (B, T) ids."""
    import torch

    from grader.fixtures.gpu_rope_kernel import rope_tables

    q, k, _, _ = race_inputs(LAUNCH_SHAPE, dtype, "bthd")
    cos, sin = (t.cuda() for t in rope_tables(4096, LAUNCH_SHAPE[-1]))
    offsets = torch.tensor([0, 100, 2000, 4000], device="cuda")
    src = torch.empty(q.numel() + k.numel(), device="cuda", dtype=q.dtype)
    dst = torch.empty_like(src)
    costs = {"copy": launch_us(lambda: dst.copy_(src)),
             "triton": launch_us(lambda: rope_forward_triton(q, k, cos, sin)),
             "triton, int offset": launch_us(lambda: rope_forward_triton(q, k, cos, sin, position_ids=100)),
             "triton, (B,) offsets": launch_us(lambda: rope_forward_triton(q, k, cos, sin, position_ids=offsets)),
             "triton, (B, T) ids": launch_us(lambda: rope_forward_triton(q, k, cos, sin,
                                                                         position_ids=offsets[:, None]))}
    if "liger" in kernels:
        _, prepare, run = kernels["liger"]
        tables = prepare(cos[:1], sin[:1], q.dtype)
        costs["liger"] = launch_us(lambda: run(q, k, tables))
    return costs


def race(rope_forward_triton, shapes, dtype: str) -> dict:
    """Both storages' rows (:func:`race_row`) and the launch costs, with the device and every version."""
    import torch
    import triton

    kernels = race_kernels(rope_forward_triton)
    return {"kind": "race", "device": torch.cuda.get_device_name(), "dtype": dtype,
            "torch": torch.__version__, "triton": triton.__version__,
            "versions": {name: version for name, (version, _, _) in kernels.items()},
            "precision": {name: PRECISION[name] for name in ("copy", *kernels)},
            "provenance": "python scripts/benchmark_rope_gpu.py --out FILE: the solution's kernel against a copy, "
                          "eager, torch.compile and the production kernels importable there",
            "columns": RACE_COLUMNS,
            "launch_us": launch_costs(kernels, rope_forward_triton, dtype),
            "runs": {storage: [race_row(kernels, shape, dtype, storage) for shape in shapes]
                     for storage in STORAGES}}


RACE_COLUMNS = ("ms: median milliseconds of triton.testing.do_bench with L2 flushed before every run; graph_ms: the "
                "same, each run a CUDA-graph replay of one call; bytes: what the kernel's loads and stores request "
                "(bytes_moved; eager's counted from its ops); gbps: bytes / ms; max_error: largest |result - float64 "
                "RoPE|; launch_us: host microseconds per call, back to back without synchronising")
"""What the race record's fields mean (its ``columns`` field)."""


def race_table(record: dict) -> str:
    """The race as text, lines within 100 characters: per storage, one line per shape and kernel."""
    lines = [f"{record['device']}, {record['dtype']}; torch {record['torch']}, Triton {record['triton']}",
             "versions: " + ", ".join(f"{name} {version}" for name, version in record["versions"].items()
                                      if name in ("liger", "flash_attn")),
             "launch cost: host microseconds per call, back to back without synchronising, B = 4, T = 1",
             *(f"  {name:<24}{us:8.1f}" for name, us in record["launch_us"].items())]
    for storage, rows in record["runs"].items():
        stored = "(B, T, H, D), as a projection leaves them" if storage == "bthd" else "(B, H, T, D)"
        lines += ["", f"q and k stored {stored}; L2 cold in every run",
                  f"{'(B, H_q, H_k, T, D)':<24}{'kernel':<16}{'MB':>9}{'us':>9}{'graph us':>9}{'GB/s':>7}"
                  f"{'max err':>9}  precision"]
        for row in rows:
            for name, ms in row["ms"].items():
                graph = row["graph_ms"].get(name)
                lines.append(f"{str(tuple(row['shape'])):<24}{name:<16}{row['bytes'][name] / 1e6:9.2f}{ms * 1e3:9.1f}"
                             f"{'' if graph is None else f'{graph * 1e3:.1f}':>9}{row['gbps'][name]:7.0f}"
                             f"{row['max_error'][name]:9.1e}  {PRECISION_SHORT.get(name, '')}")
    return "\n".join(lines)


NO_GPU = ("benchmark_rope_gpu.py: no CUDA device here (or TRITON_INTERPRET=1); these timings need a GPU, "
          "run the script on a machine with one")
"""The one line printed (to stderr, exit status 1) where the timings cannot run."""


def gpu_available() -> bool:
    """Whether kernels compile for a CUDA device here (not Triton's interpreter)."""
    import torch

    return os.environ.get("TRITON_INTERPRET") != "1" and torch.cuda.is_available()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", type=Path, default=ROOT / "solutions" / "06_gpu_rope_kernel.ipynb",
                        help="notebook whose rope_forward_triton to benchmark (default: the solution)")
    parser.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    parser.add_argument("--out", type=Path, metavar="JSON",
                        help="also write the raw record (the race: e.g. assets/gpu06_race_h100.json)")
    parser.add_argument("--notebook-table", action="store_true",
                        help="measure the notebook's table instead (the form of assets/gpu06_h100_table.json)")
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="--notebook-table: passes over all the shapes, each figure the median of N (default 3)")
    parser.add_argument("--plot", type=Path, metavar="PNG", help="--notebook-table: also save a bar chart")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    if not gpu_available():
        print(NO_GPU, file=sys.stderr)
        return 1
    module = load_notebook_kernels(args.notebook)
    if args.notebook_table:
        rows = benchmark(module.rope_forward_triton, SHAPES, args.dtype, repeat=args.repeat)
        print(table(rows))
        if args.plot:
            plot(rows, args.plot)
            print(f"plot written to {args.plot}")
        record = raw_record(rows)
    else:
        record = race(module.rope_forward_triton, SHAPES, args.dtype)
        print(race_table(record))
    if args.out:
        args.out.write_text(json.dumps(record, indent=1) + "\n")
        print(f"raw record written to {args.out}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
