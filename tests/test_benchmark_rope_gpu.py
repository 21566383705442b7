"""The GPU benchmark's raw record is what notebook 06 reads, and the shipped table keeps its form."""
from __future__ import annotations

import json

import pytest
import torch

from tests.conftest import ROOT, script_module

TABLE = ROOT / "assets" / "gpu06_h100_table.json"


def _script():
    return script_module("benchmark_rope_gpu")


def _check_form(record: dict) -> None:
    """What notebook 06's section 1 and section 7 read of the record."""
    assert record["kind"] in ("measured", "transcribed") and record["provenance"]
    for key in ("device", "dtype", "torch", "triton"):
        assert isinstance(record[key], str) and record[key]
    shapes = [row["shape"] for row in record["rows"]]
    assert [4, 32, 8, 8192, 128] in shapes and [1, 32, 8, 512, 128] in shapes and [1, 32, 8, 1, 128] in shapes
    for row in record["rows"]:
        assert set(row["gbps"]) >= {"copy", "triton", "eager", "compile"}
        assert row["triton_over_copy"] > 0 and row["eager_over_triton"] > 0


def test_the_raw_record_of_a_run_has_the_form_the_notebook_reads():
    rows = [{"device": "NVIDIA H100 80GB HBM3", "dtype": "bfloat16", "shape": list(shape), "bytes": 1e7,
             "ms": {"copy": 0.01, "triton": 0.02, "eager": 0.08, "compile": 0.03},
             "gbps": {"copy": 2000.0, "triton": 1000.0, "eager": 250.0, "compile": 600.0}, "max_error": 0.01}
            for shape in _script().SHAPES]
    record = json.loads(json.dumps(_script().raw_record(rows)))
    _check_form(record)
    assert record["kind"] == "measured" and record["rows"][0]["ms"]["triton"] == 0.02
    assert record["rows"][0]["eager_over_triton"] == 4.0 and record["rows"][0]["triton_over_copy"] == 0.5


def test_the_shipped_table_says_where_it_comes_from():
    record = json.loads(TABLE.read_text())
    _check_form(record)
    if record["kind"] == "transcribed":
        assert "torch 2.11" in record["provenance"] and "not kept" in record["provenance"]
    else:  # what section 7 prints of a raw record: every pass, the graph replay, the production kernels
        assert set(record["production_versions"]) == {"liger", "flash_attn"}
        for row in record["rows"]:
            runs = row["ms_runs"]
            assert set(runs) == set(row["ms"]) >= {"copy", "triton", "triton_graph", "liger", "flash_attn"}
            assert all(len(times) == len(runs["copy"]) >= 3 for times in runs.values())
            assert all(min(times) <= row["ms"][name] <= max(times) for name, times in runs.items())


def test_without_a_gpu_the_script_fails_with_one_line(monkeypatch, capsys):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    script = _script()
    assert script.main([]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.strip() == script.NO_GPU and "\n" not in err.strip()


def test_each_kernel_is_credited_with_the_bytes_it_moves():
    script = _script()
    shape, itemsize = (2, 4, 2, 8, 16), 2  # B = 2, 6 heads, T = 8, D = 16: 1,536 elements of 2 bytes
    qk = 2 * 2 * 6 * 8 * 16 * itemsize     # every kernel reads and writes q and k once
    tables = 2 * 2 * 8 * 8 * 4             # cos and sin: float32 half rows, gathered per token of each batch
    assert script.bytes_moved("copy", shape, itemsize) == qk
    assert script.bytes_moved("triton", shape, itemsize) == script.bytes_moved("triton_inplace", shape, itemsize) \
        == qk + tables
    assert script.bytes_moved("flash_attn", shape, itemsize) == qk + 2 * tables  # a launch for q, one for k
    liger = script.bytes_moved("liger", shape, itemsize, "bthd")
    assert liger == qk + tables // 2  # half of each full-width row, in the inputs' 2-byte dtype
    assert script.bytes_moved("liger", shape, itemsize, "bhtd") == liger + qk  # its .contiguous() copy
    with pytest.raises(ValueError, match="eager is counted"):
        script.bytes_moved("eager", shape, itemsize)


def test_eager_bytes_count_what_each_op_reads_and_writes():
    x = torch.ones(4, 8)
    assert _script().eager_bytes(lambda t: t * 2, x) == 2 * 32 * 4
    assert _script().eager_bytes(lambda t: (t * 2).transpose(0, 1) + 1, x) == 4 * 32 * 4  # the view moves nothing


def test_the_race_is_printed_for_both_storages_within_100_characters():
    script = _script()
    names = ["copy", "triton", "triton_inplace", "eager", "compile", "liger"]
    row = {"shape": [4, 32, 8, 2048, 128], "ms": {n: 0.05 for n in names}, "graph_ms": {"copy": 0.04, "triton": 0.045},
           "bytes": {n: 1.7e8 for n in names}, "gbps": {n: 3400.0 for n in names},
           "max_error": {n: 0.0 if n == "copy" else 0.0156 for n in names}}
    record = {"device": "NVIDIA H200", "dtype": "bfloat16", "torch": "2.13.0", "triton": "3.9.0",
              "versions": {"liger": "0.8.5"}, "precision": {n: script.PRECISION[n] for n in names},
              "launch_us": {"copy": 4.0, "triton": 9.5, "triton, (B,) offsets": 9.9, "liger": 11.0},
              "runs": {storage: [row] for storage in script.STORAGES}}
    lines = script.race_table(record).splitlines()
    assert max(map(len, lines)) <= 100
    assert sum("stored (B, T, H, D)" in line for line in lines) == 1 and sum("stored (B, H, T, D)" in line
                                                                             for line in lines) == 1
    kernel_lines = [line for line in lines if line.startswith("(4, 32, 8, 2048, 128)")]
    assert len(kernel_lines) == 2 * len(names)
    triton_line = next(line for line in kernel_lines if line.split()[5] == "triton")
    assert "45.0" in triton_line and "1.6e-02" in triton_line and triton_line.endswith("fp32")
    assert any("launch cost" in line for line in lines) and any("(B,) offsets" in line for line in lines)


def test_every_raced_kernel_states_its_precision():
    script = _script()
    assert set(script.GRAPHED) == {"copy", "triton", "liger"}
    for name in ("copy", "triton", "triton_inplace", "liger", "flash_attn", "eager", "compile"):
        assert script.PRECISION[name] and script.PRECISION_SHORT[name]
    with pytest.raises(ValueError, match="storage"):
        script.race_inputs((1, 1, 1, 1, 2), "float32", "bhdt")
