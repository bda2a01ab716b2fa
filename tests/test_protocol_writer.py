"""The C Writer byte for byte against hand-computed wire bytes, its errors for bad input, its
buffer growth, and ``request_frame`` (the parts the network layer queues)."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from cproducer.protocol import Writer
from cproducer.protocol.writer import request_frame


def wire(write: Any) -> bytes:
    """What one write puts in a fresh Writer (checked to return the Writer, for chaining)."""
    w = Writer()
    assert write(w) is w
    return w.getvalue()


UVARINTS = {
    0: b"\x00",
    1: b"\x01",
    127: b"\x7f",
    128: b"\x80\x01",
    300: b"\xac\x02",
    16383: b"\xff\x7f",
    16384: b"\x80\x80\x01",
    2**21 - 1: b"\xff\xff\x7f",
    2**21: b"\x80\x80\x80\x01",
    2**31 - 1: b"\xff\xff\xff\xff\x07",
    2**32 - 1: b"\xff\xff\xff\xff\x0f",
    2**63 - 1: b"\xff" * 8 + b"\x7f",
    2**63: b"\x80" * 9 + b"\x01",
    2**64 - 1: b"\xff" * 9 + b"\x01",
    # past 64 bits: the general rule goes on (eleven bytes)
    2**64: b"\x80" * 9 + b"\x02",
    2**70: b"\x80" * 10 + b"\x01",
}


@pytest.mark.parametrize("value", sorted(UVARINTS))
def test_uvarint_bytes(value: int) -> None:
    assert wire(lambda w: w.uvarint(value)) == UVARINTS[value]


VARINTS = {
    0: b"\x00",
    -1: b"\x01",
    1: b"\x02",
    -2: b"\x03",
    63: b"\x7e",
    -64: b"\x7f",
    64: b"\x80\x01",
    -65: b"\x81\x01",
    2**31 - 1: b"\xfe\xff\xff\xff\x0f",
    -(2**31): b"\xff\xff\xff\xff\x0f",
    2**63 - 1: b"\xfe" + b"\xff" * 8 + b"\x01",
    -(2**63): b"\xff" * 9 + b"\x01",
    2**63: b"\x80" * 9 + b"\x02",  # past 64 bits: zigzag on Python ints
}


@pytest.mark.parametrize("value", sorted(VARINTS))
def test_varint_zigzag_bytes(value: int) -> None:
    assert wire(lambda w: w.varint(value)) == VARINTS[value]


def test_negative_unsigned_varint_is_refused() -> None:
    for value in (-1, -(2**63), -(2**70)):
        with pytest.raises(ValueError, match="^unsigned varint must be >= 0$"):
            Writer().uvarint(value)


def test_fixed_width_integers_big_endian() -> None:
    w = Writer().int8(-1).int8(127).int16(-300).int16(0x1234).int32(-70000).int32(2**31 - 1)
    w.uint32(2**32 - 1).uint32(7).int64(-(2**40)).int64(2**63 - 1).int64(-(2**63))
    truthy: Any = [1]
    w.boolean(True).boolean(False).boolean(truthy).boolean(0)  # type: ignore[arg-type]
    assert w.getvalue() == (
        b"\xff\x7f"
        b"\xfe\xd4\x12\x34"
        b"\xff\xfe\xee\x90\x7f\xff\xff\xff"
        b"\xff\xff\xff\xff\x00\x00\x00\x07"
        b"\xff\xff\xff\x00\x00\x00\x00\x00"
        b"\x7f\xff\xff\xff\xff\xff\xff\xff"
        b"\x80\x00\x00\x00\x00\x00\x00\x00"
        b"\x01\x00\x01\x00"
    )


class _Index:
    """An integer-like object (``__index__``), as numpy's are."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


def test_integer_likes_are_taken_as_struct_takes_them() -> None:
    assert wire(lambda w: w.int16(True)) == b"\x00\x01"
    assert wire(lambda w: w.int32(_Index(-2))) == b"\xff\xff\xff\xfe"
    assert wire(lambda w: w.int64(_Index(2**40))) == b"\x00\x00\x01\x00\x00\x00\x00\x00"


