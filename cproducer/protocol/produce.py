"""Produce (key 0), versions 3-12 (ProduceRequest.json / ProduceResponse.json).

The record batches are passed through as separate parts (memoryviews of pooled buffers), so the
network layer writes them with one gather write and no copy.

v10, v11 and v12 send what v9 sends. v10 answers may carry KIP-951's leader hints as tagged
fields: a partition that failed with NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH) names its
current leader and epoch (``CurrentLeader``, tag 0 of the partition), and the answer lists those
leaders' endpoints (``NodeEndpoints``, tag 0 of the response), so the client can retry at the new
leader without a metadata round trip. Asking with v11 tells the broker that the client knows
TRANSACTION_ABORTABLE (KIP-890). Asking with v12 tells it that a transactional producer uses
transactions version 2 (KIP-890 part 2): the broker adds the partition to the transaction itself,
no AddPartitionsToTxn before. A transactional producer on transactions version 1 must not ask
with more than v11 (``LAST_VERSION_BEFORE_TRANSACTION_V2``); an idempotent or plain producer
asks with v12 either way, as Java's does. v13 names topics by id: we stop at 12.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

from cproducer.cluster import Node
from cproducer.errors import CorruptResponseError
from cproducer.protocol.primitives import Reader, Writer

T = TypeVar("T")

FIRST_LEADER_HINT_VERSION = 10  # KIP-951: CurrentLeader and NodeEndpoints
#: the newest Produce a transactional producer on transactions version 1 sends (Java's
#: ProduceRequest.LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2)
LAST_VERSION_BEFORE_TRANSACTION_V2 = 11
_CURRENT_LEADER_TAG = 0  # in a partition's answer
_NODE_ENDPOINTS_TAG = 0  # in the answer itself


class PartitionProduceResponse:
    """One partition's answer. A plain class with slots, not a dataclass: the I/O thread makes
    one per partition of every answer, and its ``__init__`` is the cheapest Python can run (the
    dataclass's equality and repr are kept)."""

    __slots__ = (
        "error_code",
        "base_offset",
        "log_append_time_ms",
        "log_start_offset",
        "record_errors",
        "error_message",
        "current_leader",
    )

    def __init__(
        self,
        error_code: int,
        base_offset: int,
        log_append_time_ms: int = -1,
        log_start_offset: int = -1,
        record_errors: Optional[List[Tuple[int, Optional[str]]]] = None,
        error_message: Optional[str] = None,
        current_leader: Optional[Tuple[int, int]] = None,
    ) -> None:
        self.error_code = error_code
        self.base_offset = base_offset
        self.log_append_time_ms = log_append_time_ms
        self.log_start_offset = log_start_offset
        #: (batch index, message) per record the broker refused (v8+)
        self.record_errors: List[Tuple[int, Optional[str]]] = (
            [] if record_errors is None else record_errors
        )
        self.error_message = error_message
        #: KIP-951 (v10+): (leader id, leader epoch) the broker names after
        #: NOT_LEADER_OR_FOLLOWER; None when absent (the schema's default is (-1, -1): unknown)
        self.current_leader = current_leader

    def _fields(self) -> Tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # mutable, and equal by value: as a dataclass

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({values})"


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
    MAX_VERSION = 12
    FIRST_FLEXIBLE_VERSION = 9
    acks: int
    timeout_ms: int
    topic_data: Dict[str, List[Tuple[int, Any]]]
    transactional_id: Optional[str] = None

    def expect_response(self) -> bool:
        return self.acks != 0

    def encode_body(self, version: int) -> List[Any]:
        # The batches are not copied: each is a part of its own (``bytes_part``) between the
        # bytes written around it. The loops are split on ``flex`` so that a partition costs two
        # Python lines, its fields one chained C call.
        flex = version >= 9
        w = Writer()
        w.string(self.transactional_id, flex, True).int16(self.acks).int32(self.timeout_ms)
        w.array_length(len(self.topic_data), flex)
        if flex:
            for topic, partitions in self.topic_data.items():
                w.string(topic, True).array_length(len(partitions), True)
                for index, records in partitions:
                    w.int32(index).bytes_part(records, True).tagged_fields()
                w.tagged_fields()
            w.tagged_fields()
        else:
            for topic, partitions in self.topic_data.items():
                w.string(topic).array_length(len(partitions))
                for index, records in partitions:
                    w.int32(index).bytes_part(records)
        return w.parts()

    @staticmethod
    def decode_response(version: int, data: memoryview) -> ProduceResponse:
        # The common answer, every partition written (no record errors, no tagged fields), costs
        # a few Python lines a partition: the record errors' array is read only when it has
        # items, and a tagged-fields section goes to ``_read_tagged`` only when it has fields
        # (before v10, which defines none, they are skipped).
        flex = version >= 9
        hints = version >= FIRST_LEADER_HINT_VERSION
        r = Reader(data)
        out: Dict[Tuple[str, int], PartitionProduceResponse] = {}
        read_error = _read_record_error_flex if flex else _read_record_error
        rec_errors: List[Tuple[int, Optional[str]]]
        for _ in range(r.array_length(flex)):
            name = r.string(flex) or ""
            for _ in range(r.array_length(flex)):
                index, err, base, append_time = r.int32(), r.int16(), r.int64(), r.int64()
                start = r.int64() if version >= 5 else -1
                if version >= 8:
                    n = r.array_length(flex)
                    rec_errors = [read_error(r) for _ in range(n)] if n > 0 else []
                    message = r.string(flex)
                else:
                    rec_errors, message = [], None
                leader = None
                if flex:
                    tags = r.tagged_field_items()  # [] for the usual empty section
                    if tags and hints:
                        leader = _read_tagged(tags, _CURRENT_LEADER_TAG, _read_leader_id_and_epoch)
                out[(name, index)] = PartitionProduceResponse(
                    err, base, append_time, start, rec_errors, message, leader
                )
            if flex:
                r.tagged_fields()
        throttle = r.int32()
        endpoints: List[Node] = []
        if flex:
            tags = r.tagged_field_items()
            if tags and hints:
                endpoints = _read_tagged(tags, _NODE_ENDPOINTS_TAG, _read_node_endpoints) or []
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


def _read_tagged(
    items: List[Tuple[int, memoryview]], tag: int, read: Callable[[Reader], T]
) -> Optional[T]:
    """The field ``tag`` of a tagged-fields section (``Reader.tagged_field_items``) read with
    ``read`` (None when absent); other tags are skipped. The field must fill its declared size
    exactly."""
    found: Optional[T] = None
    for raw_tag, field_data in items:
        if raw_tag == tag:
            sub = Reader(field_data)
            found = read(sub)
            if sub.remaining():
                raise CorruptResponseError(
                    f"tagged field {tag} is {len(field_data)} bytes, {sub.remaining()} unread"
                )
    return found
