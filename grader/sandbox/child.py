"""The sandboxed side: loads a learner's cells and answers calls, one message at a time.

Started by :class:`grader.sandbox.parent.Sandbox` as ``python -m grader.sandbox.child READ_FD WRITE_FD`` with
resource limits already applied, or by :class:`grader.sandbox.parent.Template` with ``--template
CONTROL_FD`` added: a template loads the cells once, then forks a fresh child per exercise on
request (see :func:`serve_template`), so torch is imported and the setup cells run once per
notebook instead of once per exercise. With ``--zygote CONTROL_FD`` it is the zygote of one
grading run (:class:`grader.sandbox.parent.Zygote`, :func:`serve_zygote`): it imports torch once and
forks each notebook's template, which then serves as above. It imports what it needs from the grader, then blocks every
further import of the grader's modules (the hidden tests and their reference answers stay out
of reach of an ``import``), and serves requests:

- ``{"op": "load", "cells": [[label, source], ...]}`` executes the cells, in order, in the
  namespace; replies ``{"defined": [...names...], "errors": [[label, message], ...],
  "forkable": bool}`` (false once the cells have started CUDA, which a forked child cannot use).
- ``{"op": "call", "name": ..., "args": [...], "kwargs": {...}}`` calls the learner's function;
  replies ``{"ok": result}`` or ``{"error": {"type", "mro", "message", "traceback"}}``. When the
  call changed a tensor or array it was given (its values, shape or strides: ``x /= 2``,
  ``x.transpose_(0, 1)``), the reply also holds ``"modified": [argument names]``; the grader
  decides what that costs (:func:`grader.sandbox.parent.result_of_reply`). ``"trusted": {name: box}``
  (optional) rebinds each ``name`` of the namespace to that black box for the duration of the
  call: an exercise that calls an earlier one then runs on the trusted version of the earlier one.

Black boxes (:class:`grader.sandbox.codec.BlackBox`) arrive as handles and become :class:`Box` instances.
While a call runs, calling a box writes ``{"op": "callback", "handle", "args", "kwargs"}`` on the
pipe to the grader and reads one reply, ``{"ok": value}`` or ``{"error": {"type", "message"}}``
(raised here as that built-in exception type). A box works only in the thread of the call that
received it and only while that call runs; its arguments must be values the codec carries (a
numpy random generator crosses as a seed drawn from it).

:func:`dispatch` is the same logic without the process: the inline ``check()`` uses it so that a
public check sees exactly what the grader would.
"""
from __future__ import annotations

import functools
import gc
import importlib
import importlib.abc
import inspect
import linecache
import os
import socket
import struct
import sys
import threading
import time
import traceback
from typing import Any

import numpy as np

from grader.sandbox import codec

ALLOWED_GRADER_MODULES = ("grader", "grader.sandbox", "grader.sandbox.codec", "grader.sandbox.child",
                          "grader.fixtures")
"""Grader modules the learner's code may import inside the sandbox: never tests or answers (the
hidden implementations of ``grader.judge.hidden`` run on the grader's side only, as black boxes)."""

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
    return {"defined": defined, "errors": errors, "forkable": not _cuda_initialized()}


