"""Produce (key 0), versions 3-11 (ProduceRequest.json / ProduceResponse.json).

The record batches are passed through as separate parts (memoryviews of pooled buffers), so the
network layer writes them with one gather write and no copy.

v10 and v11 send what v9 sends. v10 answers may carry KIP-951's leader hints as tagged fields: a
partition that failed with NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH) names its current
leader and epoch (``CurrentLeader``, tag 0 of the partition), and the answer lists those leaders'
endpoints (``NodeEndpoints``, tag 0 of the response), so the client can retry at the new leader
without a metadata round trip. Asking with v11 tells the broker that the client knows
TRANSACTION_ABORTABLE (KIP-890). v12 would say the client uses transactions V2 (no
AddPartitionsToTxn), which this client does not, and v13 names topics by id: we stop at 11, as
Java does without transactions V2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

from cproducer.cluster import Node
from cproducer.errors import CorruptResponseError
from cproducer.protocol.primitives import Reader, Writer

T = TypeVar("T")

FIRST_LEADER_HINT_VERSION = 10  # KIP-951: CurrentLeader and NodeEndpoints
_CURRENT_LEADER_TAG = 0  # in a partition's answer
_NODE_ENDPOINTS_TAG = 0  # in the answer itself


@dataclass
class PartitionProduceResponse:
    error_code: int
    base_offset: int
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: List[Tuple[int, Optional[str]]] = field(default_factory=list)
    error_message: Optional[str] = None
    #: KIP-951 (v10+): (leader id, leader epoch) the broker names after NOT_LEADER_OR_FOLLOWER;
    #: None when absent (the schema's default is (-1, -1): unknown)
    current_leader: Optional[Tuple[int, int]] = None


@dataclass
class ProduceResponse:
    responses: Dict[Tuple[str, int], PartitionProduceResponse]
    throttle_time_ms: int = 0
    #: KIP-951 (v10+): the endpoints of the leaders named in ``current_leader``
    node_endpoints: List[Node] = field(default_factory=list)


@dataclass
class ProduceRequest:
    API_KEY = 0
    MIN_VERSION = 3
    MAX_VERSION = 11
    FIRST_FLEXIBLE_VERSION = 9
    acks: int
    timeout_ms: int
    topic_data: Dict[str, List[Tuple[int, Any]]]
    transactional_id: Optional[str] = None

    def expect_response(self) -> bool:
        return self.acks != 0

    def encode_body(self, version: int) -> List[Any]:
        flex = version >= 9
        parts: List[Any] = []
        w = Writer()
        w.string(self.transactional_id, compact=flex, nullable=True)
        w.int16(self.acks).int32(self.timeout_ms)
        w.array_length(len(self.topic_data), flex)
        for topic, partitions in self.topic_data.items():
            w.string(topic, compact=flex)
            w.array_length(len(partitions), flex)
            for index, records in partitions:
                w.int32(index)
                n = None if records is None else memoryview(records).nbytes
                w.bytes_length(n, flex)
                if n:
                    parts.append(w.buf)
                    parts.append(records)
                    w = Writer()
                if flex:
                    w.tagged_fields()
            if flex:
                w.tagged_fields()
        if flex:
            w.tagged_fields()
        parts.append(w.buf)
        return parts

    @staticmethod
    def decode_response(version: int, data: memoryview) -> ProduceResponse:
        flex = version >= 9
        hints = version >= FIRST_LEADER_HINT_VERSION
        r = Reader(data)
        out: Dict[Tuple[str, int], PartitionProduceResponse] = {}
        for _ in range(r.array_length(flex)):
            name = r.string(flex) or ""
            for _ in range(r.array_length(flex)):
                index, err, base = r.int32(), r.int16(), r.int64()
                append_time = r.int64()
                start = r.int64() if version >= 5 else -1
                rec_errors: List[Tuple[int, Optional[str]]] = []
                message = None
                if version >= 8:
                    read_error = _read_record_error_flex if flex else _read_record_error
                    rec_errors = r.array(read_error, flex) or []
                    message = r.string(flex)
                leader = None
                if hints:
                    leader = _read_tagged(r, _CURRENT_LEADER_TAG, _read_leader_id_and_epoch)
                elif flex:
                    r.tagged_fields()
                out[(name, index)] = PartitionProduceResponse(
                    err, base, append_time, start, rec_errors, message, leader
                )
            if flex:
                r.tagged_fields()
        throttle = r.int32()
        endpoints: List[Node] = []
        if hints:
            endpoints = _read_tagged(r, _NODE_ENDPOINTS_TAG, _read_node_endpoints) or []
        elif flex:
            r.tagged_fields()
        return ProduceResponse(out, throttle, endpoints)


def _read_record_error(r: Reader) -> Tuple[int, Optional[str]]:
    return r.int32(), r.string()


def _read_record_error_flex(r: Reader) -> Tuple[int, Optional[str]]:
    out = r.int32(), r.string(True)
    r.tagged_fields()
    return out


def _read_leader_id_and_epoch(r: Reader) -> Tuple[int, int]:
    out = r.int32(), r.int32()
    r.tagged_fields()
    return out


def _read_node_endpoint(r: Reader) -> Node:
    node_id, host, port, rack = r.int32(), r.string(True), r.int32(), r.string(True)
    r.tagged_fields()
    return Node(node_id, host or "", port, rack)


def _read_node_endpoints(r: Reader) -> List[Node]:
    return r.array(_read_node_endpoint, True) or []


def _read_tagged(r: Reader, tag: int, read: Callable[[Reader], T]) -> Optional[T]:
    """A tagged-fields section: the field ``tag`` read with ``read`` (None when absent); other
    tags are skipped. The field must fill its declared size exactly."""
    found: Optional[T] = None
    for raw_tag, field_data in r.tagged_field_items():
        if raw_tag == tag:
            sub = Reader(field_data)
            found = read(sub)
            if sub.remaining():
                raise CorruptResponseError(
                    f"tagged field {tag} is {len(field_data)} bytes, {sub.remaining()} unread"
                )
    return found
