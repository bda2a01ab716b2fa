"""Produce byte for byte: requests against hand-laid-out wire bytes (ProduceRequest.json), answers
of v3, v8, v9 and v11 built the same way, with and without record errors and tagged fields."""

from __future__ import annotations

import struct
from typing import Any, Dict, List, Optional, Tuple

import pytest

from cproducer.cluster import Node
from cproducer.errors import CorruptResponseError
from cproducer.protocol import (
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    encode_frame,
    encode_request,
)

I16 = struct.Struct(">h").pack
I32 = struct.Struct(">i").pack
I64 = struct.Struct(">q").pack

B10 = memoryview(bytearray(b"0123456789"))
B200 = memoryview(bytearray(range(200)))


def request() -> ProduceRequest:
    topics: Dict[str, List[Tuple[int, Any]]] = {
        "t": [(0, B10), (1, None), (2, b"")],
        "uu": [(5, B200)],
    }
    return ProduceRequest(-1, 30000, topics, "tx")


def test_produce_v11_request_bytes() -> None:
    parts, size = encode_frame(request(), 11, 42, "cid")
    header = b"\x00\x00\x00\x0b\x00\x00\x00\x2a\x00\x03cid\x00"  # key 0, v11, id 42, "cid", tags
    before_b10 = (
        b"\x03tx"  # transactional id, compact
        b"\xff\xff"  # acks -1
        b"\x00\x00\x75\x30"  # timeout 30000
        b"\x03"  # 2 topics
        b"\x02t"
        b"\x04"  # 3 partitions
        b"\x00\x00\x00\x00\x0b"  # partition 0, 10 bytes of records (compact: 11)
    )
    between = (
        b"\x00"  # partition 0's tagged fields
        b"\x00\x00\x00\x01\x00\x00"  # partition 1: null records, tagged fields
        b"\x00\x00\x00\x02\x01\x00"  # partition 2: empty records, tagged fields
        b"\x00"  # topic t's tagged fields
        b"\x03uu"
        b"\x02"  # 1 partition
        b"\x00\x00\x00\x05\xc9\x01"  # partition 5, 200 bytes (compact: 201)
    )
    after = b"\x00\x00\x00"  # partition, topic, request tagged fields
    body_size = len(header) + len(before_b10) + 10 + len(between) + 200 + len(after)
    assert [bytes(p) for p in parts] == [
        I32(body_size) + header + before_b10,
        bytes(B10),
        between,
        bytes(B200),
        after,
    ]
    assert parts[1] is B10 and parts[3] is B200  # the batches themselves
    assert size == 4 + body_size
    assert [bytes(p) for p in encode_request(request(), 11, 42, "cid")] == [bytes(p) for p in parts]


@pytest.mark.parametrize("version", [3, 8])
def test_produce_non_flexible_request_bytes(version: int) -> None:
    parts, size = encode_frame(request(), version, 42, None)
    header = b"\x00\x00" + I16(version) + b"\x00\x00\x00\x2a\xff\xff"  # null client id
    before_b10 = (
        b"\x00\x02tx"  # transactional id
        b"\xff\xff"  # acks -1
        b"\x00\x00\x75\x30"  # timeout 30000
        b"\x00\x00\x00\x02"  # 2 topics
        b"\x00\x01t"
        b"\x00\x00\x00\x03"  # 3 partitions
        b"\x00\x00\x00\x00\x00\x00\x00\x0a"  # partition 0, 10 bytes of records
    )
    between = (
        b"\x00\x00\x00\x01\xff\xff\xff\xff"  # partition 1: null records
        b"\x00\x00\x00\x02\x00\x00\x00\x00"  # partition 2: empty records
        b"\x00\x02uu"
        b"\x00\x00\x00\x01"  # 1 partition
        b"\x00\x00\x00\x05\x00\x00\x00\xc8"  # partition 5, 200 bytes
    )
    body_size = len(header) + len(before_b10) + 10 + len(between) + 200
    # no empty part after the last batch (a write of nothing is no progress for a send loop)
    assert [bytes(p) for p in parts] == [
        I32(body_size) + header + before_b10,
        bytes(B10),
        between,
        bytes(B200),
    ]
    assert size == 4 + body_size


