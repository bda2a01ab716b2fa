"""Produce (key 0), versions 3-9 (ProduceRequest.json / ProduceResponse.json).

The record batches are passed through as separate parts (memoryviews of pooled buffers), so the
network layer writes them with one gather write and no copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from cproducer.protocol.primitives import Reader, Writer


@dataclass
class PartitionProduceResponse:
    error_code: int
    base_offset: int
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: List[Tuple[int, Optional[str]]] = field(default_factory=list)
    error_message: Optional[str] = None


@dataclass
class ProduceResponse:
    responses: Dict[Tuple[str, int], PartitionProduceResponse]
    throttle_time_ms: int = 0


@dataclass
class ProduceRequest:
    API_KEY = 0
    MIN_VERSION = 3
    MAX_VERSION = 9
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

                    def rec_error(r: Reader) -> Tuple[int, Optional[str]]:
                        i, msg = r.int32(), r.string(flex)
                        if flex:
                            r.tagged_fields()
                        return i, msg

                    rec_errors = r.array(rec_error, flex) or []
                    message = r.string(flex)
                if flex:
                    r.tagged_fields()
                out[(name, index)] = PartitionProduceResponse(
                    err, base, append_time, start, rec_errors, message
                )
            if flex:
                r.tagged_fields()
        throttle = r.int32()
        if flex:
            r.tagged_fields()
        return ProduceResponse(out, throttle)
