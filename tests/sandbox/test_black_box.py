"""Black boxes: trusted callables the learner's code can call across the sandbox boundary, and
nothing else (grader.sandbox.codec.BlackBox, grader.sandbox.child.Box, grader.sandbox.parent._Channel.request).

A diagnose exercise is graded on hidden implementations that run in the grader; the learner's
detector holds a callable that forwards plain values there. These tests prove that no probe of
that callable tells two implementations apart, that the protocol survives what learner code does
around it (exceptions, recursion, threads, a reference kept for later, bad arguments, slowness),
and that the hidden implementations stay out of the sandbox.
"""
from __future__ import annotations

import functools
import time

import pytest
import torch

from grader.sandbox import codec
from grader import inline
from grader.judge.proxy import run_suite
from grader.results import PASSED
from grader.sandbox.parent import Sandbox, StudentRaised

PROBES = '''
import gc, inspect, pickle, copy, torch

def probe(fn):
    """Everything a detector could read off the callable without calling it, as text."""
    handle = None
    refs = gc.get_referents(fn)
    for ref in refs:
        if isinstance(ref, str):
            handle = ref
    out = {}
    for attr in ("__name__", "__qualname__", "__wrapped__", "__closure__", "__dict__", "__defaults__",
                 "__kwdefaults__", "__module__", "__doc__", "__code__", "__globals__", "__self__",
                 "__func__", "func", "args", "keywords", "__slots__", "_handle"):
        try:
            out[attr] = repr(getattr(fn, attr))
        except Exception as exc:
            out[attr] = f"raises {type(exc).__name__}"
    readers = {"dir": dir, "repr": repr, "str": str, "type": type, "vars": vars,
               "getsource": inspect.getsource, "getfile": inspect.getfile, "signature": inspect.signature,
               "getmembers": lambda f: [name for name, _ in inspect.getmembers(f)],
               "pickle": pickle.dumps, "copy": copy.copy, "deepcopy": copy.deepcopy,
               "referents": lambda f: [type(r).__name__ for r in gc.get_referents(f)],
               "isfunction": inspect.isfunction, "callable": callable, "hash-type": lambda f: type(hash(f))}
    for name, reader in readers.items():
        try:
            out[name] = repr(reader(fn))
        except Exception as exc:
            out[name] = f"raises {type(exc).__name__}: {exc}"
    if handle:
        out = {k: v.replace(handle, "<handle>") for k, v in out.items()}
    out["id order"] = repr(id(fn) > id(probe))
    return out

def call(fn, *args, **kwargs):
    return fn(*args, **kwargs)

def call_catching(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return "no error"

def keep(fn):
    global KEPT
    KEPT = fn
    return True

def call_kept(x):
    return KEPT(x)

def call_then_raise(fn, x):
    fn(x)
    raise KeyError("the learner's own mistake")

def deep(fn, n, x):
    return fn(x) + 0 * n if n == 0 else deep(fn, n - 1, x)

def from_a_thread(fn, x):
    import threading
    result = []
    def run():
        try:
            fn(x)
            result.append("no error")
        except Exception as exc:
            result.append(f"{type(exc).__name__}: {exc}")
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return result[0]

def call_with_a_deep_list(fn):
    deep_list = []
    for _ in range(5000):
        deep_list = [deep_list]
    return call_catching(fn, deep_list)

def call_with_an_object(fn):
    return call_catching(fn, object())

def import_hidden():
    try:
        import grader.judge.hidden.rotary_embeddings
    except ImportError as exc:
        return f"ImportError: {exc}"
    return "imported"
'''


def faithful_double(x):
    """A correct implementation."""
    return x * 2


def buggy_double(x, *, bug="off by one"):
    """A broken one, with a keyword the learner must never see."""
    return x * 2 + 1


def public(x):
    """The public signature every implementation of this test shares."""


def slow(x):
    time.sleep(5)
    return x


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox([("cell 1", PROBES)]) as box:
        yield box


def _call(sandbox, name, *args, **kwargs):
    return sandbox.call(name, args, kwargs, timeout=60)


def test_no_probe_tells_two_implementations_apart(sandbox):
    good = codec.BlackBox(faithful_double, public)
    bad = codec.BlackBox(functools.partial(buggy_double, bug="off by one"), public)
    seen_good, seen_bad = _call(sandbox, "probe", good), _call(sandbox, "probe", bad)
    assert seen_good == seen_bad
    assert "faithful" not in str(seen_good) and "buggy" not in str(seen_bad) and "bug" not in str(seen_bad)
    assert seen_good["pickle"].startswith("raises TypeError")
    # Only calling tells them apart.
    x = torch.arange(3.0)
    assert torch.equal(_call(sandbox, "call", good, x), x * 2)
    assert torch.equal(_call(sandbox, "call", bad, x), x * 2 + 1)


