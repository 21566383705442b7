"""The message format: round trips, no pickle, clear refusals."""
from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from grader.sandbox import codec


def test_round_trip_keeps_types_dtypes_and_structure():
    value = {
        "t32": torch.randn(2, 3), "t16": torch.randn(4).half(), "bf16": torch.randn(3).bfloat16(),
        "i64": torch.arange(5), "mask": torch.ones(2, 2, dtype=torch.bool),
        "np": np.arange(6, dtype=np.float64).reshape(2, 3),
        "scalars": (1, 2.5, True, None, "text", 1 + 2j), "list": [float("inf"), -0.0],
    }
    out = codec.decode(codec.encode(value))
    for key in ("t32", "t16", "bf16", "i64", "mask"):
        assert isinstance(out[key], torch.Tensor) and out[key].dtype == value[key].dtype
        assert torch.equal(out[key], value[key])
    assert isinstance(out["np"], np.ndarray) and np.array_equal(out["np"], value["np"])
    assert out["scalars"] == value["scalars"] and isinstance(out["scalars"], tuple)
    assert out["list"][0] == float("inf") and isinstance(out["list"], list)


def test_non_contiguous_and_subclassed_tensors_arrive_as_plain_tensors():
    class Sneaky(torch.Tensor):
        def __eq__(self, other):  # noqa: D105
            return True

    x = torch.randn(3, 4).t()
    out = codec.decode(codec.encode([x, x.as_subclass(Sneaky)]))
    assert all(type(t) is torch.Tensor and torch.equal(t, x) for t in out)


@pytest.mark.parametrize("value", [object(), {1: 2}, np.array([object()]), lambda: 1])
def test_unsupported_values_are_refused(value):
    with pytest.raises(codec.CodecError):
        codec.encode(value)


def test_a_pickled_array_is_never_loaded():
    buffer = io.BytesIO()
    np.savez(buffer, __header__=np.frombuffer(b'{"array": "a0", "kind": "numpy", "dtype": "O"}',
                                              dtype=np.uint8), a0=np.array([{"x": 1}], dtype=object))
    with pytest.raises(codec.CodecError, match="malformed"):
        codec.decode(buffer.getvalue())


def test_callable_references_travel_as_names():
    ref = codec.StudentRef("self_attention", {"causal": True})
    assert codec.decode(codec.encode(ref)) == ref
    resolved = codec.decode(codec.encode(ref), lambda kind, name, kwargs: (kind, name, kwargs))
    assert resolved == ("student", "self_attention", {"causal": True})


def test_oversized_frames_are_refused():
    with pytest.raises(codec.CodecError, match="over the"):
        codec.frame_length((codec.MAX_MESSAGE_BYTES + 1).to_bytes(8, "big"))


@pytest.mark.parametrize("layout", codec.VIEW_LAYOUTS)
@pytest.mark.parametrize("value", [
    torch.randn(2, 3, 4, 6), torch.randn(5, 4).half(), torch.randn(7).bfloat16(),
    torch.arange(12).reshape(3, 4), torch.ones(3, 2, dtype=torch.bool),
    np.arange(12.0).reshape(3, 4), np.arange(5, dtype=np.int32),
], ids=["f32-4d", "f16-2d", "bf16-1d", "i64-2d", "bool-2d", "np-f64-2d", "np-i32-1d"])
def test_views_arrive_with_the_same_values_but_not_contiguous(layout, value):
    out = codec.decode(codec.encode(codec.View(value, layout)))
    assert type(out) is type(value) and out.dtype == value.dtype and out.shape == value.shape
    if isinstance(value, torch.Tensor):
        assert torch.equal(out, value) and not out.is_contiguous()
    else:
        assert np.array_equal(out, value) and not out.flags.c_contiguous


def test_view_layouts_are_the_ones_real_models_make():
    x = torch.randn(2, 3, 4, 6)
    heads = codec.decode(codec.encode(codec.View(x, "heads")))
    assert heads.stride()[-1] == 1 and heads.stride()[1] == 6  # (B, T, H, D) storage
    with pytest.raises(RuntimeError):
        heads.view(2, 3 * 4, 6)  # merging heads and positions needs a copy
    transposed = codec.decode(codec.encode(codec.View(x, "transposed")))
    assert transposed.stride()[-1] == 4
    strided = codec.decode(codec.encode(codec.View(x, "strided")))
    assert strided.stride()[-1] == 2 and strided.storage_offset() == 1
    with pytest.raises(RuntimeError):
        strided.view(torch.int16)  # reinterpreting as a narrower type needs a dense last dimension
    assert torch.isnan(torch.as_strided(strided, (6,), (1,), 0)).sum() == 3  # NaN between


def test_views_without_dimensions_arrive_as_they_are_and_bad_layouts_are_refused():
    assert codec.decode(codec.encode(codec.View(torch.tensor(2.0), "heads"))).item() == 2.0
    with pytest.raises(codec.CodecError, match="unknown view layout"):
        codec.encode(codec.View(torch.ones(2), "diagonal"))
    with pytest.raises(codec.CodecError, match="only tensors and arrays"):
        codec.encode(codec.View([1.0, 2.0], "strided"))


