"""The sandboxed side: loads a learner's cells and answers calls, one message at a time.

Started by :class:`grader.sandbox.Sandbox` as ``python -m grader._child READ_FD WRITE_FD`` with
resource limits already applied. It imports what it needs from the grader, then blocks every
further import of the grader's modules (the hidden tests and their reference answers stay out
of reach of an ``import``), and serves requests:

- ``{"op": "load", "cells": [[label, source], ...]}`` executes the cells, in order, in the
  namespace; replies ``{"defined": [...names...], "errors": [[label, message], ...]}``.
- ``{"op": "call", "name": ..., "args": [...], "kwargs": {...}}`` calls the learner's function;
  replies ``{"ok": result}`` or ``{"error": {"type", "mro", "message", "traceback"}}``.

:func:`dispatch` is the same logic without the process: the inline ``check()`` uses it so that a
public check sees exactly what the grader would.
"""
from __future__ import annotations

import functools
import importlib
import importlib.abc
import linecache
import os
import sys
import traceback
from typing import Any

from grader import codec

ALLOWED_GRADER_MODULES = ("grader", "grader.codec", "grader._child", "grader.fixtures")
"""Grader modules the learner's code may import inside the sandbox: never tests or answers."""

TRACEBACK_CHARS = 1500


class _Anything:
    """Stands in for IPython's shell: every attribute is a no-op callable."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


class _GuardGraderImports(importlib.abc.MetaPathFinder):
    """Refuses to import grader modules other than the allowed ones."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] != "grader":
            return None
        if fullname in ALLOWED_GRADER_MODULES or fullname.startswith("grader.fixtures."):
            return None
        raise ImportError(f"{fullname} cannot be imported inside the grading sandbox")


def fresh_namespace() -> dict:
    """The globals that learner cells run in: a no-op ``check`` and ``get_ipython``."""
    return {
        "__name__": "__main__",
        "__builtins__": __builtins__,
        "check": lambda *args, **kwargs: None,
        "get_ipython": _Anything,
    }


def load_cells(namespace: dict, cells: list) -> dict:
    """Execute ``[label, source]`` cells in ``namespace``; a failing cell is recorded, not fatal."""
    errors = []
    for label, source in cells:
        filename = f"<{label}>"
        # Registered like IPython does, so inspect.getsource works (Triton's @jit needs it).
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            exec(compile(source, filename, "exec"), namespace)
        except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are the learner's
            errors.append([label, f"{type(exc).__name__}: {exc}"[:TRACEBACK_CHARS]])
    defined = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("_"))
    return {"defined": defined, "errors": errors}


def _resolver(namespace: dict):
    def resolve(kind: str, name: str, kwargs: dict):
        if kind == "student":
            if not callable(namespace.get(name)):
                raise NameError(f"no function named {name!r} is defined in the notebook")
            return functools.partial(namespace[name], **kwargs)
        module, _, function = name.rpartition(".")
        target = getattr(importlib.import_module(f"grader.fixtures.{module}"), function)
        return functools.partial(target, **kwargs)

    return resolve


def _error_reply(exc: BaseException) -> dict:
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
    text = "".join(frames)
    return {"error": {
        "type": type(exc).__name__,
        "mro": [cls.__name__ for cls in type(exc).__mro__],
        "message": str(exc)[:TRACEBACK_CHARS],
        "traceback": text[-TRACEBACK_CHARS:],
    }}


def _missing(name: str) -> dict:
    return {"error": {"type": "Missing", "mro": ["Missing"], "traceback": "",
                      "message": f"no function named {name!r} is defined in the notebook"}}


def call(namespace: dict, request: dict) -> dict:
    """Run one decoded ``call`` request against ``namespace`` and build its reply."""
    name = request["name"]
    function = namespace.get(name)
    if not callable(function):
        return _missing(name)
    try:
        return {"ok": function(*request["args"], **request["kwargs"])}
    except BaseException as exc:  # noqa: BLE001 - report everything, including SystemExit
        return _error_reply(exc)


def dispatch(namespace: dict, message: bytes) -> bytes:
    """Answer one encoded request (``load`` or ``call``) with an encoded reply; never raises."""
    request: dict = {}
    try:
        request = codec.decode(message, _resolver(namespace))
        if request["op"] == "load":
            reply = load_cells(namespace, request["cells"])
        else:
            reply = call(namespace, request)
    except BaseException as exc:  # noqa: BLE001 - e.g. a callable argument that does not resolve
        reply = _error_reply(exc)
    try:
        return codec.encode(reply)
    except BaseException as exc:  # noqa: BLE001 - the learner returned something unreadable
        return codec.encode({"error": {
            "type": "BadReturn", "mro": ["BadReturn"], "traceback": "",
            "message": f"{request.get('name')} returned a value the grader cannot read: {exc}"}})


def _read_exactly(fd: int, size: int) -> bytes:
    chunks, remaining = [], size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def serve(read_fd: int, write_fd: int) -> None:
    """Answer requests until the grader closes the pipe."""
    namespace = fresh_namespace()
    writer = os.fdopen(write_fd, "wb")
    while True:
        try:
            message = _read_exactly(read_fd, codec.frame_length(_read_exactly(read_fd, 8)))
        except EOFError:
            return
        codec.write_frame(writer, dispatch(namespace, message))


def main() -> None:
    read_fd, write_fd = int(sys.argv[1]), int(sys.argv[2])
    import grader.fixtures  # noqa: F401 - allowed; fixture modules are imported on demand

    for module in [m for m in sys.modules if m.split(".")[0] == "grader"]:
        if module not in ALLOWED_GRADER_MODULES and not module.startswith("grader.fixtures"):
            del sys.modules[module]
    sys.meta_path.insert(0, _GuardGraderImports())
    serve(read_fd, write_fd)
    os._exit(0)  # skip interpreter teardown: the learner's atexit handlers are not ours to run


if __name__ == "__main__":
    main()