def _cuda_initialized() -> bool:
    """Whether the cells started CUDA: a forked copy of this process could not use it."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:  # noqa: BLE001 - a broken torch is the cells' problem, not the grader's
        return False


class Box:
    """A trusted function the grader lent for one call; it runs in the grader, not here.

    Every box is an instance of this class holding only an opaque handle (random per box): what
    the function is can be learnt only by calling it.
    """

    __slots__ = ("_handle",)

    def __init__(self, handle: str) -> None:
        object.__setattr__(self, "_handle", handle)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _forward(self._handle, args, kwargs)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a black box has no attributes to set")

    def __repr__(self) -> str:
        return "<black box>"

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("a black box cannot be pickled or copied")

    def __copy__(self) -> Any:
        raise TypeError("a black box cannot be pickled or copied")

    def __deepcopy__(self, memo: Any) -> Any:
        raise TypeError("a black box cannot be pickled or copied")


_PIPE: list = []
"""``[read_fd, writer]`` of the pipes to the grader while :func:`serve` runs (empty otherwise)."""

_ACTIVE: list = []
"""The thread ids of the calls running now (one, or none between calls)."""

_BOX_ERRORS = {"TypeError": TypeError, "ValueError": ValueError, "IndexError": IndexError,
               "KeyError": KeyError, "ZeroDivisionError": ZeroDivisionError,
               "OverflowError": OverflowError, "RuntimeError": RuntimeError,
               "TimeoutError": TimeoutError}


def _seeded(value: Any) -> Any:
    """A numpy random generator crosses as a seed drawn from it (the trusted side seeds one of its
    own); any other value as it is."""
    if isinstance(value, np.random.Generator):
        return int(value.integers(2 ** 63 - 1))
    return value


def _forward(handle: str, args: tuple, kwargs: dict) -> Any:
    """One callback of a black box: send the arguments to the grader, return or raise its answer."""
    if not _ACTIVE or _ACTIVE[-1] != threading.get_ident():
        raise RuntimeError("a black box can only be called while the call that received it is "
                           "running, from its thread (keep no reference to it for later)")
    args, kwargs = [_seeded(a) for a in args], {k: _seeded(v) for k, v in kwargs.items()}
    try:
        message = codec.encode({"op": "callback", "handle": handle, "args": args, "kwargs": kwargs})
    except codec.CodecError as exc:
        raise TypeError(f"a black box takes tensors, arrays, numbers, strings and lists, tuples "
                        f"or dicts of them: {exc}") from None
    box = codec.local_box(handle)
    if box is not None:  # the inline check: the judge is in this very process
        request = codec.decode(message)
        reply = codec.decode(codec.encode(codec.run_callback(box, request["args"], request["kwargs"])))
    elif _PIPE:
        read_fd, writer = _PIPE
        codec.write_frame(writer, message)
        reply = codec.decode(_read_exactly(read_fd, codec.frame_length(_read_exactly(read_fd, 8))))
    else:
        raise RuntimeError("this black box cannot be reached from here")
    if not isinstance(reply, dict) or ("ok" not in reply and "error" not in reply):
        raise RuntimeError("the grader sent a malformed answer to a black box call")
    if "ok" in reply:
        return reply["ok"]
    error = reply["error"]
    raise _BOX_ERRORS.get(str(error.get("type")), RuntimeError)(str(error.get("message", "")))


def _resolver(namespace: dict):
    def resolve(kind: str, name: str, kwargs: dict):
        if kind == "box":
            return Box(name)
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


def _arrays(value: Any, path: str):
    """``(path, array)`` for every tensor and numpy array inside ``value`` (lists, tuples, dicts)."""
    torch = sys.modules.get("torch")
    if (torch is not None and isinstance(value, torch.Tensor)) or isinstance(value, np.ndarray):
        yield path, value
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _arrays(item, f"{path}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _arrays(item, f"{path}[{key!r}]")


def _state(array: Any) -> tuple:
    """What an in-place change would alter: shape, strides, dtype and a copy of the bytes."""
    if isinstance(array, np.ndarray):
        return array.shape, array.strides, array.dtype.str, array.tobytes()
    data = array.detach().cpu().contiguous().reshape(-1).clone()
    return tuple(array.shape), array.stride(), str(array.dtype), data


def _same_state(before: tuple, after: tuple) -> bool:
    if isinstance(before[3], bytes):
        return before == after
    torch = sys.modules["torch"]
    return before[:3] == after[:3] and torch.equal(_bits(before[3]), _bits(after[3]))


def _bits(data: Any) -> Any:
    """A tensor's elements as integers of the same width, so NaN equals NaN and -0.0 != 0.0."""
    torch = sys.modules["torch"]
    widths = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64, 16: torch.int64}
    if data.dtype == torch.bool:
        return data
    return data.view(widths[data.element_size()])


def _argument_names(function: Any, args: list, kwargs: dict) -> list[str]:
    """The names the function gives its positional arguments (``argument N`` where unknown)."""
    names = [f"argument {index + 1}" for index in range(len(args))]
    try:
        bound = inspect.signature(function).bind_partial(*args, **kwargs)
        positional = [k for k in bound.arguments if k not in kwargs]
        names[: len(positional)] = positional
    except (TypeError, ValueError):
        pass
    return names


