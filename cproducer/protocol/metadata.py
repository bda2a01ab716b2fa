"""Metadata (key 3), versions 0-12 (MetadataRequest.json / MetadataResponse.json).

``topics=None`` asks for every topic: a null array from v1 on, an empty array in v0 (where an
empty list cannot mean "no topics", so ``topics=[]`` is refused for v0). Before v4 the request has
no ``allow_auto_topic_creation`` field: the broker decides by its own configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional

from cproducer.cluster import Node
from cproducer.errors import UnsupportedVersionError
from cproducer.protocol.primitives import Reader, Writer


@dataclass
class PartitionMetadata:
    error_code: int
    partition: int
    leader_id: int
    leader_epoch: int
    replica_ids: List[int]
    isr_ids: List[int]
    offline_replica_ids: List[int]


@dataclass
class TopicMetadata:
    error_code: int
    name: Optional[str]
    is_internal: bool
    partitions: List[PartitionMetadata]
    topic_id: bytes = bytes(16)


@dataclass
class MetadataResponse:
    throttle_time_ms: int
    brokers: List[Node]
    cluster_id: Optional[str]
    controller_id: int
    topics: List[TopicMetadata] = field(default_factory=list)


@dataclass
class MetadataRequest:
    API_KEY = 3
    MIN_VERSION = 0
    MAX_VERSION = 12
    FIRST_FLEXIBLE_VERSION = 9
    topics: Optional[List[str]] = None  # None = all topics
    allow_auto_topic_creation: bool = True

    def expect_response(self) -> bool:
        return True

    def encode_body(self, version: int) -> List[Any]:
        flex = version >= 9
        w = Writer()
        if self.topics is None:
            w.array_length(None if version >= 1 else 0, flex)
        elif not self.topics and version == 0:
            raise UnsupportedVersionError("Metadata v0 cannot ask for no topics (empty = all)")
        else:
            w.array_length(len(self.topics), flex)
            for name in self.topics:
                if version >= 10:
                    w.uuid(None)
                w.string(name, compact=flex, nullable=version >= 10)
                if flex:
                    w.tagged_fields()
        if version >= 4:
            w.boolean(self.allow_auto_topic_creation)
        if 8 <= version <= 10:
            w.boolean(False)  # include_cluster_authorized_operations
        if version >= 8:
            w.boolean(False)  # include_topic_authorized_operations
        if flex:
            w.tagged_fields()
        return [w.buf]

    @staticmethod
    def decode_response(version: int, data: memoryview) -> MetadataResponse:
        flex = version >= 9
        r = Reader(data)
        throttle = r.int32() if version >= 3 else 0

        def broker(r: Reader) -> Node:
            node_id, host, port = r.int32(), r.string(flex), r.int32()
            rack = r.string(flex) if version >= 1 else None
            if flex:
                r.tagged_fields()
            return Node(node_id, host or "", port, rack)

        brokers = r.array(broker, flex) or []
        cluster_id = r.string(flex) if version >= 2 else None
        controller_id = r.int32() if version >= 1 else -1

        def int_array(r: Reader) -> List[int]:
            return r.array(lambda r: r.int32(), flex) or []

        def partition(r: Reader) -> PartitionMetadata:
            err, index, leader = r.int16(), r.int32(), r.int32()
            epoch = r.int32() if version >= 7 else -1
            replicas, isr = int_array(r), int_array(r)
            offline = int_array(r) if version >= 5 else []
            if flex:
                r.tagged_fields()
            return PartitionMetadata(err, index, leader, epoch, replicas, isr, offline)

        def topic(r: Reader) -> TopicMetadata:
            err, name = r.int16(), r.string(flex)
            topic_id = r.uuid() if version >= 10 else bytes(16)
            internal = r.boolean() if version >= 1 else False
            parts = r.array(partition, flex) or []
            if version >= 8:
                r.int32()  # topic_authorized_operations
            if flex:
                r.tagged_fields()
            return TopicMetadata(err, name, internal, parts, topic_id)

        topics = r.array(topic, flex) or []
        if 8 <= version <= 10:
            r.int32()  # cluster_authorized_operations
        if flex:
            r.tagged_fields()
        return MetadataResponse(throttle, brokers, cluster_id, controller_id, topics)
