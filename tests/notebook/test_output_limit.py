"""A cell's printed output is cut at OUTPUT_BYTES_PER_CELL while the cell runs (the execution's
nbval process otherwise holds all of it until the cell's reply: a cell printing without end took
it to 709 MiB in 5 s)."""
from __future__ import annotations

import nbformat


def _stream(parent: str, text: str, name: str = "stdout") -> dict:
    return {"msg_type": "stream", "parent_header": {"msg_id": parent},
            "content": {"name": name, "text": text}}


def test_stream_output_beyond_the_limit_is_cut_then_dropped(monkeypatch):
    from grader.notebook import _nbval_plugin as plugin

    monkeypatch.setattr(plugin, "OUTPUT_BYTES_PER_CELL", 10)

    class Kernel:
        pass

    kernel = Kernel()
    assert plugin._kept(kernel, _stream("a", "123456"))["content"]["text"] == "123456"
    cut = plugin._kept(kernel, _stream("a", "7890abc", "stderr"))["content"]["text"]
    assert cut.startswith("7890\n") and "not kept" in cut  # stdout and stderr count together
    assert plugin._kept(kernel, _stream("a", "more")) is None
    assert plugin._kept(kernel, _stream("b", "another cell")) is not None  # its own 10 bytes
    status = {"msg_type": "status", "parent_header": {"msg_id": "a"},
              "content": {"execution_state": "idle"}}
    assert plugin._kept(kernel, status) is status


def test_a_cell_that_prints_a_lot_is_cut_and_the_next_cells_run(tmp_path):
    """12 MiB printed by one cell: the cell passes (its output cut at 8 MiB) and the next cell runs."""
    from grader.notebook.execute import execute

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("print('x' * (12 << 20))"),
                      nbformat.v4.new_code_cell("assert sum(range(4)) == 6")]
    path = tmp_path / "prints.ipynb"
    nbformat.write(notebook, str(path))
    result = execute(path, cell_timeout=60, budget=120)
    assert result.error is None and not result.failures, result
    assert result.passed == 2
