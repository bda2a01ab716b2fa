"""Protocol primitives and codecs without a broker: round trips, truncation, garbage."""

from __future__ import annotations

import pytest

from cproducer.errors import CorruptResponseError
from cproducer.protocol import (
    MetadataRequest,
    ProduceRequest,
    Reader,
    Writer,
    decode_response,
    decode_response_header,
    encode_request,
)


def test_round_trip_of_every_type() -> None:
    w = Writer()
    w.int8(-5).boolean(True).int16(-300).int32(-70000).uint32(2**32 - 1).int64(-(2**40))
    for v in (0, 1, 127, 128, 16383, 16384, 2**31, 2**63 - 1):
        w.uvarint(v)
    for v in (0, -1, 1, -64, 63, -(2**31), 2**31 - 1):
        w.varint(v)
    w.string("héllo").string(None, nullable=True).string("c", compact=True)
    w.string(None, compact=True, nullable=True).bytes_(b"xyz").bytes_(None).bytes_(
        b"", compact=True
    )
    w.array([1, 2, 3], lambda w, x: w.int32(x)).array(None, lambda w, x: None, compact=True)
    w.tagged_fields().uuid(b"u" * 16)
    r = Reader(w.getvalue())
    assert (r.int8(), r.boolean(), r.int16(), r.int32(), r.uint32(), r.int64()) == (
        -5,
        True,
        -300,
        -70000,
        2**32 - 1,
        -(2**40),
    )
    assert [r.uvarint() for _ in range(8)] == [0, 1, 127, 128, 16383, 16384, 2**31, 2**63 - 1]
    assert [r.varint() for _ in range(7)] == [0, -1, 1, -64, 63, -(2**31), 2**31 - 1]
    assert (r.string(), r.string(), r.string(True), r.string(True)) == ("héllo", None, "c", None)
    assert (r.bytes_(), r.bytes_(), r.bytes_(True)) == (b"xyz", None, b"")
    assert r.array(lambda r: r.int32()) == [1, 2, 3]
    assert r.array(lambda r: r.int32(), compact=True) is None
    r.tagged_fields()
    assert r.uuid() == b"u" * 16 and r.remaining() == 0


def test_truncation_raises_corrupt_response() -> None:
    data = Writer().int32(7).string("abcdef").getvalue()
    for cut in range(len(data)):
        r = Reader(data[:cut])
        with pytest.raises(CorruptResponseError):
            r.int32()
            r.string()
    with pytest.raises(CorruptResponseError, match="cannot fit"):
        Reader(Writer().int32(1_000_000).getvalue()).array_length()


def test_produce_request_passes_batches_through_uncopied() -> None:
    batch = memoryview(bytearray(b"B" * 1000))
    req = ProduceRequest(-1, 30000, {"t": [(0, batch), (1, batch)]})
    for version in (3, 8, 9):
        parts = encode_request(req, version, 42, "cid")
        assert sum(p is batch for p in parts) == 2  # the batch itself, twice, not a copy
        frame = b"".join(bytes(p) for p in parts)
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4


def test_garbage_response_bodies_raise_corrupt_response() -> None:
    for version in (1, 7, 9, 12):
        with pytest.raises(CorruptResponseError):
            decode_response(MetadataRequest(["t"]), version, memoryview(b"\x00\x01\x02"))
    with pytest.raises(CorruptResponseError):
        decode_response_header(3, True, memoryview(b"\x00\x00"))
    # a flexible header with a tagged field that claims more bytes than there are
    with pytest.raises(CorruptResponseError):
        decode_response_header(3, True, memoryview(b"\x00\x00\x00\x01\x01\x00\x7f"))