def test_the_handle_is_random_per_box():
    handles = {codec.BlackBox(faithful_double, public).handle for _ in range(50)}
    assert len(handles) == 50 and all(len(h) == 32 for h in handles)


def test_hidden_keywords_never_cross_and_cannot_be_overridden(sandbox):
    bad = codec.BlackBox(functools.partial(buggy_double, bug="off by one"), public)
    good = codec.BlackBox(faithful_double, public)
    answers = [_call(sandbox, "call_catching", box, torch.ones(2), bug=None) for box in (good, bad)]
    assert answers[0] == answers[1]
    assert answers[0].startswith("TypeError") and "(x)" in answers[0]


def test_a_bad_call_raises_a_clean_error_that_names_no_implementation(sandbox):
    good = codec.BlackBox(faithful_double, public)
    bad = codec.BlackBox(functools.partial(buggy_double, bug="off by one"), public)
    for args in [(), (torch.ones(2), torch.ones(2)), (None,)]:
        answers = [_call(sandbox, "call_catching", box, *args) for box in (good, bad)]
        assert answers[0] == answers[1], args
        assert "double" not in answers[0] and answers[0] != "no error"
    # A value the codec cannot carry is refused in the learner's own process.
    assert _call(sandbox, "call_with_an_object", good).startswith("TypeError")


def test_a_box_kept_for_a_later_call_refuses(sandbox):
    box = codec.BlackBox(faithful_double, public)
    assert _call(sandbox, "keep", box) is True
    with pytest.raises(StudentRaised, match="only be called while the call that received it"):
        _call(sandbox, "call_kept", torch.ones(2))
    # The pipe is still in step: the next call works.
    assert torch.equal(_call(sandbox, "call", box, torch.ones(2)), torch.full((2,), 2.0))


def test_learner_exceptions_recursion_and_threads_around_a_callback(sandbox):
    box = codec.BlackBox(faithful_double, public)
    with pytest.raises(StudentRaised, match="KeyError"):
        _call(sandbox, "call_then_raise", box, torch.ones(2))
    assert torch.equal(_call(sandbox, "deep", box, 400, torch.ones(2)), torch.full((2,), 2.0))
    assert _call(sandbox, "from_a_thread", box, torch.ones(2)).startswith("RuntimeError")
    assert _call(sandbox, "call_with_a_deep_list", box).split(":")[0] in ("RecursionError", "TypeError")
    assert torch.equal(_call(sandbox, "call", box, torch.ones(2)), torch.full((2,), 2.0))


def test_a_slow_callback_is_stopped_at_its_time_limit(sandbox):
    box = codec.BlackBox(slow, public, timeout=0.5)
    start = time.monotonic()
    answer = _call(sandbox, "call_catching", box, torch.ones(2))
    assert answer.startswith("TimeoutError") and time.monotonic() - start < 4


def test_the_hidden_package_cannot_be_imported_in_the_sandbox(sandbox):
    assert _call(sandbox, "import_hidden").startswith("ImportError")


def test_the_inline_check_serves_boxes_in_process():
    namespace: dict = {}
    exec(PROBES, namespace)
    call, _ = inline._in_process(namespace)("call")
    assert torch.equal(call("call", (codec.BlackBox(faithful_double, public), torch.ones(2)), {}, 10),
                       torch.full((2,), 2.0))


def _prerequisites(suite: str) -> dict:
    """The suite's TRUSTED_PREREQUISITES, read from its source (the suite is not imported here)."""
    import ast
    import importlib

    from grader.judge.proxy import suite_path

    tree = ast.parse(suite_path(suite).read_text())
    modules = {alias.asname or alias.name: importlib.import_module(f"{node.module}.{alias.name}")
               for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == "grader.judge.hidden"
               for alias in node.names}
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "TRUSTED_PREREQUISITES":
            return {later.value: {earlier.value: getattr(modules[function.value.id], function.attr)
                                  for earlier, function in zip(table.keys, table.values)}
                    for later, table in zip(node.value.keys, node.value.values)}
    return {}


@pytest.mark.slow
@pytest.mark.parametrize("suite, later", [("01_permutation_invariance", "self_attention"),
                                          ("02_sinusoidal_encoding", "relative_attention_projections"),
                                          ("02_sinusoidal_encoding", "offset_head_share"),
                                          ("04_rotary_embeddings", "rope_is_faithful"),
                                          ("04_rotary_embeddings", "alibi_bias"),
                                          ("05_context_extension", "passkey_accuracy")])
def test_trusted_prerequisites_pass_their_own_exercises_tests(suite, later):
    """Each trusted version a later exercise is graded with passes every hidden test of its exercise."""
    for name, function in _prerequisites(suite)[later].items():
        results = run_suite(suite, inline._in_process({name: function}), exercises={name})
        assert results and all(r.status == PASSED for r in results), [
            (r.name, r.output[:200]) for r in results if r.status != PASSED]
