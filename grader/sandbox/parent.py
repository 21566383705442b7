"""The grader's side of the sandbox: child processes that hold the learner's code.

A :class:`Template` per notebook is one child (:mod:`grader.sandbox.child`) that imports torch and loads
the learner's setup and exercise cells once; where one :class:`Zygote` serves the grading run (one
learner's notebooks), each template is forked from it, torch already imported, instead. Each exercise then gets a :class:`Sandbox`: a fresh
child forked from the template (copy-on-write, milliseconds), or, where fork is unavailable or no
template is given, a freshly spawned child that loads the cells itself. Every such child runs with
limits on address space, CPU time, file size and process count, in a scratch working directory,
in a session of its own, with its output discarded (a log would fill up to the file-size limit,
then fail the calls that print), optionally as an unprivileged user,
and, where the host allows it, under bubblewrap: a filesystem view that holds the Python
environment, the course's assets and the grader's learner-side modules
(:data:`grader.sandbox.child.ALLOWED_GRADER_MODULES`) read-only and the scratch folder read-write, its
own PID namespace and no network (:mod:`grader.sandbox.confinement`). The grader talks to a child over
two pipes, one message per request (see :mod:`grader.sandbox.codec`). A time-out kills the child's whole
process tree; a crash (``os._exit``, a signal, a limit) is noticed as the end of the pipe. Either way the call fails with a
:class:`StudentError` and the next call starts a fresh child.

Black boxes (:class:`grader.sandbox.codec.BlackBox`) in a request are sent by handle. While the grader
waits for a request's reply, the child may send callbacks instead (``{"op": "callback",
"handle", "args", "kwargs"}``, its learner code calling a box): each is run here on the trusted
side (:func:`grader.sandbox.codec.run_callback`) and answered on the pipe, and the wait goes on. Only the
boxes of the pending request answer; the time spent in callbacks counts towards the request's
time limit.
"""
from __future__ import annotations

import fcntl
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from grader.sandbox import codec, supervise
from grader.sandbox.child import ALLOWED_GRADER_MODULES
from grader.sandbox.confinement import (Confinement, Limits,  # noqa: F401 - Limits is re-exported
                                        learner_environment)
from grader.results import CRASHED, ERROR, FAILED, MISSING, NOT_IMPLEMENTED, TIMED_OUT

GRADER_ROOT = Path(__file__).resolve().parents[2]
"""The folder that holds the ``grader`` package (the repository's root in a checkout)."""


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


class StudentOutOfMemory(StudentRaised):
    """The learner's function ran out of memory: it asked for more than the sandbox's limit
    (``MemoryError``, or torch's ``can't allocate memory``). Like a time-out, the exercise's later
    tests are not run (:class:`grader.grade._Connections`): each would fill the memory again."""


class StudentCrashed(StudentError):
    """The child process died during the call."""

    status = CRASHED