def call(namespace: dict, request: dict) -> dict:
    """Run one decoded ``call`` request against ``namespace`` and build its reply."""
    name = request["name"]
    function = namespace.get(name)
    if not callable(function):
        return _missing(name)
    args, kwargs = request["args"], request["kwargs"]
    names = _argument_names(function, args, kwargs)
    given = [*((names[i], a) for i, a in enumerate(args)), *kwargs.items()]
    arrays = [(path, array) for label, value in given for path, array in _arrays(value, label)]
    before = [_state(array) for _, array in arrays]
    trusted = request.get("trusted") or {}
    saved = {key: namespace[key] for key in trusted if key in namespace}
    namespace.update(trusted)
    _ACTIVE.append(threading.get_ident())
    try:
        reply = {"ok": function(*args, **kwargs)}
    except BaseException as exc:  # noqa: BLE001 - report everything, including SystemExit
        return _error_reply(exc)
    finally:
        _ACTIVE.pop()
        for key in trusted:
            if key in saved:
                namespace[key] = saved[key]
            else:
                namespace.pop(key, None)
    try:
        modified = [path for (path, array), state in zip(arrays, before)
                    if not _same_state(state, _state(array))]
    except BaseException:  # noqa: BLE001 - e.g. a tensor resized to something unreadable
        modified = [path for path, _ in arrays]
    if modified:
        reply["modified"] = modified
    return reply


def dispatch(namespace: dict, message) -> bytes:
    """Answer one encoded request (``load`` or ``call``) with an encoded reply; never raises."""
    return b"".join(reply_parts(namespace, message))


def reply_parts(namespace: dict, message) -> list:
    """:func:`dispatch`'s reply as :func:`grader.sandbox.codec.encode_parts`' buffers (each large
    array from its own memory), to be written before anything changes the values it holds."""
    request: dict = {}
    try:
        request = codec.decode(message, _resolver(namespace))
        if request["op"] == "load":
            reply = load_cells(namespace, request["cells"])
        else:
            fresh_scratch()
            reply = call(namespace, request)
    except BaseException as exc:  # noqa: BLE001 - e.g. a callable argument that does not resolve
        reply = _error_reply(exc)
    try:
        return codec.encode_parts(reply)
    except BaseException as exc:  # noqa: BLE001 - the learner returned something unreadable
        return codec.encode_parts({"error": {
            "type": "BadReturn", "mro": ["BadReturn"], "traceback": "",
            "message": f"{request.get('name')} returned a value the grader cannot read: {exc}"}})


def _read_exactly(fd: int, size: int):
    """The next ``size`` bytes of ``fd``: ``bytes``, or for a large message the writable buffer of
    :func:`grader.sandbox.codec.receive_buffer`, whose arrays the decoded values share."""
    buffer = codec.receive_buffer(size)
    if buffer is not None:
        return codec.fill(fd, buffer)
    chunks, remaining = [], size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def serve(read_fd: int, write_fd: int, namespace: dict | None = None, *,
          requests: int | None = None) -> dict:
    """Answer requests until the grader closes the pipe (or after ``requests`` of them)."""
    namespace = fresh_namespace() if namespace is None else namespace
    writer = os.fdopen(write_fd, "wb", closefd=requests is None)
    _PIPE[:] = [read_fd, writer]
    answered = 0
    while requests is None or answered < requests:
        try:
            message = _read_exactly(read_fd, codec.frame_length(_read_exactly(read_fd, 8)))
        except EOFError:
            break
        codec.write_frame(writer, reply_parts(namespace, message))
        answered += 1
    writer.flush()
    _PIPE.clear()
    return namespace


def _fork_child(namespace: dict, control: socket.socket, read_fd: int, write_fd: int) -> int:
    pid = os.fork()
    if pid:
        return pid
    try:  # the fresh child: its own session, the template's namespace, the grader's pipes
        os.setsid()
        # The answer to ``fork``: the child's pid, with its credentials attached.
        _send_pid(control, str(os.getpid()))
        control.close()
        serve(read_fd, write_fd, namespace)
    finally:
        os._exit(0)


def _exit_status(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _collect(statuses: dict[int, int]) -> None:
    """Reap every forked child that has ended, remembering its exit status."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        statuses[pid] = _exit_status(status)


def _answer_wait(control: socket.socket, pid: int, seconds: float, statuses: dict[int, int]) -> None:
    """Answer ``wait PID SECONDS``: the child's exit status, or ``none`` if it has not ended."""
    deadline = time.monotonic() + seconds
    while pid not in statuses:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            break
        if done:
            statuses[pid] = _exit_status(status)
        elif time.monotonic() > deadline:
            break
        else:
            time.sleep(0.01)
    control.send(str(statuses.get(pid, "none")).encode())


def _send_pid(control: socket.socket, text: str) -> None:
    """Send ``text`` with this process's credentials attached: the kernel gives the grader the pid
    as the grader sees it (another PID namespace's, under bubblewrap), and a process cannot claim
    to be another."""
    me = os.getpid()
    control.sendmsg([text.encode()], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS,
                                       struct.pack("3i", me, os.getuid(), os.getgid()))])