def test_produce_request_without_transactional_id_or_topics() -> None:
    parts, size = encode_frame(ProduceRequest(1, 5, {}), 9, 1, "c")
    body = b"\x00\x00\x01\x00\x00\x00\x05\x01\x00"
    header = b"\x00\x00\x00\x09\x00\x00\x00\x01\x00\x01c\x00"
    assert [bytes(p) for p in parts] == [I32(len(header) + len(body)) + header + body]
    assert size == 4 + len(header) + len(body)


# --- answers -------------------------------------------------------------------------------------


def cstr(s: Optional[str]) -> bytes:
    if s is None:
        return b"\x00"
    data = s.encode()
    assert len(data) < 127
    return bytes([len(data) + 1]) + data


def nstr(s: Optional[str]) -> bytes:
    return b"\xff\xff" if s is None else I16(len(s.encode())) + s.encode()


def partition_v11(
    index: int,
    err: int = 0,
    base: int = 0,
    append_time: int = -1,
    start: int = 0,
    record_errors: List[Tuple[int, Optional[str]]] = [],  # noqa: B006 (read only)
    message: Optional[str] = None,
    tags: bytes = b"\x00",
) -> bytes:
    out = I32(index) + I16(err) + I64(base) + I64(append_time) + I64(start)
    out += bytes([len(record_errors) + 1])
    for batch_index, batch_message in record_errors:
        out += I32(batch_index) + cstr(batch_message) + b"\x00"
    return out + cstr(message) + tags


def answer_v11(partitions: bytes, count: int, tags: bytes = b"\x00", throttle: int = 0) -> bytes:
    return b"\x02" + cstr("t") + bytes([count + 1]) + partitions + b"\x00" + I32(throttle) + tags


def test_common_v11_answer() -> None:
    parts = partition_v11(0, base=100, start=7) + partition_v11(3, base=2**40, append_time=5)
    resp = ProduceRequest.decode_response(11, memoryview(answer_v11(parts, 2, throttle=9)))
    assert resp == ProduceResponse(
        {
            ("t", 0): PartitionProduceResponse(0, 100, -1, 7, [], None, None),
            ("t", 3): PartitionProduceResponse(0, 2**40, 5, 0, [], None, None),
        },
        9,
        [],
    )


def test_v11_answer_with_record_errors() -> None:
    part = partition_v11(
        1, err=87, base=-1, record_errors=[(2, "bad"), (4, None)], message="invalid record"
    )
    resp = ProduceRequest.decode_response(11, memoryview(answer_v11(part, 1)))
    assert resp.responses[("t", 1)] == PartitionProduceResponse(
        87, -1, -1, 0, [(2, "bad"), (4, None)], "invalid record", None
    )


LEADER_TAG = b"\x00\x09" + I32(7) + I32(12) + b"\x00"  # tag 0, 9 bytes: CurrentLeader
UNKNOWN_TAG = b"\x05\x03xyz"  # tag 5, 3 bytes


def endpoints_tag() -> bytes:
    endpoints = b"\x03"  # 2 endpoints
    endpoints += I32(7) + cstr("broker-7") + I32(9093) + cstr("rack-b") + b"\x00"
    endpoints += I32(8) + cstr("::1") + I32(19092) + cstr(None) + b"\x00"
    return b"\x00" + bytes([len(endpoints)]) + endpoints


