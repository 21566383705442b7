"""Judging: the ``student`` proxy, the comparison helpers, and the pytest plugin that runs a suite.

Hidden tests are pytest modules in ``grader/judge/suites/`` (one per notebook, ``test_<notebook>.py``).
They run in the grader's own process. The learner's functions are reached only through the
``student`` fixture, a :class:`StudentProxy` whose calls go to a sandboxed child process (or, for
the inline ``check()``, straight into the notebook's namespace through the same message format).
Every comparison happens here, on data decoded from messages, with the grader's own numpy and
torch: nothing the learner's code does to its own process can change a verdict.

Trusted prerequisites: a suite may map a later exercise to the earlier exercises it calls,
``TRUSTED_PREREQUISITES = {"self_attention": {"scaled_dot_product_attention": trusted_function}}``
(the trusted functions live in :mod:`grader.judge.hidden`). When the grader judges (``run_suite(...,
trusted_prerequisites=True)``), every call of the later exercise's tests runs with each earlier
name rebound, in the learner's namespace, to a black box of the trusted version, so a mistake in
the earlier exercise costs there only. Where the learner's own earlier exercise fails one of its
tests, a passing test of the later one is run once more with the learner's own version (the
first ones, up to :data:`RERUNS_PER_EXERCISE`, until one fails); if it then fails, its feedback
names the earlier exercise as the likely cause.
"""
from __future__ import annotations

import ast
import contextvars
import functools
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import pytest

from grader.sandbox import codec
from grader.errors import GraderError
from grader.results import FAILED, GRADER_ERROR, PASSED, TestResult
from grader.sandbox.parent import ArgumentsModified, ExerciseMissing, StudentError, StudentRaised

SUITES_DIR = Path(__file__).resolve().parent / "suites"
OUTPUT_CHARS = 1200
"""Feedback shown per test is cut to this many characters."""

Call = Callable[[str, tuple, dict, float], Any]
"""How a proxy reaches the learner's code: ``call(name, args, kwargs, timeout) -> value``."""

SOLUTION_CALL_SECONDS = {
    "01_permutation_invariance": {
        "max_equivariance_error": 0.006,
        "permutation_matrix": 0.005,
        "position_probe_r2": 0.015,
        "scaled_dot_product_attention": 0.006,
        "self_attention": 0.014,
        "symmetry_of": 0.024,
        "unchanged_outputs": 0.005,
    },
    "02_sinusoidal_encoding": {
        "best_band": 0.034,
        "breakdown_noise": 0.051,
        "decoding_inv_freq": 0.004,
        "linear_shift_residual": 0.006,
        "offset_head_share": 0.015,
        "offset_matrix": 0.006,
        "relative_attention_projections": 0.013,
        "shiftable_encoding": 0.006,
        "sinusoidal_encoding": 0.006,
    },
    "03_addition_vs_concatenation": {
        "attention_logit_terms": 0.005,
        "embed": 0.005,
        "first_coordinates_carry": 0.003,
        "held_out_accuracy": 0.012,
        "is_fair_protocol": 0.08,
        "overlap_ratio": 0.005,
        "pattern_term": 0.005,
        "share_width": 0.089,
    },
    "04_rotary_embeddings": {
        "alibi_bias": 0.013,
        "alibi_slopes": 0.003,
        "apply_rope": 0.005,
        "diagonal_spread": 0.004,
        "layout_permutation": 0.004,
        "matching_pairs": 0.004,
        "rope_base_for_context": 0.161,
        "rope_cos_sin": 0.005,
        "rope_cost": 0.003,
        "rope_inv_freq": 0.004,
        "rope_is_faithful": 0.015,
        "rope_rotation_matrix": 0.005,
    },
    "05_context_extension": {
        "diagnose_rope": 0.014,
        "dynamic_ntk_base": 0.003,
        "extension_inv_freq": 0.005,
        "fine_tune_verdict": 0.027,
        "linear_scaling_inv_freq": 0.004,
        "llama3_inv_freq": 0.005,
        "ntk_aware_base": 0.003,
        "passkey_accuracy": 0.036,
        "passkey_prompt": 0.011,
        "positional_pairs": 0.014,
        "retrieval_beyond_control": 0.014,
        "yarn_inv_freq": 0.005,
    },
    "06_gpu_rope_kernel": {
        "TritonRoPE": 0.04,
        "rope_backward_triton": 0.025,
        "rope_forward_triton": 0.033,
        "rope_heads_triton": 0.021,
        "rope_interleaved_triton": 0.026,
        "rope_rows_triton": 0.015,
        "sector_traffic": 0.008,
    },
    "07_rope_in_practice": {
        "apply_mrope": 0.007,
        "layer_rope_parameters": 0.003,
        "mla_query_key": 0.007,
        "mrope_position_ids": 0.005,
        "proportional_loses_position": 0.021,
        "rope_init_fn": 0.005,
    },
}
"""Per suite and exercise, the slowest call of the hidden tests into the solution, in wall seconds
(the exercise's own compute and the black boxes' callbacks it makes). Recorded, not guessed:
``python scripts/record_solution_seconds.py --write``, the smallest of its runs, on as quiet a
machine as can be had (the script prints the load beside each notebook's figures)."""

