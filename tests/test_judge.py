"""The judge's feedback when a learner's function raises: the inputs that made it raise, in words."""
from __future__ import annotations

import torch

from grader import codec
from grader.inline import _in_process
from grader.judge import describe, describe_arguments, run_suite
from grader.results import ERROR, PASSED
from tests.conftest import load_solution

PROBE_IN_FLOAT64_ONLY = '''
def position_probe_r2(train_features, train_positions, test_features, test_positions, ridge=1e-3):
    x, t, tt = train_features, train_positions.double(), test_positions.double()
    a = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], 1).double()
    penalty = ridge * torch.eye(a.shape[1], dtype=torch.float64)
    penalty[-1, -1] = 0
    coef = torch.linalg.solve(a.T @ a + penalty, a.T @ t)
    xt = torch.cat([test_features, torch.ones(len(test_features), 1, dtype=test_features.dtype)], 1)
    pred = torch.mv(xt, coef)  # float64 coefficients: raises for features in any other dtype
    return (1 - ((pred - tt) ** 2).sum() / ((tt - tt.mean()) ** 2).sum()).item()
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
    exec(PROBE_IN_FLOAT64_ONLY, namespace)
    results = run_suite("01_permutation_invariance", _in_process(namespace),
                        exercises={"position_probe_r2"})
    assert any(r.status == PASSED for r in results)  # float64 inputs work
    raised = [r for r in results if r.status == ERROR]
    assert raised
    for result in raised:
        inputs, error = result.output.split(" (its docstring says which shapes, dtypes and memory "
                                            "layouts it must accept). ")
        assert inputs.startswith("these inputs made it raise: argument 1: float")
        assert "float64" not in inputs.split(";")[0]  # the features that made it raise
        assert error.startswith("position_probe_r2 raised RuntimeError: ")
    assert any("[failing example: test_probe_r2_over_its_inputs(" in r.output for r in raised)
