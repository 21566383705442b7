"""The data format that crosses the boundary between the grader and the learner's code.

A message is one ``.npz`` archive (``np.load`` reads it): every array is an entry of its own, its
data aligned to 64 bytes from the message's start, and a JSON header (entry ``__header__``,
bytes) describes the structure that holds them. ``zipfile`` reads the archive's directory and
numpy each entry's ``.npy`` header; no object dtype is accepted, and nothing in a message can
execute code when it is read, so the grader may decode whatever the sandboxed learner code sends.
A large message is read into memory of its own and its arrays are used in place
(:func:`receive_buffer`, :func:`decode`), and its arrays are written from their own memory
(:func:`encode_parts`): a (65536, 128) float32 table crosses with no copy on either side but the
pipe's.

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
import functools
import inspect
import io
import json
import math
import mmap
import os
import secrets
import signal
import struct
import threading
import weakref
import zipfile
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable

import numpy as np

MAX_MESSAGE_BYTES = 1 << 30
"""Largest message either side accepts (1 GiB)."""

LARGE_BYTES = 1 << 20
"""A message of at least this size (1 MiB) is read into memory of its own (:func:`receive_buffer`),
whose arrays the decoded values then use in place; an array of at least this size is sent from its
own memory (:func:`encode_parts`). Smaller ones are copied, which costs less than the system calls
and page mappings that avoiding the copy would take."""


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
    return b"".join(encode_parts(value, boxes))


def encode_parts(value: Any, boxes: dict | None = None) -> list:
    """:func:`encode`'s message as the list of buffers it is made of, in order, to be written out
    with one ``writev`` (or joined): an array of :data:`LARGE_BYTES` or more is a view of its own
    memory, the rest is copied into ``bytearray`` parts. The views are valid while the arrays and
    tensors in ``value`` are alive and unchanged: write the parts before either changes.

    A (65536, 128) table of float32 is 32 MiB: built into one ``bytes`` object, the message cost
    the sender a copy of every table and the page faults of that fresh memory.
    """
    encoder = _Encoder(boxes)
    header = json.dumps(encoder.encode(value)).encode()
    arrays = {"__header__": np.frombuffer(header, dtype=np.uint8), **encoder.arrays}
    if all(array.nbytes < LARGE_BYTES for array in encoder.arrays.values()):
        small = io.BytesIO()  # nothing to keep by reference: one buffer, written by C code
        _write_archive(small, arrays)
        return [small.getbuffer()]
    stream = _Parts()
    _write_archive(stream, arrays)
    return stream.parts()


class _Seekable(io.RawIOBase):
    """The position of a seekable stream of ``self._end()`` bytes held in memory (:class:`_Parts`,
    :class:`_Reader`). No ``__len__``: ``zipfile`` takes a stream that is false for a closed one."""

    _position = 0

    def _end(self) -> int:
        raise NotImplementedError

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._end()}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._position = base + offset
        return self._position


class _Parts(_Seekable):
    """A seekable stream that keeps what is written to it as a list of buffers (for
    :func:`encode_parts`): a write of :data:`LARGE_BYTES` or more at the end is kept as a reference
    to the caller's buffer, any other write is copied. ``zipfile`` goes back to rewrite each entry's
    local header once the entry is written; such a rewrite lands in copied bytes, and one that
    would touch a referenced buffer raises ``ValueError``."""

    def __init__(self) -> None:
        super().__init__()
        self._starts: list[int] = [0]
        self._buffers: list = [bytearray()]
        self._size = 0

    def _end(self) -> int:
        return self._size

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        length = len(view)
        if self._position == self._size:
            if length >= LARGE_BYTES:
                self._starts += [self._size, self._size + length]
                self._buffers += [view, bytearray()]
            else:
                self._buffers[-1] += view
            self._size += length
        else:
            self._overwrite(view)
        self._position += length
        return length

    def _overwrite(self, view: memoryview) -> None:
        if self._position + len(view) > self._size:
            raise ValueError("a write that starts inside the stream must end inside it")
        done = 0
        while done < len(view):
            at = self._position + done
            index = max(i for i, start in enumerate(self._starts) if start <= at)
            buffer = self._buffers[index]
            if not isinstance(buffer, bytearray):
                raise ValueError("a rewrite would change a referenced buffer")
            offset = at - self._starts[index]
            count = min(len(view) - done, len(buffer) - offset)
            buffer[offset:offset + count] = view[done:done + count]
            done += count

    def parts(self) -> list:
        """The buffers, in order, empty ones left out."""
        return [buffer for buffer in self._buffers if len(buffer)]


ARRAY_ALIGNMENT = 64
"""Every array's data starts at a multiple of this many bytes from the message's start (numpy's
own alignment of an array in a ``.npy`` file), so that a receiver may use it in place."""

_PADDING_FIELD = 0xD935
"""The id of the extra field that pads an entry's local header to :data:`ARRAY_ALIGNMENT` (the
one Android's ``zipalign`` writes); zip readers skip extra fields they do not know."""