CALL_MARGIN = 10.0
"""How many times the solution's slowest call a learner's call may take: code four times slower,
on a machine two and a half times slower than a quiet one (as
:data:`grader.notebook.execute.MARGIN`)."""

CALL_FLOOR = 5.0
"""The shortest time-out of a call: an exercise the solution answers in milliseconds may still
take seconds on a busy machine (a fresh sandbox's first call touches its pages and loads what torch
loads lazily) or in a learner's plain Python loops."""

DEFAULT_CALL_TIMEOUT = 10.0
"""The time-out of a call of an exercise without a recorded time."""


def call_timeout(solution_seconds: float | None) -> float:
    """Seconds a call may take when the solution's slowest call of the same exercise takes
    ``solution_seconds`` (None: not recorded): :data:`CALL_MARGIN` times it, at least
    :data:`CALL_FLOOR`."""
    if solution_seconds is None:
        return DEFAULT_CALL_TIMEOUT
    return max(CALL_FLOOR, round(CALL_MARGIN * solution_seconds, 1))


# -- the student proxy --------------------------------------------------------------------------
class StudentProxy:
    """The one seam between a hidden test and the learner's code.

    ``student.NAME(*args, **kwargs)`` calls the learner's function ``NAME`` and returns its
    result as data (a torch tensor, a numpy array, a number, a string, a tuple...). Failures
    raise a :class:`grader.sandbox.parent.StudentError` that the plugin turns into a status.
    """

    def __init__(self, call: Call, *, load_errors: Iterable[str] = (),
                 trusted: dict[str, codec.BlackBox] | None = None,
                 timeout: float = DEFAULT_CALL_TIMEOUT) -> None:
        self._call = call
        self._load_errors = list(load_errors)
        self._trusted = dict(trusted or {})
        """Earlier exercises that stand in, as black boxes, for the learner's own during every call
        (trusted prerequisites: see :data:`PREREQUISITES_NAME`); ``call`` then gets ``trusted=``."""
        self.timeout = timeout
        """Seconds a single call may take before the sandbox is killed: by default
        :func:`call_timeout` of the solution's slowest call of the exercise
        (:data:`SOLUTION_CALL_SECONDS`); a test that needs longer sets this."""
        self._probe = False
        """True while a test runs again with the learner's own earlier exercises (see the module
        docstring): ``call`` then gets ``probe=True`` (a time-out there must not count)."""
        self.may_modify_arguments = False
        """Whether a call may change the tensors and arrays it is given. By default a call that
        does fails the test (:class:`grader.sandbox.parent.ArgumentsModified`): exercises leave their
        inputs unchanged unless their docstring says otherwise."""

    def __repr__(self) -> str:
        return "student"  # how a property test's failing example names this argument

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            extra = {"trusted": self._trusted} if self._trusted else {}
            if self._probe:
                extra["probe"] = True
            try:
                return self._call(name, args, kwargs, self.timeout, **extra)
            except StudentRaised as exc:
                exc.inputs = describe_arguments(args, kwargs)
                raise
            except ArgumentsModified as exc:
                if self.may_modify_arguments:
                    return exc.result
                raise
            except ExerciseMissing as exc:
                hint = "; ".join(self._load_errors)
                message = f"{exc}: is the cell that defines it still in the notebook?"
                if hint:
                    message += f" (cells that failed to load: {hint})"
                raise ExerciseMissing(message) from None

        call.__name__ = name
        return call

    def ref(self, name: str, **kwargs: Any) -> codec.StudentRef:
        """The learner's function ``name`` (keyword arguments bound), to pass as an argument."""
        return codec.StudentRef(name, kwargs)

    def fixture(self, name: str, **kwargs: Any) -> codec.FixtureRef:
        """A helper ``grader.fixtures.<name>`` (arguments bound), to pass as an argument: it runs in
        the learner's process, so it must hold nothing a learner may not read (see
        :meth:`black_box` for what must stay hidden)."""
        return codec.FixtureRef(name, kwargs)

    def black_box(self, function: Callable[..., Any], signature: Any, **hidden: Any) -> codec.BlackBox:
        """``function`` (``hidden`` keyword arguments bound) as a black box, to pass as an argument.

        The learner's code receives a callable that runs ``function`` here, in the grader, on the
        plain values it is called with (:class:`grader.sandbox.codec.BlackBox`): neither the function, its
        name, its source nor ``hidden`` enter the learner's process. ``signature`` is the public
        signature the learner calls it with (a callable whose signature is taken, or an
        :class:`inspect.Signature`), the same for every implementation a test hands over.
        """
        target = functools.partial(function, **hidden) if hidden else function
        return codec.BlackBox(target, signature)


