"""Recorded reference values: how a learner's copy of the course runs its public checks.

The course's hidden suites compute expected values with reference implementations. A learner's
repository (``python -m grader starter-repo``) must not hold them, so its suites keep the public
checks' code and replace each reference helper by :func:`replayed`: a function that returns what
the reference returned, at build time, for the same arguments. The values live in
``grader/suites/test_<notebook>.recorded`` (one :mod:`grader.codec` message: no pickle), keyed by
a hash of the arguments. Arguments never seen at build time (a learner's answer that differs from
the reference's) fail the check with a message instead of guessing.

:func:`hidden_note` says, after a check, where the hidden tests are: in the course's own
repository the grader runs them; in a starter repository the instructor does.
"""
from __future__ import annotations

import hashlib
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from grader import codec

SUITES_DIR = Path(__file__).resolve().parent / "suites"
SUFFIX = ".recorded"
PUBLIC_ONLY = SUITES_DIR / "PUBLIC_ONLY.txt"
"""Present only in a starter repository: its suites hold the public checks and nothing else."""


class NotRecorded(AssertionError):
    """The public checks have no reference value for these arguments."""


def key(args: tuple, kwargs: dict) -> str:
    """A stable name for a call's arguments (their types, shapes and bytes). Raises
    :class:`grader.codec.CodecError` for arguments that cannot be written down (a function)."""
    text = repr(_digestible({"args": list(args), "kwargs": kwargs}))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _digestible(value: Any) -> Any:
    import numpy as np

    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return repr(value)
    if isinstance(value, np.generic):
        return repr(value.item())
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_digestible(v) for v in value]]
    if isinstance(value, dict):
        return [[str(k), _digestible(v)] for k, v in sorted(value.items(), key=lambda i: str(i[0]))]
    if isinstance(value, codec.View):
        return ["view", value.layout, _digestible(value.value)]
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return ["array", str(value.dtype), list(value.shape), hashlib.sha256(data.tobytes()).hexdigest()]
    kind = type(value).__name__
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().contiguous()
        if tensor.dtype == torch.bfloat16:
            tensor = tensor.view(torch.int16)
        data = tensor.numpy().tobytes()
        return ["tensor", str(value.dtype), list(value.shape), hashlib.sha256(data).hexdigest()]
    if kind in ("dtype", "device") or isinstance(value, type):
        return f"<{kind} {value}>"
    code = getattr(value, "__code__", None)
    if code is not None:  # a function: its name, constants and names, and what it closes over
        cells = [_digestible(cell.cell_contents) for cell in value.__closure__ or ()]
        return ["function", getattr(value, "__qualname__", ""), repr(code.co_consts),
                list(code.co_names), list(code.co_varnames), cells,
                _digestible(getattr(value, "__defaults__", None))]
    raise codec.CodecError(f"values of type {kind} have no recorded form")


@lru_cache(maxsize=None)
def _table(path: str) -> dict:
    return codec.decode(Path(path).read_bytes())


def replayed(suite_file: str, name: str) -> Callable[..., Any]:
    """The reference helper ``name`` of the suite at ``suite_file``, answered from its records."""
    path = str(Path(suite_file).with_suffix(SUFFIX))

    def helper(*args: Any, **kwargs: Any) -> Any:
        values = _table(path).get(name, {})
        try:
            wanted = key(args, kwargs)
        except codec.CodecError:
            wanted = None
        if wanted not in values:
            raise NotRecorded("the public check has no reference value for this input, so your "
                              "answer differs from the reference's before this point (the "
                              "instructor's grader judges it in full)")
        return codec.decode(codec.encode(values[wanted]))  # a fresh copy per call

    helper.__name__ = name
    return helper


def is_starter() -> bool:
    """Whether this copy of the course holds only the public checks."""
    return PUBLIC_ONLY.is_file()


def hidden_note() -> str:
    """One sentence on the hidden tests, for the end of a check."""
    if is_starter():
        return ("These are the public checks only: the hidden tests are run by your instructor, "
                "not in this repository.")
    return "The grader also runs hidden tests."
