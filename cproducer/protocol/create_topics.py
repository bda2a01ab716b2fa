"""CreateTopics (key 19), versions 0-7 (CreateTopicsRequest.json / Response.json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from cproducer.protocol.primitives import Reader, Writer


@dataclass
class NewTopic:
    name: str
    num_partitions: int
    replication_factor: int = 1
    configs: Dict[str, str] = field(default_factory=dict)


@dataclass
class CreatableTopicResult:
    name: str
    error_code: int
    error_message: Optional[str] = None
    num_partitions: int = -1


@dataclass
class CreateTopicsResponse:
    throttle_time_ms: int
    topics: List[CreatableTopicResult]


@dataclass
class CreateTopicsRequest:
    API_KEY = 19
    MIN_VERSION = 0
    MAX_VERSION = 7
    FIRST_FLEXIBLE_VERSION = 5
    topics: List[NewTopic]
    timeout_ms: int = 30000
    validate_only: bool = False

    def expect_response(self) -> bool:
        return True

    def encode_body(self, version: int) -> List[Any]:
        flex = version >= 5
        w = Writer()
        w.array_length(len(self.topics), flex)
        for t in self.topics:
            w.string(t.name, compact=flex).int32(t.num_partitions).int16(t.replication_factor)
            w.array_length(0, flex)  # assignments
            w.array_length(len(t.configs), flex)
            for k, v in t.configs.items():
                w.string(k, compact=flex).string(v, compact=flex, nullable=True)
                if flex:
                    w.tagged_fields()
            if flex:
                w.tagged_fields()
        w.int32(self.timeout_ms)
        if version >= 1:
            w.boolean(self.validate_only)
        if flex:
            w.tagged_fields()
        return [w.buf]

    @staticmethod
    def decode_response(version: int, data: memoryview) -> CreateTopicsResponse:
        flex = version >= 5
        r = Reader(data)
        throttle = r.int32() if version >= 2 else 0

        def config(r: Reader) -> None:
            r.string(flex), r.string(flex), r.boolean(), r.int8(), r.boolean()
            if flex:
                r.tagged_fields()

        def topic(r: Reader) -> CreatableTopicResult:
            name = r.string(flex) or ""
            if version >= 7:
                r.uuid()
            err = r.int16()
            msg = r.string(flex) if version >= 1 else None
            parts = -1
            if version >= 5:
                parts = r.int32()
                r.int16()  # replication factor
                r.array(config, flex)
            if flex:
                r.tagged_fields()
            return CreatableTopicResult(name, err, msg, parts)

        topics = r.array(topic, flex) or []
        if flex:
            r.tagged_fields()
        return CreateTopicsResponse(throttle, topics)