INPUT_CHARS = 500
"""The description of the inputs that made a learner's function raise is cut to this length."""


def describe(value: Any) -> str:
    """``value`` in plain words for feedback: a tensor's dtype, shape and memory layout, a short
    number or string as written, anything else by its kind."""
    inner = value.value if isinstance(value, codec.View) else value
    if _is_tensor_like(inner):
        dtype = str(inner.dtype).removeprefix("torch.")
        kind = "tensor" if hasattr(inner, "is_contiguous") else "array"
        if isinstance(value, codec.View):
            layout = f", a non-contiguous view laid out {value.layout}"
        elif kind == "tensor":
            layout = ", contiguous" if inner.is_contiguous() else ", not contiguous"
        else:
            layout = ""
        return f"{dtype} {kind} of shape {tuple(inner.shape)}{layout}"
    if isinstance(value, codec.View):
        return describe(inner)
    if value is None or isinstance(value, (bool, int, float, complex)):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else f"a string of {len(value)} characters"
    if isinstance(value, codec.StudentRef):
        return f"your function {value.name}"
    if isinstance(value, (codec.FixtureRef, codec.BlackBox)):
        return "a function"
    if isinstance(value, (list, tuple)):
        text = repr(value)
        return text if len(text) <= 60 else f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__name__}"


def _is_tensor_like(value: Any) -> bool:
    return isinstance(value, np.ndarray) or _is_torch(value)


def describe_arguments(args: tuple, kwargs: dict) -> str:
    """The arguments of a call in plain words (see :func:`describe`), e.g. ``argument 1: float16
    tensor of shape (2, 8), contiguous; interleaved=False``."""
    parts = [f"argument {index}: {describe(value)}" for index, value in enumerate(args, start=1)]
    parts += [f"{key}={describe(value)}" for key, value in kwargs.items()]
    text = "; ".join(parts) or "no arguments"
    return text if len(text) <= INPUT_CHARS else text[: INPUT_CHARS - 4] + " ..."


def _raised_on(exc: StudentError) -> str:
    """What a learner's function raised, said after the inputs that made it raise."""
    inputs = getattr(exc, "inputs", "")
    if not isinstance(exc, StudentRaised) or not inputs or exc.exc_type == "BadReturn":
        return str(exc)
    return (f"these inputs made it raise: {inputs} (its docstring says which shapes, dtypes and "
            f"memory layouts it must accept). {exc}")


def view(value: Any, layout: str = "strided") -> codec.View:
    """``value`` (tensor or array) to reach the learner's function as a non-contiguous view.

    The function receives the same shape and values, laid out as ``layout`` says (one of
    :data:`grader.sandbox.codec.VIEW_LAYOUTS`: ``"transposed"``, ``"heads"``, ``"strided"``), as the
    transposed or sliced tensors of a real model are. Code that calls ``.view`` where the
    layout does not allow it, or reads the storage directly, fails.
    """
    return codec.View(value, layout)


# -- comparison helpers -------------------------------------------------------------------------
def fail(message: str) -> None:
    """Fail the current test with ``message`` as the learner's feedback."""
    raise AssertionError(message)


def expect_true(condition: bool, message: str) -> None:
    """Fail with ``message`` unless ``condition`` holds."""
    if not condition:
        fail(message)


def _is_torch(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def as_array(value: Any, what: str = "output") -> np.ndarray:
    """``value`` (tensor, array, number, nested list) as a numpy array; fails on anything else."""
    if value is None:
        fail(f"{what} is None: did the function forget to `return`?")
    if _is_torch(value):
        import torch

        if value.dtype == torch.bfloat16:
            value = value.float()
        return value.detach().numpy()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (bool, int, float, complex, list, tuple)):
        try:
            array = np.asarray(value)
        except (ValueError, TypeError):
            array = None
        if array is not None and array.dtype.kind in "biufc":
            return array
    fail(f"{what} should be a tensor or a number, not {type(value).__name__}")
    raise AssertionError  # unreachable: fail() raises