def test_v11_answer_with_leader_hints_and_unknown_tags() -> None:
    moved = partition_v11(2, err=6, base=-1, tags=b"\x02" + UNKNOWN_TAG + LEADER_TAG)
    unknown_only = partition_v11(5, base=99, tags=b"\x01" + UNKNOWN_TAG)
    top = b"\x02" + UNKNOWN_TAG + endpoints_tag()
    resp = ProduceRequest.decode_response(11, memoryview(answer_v11(moved + unknown_only, 2, top)))
    assert resp.responses[("t", 2)].current_leader == (7, 12)
    assert resp.responses[("t", 5)] == PartitionProduceResponse(0, 99, -1, 0, [], None, None)
    assert resp.node_endpoints == [Node(7, "broker-7", 9093, "rack-b"), Node(8, "::1", 19092)]


def test_v9_answer_skips_the_tags_it_does_not_define() -> None:
    # v9 has no CurrentLeader or NodeEndpoints: tagged fields are skipped, whatever their tag
    part = partition_v11(2, err=6, base=-1, tags=b"\x01" + LEADER_TAG)
    resp = ProduceRequest.decode_response(9, memoryview(answer_v11(part, 1, b"\x01" + UNKNOWN_TAG)))
    assert resp.responses[("t", 2)].current_leader is None
    assert resp.node_endpoints == []


def test_non_flexible_answers() -> None:
    v8_part = I32(4) + I16(0) + I64(50) + I64(-1) + I64(3)
    v8_part += I32(1) + I32(0) + nstr("why")  # one record error
    v8_part += nstr(None)  # error message
    v8 = b"\x00\x00\x00\x01" + nstr("t") + b"\x00\x00\x00\x01" + v8_part + I32(0)
    resp = ProduceRequest.decode_response(8, memoryview(v8))
    assert resp.responses == {("t", 4): PartitionProduceResponse(0, 50, -1, 3, [(0, "why")])}
    v3_part = I32(4) + I16(0) + I64(50) + I64(-1)  # no log start offset, no record errors
    v3 = b"\x00\x00\x00\x01" + nstr("t") + b"\x00\x00\x00\x01" + v3_part + I32(8)
    resp = ProduceRequest.decode_response(3, memoryview(v3))
    assert resp == ProduceResponse({("t", 4): PartitionProduceResponse(0, 50)}, 8)


def test_every_truncation_of_an_answer_is_corrupt() -> None:
    moved = partition_v11(2, err=6, base=-1, tags=b"\x02" + UNKNOWN_TAG + LEADER_TAG)
    errs = partition_v11(1, err=87, record_errors=[(2, "bad")], message="m")
    full = answer_v11(moved + errs, 2, b"\x01" + endpoints_tag())
    ProduceRequest.decode_response(11, memoryview(full))
    for cut in range(len(full)):
        with pytest.raises(CorruptResponseError):
            ProduceRequest.decode_response(11, memoryview(full[:cut]))


def test_a_tag_count_with_no_fields_behind_it_is_corrupt() -> None:
    part = partition_v11(0, tags=b"\x01")  # one tagged field announced, then the topic's end
    with pytest.raises(CorruptResponseError):
        ProduceRequest.decode_response(11, memoryview(answer_v11(part, 1)))


def test_partition_response_is_a_value() -> None:
    a = PartitionProduceResponse(0, 5)
    assert (a.log_append_time_ms, a.log_start_offset, a.error_message, a.current_leader) == (
        -1,
        -1,
        None,
        None,
    )
    b = PartitionProduceResponse(error_code=0, base_offset=5)
    assert a.record_errors == [] and a.record_errors is not b.record_errors
    assert a == b and a != PartitionProduceResponse(0, 6) and a != (0, 5)
    assert repr(a) == (
        "PartitionProduceResponse(error_code=0, base_offset=5, log_append_time_ms=-1, "
        "log_start_offset=-1, record_errors=[], error_message=None, current_leader=None)"
    )
    with pytest.raises(TypeError, match="unhashable"):
        hash(a)
    a.current_leader = (1, 2)  # mutable, as the dataclass was
    assert a != b
    with pytest.raises(AttributeError):
        a.other = 1  # type: ignore[attr-defined]
