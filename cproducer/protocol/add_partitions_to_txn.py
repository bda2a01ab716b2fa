"""AddPartitionsToTxn (key 24), versions 0-3: the client's form (AddPartitionsToTxnRequest.json).

v4+ batch several transactions and are for brokers only. v3 is flexible.

    request:  transactional_id string, producer_id int64, producer_epoch int16,
              topics [name string, partitions [int32]]
    response: throttle_time_ms int32,
              results [name string, [partition_index int32, partition_error_code int16]]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from cproducer.protocol.primitives import Writer, read_throttle_and_partition_errors
from cproducer.protocol.txn_request import ProducerTxnRequest


@dataclass
class AddPartitionsToTxnResponse:
    throttle_time_ms: int
    #: (topic, partition) -> error code
    errors: Dict[Tuple[str, int], int]


@dataclass
class AddPartitionsToTxnRequest(ProducerTxnRequest):
    API_KEY = 24
    MAX_VERSION = 3
    FIRST_FLEXIBLE_VERSION = 3
    transactional_id: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    #: topic -> partitions
    topics: Dict[str, List[int]] = field(default_factory=dict)

    def write_fields(self, w: Writer, version: int, flex: bool) -> None:
        self.write_producer(w, flex)
        w.array_length(len(self.topics), flex)
        for topic, partitions in self.topics.items():
            w.string(topic, compact=flex)
            w.array_length(len(partitions), flex)
            for p in partitions:
                w.int32(p)
            if flex:
                w.tagged_fields()

    @classmethod
    def decode_response(cls, version: int, data: memoryview) -> AddPartitionsToTxnResponse:
        errors = read_throttle_and_partition_errors(data, cls.flexible(version))
        return AddPartitionsToTxnResponse(*errors)