def _shape(value: Any) -> tuple:
    return tuple(value.shape) if hasattr(value, "shape") else ()


def expect_shape(actual: Any, shape: tuple, what: str = "output", mistakes: dict | None = None) -> None:
    """Fail unless ``actual`` has exactly ``shape``.

    ``mistakes`` maps a description of a plausible wrong answer to the shape it returns; if
    ``actual`` has one of those shapes, the feedback names it.
    """
    got = tuple(as_array(actual, what).shape)
    if got != tuple(shape):
        fail(f"{what} has shape {got}, expected {tuple(shape)}"
             + mistake_suffix([d for d, wrong in (mistakes or {}).items() if tuple(wrong) == got]))


def expect_dtype(actual: Any, dtype: Any, what: str = "output") -> None:
    """Fail unless ``actual`` is a tensor (for a torch dtype) or array of exactly ``dtype``."""
    import torch

    if isinstance(dtype, torch.dtype):
        if not isinstance(actual, torch.Tensor):
            fail(f"{what} should be a torch tensor of dtype {dtype}, not {type(actual).__name__}")
        if actual.dtype != dtype:
            fail(f"{what} has dtype {actual.dtype}, expected {dtype}")
        return
    got = as_array(actual, what).dtype
    if got != np.dtype(dtype):
        fail(f"{what} has dtype {got}, expected {np.dtype(dtype)}")


def _matching_mistakes(actual: np.ndarray, mistakes: dict | None, rtol: float, atol: float,
                       equal: bool) -> list[str]:
    found = []
    for description, wrong in (mistakes or {}).items():
        wrong = np.asarray(as_array(wrong, "reference"), dtype=np.result_type(float, actual.dtype)
                           if actual.dtype.kind != "b" else bool)
        if wrong.shape != actual.shape:
            continue
        same = (np.array_equal(actual, wrong) if equal
                else np.allclose(actual, wrong, rtol=rtol, atol=atol, equal_nan=True))
        if same:
            found.append(description)
    return found


def run_store(request: pytest.FixtureRequest, key: pytest.StashKey[dict]) -> dict:
    """A dict kept under ``key`` for the whole pytest run of a suite, where hidden tests keep the
    learner's answers that later tests of the run read again (:func:`asked_once`). It holds one
    learner's answers because a run of a suite judges one learner (:func:`run_suite`); judging
    several in one run would need a store per learner."""
    return request.config.stash.setdefault(key, {})


def asked_once(store: dict | None, case: Any, ask: Callable[[], Any]) -> Any:
    """The learner's answer for ``case``: read from ``store`` where a test of this run already got
    it, else ``ask()``, kept there. Only answers are kept: where ``ask`` raises, nothing is, and the
    next test asks again. ``store`` None: asked every time."""
    if store is not None and case in store:
        return store[case]
    got = ask()
    if store is not None:
        store[case] = got
    return got


def mistake_suffix(names: list[str]) -> str:
    """The end of a failure message that names the first of ``names``, the catalogued mistakes the
    learner's answer matches ('' if none); grader/report/render.py reads the mistake back from it."""
    return f"; this is what you get with: {names[0]}" if names else ""


IN_PUBLIC_CHECK = contextvars.ContextVar("in_public_check", default=False)
"""True while a public check runs (:class:`JudgePlugin` sets it). A public check accepts no wrong
answer that its own inputs reveal (DESIGN.md: it never passes an answer the hidden tests fail on
those inputs), so :func:`expect_close` ignores ``accepted`` there: a mistake a hidden test owns
costs that test and the public check that shows it."""


