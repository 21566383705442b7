"""Recorded reference values: how a learner's copy of the course runs its public checks.

The course's hidden suites compute expected values with reference implementations. A learner's
repository (``python -m grader starter-repo``) must not hold them, so its suites keep the public
checks' code and replace each reference helper by :func:`replayed`: a function that returns what
the reference returned, at build time, for the same arguments. The values live in
``grader/judge/suites/test_<notebook>.recorded`` (one :mod:`grader.sandbox.codec` message: no pickle), keyed by
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

from grader.sandbox import codec

SUITES_DIR = Path(__file__).resolve().parent / "suites"
SUFFIX = ".recorded"
PUBLIC_ONLY = SUITES_DIR / "PUBLIC_ONLY.txt"
"""Present only in a starter repository: its suites hold the public checks and nothing else."""


class NotRecorded(AssertionError):
    """The public checks have no reference value for these arguments."""


def key(args: tuple, kwargs: dict) -> str:
    """A stable name for a call's arguments (their types, shapes and bytes). Raises
    :class:`grader.sandbox.codec.CodecError` for arguments that cannot be written down (a function)."""
    text = repr(_digestible({"args": list(args), "kwargs": kwargs}))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def near_key(args: tuple, kwargs: dict) -> tuple[str, list]:
    """The arguments' name without their floating-point values, and those values (float64
    arrays): another machine's arithmetic may differ from the recording's in the last bits, so a
    call whose floats are all close to a recorded call's gets that call's value."""
    floats: list = []
    text = repr(_digestible({"args": list(args), "kwargs": kwargs}, floats))
    return hashlib.sha256(text.encode()).hexdigest()[:32], floats


def _digestible(value: Any, floats: list | None = None) -> Any:
    """``value`` written down for a key; with ``floats``, floating-point numbers and arrays are
    moved there (as float64 arrays) and only their dtype and shape stay."""
    import numpy as np

    if floats is not None and isinstance(value, float):
        floats.append(np.array(value, dtype=np.float64))
        return "float"
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return repr(value)
    if isinstance(value, np.generic):
        return repr(value.item())
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_digestible(v, floats) for v in value]]
    if isinstance(value, dict):
        return [[str(k), _digestible(v, floats)]
                for k, v in sorted(value.items(), key=lambda i: str(i[0]))]
    if isinstance(value, codec.View):
        return ["view", value.layout, _digestible(value.value, floats)]
    if isinstance(value, np.ndarray):
        if floats is not None and value.dtype.kind == "f":
            floats.append(value.astype(np.float64))
            return ["array", str(value.dtype), list(value.shape)]
        data = np.ascontiguousarray(value)
        return ["array", str(value.dtype), list(value.shape), hashlib.sha256(data.tobytes()).hexdigest()]
    kind = type(value).__name__
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().contiguous()
        if floats is not None and tensor.is_floating_point():
            floats.append(tensor.double().numpy())
            return ["tensor", str(value.dtype), list(value.shape)]
        if tensor.dtype == torch.bfloat16:
            tensor = tensor.view(torch.int16)
        data = tensor.numpy().tobytes()
        return ["tensor", str(value.dtype), list(value.shape), hashlib.sha256(data).hexdigest()]
    if kind in ("dtype", "device") or isinstance(value, type):
        return f"<{kind} {value}>"
    code = getattr(value, "__code__", None)
    if code is not None:  # a function: its name, constants and names, and what it closes over
        cells = [_digestible(cell.cell_contents, floats) for cell in value.__closure__ or ()]
        return ["function", getattr(value, "__qualname__", ""), repr(code.co_consts),
                list(code.co_names), list(code.co_varnames), cells,
                _digestible(getattr(value, "__defaults__", None), floats)]
    raise codec.CodecError(f"values of type {kind} have no recorded form")


@lru_cache(maxsize=None)
def _table(path: str) -> dict:
    return codec.decode(Path(path).read_bytes())


RTOL, ATOL = 1e-6, 1e-9
"""How close a call's floats must be to a recorded call's (last-bit differences of another
machine's arithmetic; a learner's answer never reaches a recorded helper)."""


def table(values: dict[str, dict[str, Any]], near: dict[str, list[dict]]) -> dict:
    """What a ``.recorded`` file holds: each helper's values by :func:`key`, and each recorded
    call's :func:`near_key` (``{"key", "near", "floats"}``) for :func:`replayed`'s fallback."""
    return {"values": values, "near": near}


def _close(floats: list, recorded: list) -> bool:
    import numpy as np

    return len(floats) == len(recorded) and all(
        a.shape == b.shape and np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)
        for a, b in zip(floats, recorded))


def replayed(suite_file: str, name: str) -> Callable[..., Any]:
    """The reference helper ``name`` of the suite at ``suite_file``, answered from its records."""
    path = str(Path(suite_file).with_suffix(SUFFIX))

    def helper(*args: Any, **kwargs: Any) -> Any:
        recorded = _table(path)
        values = recorded["values"].get(name, {})
        try:
            wanted = key(args, kwargs)
            if wanted not in values:
                shape, floats = near_key(args, kwargs)
                wanted = next((entry["key"] for entry in recorded["near"].get(name, [])
                               if entry["near"] == shape and _close(floats, entry["floats"])),
                              None)
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


class Unshipped:
    """Stands, in a starter repository's public checks, for a part of ``grader.judge.hidden`` (the
    trusted implementations that hidden tests hand over as black boxes), which a starter never
    ships: a module-level reference to it still loads, and any use of it raises, in one line, why
    that check cannot run here."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attribute: str) -> "Unshipped":
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return Unshipped(f"{self._name}.{attribute}")

    def _refuse(self, *args, **kwargs):
        from grader.errors import GraderError

        raise GraderError(f"this check needs {self._name}, one of the course's trusted "
                          "implementations, which a starter repository does not ship: the "
                          "grader runs it")

    __call__ = __iter__ = __getitem__ = __len__ = __contains__ = _refuse

    def __repr__(self) -> str:
        return f"<not shipped: {self._name}>"


def unshipped(name: str) -> Unshipped:
    """A stand-in for ``name`` (a module of ``grader.judge.hidden``) in a starter's public checks."""
    return Unshipped(name)