def test_the_channel_reads_back_frames_of_any_length_written_in_one_go():
    """The grader's end of a child's pipes writes a frame's prefix and payload (in parts) in one
    call and reads ahead: a long frame (read into a buffer of its own) and the short ones after it
    arrive whole and in order."""
    import os
    import threading
    import time

    from grader.sandbox.parent import _Channel

    read_fd, write_fd = os.pipe()
    channel = _Channel(None, write_fd, read_fd)
    messages = [os.urandom(3 << 20), b"x", b"", os.urandom(70_000)]
    writer = threading.Thread(target=lambda: [channel._write([m[:1000], m[1000:]]) for m in messages])
    writer.start()

    def read(deadline):
        size = codec.frame_length(channel._read(8, deadline, "test"))
        buffer = codec.receive_buffer(size)
        if buffer is None:
            return channel._read(size, deadline, "test")
        return bytes(channel._read_into(buffer, deadline, "test"))
    try:
        deadline = time.monotonic() + 30
        received = [read(deadline) for _ in messages]
    finally:
        writer.join()
        os.close(read_fd)
        os.close(write_fd)
    assert received == messages


def test_messages_are_the_archives_numpy_writes():
    """encode() writes each array's memory into the archive itself; every entry is the one
    ``np.savez`` writes (C order), whatever the array's order, rank or dtype."""
    import zipfile

    arrays = {"__header__": np.frombuffer(b'{"py": null}', dtype=np.uint8),
              "a0": np.arange(12.0).reshape(3, 4), "a1": np.arange(12.0).reshape(3, 4).T,
              "a2": np.zeros(()), "a3": np.ones((2, 0, 3), dtype=np.int8),
              "a4": np.array([True, False]), "a5": np.arange(6, dtype=np.complex64)[::2],
              "a6": np.random.default_rng(0).random((300, 70))}
    ours, numpys = io.BytesIO(), io.BytesIO()
    codec._write_archive(ours, arrays)
    np.savez(numpys, **{key: np.ascontiguousarray(a) if a.ndim else a for key, a in arrays.items()})
    ours, numpys = zipfile.ZipFile(ours), zipfile.ZipFile(numpys)
    assert ours.namelist() == numpys.namelist()
    assert all(ours.read(name) == numpys.read(name) for name in numpys.namelist())


def test_every_array_starts_aligned_and_a_writable_message_is_shared():
    """Each array's data starts at a multiple of 64 bytes from the message's start (a padding
    field in its local header), whatever the sizes before it; decoding a writable buffer gives
    arrays and tensors that use it in place, decoding bytes gives copies; np.load reads both."""
    import torch

    value = [np.arange(3, dtype=np.int8), torch.arange(5.0), np.ones((7, 3), dtype=np.complex128),
             torch.zeros(3, dtype=torch.bool), np.arange(1 << 18, dtype=np.float32)]
    message = codec.encode(value)
    assert b"".join(codec.encode_parts(value)) == message
    shared = bytearray(message)
    arrays = codec._read_archive(shared)
    base = np.frombuffer(shared, dtype=np.uint8).ctypes.data
    for key, array in arrays.items():
        assert (array.ctypes.data - base) % codec.ARRAY_ALIGNMENT == 0, key
    with np.load(io.BytesIO(message)) as archive:
        assert sorted(archive.files) == sorted(arrays)
        assert all(np.array_equal(archive[key], arrays[key]) for key in archive.files)
    decoded = codec.decode(shared)
    decoded[1][0] = 42.0  # a view of the buffer: the change shows in it
    assert codec.decode(shared)[1][0] == 42.0
    copied = codec.decode(message)
    copied[1][0] = 7.0
    assert codec.decode(message)[1][0] == 0.0
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(copied[2:], value[2:]))


def test_large_arrays_are_sent_from_their_own_memory():
    """encode_parts keeps an array of LARGE_BYTES or more as a view of its memory (no copy), and
    the parts join into the message encode writes."""
    big = np.arange(codec.LARGE_BYTES // 4, dtype=np.float32)
    parts = codec.encode_parts({"ok": (big, 3)})
    assert any(isinstance(part, memoryview) and part.obj is not None and len(part) == big.nbytes
               and np.shares_memory(np.frombuffer(part, dtype=np.uint8), big) for part in parts)
    decoded = codec.decode(b"".join(parts))
    assert np.array_equal(decoded["ok"][0], big) and decoded["ok"][1] == 3


@pytest.mark.parametrize("damage", ["compressed", "past the end", "size", "object"])
def test_malformed_archives_are_refused(damage):
    """A message whose entry is compressed, runs past the end, disagrees with its header's size
    or holds objects: CodecError, never a crash or a read outside the message."""
    import zipfile

    buffer = io.BytesIO()
    array = np.arange(10, dtype=np.float64)
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED if damage == "compressed"
                         else zipfile.ZIP_STORED) as archive:
        archive.writestr("__header__.npy", _npy(np.frombuffer(b'{"array": "a0", "kind": "numpy", '
                                                               b'"dtype": "<f8"}', dtype=np.uint8)))
        body = _npy(array)
        if damage == "size":
            body = body[:-8]
        if damage == "object":
            body = body.replace(b"'<f8'", b"'|O' ")
        archive.writestr("a0.npy", body)
    message = buffer.getvalue()
    if damage == "past the end":
        message = message[:200] + message[260:]
    with pytest.raises(codec.CodecError):
        codec.decode(bytearray(message))


def _npy(array: np.ndarray) -> bytes:
    stream = io.BytesIO()
    np.save(stream, array)
    return stream.getvalue()