def serve_template(read_fd: int, write_fd: int, control_fd: int) -> None:
    """Load the cells (one ``load`` request on the pipes), then fork a child per request.

    Control requests on the Unix socket ``control_fd``, one datagram each, answered in ASCII:
    ``fork`` with two file descriptors attached (the new child's read and write ends) is answered
    by the new child itself, with its pid and its credentials; ``wait PID SECONDS`` answers the
    child's exit status (as :attr:`subprocess.Popen.returncode` gives it) or ``none`` if it has
    not ended.
    """
    _single_threaded()
    namespace = serve(read_fd, write_fd, requests=1)
    _freeze()
    os.close(read_fd)
    os.close(write_fd)
    control = socket.socket(fileno=control_fd)

    def fork(argument: str, fds: list[int]) -> bool:
        if argument or len(fds) != 2:
            return False
        _fork_child(namespace, control, fds[0], fds[1])
        return True

    _serve_control(control, {"fork": fork}, max_fds=2)


def _single_threaded() -> None:
    """Torch's thread pool down to one thread: no thread pool may exist when a process forks."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _freeze() -> None:
    """Move every object made so far to the collector's permanent generation: a forked child's
    collections then never walk them, and so never write to (and copy) the pages it shares with
    its parent."""
    gc.collect()
    gc.freeze()


def _serve_control(control: socket.socket, handlers: dict, *, max_fds: int) -> None:
    """The control loop of a template or the zygote, until the socket ends: one request per
    datagram, ``VERB [ARGUMENT]`` with up to ``max_fds`` file descriptors attached. ``wait PID
    SECONDS`` is answered here (:func:`_answer_wait`); another verb goes to ``handlers[verb](ARGUMENT,
    fds)``, which answers it and returns True, or returns False for a malformed request. A request
    nobody handles is answered ``error``. The attached descriptors are closed after each request
    (a forked child keeps its own copies)."""
    statuses: dict[int, int] = {}
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 4096, max_fds)
        except OSError:
            return
        if not message:
            return
        _collect(statuses)
        verb, _, argument = message.decode("utf-8", errors="replace").partition(" ")
        try:
            if verb == "wait" and len(argument.split()) == 2:
                pid, seconds = argument.split()
                _answer_wait(control, int(pid), float(seconds), statuses)
            elif not (verb in handlers and handlers[verb](argument, fds)):
                control.send(b"error")
        finally:
            for fd in fds:
                os.close(fd)


def _guard_grader_imports() -> None:
    import grader.fixtures  # noqa: F401 - allowed; fixture modules are imported on demand

    for module in [m for m in sys.modules if m.split(".")[0] == "grader"]:
        if module not in ALLOWED_GRADER_MODULES and not module.startswith("grader.fixtures"):
            del sys.modules[module]
    sys.meta_path.insert(0, _GuardGraderImports())


ZYGOTE_IMPORTS = ("torch", "matplotlib.pyplot")
"""What the zygote imports before it forks any template, once per grading run instead of once per
notebook: torch, and the plotting library that the setup cells of notebooks 01 to 04 import (with
the ``Agg`` backend of the sandbox's environment). A template loads its cells while its suite is
collected, and collecting a suite now takes a few hundredths of a second, so the plotting
library's import (about 0.25 s) was waited for once per notebook that plots; imported here, it
overlaps the judge's own start. Its pages are shared by every fork (about 20 MiB of the zygote's
memory)."""

_PRIVATE_FOLDERS = ("/tmp", "/dev/shm")
"""Folders of the zygote's own view (bubblewrap's private tmpfs) that it empties before each
template: one notebook's files there are not another's."""


def _mount_points() -> list[str]:
    try:
        with open("/proc/self/mounts") as handle:
            points = [line.split()[1] for line in handle if len(line.split()) > 1]
    except OSError:
        return []
    # The file writes a space, tab, newline or backslash in a path as an octal escape.
    import re

    return [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), p) for p in points]


def _kept() -> list[str]:
    """Paths :func:`_empty` never removes, nor any folder above them: mount points (the scratch
    folder and the assets that bubblewrap binds inside ``/tmp`` are the grader's, not the
    learner's) and the Python environment (bound at the path it is launched by, which may lie in
    ``/tmp``)."""
    return [*_mount_points(), sys.prefix, sys.executable, *(p for p in sys.path if p)]


def _empty(folder: str, kept: list[str] | None = None) -> None:
    """Remove what ``folder`` holds, except what holds a path of ``kept`` (default
    :func:`_kept`)."""
    import shutil

    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    if not entries:
        return
    kept = _kept() if kept is None else kept
    for entry in entries:
        if any(k == entry.path or k.startswith(entry.path + "/") for k in kept):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


_SCRATCH: dict = {"workdir": None, "private": False, "kept": None}
"""The scratch folder of this process's learner code, and whether ``/tmp`` and ``/dev/shm`` are
its own (bubblewrap's view): :func:`fresh_scratch` empties them before every call."""


def _use_scratch(workdir: str, *, private: bool) -> None:
    """Make ``workdir`` this process's scratch folder: its working folder, ``HOME``, ``TMPDIR``."""
    import tempfile

    _SCRATCH.update(workdir=workdir, private=private, kept=None)
    os.chdir(workdir)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir
    tempfile.tempdir = None  # computed again from TMPDIR


def fresh_scratch() -> None:
    """Before each call: back to the scratch folder, empty, and an empty ``/tmp`` and
    ``/dev/shm`` where they are the view's own; so no call finds what an earlier one wrote (another
    exercise's, or one test's of the same), and a learner's score does not depend on which
    calls ran before (``--exercise``, the route, a restart after a crash). Files only: a call
    still finds what earlier calls of the same sandbox left in its memory."""
    workdir = _SCRATCH["workdir"]
    if workdir is None:
        return
    try:
        os.chdir(workdir)
    except OSError:
        return
    if _SCRATCH.get("kept") is None:  # no mount changes in a view without capabilities
        _SCRATCH["kept"] = _kept()
    for folder in (workdir, *(_PRIVATE_FOLDERS if _SCRATCH["private"] else ())):
        _empty(folder, _SCRATCH["kept"])


def _fork_template(control: socket.socket, fds: list[int], workdir: str) -> None:
    """Fork a template for one notebook: it answers on its own control socket (the third of
    ``fds``) with its pid and credentials, then serves :func:`serve_template` in ``workdir``."""
    if os.fork():
        return
    try:
        os.setsid()
        control.close()  # the zygote's socket: no template (nor the learner's code) may use it
        read_fd, write_fd, own = fds
        _use_scratch(workdir, private=_SCRATCH["private"])
        answer = socket.socket(fileno=own)
        _send_pid(answer, str(os.getpid()))
        answer.detach()
        serve_template(read_fd, write_fd, own)
    finally:
        os._exit(0)


def serve_zygote(control_fd: int, *, private: bool = False) -> None:
    """Import torch once, then fork a template per notebook on request (one grading run).

    The zygote holds no learner code and nothing of the grader's but this module: each template
    forked from it starts from the same state, whatever an earlier notebook's cells did in theirs.
    Its first message on the Unix socket ``control_fd`` is ``zygote PID`` with its credentials
    (the grader learns which process it is). Requests, one datagram each: ``template WORKDIR``
    with three file descriptors attached (the template's read and write pipes and its own control
    socket), answered by the new template on its socket (:func:`_fork_template`); ``wait PID
    SECONDS`` answered with the template's exit status or ``none``. With ``private`` (its view's
    ``/tmp`` and ``/dev/shm`` are its own, under bubblewrap) it empties them before each template.
    """
    control = socket.socket(fileno=control_fd)
    _send_pid(control, f"zygote {os.getpid()}")
    for name in ZYGOTE_IMPORTS:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a notebook that needs it fails as it would unforked
            pass
    _single_threaded()
    _freeze()

    def template(workdir: str, fds: list[int]) -> bool:
        if not workdir or len(fds) != 3:
            return False
        if private:
            for folder in _PRIVATE_FOLDERS:
                _empty(folder)
        _fork_template(control, fds, workdir)
        return True

    _serve_control(control, {"template": template}, max_fds=3)


def main() -> None:
    read_fd, write_fd = int(sys.argv[1]), int(sys.argv[2])
    mode = sys.argv[3:4]
    private = "--private-tmp" in sys.argv[3:]
    _use_scratch(os.getcwd(), private=private)
    if mode == ["--template"]:
        import torch  # noqa: F401 - imported once here, shared by every forked child

    _guard_grader_imports()
    if mode == ["--template"]:
        serve_template(read_fd, write_fd, int(sys.argv[4]))
    elif mode == ["--zygote"]:
        os.close(read_fd)
        os.close(write_fd)
        serve_zygote(int(sys.argv[4]), private=private)
    else:
        serve(read_fd, write_fd)
    os._exit(0)  # skip interpreter teardown: the learner's atexit handlers are not ours to run


if __name__ == "__main__":
    main()