def expect_close(actual: Any, expected: Any, *, rtol: float = 1e-5, atol: float = 1e-6,
                 what: str = "output", mistakes: dict | None = None,
                 accepted: Iterable[Any] = ()) -> None:
    """Fail unless ``actual`` matches ``expected`` elementwise within ``atol + rtol*|expected|``.

    ``mistakes`` maps a description of a plausible wrong answer to what it would return; if
    ``actual`` matches one of them (same tolerance), the feedback names it. ``accepted`` are
    wrong answers this test lets pass (same tolerance, NaN equal to NaN) because another test
    charges them: one mistake costs once. A public check accepts none (:data:`IN_PUBLIC_CHECK`).
    """
    got = as_array(actual, what)
    if not IN_PUBLIC_CHECK.get() and _matching_mistakes(got, dict(enumerate(accepted)), rtol, atol, False):
        return
    want = np.asarray(as_array(expected, "reference"))
    if got.shape != want.shape:
        names = [d for d, w in (mistakes or {}).items() if _shape(as_array(w)) == got.shape]
        fail(f"{what} has shape {tuple(got.shape)}, expected {tuple(want.shape)}"
             + mistake_suffix(names))
    got64 = got.astype(np.complex128 if got.dtype.kind == "c" or want.dtype.kind == "c"
                       else np.float64)
    want64 = want.astype(got64.dtype)
    if not np.all(np.isfinite(got64)) and np.all(np.isfinite(want64)):
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(got64))[0])
        fail(f"{what} contains {got64[index]} at index {index} where a finite value was expected"
             + mistake_suffix(_matching_mistakes(got64, mistakes, rtol, atol, False)))
    if np.allclose(got64, want64, rtol=rtol, atol=atol, equal_nan=True):
        return
    error = np.abs(got64 - want64)
    error = np.where(np.isnan(error), np.inf, error)
    index = np.unravel_index(int(np.argmax(error)), error.shape) if error.ndim else ()
    index = tuple(int(i) for i in index)
    fail(f"{what} differs from the reference: max abs error {float(np.max(error)):.3g} at index "
         f"{index} (got {_fmt(got64[index])}, expected {_fmt(want64[index])}; "
         f"tolerance atol={atol:g}, rtol={rtol:g})"
         + mistake_suffix(_matching_mistakes(got64, mistakes, rtol, atol, False)))


def _fmt(value: Any) -> str:
    if isinstance(value, (complex, np.complexfloating)):
        return f"{complex(value):.6g}"
    return f"{float(value):.6g}"


def expect_finite(actual: Any, what: str = "output") -> np.ndarray:
    """Fail, naming the value, unless every number in ``actual`` (a learner's number, tensor or
    array) is finite; returns it as an array. A NaN or an infinity never passes: a check written
    ``abs(got - want) > tol`` is False for NaN, so it would."""
    got = as_array(actual, what)
    if got.dtype.kind in "fc" and not np.all(np.isfinite(got)):
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(got))[0]) if got.ndim else ()
        where = f" at index {index}" if got.ndim else ""
        fail(f"{what} is {got[index]!r}{where}: not a finite number (NaN and infinities never pass)")
    return got


def within(actual: Any, expected: float, *, atol: float = 0.0, rtol: float = 0.0,
           what: str = "output") -> bool:
    """Whether the learner's number ``actual`` lies within ``atol + rtol * |expected|`` of
    ``expected``: the one comparison of a learner's scalar answer (the caller words the failure).
    A NaN or an infinity fails the test here, named (:func:`expect_finite`), instead of comparing."""
    got = expect_finite(actual, what)
    if got.size != 1:
        fail(f"{what} should be one number, not an array of shape {tuple(got.shape)}")
    value, want = float(got.reshape(-1)[0].real), float(expected)
    return abs(value - want) <= atol + rtol * abs(want)


def expect_equal(actual: Any, expected: Any, *, what: str = "output",
                 mistakes: dict | None = None) -> None:
    """Fail unless ``actual`` equals ``expected`` exactly (arrays elementwise, same shape)."""
    if isinstance(expected, str) or isinstance(actual, str):
        if actual != expected:
            fail(f"{what} is {actual!r}, expected {expected!r}")
        return
    got = as_array(actual, what)
    want = np.asarray(as_array(expected, "reference"))
    if got.shape != want.shape:
        fail(f"{what} has shape {tuple(got.shape)}, expected {tuple(want.shape)}")
    if np.array_equal(got, want):
        return
    index = tuple(int(i) for i in np.argwhere(got != want)[0]) if got.ndim else ()
    fail(f"{what} differs from the reference at index {index} (got {got[index]!r}, expected "
         f"{want[index]!r})" + mistake_suffix(_matching_mistakes(got, mistakes, 0, 0, True)))


def expect_raises(exception: type[BaseException] | str, function: Callable[..., Any],
                  *args: Any, what: str | None = None, **kwargs: Any) -> str:
    """Call ``function`` (a ``student.NAME``) and fail unless it raises ``exception``.

    Returns the exception's message so a test can check it says something useful.
    """
    name = exception if isinstance(exception, str) else exception.__name__
    call = what or f"{getattr(function, '__name__', 'the function')}(...)"
    try:
        function(*args, **kwargs)
    except StudentRaised as exc:
        if name in exc.mro:
            return str(exc)
        fail(f"{call} should raise {name}, but raised {exc.exc_type}: {exc}")
    fail(f"{call} should raise {name}, but returned normally")
    return ""  # unreachable


