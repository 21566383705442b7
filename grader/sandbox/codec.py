"""The data format that crosses the boundary between the grader and the learner's code.

A message is one ``.npz`` archive (read back with ``allow_pickle=False``): every array is an
entry of its own, and a JSON header (entry ``__header__``, bytes) describes the structure that
holds them. Nothing in a message can execute code when it is read, so the grader may decode
whatever the sandboxed learner code sends.

Supported values: ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, lists, tuples,
dicts with string keys, numpy arrays of numeric or bool dtype, torch tensors of those dtypes
(``bfloat16`` included: it travels as its 16-bit pattern), references to callables
(:class:`StudentRef`, :class:`FixtureRef`), which only the sandbox resolves, :class:`BlackBox`, a
trusted callable that stays where it is (see below), and :class:`View`, a tensor or array that the
receiver rebuilds as a non-contiguous view with the same values.

Black boxes
-----------
A :class:`BlackBox` wraps a trusted callable (a hidden implementation that a diagnose exercise
judges, the trusted version of an earlier exercise) that must never enter the learner's process.
Only its ``handle`` crosses: a random token drawn here, per box, when the box is made. The sandbox
turns the handle into an instance of one class (:class:`grader.sandbox.child.Box`) that holds nothing but
the handle; calling it sends ``{"op": "callback", "handle": ..., "args": [...], "kwargs": {...}}``
back up the same pipe, the grader runs the trusted callable on those plain values
(:func:`run_callback`: the arguments are first bound to the box's public ``signature``; hidden
keyword arguments are bound here and never cross) and answers ``{"ok": value}`` or
``{"error": {"type", "message"}}``, which the sandbox raises as a clean exception in the learner's
process. A callback is answered only while the call that handed over the box is running (the
grader serves callbacks while it waits for that call's reply; see
:meth:`grader.sandbox.parent._Channel.request`), within :data:`CALLBACK_TIMEOUT` seconds each.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import json
import secrets
import signal
import struct
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable

import numpy as np

MAX_MESSAGE_BYTES = 1 << 30
"""Largest message either side accepts (1 GiB)."""


class CodecError(ValueError):
    """A value cannot be encoded, or a message is malformed."""


@dataclass(frozen=True)
class StudentRef:
    """The learner's function ``name``, with keyword arguments bound, passed as an argument."""

    name: str
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class FixtureRef:
    """A trusted helper ``grader.fixtures.<module>.<function>`` with keyword arguments bound."""

    name: str
    kwargs: dict = field(default_factory=dict)


CALLBACK_TIMEOUT = 10.0
"""Seconds one call of a black box may take on the trusted side (the learner chose the inputs)."""

_LOCAL_BOXES: "weakref.WeakValueDictionary[str, BlackBox]" = weakref.WeakValueDictionary()
"""Boxes made in this process, by handle: where the learner's code runs in the same process as
the judge (the inline ``check()``, which runs public checks only), a box is served locally."""


class BlackBox:
    """A trusted callable handed to the learner's code by handle only (see the module docstring).

    ``signature``: the public signature the learner may call it with (a callable whose signature
    is taken, or an :class:`inspect.Signature`); the call is bound to it before ``function`` runs,
    so a wrong call gets a ``TypeError`` that names the public parameters only. ``timeout``: seconds
    each call may run. The handle is drawn with :mod:`secrets` and tells nothing about ``function``.
    """

    def __init__(self, function: Callable[..., Any], signature: Any, *,
                 timeout: float = CALLBACK_TIMEOUT) -> None:
        self.function = function
        self.signature = (signature if isinstance(signature, inspect.Signature)
                          else inspect.signature(signature))
        self.timeout = timeout
        self.handle = secrets.token_hex(16)
        _LOCAL_BOXES[self.handle] = self

    def __repr__(self) -> str:
        return f"BlackBox{self.signature}"


def local_box(handle: str) -> "BlackBox | None":
    """The box of ``handle`` if it was made in this process (see :data:`_LOCAL_BOXES`)."""
    return _LOCAL_BOXES.get(handle)


CALLBACK_ERRORS = ("TypeError", "ValueError", "IndexError", "KeyError", "ZeroDivisionError",
                   "OverflowError", "RuntimeError", "TimeoutError")
"""Exception types a black box's error is raised as in the learner's process (others: RuntimeError)."""


class _CallbackTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise _CallbackTimeout


