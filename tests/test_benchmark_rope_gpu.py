"""The GPU benchmark's raw record is what notebook 06 reads, and the shipped table keeps its form."""
from __future__ import annotations

import importlib.util
import json

from tests.conftest import ROOT

TABLE = ROOT / "assets" / "gpu06_h100_table.json"


def _script():
    spec = importlib.util.spec_from_file_location("benchmark_rope_gpu", ROOT / "scripts" / "benchmark_rope_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