class ArgumentsModified(StudentError):
    """The function returned, but changed a tensor or array it was given in place.

    ``result`` holds what it returned, for a test that allows the change
    (:attr:`grader.judge.proxy.StudentProxy.may_modify_arguments`).
    """

    status = FAILED

    def __init__(self, message: str, *, result: Any = None, modified: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.result = result
        self.modified = modified


class ExerciseMissing(StudentError):
    """No function of that name is defined by the notebook's cells."""

    status = MISSING


def _environment(workdir: Path) -> dict[str, str]:
    """A sandbox's environment: the allow-list
    (:func:`grader.sandbox.confinement.learner_environment`) with ``workdir`` as its home, one thread per numeric library, and the sandbox's marker."""
    return learner_environment(workdir, {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                                         "GRADER_SANDBOX": "1"})


class _Child:
    """A learner's child process: started here (``popen``) or forked by a template (``pid``).

    ``pid`` is the process as the grader sees it (0 once it is gone); ``inner`` is its pid in the
    template's PID namespace (under bubblewrap the two differ), which the template waits on.
    """

    def __init__(self, pid: int, popen: subprocess.Popen | None = None,
                 template: "Template | None" = None, *, inner: int | None = None,
                 bwrap: bool = False) -> None:
        self.pid, self.popen, self.template = pid, popen, template
        self.inner = pid if inner is None else inner
        self.bwrap = bwrap

    def kill(self, *, wait: bool = True) -> None:
        """SIGKILL the child and everything below it; with ``wait``, until all of it is gone
        (:func:`grader.sandbox.supervise.kill_tree`; a spawned child is always waited for)."""
        if self.pid > 0:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            supervise.kill_tree(self.pid, wait=wait or self.popen is not None)
        if self.popen is not None:
            self.popen.wait()

    def exit_status(self, timeout: float) -> int | None:
        if self.popen is not None:
            try:
                code = self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                return None
            # bwrap exits with 128 + N when its command was killed by signal N.
            return -(code - 128) if self.bwrap and 128 < code < 128 + 65 else code
        return self.template.wait(self.inner, timeout) if self.template is not None else None


def _assets() -> list[Path]:
    folder = GRADER_ROOT / "assets"
    return [folder] if folder.is_dir() else []


PIPE_BYTES = 1 << 20
"""The kernel's buffer of each pipe to and from a sandbox (1 MiB, Linux's default upper bound for
an unprivileged process, ``/proc/sys/fs/pipe-max-size``; 64 KiB by default): a black box's table
of 64 MiB crosses in 64 wake-ups of the reader instead of 1,024."""


try:
    _IOV_MAX = max(int(os.sysconf("SC_IOV_MAX")), 16)
except (ValueError, OSError, AttributeError):
    _IOV_MAX = 16
"""How many buffers one ``writev`` takes (POSIX guarantees 16; Linux takes 1,024)."""


def _pipe() -> tuple[int, int]:
    """``os.pipe()`` with a buffer of :data:`PIPE_BYTES` where the system allows it (else its own)."""
    read, write = os.pipe()
    try:
        fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (OSError, AttributeError):  # not Linux, or over the user's limit: the default buffer
        pass
    return read, write


def _spawn(confinement: Confinement, workdir: Path, extra: list[str] = (),
           pass_fds: tuple[int, ...] = ()) -> tuple[_Child, int, int]:
    """Start ``python -m grader.sandbox.child`` with pipes; returns (child, to_child, from_child)."""
    parent_read, child_write = _pipe()
    child_read, parent_write = _pipe()
    # The learner's output goes nowhere: a file would fill up to the file-size limit, after which
    # a print raises (EFBIG) and the calls that print would fail or pass by how much came before.
    log = open(os.devnull, "wb")
    private = ["--private-tmp"] if confinement.confined else []
    command = confinement.command(
        [sys.executable, "-m", "grader.sandbox.child", str(child_read), str(child_write), *extra,
         *private],
        scratch=[workdir], workdir=workdir, readable=_assets(),
        grader_modules=ALLOWED_GRADER_MODULES)
    try:
        popen = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            cwd=workdir, env=_environment(workdir), pass_fds=(child_read, child_write, *pass_fds),
            start_new_session=True, preexec_fn=confinement.preexec,
        )
    except BaseException:
        for fd in (parent_read, parent_write):
            os.close(fd)
        raise
    finally:
        log.close()
        os.close(child_read)
        os.close(child_write)
    return _Child(popen.pid, popen, bwrap=confinement.confined), parent_write, parent_read


