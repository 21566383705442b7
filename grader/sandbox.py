"""The grader's side of the sandbox: a child process that holds the learner's code.

The child (:mod:`grader._child`) runs with limits on address space, CPU time and file size, in a
scratch working directory, in its own process group, with its output sent to a log file. The
grader talks to it over two pipes, one message per request (see :mod:`grader.codec`). A time-out
kills the whole process group; a crash (``os._exit``, a signal, a limit) is noticed as the end of
the pipe. Either way the call fails with a :class:`StudentError` and the next call starts a fresh
child with the same cells.
"""
from __future__ import annotations

import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import codec
from grader.results import CRASHED, ERROR, MISSING, NOT_IMPLEMENTED, TIMED_OUT

GRADER_ROOT = Path(__file__).resolve().parent.parent
"""The folder that holds the ``grader`` package (the repository's root in a checkout)."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandbox process."""

    memory_bytes: int = 6 << 30
    """Address space (RLIMIT_AS). Importing torch alone takes about 1.5 GiB of it."""
    cpu_seconds: int = 300
    """CPU time over the child's whole life (RLIMIT_CPU); the child is restarted after a crash."""
    file_bytes: int = 256 << 20
    """Largest file the child may write (RLIMIT_FSIZE)."""
    start_timeout: float = 60.0
    """Seconds allowed to start the child and load the notebook's cells."""
    call_timeout: float | None = None
    """If set, caps every call's time limit (the suites' own limits apply otherwise)."""


class StudentError(Exception):
    """A call into the learner's code did not return a value. ``status`` says how."""

    status = ERROR

    def __init__(self, message: str, *, exc_type: str = "", mro: tuple[str, ...] = (),
                 traceback: str = "") -> None:
        super().__init__(message)
        self.exc_type = exc_type
        self.mro = mro
        self.traceback = traceback


class StudentRaised(StudentError):
    """The learner's function raised an exception (``exc_type`` names it)."""


class NotImplementedByStudent(StudentError):
    """The learner's function still raises ``NotImplementedError``."""

    status = NOT_IMPLEMENTED


class StudentTimeout(StudentError):
    """The call did not return in time; the child was killed."""

    status = TIMED_OUT


class StudentCrashed(StudentError):
    """The child process died during the call."""

    status = CRASHED


class ExerciseMissing(StudentError):
    """No function of that name is defined by the notebook's cells."""

    status = MISSING


def _limit(kind: int, value: int) -> None:
    soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, hard if hard != resource.RLIM_INFINITY else value))


def apply_limits(limits: Limits, *, cpu: bool = True) -> None:
    """Apply ``limits`` to the current process (run in a child between fork and exec)."""
    _limit(resource.RLIMIT_AS, limits.memory_bytes)
    if cpu:
        _limit(resource.RLIMIT_CPU, limits.cpu_seconds)
    _limit(resource.RLIMIT_FSIZE, limits.file_bytes)
    _limit(resource.RLIMIT_CORE, 0)


