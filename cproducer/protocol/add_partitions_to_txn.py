"""AddPartitionsToTxn (key 24), versions 0-3: the client's form (AddPartitionsToTxnRequest.json).

v4+ batch several transactions and are for brokers only. v3 is flexible.

    request:  transactional_id string, producer_id int64, producer_epoch int16,
              topics [name string, partitions [int32]]
    response: throttle_time_ms int32,
              results [name string, [partition_index int32, partition_error_code int16]]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

from cproducer.protocol.primitives import Writer, read_throttle_and_partition_errors


@dataclass
class AddPartitionsToTxnResponse:
    throttle_time_ms: int
    #: (topic, partition) -> error code
    errors: Dict[Tuple[str, int], int]


@dataclass
class AddPartitionsToTxnRequest:
    API_KEY = 24
    MIN_VERSION = 0
    MAX_VERSION = 3
    FIRST_FLEXIBLE_VERSION = 3
    transactional_id: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    #: topic -> partitions
    topics: Dict[str, List[int]] = field(default_factory=dict)

    def expect_response(self) -> bool:
        return True

    def encode_body(self, version: int) -> List[Any]:
        flex = version >= 3
        w = Writer()
        w.string(self.transactional_id, compact=flex)
        w.int64(self.producer_id).int16(self.producer_epoch)
        w.array_length(len(self.topics), flex)
        for topic, partitions in self.topics.items():
            w.string(topic, compact=flex)
            w.array_length(len(partitions), flex)
            for p in partitions:
                w.int32(p)
            if flex:
                w.tagged_fields()
        if flex:
            w.tagged_fields()
        return [w.buf]

    @staticmethod
    def decode_response(version: int, data: memoryview) -> AddPartitionsToTxnResponse:
        return AddPartitionsToTxnResponse(*read_throttle_and_partition_errors(data, version >= 3))