def expect_no_value_error(function: Callable[..., Any], *args: Any, what: str) -> None:
    """Call ``function`` on a valid input and fail only if it raises ValueError (a promised-error
    test's valid edge: the value tests judge what it returns, and any other exception is theirs)."""
    try:
        function(*args)
    except StudentRaised as exc:
        if "ValueError" in exc.mro:
            fail(f"{what} raised ValueError, but the input is valid: {exc}")


# -- running a suite ----------------------------------------------------------------------------
def suite_path(suite: str) -> Path:
    """The hidden-test module of a suite, e.g. ``grader/judge/suites/test_01_permutation_invariance.py``."""
    return SUITES_DIR / f"test_{suite}.py"


def known_suites() -> list[str]:
    """Every suite that has a hidden-test module."""
    return sorted(p.stem.removeprefix("test_") for p in SUITES_DIR.glob("test_*.py"))


_EXERCISE_MARK = re.compile(r"mark\.exercise\(\s*[\"']([^\"']+)[\"']")
"""The exercise name of a ``@pytest.mark.exercise("name", ...)`` in a suite's source."""


def suite_exercises(suite: str) -> set[str]:
    """The exercise names a suite's tests are marked with (read from its source, not imported)."""
    return set(_EXERCISE_MARK.findall(suite_path(suite).read_text()))


def exercise_order(suite: str) -> list[str]:
    """The suite's exercises in the notebook's order (read from its source, not imported).

    A suite records it as ``EXERCISE_ORDER``, the order of the exercise cells of its solution
    notebook (``tests/judge/test_suites.py`` holds the two together); without one, the order in which
    its tests first name each exercise. Reports number and list exercises in this order.
    """
    return list(_order_in(suite_path(suite).read_text()))


@functools.lru_cache(maxsize=64)
def _order_in(source: str) -> tuple[str, ...]:
    """:func:`exercise_order` of a suite's source; cached by the source, since parsing a suite
    costs tens of milliseconds and every grading asks twice."""
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "EXERCISE_ORDER"):
            return tuple(ast.literal_eval(node.value))
    return tuple(dict.fromkeys(_EXERCISE_MARK.findall(source)))


def _exercise_marker(item: pytest.Item):
    marker = item.get_closest_marker("exercise")
    if marker is None or not marker.args:
        raise GraderError(f"{item.nodeid}: every hidden test needs @pytest.mark.exercise(name, ...)")
    return marker.args[0], float(marker.kwargs.get("points", 1)), bool(marker.kwargs.get("public", False))


EXAMPLE_CHARS = 400
"""A property test's failing example is cut to this many characters in the feedback."""


_EXAMPLE_NOTES = ("Failing test case:", "Failing explicit example:", "Falsifying example:",
                  "Falsifying explicit example:")
"""How hypothesis begins the note that holds a failing example (newer and older wordings)."""


def _first_leaf(exc: BaseException) -> BaseException:
    """The first exception inside a group (how hypothesis reports a failure it saw only once)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _example(exc: BaseException) -> str:
    """The failing example hypothesis noted on ``exc``, as one short clause (or nothing)."""
    for note in getattr(exc, "__notes__", ()):
        prefix = next((p for p in _EXAMPLE_NOTES if note.startswith(p)), None)
        if prefix is not None:
            text = " ".join(note.removeprefix(prefix).split())
            text = text.replace("( ", "(").replace(", )", ")").replace("student=student, ", "")
            if len(text) > EXAMPLE_CHARS:
                text = text[: EXAMPLE_CHARS - 5] + " ...)"
            return f" [failing example: {text}]"
    return ""


def _bounded(text: str) -> str:
    text = text.strip()
    return text if len(text) <= OUTPUT_CHARS else text[: OUTPUT_CHARS - 15] + " ... (cut)"


PREREQUISITES_NAME = "TRUSTED_PREREQUISITES"
"""The suite-level name of ``{later exercise: {earlier exercise: trusted function}}`` (see the
module docstring); each trusted function has the earlier exercise's public signature."""

RERUNS_PER_EXERCISE = 2
"""Passing tests of a later exercise run again with the learner's own earlier exercise, at most
this many per grading, until one fails (its feedback then names the cause)."""

_OWN_FAILURE = pytest.StashKey[tuple]()
"""On a test item: (earlier exercises, failure) when it fails with the learner's own versions."""


