"""grader.notebook.read.to_python gives what IPython's transformer gives, with or without it."""
from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from grader.notebook.read import code_cells, read_notebook, to_python

ROOT = Path(__file__).resolve().parents[2]

IPYTHON_AND_EDGE_CASES = [
    "x = 1", "x = 1\n", "\n\nx = 1", "  x = 1", "\tx = 1", "", "   ", "# a comment only", "x = 5;",
    "x = 1\r\ny = 2", "x = (1\n%2)", "x = '\0'", "x = 1  # %not a magic",
    "%time x = 1", "%%time\nx = 1", "x = !ls", "!ls", "a?", "?a", "f = lambda: 1\nf?",
    # prompts that IPython strips, some of them valid Python (an annotated subscript, an Ellipsis)
    ">>> x = 1", "In [1]: x = 1", "In [12]: y = 2\n   ...: z = 3", "x = 1\nIn [2]: y = 2", "...",
    "x = ...\n", "Out[1]: 3", "In[1]: x = 1",
]


def _course_cells() -> list[str]:
    paths = sorted((ROOT / "solutions").glob("*.ipynb")) + sorted((ROOT / "notebooks").glob("*.ipynb"))
    return [cell.source for path in paths for _, cell in code_cells(read_notebook(path))]


@pytest.mark.parametrize("source", IPYTHON_AND_EDGE_CASES)
def test_to_python_is_ipythons_transform(source):
    assert to_python.__wrapped__(source) == TransformerManager().transform_cell(source)


def test_to_python_is_ipythons_transform_on_every_course_cell():
    cells = _course_cells()
    assert len(cells) > 100
    transformer = TransformerManager()
    assert [to_python.__wrapped__(s) for s in cells] == [transformer.transform_cell(s) for s in cells]


def test_plain_python_skips_the_transformer(monkeypatch):
    """Plain Python does not pay for IPython's transformer; IPython's own syntax still gets it."""
    import IPython.core.inputtransformer2 as transformers

    class Refused:
        def transform_cell(self, source):
            raise AssertionError(f"the transformer was asked for {source!r}")
    monkeypatch.setattr(transformers, "TransformerManager", Refused)
    assert to_python.__wrapped__("def f(x):\n    return x\n") == "def f(x):\n    return x\n"
    with pytest.raises(AssertionError, match="transformer was asked"):
        to_python.__wrapped__("%time x = 1")
