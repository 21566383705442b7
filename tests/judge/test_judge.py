"""The judge's feedback when a learner's function raises: the inputs that made it raise, in words."""
from __future__ import annotations

import torch

from grader.sandbox import codec
from grader.inline import _in_process
from grader.judge.proxy import describe, describe_arguments, run_suite
from grader.results import ERROR, PASSED
from tests.conftest import load_solution

ATTENTION_IN_FLOAT32_ONLY = '''
def self_attention(x, w_q, w_k, w_v, causal=False):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    scores = (q @ k.transpose(-2, -1)).float() / k.shape[-1] ** 0.5
    if causal:
        t = x.shape[-2]
        scores = scores.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v  # float32 weights: raises for values in any other dtype
'''


def test_values_are_described_by_dtype_shape_and_layout():
    x = torch.zeros(2, 3, dtype=torch.float16)
    assert describe(x) == "float16 tensor of shape (2, 3), contiguous"
    assert describe(x.t()) == "float16 tensor of shape (3, 2), not contiguous"
    assert describe(codec.View(x, "transposed")) == (
        "float16 tensor of shape (2, 3), a non-contiguous view laid out transposed")
    assert describe_arguments((x, 3), {"interleaved": False, "name": "x" * 50}) == (
        "argument 1: float16 tensor of shape (2, 3), contiguous; argument 2: 3; "
        "interleaved=False; name=a string of 50 characters")
    assert len(describe_arguments(tuple(range(1000)), {})) <= 500


def test_a_raise_on_a_drawn_example_names_the_inputs_before_the_error():
    namespace = vars(load_solution("01_permutation_invariance")).copy()
    exec(ATTENTION_IN_FLOAT32_ONLY, namespace)
    results = run_suite("01_permutation_invariance", _in_process(namespace), exercises={"self_attention"})
    assert any(r.status == PASSED for r in results)  # float32 inputs work
    raised = [r for r in results if r.status == ERROR]
    assert raised
    for result in raised:
        inputs, error = result.output.split(" (its docstring says which shapes, dtypes and memory "
                                            "layouts it must accept). ")
        assert inputs.startswith("these inputs made it raise: argument 1: float")
        assert "float32" not in inputs.split(";")[0]  # the x that made it raise
        assert error.startswith("self_attention raised RuntimeError: ")
    assert any("[failing example: test_self_attention_over_its_inputs(" in r.output for r in raised)