_ZIP64_FIELD_BYTES = struct.calcsize("<HHQQ")
"""The zip64 extra field that ``zipfile`` adds to each local header when zip64 is forced."""


def _write_archive(stream: BinaryIO, arrays: dict[str, np.ndarray]) -> None:
    """An uncompressed zip of ``.npy`` entries, zip64 forced, each array in C order: the archive
    ``np.savez(stream, **arrays)`` writes, with two differences. Each array's memory goes into the
    archive as it is, without ``savez``'s copy into new 16 MiB chunks (a large message costs one
    copy, or none with :func:`encode_parts`). And each entry's local header carries an extra field
    of padding, so that the array's data starts at a multiple of :data:`ARRAY_ALIGNMENT` bytes
    from the start of the archive (``np.load`` reads it as it reads ``savez``'s)."""
    with zipfile.ZipFile(stream, mode="w", compression=zipfile.ZIP_STORED,
                         allowZip64=True) as archive:
        for key, array in arrays.items():
            if not array.flags.c_contiguous:
                array = np.array(array, order="C")
            npy = io.BytesIO()
            header = np.lib.format.header_data_from_array_1_0(array)
            try:
                np.lib.format.write_array_header_1_0(npy, header)
            except ValueError:  # a header over 64 KiB (a very long shape)
                np.lib.format.write_array_header_2_0(npy, header)
            entry = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            entry.external_attr = 0o600 << 16
            fixed = (zipfile.sizeFileHeader + len(entry.filename.encode("ascii"))
                     + _ZIP64_FIELD_BYTES + 4 + npy.tell())
            padding = -(stream.tell() + fixed) % ARRAY_ALIGNMENT
            entry.extra = struct.pack("<HH", _PADDING_FIELD, padding) + bytes(padding)
            with archive.open(entry, "w", force_zip64=True) as out:
                out.write(npy.getbuffer())
                if array.size and array.itemsize:
                    out.write(memoryview(array.reshape(-1).view(np.uint8)))


def decode(message, resolve: Callable[[str, str, dict], Any] | None = None) -> Any:
    """Read a message written by :func:`encode`, never unpickling anything.

    ``message``: ``bytes``, or a writable buffer (``bytearray``, ``mmap``; :func:`receive_buffer`)
    that the decoded arrays and tensors then share (each aligned array is a view of it; the others,
    and every array of a read-only message, are copies).

    ``resolve(kind, name, kwargs)`` turns callable references into functions (``kind``
    ``"student"``, ``"fixture"`` or ``"box"``, whose ``name`` is the box's handle); without it they
    come back as :class:`StudentRef` / :class:`FixtureRef` records, and a box as its handle.
    """
    try:
        arrays = _read_archive(message)
        header = json.loads(bytes(arrays.pop("__header__")).decode())
    except Exception as exc:  # any malformed input is the sender's fault
        raise CodecError(f"malformed message: {exc}") from None
    return _decode(header, arrays, resolve)


class _Reader(_Seekable):
    """A read-only, seekable file over a buffer, for ``zipfile`` to read a message's directory
    without a copy of the message (``io.BytesIO`` copies anything but ``bytes``)."""

    def __init__(self, view: memoryview) -> None:
        super().__init__()
        self._view = view

    def _end(self) -> int:
        return len(self._view)

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        chunk = self._view[self._position:self._position + len(target)]
        target[:len(chunk)] = chunk
        self._position += len(chunk)
        return len(chunk)


_NPY_MAGIC = b"\x93NUMPY"
_NPY_LENGTH_FIELDS = {(1, 0): "<H", (2, 0): "<I"}
"""The ``.npy`` format versions a message may use, with the format of their header-length field
(numpy's ``numpy.lib.format``: magic, two version bytes, the length, then the header)."""