def run_callback(box: "BlackBox | None", args: Any, kwargs: Any) -> dict:
    """Run one callback of the learner's code on the trusted side: the reply to send back.

    Never raises. ``box`` is None when the handle is unknown (made up, or of a call that has
    ended). The error messages say what was wrong with the call in the public signature's words,
    never which implementation ran (a hidden function's own message could name it).
    """
    if box is None:
        return _callback_error("RuntimeError", "this function can only be called while the call that "
                               "received it is running (keep no reference to it for later calls)")
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        return _callback_error("TypeError", "malformed call")
    try:
        bound = box.signature.bind(*args, **kwargs)
    except TypeError as exc:
        return _callback_error("TypeError", f"{exc}; this function takes {box.signature}")
    timed = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGALRM, _alarm) if timed else None
    try:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, box.timeout)
        with one_torch_thread(_torch_if_loaded()):  # a callback is small: no thread pool
            value = box.function(*bound.args, **bound.kwargs)
    except _CallbackTimeout:
        return _callback_error("TimeoutError", f"this function did not finish within {box.timeout:g} s "
                               "on these arguments; call it on smaller inputs")
    except Exception as exc:  # noqa: BLE001 - the learner chose the inputs
        kind = type(exc).__name__ if type(exc).__name__ in CALLBACK_ERRORS else "RuntimeError"
        return _callback_error(kind, f"this function raised {type(exc).__name__} on these arguments; "
                               f"check their shapes, dtypes and values against {box.signature}")
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return {"ok": value}


def _callback_error(kind: str, message: str) -> dict:
    return {"error": {"type": kind, "message": message}}


VIEW_LAYOUTS = ("transposed", "heads", "strided")
"""How a :class:`View` is laid out in memory when it arrives (shape and values never change):

- ``transposed``: stored with its last two dimensions swapped and viewed back, as ``w.t()`` or
  ``k.transpose(-2, -1)`` is (the last dimension is not contiguous);
- ``heads``: stored with dimensions -3 and -2 swapped and viewed back, as a ``(B, T, H, D)``
  projection seen as ``(B, H, T, D)`` is (the last dimension stays contiguous, ``.view`` over
  the heads fails);
- ``strided``: every other element of a buffer twice as wide along the last dimension, starting
  at the second one (stride 2, a storage offset; NaN, or the dtype's largest value, in the
  elements between).

A layout that needs more dimensions than the value has falls back to ``strided``; a value with no
dimension (or no element) arrives as it is.
"""


@dataclass(frozen=True)
class View:
    """``value`` (a torch tensor or numpy array), to arrive as a non-contiguous view ``layout``."""

    value: Any
    layout: str = "strided"


def _torch():
    import torch  # imported lazily: the codec is also used where torch is not needed

    return torch


def _is_tensor(value: Any) -> bool:
    torch = _torch_if_loaded()
    return torch is not None and isinstance(value, torch.Tensor)


def _torch_if_loaded():
    import sys

    return sys.modules.get("torch")


@contextlib.contextmanager
def one_torch_thread(torch=None):
    """Run the body with ``torch`` (the module, or None: nothing to do) on one thread, and give it
    back its number of threads after.

    The grader's own computations (a black box's call, a suite's references, the scoring model)
    are small: a thread pool gains nothing on them, and where other processes hold the cores its
    threads wait on each other, up to a hundred times slower. The sandbox runs on one thread too
    (:mod:`grader.sandbox.child`), and one thread makes a figure reproduce on any machine.
    """
    threads = torch.get_num_threads() if torch is not None else 1
    if threads != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if threads != 1:
            torch.set_num_threads(threads)


