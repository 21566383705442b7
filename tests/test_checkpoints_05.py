"""Notebook 05's shipped checkpoints load safely and reproduce the numbers printed in the notebook.

The model code is taken from the solution notebook itself (its data, model, evaluation and passkey
cells), so the test and the chapter cannot drift apart. The expected losses are the ones printed in
the notebook's tables (3 decimals). Tolerance 0.002 nats: 0.0005 of rounding plus float32
reductions on another CPU or thread count (observed differences below 1e-5); the gaps the chapter
discusses are all above 0.03 nats.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from grader.notebook import read_notebook
from tests.conftest import SOLUTIONS, load_solution

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
CHECKPOINTS = ["ctx05_base", "ctx05_pi_ft", "ctx05_yarn_ft", "ctx05_passkey", "ctx05_passkey_yarn_ft"]
TOLERANCE = 0.002
EXPECTED = {  # (checkpoint, method, scale, length) -> held-out loss printed in the notebook (sections 9 and 11)
    ("ctx05_base", "none", 8.0, 128): 1.416,
    ("ctx05_base", "none", 8.0, 1024): 3.569,
    ("ctx05_base", "NTK-aware", 8.0, 1024): 2.654,
    ("ctx05_base", "YaRN", 8.0, 1024): 1.757,
    ("ctx05_pi_ft", "PI", 8.0, 1024): 2.031,
    ("ctx05_yarn_ft", "YaRN", 8.0, 1024): 1.386,
}


def load_chapter() -> dict:
    """The solution's exercises plus its data, model, evaluation and passkey cells, run in this process."""
    namespace = vars(load_solution("05_context_extension")).copy()
    notebook = read_notebook(SOLUTIONS / "05_context_extension.ipynb")
    wanted = ("VOCAB = ", "class TinyConfig", "def make_rope", "EVAL_TOKENS = ", "ANSWER_CHARS = ")
    cwd = os.getcwd()
    os.chdir(SOLUTIONS)  # the cells read Path("..") / "assets"
    try:
        exec("import time\nfrom dataclasses import dataclass\nfrom pathlib import Path\n"
             "import torch.nn as nn\nimport torch.nn.functional as F\nASSETS = Path('..') / 'assets'\n"
             "torch.set_num_threads(1)\n", namespace)
        for cell in notebook.cells:
            if cell.cell_type == "code" and any(w in cell.source for w in wanted):
                exec(compile(cell.source, "<05 model cell>", "exec"), namespace)
    finally:
        os.chdir(cwd)
    return namespace


@pytest.fixture(scope="module")
def chapter():
    return load_chapter()


def _model(chapter, name):
    model = chapter["TinyRoPELM"](chapter["CFG"])
    model.load_state_dict(torch.load(ASSETS / f"{name}.pt", weights_only=True))
    return model.eval()


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_checkpoint_loads_with_weights_only(chapter, name):
    state = torch.load(ASSETS / f"{name}.pt", weights_only=True)
    model = chapter["TinyRoPELM"](chapter["CFG"])
    model.load_state_dict(state)  # strict: same keys and shapes as the notebook's model
    assert all(t.dtype == torch.float32 for t in state.values())


@pytest.mark.parametrize("key", list(EXPECTED))
def test_checkpoint_reproduces_loss(chapter, key):
    name, method, scale, length = key
    loss = chapter["eval_loss"](_model(chapter, name), chapter["make_rope"](method, scale), length)
    assert abs(loss - EXPECTED[key]) <= TOLERANCE, f"{key}: got {loss:.4f}, expected {EXPECTED[key]:.4f}"


@pytest.mark.parametrize("name, method, length, retrieves", [
    ("ctx05_passkey", "none", 128, True), ("ctx05_passkey", "none", 512, False),
    ("ctx05_passkey_yarn_ft", "YaRN", 1024, True)])
def test_passkey_checkpoints_behave_as_in_the_grid(chapter, name, method, length, retrieves):
    """The retrieval models answer (or fail) as the notebook's passkey grid shows, at depth 0.5."""
    prompt = chapter["passkey_prompt"](length, 0.5, 27182, 0)
    answer = chapter["greedy_answer"](_model(chapter, name), chapter["make_rope"](method, 8.0), prompt)
    assert (answer.strip() == "27182") == retrieves, f"{name} with {method} at {length} answered {answer!r}"