def _spawn_controlled(confinement: Confinement, workdir: Path, mode: str,
                      extra: list[str] = ()) -> tuple[_Child, int, int, socket.socket]:
    """:func:`_spawn` a child in ``mode`` (``--template`` or ``--zygote``) with a control socket
    (the child's end passed by number); returns (child, to_child, from_child, our end). Our end
    receives credentials: the kernel gives a forked child's pid as this process sees it."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    try:
        child, to_child, from_child = _spawn(confinement, workdir,
                                             [mode, str(theirs.fileno()), *extra],
                                             pass_fds=(theirs.fileno(),))
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return child, to_child, from_child, ours


class _Channel:
    """Length-prefixed messages to and from a child over two pipes, with a deadline."""

    def __init__(self, child: _Child, to_child: int, from_child: int) -> None:
        self.child, self.to_child, self.from_child = child, to_child, from_child
        self._ahead = b""
        """Bytes read from the child beyond the frame asked for (:meth:`_read`)."""

    def request(self, request: dict, timeout: float, *, what: str) -> dict:
        deadline = time.monotonic() + timeout
        return self.receive(self.send(request, what=what), deadline, what=what)

    def send(self, request: dict, *, what: str) -> dict[str, codec.BlackBox]:
        """Write ``request``; the black boxes it lends, for :meth:`receive`."""
        boxes: dict[str, codec.BlackBox] = {}
        message = codec.encode_parts(request, boxes)
        try:
            self._write(message)
        except BrokenPipeError as exc:
            raise self.crashed(what, exc) from None
        return boxes

    def readable(self, deadline: float) -> None:
        """Wait until the child's answer begins to arrive (or it ends, or ``deadline``): nothing
        is read, so that any thread may wait while the one that reads decodes (Python 3.11's
        ``ast.parse``, which numpy's reading of an array calls, is unsafe in two threads)."""
        try:
            select.select([self.from_child], [], [], max(deadline - time.monotonic(), 0))
        except (OSError, ValueError):
            pass

    def receive(self, boxes: dict[str, codec.BlackBox], deadline: float, *, what: str) -> dict:
        """Read the reply to the request :meth:`send` wrote, answering its callbacks on the way."""
        try:
            while True:
                prefix = self._read(8, deadline, what)
                size = codec.frame_length(prefix)
                buffer = codec.receive_buffer(size)
                payload = (self._read(size, deadline, what) if buffer is None
                           else self._read_into(buffer, deadline, what))
                reply = codec.decode(payload)
                if not (isinstance(reply, dict) and reply.get("op") == "callback"):
                    break
                self._write(codec.encode_parts(codec.run_callback(
                    boxes.get(str(reply.get("handle"))), reply.get("args"), reply.get("kwargs"))))
        except (BrokenPipeError, EOFError, codec.CodecError, RecursionError) as exc:
            raise self.crashed(what, exc) from None
        if not isinstance(reply, dict):
            raise self.crashed(what, "a reply that is not a message")
        return reply

    def _write(self, parts: list) -> None:
        """The length prefix and the message's ``parts`` (:func:`grader.sandbox.codec.encode_parts`)
        in one system call (one wake-up of the reader), the rest of a long message in more where
        the pipe takes it in parts; each large part goes from its own memory."""
        parts = [sum(len(part) for part in parts).to_bytes(8, "big"), *map(memoryview, parts)]
        while parts:
            written = os.writev(self.to_child, parts[:_IOV_MAX])
            while parts and written >= len(parts[0]):
                written -= len(parts.pop(0))
            if parts:
                parts[0] = parts[0][written:]

    _READ_AHEAD = 1 << 16
    """Bytes asked of the pipe at least per read: a short reply's prefix and payload in one."""

    def _read(self, size: int, deadline: float, what: str) -> bytes:
        chunks, have = ([self._ahead], len(self._ahead)) if self._ahead else ([], 0)
        while have < size:
            self._wait_readable(deadline, what)
            chunk = os.read(self.from_child, min(max(size - have, self._READ_AHEAD), 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            have += len(chunk)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if have == size:
            self._ahead = b""
            return data
        self._ahead = data[size:]
        return data[:size]

    def _wait_readable(self, deadline: float, what: str) -> None:
        """Wait until the pipe from the child can be read; past ``deadline``, close the channel
        and raise :class:`StudentTimeout`."""
        ready, _, _ = select.select([self.from_child], [], [], max(deadline - time.monotonic(), 0))
        if not ready:
            self.close()
            raise StudentTimeout(f"{what} did not finish within the time limit; "
                                 "look for an endless loop or a very slow computation")

    def _read_into(self, buffer, deadline: float, what: str):
        """Fill ``buffer`` (:func:`grader.sandbox.codec.receive_buffer`) with the next
        ``len(buffer)`` bytes, never reading past them; returns ``buffer``."""
        have = min(len(self._ahead), len(buffer))
        buffer[:have] = self._ahead[:have]
        self._ahead = self._ahead[have:]
        return codec.fill(self.from_child, buffer, have,
                          wait=lambda: self._wait_readable(deadline, what))

    def crashed(self, what: str, cause: object) -> "StudentCrashed":
        code = self.child.exit_status(timeout=5)
        self.close()
        if code is None:
            how = f"stopped answering ({cause})"
        elif code < 0:
            how = f"was killed by signal {signal.Signals(-code).name}"
            if -code == signal.SIGXCPU:
                how += " (CPU time limit)"
        else:
            how = f"exited with status {code} (sys.exit or os._exit in your code?)"
        return StudentCrashed(f"the sandbox process {how} while {what}")

    def close(self, *, wait: bool = True) -> None:
        self.child.kill(wait=wait)
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        self.to_child = self.from_child = -1

def _credentials(control: socket.socket, timeout: float) -> tuple[str, int]:
    """One message on ``control`` and the sender's pid as this process sees it (the message must
    carry the sender's credentials; raises ValueError if it does not, EOFError at the end)."""
    control.settimeout(timeout)
    size = socket.CMSG_SPACE(struct.calcsize("3i"))
    message, ancillary, _, _ = control.recvmsg(4096, size)
    if not message:
        raise EOFError
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            return (message.decode("ascii", errors="replace"),
                    struct.unpack("3i", data[:struct.calcsize("3i")])[0])
    raise ValueError("the answer carried no credentials")


class ZygoteLost(StudentCrashed):
    """The zygote ended before it forked a notebook's template (the template is asked of a new
    zygote once more)."""


class Zygote:
    """One confined child per grading run that imports torch once and forks each notebook's template.

    Without it, every notebook's :class:`Template` is a process of its own that imports torch (a
    second or two each). The zygote is spawned like a template (the same bubblewrap view, limits
    and scratch folder; :func:`grader.sandbox.child.serve_zygote`) but runs no learner code: each
    template forked from it loads one notebook's cells into a fresh copy of it, in a folder of its
    own under the zygote's scratch folder, and starts from the same state whatever another
    notebook's cells did (its ``/tmp`` is emptied first). One zygote serves one learner's run:
    never share it between learners. If it dies, the next template starts a new one. It must be
    started from the thread that outlives it (bubblewrap's ``--die-with-parent``): the first
    :meth:`fork_template` starts it.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.confinement = Confinement(self.limits)
        self.workdir = self.confinement.scratch("grader-sandbox-")
        self._child: _Child | None = None
        self._control: socket.socket | None = None
        self._python: int | None = None
        self._lock = threading.Lock()
        self._notebooks = 0
        self.starts = 0
        """How many zygote processes this run started (one, unless one died)."""

    @property
    def pid(self) -> int | None:
        """The outermost process of the zygote (bubblewrap's, under it) while it runs."""
        return self._child.pid if self._child is not None else None

    def running(self) -> bool:
        """Whether the zygote's process is alive."""
        return (self._child is not None and self._child.popen is not None
                and self._child.popen.poll() is None)

    def start(self) -> None:
        """Spawn the zygote (it imports torch at once; nothing here waits for it)."""
        child, to_child, from_child, ours = _spawn_controlled(
            self.confinement, self.workdir, "--zygote")
        for fd in (to_child, from_child):
            os.close(fd)
        self._child, self._control, self._python = child, ours, None
        self.starts += 1

    def start_early(self) -> bool:
        """:meth:`start` it now, ahead of its first template; False where it cannot be spawned
        (nothing is left running and its folder is kept: the first template starts it again, and
        reports why it cannot)."""
        try:
            self.start()
        except OSError:
            self.close(release=False)
            return False
        return True

    def new_workdir(self) -> Path:
        """A fresh folder for one notebook's template, inside the zygote's view."""
        self._notebooks += 1
        folder = self.workdir / f"notebook-{self._notebooks}"
        folder.mkdir()
        supervise.give_to(folder, self.confinement.user)
        return folder

    def fork_template(self, fds: list[int], workdir: Path) -> None:
        """Ask for a template in ``workdir`` with ``fds`` (its read and write pipes and its control
        socket); it answers on that socket. Starts the zygote first, or a new one if it died."""
        message = f"template {workdir}".encode()
        for attempt in range(2):
            if not self.running():
                self.close(release=False)
                self.start()
            try:
                with self._lock:
                    socket.send_fds(self._control, [message], list(fds))
                return
            except OSError:
                if attempt:
                    raise
                self.close(release=False)

    def _python_pid(self) -> int | None:
        """The zygote's Python process (as this process sees it), from its first message."""
        if self._python is None and self._control is not None:
            try:
                text, pid = _credentials(self._control, self.limits.start_timeout)
            except (OSError, ValueError, EOFError):
                return None
            if text.startswith("zygote "):
                self._python = pid
        return self._python

    def wait(self, pid: int, timeout: float) -> int | None:
        """Exit status of a template (``pid`` in the zygote's PID namespace), or None if unknown."""
        with self._lock:
            if self._python_pid() is None:
                return None
            try:
                self._control.settimeout(timeout + self.limits.start_timeout)
                self._control.send(f"wait {pid} {timeout:g}".encode())
                answer = self._control.recv(64).decode("ascii", errors="replace")
                return None if answer in ("none", "error", "") else int(answer)
            except (OSError, ValueError):
                return None

    def sweep(self) -> None:
        """Kill every process inside the zygote but the zygote itself (and bubblewrap's above
        it): what a closed template left behind, escaped processes included."""
        if self._child is None:
            return
        with self._lock:
            python = self._python_pid()
        if python is None:  # it never said who it is: it cannot fork either
            self.close(release=False)
            return
        chain, parents = set(), supervise._parents()
        pid = python
        while pid and pid not in chain:
            chain.add(pid)
            if pid == self._child.pid:
                break
            pid = parents.get(pid, 0)
        supervise.kill_tree(self._child.pid, include_root=False, spare=chain)

    def close(self, *, release: bool = True) -> None:
        """Kill the zygote and every template it forked; with ``release``, remove its folder."""
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._child is not None:
            self._child.kill()
            self._child = None
        self._python = None
        if release:
            self.confinement.release()
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_zygote(limits: Limits | None = None) -> Zygote | None:
    """A :class:`Zygote` started at once, or None where it cannot start (the first template then
    starts one, and reports why it cannot).

    For a run that judges without executing first (``check --skip-execution``): started before
    the grader imports its own stages and torch, the zygote's ``import torch`` runs beside the
    grader's on a second core instead of after it. Call it from the thread that outlives the
    zygote; pass the zygote to :func:`grader.grade.grade_notebooks`, which closes it. Raises
    :class:`grader.sandbox.confinement.ConfinementUnavailable` where ``limits`` require
    bubblewrap and it cannot confine here.
    """
    zygote = Zygote(limits)
    if zygote.start_early():
        return zygote
    zygote.close()
    return None


class Template:
    """One child per notebook that imports torch, loads the cells once, and forks sandboxes.

    ``defined`` and ``load_errors`` describe the loaded cells. :meth:`fork` gives a fresh child
    that already holds them. If the template dies, the next :meth:`fork` starts a new one. With a
    ``zygote``, the template is forked from it (torch already imported) instead of spawned.
    """

    def __init__(self, cells: list[tuple[str, str]], *, limits: Limits | None = None,
                 zygote: Zygote | None = None) -> None:
        self.cells = [[label, source] for label, source in cells]
        self.zygote = zygote
        if zygote is not None:
            self.limits = zygote.limits
            self.confinement = zygote.confinement
            self.workdir = zygote.new_workdir()
        else:
            self.limits = limits or Limits()
            self.confinement = Confinement(self.limits)
            self.workdir = self.confinement.scratch("grader-sandbox-")
        self._channel: _Channel | None = None
        self._control: socket.socket | None = None
        self._pending: tuple[int, int] | None = None
        """The pipes (to, from) of a template asked of the zygote that has not answered yet."""
        self._load_deadline: float | None = None
        """When the load request sent (:meth:`wait_loaded`) must be answered by; None: not sent."""
        self.defined: list[str] = []
        self.load_errors: list[str] = []
        self.forkable = True
        """False when the cells started CUDA (a GPU notebook): a forked child cannot use it, so
        each sandbox is then spawned and loads the cells itself."""

    @property
    def pid(self) -> int | None:
        """The template process's pid while it runs."""
        return self._channel.child.pid if self._channel is not None else None

    @property
    def root(self) -> int | None:
        """The process whose tree holds the template and its children: the zygote's where there
        is one (a sandbox's close kills every other process of the grader's)."""
        return self.zygote.pid if self.zygote is not None else self.pid

    def start(self) -> None:
        """Start the template and load the cells; raises StudentError if it cannot."""
        self.spawn()
        self.load()

    def spawn(self) -> None:
        """Start the template process (it imports torch at once); :meth:`load` waits for it.

        Call it from the thread that outlives the template: the process dies with the thread
        that started it (bubblewrap's ``--die-with-parent``)."""
        if self.zygote is None:
            child, to_child, from_child, ours = _spawn_controlled(self.confinement, self.workdir,
                                                                  "--template")
            self._channel, self._control = _Channel(child, to_child, from_child), ours
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # a forked child's pid, below
        parent_read, child_write = _pipe()
        child_read, parent_write = _pipe()
        try:
            self.zygote.fork_template([child_read, child_write, theirs.fileno()], self.workdir)
        except BaseException:
            for fd in (parent_read, parent_write):
                os.close(fd)
            ours.close()
            raise
        finally:
            for fd in (child_read, child_write):
                os.close(fd)
            theirs.close()
        self._pending, self._control = (parent_write, parent_read), ours

    def _forked(self) -> None:
        """Wait for the template asked of the zygote to say who it is; raises ZygoteLost if the
        zygote ended first."""
        to_child, from_child = self._pending
        self._pending = None
        try:
            inner, outer = _credentials(self._control, self.limits.start_timeout)
            child = _Child(outer, template=self.zygote, inner=int(inner))
        except (OSError, ValueError, EOFError) as exc:
            for fd in (to_child, from_child):
                os.close(fd)
            raise ZygoteLost(f"the sandbox's zygote process did not fork the notebook's template "
                             f"({exc or type(exc).__name__})") from None
        self._channel = _Channel(child, to_child, from_child)

    def _send_load(self) -> None:
        if self._pending is not None:
            self._forked()
        assert self._channel is not None
        if self._load_deadline is None:
            self._load_deadline = time.monotonic() + self.limits.start_timeout
            self._channel.send({"op": "load", "cells": self.cells}, what=self._LOADING)

    _LOADING = "loading the notebook's cells"

    def wait_loaded(self) -> None:
        """Ask the template :meth:`spawn` started to load the cells and wait until its answer
        arrives, without reading it (any thread may call this; :meth:`load` reads the answer, in
        the thread that decodes). Raises StudentError if the template cannot be reached."""
        self._send_load()
        self._channel.readable(self._load_deadline)

    def load(self) -> None:
        """Load the cells into the template :meth:`spawn` started; raises StudentError if it
        cannot."""
        self._send_load()
        deadline, self._load_deadline = self._load_deadline, None
        reply = self._channel.receive({}, deadline, what=self._LOADING)
        if "error" in reply:
            raise StudentCrashed(f"the sandbox could not load the cells: {reply['error']}")
        self.defined = list(reply["defined"])
        self.load_errors = [f"{label}: {message}" for label, message in reply["errors"]]
        self.forkable = bool(reply.get("forkable", True))

    def _ask(self, message: bytes, fds: list[int] = ()) -> str:
        assert self._control is not None
        self._control.settimeout(self.limits.start_timeout)
        socket.send_fds(self._control, [message], list(fds))
        return self._control.recv(64).decode("ascii", errors="replace")

    def _fork(self, read_fd: int, write_fd: int) -> tuple[int, int]:
        """Ask for a child; (its pid in the template's PID namespace, its pid here).

        The child answers itself, with its credentials attached: the kernel gives its pid as
        this process sees it (under bubblewrap the two differ), and a child cannot claim to be
        another process."""
        assert self._control is not None
        self._control.settimeout(self.limits.start_timeout)
        socket.send_fds(self._control, [b"fork"], [read_fd, write_fd])
        size = socket.CMSG_SPACE(struct.calcsize("3i"))
        message, ancillary, _, _ = self._control.recvmsg(64, size)
        inner = int(message.decode("ascii", errors="replace"))
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                return inner, struct.unpack("3i", data[:struct.calcsize("3i")])[0]
        raise ValueError("the forked child's answer carried no credentials")

    def fork(self, read_fd: int, write_fd: int) -> _Child:
        """A fresh child holding the loaded cells, reading ``read_fd`` and writing ``write_fd``."""
        for attempt in range(2):
            if self._channel is None:
                self.start()
            try:
                inner, outer = self._fork(read_fd, write_fd)
                return _Child(outer, template=self, inner=inner)
            except (OSError, ValueError):
                if attempt:
                    raise StudentCrashed("the sandbox's template process stopped answering "
                                         "(does a setup cell end the process?)") from None
                self.close(release=False)
        raise AssertionError("unreachable")

    def wait(self, pid: int, timeout: float) -> int | None:
        """Exit status of a forked child (as Popen.returncode), or None if unknown in time."""
        try:
            answer = self._ask(f"wait {pid} {timeout:g}".encode())
            return None if answer == "none" else int(answer)
        except (OSError, ValueError):
            return None

    def close(self, *, release: bool = True) -> None:
        """Kill the template and everything it started (a zygote's template: and whatever else
        is alive inside the zygote but the zygote itself)."""
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._pending is not None:
            for fd in self._pending:
                os.close(fd)
            self._pending = None
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        self._load_deadline = None
        if self.zygote is not None:
            self.zygote.sweep()
            if release:
                shutil.rmtree(self.workdir, ignore_errors=True)
            return
        supervise.kill_strays()
        if release:
            self.confinement.release()
            shutil.rmtree(self.workdir, ignore_errors=True)
    def __enter__(self) -> "Template":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Sandbox:
    """One child process holding the learner's cells; restarted on demand after a failure.

    With a ``template``, each (re)start forks a child from it; without one, or when the template
    cannot be forked (its cells started CUDA), it spawns a child that loads the cells itself.
    With both, ``cells`` are loaded after the template's (in the forked child, or after the
    template's cells in a spawned one): one template can then serve notebooks that share their
    first cells and differ in the rest (:mod:`grader.batch.variants`).
    """

    def __init__(self, cells: list[tuple[str, str]] = (), *, limits: Limits | None = None,
                 workdir: Path | None = None, template: Template | None = None) -> None:
        self.cells = [[label, source] for label, source in cells]
        self.limits = template.limits if template is not None else (limits or Limits())
        self.template = template
        self._own_confinement = template is None
        self.confinement = template.confinement if template is not None else None
        self._own_workdir = workdir is None
        self._workdir = workdir
        self._channel: _Channel | None = None
        self.load_errors: list[str] = []
        self.defined: list[str] = []

    @property
    def workdir(self) -> Path:
        """The child's scratch folder."""
        if self._workdir is None:
            if self.template is not None:
                self._workdir = self.template.workdir
                self._own_workdir = False
            else:
                self._workdir = self._confine().scratch("grader-sandbox-")
        return self._workdir

    def _confine(self) -> Confinement:
        if self.confinement is None:
            self.confinement = Confinement(self.limits)
        return self.confinement

    # -- life cycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Start the child with the cells (``load_errors`` says which cells raised)."""
        if self.template is not None and self.template.forkable:
            parent_read, child_write = _pipe()
            child_read, parent_write = _pipe()
            try:
                child = self.template.fork(child_read, child_write)
            except BaseException:
                for fd in (parent_read, parent_write):
                    os.close(fd)
                raise
            finally:
                os.close(child_read)
                os.close(child_write)
            self._channel = _Channel(child, parent_write, parent_read)
            self.defined, self.load_errors = self.template.defined, self.template.load_errors
            if self.cells:
                self._load(self.cells, self.template.load_errors)
            return
        self._channel = _Channel(*_spawn(self._confine(), self.workdir))
        cells = (self.template.cells if self.template is not None else []) + self.cells
        self._load(cells, [])

    def _load(self, cells: list, earlier_errors: list[str]) -> None:
        reply = self._channel.request({"op": "load", "cells": cells},
                                      self.limits.start_timeout, what="loading the notebook's cells")
        if "error" in reply:
            raise StudentCrashed(f"the sandbox could not load the cells: {reply['error']}")
        self.defined = list(reply["defined"])
        self.load_errors = [*earlier_errors,
                            *(f"{label}: {message}" for label, message in reply["errors"])]

    def _ensure_started(self) -> None:
        if self._channel is None or self._channel.to_child < 0:
            self.close(remove_workdir=False)
            self.start()

    def close(self, *, remove_workdir: bool = True, wait: bool = True) -> None:
        """Kill the child (and anything it started) and release the pipes. Without ``wait``, a
        forked child is sent SIGKILL and not waited for: its template's close, which waits for
        every process below the template, still finds anything left."""
        if self._channel is not None:
            self._channel.close(wait=wait)
            self._channel = None
            keep = {self.template.root} if self.template is not None and self.template.root else set()
            supervise.kill_strays(keep)
        if remove_workdir:
            if self._own_confinement and self.confinement is not None:
                self.confinement.release()
            if self._own_workdir and self._workdir is not None:
                shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests ---------------------------------------------------------------------------
    def call(self, name: str, args: tuple, kwargs: dict, *, timeout: float,
             trusted: dict | None = None) -> Any:
        """Call the learner's function ``name``; return its decoded result or raise StudentError.

        ``trusted`` maps names of the learner's namespace to :class:`grader.sandbox.codec.BlackBox` es
        that stand in for them during this call (trusted prerequisites).
        """
        self._ensure_started()
        if self.limits.call_timeout is not None:
            timeout = min(timeout, self.limits.call_timeout)
        request = {"op": "call", "name": name, "args": list(args), "kwargs": kwargs}
        if trusted:
            request["trusted"] = dict(trusted)
        reply = self._channel.request(request, timeout, what=f"calling {name}")
        return result_of_reply(name, reply)


def result_of_reply(name: str, reply: dict) -> Any:
    """The value a ``call`` reply carries, or the StudentError it stands for.

    A reply that says the call modified some of its arguments raises :class:`ArgumentsModified`
    (with the value), since an exercise leaves its inputs unchanged unless its docstring says so.
    """
    if "ok" not in reply:
        raise error_from_reply(name, reply["error"])
    modified = reply.get("modified")
    if modified:
        names = ", ".join(f"`{m}`" for m in modified)
        raise ArgumentsModified(
            f"{name} changed its input {names} in place; it must leave its arguments unchanged "
            "(write `x = x * s`, not `x *= s` or `x.mul_(s)`, and do not return a modified input)",
            result=reply["ok"], modified=tuple(modified))
    return reply["ok"]


_OUT_OF_MEMORY = "can't allocate memory"
"""What torch's CPU allocator says (in a RuntimeError) when an allocation is refused."""


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
    if "MemoryError" in mro or _OUT_OF_MEMORY in message:
        first = message.strip().splitlines()[0] if message.strip() else exc_type
        return StudentOutOfMemory(
            f"{name} ran out of memory (it asked for more than the sandbox's memory limit allows; "
            f"{exc_type}: {first[:200]})", **details)
    text = f"{name} raised {exc_type}: {message}" if message else f"{name} raised {exc_type}"
    return StudentRaised(text, **details)
