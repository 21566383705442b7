"""Property-based hidden tests: the grading profile of hypothesis and strategies for the course.

A named test checks one case the author thought of; a property test draws many cases from an
exercise's whole valid input space (sizes, dtypes, memory layouts, value ranges) and compares the
learner's answer with a float64 reference computed in the test. So that every learner is graded on
the same examples, whatever the machine or the order of the tests, the profile is derandomized
(examples are derived from the test's own source), keeps no example database, never shrinks (a
failing example is reported as drawn, and no time goes into minimising it) and has a fixed example
budget::

    from hypothesis import given, strategies as st
    from grader.judge.properties import grading, seeds, tensor

    @pytest.mark.exercise("apply_rope", points=2)
    @grading(max_examples=12)
    @given(head_dim=st.sampled_from([2, 6, 64]), seed=seeds())
    def test_apply_rope_over_sizes(student, head_dim, seed):
        \"\"\"apply_rope matches the float64 reference for every head_dim.\"\"\"
        ...

Draw small parameters (sizes, seeds, dtype names, layout names) rather than tensors, and build the
tensors from a drawn seed inside the test: the failing example then reads as a short call in the
learner's feedback (``[failing example: test_...(head_dim=6, seed=3)]``).
"""
from __future__ import annotations

from typing import Any

import torch
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from grader.judge.proxy import view

DEFAULT_EXAMPLES = 10
"""Examples per property test unless the test asks for another number. Each example costs one
or a few calls into the sandbox (a few milliseconds each)."""


def grading(max_examples: int = DEFAULT_EXAMPLES) -> settings:
    """The hypothesis settings every property test of a suite uses (a decorator)."""
    return settings(
        max_examples=max_examples, derandomize=True, database=None, deadline=None,
        phases=(Phase.explicit, Phase.generate), report_multiple_bugs=False, print_blob=False,
        suppress_health_check=list(HealthCheck),
    )


def seeds() -> st.SearchStrategy[int]:
    """Seeds for the test's own generator (the tensors are made from them in the test)."""
    return st.integers(min_value=0, max_value=2**31 - 1)


FLOAT_DTYPES = {"float32": torch.float32, "float64": torch.float64,
                "float16": torch.float16, "bfloat16": torch.bfloat16}
"""The floating dtypes a learner's tensors come in, by name."""

LAYOUTS = ("contiguous", "transposed", "heads", "strided")
"""Memory layouts of an argument: a contiguous tensor, or one of :data:`grader.sandbox.codec.VIEW_LAYOUTS`."""


def dtypes(*names: str) -> st.SearchStrategy[str]:
    """Names of floating dtypes (all four unless some are named): draw a name, map it with
    :data:`FLOAT_DTYPES`."""
    return st.sampled_from(names or tuple(FLOAT_DTYPES))


def layouts(*names: str) -> st.SearchStrategy[str]:
    """Names of memory layouts (all of :data:`LAYOUTS` unless some are named)."""
    return st.sampled_from(names or LAYOUTS)


def laid_out(value: Any, layout: str) -> Any:
    """``value`` as it should reach the learner: unchanged if ``contiguous``, else a view."""
    return value if layout == "contiguous" else view(value, layout)


def tensor(seed: int, *shape: int, dtype: torch.dtype = torch.float64, scale: float = 1.0) -> torch.Tensor:
    """A standard-normal tensor of ``shape`` (times ``scale``) made from ``seed``, then cast."""
    generator = torch.Generator().manual_seed(seed)
    return (scale * torch.randn(*shape, generator=generator, dtype=torch.float64)).to(dtype)