def _read_archive(message) -> dict[str, np.ndarray]:
    """The arrays of a message by name, ``.npy`` left off: what ``np.load`` gives, without its copy
    of each array into new memory and its checksum pass over it, where ``message`` is writable.

    ``zipfile`` reads the archive's directory and numpy each entry's ``.npy`` header
    (:func:`_array_header`); each array is then read in place (``np.frombuffer``) at the offset the
    entry's local header gives (PKWARE's APPNOTE 4.3.7). Raises on anything malformed: a
    compressed entry, an entry outside the message, a size that does not match the header, an
    object dtype.
    """
    view = memoryview(message).cast("B")
    writable = not view.readonly
    with zipfile.ZipFile(_Reader(view)) as archive:
        entries = archive.infolist()
    arrays: dict[str, np.ndarray] = {}
    for entry in entries:
        if entry.compress_type != zipfile.ZIP_STORED or not entry.filename.endswith(".npy"):
            raise CodecError(f"entry {entry.filename!r} is not a stored .npy file")
        local = struct.unpack(zipfile.structFileHeader,
                              view[entry.header_offset:entry.header_offset + zipfile.sizeFileHeader])
        if local[0] != zipfile.stringFileHeader:
            raise CodecError(f"entry {entry.filename!r} has no local header")
        start = entry.header_offset + zipfile.sizeFileHeader + local[10] + local[11]
        end = start + entry.file_size
        if end > len(view):
            raise CodecError(f"entry {entry.filename!r} runs past the end of the message")
        version = tuple(view[start + len(_NPY_MAGIC):start + len(_NPY_MAGIC) + 2])
        if bytes(view[start:start + len(_NPY_MAGIC)]) != _NPY_MAGIC or version not in _NPY_LENGTH_FIELDS:
            raise CodecError(f"entry {entry.filename!r} is not a .npy file of version 1.0 or 2.0")
        field = _NPY_LENGTH_FIELDS[version]
        prefix = len(_NPY_MAGIC) + 2 + struct.calcsize(field)
        (length,) = struct.unpack(field, view[start + prefix - struct.calcsize(field):start + prefix])
        shape, fortran, dtype = _array_header(bytes(view[start:start + prefix + length]))
        count = math.prod(shape)
        data = start + prefix + length
        if data + count * dtype.itemsize != end:
            raise CodecError(f"entry {entry.filename!r}: its size does not match its header")
        array = (np.frombuffer(view, dtype=dtype, count=count, offset=data) if count
                 else np.empty(0, dtype=dtype))
        array = array.reshape(shape[::-1]).T if fortran else array.reshape(shape)
        if not writable or not array.flags.aligned:
            array = array.copy(order="K")
        arrays[entry.filename[:-len(".npy")]] = array
    return arrays


@functools.lru_cache(maxsize=512)
def _array_header(raw: bytes) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, Fortran order, dtype) of a ``.npy`` header (``raw``: magic to the header's end), as
    numpy reads it; raises on a malformed header or an object dtype. Kept by header: a suite's
    messages repeat a few shapes, and numpy's reading (``ast.literal_eval``) costs 30 us each."""
    stream = io.BytesIO(raw)
    version = np.lib.format.read_magic(stream)
    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
            else np.lib.format.read_array_header_2_0)
    shape, fortran, dtype = read(stream)
    if dtype.hasobject:
        raise CodecError("arrays of objects cannot be read")
    if stream.read():
        raise CodecError("malformed .npy header")
    return shape, bool(fortran), dtype


def fill(fd: int, buffer, have: int = 0, wait: Callable[[], None] | None = None):
    """Read from ``fd`` into ``buffer`` (:func:`receive_buffer`) from offset ``have`` to its end,
    never past it; ``wait()`` before each read (it may raise, e.g. at a deadline). Raises
    ``EOFError`` if ``fd`` ends first; returns ``buffer``."""
    view = memoryview(buffer)
    try:
        while have < len(view):
            if wait is not None:
                wait()
            count = os.readv(fd, [view[have:]])
            if not count:
                raise EOFError
            have += count
    finally:
        view.release()
    return buffer


def receive_buffer(size: int):
    """Memory for a message of ``size`` bytes that is about to be read: for :data:`LARGE_BYTES` or
    more, a fresh anonymous mapping (page-aligned, not zeroed by a pass of its own, given back whole
    once the last array decoded from it is gone); None for a smaller one, read as ``bytes``."""
    if size < LARGE_BYTES:
        return None
    return mmap.mmap(-1, size)


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


def write_frame(stream: BinaryIO, payload) -> None:
    """Write one length-prefixed frame and flush; a frame of up to 1 MiB in one write (the
    reader wakes once for it, not once for the prefix and again for the payload). ``payload``:
    bytes, or :func:`encode_parts`' list of buffers (each large part written from its own memory)."""
    parts = [payload] if isinstance(payload, (bytes, bytearray, memoryview)) else list(payload)
    size = sum(len(part) for part in parts)
    prefix = struct.pack(">Q", size)
    if size <= 1 << 20:
        stream.write(b"".join([prefix, *parts]))
    else:
        stream.write(prefix)
        for part in parts:
            stream.write(part)
    stream.flush()


def frame_length(prefix: bytes) -> int:
    """The payload length announced by an 8-byte frame prefix."""
    (length,) = struct.unpack(">Q", prefix)
    if length > MAX_MESSAGE_BYTES:
        raise CodecError(f"message of {length} bytes is over the {MAX_MESSAGE_BYTES}-byte limit")
    return length