class JudgePlugin:
    """Runs one suite's tests against one learner and records a :class:`TestResult` per test."""

    def __init__(self, connect: Callable[[str], tuple[Call, list[str]]], *,
                 exercises: set[str] | None = None, public_only: bool = False,
                 order: list[str] = (), trusted_prerequisites: bool = False,
                 call_seconds: dict[str, float] | None = None) -> None:
        self._connect = connect
        self._call_seconds = dict(call_seconds or {})
        """The solution's slowest call per exercise (:data:`SOLUTION_CALL_SECONDS` of the suite)."""
        self._prerequisites = trusted_prerequisites
        self._exercises = exercises
        self._public_only = public_only
        self._order = {name: index for index, name in enumerate(order)}
        self.results: list[TestResult] = []
        self.collection_errors: list[str] = []
        self._reruns: dict[str, int] = {}

    def pytest_configure(self, config: pytest.Config) -> None:
        # The learner's feedback is built from the exception itself (:meth:`_result`), so
        # pytest's long traceback of a failure, a fifth of a second each with the source read
        # and the arguments printed, would be computed for nobody: the plain style costs nothing.
        config.option.tbstyle = "no"

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors.append(f"{report.nodeid}: {report.longreprtext[-800:]}")

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list) -> None:
        keep, drop = [], []
        for item in items:
            name, _, public = _exercise_marker(item)
            wanted = (self._exercises is None or name in self._exercises) and (
                public or not self._public_only)
            (keep if wanted else drop).append(item)
        # The notebook's order of exercises (a stable sort keeps each exercise's tests in the
        # suite's order): results, and so every report, follow the notebook.
        last = len(self._order)
        keep.sort(key=lambda item: self._order.get(_exercise_marker(item)[0], last))
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)

    @pytest.fixture
    def student(self, request: pytest.FixtureRequest) -> StudentProxy:
        name, _, _ = _exercise_marker(request.node)
        call, load_errors = self._connect(name)
        trusted = {}
        if self._prerequisites:
            table = getattr(request.module, PREREQUISITES_NAME, {}).get(name, {})
            trusted = {earlier: codec.BlackBox(function, function) for earlier, function in table.items()}
        return StudentProxy(call, load_errors=load_errors, trusted=trusted,
                            timeout=call_timeout(self._call_seconds.get(name)))

    def _failed(self, exercise: str) -> bool:
        return any(r.exercise == exercise and r.status != PASSED for r in self.results)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        token = IN_PUBLIC_CHECK.set(_exercise_marker(item)[2])
        try:
            return (yield from self._call_and_probe(item))
        finally:
            IN_PUBLIC_CHECK.reset(token)

    def _call_and_probe(self, item: pytest.Item):
        result = yield  # raises when the test failed: then the later exercise has a mistake of its own
        proxy = getattr(item, "funcargs", {}).get("student")
        if isinstance(proxy, StudentProxy) and proxy._trusted:
            own = [name for name in proxy._trusted if self._failed(name)]
            exercise = _exercise_marker(item)[0]
            tries = self._reruns.get(exercise, 0)
            if own and 0 <= tries < RERUNS_PER_EXERCISE:
                self._reruns[exercise] = tries + 1
                if self._with_own(item, proxy, own):
                    self._reruns[exercise] = -1  # one test that names the cause is enough
        return result

    def _with_own(self, item: pytest.Item, proxy: StudentProxy, own: list[str]) -> bool:
        """Run ``item`` again with the learner's own ``own`` exercises; remember how it failed.
        True if it failed."""
        saved = proxy._trusted
        proxy._trusted = {name: box for name, box in saved.items() if name not in own}
        proxy._probe = True
        try:
            item.runtest()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - any failure of the second run is the clue
            leaf = _first_leaf(exc)
            item.stash[_OWN_FAILURE] = (own, " ".join(str(leaf).split())[:300])
            return True
        finally:
            proxy._trusted, proxy._probe = saved, False
        return False

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = yield
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.results.append(self._result(item, call))
        return report

    def _result(self, item: pytest.Item, call: pytest.CallInfo) -> TestResult:
        exercise, points, public = _exercise_marker(item)
        doc = (getattr(item, "obj", None).__doc__ or "").strip().splitlines()
        result = TestResult(exercise=exercise, name=item.name, description=doc[0] if doc else "",
                            max_score=points, status=PASSED, public=public)
        # What a test reports about a passing run (an informational benchmark's figures) comes
        # from pytest's record_property("output", ...).
        recorded = "\n".join(str(v) for k, v in getattr(item, "user_properties", ()) if k == "output")
        excinfo = call.excinfo
        if excinfo is None:
            result.output = _bounded(recorded)
            if _OWN_FAILURE in item.stash:
                own, failure = item.stash[_OWN_FAILURE]
                names = " and ".join(f"`{name}`" for name in own)
                result.output = _bounded(
                    f"passed, graded with the course's own {names} in place of yours; with yours this "
                    f"test fails, so your {names} is the likely cause: fix its failing tests first "
                    f"(with yours: {failure})")
            return result
        exc = _first_leaf(excinfo.value)
        if isinstance(exc, StudentError):
            result.status, result.output = exc.status, _bounded(_raised_on(exc) + _example(exc))
        elif isinstance(exc, AssertionError):
            result.status = FAILED
            result.output = _bounded((str(exc) or "assertion failed") + _example(exc))
        elif excinfo.errisinstance(pytest.skip.Exception):
            result.status, result.output = PASSED, _bounded(recorded or str(exc.msg))
        else:
            result.status = GRADER_ERROR
            result.output = _bounded(f"the hidden test itself failed ({type(exc).__name__}: {exc}); "
                                     "this is not your fault: please report it")
        earlier = getattr(getattr(item, "module", None), PREREQUISITES_NAME, {}).get(exercise, {})
        if earlier and not self._prerequisites and result.status != GRADER_ERROR:
            # Run with the learner's own earlier exercises (the inline check): name them, since a
            # mistake there shows here too.
            names = " and ".join(f"`{name}`" for name in earlier)
            result.output = _bounded(f"{result.output} ({exercise} calls your {names}: if its own "
                                     "checks fail, fix it first)")
        return result