class _Encoder:
    def __init__(self, boxes: dict | None = None) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.boxes = boxes

    def _array(self, array: np.ndarray, kind: str, dtype: str) -> dict:
        key = f"a{len(self.arrays)}"
        self.arrays[key] = array
        return {"array": key, "kind": kind, "dtype": dtype}

    def encode(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, str)):
            return {"py": value}
        if isinstance(value, int):
            return {"py": int(value)}
        if isinstance(value, float):
            return {"float": repr(float(value))}
        if isinstance(value, complex):
            return {"complex": [repr(value.real), repr(value.imag)]}
        if isinstance(value, np.generic):
            return self.encode(value.item())
        if isinstance(value, (list, tuple)):
            kind = "tuple" if isinstance(value, tuple) else "list"
            return {kind: [self.encode(v) for v in value]}
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                raise CodecError("dict keys must be strings")
            return {"dict": {k: self.encode(v) for k, v in value.items()}}
        if isinstance(value, View):
            if value.layout not in VIEW_LAYOUTS:
                raise CodecError(f"unknown view layout {value.layout!r}; one of {VIEW_LAYOUTS}")
            node = self.encode(value.value)
            if "array" not in node:
                raise CodecError("only tensors and arrays can be sent as views")
            return {**node, "layout": value.layout}
        if isinstance(value, BlackBox):
            if self.boxes is not None:
                self.boxes[value.handle] = value
            return {"callable": "box", "name": value.handle, "kwargs": {"dict": {}}}
        if isinstance(value, (StudentRef, FixtureRef)):
            kind = "student" if isinstance(value, StudentRef) else "fixture"
            return {"callable": kind, "name": value.name, "kwargs": self.encode(value.kwargs)}
        if _is_tensor(value):
            return self._tensor(value)
        if isinstance(value, np.ndarray):
            # No copy either (a plain array's view of a subclass): written before encode() returns.
            array = np.asarray(value)
            if array.dtype.hasobject or array.dtype.kind not in "biufc":
                raise CodecError(f"numpy arrays of dtype {array.dtype} cannot be sent")
            return self._array(array, "numpy", array.dtype.str)
        raise CodecError(f"values of type {type(value).__name__} cannot be sent")

    def _tensor(self, value: Any) -> dict:
        torch = _torch()
        tensor = torch.Tensor.as_subclass(value, torch.Tensor).detach().cpu().contiguous()
        if tensor.is_sparse or tensor.layout != torch.strided:
            raise CodecError("only dense tensors can be sent")
        dtype = str(tensor.dtype).removeprefix("torch.")
        # No copy: the archive is written from the tensor's own memory before encode() returns
        # (a copy would add the tensor's size to the peak memory of every large message).
        if tensor.dtype == torch.bfloat16:
            return self._array(tensor.view(torch.int16).numpy(), "torch", dtype)
        if tensor.dtype not in _TORCH_DTYPES():
            raise CodecError(f"tensors of dtype {tensor.dtype} cannot be sent")
        return self._array(tensor.numpy(), "torch", dtype)


def _TORCH_DTYPES():
    torch = _torch()
    return {torch.float16, torch.float32, torch.float64, torch.complex64, torch.complex128,
            torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
            torch.bfloat16}


def encode(value: Any, boxes: dict | None = None) -> bytes:
    """Serialise ``value`` into one message. Raises :class:`CodecError` for unsupported values.

    :class:`BlackBox` values are sent by handle; with ``boxes`` given, each is also recorded there
    by handle, for the sender to serve the callbacks while the reply is pending.
    """
    encoder = _Encoder(boxes)
    header = json.dumps(encoder.encode(value)).encode()
    buffer = io.BytesIO()
    _write_archive(buffer, {"__header__": np.frombuffer(header, dtype=np.uint8), **encoder.arrays})
    return buffer.getvalue()


def _write_archive(stream: BinaryIO, arrays: dict[str, np.ndarray]) -> None:
    """What ``np.savez(stream, **arrays)`` writes (an uncompressed zip of ``.npy`` entries, zip64
    forced, each array in C order), without its copy of every array into new 16 MiB chunks when
    ``stream`` is not a file: each array's memory goes into the archive as it is, a large message
    costs one copy (the stream's) instead of two, and the judge no page faults for the chunks."""
    import zipfile

    with zipfile.ZipFile(stream, mode="w", compression=zipfile.ZIP_STORED,
                         allowZip64=True) as archive:
        for key, array in arrays.items():
            if not array.flags.c_contiguous:
                array = np.array(array, order="C")
            with archive.open(f"{key}.npy", "w", force_zip64=True) as entry:
                header = np.lib.format.header_data_from_array_1_0(array)
                try:
                    np.lib.format.write_array_header_1_0(entry, header)
                except ValueError:  # a header over 64 KiB (a very long shape)
                    np.lib.format.write_array_header_2_0(entry, header)
                if array.size and array.itemsize:
                    entry.write(memoryview(array.reshape(-1).view(np.uint8)))