@pytest.mark.parametrize(
    "method, value, fmt",
    [
        ("int8", 128, ">b"),
        ("int8", -129, ">b"),
        ("int16", 32768, ">h"),
        ("int16", -32769, ">h"),
        ("int32", 2**31, ">i"),
        ("int32", -(2**31) - 1, ">i"),
        ("uint32", -1, ">I"),
        ("uint32", 2**32, ">I"),
        ("int64", 2**63, ">q"),
        ("int64", -(2**63) - 1, ">q"),
        ("int32", None, ">i"),
        ("int16", 1.5, ">h"),
        ("int64", "7", ">q"),
        ("int32", _Index(2**31), ">i"),
    ],
)
def test_out_of_range_or_non_integer_raises_structs_error(
    method: str, value: Any, fmt: str
) -> None:
    with pytest.raises(struct.error) as expected:
        struct.pack(fmt, value)
    w = Writer().int8(1)
    with pytest.raises(struct.error) as got:
        getattr(w, method)(value)
    assert str(got.value) == str(expected.value)
    assert w.getvalue() == b"\x01"  # nothing written


def test_strings_plain_compact_and_null() -> None:
    assert wire(lambda w: w.string("abc")) == b"\x00\x03abc"
    assert wire(lambda w: w.string("abc", compact=True)) == b"\x04abc"
    assert wire(lambda w: w.string("")) == b"\x00\x00"
    assert wire(lambda w: w.string("", True)) == b"\x01"
    assert wire(lambda w: w.string(None, nullable=True)) == b"\xff\xff"
    assert wire(lambda w: w.string(None, True, True)) == b"\x00"
    # the length counts UTF-8 bytes
    assert wire(lambda w: w.string("hé€")) == b"\x00\x06h\xc3\xa9\xe2\x82\xac"
    # a compact length past one varint byte: 200 + 1 = 0xc9 0x01
    assert wire(lambda w: w.string("x" * 200, compact=True)) == b"\xc9\x01" + b"x" * 200
    assert wire(lambda w: w.string("y" * 32767))[:2] == b"\x7f\xff"


def test_string_errors() -> None:
    for compact in (False, True):
        with pytest.raises(ValueError, match="^a non-nullable string is None$"):
            Writer().string(None, compact=compact)
    with pytest.raises(struct.error, match="format requires"):
        Writer().string("z" * 32768)
    with pytest.raises(UnicodeEncodeError, match="surrogates not allowed"):
        Writer().string("\ud800")
    with pytest.raises(AttributeError, match="encode"):
        Writer().string(b"bytes")  # type: ignore[arg-type]


def test_bytes_plain_compact_and_null() -> None:
    assert wire(lambda w: w.bytes_(b"xyz")) == b"\x00\x00\x00\x03xyz"
    assert wire(lambda w: w.bytes_(bytearray(b"xyz"), compact=True)) == b"\x04xyz"
    assert wire(lambda w: w.bytes_(memoryview(b"xyz"))) == b"\x00\x00\x00\x03xyz"
    assert wire(lambda w: w.bytes_(b"")) == b"\x00\x00\x00\x00"
    assert wire(lambda w: w.bytes_(b"", True)) == b"\x01"
    assert wire(lambda w: w.bytes_(None)) == b"\xff\xff\xff\xff"
    assert wire(lambda w: w.bytes_(None, True)) == b"\x00"
    # the length is in bytes, not items
    ints = memoryview(bytearray(8)).cast("i")
    assert wire(lambda w: w.bytes_(ints)) == b"\x00\x00\x00\x08" + bytes(8)
    with pytest.raises(TypeError, match="bytes-like object is required"):
        Writer().bytes_(5)


def test_length_prefixes_alone() -> None:
    assert wire(lambda w: w.bytes_length(300)) == b"\x00\x00\x01\x2c"
    assert wire(lambda w: w.bytes_length(300, True)) == b"\xad\x02"
    assert wire(lambda w: w.bytes_length(None)) == b"\xff\xff\xff\xff"
    assert wire(lambda w: w.bytes_length(None, True)) == b"\x00"
    assert wire(lambda w: w.array_length(3)) == b"\x00\x00\x00\x03"
    assert wire(lambda w: w.array_length(3, True)) == b"\x04"
    assert wire(lambda w: w.array_length(None, True)) == b"\x00"
    assert wire(lambda w: w.array_length(-1)) == b"\xff\xff\xff\xff"
    assert wire(lambda w: w.array_length(127, True)) == b"\x80\x01"
    with pytest.raises(ValueError, match="unsigned varint"):
        Writer().array_length(-2, True)
    with pytest.raises(struct.error):
        Writer().array_length(2**31)