class Sandbox:
    """One child process holding the learner's cells; restarted on demand after a failure."""

    def __init__(self, cells: list[tuple[str, str]], *, limits: Limits | None = None,
                 workdir: Path | None = None) -> None:
        self.cells = [[label, source] for label, source in cells]
        self.limits = limits or Limits()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="grader-sandbox-"))
        self._process: subprocess.Popen | None = None
        self._to_child: int | None = None
        self._from_child: int | None = None
        self.load_errors: list[str] = []
        self.defined: list[str] = []

    # -- life cycle -------------------------------------------------------------------------
    def _spawn(self) -> None:
        parent_read, child_write = os.pipe()
        child_read, parent_write = os.pipe()
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("GRADER_", "PYTEST_", "JPY_"))}
        env.update({
            "PYTHONPATH": str(GRADER_ROOT), "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "GRADER_SANDBOX": "1",
        })
        log = open(self.workdir / "sandbox.log", "ab")
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "grader._child", str(child_read), str(child_write)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self.workdir, env=env, pass_fds=(child_read, child_write),
                start_new_session=True, preexec_fn=lambda: apply_limits(self.limits),
            )
        finally:
            log.close()
            os.close(child_read)
            os.close(child_write)
        self._to_child, self._from_child = parent_write, parent_read

    def start(self) -> None:
        """Start the child and load the cells (``load_errors`` says which cells raised)."""
        self._spawn()
        reply = self._request({"op": "load", "cells": self.cells}, self.limits.start_timeout,
                              what="loading the notebook's cells")
        self.defined = list(reply["defined"])
        self.load_errors = [f"{label}: {message}" for label, message in reply["errors"]]

    def _ensure_started(self) -> None:
        if self._process is None or self._process.poll() is not None:
            self.close(remove_workdir=False)
            self.start()

    def close(self, *, remove_workdir: bool = True) -> None:
        """Kill the child (and anything it started) and release the pipes."""
        if self._process is not None:
            try:
                os.killpg(self._process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._process.wait()
            self._process = None
        for fd in (self._to_child, self._from_child):
            if fd is not None:
                os.close(fd)
        self._to_child = self._from_child = None
        if remove_workdir and self._own_workdir:
            import shutil

            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests ---------------------------------------------------------------------------
    def call(self, name: str, args: tuple, kwargs: dict, *, timeout: float) -> Any:
        """Call the learner's function ``name``; return its decoded result or raise StudentError."""
        self._ensure_started()
        if self.limits.call_timeout is not None:
            timeout = min(timeout, self.limits.call_timeout)
        reply = self._request({"op": "call", "name": name, "args": list(args), "kwargs": kwargs},
                              timeout, what=f"calling {name}")
        if "ok" in reply:
            return reply["ok"]
        raise error_from_reply(name, reply["error"])

    def _request(self, request: dict, timeout: float, *, what: str) -> dict:
        message = codec.encode(request)
        deadline = time.monotonic() + timeout
        try:
            os.write(self._to_child, len(message).to_bytes(8, "big"))
            view = memoryview(message)
            while view:
                written = os.write(self._to_child, view[: 1 << 20])
                view = view[written:]
            prefix = self._read(8, deadline, what)
            payload = self._read(codec.frame_length(prefix), deadline, what)
            reply = codec.decode(payload)
        except (BrokenPipeError, EOFError, codec.CodecError) as exc:
            raise self._crashed(what, exc) from None
        if not isinstance(reply, dict):
            raise self._crashed(what, "a reply that is not a message")
        return reply

    def _read(self, size: int, deadline: float, what: str) -> bytes:
        chunks, remaining = [], size
        while remaining:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_child], [], [], max(left, 0))
            if not ready:
                self.close(remove_workdir=False)
                raise StudentTimeout(f"{what} did not finish within the time limit; "
                                     "look for an endless loop or a very slow computation")
            chunk = os.read(self._from_child, min(remaining, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def _crashed(self, what: str, cause: object) -> StudentCrashed:
        process = self._process
        code = None
        if process is not None:
            try:
                code = process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
        self.close(remove_workdir=False)
        if code is None:
            how = f"stopped answering ({cause})"
        elif code < 0:
            how = f"was killed by signal {signal.Signals(-code).name}"
            if -code == signal.SIGXCPU:
                how += " (CPU time limit)"
        else:
            how = f"exited with status {code} (sys.exit or os._exit in your code?)"
        return StudentCrashed(f"the sandbox process {how} while {what}")


def error_from_reply(name: str, error: dict) -> StudentError:
    """Turn the child's description of an exception into the matching StudentError."""
    exc_type, message = error.get("type", ""), error.get("message", "")
    mro = tuple(error.get("mro", ()))
    details = dict(exc_type=exc_type, mro=mro, traceback=error.get("traceback", ""))
    if exc_type == "Missing":
        return ExerciseMissing(message, **details)
    if "NotImplementedError" in mro:
        return NotImplementedByStudent(f"{name} is not implemented yet (it raises "
                                       "NotImplementedError)", **details)
    if exc_type == "BadReturn":
        return StudentRaised(message, **details)
    text = f"{name} raised {exc_type}: {message}" if message else f"{name} raised {exc_type}"
    return StudentRaised(text, **details)