def _torch():
    """The torch module, or None where it cannot be imported."""
    try:
        import torch
    except ImportError:  # pragma: no cover - every suite needs torch
        return None
    return torch


def run_suite(suite: str, connect: Callable[[str], tuple[Call, list[str]]], *,
              exercises: set[str] | None = None, public_only: bool = False,
              trusted_prerequisites: bool = False) -> list[TestResult]:
    """Run the hidden tests of ``suite``; ``connect(exercise)`` gives the call into the learner.

    With ``trusted_prerequisites``, an exercise that calls an earlier one is judged with the
    trusted version of the earlier one (the module docstring says how); ``connect``'s calls then
    take ``trusted=`` and ``probe=`` keywords (:class:`grader.grade._Connections` does).

    Tests run, and their results come, exercise by exercise in the notebook's order
    (:func:`exercise_order`), each exercise's tests in the suite's order.
    """
    path = suite_path(suite)
    if not path.is_file():
        raise GraderError(f"no hidden tests named {path.name} in {SUITES_DIR}")
    plugin = JudgePlugin(connect, exercises=exercises, public_only=public_only,
                         order=exercise_order(suite), trusted_prerequisites=trusted_prerequisites,
                         call_seconds=SOLUTION_CALL_SECONDS.get(suite))
    # Only the plugins a suite needs: no third-party ones (entry points), and not the ones that
    # run gc.collect() several times at the end (over a second with torch loaded).
    args = [str(path), "-s", "-p", "no:cacheprovider", "-p", "no:terminal",
            "-p", "no:legacypath", "-p", "no:unraisableexception", "-p", "no:threadexception",
            "-p", "no:logging", "-p", "no:faulthandler", "-p", "no:doctest",
            "-p", "no:pastebin", "-p", "no:stepwise", "-p", "no:setuponly", "-p", "no:setupplan",
            "--import-mode=importlib", "-c", str(SUITES_DIR / "pytest.ini"),
            "--rootdir", str(SUITES_DIR), "-W", "ignore::DeprecationWarning"]
    autoload = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        # A hidden test's own computations (references, catalogued mistakes, black boxes) run on
        # one thread (a pseudo-inverse of a (289, 64) table: 4 s on two busy cores, 1 ms on one).
        with codec.one_torch_thread(_torch()):
            code = pytest.main(args, plugins=[plugin])
    finally:
        if autoload is None:
            del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = autoload
    if plugin.collection_errors or code in (pytest.ExitCode.INTERNAL_ERROR,
                                            pytest.ExitCode.USAGE_ERROR):
        detail = plugin.collection_errors[0] if plugin.collection_errors else f"pytest exit {code}"
        raise GraderError(f"the hidden tests {path.name} could not run: {detail.splitlines()[-1]}")
    return plugin.results


__all__ = [
    "StudentProxy", "fail", "expect_true", "expect_shape", "expect_dtype", "expect_close",
    "expect_equal", "expect_raises", "as_array", "mistake_suffix", "run_suite", "run_store",
    "asked_once", "known_suites", "suite_path", "view",
]