def decode(message: bytes, resolve: Callable[[str, str, dict], Any] | None = None) -> Any:
    """Read a message written by :func:`encode`, never unpickling anything.

    ``resolve(kind, name, kwargs)`` turns callable references into functions (``kind``
    ``"student"``, ``"fixture"`` or ``"box"``, whose ``name`` is the box's handle); without it they
    come back as :class:`StudentRef` / :class:`FixtureRef` records, and a box as its handle.
    """
    try:
        archive = np.load(io.BytesIO(message), allow_pickle=False)
        arrays = {key: archive[key] for key in archive.files}
        header = json.loads(bytes(arrays.pop("__header__")).decode())
    except Exception as exc:  # any malformed input is the sender's fault
        raise CodecError(f"malformed message: {exc}") from None
    return _decode(header, arrays, resolve)


def _decode(node: Any, arrays: dict, resolve) -> Any:
    if not isinstance(node, dict) or len(node) < 1:
        raise CodecError("malformed message: bad node")
    if "py" in node:
        return node["py"]
    if "float" in node:
        return float(node["float"])
    if "complex" in node:
        return complex(float(node["complex"][0]), float(node["complex"][1]))
    if "list" in node:
        return [_decode(v, arrays, resolve) for v in node["list"]]
    if "tuple" in node:
        return tuple(_decode(v, arrays, resolve) for v in node["tuple"])
    if "dict" in node:
        return {str(k): _decode(v, arrays, resolve) for k, v in node["dict"].items()}
    if "callable" in node:
        kwargs = _decode(node["kwargs"], arrays, resolve)
        if resolve is not None:
            return resolve(node["callable"], node["name"], kwargs)
        if node["callable"] == "box":
            return str(node["name"])
        ref = StudentRef if node["callable"] == "student" else FixtureRef
        return ref(node["name"], kwargs)
    if "array" in node:
        array = arrays.get(node["array"])
        if array is None:
            raise CodecError("malformed message: missing array")
        if node["kind"] == "numpy":
            return _as_view(array, node.get("layout"), np)
        torch = _torch()
        if node["dtype"] == "bfloat16":
            tensor = torch.from_numpy(array.astype(np.int16)).view(torch.bfloat16)
        else:
            tensor = torch.from_numpy(array)
        return _as_view(tensor, node.get("layout"), torch)
    raise CodecError("malformed message: unknown node")


def _swapped(x: Any, a: int, b: int, lib: Any) -> Any:
    """The values of ``x`` stored with dimensions ``a`` and ``b`` swapped, viewed back."""
    if lib is np:
        return np.ascontiguousarray(np.swapaxes(x, a, b)).swapaxes(a, b)
    return x.transpose(a, b).contiguous().transpose(a, b)


def _as_view(x: Any, layout: str | None, lib: Any) -> Any:
    """``x`` rebuilt as a non-contiguous view ``layout`` (see :data:`VIEW_LAYOUTS`)."""
    if layout is None or x.ndim == 0 or 0 in x.shape:
        return x
    if layout not in VIEW_LAYOUTS:
        raise CodecError(f"malformed message: unknown view layout {layout!r}")
    if layout == "transposed" and x.ndim >= 2:
        return _swapped(x, -1, -2, lib)
    if layout == "heads" and x.ndim >= 3:
        return _swapped(x, -3, -2, lib)
    floating = x.dtype.kind in "fc" if lib is np else (x.dtype.is_floating_point or x.dtype.is_complex)
    boolean = x.dtype == (np.bool_ if lib is np else lib.bool)
    filler = float("nan") if floating else (False if boolean else lib.iinfo(x.dtype).max)
    buffer = lib.full((*x.shape[:-1], 2 * x.shape[-1]), filler, dtype=x.dtype)
    buffer[..., 1::2] = x
    return buffer[..., 1::2]


def write_frame(stream: BinaryIO, payload: bytes) -> None:
    """Write one length-prefixed frame and flush; a frame of up to 1 MiB in one write (the
    reader wakes once for it, not once for the prefix and again for the payload)."""
    prefix = struct.pack(">Q", len(payload))
    if len(payload) <= 1 << 20:
        stream.write(prefix + payload)
    else:
        stream.write(prefix)
        stream.write(payload)
    stream.flush()


def frame_length(prefix: bytes) -> int:
    """The payload length announced by an 8-byte frame prefix."""
    (length,) = struct.unpack(">Q", prefix)
    if length > MAX_MESSAGE_BYTES:
        raise CodecError(f"message of {length} bytes is over the {MAX_MESSAGE_BYTES}-byte limit")
    return length