def test_arrays_tagged_fields_uuid_raw() -> None:
    def item(w: Writer, x: int) -> None:
        w.int16(x)

    assert wire(lambda w: w.array([1, 2], item)) == b"\x00\x00\x00\x02\x00\x01\x00\x02"
    assert wire(lambda w: w.array([1, 2], item, compact=True)) == b"\x03\x00\x01\x00\x02"
    assert wire(lambda w: w.array([], item, True)) == b"\x01"
    assert wire(lambda w: w.array(None, item)) == b"\xff\xff\xff\xff"
    assert wire(lambda w: w.array(None, item, True)) == b"\x00"
    assert wire(lambda w: w.tagged_fields()) == b"\x00"
    assert wire(lambda w: w.uuid(None)) == bytes(16)
    assert wire(lambda w: w.uuid(b"u" * 16)) == b"u" * 16
    assert wire(lambda w: w.raw(b"ab").raw(bytearray(b"c")).raw(memoryview(b"de"))) == b"abcde"
    with pytest.raises(TypeError, match="^can't concat int to bytearray$"):
        Writer().raw(5)
    with pytest.raises(TypeError, match="^can't concat memoryview to bytearray$"):
        Writer().raw(memoryview(b"abcd")[::2])  # not contiguous


def test_buffer_grows_and_buf_is_a_copy() -> None:
    w = Writer()
    expected = bytearray()
    for i in range(3000):  # past the small buffer inside the object, then doubling
        w.int32(i).string("s" * (i % 50), compact=True)
        expected += struct.pack(">i", i) + bytes([i % 50 + 1]) + b"s" * (i % 50)
    big = bytes(range(256)) * 400
    w.raw(big)
    expected += big
    assert w.getvalue() == expected
    buf = w.buf
    assert type(buf) is bytearray and buf == expected and len(buf) == len(expected)
    buf += b"!"  # the caller's copy: the Writer does not change
    assert w.getvalue() == expected
    assert type(w.getvalue()) is bytes


def test_bytes_part_leaves_the_content_out() -> None:
    batch = memoryview(bytearray(b"R" * 10))
    w = Writer().int16(7).bytes_part(batch, True).tagged_fields()
    w.bytes_part(b"", True).bytes_part(None, True).bytes_part(b"xy").int8(1)
    assert w.getvalue() == b"\x00\x07\x0b\x00\x01\x00\x00\x00\x00\x02\x01"  # prefixes only
    parts = w.parts()
    assert [bytes(p) for p in parts] == [
        b"\x00\x07\x0b",
        b"R" * 10,
        b"\x00\x01\x00\x00\x00\x00\x02",
        b"xy",
        b"\x01",
    ]
    assert parts[1] is batch  # not a copy
    assert w.parts() == parts  # parts() can be asked again
    assert Writer().int8(3).parts() == [b"\x03"]


def test_request_frame_parts_and_size() -> None:
    header = Writer().int16(0).int16(11)
    batch = memoryview(bytearray(b"B" * 5))
    ints = memoryview(bytearray(8)).cast("i")
    parts, size = request_frame(header, [b"\x01\x02", batch, bytearray(), b"", ints, b"\x03"])
    assert all(type(p) is memoryview and p.format == "B" and p.ndim == 1 for p in parts)
    assert parts[1] is batch  # already a byte view: passed on as it is
    # the size, header and first body part in one; the empty parts left out
    assert [bytes(p) for p in parts] == [
        b"\x00\x00\x00\x14\x00\x00\x00\x0b\x01\x02",
        b"B" * 5,
        bytes(8),
        b"\x03",
    ]
    assert size == 24 == sum(p.nbytes for p in parts)
    parts, size = request_frame(Writer().int8(9), [])
    assert [bytes(p) for p in parts] == [b"\x00\x00\x00\x01\x09"] and size == 5


def test_request_frame_refuses_what_the_send_loop_cannot_write() -> None:
    header = Writer().int8(0)
    with pytest.raises(TypeError, match="C-contiguous"):
        request_frame(header, [b"", memoryview(b"abcdef")[::2]])
    released = memoryview(bytearray(b"gone"))
    released.release()
    with pytest.raises(ValueError, match="released"):
        request_frame(header, [b"", released])
    with pytest.raises(ValueError, match="released"):
        Writer().bytes_part(released)
    with pytest.raises(ValueError, match="no separate parts"):
        request_frame(Writer().bytes_part(b"x"), [b""])
