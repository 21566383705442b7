"""The sandbox sees what a call did to its arguments, and hidden tests can send strided views.

An exercise leaves its inputs unchanged unless its docstring says otherwise; since arguments and
results cross the process boundary as copies, the grader could not see an in-place change unless
the sandbox reported it. These tests run real sandboxes (spawned, as the inline tests do not).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from grader.sandbox import child as _child, codec
from grader import inline
from grader.judge.proxy import StudentProxy, run_suite, view
from grader.results import FAILED, PASSED
from grader.sandbox.parent import ArgumentsModified, Limits, Sandbox, StudentRaised

CELLS = [("setup", "import torch\nimport numpy as np\n"), ("exercise", '''
def halve_in_place(x, scale=2.0):
    x /= scale
    return x

def halve(x, scale=2.0):
    return x / scale

def transpose_in_place(x):
    return x.t_()

def halve_numpy_in_place(arrays):
    arrays["a"] *= 0.5
    return arrays["a"].sum()

def flatten_with_view(x):
    return x.view(-1)

def read_storage(x):
    return torch.as_strided(x, (x.numel(),), (1,))

def nan_preserving(x):
    return x.clone()
''')]


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(CELLS) as box:
        yield box


def test_an_argument_changed_in_place_is_reported_with_its_name(sandbox):
    x = torch.arange(4.0)
    with pytest.raises(ArgumentsModified, match="`x`") as raised:
        sandbox.call("halve_in_place", (x,), {}, timeout=30)
    assert torch.equal(raised.value.result, x / 2)  # what it returned is kept
    assert raised.value.status == FAILED
    assert torch.equal(sandbox.call("halve", (x,), {}, timeout=30), x / 2)


@pytest.mark.parametrize("name, args, modified", [
    ("transpose_in_place", (torch.ones(2, 3),), ("x",)),  # values kept, shape changed
    ("halve_numpy_in_place", ({"a": np.ones(3), "b": np.ones(2)},), ("arrays['a']",)),
    ("halve_in_place", (), ("x",)),
])
def test_changes_inside_containers_and_to_shapes_are_reported(sandbox, name, args, modified):
    kwargs = {} if args else {"x": torch.ones(3, dtype=torch.float16)}
    with pytest.raises(ArgumentsModified) as raised:
        sandbox.call(name, args, kwargs, timeout=30)
    assert raised.value.modified == modified


def test_nan_and_negative_zero_inputs_left_alone_are_not_reported(sandbox):
    x = torch.tensor([float("nan"), -0.0, 1.0]).bfloat16()
    assert torch.equal(sandbox.call("nan_preserving", (x,), {}, timeout=30).isnan(), x.isnan())


def test_a_proxy_may_allow_a_change_the_docstring_promises(sandbox):
    student = StudentProxy(lambda name, args, kwargs, timeout: sandbox.call(
        name, args, kwargs, timeout=timeout))
    with pytest.raises(ArgumentsModified):
        student.halve_in_place(torch.ones(2))
    student.may_modify_arguments = True
    assert torch.equal(student.halve_in_place(torch.ones(2)), torch.full((2,), 0.5))
    assert repr(student) == "student"


def test_strided_views_reach_the_learner_as_views(sandbox):
    x = torch.randn(2, 3, 4)
    assert torch.equal(sandbox.call("flatten_with_view", (x,), {}, timeout=30), x.reshape(-1))
    for layout in ("transposed", "heads"):
        with pytest.raises(StudentRaised, match="view size is not compatible"):
            sandbox.call("flatten_with_view", (view(x, layout),), {}, timeout=30)
    assert torch.equal(sandbox.call("read_storage", (view(x, "strided"),), {}, timeout=30).isnan(),
                       torch.arange(24) % 2 == 1)  # code that assumes a dense storage reads NaN


def test_the_inline_check_reports_changed_arguments_too():
    namespace = _child.fresh_namespace()
    _child.load_cells(namespace, CELLS)
    call, _ = inline._in_process(namespace)("halve_in_place")
    with pytest.raises(ArgumentsModified):
        call("halve_in_place", (torch.ones(2),), {}, 30)


SUITE = '''
import pytest, torch
from hypothesis import example, given, strategies as st
from grader.judge.proxy import expect_close
from grader.judge.properties import grading

@pytest.mark.exercise("halve", points=1)
@grading(max_examples=20)
@given(n=st.integers(1, 50))
@example(n=3)
def test_halve_property(student, n):
    """halve divides by two."""
    x = torch.arange(float(n))
    expect_close(student.halve(x), x / 2, what="halve(x)")

@pytest.mark.exercise("halve_in_place", points=1)
def test_halve_in_place_named(student):
    """halve_in_place leaves x alone."""
    student.halve_in_place(torch.ones(3))
'''


def test_a_failing_property_names_its_example_and_a_changed_argument_fails(tmp_path, monkeypatch):
    import grader.judge.proxy as judge

    (tmp_path / "test_toy.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text((judge.SUITES_DIR / "pytest.ini").read_text())
    monkeypatch.setattr(judge, "SUITES_DIR", tmp_path)
    namespace = _child.fresh_namespace()
    _child.load_cells(namespace, [("setup", "import torch"), ("exercise", '''
def halve(x):
    return x / 2 if x.numel() < 7 else x / 3

def halve_in_place(x):
    return x.mul_(0.5)
''')])
    results = {r.name: r for r in run_suite("toy", inline._in_process(namespace))}
    prop = results["test_halve_property"]
    assert prop.status == FAILED, prop.output
    assert "failing example: test_halve_property(n=" in prop.output and "student" not in prop.output
    named = results["test_halve_in_place_named"]
    assert named.status == FAILED and "changed its input `x` in place" in named.output
    assert {r.status for r in results.values()} == {FAILED}
    namespace["halve"] = lambda x: x / 2 if x.numel() != 3 else x
    explicit = run_suite("toy", inline._in_process(namespace), exercises={"halve"})
    assert "[failing example: test_halve_property(n=3)]" in explicit[0].output
    namespace["halve"] = lambda x: x / 2
    again = run_suite("toy", inline._in_process(namespace), exercises={"halve"})
    assert [r.status for r in again] == [PASSED]


def test_a_template_whose_cells_started_cuda_spawns_each_sandbox_instead_of_forking():
    """A forked copy of a process that started CUDA cannot use it (notebook 06 on a GPU)."""
    from grader.sandbox.parent import Template

    # The loading process records its pid (as it sees it: under bubblewrap, in its own PID
    # namespace); a child forked from it has that process as its parent, a spawned one does not.
    loaded_by = "import os\nLOADED_BY = os.getpid()\n"
    forked = ("exercise", "def forked():\n    return os.getppid() == LOADED_BY\n")
    pretend_cuda = "import torch\ntorch.cuda.is_initialized = lambda: True\n" + loaded_by
    template = Template([("setup", pretend_cuda), forked])
    try:
        template.start()
        assert template.forkable is False
        with Sandbox(template=template) as box:
            assert box.call("forked", (), {}, timeout=30) is False  # spawned, not forked
            assert box.defined == template.defined and "forked" in box.defined
    finally:
        template.close()
    forkable = Template([("setup", loaded_by), forked])
    try:
        forkable.start()
        with Sandbox(template=forkable) as box:
            assert box.call("forked", (), {}, timeout=30) is True
    finally:
        forkable.close()


def test_memory_limit_option_sets_the_learners_address_space():
    import subprocess
    import sys

    from grader.cli import _limits
    from tests.conftest import ROOT

    assert _limits(None, 1.5).memory_bytes == 3 << 29
    bad = subprocess.run([sys.executable, "-m", "grader", "check", "--memory-limit", "lots"],
                         cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "positive number of GiB, got 'lots'" in bad.stderr
    allocate = "def big(gib):\n    return float(np.ones(int(gib * 2**30) // 8).sum())\n"
    with Sandbox([("setup", "import numpy as np"), ("exercise", allocate)],
                 limits=Limits(memory_bytes=1 << 30)) as box:
        with pytest.raises(StudentRaised, match="MemoryError|Unable to allocate"):
            box.call("big", (2,), {}, timeout=30)
